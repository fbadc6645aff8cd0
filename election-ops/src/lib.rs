//! Running a leader election in production: a default identity, a write guard for
//! `kube::Client`, health checks, Prometheus metrics and `tracing`.
//!
//! | item | feature | what |
//! |---|---|---|
//! | [`identity`] | — | `POD_NAME` or hostname plus a random suffix; `ELECTION_IDENTITY` to set it exactly |
//! | [`LeadershipView`] | — | what the helpers read: implemented for `election_driver::Handle` (every runtime's), or a fake in tests |
//! | [`Monitor`] | — | `tracing` spans and events with lock, identity and term; last renew and last error; wraps the lock ([`ObservedLock`]) to see renewals |
//! | `guard` | `guard` | a tower layer that refuses writes locally unless this node leads with a margin; the stamp layer, re-exported |
//! | `client` | `guard` | `guarded_client`: a `kube::Client` whose writes pass the guard (and the stamp) on every attempt, kube's retries moved above them, each write bounded by the guard's margin |
//! | `shared` | `guard` | a service made cloneable without a worker task, for the layers that send more than once |
//! | `stamp` | `guard` | a tower layer that stamps every write (create, update, each patch type, delete) with the current term, for the fence |
//! | `fence` | `fence` | server-side fencing: the ValidatingAdmissionPolicy (and binding) that makes the API server refuse writes not stamped with the Lease's current term |
//! | `yaml` | `fence` | the block-YAML emitter of the fence's documents (and of `kubectl elector get -o yaml`): `to_yaml(&serde_json::Value)` |
//! | `health` | `health` | liveness with client-go's healthz meaning, readiness per role, JSON status |
//! | `proxy` | `proxy` | the Kubernetes API served on loopback through a guarded, stamped client: a program in any language has its writes fenced with no code |
//! | `http` | `http` | `/healthz`, `/readyz`, `/status` (and `/metrics`) on hyper 1 |
//! | metrics | `metrics` | `leader_election_master_status{name}`, `leader_election_slowpath_total{name}` and more |
//!
//! # Example
//!
//! ```
//! use election_core::Config;
//! use election_ops::{Monitor, identity};
//!
//! // `ELECTION_IDENTITY` if set, else `$POD_NAME-<random>` or `<hostname>-<random>`.
//! let id = identity::from_env().expect("a valid identity");
//! let config = Config::client_go(id.clone());
//! let monitor = Monitor::new("leases/default/my-controller", id);
//! // Wrap the lock so renewals are traced and counted, then build the driver:
//! //   Builder::new(monitor.lock(lease_lock), config).spawn(TokioRuntime::current()?)?
//! // and follow its states: tokio::spawn(monitor.clone().follow(handle.states()));
//! assert_eq!(&**monitor.identity(), &*config.identity);
//! ```
#![forbid(unsafe_code)]
// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]
// docs.rs labels each feature-gated item with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod identity;
pub mod monitor;
mod view;

#[cfg(feature = "guard")]
pub mod client;
#[cfg(feature = "fence")]
pub mod fence;
#[cfg(feature = "guard")]
pub mod guard;
#[cfg(feature = "health")]
pub mod health;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(feature = "guard")]
mod protobuf;
#[cfg(feature = "proxy")]
pub mod proxy;
#[cfg(feature = "guard")]
pub mod shared;
#[cfg(feature = "guard")]
pub mod stamp;
#[cfg(feature = "fence")]
pub mod yaml;

pub use monitor::{Monitor, MonitorBuilder, Observed, ObservedLock, Snapshot};
pub use view::LeadershipView;
