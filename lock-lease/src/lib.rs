//! A leader-election [`Lock`] on a `coordination.k8s.io/v1` Lease, record-for-record
//! compatible with client-go's `LeaseLock`: a Go controller and a Rust one can
//! take turns on the same Lease.
//!
//! - The record maps to the `LeaseSpec` exactly as client-go writes it (see
//!   [`record`]): `holderIdentity` (present and `""` on release),
//!   `leaseDurationSeconds`, `acquireTime` / `renewTime` as `MicroTime`
//!   (`2006-01-02T15:04:05.000000Z`), `leaseTransitions`.
//! - Every update is a PUT carrying the `resourceVersion` that was read: a
//!   compare-and-swap, never a blind write. Labels, annotations and owner
//!   references that others put on the Lease are kept.
//! - A write that would be byte-identical to the stored object (a holder whose
//!   wall clock is frozen) bumps the annotation `election.rs/rewrite`, because the
//!   API server answers an identical PUT without a new `resourceVersion` and
//!   followers would not see the renewal (FAULTS R10).
//! - [`Lock::watch`] watches the Lease with `fieldSelector=metadata.name=<name>`
//!   and bookmarks; the stream ends when the watch breaks, stays silent too long or
//!   gets `410 Gone`, and the elector polls and resumes.
//! - [`LeaseLock::record_event`] writes client-go's Events
//!   (`<identity> became leader`, reason `LeaderElection`); failures never touch the
//!   election.
//! - API failures are classified for the elector by [`kube_support::error`].
//! - The futures run under tokio, smol and async-std alike (kube's client gets a
//!   tokio reactor from `async-compat` when there is none).
//!
//! ```no_run
//! use election_core::{Config, Lock};
//! use lock_lease::LeaseLock;
//!
//! # async fn example(kube_config: kube::Config) -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config::client_go("controller-7f9c-abcde");
//! let client = kube_support::lock_client(kube_config)?; // kube's own retries off
//! let lock = LeaseLock::builder(client, "kube-system", "my-controller")
//!     .label("app.kubernetes.io/name", "my-controller")
//!     .election_config(&config) // request timeout max(renew_deadline / 2, 1 s)
//!     .build()?;
//! let observation = lock.get().await; // NotFound before anyone created it
//! # let _ = observation;
//! # Ok(())
//! # }
//! ```
//!
//! The mapping itself needs no server:
//!
//! ```
//! use election_core::{LockRecord, Stamp, WallTime};
//! let record = LockRecord {
//!     holder: "node-a".into(),
//!     lease_duration_secs: Some(15),
//!     acquire_time: Stamp::Now,
//!     renew_time: Stamp::Now,
//!     transitions: 3,
//!     ..LockRecord::default()
//! };
//! let spec = lock_lease::record::spec_from_record(&record, WallTime::new(0, 0));
//! assert_eq!(
//!     serde_json::to_string(&spec).unwrap(),
//!     r#"{"acquireTime":"1970-01-01T00:00:00.000000Z","holderIdentity":"node-a","leaseDurationSeconds":15,"leaseTransitions":3,"renewTime":"1970-01-01T00:00:00.000000Z"}"#
//! );
//! ```
//!
//! # RBAC
//! The lock needs, in its namespace: `leases` (group `coordination.k8s.io`) `get`,
//! `create`, `update`, `list` and `watch`; and `events` `create` for the Events. A
//! minimal Role and RoleBinding is in `lock-lease/rbac.yaml` (also [`RBAC_YAML`]). A missing
//! permission is reported as [`election_core::LockError::Forbidden`] naming the verb and
//! resource.

use std::collections::BTreeMap;
use std::time::Duration;

use election_core::{Lock, LockError, LockRecord, Observation, Version, WatchStream};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ObjectReference;
pub use kube_support::events::{EventError, LeaderEvent};
use kube_support::{Clock, NameError, ObjectLock, ObjectLockConfig, WatchConfig};

pub mod record;

/// A minimal Role (and RoleBinding) for the Lease lock: `leases` get, create,
/// update, list, watch; `events` create.
pub const RBAC_YAML: &str = include_str!("../rbac.yaml");

pub use record::LeaseCodec;

/// A leader-election lock on one Lease. Cheap to clone (clones share the cache).
#[derive(Clone, Debug)]
pub struct LeaseLock {
    inner: ObjectLock<Lease, LeaseCodec>,
}

/// Builds a [`LeaseLock`]; see [`LeaseLock::builder`].
#[must_use]
pub struct LeaseLockBuilder {
    client: kube::Client,
    namespace: String,
    name: String,
    labels: BTreeMap<String, String>,
    config: ObjectLockConfig,
}

impl LeaseLockBuilder {
    /// Adds a label merged into the Lease on every write (client-go's `NewWithLabels`).
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Adds labels merged into the Lease on every write.
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
    pub fn build(self) -> Result<LeaseLock, NameError> {
        kube_support::validate_namespace(&self.namespace)?;
        kube_support::validate_name(&self.name)?;
        let codec = LeaseCodec {
            labels: self.labels,
        };
        Ok(LeaseLock {
            inner: ObjectLock::new(self.client, &self.namespace, &self.name, codec, self.config),
        })
    }
}

impl LeaseLock {
    /// A builder for a lock on the Lease `name` in `namespace`. Build the client
    /// with [`kube_support::lock_client`] so that kube's own retries stay off.
    pub fn builder(client: kube::Client, namespace: &str, name: &str) -> LeaseLockBuilder {
        LeaseLockBuilder {
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

    /// Records `event` as a Kubernetes Event on the Lease (reason `LeaderElection`,
    /// type `Normal`). Best-effort: log the error and go on; it never affects the
    /// election (FAULTS H9).
    pub async fn record_event(&self, event: LeaderEvent) -> Result<(), EventError> {
        self.inner.record_event(&event).await
    }

    /// A reference to the Lease, for Events of the caller's own.
    pub fn object_reference(&self) -> ObjectReference {
        self.inner.object_reference()
    }
}

impl Lock for LeaseLock {
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
