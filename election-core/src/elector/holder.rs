//! The holder's decision: what a node that holds the lock does next, as one
//! pure function ([`decide`]) of what it knows ([`Knows`]) and of what just
//! came ([`News`]). The elector gathers the input, calls the function and
//! carries the [`Decision`] out (`renew.rs`); the rules are here, in one place
//! (DESIGN §4 "Renew", "Give up", "Failed writes wait", "Foreign edits and
//! twins"):
//!
//! - the renew deadline passed: stop leading, whatever came (a holder that
//!   already stopped and releases has nothing left to stop);
//! - the next call is due: none while one is in flight; none before the hold a
//!   failed write put on the next ones ends; the release once the holder
//!   stopped leading; else a renew from the cached record (none cached,
//!   nothing to renew on);
//! - a renew's answer: a new version counts from the renew's send time; no new
//!   version counts nothing; a conflict or an unknown outcome is read before
//!   anything is decided (the slow path); a lock gone ends leadership; any
//!   other failure waits out its hold, never past the deadline;
//! - a read's answer: the version held goes on; another holder, the
//!   coordinator's new assignment or a twin ends leadership; an older write
//!   of ours is read again; a third party's edit that keeps our stamps is
//!   adopted; a write of ours of unknown outcome that landed counts from its
//!   send time; a failed read waits at most a retry period (the next renew is
//!   the next probe);
//! - a watch event: a newer version naming another ends leadership at once;
//!   our own write's echo is nothing new; any other version, and an absence
//!   that cannot be placed against our writes, is read before anything is
//!   decided, or, while a write of ours is in flight (it may be its echo),
//!   judged once that write is answered.

use core::time::Duration;

use crate::time::Instant;

/// What the holder knows when it decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Knows {
    /// The instant of the decision.
    pub(super) now: Instant,
    /// The leadership deadline: the send time of the last successful write plus
    /// the renew deadline.
    pub(super) deadline: Instant,
    /// The holder stopped leading and only releases the lock now.
    pub(super) releasing: bool,
    /// A lock call is in flight: its answer comes before anything else.
    pub(super) in_flight: bool,
    /// The lock is cached as present (a renew is written from it).
    pub(super) lock_seen: bool,
    /// The next write waits until this instant (the hold a failed write put,
    /// `WriteHold`)...
    pub(super) hold_until: Instant,
    /// ...unless a read showed that the lock moved on since.
    pub(super) hold_moved_on: bool,
    /// How long after a counted renew the next one goes.
    pub(super) renew_every: Duration,
    /// The retry period.
    pub(super) retry_period: Duration,
    /// What just came.
    pub(super) news: News,
}

/// What just came, for the holder to decide on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum News {
    /// Only time passed (a handler or a command begins).
    Time,
    /// The attempt timer came: the next call is due.
    AttemptDue,
    /// The answer to a renew sent at `sent`.
    Renew {
        /// The renew's send time.
        sent: Instant,
        /// What the answer said.
        answer: RenewAnswer,
    },
    /// What a read answered.
    Read(ReadShowed),
    /// What the watch pushed.
    Watch(WatchShowed),
}

/// What a renew's answer said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RenewAnswer {
    /// The write made a new version.
    NewVersion,
    /// The write succeeded without a new version (a server that skips
    /// identical writes): followers saw no change.
    SameVersion,
    /// The compare-and-swap lost.
    Conflict,
    /// The lock is gone.
    NotFound,
    /// The write may or may not have landed.
    Unknown,
    /// Any other failure (refused, throttled, a broken connection).
    Failed,
}

/// What a holder's read showed, against what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ReadShowed {
    /// The version held: nothing changed.
    VersionHeld,
    /// Another holder (`after_conflict`: the read follows a lost
    /// compare-and-swap).
    OtherHolder {
        /// The read follows a lost compare-and-swap.
        after_conflict: bool,
    },
    /// An older write of ours: a stale read.
    OlderOwnWrite,
    /// Our record with only fields a holder does not stamp changed: a third
    /// party's edit, or a handover request.
    ForeignEdit,
    /// The coordinator's new assignment of the lock to this node.
    Assignment,
    /// A write of ours whose outcome was unknown landed; the earliest such was
    /// sent at `sent`.
    UnknownWriteLanded {
        /// The earliest send time of the writes of unknown outcome.
        sent: Instant,
    },
    /// Our identity at a version we did not write, with other stamps: a twin.
    Twin,
    /// The read failed; a follower would wait `backoff` before its next call.
    Failed {
        /// A follower's backoff after this failure.
        backoff: Duration,
    },
}

/// What a holder's watch pushed, against what it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WatchShowed {
    /// A version ordered after the one held that does not name this node:
    /// another holder, or a holder emptied by hand (never our write: ours name
    /// us, and our release comes only once we stopped).
    NewerForeignRecord,
    /// A version this node wrote (a write's echo).
    OwnWrite,
    /// A version this node did not write that names it, or one that cannot
    /// be ordered against the one held (an edit, a handover request, a twin).
    Unconfirmed {
        /// A write of ours is in flight: the version may be its echo.
        echo_possible: bool,
    },
    /// The lock absent, with no version to place the absence before or after
    /// our writes (a watch that found no lock when it started).
    AbsentUnplaced,
}

