//! The async driver of an [`election_core::Elector`], written once for every
//! runtime.
//!
//! The elector decides; this crate does its I/O. A [`Driver`] owns one elector,
//! one [`Lock`](election_core::Lock) and one [`Runtime`] (a clock, a timer and a
//! spawn: a few lines per runtime, see `adapter-tokio` and `adapter-smol`), and
//! runs the loop:
//!
//! 1. if the elector's next timeout has passed, handle it at once;
//! 2. drain actions: start the one lock call, bounded by the configuration's
//!    `request_timeout` as the elector times it (its own timer: a call it no
//!    longer awaits is dropped; the lock was handed the configuration at the start,
//!    [`Lock::configure`](election_core::Lock::configure), for the waiting it
//!    does by itself: timeouts are set once, in the `Config`);
//! 3. drain events: publish the state, start the leader work on
//!    `StartedLeading`, cancel it on `Draining` or loss and, once it has ended,
//!    tell the elector (`work_stopped`), which then writes the release;
//! 4. wait for the first of: the timer, the lock's answer, a watch observation, a
//!    command from the [`Handle`], the end of the leader work.
//!
//! The driver owns the lock's watch: it starts it when the lock offers one, feeds
//! what it sees to the elector, and resumes it from the last version seen when it
//! ends or breaks (with backoff), while the elector polls meanwhile. A resumed
//! watch that fails at once is started afresh next time (its version may be gone).
//! Silence is not trusted either: a watch is restarted when a read returns a newer
//! version than it delivered, or when it has said nothing for
//! [`WATCH_IDLE_LEASES`] lease durations (a black-holed connection never ends).
//!
//! Its clock keeps counting while the machine is suspended ([`BootClock`],
//! `CLOCK_BOOTTIME` on Linux); a runtime may substitute its virtual clock in tests.
//!
//! # Example
//! The one builder and the one handle, for every runtime: a runtime crate
//! supplies only the [`Runtime`] (`adapter_tokio::TokioRuntime`,
//! `adapter_smol::SmolRuntime`) and extras in its own types.
//!
//! ```
//! use election_core::{Config, Lock};
//! use election_driver::{Builder, CancelSignal, DriverError, Handle, OnLoss, Runtime};
//!
//! fn start<L: Lock, R: Runtime>(lock: L, rt: R) -> Result<Handle, DriverError> {
//!     Builder::new(lock, Config::fast("node-a").seed(7))
//!         .leader_work(|term, cancel: CancelSignal| async move {
//!             println!("leading in term {term}");
//!             cancel.cancelled().await; // work until told to stop, then return
//!         })
//!         .on_loss(OnLoss::Campaign)
//!         .on_state(|s| println!("{} is {:?}, leader {:?}", s.identity, s.role, s.leader))
//!         .spawn(rt)
//! }
//! ```
//!
//! The [`Handle`] answers `is_leader()` (time-bounded), `leader()`, `term()`,
//! streams every state ([`Handle::states`]), and gives leadership up
//! ([`Handle::step_down`]) or ends the election ([`Handle::shutdown`]: the
//! leader work is cancelled and awaited, then the lock released).
//!
//! # Errors
//! Nothing here panics on bad input or lock errors: an invalid configuration is a
//! [`DriverError::Config`] from [`Builder::spawn`]; everything later (lock
//! failures, a broken watch, a panicking leader work) is reported as a
//! [`Change::Problem`] on the state stream and through `tracing`, and the election
//! carries on.
#![forbid(unsafe_code)]
// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

mod clock;
mod driver;
mod handle;
mod runtime;
mod shared;
mod signal;
mod state;
mod watch;
mod work;

pub use clock::BootClock;
pub use driver::{Builder, Driver, MAX_SLEEP, OnLoss, WATCH_IDLE_LEASES};
pub use handle::{Handle, Observer};
pub use runtime::{BoxFuture, Runtime};
pub use shared::{STREAM_BUFFER, StateHook, StateStream};
pub use signal::{CancelSignal, Cancelled};
pub use state::{Change, DriverError, LeadershipState};
pub use work::{LeaderWork, WorkRun};
