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
//!   wall clock is frozen) bumps the annotation `kube-elector.dev/rewrite`, because the
//!   API server answers an identical PUT without a new `resourceVersion` and
//!   followers would not see the renewal (docs/faults.md R10).
//! - [`Lock::watch`] watches the Lease with `fieldSelector=metadata.name=<name>`
//!   and bookmarks; the stream ends when the watch breaks, stays silent too long or
//!   gets `410 Gone`, and the elector polls and resumes.
//! - As client-go, the lock records Events on the Lease when its candidate starts
//!   and stops leading (`<identity> became leader` / `<identity> stopped leading`,
//!   reason `LeaderElection`): the driver tells it through
//!   [`Lock::leadership_changed`] and runs the write in the background, so a
//!   failure (logged) never touches the election (docs/faults.md H9). Turn them off with
//!   [`LockBuilder::without_events`]; [`LeaseLock::record_event`](ObjectLock::record_event) writes one by hand.
//! - API failures are classified for the elector by [`lock_kube::error`].
//! - The futures run under tokio, smol and async-std alike (kube's client gets a
//!   tokio reactor from `async-compat` when there is none).
//!
//! ```no_run
//! use election_core::Lock;
//! use lock_lease::LeaseLock;
//!
//! # async fn example(kube_config: kube::Config) -> Result<(), Box<dyn std::error::Error>> {
//! let client = lock_kube::lock_client(kube_config)?; // kube's own retries off
//! let lock = LeaseLock::builder(client, "kube-system", "my-controller")
//!     .label("app.kubernetes.io/name", "my-controller")
//!     .build()?;
//! // In an election, the driver hands the lock its `Config`'s request timeout.
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
//!
//! [`Lock`]: election_core::Lock
//! [`Lock::watch`]: election_core::Lock::watch
//! [`Lock::leadership_changed`]: election_core::Lock::leadership_changed

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

pub use lock_kube::events::{EventError, LeaderEvent};
use lock_kube::{LockBuilder, ObjectLock};

pub mod record;

/// A minimal Role (and RoleBinding) for the Lease lock: `leases` get, create,
/// update, watch; `events` create.
pub const RBAC_YAML: &str = include_str!("../rbac.yaml");

pub use record::LeaseCodec;

/// A leader-election lock on one Lease: the Kubernetes object lock of
/// `lock-kube` over the Lease's [`record`] mapping. Cheap to clone (clones
/// share the cache).
///
/// - `LeaseLock::builder(client, namespace, name)` starts a [`LeaseLockBuilder`]
///   (labels, clock, request timeout, watch, Events), whose `build()` checks the
///   names; `LeaseLock::new(client, namespace, name)` takes the default settings.
/// - It implements [`Lock`](election_core::Lock) itself: a compare-and-swap PUT
///   per write, a watch of the one object, client-go's Events on leadership
///   changes.
/// - `record_event(event)` writes a [`LeaderEvent`] by hand; `object_reference()`
///   names the Lease for Events of the caller's own.
///
/// See [`ObjectLock`] for every method.
pub type LeaseLock = ObjectLock<LeaseCodec>;

/// Builds a [`LeaseLock`]; see [`ObjectLock::builder`].
pub type LeaseLockBuilder = LockBuilder<LeaseCodec>;
