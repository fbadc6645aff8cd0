//! [`Pairing`]: the pairing rule of leadership events, checked event by event.

use core::fmt;

use crate::event::{Event, StopReason, Term};

/// The pairing rule of DESIGN §4, checked one event at a time: no
/// `StoppedLeading` without the `StartedLeading` of the same term, no second
/// `StartedLeading` before the `StoppedLeading` of the first. Every harness
/// checks it on every event it reads: [`Driven`](super::Driven) (and so every
/// layer on it) on each event it collects, a driver's test on the states it
/// published.
///
/// ```
/// use election_core::testing::{Pairing, PairingError};
/// use election_core::{Event, StopReason, Term, Version};
///
/// let term = Term { transitions: 0, version: Version::new("1") };
/// let mut pairing = Pairing::new();
/// pairing.check(&Event::StartedLeading { term: term.clone() }).unwrap();
/// assert_eq!(pairing.started(), Some(&term));
/// let stop = Event::StoppedLeading { term, reason: StopReason::SteppedDown };
/// pairing.check(&stop).unwrap();
/// // A second stop has no start to pair with.
/// assert!(matches!(pairing.check(&stop), Err(PairingError::StopWithoutStart { .. })));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pairing {
    started: Option<Term>,
}

/// An event that breaks the pairing rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairingError {
    /// `StartedLeading` of `term` while the leadership of `open` has not stopped.
    StartedTwice {
        /// The term started.
        term: Term,
        /// The term started before and not stopped.
        open: Term,
    },
    /// `StoppedLeading` of `term` while `open` (if any) was started.
    StopWithoutStart {
        /// The term stopped.
        term: Term,
        /// Why it stopped.
        reason: StopReason,
        /// The term started and not stopped, if any.
        open: Option<Term>,
    },
}

impl fmt::Display for PairingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PairingError::StartedTwice { term, open } => {
                write!(f, "StartedLeading({term}) while {open} has not stopped")
            }
            PairingError::StopWithoutStart { term, reason, open } => write!(
                f,
                "StoppedLeading({term}, {reason}) without a matching StartedLeading \
                 (started: {open:?})"
            ),
        }
    }
}

impl Pairing {
    /// No leadership started.
    pub fn new() -> Self {
        Self::default()
    }

    /// The term started and not yet stopped, per the events so far.
    pub fn started(&self) -> Option<&Term> {
        self.started.as_ref()
    }

    /// Takes `event` into account; an error if it breaks the rule (the state is
    /// then left as it was).
    pub fn check(&mut self, event: &Event) -> Result<(), PairingError> {
        match event {
            Event::StartedLeading { term } => {
                if let Some(open) = &self.started {
                    return Err(PairingError::StartedTwice {
                        term: term.clone(),
                        open: open.clone(),
                    });
                }
                self.started = Some(term.clone());
            }
            Event::StoppedLeading { term, reason } => {
                if self.started.as_ref() != Some(term) {
                    return Err(PairingError::StopWithoutStart {
                        term: term.clone(),
                        reason: reason.clone(),
                        open: self.started.clone(),
                    });
                }
                self.started = None;
            }
            _ => {}
        }
        Ok(())
    }
}
