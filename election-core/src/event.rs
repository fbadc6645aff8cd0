//! What the elector tells its host: leadership changes, leaders seen, problems.

use alloc::sync::Arc;
use core::cmp::Ordering;
use core::fmt;
use core::time::Duration;

use crate::action::OpKind;
use crate::lock::LockError;
use crate::record::Version;

/// A leadership term, usable as a fencing token: `(leaderTransitions, version)` of
/// the write that acquired the lock.
///
/// Terms order by transitions, then by version read as a number (etcd revisions
/// grow). Each acquisition increments the transitions, so a later term compares
/// greater, also after the counter saturated. A lock that is deleted and created
/// anew starts its count again: from the largest count its creator had seen, plus one.
/// A creator that never saw the old lock (it started after the deletion) starts from
/// 0, so across a deletion the token can go back: a downstream check that must
/// survive the lock's deletion should also compare the version, which on
/// Kubernetes is a cluster-wide etcd revision that keeps growing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Term {
    /// `leaderTransitions` written by the acquiring write.
    pub transitions: u32,
    /// The lock version that write produced.
    pub version: Version,
}

impl Ord for Term {
    fn cmp(&self, other: &Self) -> Ordering {
        self.transitions
            .cmp(&other.transitions)
            .then_with(|| self.version.cmp_numeric(&other.version))
    }
}

impl PartialOrd for Term {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.transitions, self.version)
    }
}

/// Why leadership ended, or why it is being given up.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// No renew succeeded within the renew deadline (measured from the send time
    /// of the last successful write).
    DeadlineExceeded,
    /// A renew lost its compare-and-swap, and a read showed another holder.
    LostConflict {
        /// The holder the read showed (`""` if released).
        holder: Arc<str>,
    },
    /// A read or a watch showed another holder (a human edit, a steal).
    ObservedOtherHolder {
        /// The holder seen (`""` if released).
        holder: Arc<str>,
    },
    /// The lock was deleted while we held it.
    LockDeleted,
    /// A higher-priority candidate asked for the lock; it is being handed over.
    Preempted {
        /// The candidate that asked.
        by: Arc<str>,
    },
    /// The host asked to step down.
    SteppedDown,
    /// The host is shutting down. A drain that began for another graceful
    /// reason (a preemption, a step-down) and ends once the host asked to shut
    /// down ends as a shutdown too; its [`Event::Draining`] kept its first reason.
    /// A loss during a shutdown's drain is reported as that loss.
    ShutDown,
    /// Another process uses our identity: a version we did not write names us.
    IdentityCollision,
    /// Coordinated mode: the coordinator wrote a new assignment over the record
    /// this node held (it re-created a deleted lock, or gave an expired one away
    /// and back). The held term is over; the node claims the assignment as a new
    /// term.
    Reassigned,
}

impl StopReason {
    /// Whether leadership was given up by this node's own wish (stepped down, shut
    /// down), not lost. After a loss a host may exit (client-go's `RunOrDie`).
    pub fn is_graceful(&self) -> bool {
        matches!(self, StopReason::SteppedDown | StopReason::ShutDown)
    }

    /// A short snake_case name of the reason, for metric labels and log fields.
    pub fn class(&self) -> &'static str {
        match self {
            StopReason::DeadlineExceeded => "deadline_exceeded",
            StopReason::LostConflict { .. } => "lost_conflict",
            StopReason::ObservedOtherHolder { .. } => "observed_other_holder",
            StopReason::LockDeleted => "lock_deleted",
            StopReason::Preempted { .. } => "preempted",
            StopReason::SteppedDown => "stepped_down",
            StopReason::ShutDown => "shut_down",
            StopReason::IdentityCollision => "identity_collision",
            StopReason::Reassigned => "reassigned",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopReason::DeadlineExceeded => f.write_str("renew deadline exceeded"),
            StopReason::LostConflict { holder } => {
                write!(f, "lost a compare-and-swap to {holder:?}")
            }
            StopReason::ObservedOtherHolder { holder } => {
                write!(f, "observed another holder {holder:?}")
            }
            StopReason::LockDeleted => f.write_str("lock deleted"),
            StopReason::Preempted { by } => write!(f, "preempted by {by:?}"),
            StopReason::SteppedDown => f.write_str("stepped down"),
            StopReason::ShutDown => f.write_str("shut down"),
            StopReason::IdentityCollision => f.write_str("identity collision"),
            StopReason::Reassigned => f.write_str("reassigned by the coordinator"),
        }
    }
}

