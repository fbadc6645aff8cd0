//! Scenarios for acquisition (DESIGN §4 "Acquire", "Tolerant reading", "Absurd
//! values") and the FAULTS rows about record contents (R1–R10) and lost races
//! (A2, A3, N2, N6).
//!
//! Timings are the fast profile unless a story says otherwise: 2 s lease, 1.5 s
//! renew deadline, 250 ms retry period, 500 ms request timeout, jitter 1.2.

mod support;
use support::*;

/// The create of an absent lock with the strict lock delay (the default): the
/// record has transitions 0, and the node holds the lock, renewing, but leads
/// only one lease duration after it found the lock absent, since a leader of a
/// deleted lock may still believe (docs/design.md §4 "Absent lock while another
/// may believe").
#[test]
fn absent_lock_is_created_with_zero_transitions_and_leads_after_one_lease() {
    let cfg = fast("a");
    let mut n = Node::new(cfg.clone());
    // The first thing a candidate does is read the lock; the read has a timeout.
    let op = n.get();
    assert_eq!(op, ReadId(0));
    assert_eq!(n.timeout(), Some(t(500)), "request timeout of the read");
    n.no_events();
    n.answer(op, Err(LockError::NotFound));
    assert_eq!(
        n.action(),
        Action::Create {
            op: WriteId(1),
            record: acquiring(&cfg, 0)
        }
    );
    n.answer(WriteId(1), Ok(obs("1", stamped(acquiring(&cfg, 0), 1))));
    assert_eq!(
        n.events(),
        vec![Event::LeaderChanged {
            leader: Some("a".into())
        }]
    );
    assert!(!n.elector.is_leader(n.now));
    assert_eq!(n.elector.role(), Role::Acquiring);
    assert_eq!(n.elector.term(), None);
    assert_eq!(n.elector.deadline(), Some(t(1_500)));
    assert_eq!(n.elector.stats().acquisitions, 1);
    // It renews every retry period meanwhile, and starts at 2 s exactly.
    let mut version = 1;
    while n.now < t(1_750) {
        version += 1;
        n.renew_ok(&version.to_string());
        assert!(!n.elector.is_leader(n.now));
    }
    n.advance_to(t(2_000));
    let started: Vec<_> = n
        .events()
        .into_iter()
        .filter(|e| matches!(e, Event::StartedLeading { .. }))
        .collect();
    assert_eq!(started, vec![Event::StartedLeading { term: term(0, "1") }]);
    assert!(n.elector.is_leader(n.now));
    assert_eq!(n.elector.role(), Role::Leader);
}

/// The create of an absent lock, with client-go's `LockDelay::Immediate`: its
/// record has transitions 0, and the node leads on the answer.
#[test]
fn absent_lock_is_created_with_zero_transitions() {
    let mut cfg = fast("a");
    cfg.lock_delay = LockDelay::Immediate;
    let mut n = Node::new(cfg.clone());
    let op = n.get();
    n.answer(op, Err(LockError::NotFound));
    let (op, record) = n.create();
    assert_eq!(record, acquiring(&cfg, 0));
    n.answer(op, Ok(obs("1", stamped(record, 1))));
    assert!(
        n.events()
            .contains(&Event::StartedLeading { term: term(0, "1") })
    );
    assert_eq!(n.elector.deadline(), Some(t(1_500)));
}

