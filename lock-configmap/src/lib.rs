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
//! `configmaps` `get`, `create`, `update`, `watch`, and `events` `create`. A
//! minimal Role and RoleBinding is in `lock-configmap/rbac.yaml` (also
//! [`RBAC_YAML`]).

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

use std::collections::BTreeMap;

use election_core::{
    LeadershipChange, Lock, LockError, LockRecord, LockTask, Observation, Version, WatchStream,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::core::v1::ObjectReference;
pub use kube_support::events::{EventError, LeaderEvent};
use kube_support::{FromParts, LockBuilder, NameError, ObjectLock, ObjectLockConfig};

pub mod record;

/// A minimal Role (and RoleBinding) for the ConfigMap lock: `configmaps` get,
/// create, update, watch; `events` create.
pub const RBAC_YAML: &str = include_str!("../rbac.yaml");

pub use record::ConfigMapCodec;

/// A leader-election lock on one ConfigMap. Cheap to clone (clones share the cache).
#[derive(Clone, Debug)]
pub struct ConfigMapLock {
    inner: ObjectLock<ConfigMap, ConfigMapCodec>,
}

/// Builds a [`ConfigMapLock`]; see [`ConfigMapLock::builder`].
pub type ConfigMapLockBuilder = LockBuilder<ConfigMapLock>;

impl FromParts for ConfigMapLock {
    fn from_parts(
        client: kube::Client,
        namespace: &str,
        name: &str,
        labels: BTreeMap<String, String>,
        config: ObjectLockConfig,
    ) -> Self {
        let codec = ConfigMapCodec { labels };
        ConfigMapLock {
            inner: ObjectLock::new(client, namespace, name, codec, config),
        }
    }
}

impl ConfigMapLock {
    /// A builder for a lock on the ConfigMap `name` in `namespace`. Build the client
    /// with [`kube_support::lock_client`] so that kube's own retries stay off.
    pub fn builder(client: kube::Client, namespace: &str, name: &str) -> ConfigMapLockBuilder {
        LockBuilder::new(client, namespace, name)
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

    /// Records client-go's Event (`<identity> became leader` / `stopped
    /// leading`, reason `LeaderElection`) in the background, unless the builder
    /// turned Events off; a failure is logged and never touches the election.
    fn leadership_changed(&self, identity: &str, change: LeadershipChange) -> Option<LockTask> {
        self.inner.leadership_changed(identity, change)
    }
}
