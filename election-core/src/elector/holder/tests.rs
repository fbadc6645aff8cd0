//! Every branch of the holder's decision as a table test of the pure
//! function, one row per branch; every decision and every news is reached.

use alloc::collections::BTreeSet;
use core::time::Duration;

use super::{Decision, Knows, Loss, News, ReadShowed, RenewAnswer, WatchShowed, decide};
use crate::time::Instant;

const fn secs(s: u64) -> Instant {
    Instant::from_secs(s)
}

/// A holder at 100 s, its deadline at 110 s, no hold, no call in flight, the
/// lock cached; renews every 4 s, retries every 2 s.
fn knows(news: News) -> Knows {
    Knows {
        now: secs(100),
        deadline: secs(110),
        releasing: false,
        in_flight: false,
        lock_seen: true,
        hold_until: Instant::ZERO,
        hold_moved_on: false,
        renew_every: Duration::from_secs(4),
        retry_period: Duration::from_secs(2),
        news,
    }
}

fn renew(sent: u64, answer: RenewAnswer) -> News {
    News::Renew {
        sent: secs(sent),
        answer,
    }
}

struct Row {
    name: &'static str,
    knows: Knows,
    decides: Decision,
}

fn table() -> [Row; 37] {
    use Decision as D;
    use ReadShowed as R;
    use RenewAnswer as A;
    use WatchShowed as W;
    [
        // ---- the deadline, first whatever came ----
        Row {
            name: "only time passed, before the deadline: nothing to do",
            knows: knows(News::Time),
            decides: D::Idle,
        },
        Row {
            name: "the deadline reached: stop leading",
            knows: Knows {
                now: secs(110),
                ..knows(News::Time)
            },
            decides: D::StopLeading(Loss::DeadlineExceeded),
        },
        Row {
            name: "the deadline passed while releasing: nothing left to stop",
            knows: Knows {
                now: secs(120),
                releasing: true,
                ..knows(News::Time)
            },
            decides: D::Idle,
        },
        Row {
            name: "the deadline passed when a renew's success comes: stop, it does not revive the term",
            knows: Knows {
                now: secs(111),
                ..knows(renew(109, A::NewVersion))
            },
            decides: D::StopLeading(Loss::DeadlineExceeded),
        },
        Row {
            name: "the deadline passed when the attempt is due: stop, no renew",
            knows: Knows {
                now: secs(110),
                ..knows(News::AttemptDue)
            },
            decides: D::StopLeading(Loss::DeadlineExceeded),
        },
        // ---- the next call is due ----
        Row {
            name: "attempt due with nothing in the way: renew",
            knows: knows(News::AttemptDue),
            decides: D::Renew,
        },
        Row {
            name: "attempt due with a call in flight: its answer decides",
            knows: Knows {
                in_flight: true,
                ..knows(News::AttemptDue)
            },
            decides: D::Idle,
        },
        Row {
            name: "attempt due while a failed write's hold runs: wait it out",
            knows: Knows {
                hold_until: secs(102),
                ..knows(News::AttemptDue)
            },
            decides: D::Hold { until: secs(102) },
        },
        Row {
            name: "attempt due while a hold runs past the deadline: wait (the deadline ends leadership meanwhile)",
            knows: Knows {
                hold_until: secs(115),
                ..knows(News::AttemptDue)
            },
            decides: D::Hold { until: secs(115) },
        },
        Row {
            name: "attempt due with the hold over: renew",
            knows: Knows {
                hold_until: secs(100),
                ..knows(News::AttemptDue)
            },
            decides: D::Renew,
        },
        Row {
            name: "attempt due with a hold a read showed moved on: renew at once",
            knows: Knows {
                hold_until: secs(102),
                hold_moved_on: true,
                ..knows(News::AttemptDue)
            },
            decides: D::Renew,
        },
        Row {
            name: "attempt due after the holder stopped leading: release",
            knows: Knows {
                releasing: true,
                ..knows(News::AttemptDue)
            },
            decides: D::Release,
        },
        Row {
            name: "attempt due releasing while a hold runs: the hold first",
            knows: Knows {
                releasing: true,
                hold_until: secs(102),
                ..knows(News::AttemptDue)
            },
            decides: D::Hold { until: secs(102) },
        },
        Row {
            name: "attempt due with no record cached: nothing to renew on",
            knows: Knows {
                lock_seen: false,
                ..knows(News::AttemptDue)
            },
            decides: D::Idle,
        },
        // ---- a renew's answer ----
        Row {
            name: "renew made a new version: counts from its send time, next one a renew interval after",
            knows: knows(renew(99, A::NewVersion)),
            decides: D::Renewed {
                sent: secs(99),
                next: secs(103),
            },
        },
        Row {
            name: "renew counted, answered later than the next renew was due: the next one now",
            knows: knows(renew(95, A::NewVersion)),
            decides: D::Renewed {
                sent: secs(95),
                next: secs(100),
            },
        },
        Row {
            name: "renew counted while the work stopped meanwhile: release now",
            knows: Knows {
                releasing: true,
                ..knows(renew(99, A::NewVersion))
            },
            decides: D::Renewed {
                sent: secs(99),
                next: secs(100),
            },
        },
        Row {
            name: "renew without a new version: not counted, again a retry period after it",
            knows: knows(renew(99, A::SameVersion)),
            decides: D::NotCounted { next: secs(101) },
        },
        Row {
            name: "renew lost its compare-and-swap: read (slow path, after a conflict)",
            knows: knows(renew(99, A::Conflict)),
            decides: D::Confirm {
                after_conflict: true,
                slow_path: true,
            },
        },
        Row {
            name: "renew of unknown outcome: read before acting (slow path), not extended",
            knows: knows(renew(99, A::Unknown)),
            decides: D::Confirm {
                after_conflict: false,
                slow_path: true,
            },
        },
        Row {
            name: "renew found the lock gone: stop leading",
            knows: knows(renew(99, A::NotFound)),
            decides: D::StopLeading(Loss::LockDeleted),
        },
        Row {
            name: "renew failed: wait out its hold",
            knows: Knows {
                hold_until: secs(102),
                ..knows(renew(99, A::Failed))
            },
            decides: D::Hold { until: secs(102) },
        },
        Row {
            name: "renew failed with a hold past the deadline: retry no later than the deadline",
            knows: Knows {
                hold_until: secs(130),
                ..knows(renew(99, A::Failed))
            },
            decides: D::Hold { until: secs(110) },
        },
        // ---- a read's answer ----
        Row {
            name: "read shows the version held: go on, next attempt now",
            knows: knows(News::Read(R::VersionHeld)),
            decides: D::Keep,
        },
        Row {
            name: "read after a conflict shows another holder: lost the conflict",
            knows: knows(News::Read(R::OtherHolder {
                after_conflict: true,
            })),
            decides: D::StopLeading(Loss::OtherHolder {
                after_conflict: true,
            }),
        },
        Row {
            name: "read shows another holder: stop leading",
            knows: knows(News::Read(R::OtherHolder {
                after_conflict: false,
            })),
            decides: D::StopLeading(Loss::OtherHolder {
                after_conflict: false,
            }),
        },
        Row {
            name: "read shows an older write of ours (a stale read): read again",
            knows: knows(News::Read(R::OlderOwnWrite)),
            decides: D::Confirm {
                after_conflict: false,
                slow_path: false,
            },
        },
        Row {
            name: "read shows a third party's edit of our record: adopt it, renew on it",
            knows: knows(News::Read(R::ForeignEdit)),
            decides: D::Adopt,
        },
        Row {
            name: "read shows the coordinator's new assignment: this term is over",
            knows: knows(News::Read(R::Assignment)),
            decides: D::StopLeading(Loss::Reassigned),
        },
        Row {
            name: "read shows a write of unknown outcome landed: counts from its send time",
            knows: knows(News::Read(R::UnknownWriteLanded { sent: secs(98) })),
            decides: D::Landed {
                sent: secs(98),
                next: secs(102),
            },
        },
        Row {
            name: "read shows a twin's write: identity collision",
            knows: knows(News::Read(R::Twin)),
            decides: D::StopLeading(Loss::IdentityCollision),
        },
        Row {
            name: "read failed: the next renew probes, within a retry period at most",
            knows: knows(News::Read(R::Failed {
                backoff: Duration::from_secs(30),
            })),
            decides: D::Hold { until: secs(102) },
        },
        // ---- a watch event ----
        Row {
            name: "watch shows a newer version naming another: stop leading, no read first",
            knows: knows(News::Watch(W::NewerForeignRecord)),
            decides: D::StopLeading(Loss::OtherHolder {
                after_conflict: false,
            }),
        },
        Row {
            name: "watch shows our own write's echo: nothing new",
            knows: knows(News::Watch(W::OwnWrite)),
            decides: D::Idle,
        },
        Row {
            name: "watch shows a version we did not write: read before deciding",
            knows: knows(News::Watch(W::Unconfirmed {
                echo_possible: false,
            })),
            decides: D::Confirm {
                after_conflict: false,
                slow_path: false,
            },
        },
        Row {
            name: "watch shows a version that may be the echo of our write in flight: judged after its answer",
            knows: Knows {
                in_flight: true,
                ..knows(News::Watch(W::Unconfirmed {
                    echo_possible: true,
                }))
            },
            decides: D::Defer,
        },
        Row {
            name: "watch finds no lock, with no version to place it: read before deciding",
            knows: knows(News::Watch(W::AbsentUnplaced)),
            decides: D::Confirm {
                after_conflict: false,
                slow_path: false,
            },
        },
    ]
}