/// R2 (and R7): a released record (empty holder, duration 1 s or none, as a
/// record with every field missing) is acquirable at once. An emptied holder of
/// another shape waits a lease (`human_edits.rs`).
#[test]
fn r2_a_released_record_is_acquired_at_once() {
    let cfg = fast("a");
    for (what, record) in [
        ("released by its holder", held("", 1, 3)),
        (
            "fields missing ({})",
            LockRecord {
                transitions: 3,
                ..LockRecord::default()
            },
        ),
    ] {
        let mut n = Node::new(cfg.clone());
        let op = n.get();
        n.answer(op, Ok(obs("5", record.clone())));
        assert_eq!(
            n.events(),
            vec![],
            "{what}: nobody leads, nothing to report"
        );
        let (op, expected, write) = n.update();
        assert_eq!(expected, Version::new("5"), "{what}");
        let mut want = acquiring(&cfg, 4);
        want.strategy = record.strategy.clone();
        assert_eq!(
            write, want,
            "{what}: transitions + 1, both times stamped now"
        );
        assert_eq!(n.now, t(0), "{what}: at once");
        n.answer(op, Ok(obs("6", stamped(write, 1))));
        assert_eq!(
            n.events(),
            vec![
                Event::LeaderChanged {
                    leader: Some("a".into())
                },
                Event::StartedLeading { term: term(4, "6") },
            ],
            "{what}"
        );
    }
}

/// A lease held by another expires at the local instant its version was first seen
/// plus the record's own duration, or this node's own if that is longer (R13):
/// not before; the takeover re-reads first.
#[test]
fn held_lease_expires_by_local_observation_with_the_records_duration() {
    let cfg = fast("a");
    for secs in [1u64, 2, 5, 30] {
        let seen_at = t(300);
        let mut n = Node::new(cfg.clone());
        let op = n.get();
        n.set_clock(seen_at);
        let rec = held("b", secs as i64, 3);
        n.answer(op, Ok(obs("7", rec.clone())));
        assert_eq!(
            n.events(),
            vec![Event::LeaderChanged {
                leader: Some("b".into())
            }]
        );
        let (at, write) = n.campaign(|_| Ok(obs("7", rec.clone())), 1_000);
        let expiry = seen_at + std::time::Duration::from_secs(secs).max(cfg.lease_duration);
        assert!(
            at >= expiry,
            "{secs} s lease taken at {at:?}, before {expiry:?}"
        );
        assert!(
            at < expiry + cfg.max_retry_interval(),
            "{secs} s lease taken at {at:?}, long after {expiry:?}"
        );
        let Action::Update {
            expected, record, ..
        } = write
        else {
            panic!("a takeover is a compare-and-swap, got {write:?}");
        };
        assert_eq!(expected, Version::new("7"));
        assert_eq!(record, acquiring(&cfg, 4));
    }
}

/// R9 (also N3): remote timestamps, far in the future or the past, or missing,
/// change nothing: the takeover happens at the same local instant.
#[test]
fn r9_remote_timestamps_have_no_effect_on_decisions() {
    let cfg = fast("a");
    let takeover = |stamp: Stamp| {
        let mut rec = held("b", 2, 1);
        rec.renew_time = stamp;
        rec.acquire_time = stamp;
        let mut n = Node::new(cfg.clone());
        let op = n.get();
        n.answer(op, Ok(obs("7", rec.clone())));
        n.campaign(|_| Ok(obs("7", rec.clone())), 1_000).0
    };
    let reference = takeover(Stamp::At(WallTime::new(1_700_000_000, 0)));
    for stamp in [
        Stamp::At(WallTime::new(i64::MAX, 999_999_999)),
        Stamp::At(WallTime::new(4_000_000_000, 0)),
        Stamp::At(WallTime::new(i64::MIN, 0)),
        Stamp::At(WallTime::new(0, 0)),
        Stamp::Unset,
    ] {
        assert_eq!(takeover(stamp), reference, "{stamp:?}");
    }
    assert_eq!(reference, t(2_000));
}

/// R10: the holder rewrites identical bytes (a frozen wall clock); the new version
/// alone resets the observation timer.
#[test]
fn r10_new_version_with_identical_bytes_resets_the_timer() {
    let mut n = Node::new(fast("a"));
    let rec = held("b", 2, 1);
    let op = n.get();
    n.answer(op, Ok(obs("7", rec.clone())));
    // The holder renews at 1.5 s, with a stuck clock: same record, new version.
    let (at, _) = n.campaign(
        |now| {
            let v = if now < t(1_500) { "7" } else { "8" };
            Ok(obs(v, rec.clone()))
        },
        1_000,
    );
    // The version 8 was first seen at the first read at or after 1.5 s; the
    // takeover is a full lease later.
    assert!(at >= t(3_500), "taken at {at:?}, before 1.5 s + 2 s");
}

