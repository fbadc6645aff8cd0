//! What the driver feeds the elector: answers to its calls and what a watch saw.

use crate::action::{OpId, ReadId, WriteId};
use crate::lock::{LockError, WatchEvent};
use crate::record::Observation;

/// An input to [`crate::Elector::handle`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// The answer to the read `op` ([`crate::Action::Get`]): the lock as read, or
    /// why the read failed.
    Read {
        /// The id of the read answered.
        op: ReadId,
        /// The outcome.
        result: Result<Observation, LockError>,
    },
    /// The answer to the write `op` ([`crate::Action::Create`] or
    /// [`crate::Action::Update`]): the lock as written (with the backend's stamps
    /// and the new version), or why the write failed.
    Written {
        /// The id of the write answered.
        op: WriteId,
        /// The outcome.
        result: Result<Observation, LockError>,
    },
    /// A change pushed by the lock's watch.
    Watch(WatchEvent),
    /// Whether a watch is now delivering changes. While one is, a follower does not
    /// poll: it waits for changes and for the current lease to expire. When the
    /// watch breaks, say so at once: polling resumes (silence never means
    /// "unchanged").
    WatchActive(bool),
}

impl OpId {
    /// The input that hands `result` back as this call's answer (a read's or a
    /// write's, by the id's kind). For a driver that runs every
    /// [`Action`](crate::Action) the same way; a hand-written loop that matches
    /// on the action can build [`Input::Read`] and [`Input::Written`] directly.
    pub fn answer(self, result: Result<Observation, LockError>) -> Input {
        match self {
            OpId::Read(op) => Input::Read { op, result },
            OpId::Write(op) => Input::Written { op, result },
        }
    }
}
