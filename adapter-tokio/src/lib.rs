//! Leader election on tokio: the [`election_driver`] loop with tokio's timers,
//! tasks and (in tests) its paused clock. The builder and the handle are the
//! driver's own ([`election_driver::Builder`], [`election_driver::Handle`]), the
//! same on every runtime; this crate supplies the runtime and tokio's natural
//! types:
//!
//! - [`TokioRuntime`]: spawning on tokio is `.spawn(TokioRuntime::current()?)`
//!   inside the runtime (it fails outside one, or in one without its time driver);
//! - [`state_watch`]: a `tokio::sync::watch` of leadership states;
//! - [`token_work`]: leader work that gets a [`CancellationToken`].
//!
//! ```no_run
//! use adapter_tokio::TokioRuntime;
//! use election_core::{Config, Lock};
//! use election_driver::Builder;
//!
//! async fn run(lock: impl Lock) -> Result<(), election_driver::DriverError> {
//!     let handle = Builder::new(lock, Config::client_go("pod-a-7f9c"))
//!         .leader_work(|term, cancel| async move {
//!             println!("leading in term {term}");
//!             cancel.cancelled().await; // do the work until told to stop
//!         })
//!         .spawn(TokioRuntime::current()?)?;
//!     tokio::signal::ctrl_c().await.ok();
//!     handle.shutdown().await; // drains the work, releases the lock
//!     Ok(())
//! }
//! ```
//!
//! Tests run the same driver on tokio's paused clock
//! (`#[tokio::test(start_paused = true)]`): [`TokioRuntime::current`] finds the
//! clock paused and reads tokio's clock then ([`TokioRuntime::with_tokio_clock`]
//! asks for it outright); in production the clock is
//! [`election_driver::BootClock`], which keeps counting during suspend.
#![forbid(unsafe_code)]
// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

mod runtime;
mod token;
mod watch;

pub use runtime::TokioRuntime;
pub use token::token_work;
pub use tokio_util::sync::CancellationToken;
pub use watch::state_watch;