/// The same through the watch: a pushed version resets the timer.
#[test]
fn r10_watched_new_version_resets_the_timer() {
    let mut n = Node::new(fast("a"));
    let rec = held("b", 2, 1);
    let op = n.get();
    n.answer(op, Ok(obs("7", rec.clone())));
    n.watch_active(true);
    n.advance_to(t(1_500));
    n.watch(WatchEvent::Changed(obs("8", rec.clone())));
    let (at, _) = n.campaign(|_| Ok(obs("8", rec.clone())), 1_000);
    assert_eq!(at, t(3_500), "expiry of version 8, seen at 1.5 s");
}

/// R1: a human changes the holder: the leader stops at once; it then waits a lease
/// from seeing it, and the next acquisition increases the transitions.
#[test]
fn r1_holder_changed_by_a_human_stops_the_leader_at_once() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg.clone(), "1");
    n.watch_active(true);
    n.advance_to(t(100));
    let human = held("someone-else", 2, 0);
    // A newer version that does not name the leader cannot be its own write:
    // it stops at the event, with no read first.
    n.watch(WatchEvent::Changed(obs("9", human.clone())));
    assert_eq!(
        n.events(),
        vec![
            Event::StoppedLeading {
                term: term(0, "1"),
                reason: StopReason::ObservedOtherHolder {
                    holder: "someone-else".into()
                }
            },
            Event::LeaderChanged {
                leader: Some("someone-else".into())
            },
        ]
    );
    assert!(!n.elector.is_leader(n.now));
    assert_eq!(n.elector.role(), Role::Follower);
    let (at, write) = n.campaign(|_| Ok(obs("9", human.clone())), 1_000);
    assert!(
        at >= t(2_100),
        "waited a lease from seeing the edit: {at:?}"
    );
    let Action::Update { record, .. } = write else {
        panic!("expected a takeover, got {write:?}");
    };
    assert_eq!(
        record.transitions, 1,
        "transitions increase on the next acquisition"
    );
}

/// R3 (and R7): a held record without a usable duration is timed with the
/// configured one, and reported.
#[test]
fn r3_missing_zero_or_negative_duration_uses_the_configured_one() {
    let cfg = fast("a");
    for secs in [None, Some(0), Some(-5), Some(i64::MIN)] {
        let mut rec = held("b", 0, 1);
        rec.lease_duration_secs = secs;
        let mut n = Node::new(cfg.clone());
        let op = n.get();
        n.answer(op, Ok(obs("7", rec.clone())));
        assert_eq!(
            n.events(),
            vec![
                Event::Warning(Warning::LeaseDurationMissing(secs)),
                Event::LeaderChanged {
                    leader: Some("b".into())
                },
            ],
            "{secs:?}"
        );
        let (at, _) = n.campaign(|_| Ok(obs("7", rec.clone())), 1_000);
        assert_eq!(at, t(2_000), "{secs:?}: the configured 2 s applies");
    }
}

/// R4: a huge duration is capped at the configured maximum and reported; no
/// overflow anywhere.
#[test]
fn r4_huge_duration_is_capped_and_reported() {
    let mut cfg = fast("a");
    cfg.max_lease_duration = ms(10_000);
    for secs in [i64::from(i32::MAX), 10_000_000_000, i64::MAX] {
        let rec = held("b", secs, 1);
        let mut n = Node::new(cfg.clone());
        let op = n.get();
        n.answer(op, Ok(obs("7", rec.clone())));
        assert_eq!(
            n.events(),
            vec![
                Event::Warning(Warning::LeaseDurationCapped {
                    secs,
                    cap: ms(10_000)
                }),
                Event::LeaderChanged {
                    leader: Some("b".into())
                },
            ],
            "{secs}"
        );
        let (at, _) = n.campaign(|_| Ok(obs("7", rec.clone())), 10_000);
        assert_eq!(at, t(10_000), "{secs}: capped to 10 s");
    }
}

