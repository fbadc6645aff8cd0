//! kube-runtime controllers that reconcile only while leading, with warm standby.
//!
//! What controller-runtime (Go) does for its managers, for kube-rs:
//!
//! - **Warm standby.** A [`Warm`] cache (kube-runtime's watcher and reflector)
//!   runs on every replica from start-up. A replica that becomes leader builds a
//!   controller fed from that cache, so it reconciles at once, with no LIST.
//! - **Leader-only reconciles.** [`ElectedController::spawn`] runs your
//!   `Controller::run` only while leading, one fresh controller per term.
//! - **Clean handover.** On a graceful give-up the controller stops taking new
//!   reconciles and lets running ones finish, bounded by the drain timeout so
//!   that it ends before the leadership deadline; then the election releases.
//! - **Fencing.** Each term's client ([`TermContext::client`]) refuses writes
//!   locally unless this replica leads *in that term*, with a margin (a
//!   reconcile that outlives its term gets `election_ops::guard::NotLeader`,
//!   and nothing is sent), and annotates what it writes with the term.
//! - **Re-campaign.** After a loss the caches stay warm and the replica
//!   campaigns again; a later term starts a fresh controller.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use election_controller::{ElectedController, TermContext, Warm};
//! use election_core::Config;
//! use election_driver::Builder;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::Api;
//! use kube_runtime::controller::Action;
//! use kube_runtime::watcher;
//!
//! #[derive(Debug, thiserror::Error)]
//! #[error("{0}")]
//! struct Error(#[from] kube::Error);
//!
//! async fn reconcile(cm: Arc<ConfigMap>, term: Arc<TermContext>) -> Result<Action, Error> {
//!     // ... writes through `term.client`, which only writes while this term leads
//!     Ok(Action::await_change())
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let kube_config = kube::Config::infer().await?;
//! let client = kube::Client::try_from(kube_config.clone())?;
//! // On every replica, from start-up:
//! let warm = Warm::spawn(
//!     Api::<ConfigMap>::namespaced(client.clone(), "source"),
//!     watcher::Config::default().labels("mirror=true"),
//! );
//! let lock = lock_lease::LeaseLock::new(client, "default", "mirror-controller")?;
//! let handle = ElectedController::new(warm, kube_config).spawn(
//!     Builder::new(lock, Config::client_go("replica-a")),
//!     |controller, term| {
//!         controller.run(reconcile, |_, _, _| Action::await_change(), Arc::new(term))
//!     },
//! )?;
//! // ... until SIGTERM; then drain, release, exit:
//! handle.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Why kube-runtime's `Controller::for_shared_stream` (behind its
//! `unstable-runtime-subscribe` feature) fed by this crate's own stream rather
//! than kube-runtime's `ReflectHandle`: see [`warm`]. Health, readiness per
//! role, metrics and Events are the election's (`election-ops`).
//!
//! Like every library on k8s-openapi, this crate enables no Kubernetes version
//! feature of its own: the final binary picks one.

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

// Only for docs.rs's Kubernetes version (Cargo.toml).
use k8s_openapi as _;

mod controller;
mod term;
pub mod warm;

pub use controller::{ControllerError, ElectedController, RunResult};
pub use term::TermContext;
pub use warm::{Cached, Subscription, Warm};
