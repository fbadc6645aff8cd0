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
//!   wall clock is frozen) bumps the annotation `kube-elector.dev/rewrite`, because the
//!   API server answers an identical PUT without a new `resourceVersion` and
//!   followers would not see the renewal (docs/faults.md R10).
//! - Watches, Events, error classification and runtime bridging are the same as
//!   the Lease lock's ([`lock_kube`]).
//!
//! Prefer the Lease lock for new deployments; this one exists for clusters and
//! clients that still share a ConfigMap record.
//!
//! ```no_run
//! use election_core::Lock;
//! use lock_configmap::ConfigMapLock;
//!
//! # async fn example(kube_config: kube::Config) -> Result<(), Box<dyn std::error::Error>> {
//! let client = lock_kube::lock_client(kube_config)?;
//! let lock = ConfigMapLock::builder(client, "kube-system", "my-controller").build()?;
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
//!
//! [`Lock`]: election_core::Lock

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

pub use lock_kube::events::{EventError, LeaderEvent};
use lock_kube::{LockBuilder, ObjectLock};

pub mod record;

/// A minimal Role (and RoleBinding) for the ConfigMap lock: `configmaps` get, create,
/// update, watch; `events` create.
pub const RBAC_YAML: &str = include_str!("../rbac.yaml");

pub use record::ConfigMapCodec;

/// A leader-election lock on one ConfigMap: the Kubernetes object lock of
/// `lock-kube` over the ConfigMap's [`record`] mapping. Cheap to clone (clones
/// share the cache).
///
/// - `ConfigMapLock::builder(client, namespace, name)` starts a [`ConfigMapLockBuilder`]
///   (labels, clock, request timeout, watch, Events), whose `build()` checks the
///   names; `ConfigMapLock::new(client, namespace, name)` takes the default settings.
/// - It implements [`Lock`](election_core::Lock) itself: a compare-and-swap PUT
///   per write, a watch of the one object, client-go's Events on leadership
///   changes.
/// - `record_event(event)` writes a [`LeaderEvent`] by hand; `object_reference()`
///   names the ConfigMap for Events of the caller's own.
///
/// See [`ObjectLock`] for every method.
pub type ConfigMapLock = ObjectLock<ConfigMapCodec>;

/// Builds a [`ConfigMapLock`]; see [`ObjectLock::builder`].
pub type ConfigMapLockBuilder = LockBuilder<ConfigMapCodec>;