/// R5: transitions at the API's maximum saturate; the fencing term still grows
/// (by version).
#[test]
fn r5_transitions_saturate_and_the_term_still_grows() {
    let cfg = fast("a");
    let mut n = Node::new(cfg.clone());
    let op = n.get();
    n.answer(op, Ok(obs("900", held("", 1, MAX_TRANSITIONS))));
    let (op, expected, record) = n.update();
    assert_eq!(expected, Version::new("900"));
    assert_eq!(
        record.transitions, MAX_TRANSITIONS,
        "saturates, never wraps"
    );
    n.answer(op, Ok(obs("901", stamped(record, 1))));
    let started = n
        .events()
        .into_iter()
        .find_map(|e| match e {
            Event::StartedLeading { term } => Some(term),
            _ => None,
        })
        .expect("started leading");
    assert_eq!(started, term(MAX_TRANSITIONS, "901"));
    assert!(started > term(MAX_TRANSITIONS, "900"));
    assert!(started > term(MAX_TRANSITIONS - 1, "99999"));
    // Renewing a saturated record keeps it saturated.
    let (_, _, renew) = match n.fire_until_action(4) {
        Action::Update {
            op,
            expected,
            record,
        } => (op, expected, record),
        other => panic!("expected a renew, got {other:?}"),
    };
    assert_eq!(renew.transitions, MAX_TRANSITIONS);
}

/// A2: a compare-and-swap acquisition loses the race: not leader, the winner's
/// version becomes the observation, no tight loop.
#[test]
fn a2_conflict_on_acquisition_reads_the_winner_and_waits() {
    let mut n = Node::new(fast("a"));
    let op = n.get();
    n.answer(op, Ok(obs("5", held("", 1, 2))));
    let (op, _, _) = n.update();
    n.set_clock(t(10));
    n.answer(op, Err(LockError::Conflict));
    assert!(!n.elector.is_leader(n.now));
    n.no_events();
    let op = n.get();
    n.set_clock(t(20));
    let winner = held("c", 2, 3);
    n.answer(op, Ok(obs("6", winner.clone())));
    assert_eq!(
        n.events(),
        vec![Event::LeaderChanged {
            leader: Some("c".into())
        }]
    );
    assert_eq!(
        n.elector.observed().map(|o| o.version.clone()),
        Some(Version::new("6"))
    );
    let mut reads = 0;
    let (at, _) = n.campaign(
        |_| {
            reads += 1;
            Ok(obs("6", winner.clone()))
        },
        1_000,
    );
    assert!(
        at >= t(2_020),
        "waited a lease from the winner's version: {at:?}"
    );
    assert!(reads <= 12, "no tight loop: {reads} reads in 2 s");
}

/// A3: both saw 404 and created; this one lost: read the winner, wait a full lease.
#[test]
fn a3_already_exists_on_create_reads_the_winner_and_waits_a_lease() {
    let mut n = Node::new(fast("a"));
    let op = n.get();
    n.answer(op, Err(LockError::NotFound));
    let (op, _) = n.create();
    n.set_clock(t(40));
    n.answer(op, Err(LockError::AlreadyExists));
    n.no_events();
    let op = n.get();
    let winner = held("c", 2, 0);
    n.answer(op, Ok(obs("3", winner.clone())));
    assert!(!n.elector.is_leader(n.now));
    let (at, write) = n.campaign(|_| Ok(obs("3", winner.clone())), 1_000);
    assert!(at >= t(2_040), "a full lease from the observation: {at:?}");
    assert!(matches!(write, Action::Update { ref expected, .. } if *expected == Version::new("3")));
}

