//! The Kubernetes lock, written once: [`ObjectLock`], a compare-and-swap lock on
//! one namespaced object, generic over a [`Codec`] that stores the record in one
//! kind of object. `lock-lease` and `lock-configmap` are a codec each. With it,
//! what the lock needs of Kubernetes:
//!
//! - [`error`]: API failures classified into [`election_core::LockError`] by what
//!   the elector must do (409 conflict vs already-exists, 404 of the object vs of
//!   the namespace, 401/403 naming verb and resource, 429/503 transient with
//!   retry-after, 500/504 after a write and broken connections as unknown
//!   outcomes, refused connections as transient);
//! - [`call`](mod@call): one API call bounded by the request timeout, under any
//!   runtime: kube's client needs a tokio reactor, which `async-compat` supplies
//!   under smol and async-std;
//! - [`time`]: the injectable wall clock that stamps writes, `MicroTime` and RFC 3339
//!   formats, and lenient parsing of other clients' timestamps;
//! - [`watch`]: a watch of one named object that ends whenever it can no longer be
//!   trusted (break, silence, 410), so that the driver polls and resumes;
//! - [`shared_watch`]: one watch (and cache) for the objects of many elections in
//!   a namespace, found by a label, each lock fed its own object's events;
//! - [`annotations`]: the priority and handover annotations both locks write;
//! - [`events`]: `<identity> became leader` / `stopped leading` Events, best-effort;
//! - [`object_lock`]: the lock itself, [`ObjectLock`], generic over a [`Codec`] that
//!   stores the record in one kind of object; the Lease and ConfigMap locks are a
//!   codec each, built by [`LockBuilder`];
//! - [`candidate`]: the `LeaseCandidate` of Kubernetes' coordinated leader
//!   election, published, acknowledged on each ping and deleted on stop;
//! - [`retry_after`]: a tower layer of [`lock_client`] that keeps the
//!   `Retry-After` header of a 429 or 503, which kube's client would drop.
//!
//! # Timeouts: set once, in the election's `Config`
//!
//! The request timeout is `election_core::Config::request_timeout` (client-go's
//! `max(renew_deadline / 2, 1 s)` in its presets) and nowhere else. The elector
//! bounds every lock call with it (its request timer; the driver drops a call the
//! elector no longer awaits), and the driver hands the configuration to the lock
//! when it starts ([`election_core::Lock::configure`]); an [`ObjectLock`] takes
//! from it the bound of the calls it makes by itself, which no elector sees: the
//! read and the connect that open a watch, and Events (client-go's 5 s until
//! then). The calls of the `Lock` trait have no bound of their own: one bound, the
//! elector's. A
//! tool that calls the lock without a driver bounds its calls itself. The client
//! must not retry on its own either: build it with [`lock_client`].
//!
//! ```
//! use election_core::LockError;
//! use lock_kube::error::{Target, Verb, classify_status};
//!
//! // A 409 on an update is a lost compare-and-swap:
//! let status = kube::core::Status::failure("modified", "Conflict").with_code(409);
//! let target = Target::new("leases.coordination.k8s.io", "default", "my-lock");
//! assert_eq!(classify_status(&status, Verb::Update, &target), LockError::Conflict);
//! ```
//!
//! Like every library on k8s-openapi, this crate enables no Kubernetes version
//! feature of its own: the final binary picks one (for `cargo doc` alone, set
//! `K8S_OPENAPI_ENABLED_VERSION=1.37`).

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

pub mod annotations;
pub mod builder;
pub mod call;
pub mod candidate;
pub mod error;
pub mod events;
pub mod retry_after;
pub mod shared_watch;
pub mod time;
pub mod watch;

pub use builder::LockBuilder;
pub use call::{call, call_within, lock_client, lock_client_config};
pub use error::{Target, Verb, classify};
pub use events::{EventError, EventRecorder, LeaderEvent};
pub use shared_watch::{Seen, SharedWatch, SharedWatchStats};
pub use time::Clock;
pub use watch::{WatchConfig, watch_object};
pub mod names;
pub mod object_lock;

pub use names::{NameError, validate_name, validate_namespace};
pub use object_lock::{Codec, ObjectLock, ObjectLockConfig};
