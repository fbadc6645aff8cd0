//! Leader election as a sans-IO state machine, with client-go's semantics and the
//! corrections that make it safe.
//!
//! This crate decides; it does no I/O. An [`Elector`] takes the answers of lock
//! calls and the local monotonic time, and hands back [`Action`]s (read, create,
//! compare-and-swap update of the lock record) and [`Event`]s (started leading,
//! draining, stopped leading with a reason, leader changed, warnings). Lock
//! backends implement [`Lock`]; runtime adapters drive the loop. The crate is
//! `#![no_std]` with `alloc`; the `std` feature (on by default) adds
//! `std::error::Error` impls and wall-clock conversions, and the `proptest`
//! feature adds proptest strategies for lock records
//! (`strategies`), for a backend's property tests.
//!
//! # What it promises
//! - **Safety**: at no real instant do two electors report [`Elector::is_leader`],
//!   provided clock rates differ by less than [`Config::tolerated_clock_ratio`],
//!   identities are unique and the lock's writes are compare-and-swap.
//!   Leadership is time-bounded: `is_leader(now)` turns false at the deadline by
//!   itself.
//! - **Liveness**: a leader exists within one lease duration plus a retry after
//!   the old one crashed, and within one watch delivery plus one write after it
//!   released.
//! - **No lost work**: the leader work is drained before the lock is released, and
//!   a release never evicts a newer holder.
//! - **Clear failures**: invalid configuration is a [`ConfigError`] naming the
//!   rule; malformed records and lock errors become [`Warning`]s, never panics.
//!
//! # The run loop
//! A driver repeats these steps; a test or a simulator does the same with a
//! virtual clock. Here the lock is a plain variable:
//!
//! ```
//! use election_core::{answer_calls, Action, Config, Elector, Event, Instant, LockError, Observation};
//!
//! let mut now = Instant::ZERO;
//! let mut elector = Elector::new(Config::fast("node-a"), now).unwrap();
//! let mut lock: Option<Observation> = None; // the "lock backend"
//! let mut version = 0u64;
//! let mut leading = false;
//!
//! for _ in 0..20 {
//!     // 1. Run each lock call the elector asks for (one at a time), and hand back
//!     //    its answer (`answer_calls`; an async driver awaits the call instead).
//!     answer_calls(&mut elector, |action| match action {
//!         Action::Get { .. } => lock.clone().ok_or(LockError::NotFound),
//!         Action::Create { record, .. } | Action::Update { record, .. } => {
//!             version += 1;
//!             let obs = Observation::new(version.to_string().as_str(), record);
//!             lock = Some(obs.clone());
//!             Ok(obs)
//!         }
//!     }, || now);
//!     // 2. Deliver the events.
//!     while let Some(event) = elector.poll_event() {
//!         if let Event::StartedLeading { term } = event {
//!             println!("leading in term {term}");
//!             leading = true;
//!         }
//!     }
//!     // 3. Sleep until the next timeout, then handle it.
//!     now = elector.poll_timeout().unwrap_or(now).max(now);
//!     elector.handle_timeout(now);
//! }
//! assert!(leading && elector.is_leader(now));
//! ```
//!
//! # Panics and errors
//! Nothing in this crate panics on any input: bad records, bad answers, absurd
//! durations and out-of-order time are handled and reported. Arithmetic on time
//! saturates.
#![no_std]
#![forbid(unsafe_code)]
// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]
// docs.rs labels each feature-gated item with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod action;
mod blocking;
mod config;
mod elector;
mod event;
mod input;
mod layer;
mod lock;
mod record;
mod rng;
#[cfg(feature = "proptest")]
#[cfg_attr(docsrs, doc(cfg(feature = "proptest")))]
pub mod strategies;
pub mod testing;
mod time;
mod timer;

pub use action::{Action, OpId, OpKind, ReadId, WriteId};
pub use blocking::answer_calls;
#[cfg(feature = "mutants")]
#[doc(hidden)]
pub use config::Mutants;
pub use config::{Config, ConfigError, LockDelay, Mode, Preemption};
pub use elector::{Elector, Role, Stats};
pub use event::{BrokenAnswer, Event, StopReason, Term, Warning};
pub use input::Input;
pub use layer::{Layer, Layered};
pub use lock::{LeadershipChange, Lock, LockError, LockTask, WatchEvent, WatchStream};
pub use record::{
    Handover, LockRecord, MALFORMED_HOLDER, MAX_TRANSITIONS, Observation, Stamp, Version,
};
pub use rng::SplitMix64;
pub use time::{Instant, WallTime};

/// Re-exported so that lock crates can name the watch stream's trait.
pub use futures_core::Stream;