/// The arm a decision comes from (an exhaustive match: a new arm must be
/// named here, and then reached by the table).
fn arm(d: &Decision) -> &'static str {
    match d {
        Decision::StopLeading(Loss::DeadlineExceeded) => "stop: deadline",
        Decision::StopLeading(Loss::LockDeleted) => "stop: deleted",
        Decision::StopLeading(Loss::OtherHolder { .. }) => "stop: other holder",
        Decision::StopLeading(Loss::Reassigned) => "stop: reassigned",
        Decision::StopLeading(Loss::IdentityCollision) => "stop: twin",
        Decision::Idle => "idle",
        Decision::Renew => "renew",
        Decision::Release => "release",
        Decision::Hold { .. } => "hold",
        Decision::Confirm { .. } => "confirm",
        Decision::Renewed { .. } => "renewed",
        Decision::NotCounted { .. } => "not counted",
        Decision::Landed { .. } => "landed",
        Decision::Keep => "keep",
        Decision::Adopt => "adopt",
        Decision::Defer => "defer",
    }
}

/// The news a row decides on (exhaustive, as [`arm`]).
fn news(n: &News) -> &'static str {
    match n {
        News::Time => "time",
        News::AttemptDue => "attempt due",
        News::Renew { answer, .. } => match answer {
            RenewAnswer::NewVersion => "renew: new version",
            RenewAnswer::SameVersion => "renew: same version",
            RenewAnswer::Conflict => "renew: conflict",
            RenewAnswer::NotFound => "renew: not found",
            RenewAnswer::Unknown => "renew: unknown",
            RenewAnswer::Failed => "renew: failed",
        },
        News::Read(showed) => match showed {
            ReadShowed::VersionHeld => "read: version held",
            ReadShowed::OtherHolder { .. } => "read: other holder",
            ReadShowed::OlderOwnWrite => "read: older own write",
            ReadShowed::ForeignEdit => "read: foreign edit",
            ReadShowed::Assignment => "read: assignment",
            ReadShowed::UnknownWriteLanded { .. } => "read: unknown write landed",
            ReadShowed::Twin => "read: twin",
            ReadShowed::Failed { .. } => "read: failed",
        },
        News::Watch(showed) => match showed {
            WatchShowed::NewerForeignRecord => "watch: newer foreign record",
            WatchShowed::OwnWrite => "watch: own write",
            WatchShowed::Unconfirmed {
                echo_possible: false,
            } => "watch: unconfirmed",
            WatchShowed::Unconfirmed {
                echo_possible: true,
            } => "watch: unconfirmed, maybe an echo",
            WatchShowed::AbsentUnplaced => "watch: absent, unplaced",
        },
    }
}

#[test]
fn every_branch_of_the_holders_decision() {
    for row in table() {
        assert_eq!(decide(&row.knows), row.decides, "{}", row.name);
    }
}

#[test]
fn the_table_reaches_every_decision_and_every_news() {
    let rows = table();
    let arms: BTreeSet<_> = rows.iter().map(|r| arm(&r.decides)).collect();
    assert_eq!(arms.len(), 16, "decisions reached: {arms:?}");
    let seen: BTreeSet<_> = rows.iter().map(|r| news(&r.knows.news)).collect();
    assert_eq!(seen.len(), 21, "news decided on: {seen:?}");
}
