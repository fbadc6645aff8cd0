//! What a handle reports: the leadership state, what changed it, and why.

use std::sync::Arc;

use election_core::{ConfigError, Event, Instant, LockError, Role, Term};

/// A problem the driver reports through the state stream and `tracing`. None of
/// them stops the driver: lock errors are retried by the elector, a broken watch is
/// resumed (polling meanwhile), a panicking leader work is reported and the node
/// steps down as if the work had ended.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The configuration breaks a rule; nothing was started. Fix the configuration.
    #[error("invalid configuration: {0}")]
    Config(#[from] ConfigError),
    /// The lock's watch broke; the driver resumes it with backoff and the elector
    /// polls meanwhile.
    #[error("lock watch failed: {0}")]
    Watch(LockError),
    /// The leader work panicked. Leadership is not affected by itself (renewals go
    /// on); a drain that waits for it completes at once.
    #[error("leader work panicked: {message}")]
    WorkPanicked {
        /// The panic's message, when it was a string.
        message: String,
    },
    /// The runtime could not start the driver: no runtime to spawn on, or one
    /// lacking what the driver needs (tokio without its time driver).
    #[error("failed to start the driver: {0}")]
    Spawn(String),
}

/// What caused a [`LeadershipState`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Change {
    /// The driver started and campaigns.
    Started,
    /// What the elector reported: leadership started, is draining or stopped, the
    /// holder changed, a warning (a failed lock call, an odd record), or the end
    /// of the election (the driver's last state, after a shutdown or an exit on
    /// loss: [`Event::Terminated`]).
    Elector(Event),
    /// The leader work of `term` ended by itself (without being cancelled).
    WorkEnded {
        /// The term the work ran in.
        term: Term,
    },
    /// A problem of the driver's own (the watch, the leader work); it carries on.
    Problem(DriverError),
    /// The driver was aborted without releasing ([`crate::Handle::abort`]), as a crash.
    Aborted,
}

/// One node's leadership as its driver last published it.
///
/// `role`, `leader` and `term` are snapshots; whether the node leads *now* is
/// [`crate::Handle::is_leader`], which also turns false at the deadline when the
/// driver is wedged.
#[derive(Clone, Debug, PartialEq)]
pub struct LeadershipState {
    /// This node's identity.
    pub identity: Arc<str>,
    /// Its role.
    pub role: Role,
    /// The holder of the lock as this node sees it.
    pub leader: Option<Arc<str>>,
    /// The current term while this node leads.
    pub term: Option<Term>,
    /// What produced this state.
    pub change: Change,
    /// When, on the driver's clock.
    pub at: Instant,
}

impl LeadershipState {
    /// The state before the driver ran.
    pub fn initial(identity: Arc<str>) -> Self {
        LeadershipState {
            identity,
            role: Role::Follower,
            leader: None,
            term: None,
            change: Change::Started,
            at: Instant::ZERO,
        }
    }

    /// Whether the state says this node leads (a snapshot; prefer
    /// [`crate::Handle::is_leader`], which also checks the deadline).
    pub fn leading(&self) -> bool {
        matches!(self.role, Role::Leader | Role::Draining)
    }
}