/// N2: restarted with the same identity while the record still names it: it leads
/// only after a successful compare-and-swap.
#[test]
fn n2_restart_with_same_identity_leads_only_after_a_cas() {
    let cfg = fast("a");
    let mut n = Node::new(cfg.clone());
    let op = n.get();
    let previous_life = held("a", 2, 4);
    n.answer(op, Ok(obs("7", previous_life.clone())));
    assert!(!n.elector.is_leader(n.now));
    assert_eq!(n.elector.role(), Role::Follower);
    let (_, write) = n.campaign(|_| Ok(obs("7", previous_life.clone())), 1_000);
    let Action::Update {
        op,
        expected,
        record,
    } = write
    else {
        panic!("expected a compare-and-swap, got {write:?}");
    };
    assert_eq!(expected, Version::new("7"));
    assert_eq!(record.transitions, 5, "a new term");
    assert!(
        n.started().is_none(),
        "not leading before the write succeeded"
    );
    n.answer(op, Ok(obs("8", stamped(record, 3))));
    assert!(n.elector.is_leader(n.now));
    assert_eq!(n.elector.term(), Some(&term(5, "8")));
}

/// N6: a follower paused past the expiry re-reads before any takeover.
#[test]
fn n6_paused_follower_rereads_before_taking_over() {
    let mut n = Node::new(fast("a"));
    let op = n.get();
    n.answer(op, Ok(obs("7", held("b", 2, 1))));
    n.events();
    // Paused for 10 s: the first thing after waking is a read, not a write.
    n.advance_to(t(10_000));
    let op = n.get();
    // The holder renewed meanwhile: the new version restarts the clock.
    n.answer(op, Ok(obs("12", held("b", 2, 1))));
    let (at, _) = n.campaign(|_| Ok(obs("12", held("b", 2, 1))), 1_000);
    assert!(at >= t(12_000), "{at:?}");
}

/// A follower with an active watch does not poll: it sleeps until the lease seen
/// expires, re-reads, and takes over.
#[test]
fn watching_follower_waits_for_expiry_without_polling() {
    let mut n = Node::new(fast("a"));
    let op = n.get();
    n.answer(op, Ok(obs("7", held("b", 2, 1))));
    n.watch_active(true);
    n.no_action();
    assert_eq!(n.timeout(), Some(t(2_000)), "wakes at the expiry only");
    n.advance_to(t(2_000));
    let op = n.get();
    n.answer(op, Ok(obs("7", held("b", 2, 1))));
    let (_, expected, _) = n.update();
    assert_eq!(expected, Version::new("7"));
    // A watch that breaks brings polling back at once (it may have missed a
    // change): a read now, then one every jittered retry period.
    let cfg = fast("a");
    let mut m = Node::new(cfg.clone());
    let op = m.get();
    m.answer(op, Ok(obs("7", held("b", 2, 1))));
    m.watch_active(true);
    m.advance_to(t(600));
    m.no_action();
    m.watch_active(false);
    let op = m.get();
    m.answer(op, Ok(obs("7", held("b", 2, 1))));
    let next = m.timeout().expect("a poll is planned");
    assert!(
        next >= t(600) + cfg.retry_period && next < t(600) + cfg.max_retry_interval(),
        "{next:?}"
    );
}

/// A follower without a watch polls every `retry_period × [1, 1 + jitter)`: it sees
/// a release within one polling interval (DESIGN §1 liveness, client-go polls).
#[test]
fn polling_follower_sees_a_release_within_one_poll() {
    let cfg = fast("a");
    let mut n = Node::new(cfg.clone());
    let op = n.get();
    n.answer(op, Ok(obs("7", held("b", 30, 1))));
    // "b" releases at 300 ms.
    let (at, write) = n.campaign(
        |now| {
            if now < t(300) {
                Ok(obs("7", held("b", 30, 1)))
            } else {
                Ok(obs("8", held("", 1, 1)))
            }
        },
        1_000,
    );
    assert!(matches!(write, Action::Update { .. }));
    assert!(
        at < t(300) + cfg.max_retry_interval(),
        "took the released lock at {at:?}"
    );
}

