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
//! - As client-go, the lock records Events on the Lease when its candidate starts
//!   and stops leading (`<identity> became leader` / `<identity> stopped leading`,
//!   reason `LeaderElection`): the driver tells it through
//!   [`Lock::leadership_changed`] and runs the write in the background, so a
//!   failure (logged) never touches the election (FAULTS H9). Turn them off with
//!   [`LockBuilder::without_events`]; [`LeaseLock::record_event`] writes one by hand.
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
//! `create`, `update` and `watch`; and `events` `create` for the Events. A
//! minimal Role and RoleBinding is in `lock-lease/rbac.yaml` (also [`RBAC_YAML`]). A missing
//! permission is reported as [`election_core::LockError::Forbidden`] naming the verb and
//! resource.

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

use std::collections::BTreeMap;

use election_core::{
    LeadershipChange, Lock, LockError, LockRecord, LockTask, Observation, Version, WatchStream,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ObjectReference;
pub use kube_support::events::{EventError, LeaderEvent};
use kube_support::{FromParts, LockBuilder, NameError, ObjectLock, ObjectLockConfig};

pub mod record;

/// A minimal Role (and RoleBinding) for the Lease lock: `leases` get, create,
/// update, watch; `events` create.
pub const RBAC_YAML: &str = include_str!("../rbac.yaml");

pub use record::LeaseCodec;

/// A leader-election lock on one Lease. Cheap to clone (clones share the cache).
#[derive(Clone, Debug)]
pub struct LeaseLock {
    inner: ObjectLock<Lease, LeaseCodec>,
}

/// Builds a [`LeaseLock`]; see [`LeaseLock::builder`].
pub type LeaseLockBuilder = LockBuilder<LeaseLock>;

impl FromParts for LeaseLock {
    fn from_parts(
        client: kube::Client,
        namespace: &str,
        name: &str,
        labels: BTreeMap<String, String>,
        config: ObjectLockConfig,
    ) -> Self {
        let codec = LeaseCodec { labels };
        LeaseLock {
            inner: ObjectLock::new(client, namespace, name, codec, config),
        }
    }
}

impl LeaseLock {
    /// A builder for a lock on the Lease `name` in `namespace`. Build the client
    /// with [`kube_support::lock_client`] so that kube's own retries stay off.
    pub fn builder(client: kube::Client, namespace: &str, name: &str) -> LeaseLockBuilder {
        LockBuilder::new(client, namespace, name)
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

    /// Records client-go's Event (`<identity> became leader` / `stopped
    /// leading`, reason `LeaderElection`) in the background, unless the builder
    /// turned Events off; a failure is logged and never touches the election.
    fn leadership_changed(&self, identity: &str, change: LeadershipChange) -> Option<LockTask> {
        self.inner.leadership_changed(identity, change)
    }
}
