//! Leader election on smol (and async-std, which shares its reactor and timers):
//! the [`election_driver`] loop with `async-io` timers, on smol's global
//! executor. The builder and the handle are the driver's own
//! ([`election_driver::Builder`], [`election_driver::Handle`], the same on every
//! runtime); this crate supplies the runtime, [`SmolRuntime`]. The handle's
//! [`states`](election_driver::Handle::states) is a `Stream`, and leader work gets
//! the driver's [`CancelSignal`](election_driver::CancelSignal), both
//! executor-independent.
//!
//! ```no_run
//! use adapter_smol::SmolRuntime;
//! use election_core::{Config, Lock};
//! use election_driver::Builder;
//! use futures_lite::StreamExt;
//!
//! async fn run(lock: impl Lock) -> Result<(), election_driver::DriverError> {
//!     let handle = Builder::new(lock, Config::client_go("pod-a-7f9c"))
//!         .leader_work(|term, cancel| async move {
//!             println!("leading in term {term}");
//!             cancel.cancelled().await; // do the work until told to stop
//!         })
//!         .spawn(SmolRuntime::new())?;
//!     let mut states = handle.states();
//!     while let Some(s) = states.next().await {
//!         println!("{:?}: leader {:?}", s.change, s.leader);
//!         if s.leading() {
//!             break;
//!         }
//!     }
//!     handle.shutdown().await; // drains the work, releases the lock
//!     Ok(())
//! }
//! ```
//!
//! The driver task and the leader work run on smol's global executor, which
//! works from any executor, async-std's included. The Kubernetes locks run under
//! it too: kube's client gets a tokio reactor from `async-compat` inside them.
#![forbid(unsafe_code)]
// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

mod runtime;

pub use runtime::SmolRuntime;