/// R6: a record the backend could not decode is handed over as held by an unknown
/// holder, without a duration: timed like any version (configured duration,
/// reported) and taken over by compare-and-swap after a lease.
#[test]
fn r6_undecodable_record_is_timed_like_any_version() {
    let cfg = fast("a");
    let mut rec = LockRecord {
        holder: "<unparseable>".into(),
        ..LockRecord::default()
    };
    rec.lease_duration_secs = None;
    let mut n = Node::new(cfg.clone());
    let op = n.get();
    n.answer(op, Ok(obs("7", rec.clone())));
    assert!(
        n.events()
            .contains(&Event::Warning(Warning::LeaseDurationMissing(None)))
    );
    let (at, write) = n.campaign(|_| Ok(obs("7", rec.clone())), 1_000);
    assert_eq!(at, t(2_000));
    let Action::Update {
        expected, record, ..
    } = write
    else {
        panic!("{write:?}")
    };
    assert_eq!(expected, Version::new("7"));
    assert_eq!(record, acquiring(&cfg, 1));
}

/// R7: missing fields read as zero defaults: `{}` is an empty holder (acquirable at
/// once, transitions 0 + 1), and a holder without a duration is timed as R3.
#[test]
fn r7_missing_fields_read_as_defaults() {
    let cfg = fast("a");
    let mut n = Node::follower(cfg.clone(), obs("3", LockRecord::default()));
    let (_, expected, record) = n.update();
    assert_eq!(expected, Version::new("3"));
    assert_eq!(record, acquiring(&cfg, 1));
    assert_eq!(n.now, t(0));
    let only_holder = LockRecord {
        holder: "b".into(),
        ..LockRecord::default()
    };
    let mut n = Node::new(cfg);
    let op = n.get();
    n.answer(op, Ok(obs("4", only_holder.clone())));
    let (at, _) = n.campaign(|_| Ok(obs("4", only_holder.clone())), 1_000);
    assert_eq!(at, t(2_000));
}

/// R8 and N3: timestamps in other formats (unparsed, so `Unset`) or stepped wall
/// clocks (a holder whose stamps jump back and forth) are never used for expiry;
/// versions alone time the lease.
#[test]
fn r8_n3_odd_or_stepped_timestamps_are_never_used_for_expiry() {
    let cfg = fast("a");
    let stamps = [
        Stamp::Unset,
        Stamp::At(WallTime::new(1_700_000_000, 0)),
        Stamp::At(WallTime::new(1_600_000_000, 0)), // stepped back
        Stamp::At(WallTime::new(1_900_000_000, 0)), // stepped forward
    ];
    // The holder renews every 500 ms until 1.5 s, its stamps jumping around.
    let record_at = |now: Instant| {
        let k = (now.as_nanos() / 500_000_000).min(3) as usize;
        let mut r = held("b", 2, 1);
        r.renew_time = stamps[k];
        r.acquire_time = stamps[3 - k];
        obs(&format!("{}", 10 + k), r)
    };
    let mut n = Node::new(cfg);
    let op = n.get();
    n.answer(op, Ok(record_at(t(0))));
    let (at, write) = n.campaign(|now| Ok(record_at(now)), 1_000);
    let Action::Update { expected, .. } = write else {
        panic!("{write:?}")
    };
    assert_eq!(expected, Version::new("13"));
    assert!(
        at >= t(3_500),
        "a lease after the last version (≥ 1.5 s): {at:?}"
    );
    assert!(at < t(3_500) + fast("a").max_retry_interval(), "{at:?}");
}

/// Tolerant reading: Kubernetes' `strategy` is kept as read when acquiring.
#[test]
fn strategy_is_kept_when_acquiring() {
    let cfg = fast("a");
    let mut rec = held("", 1, 2);
    rec.strategy = Some("OldestEmulationVersion".into());
    let mut n = Node::follower(cfg.clone(), obs("5", rec));
    let (_, _, record) = n.update();
    let mut want = acquiring(&cfg, 3);
    want.strategy = Some("OldestEmulationVersion".into());
    assert_eq!(record, want);
}