/// Why a holder stops leading at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Loss {
    /// The renew deadline passed.
    DeadlineExceeded,
    /// A renew found the lock gone.
    LockDeleted,
    /// A read or the watch showed another holder.
    OtherHolder {
        /// The read followed a lost compare-and-swap.
        after_conflict: bool,
    },
    /// A read showed the coordinator's new assignment to this node.
    Reassigned,
    /// A read showed a twin's write.
    IdentityCollision,
}

/// What the holder does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Decision {
    /// Stop leading at once, for this reason.
    StopLeading(Loss),
    /// Nothing now: an answer, an input or a timer decides.
    Idle,
    /// Renew now, by compare-and-swap on the version held.
    Renew,
    /// Write the release (the holder stopped leading).
    Release,
    /// Wait: the next attempt at `until` (a failed call's hold).
    Hold {
        /// When the next attempt goes.
        until: Instant,
    },
    /// Read the lock before deciding anything (`slow_path`: after a renew).
    Confirm {
        /// The read follows a lost compare-and-swap.
        after_conflict: bool,
        /// The read is a renew's slow path (counted in `Stats::slow_path`).
        slow_path: bool,
    },
    /// The renew sent at `sent` counts: the deadline moves; the next renew at
    /// `next`.
    Renewed {
        /// The renew's send time.
        sent: Instant,
        /// When the next renew goes.
        next: Instant,
    },
    /// The renew did not count (no new version): the next one at `next`.
    NotCounted {
        /// When the next renew goes.
        next: Instant,
    },
    /// A write of unknown outcome landed: it counts from `sent`; the next renew
    /// at `next`.
    Landed {
        /// The earliest send time of the writes of unknown outcome.
        sent: Instant,
        /// When the next renew goes.
        next: Instant,
    },
    /// The lock is still held as cached: the next attempt now.
    Keep,
    /// Adopt a third party's edit of our record, and renew on it now.
    Adopt,
    /// Put the watch's version aside until the write in flight is answered
    /// (unless the answer is that version, it came from someone else).
    Defer,
}

/// The holder's decision (see the module's rules).
pub(super) fn decide(k: &Knows) -> Decision {
    if k.now >= k.deadline && !k.releasing {
        return Decision::StopLeading(Loss::DeadlineExceeded);
    }
    // The next renew `after` the one sent at `sent`: a holder whose work
    // stopped meanwhile releases at once.
    let next_renew = |sent: Instant, after: Duration| {
        if k.releasing {
            k.now
        } else {
            (sent + after).max(k.now)
        }
    };
    match k.news {
        News::Time => Decision::Idle,
        News::AttemptDue => {
            if k.in_flight {
                Decision::Idle
            } else if k.now < k.hold_until && !k.hold_moved_on {
                Decision::Hold {
                    until: k.hold_until,
                }
            } else if k.releasing {
                Decision::Release
            } else if !k.lock_seen {
                Decision::Idle
            } else {
                Decision::Renew
            }
        }
        News::Renew { sent, answer } => match answer {
            RenewAnswer::NewVersion => Decision::Renewed {
                sent,
                next: next_renew(sent, k.renew_every),
            },
            RenewAnswer::SameVersion => Decision::NotCounted {
                next: next_renew(sent, k.retry_period),
            },
            RenewAnswer::Conflict => Decision::Confirm {
                after_conflict: true,
                slow_path: true,
            },
            RenewAnswer::NotFound => Decision::StopLeading(Loss::LockDeleted),
            RenewAnswer::Unknown => Decision::Confirm {
                after_conflict: false,
                slow_path: true,
            },
            RenewAnswer::Failed => Decision::Hold {
                until: k.hold_until.min(k.deadline),
            },
        },
        News::Read(showed) => match showed {
            ReadShowed::VersionHeld => Decision::Keep,
            ReadShowed::OtherHolder { after_conflict } => {
                Decision::StopLeading(Loss::OtherHolder { after_conflict })
            }
            ReadShowed::OlderOwnWrite => Decision::Confirm {
                after_conflict: false,
                slow_path: false,
            },
            ReadShowed::ForeignEdit => Decision::Adopt,
            ReadShowed::Assignment => Decision::StopLeading(Loss::Reassigned),
            ReadShowed::UnknownWriteLanded { sent } => Decision::Landed {
                sent,
                next: next_renew(sent, k.renew_every),
            },
            ReadShowed::Twin => Decision::StopLeading(Loss::IdentityCollision),
            ReadShowed::Failed { backoff } => Decision::Hold {
                until: k.now + backoff.min(k.retry_period),
            },
        },
        News::Watch(showed) => match showed {
            WatchShowed::NewerForeignRecord => Decision::StopLeading(Loss::OtherHolder {
                after_conflict: false,
            }),
            WatchShowed::OwnWrite => Decision::Idle,
            WatchShowed::Unconfirmed {
                echo_possible: true,
            } => Decision::Defer,
            WatchShowed::Unconfirmed {
                echo_possible: false,
            }
            | WatchShowed::AbsentUnplaced => Decision::Confirm {
                after_conflict: false,
                slow_path: false,
            },
        },
    }
}

#[cfg(test)]
mod tests;
