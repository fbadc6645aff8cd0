//! Leader election on smol (and async-std, which shares its reactor and timers):
//! the [`election_driver`] loop on a smol task, a handle with a `Stream` of
//! leadership states, and leader work that gets a [`CancelSignal`].
//!
//! ```no_run
//! use adapter_smol::{Builder, CancelSignal};
//! use election_core::{Config, Lock};
//! use futures_lite::StreamExt;
//!
//! async fn run(lock: impl Lock) -> Result<(), election_driver::DriverError> {
//!     let handle = Builder::new(lock, Config::client_go("pod-a-7f9c"))
//!         .leader_work(|term, cancel: CancelSignal| async move {
//!             println!("leading in term {term}");
//!             cancel.cancelled().await; // do the work until told to stop
//!         })
//!         .spawn()?;
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
//! works from any executor, async-std's included.
#![forbid(unsafe_code)]
// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

mod handle;
mod runtime;

/// A running election: the driver's own handle (runtime-independent). Dropping it
/// shuts the election down in the background (drain, best-effort release).
pub use election_driver::Handle;
pub use election_driver::{CancelSignal, Cancelled, StateStream};
pub use handle::Builder;
pub use runtime::SmolRuntime;
