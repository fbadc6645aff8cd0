//! What the driver feeds the elector: answers to its calls and what a watch saw.

use crate::action::OpId;
use crate::lock::{LockError, WatchEvent};
use crate::record::Observation;

/// An input to [`crate::Elector::handle`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// The answer to the lock call `op`: the lock as read or as written, or why the
    /// call failed.
    Answer {
        /// The id of the [`crate::Action`] answered.
        op: OpId,
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
