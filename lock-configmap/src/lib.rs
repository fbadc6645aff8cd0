//! A leader-election [`Lock`] in a ConfigMap annotation, record-compatible with
//! client-go's historic `ConfigMapLock`, and able to read the records fabric8 and
//! the Python client write there.
//!
//! - The record is the JSON in the annotation
//!   `control-plane.alpha.kubernetes.io/leader` (see [`record`]); we write
//!   client-go's form (`holderIdentity`, `leaseDurationSeconds`, `acquireTime`,
//!   `renewTime` in RFC 3339 seconds, `leaderTransitions`).
//! - A malformed record never becomes a permanent error: it reads as held by
//!   [`record::MALFORMED_HOLDER`], which the elector takes over after a lease.
//! - Every update is a PUT of the whole ConfigMap carrying the `resourceVersion`
//!   that was read (a compare-and-swap); its data, labels and other annotations are
//!   kept. A create makes a ConfigMap holding just the annotation.
//! - A write that would be byte-identical to the stored object (a holder whose
//!   wall clock is frozen) bumps the annotation `election.rs/rewrite`, because the
//!   API server answers an identical PUT without a new `resourceVersion` and
//!   followers would not see the renewal (FAULTS R10).
//! - Watches, Events, error classification and runtime bridging are the same as
//!   the Lease lock's ([`kube_support`]).
//!
//! Prefer the Lease lock for new deployments; this one exists for clusters and
//! clients that still share a ConfigMap record.
//!
//! ```no_run
//! use election_core::{Config, Lock};
//! use lock_configmap::ConfigMapLock;
//!
//! # async fn example(kube_config: kube::Config) -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config::client_go("controller-7f9c-abcde");
//! let client = kube_support::lock_client(kube_config)?;
//! let lock = ConfigMapLock::builder(client, "kube-system", "my-controller")
//!     .election_config(&config)
//!     .build()?;
//! let observation = lock.get().await;
//! # let _ = observation;
//! # Ok(())
//! # }
//! ```
//!
//! Reading the other clients' records needs no server:
//!
//! ```
//! use lock_configmap::record::decode_record;
//! let fabric8 = decode_record(r#"{"holderIdentity":"a","leaseDuration":"PT15S","leaderTransitions":2}"#).unwrap();
//! assert_eq!(fabric8.lease_duration_secs, Some(15));
//! let python = decode_record(r#"{"holderIdentity":"b","leaseDurationSeconds":"15","renewTime":"2026-08-17 23:11:09.123456"}"#).unwrap();
//! assert_eq!((python.lease_duration_secs, python.transitions), (Some(15), 0));
//! ```
//!
//! # RBAC
//! `configmaps` `get`, `create`, `update`, `list`, `watch`, and `events` `create`.

use std::collections::BTreeMap;
use std::time::Duration;

use election_core::{Lock, LockError, LockRecord, Observation, Version, WatchStream};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::core::v1::ObjectReference;
pub use kube_support::events::{EventError, LeaderEvent};
use kube_support::{Clock, NameError, ObjectLock, ObjectLockConfig, WatchConfig};

pub mod record;

pub use record::ConfigMapCodec;

/// A leader-election lock on one ConfigMap. Cheap to clone (clones share the cache).
#[derive(Clone, Debug)]
pub struct ConfigMapLock {
    inner: ObjectLock<ConfigMap, ConfigMapCodec>,
}

/// Builds a [`ConfigMapLock`]; see [`ConfigMapLock::builder`].
#[must_use]
pub struct ConfigMapLockBuilder {
    client: kube::Client,
    namespace: String,
    name: String,
    labels: BTreeMap<String, String>,
    config: ObjectLockConfig,
}

impl ConfigMapLockBuilder {
    /// Adds a label merged into the ConfigMap on every write .
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Adds labels merged into the ConfigMap on every write.
    pub fn labels(mut self, labels: impl IntoIterator<Item = (String, String)>) -> Self {
        self.labels.extend(labels);
        self
    }

    /// The wall clock that stamps `acquireTime`, `renewTime` and Events (tests
    /// inject one; the default is the system clock).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.config.clock = clock;
        self
    }

    /// Bound of each API call; past it the call fails as an unknown outcome.
    /// Default 5 s.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.config.request_timeout = timeout;
        self
    }

    /// Takes the request timeout from the elector's configuration (client-go's
    /// `max(renew_deadline / 2, 1 s)` in its presets).
    pub fn election_config(mut self, config: &election_core::Config) -> Self {
        self.config.request_timeout = config.request_timeout;
        self
    }

    /// The watch's behaviour (silence bound, server timeout).
    pub fn watch(mut self, watch: WatchConfig) -> Self {
        self.config.watch = watch;
        self
    }

    /// Offers no watch: the elector polls (client-go's behaviour).
    pub fn polling_only(mut self) -> Self {
        self.config.watch_enabled = false;
        self
    }

    /// `source.component` of the Events (default `leader-election`).
    pub fn event_component(mut self, component: impl Into<String>) -> Self {
        self.config.event_component = component.into();
        self
    }

    /// The lock, or an error if the namespace or name is not one Kubernetes accepts.
    pub fn build(self) -> Result<ConfigMapLock, NameError> {
        kube_support::validate_namespace(&self.namespace)?;
        kube_support::validate_name(&self.name)?;
        let codec = ConfigMapCodec {
            labels: self.labels,
        };
        Ok(ConfigMapLock {
            inner: ObjectLock::new(self.client, &self.namespace, &self.name, codec, self.config),
        })
    }
}

impl ConfigMapLock {
    /// A builder for a lock on the ConfigMap `name` in `namespace`. Build the client
    /// with [`kube_support::lock_client`] so that kube's own retries stay off.
    pub fn builder(client: kube::Client, namespace: &str, name: &str) -> ConfigMapLockBuilder {
        ConfigMapLockBuilder {
            client,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            labels: BTreeMap::new(),
            config: ObjectLockConfig::default(),
        }
    }

    /// A lock with the default settings.
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> Result<Self, NameError> {
        Self::builder(client, namespace, name).build()
    }

    /// Records `event` as a Kubernetes Event on the ConfigMap (reason `LeaderElection`,
    /// type `Normal`). Best-effort: log the error and go on; it never affects the
    /// election (FAULTS H9).
    pub async fn record_event(&self, event: LeaderEvent) -> Result<(), EventError> {
        self.inner.record_event(&event).await
    }

    /// A reference to the ConfigMap, for Events of the caller's own.
    pub fn object_reference(&self) -> ObjectReference {
        self.inner.object_reference()
    }
}

impl Lock for ConfigMapLock {
    fn get(&self) -> impl Future<Output = Result<Observation, LockError>> + Send {
        self.inner.get()
    }

    fn create(
        &self,
        record: &LockRecord,
    ) -> impl Future<Output = Result<Observation, LockError>> + Send {
        self.inner.create(record)
    }

    fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> impl Future<Output = Result<Observation, LockError>> + Send {
        self.inner.update(expected, record)
    }

    fn watch(&self, from: Option<&Version>) -> Option<WatchStream> {
        self.inner.watch(from)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}
