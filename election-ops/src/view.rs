//! What the operational helpers need to know about an election: a small trait,
//! implemented for the driver's handle (the one handle of every runtime), so that
//! tests can feed a fake.

use std::sync::Arc;

use election_core::{Instant, Role, Term};
use election_driver::LeadershipState;

/// A read-only view of one node's leadership.
///
/// `deadline` must keep its last value while the driver is wedged: that is what
/// lets the write guard close and the health check fail by time alone.
pub trait LeadershipView: Send + Sync + 'static {
    /// The driver's clock.
    fn now(&self) -> Instant;
    /// The leadership deadline while the driver says this node leads.
    fn deadline(&self) -> Option<Instant>;
    /// The last published state (role, holder, term, last change).
    fn state(&self) -> LeadershipState;

    /// Leads now with at least `margin` left before the deadline.
    fn leads_with_margin(&self, margin: std::time::Duration) -> bool {
        self.deadline()
            .is_some_and(|d| self.now().saturating_add(margin) < d)
    }

    /// The term while this node leads now.
    fn term(&self) -> Option<Term> {
        if self.leads_with_margin(std::time::Duration::ZERO) {
            self.state().term
        } else {
            None
        }
    }

    /// Whether the last published state says this node leads (also when wedged
    /// past its deadline: that is what health looks for).
    fn believes_leading(&self) -> bool {
        matches!(self.state().role, Role::Leader | Role::Draining)
    }
}

impl LeadershipView for election_driver::Handle {
    fn now(&self) -> Instant {
        election_driver::Handle::now(self)
    }
    fn deadline(&self) -> Option<Instant> {
        election_driver::Handle::deadline(self)
    }
    fn state(&self) -> LeadershipState {
        election_driver::Handle::state(self)
    }
    fn term(&self) -> Option<Term> {
        election_driver::Handle::term(self)
    }
}

impl LeadershipView for election_driver::Observer {
    fn now(&self) -> Instant {
        election_driver::Observer::now(self)
    }
    fn deadline(&self) -> Option<Instant> {
        election_driver::Observer::deadline(self)
    }
    fn state(&self) -> LeadershipState {
        election_driver::Observer::state(self)
    }
    fn term(&self) -> Option<Term> {
        election_driver::Observer::term(self)
    }
}

impl<V: LeadershipView + ?Sized> LeadershipView for Arc<V> {
    fn now(&self) -> Instant {
        (**self).now()
    }
    fn deadline(&self) -> Option<Instant> {
        (**self).deadline()
    }
    fn state(&self) -> LeadershipState {
        (**self).state()
    }
    fn term(&self) -> Option<Term> {
        (**self).term()
    }
    fn believes_leading(&self) -> bool {
        (**self).believes_leading()
    }
}
