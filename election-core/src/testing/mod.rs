//! In-process test drivers for an [`Elector`](crate::Elector), in layers on one
//! base, with no runtime and no real lock: a custom driver's unit tests, a check
//! of how an application reacts to the elector's events, the core's scenario
//! tests, the simulator.
//!
//! - [`Register`]: the lock record in memory, applied as a compare-and-swap
//!   store (the one store of every harness).
//! - [`Reply`]: how the lock answers one call (served, failed, hung, answer
//!   lost), played out on a [`Register`]; [`ScriptedLock`]: a [`Register`] that
//!   answers each call as a script of replies says.
//! - [`Pairing`]: the pairing rule of leadership events, checked event by event.
//! - [`Driven`]: the base, one elector fed by hand on a virtual clock, whose
//!   calls wait to be answered and whose every event is checked by [`Pairing`].
//! - [`Harness`]: a [`Driven`] elector whose calls a [`ScriptedLock`] answers at
//!   once, with timers fired as they come due.
//! - [`coordinator_write`]: what Kubernetes' coordinator of coordinated
//!   election writes, for the simulations that play it.
//!
//! The workspace's own drivers are layers on these: the core's scenario tests
//! (a node is a [`Driven`] answered by the test; a cluster, several over one
//! [`Register`] reached through a [`Reply`] per call), the simulator (a
//! [`Driven`] per node on its own clock rate, over a [`Register`]) and the
//! driver suite (the [`Pairing`] of every state a driver published).
//!
//! [`Harness`] runs one elector against a [`ScriptedLock`]: every call the elector
//! makes is answered by the lock at once, as a compare-and-swap store would,
//! unless the test scripted another [`Reply`] for it; timers fire on a virtual
//! clock; a drain ends at once (the harness calls
//! [`work_stopped`](crate::Elector::work_stopped) on [`Event::Draining`](crate::Event::Draining)).
//!
//! ```
//! use core::time::Duration;
//! use election_core::testing::{Harness, Reply};
//! use election_core::{Config, Event, LockError, StopReason};
//!
//! let mut h = Harness::new(Config::fast("me")).unwrap();
//! // The lock is absent: the elector creates it, waits out the strict lock delay, leads.
//! assert!(h.run_until(Duration::from_secs(5), |h| h.is_leader()));
//!
//! // Every renew from now on is refused: leadership ends at the renew deadline.
//! h.lock.script_always(Reply::Fail(LockError::transient("connection refused")));
//! h.run_for(Duration::from_secs(3));
//! assert!(h.events().iter().any(|(_, e)| matches!(e,
//!     Event::StoppedLeading { reason: StopReason::DeadlineExceeded, .. })));
//! ```

mod coordinator;
mod driven;
mod harness;
mod pairing;
mod register;
mod reply;
mod scripted_lock;

pub use coordinator::{STRATEGY, coordinator_write};
pub use driven::Driven;
pub use harness::Harness;
pub use pairing::{Pairing, PairingError};
pub use register::Register;
pub use reply::Reply;
pub use scripted_lock::ScriptedLock;