/// W4: after an API server or load balancer switch, a read serves an older
/// version. It counts as a change (versions are never ordered), so the lease is
/// timed afresh from it; the follower takes over only after a lease from the
/// last change it saw and a read at or past that expiry, by compare-and-swap on
/// the version it timed, which the current server rejects if it moved on.
#[test]
fn w4_a_server_switch_never_shortens_the_wait() {
    let cfg = fast_nojitter("a");
    let mut n = Node::follower(cfg, obs("5", stamped(held("b", 2, 1), 1)));
    // At 1.5 s a read (after the switch) serves the older version 4.
    let mut stale_seen = false;
    let mut acquired_at = None;
    while n.now < t(6_000) {
        match n.fire_until_action(10) {
            Action::Get { op } => {
                let answer = if n.now >= t(1_500) && !stale_seen {
                    stale_seen = true;
                    obs("4", stamped(held("b", 2, 1), 0))
                } else if stale_seen {
                    obs("4", stamped(held("b", 2, 1), 0))
                } else {
                    obs("5", stamped(held("b", 2, 1), 1))
                };
                n.answer(op, Ok(answer));
            }
            Action::Update { op, expected, .. } => {
                assert_eq!(expected, Version::new("4"), "the version it timed");
                acquired_at = Some(n.now);
                // The current server has moved on: the write is rejected.
                n.answer(op, Err(LockError::Conflict));
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let at = acquired_at.expect("the follower tries once the lease it timed expired");
    assert!(stale_seen);
    // Version 4 was first seen at 1.5 s or later: no write before 3.5 s.
    assert!(
        at >= t(3_500),
        "tried at {at:?}, before a lease from the last change"
    );
    assert!(!n.elector.is_leader(n.now));
    // After the conflict it reads again instead of leading.
    assert!(matches!(n.fire_until_action(10), Action::Get { .. }));
}

/// W4's other side: a read in flight when the watch shows a newer version (here
/// the holder's release) answers with the version before it. That answer is
/// older news, not a server that went back: the follower keeps the release and
/// takes it at once, instead of timing the old holder's lease afresh (a
/// three-candidate story on the Lease lock waited a whole lease this way when
/// the holder released right after winning a takeover race). A read sent after
/// the newer version was seen and answering an older one is still a switch,
/// timed afresh (above).
#[test]
fn w4_a_read_overtaken_by_the_watch_is_older_news() {
    let mut n = Node::follower(fast("c"), obs("5", held("b", 2, 1)));
    n.watch_active(true);
    // At the expiry the follower reads before any takeover.
    let read = match n.fire_until_action(10) {
        Action::Get { op } => op,
        other => panic!("expected the read at the expiry, got {other:?}"),
    };
    let sent = n.now;
    n.advance(ms(5));
    // The holder released meanwhile; the watch says so before the read answers.
    n.watch(WatchEvent::Changed(obs("7", held("", 1, 1))));
    n.advance(ms(5));
    n.answer(read, Ok(obs("6", held("b", 2, 1))));
    let (_, expected, record) = n.fire_until_action(10).into_update();
    assert_eq!(expected.as_str(), "7", "the release, at once");
    assert_eq!(&*record.holder, "c");
    assert!(n.now < sent + ms(100), "took it at {:?}", n.now);
}

/// A8 on an acquisition: a 422 is reported, and the refused payload is not re-sent
/// as it was: after the backoff the node reads first, and writes only what the
/// fresh read shows (here a third party fixed the record: a new version).
#[test]
fn a8_invalid_acquisition_reads_before_writing_again() {
    let cfg = fast("a");
    let mut n = Node::new(cfg.clone());
    let op = n.get();
    n.answer(op, Ok(obs("5", held("", 1, 3))));
    let (op, expected, refused) = n.update();
    assert_eq!(expected, Version::new("5"));
    let error = LockError::Invalid {
        message: "metadata.annotations: Invalid value".into(),
    };
    n.answer(op, Err(error.clone()));
    assert!(n.events().contains(&Event::Warning(Warning::LockFailed {
        op: OpKind::Update,
        error
    })));
    n.no_action();
    let failed_at = n.now;
    // The next call is a read, no sooner than a retry period.
    let op = match n.fire_until_action(10) {
        Action::Get { op } => op,
        other => panic!("the refused acquisition re-sent without a read: {other:?}"),
    };
    assert!(n.now >= failed_at + cfg.retry_period, "{:?}", n.now);
    n.answer(op, Ok(obs("6", held("", 1, 3))));
    let (_, expected, write) = n.update();
    assert_eq!(expected, Version::new("6"), "on the fresh version");
    assert_eq!(write, refused, "same content, on what the read showed");
}

/// A lock that answers a write with success, but with a record that cannot be
/// the one written, is broken: a create answered with another holder, an
/// acquisition answered with the version it replaced. It is reported
/// ([`Warning::BrokenWriteAnswer`]), never led on (the next renew would have
/// written the foreign holder back), and the next call is a read.
#[test]
fn broken_lock_write_answers_are_never_led_on() {
    let mut cfg = fast("a");
    cfg.lock_delay = LockDelay::Immediate; // a true answer would lead at once
    let mut n = Node::new(cfg.clone());
    let op = n.get();
    n.answer(op, Err(LockError::NotFound));
    let (op, _) = n.create();
    n.answer(op, Ok(obs("5", held("b", 2, 0))));
    let evs = n.events();
    assert!(
        evs.contains(&Event::Warning(Warning::BrokenWriteAnswer {
            op: OpKind::Create,
            answer: BrokenAnswer::WrongHolder { holder: "b".into() },
        })),
        "{evs:?}"
    );
    assert!(
        !evs.iter()
            .any(|e| matches!(e, Event::StartedLeading { .. }))
    );
    assert_eq!(n.elector.role(), Role::Follower);
    n.get();

    // An acquisition answered with the version it replaced: the old record (no
    // holder), or our holder at that version.
    let free = obs("3", held("", 1, 0));
    let ours_unchanged = obs("3", held("a", 2, 1));
    for (answer, broken) in [
        (
            free.clone(),
            BrokenAnswer::WrongHolder { holder: "".into() },
        ),
        (ours_unchanged, BrokenAnswer::VersionUnchanged),
    ] {
        let mut n = Node::follower(cfg.clone(), free.clone());
        let (op, expected, _) = n.update();
        assert_eq!(expected, Version::new("3"));
        n.answer(op, Ok(answer));
        let evs = n.events();
        assert_eq!(
            evs,
            vec![Event::Warning(Warning::BrokenWriteAnswer {
                op: OpKind::Update,
                answer: broken,
            })],
            "reported once, and no start"
        );
        assert!(!n.elector.is_leader(n.now));
        n.get();
    }
}

/// FAULTS W2: a resumed or replayed watch delivers an event older than the
/// version already seen. It is ignored: the expiry clock keeps counting from the
/// newer version (it once restarted it: a follower that had waited 9 s of a 10 s
/// lease took over at 19 s instead of 10 s).
#[test]
fn w2_a_stale_watch_event_does_not_restart_the_expiry_clock() {
    let mut n = Node::new(fast("a"));
    let rec = held("b", 10, 1);
    let op = n.get();
    n.answer(op, Ok(obs("7", rec.clone())));
    n.watch_active(true);
    n.advance_to(t(9_000));
    n.watch(WatchEvent::Changed(obs("5", held("b", 10, 0))));
    n.no_action();
    let (at, write) = n.campaign(|_| Ok(obs("7", rec.clone())), 1_000);
    assert_eq!(at, t(10_000), "a lease after version 7 was seen");
    let (_, expected, _) = write.into_update();
    assert_eq!(expected, Version::new("7"));
}
