//! Leader election on tokio: the [`election_driver`] loop on a tokio task, a handle
//! with a `tokio::sync::watch` of leadership states, and leader work that gets a
//! [`CancellationToken`].
//!
//! ```no_run
//! use adapter_tokio::{Builder, CancellationToken};
//! use election_core::{Config, Lock};
//!
//! async fn run(lock: impl Lock) -> Result<(), election_driver::DriverError> {
//!     let handle = Builder::new(lock, Config::client_go("pod-a-7f9c"))
//!         .leader_work(|term, cancel: CancellationToken| async move {
//!             println!("leading in term {term}");
//!             cancel.cancelled().await; // do the work until told to stop
//!         })
//!         .spawn()?;
//!     let mut states = handle.watch();
//!     while states.changed().await.is_ok() {
//!         let s = states.borrow_and_update().clone();
//!         println!("{:?}: leader {:?}", s.change, s.leader);
//!     }
//!     handle.shutdown().await; // drains the work, releases the lock
//!     Ok(())
//! }
//! ```
//!
//! Tests run the same driver on tokio's paused clock with
//! [`TokioRuntime::with_tokio_clock`]; in production the clock is
//! [`election_driver::BootClock`], which keeps counting during suspend.
#![forbid(unsafe_code)]
// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

mod handle;
mod runtime;

pub use handle::{Builder, Handle};
pub use runtime::TokioRuntime;
pub use tokio_util::sync::CancellationToken;
