//! Time-boxed Leases: maintenance windows on Kubernetes Nodes.
//!
//! Someone asks for maintenance by annotating a Node with
//! [`WINDOW_ANNOTATION`] (`kube-elector.dev/maintenance-window-seconds: "20"`).
//! A maintenance controller then takes a `coordination.k8s.io/v1` Lease named
//! after the Node (holder: its identity, `leaseDurationSeconds`: the window
//! plus a padding, owned by the Node so that it goes with it), cordons the Node
//! (`spec.unschedulable`), drains it through a [`Drainer`] the user supplies,
//! and when the window is over, or the annotation removed, undoes both within
//! the lease time it has left and ends the Lease. Its progress is the Node's
//! [`STATUS_ANNOTATION`] ([`Status`]). A second controller finds the Lease
//! held and waits; the next window is its own.
//!
//! It is the same record, compare-and-swap and clock questions as an
//! election, with a fixed end instead of renewals, and is built the same way:
//!
//! - [`step`], a **pure, sans-IO decision**: the Node's annotations and cordon,
//!   the Lease as observed, this controller's record of its last window write,
//!   and the time on both clocks in; the writes to do and the next check time
//!   out. Every branch is a table test (`tests/step.rs`).
//! - [`WindowController`], a **kube-runtime driver** that runs the step per
//!   Node: it reads, decides, writes (each write bounded by the time the window
//!   has left), and requeues, never blocking a reconcile for long.
//!
//! # Time
//!
//! The holder acts (cordon, drain, teardown writes) only while its own window
//! is valid by **its monotonic clock**, counted from the instant it stamped the
//! window's `acquireTime`, just before sending the write. Others judge the
//! window by **wall clock**, a window being a calendar span: it is valid while
//! `now < acquireTime + leaseDurationSeconds + clock_skew`. Two controllers
//! never act on one Node at once as long as their wall clocks differ by less
//! than [`WindowConfig::with_clock_skew`] (1 s by default) and their monotonic
//! clocks run at nearly the same rate; a holder whose wall clock runs slow
//! still stops at its own end (docs/design.md §11).
//!
//! # Why a crate and not a module of `lock-lease`
//!
//! `lock-lease` is an election lock: client-go's record in a Lease, driven by
//! `election-core`'s elector through the `Lock` trait, with renewals. A window
//! Lease is another protocol on the same object (no renewals, a fixed end, an
//! owner, writes to a second object, the Node), and its driver needs
//! `kube-runtime` and Node access that no user of the election lock should pull
//! in. It shares the clock types with `election-core` and the wall clock with
//! `lock-kube`.
//!
//! # Example
//!
//! One step for a Node just annotated for a 20 s window, no Lease yet:
//!
//! ```
//! use std::collections::BTreeMap;
//! use election_core::{Instant, WallTime};
//! use lease_window::{Input, LeaseWrite, Now, Status, WINDOW_ANNOTATION, WindowConfig, Write, step};
//!
//! let config = WindowConfig::new("maintenance-a")?;
//! let annotations = BTreeMap::from([(WINDOW_ANNOTATION.to_owned(), "20".to_owned())]);
//! let now = Now { mono: Instant::from_secs(100), wall: WallTime::new(1_800_000_000, 0) };
//! let decision = step(&config, &Input { annotations: &annotations, unschedulable: false, lease: None, own: None, now });
//! assert_eq!(decision.status, Some(Status::New(lease_window::NewReason::Create)));
//! assert!(matches!(
//!     decision.writes[0],
//!     Write::Lease(LeaseWrite::Create { duration_seconds: 50, .. }) // 20 s + 30 s padding
//! ));
//! # Ok::<(), lease_window::WindowError>(())
//! ```
#![forbid(unsafe_code)]
// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

mod driver;
mod error;
mod names;
mod step;

pub use driver::{Drainer, NoDrain, Transition, WindowController};
pub use error::{DriverError, WindowError};
pub use names::{NewReason, REASON_ANNOTATION, STATUS_ANNOTATION, Status, WINDOW_ANNOTATION};
pub use step::{
    Decision, Input, LeaseView, LeaseWrite, Now, OwnWrite, WindowConfig, Write, parse_window, step,
};