/// Something worth reporting that did not (by itself) change leadership.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Warning {
    /// A lock call failed.
    #[error("lock {op} failed: {error}")]
    LockFailed {
        /// The call.
        op: OpKind,
        /// Why.
        error: LockError,
    },
    /// A lock call got no answer within the request timeout.
    #[error("lock {op} timed out after {timeout:?} (outcome unknown)")]
    RequestTimedOut {
        /// The call.
        op: OpKind,
        /// The configured request timeout.
        timeout: Duration,
    },
    /// A record's lease duration is absent, zero or negative: the configured
    /// duration applies.
    #[error("record has no usable leaseDurationSeconds ({0:?}); using the configured duration")]
    LeaseDurationMissing(Option<i64>),
    /// A record's lease duration exceeds the configured maximum and was capped.
    #[error("record's leaseDurationSeconds {secs} exceeds the maximum; capped to {cap:?}")]
    LeaseDurationCapped {
        /// The record's value.
        secs: i64,
        /// The cap applied.
        cap: Duration,
    },
    /// A renew succeeded without producing a new version (the backend skipped an
    /// identical write): it does not count, since other candidates saw no change.
    /// Backends should make every write differ (client-go's renewTime does).
    #[error("renew produced no new version; not counted")]
    RenewWithoutNewVersion,
    /// A version we did not write names our identity: another live process uses it.
    /// Give every process its own identity.
    #[error("another process uses identity {0:?}: a version we did not write names it")]
    IdentityCollision(Arc<str>),
    /// Shutting down, this node found itself holding a lock that a create of its
    /// own made within the strict lock delay (see [`crate::LockDelay::Strict`]).
    /// It does not release it: a leader of a lock deleted before that create may
    /// still believe, and an empty holder is acquirable at once. The record names
    /// this node until its lease expires; others take over a lease after they saw it.
    #[error("shut down holding a lock created within the lock delay: left to expire, not released")]
    LeftToExpire,
    /// The lock answered a write with success, but with a record that cannot be
    /// the one written: the lock is broken (a backend bug). The write counts as
    /// one of unknown outcome: never led on, and followed by a read.
    #[error("lock {op} answered success with {answer}: the lock backend is broken; not counted")]
    BrokenWriteAnswer {
        /// The write.
        op: OpKind,
        /// What was wrong with the answer.
        answer: BrokenAnswer,
    },
}

/// What made a successful write's answer impossible ([`Warning::BrokenWriteAnswer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BrokenAnswer {
    /// The answer names another holder than the one written.
    WrongHolder {
        /// The holder the answer names.
        holder: Arc<str>,
    },
    /// The answer carries the version the compare-and-swap expected: no new version.
    VersionUnchanged,
}

impl fmt::Display for BrokenAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BrokenAnswer::WrongHolder { holder } => write!(f, "another holder {holder:?}"),
            BrokenAnswer::VersionUnchanged => f.write_str("the version it replaced"),
        }
    }
}

/// A change for the host to act on, from [`crate::Elector::poll_event`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// This node leads from now until [`crate::Elector::deadline`] unless renewed.
    /// Start the leader work.
    StartedLeading {
        /// The fencing token of this leadership.
        term: Term,
    },
    /// Leadership is being given up gracefully: cancel the leader work, wait for it
    /// to end, then call [`crate::Elector::work_stopped`]. The node keeps renewing
    /// (and leading) meanwhile, until its deadline at the latest.
    Draining {
        /// Why.
        reason: StopReason,
    },
    /// This node no longer leads. Always follows a [`Event::StartedLeading`] of the
    /// same term, exactly once. After a drain its reason is the drain's, or
    /// [`StopReason::ShutDown`] once a shutdown was asked (whatever the drain
    /// began for).
    StoppedLeading {
        /// The term that ended.
        term: Term,
        /// Why.
        reason: StopReason,
    },
    /// The holder of the lock as this node sees it changed (`None`: nobody holds it).
    LeaderChanged {
        /// The new holder.
        leader: Option<Arc<str>>,
    },
    /// A problem worth reporting.
    Warning(Warning),
    /// The elector finished shutting down; it will emit nothing more.
    Terminated,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Ord` agrees with `Eq`: terms that differ are never `Equal` (versions
    /// `"010"` and `"10"` are the same number but not the same version).
    #[test]
    fn term_order_agrees_with_eq() {
        let t = |n, v: &str| Term {
            transitions: n,
            version: Version::new(v),
        };
        assert_ne!(t(1, "010"), t(1, "10"));
        assert_ne!(t(1, "010").cmp(&t(1, "10")), Ordering::Equal);
        assert_eq!(t(1, "10").cmp(&t(1, "10")), Ordering::Equal);
        assert!(t(1, "9") < t(1, "10"), "numeric within a transition count");
        assert!(t(2, "1") > t(1, "10"), "transitions first");
    }
}
