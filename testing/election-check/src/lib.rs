//! Exhaustive model checking of the real election core.
//!
//! The [`Elector`](election_core::Elector) is sans-IO: time, answers and watch
//! events are its inputs. So the production state machine itself, not a model
//! of it, can be explored over every schedule: [`explore`] visits every state
//! a [`World`] can reach (real electors over the core's linearizable
//! [`Register`](election_core::testing::Register), a network that holds each
//! call and answer until a step serves, delivers, loses, refuses or
//! duplicates it, a watch queue per node, clocks at per-node rates, crashes,
//! graceful stops, operator edits) within a bound of real time and a budget
//! of faults, and checks in every state:
//!
//! - at most one leader at one real instant (`is_leader`, the guard open);
//! - every leader within its guard: a committed write of its own, sent less
//!   than a renew deadline ago on its clock;
//! - terms only grow (since the lock was last deleted);
//! - no release evicts another holder;
//! - the pairing rule of leadership events; no timer left due after it fired;
//!
//! and, where the bound ends, that a fair continuation (everything delivered,
//! crashed nodes restarted, no fault) has a leader within the setup's settle
//! time. The search is breadth-first, so a violation comes with a shortest
//! schedule that causes it.
//!
//! ```
//! use election_check::{explore, Faults, Setup, World};
//!
//! // Two candidates for 2 s of real time, no fault: every interleaving.
//! let world = World::new(Setup::classic(2, 4, 0).faults(Faults::NONE));
//! let report = explore(&world, 100_000);
//! assert!(report.complete && report.violation.is_none(), "{report:?}");
//! ```

mod explore;
mod model;
mod setup;
mod world;

pub use explore::{Counterexample, Model, Report, explore};
pub use setup::{Faults, NodeSetup, Setup, config};
pub use world::{Body, Edit, Msg, Node, State, Step, WatchQueue, World};
