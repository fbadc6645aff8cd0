//! Scenarios for renewing and the leadership deadline (DESIGN §2, §4 "Renew",
//! "Give up"), and the FAULTS rows about API answers to a leader (A1, A8–A10,
//! A15, A16), identity collisions (N1) and pauses (N4, N5).
//!
//! Every leader here created the lock at time zero (term `0@1`, deadline 1.5 s) with
//! the fast profile: 2 s lease, 1.5 s renew deadline, 250 ms retry, 500 ms request
//! timeout.

mod support;
use support::*;

/// What the leader writes when it renews the record it created: the cached record
/// with only `renewTime` stamped anew.
fn renew_of_created(cfg: &Config) -> LockRecord {
    let mut r = stamped(acquiring(cfg, 0), 1);
    r.renew_time = Stamp::Now;
    r
}

#[test]
fn leader_renews_every_retry_period_from_its_cache_without_reading() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg.clone(), "1");
    let mut version = 1u64;
    for k in 1..=8u64 {
        assert_eq!(n.timeout(), Some(t(250 * k)), "renew {k} is due");
        n.fire();
        let (op, expected, record) = n.update();
        assert_eq!(n.now, t(250 * k));
        assert_eq!(
            expected,
            Version::new(version.to_string()),
            "CAS on our last write"
        );
        let mut want = renew_of_created(&cfg);
        if k > 1 {
            want.acquire_time = Stamp::At(WallTime::new(1, 0)); // kept, never re-stamped
        }
        assert_eq!(record, want, "renew {k}");
        version += 1;
        n.answer(op, Ok(obs(&version.to_string(), stamped(record, 1))));
        assert_eq!(n.elector.deadline(), Some(t(250 * k + 1_500)));
        assert_eq!(n.elector.last_renew(), Some(t(250 * k)));
        n.no_events();
    }
    assert_eq!(
        n.elector.term(),
        Some(&term(0, "1")),
        "renewing keeps the term"
    );
    assert_eq!(n.elector.stats().renews, 8);
    assert_eq!(n.elector.stats().slow_path, 0, "never read");
}

/// A leader with a renew interval longer than the retry period renews that long
/// after its last successful renew was sent; a failed renew is retried one retry
/// period later; the deadline counts from the last success's send time as always.
#[test]
fn a_longer_renew_interval_renews_less_often_and_retries_every_retry_period() {
    let cfg = fast("a").renew_interval(ms(600));
    let mut n = Node::leader(cfg, "1");
    assert_eq!(
        n.timeout(),
        Some(t(600)),
        "first renew: one interval after the create"
    );
    n.fire();
    let (op, _, record) = n.update();
    n.answer(op, Ok(obs("2", stamped(record, 1))));
    assert_eq!(n.elector.deadline(), Some(t(2_100)));
    assert_eq!(
        n.timeout(),
        Some(t(1_200)),
        "next: one interval after the send"
    );
    n.fire();
    let (op, _, _) = n.update();
    n.answer(op, Err(LockError::transient("connection refused")));
    assert_eq!(n.elector.deadline(), Some(t(2_100)), "not extended");
    assert_eq!(
        n.timeout(),
        Some(t(1_450)),
        "a failure retries one retry period later"
    );
    n.fire();
    let (op, expected, record) = n.update();
    assert_eq!(expected, Version::new("2"));
    n.answer(op, Ok(obs("3", stamped(record, 1))));
    assert_eq!(n.elector.deadline(), Some(t(2_950)));
    assert_eq!(n.timeout(), Some(t(2_050)));
    assert!(n.elector.is_leader(n.now));
    assert!(
        matches!(n.events()[..], [Event::Warning(Warning::LockFailed { .. })]),
        "only the failure is reported"
    );
    assert_eq!(n.elector.stats().renews, 2);
}

/// A1: 409 on the renew; the read shows another holder: stop leading at once
/// (client-go waits for its deadline), and write nothing.
#[test]
fn a1_conflict_on_renew_and_another_holder_stops_leading_at_once() {
    let mut n = Node::leader(fast("a"), "1");
    n.fire();
    let (op, _, _) = n.update();
    n.answer(op, Err(LockError::Conflict));
    assert!(
        n.elector.is_leader(n.now),
        "a conflict alone proves nothing"
    );
    let op = n.get();
    assert_eq!(n.elector.stats().slow_path, 1);
    n.answer(op, Ok(obs("5", held("b", 2, 1))));
    assert_eq!(
        n.events(),
        vec![
            Event::StoppedLeading {
                term: term(0, "1"),
                reason: StopReason::LostConflict { holder: "b".into() }
            },
            Event::LeaderChanged {
                leader: Some("b".into())
            },
        ]
    );
    assert_eq!(n.now, t(250), "at once, not at the 1.5 s deadline");
    assert!(!n.elector.is_leader(n.now));
    assert_eq!(n.elector.deadline(), None);
    assert_eq!(n.elector.term(), None);
    // No write follows: a follower again, waiting for b's lease.
    for _ in 0..5 {
        n.fire();
        if n.has_action() {
            let op = n.get();
            n.answer(op, Ok(obs("5", held("b", 2, 1))));
        }
    }
    assert!(n.now < t(2_250));
}

/// A1: 409 on the renew, but the fresh read still names us at the version we hold
/// (the conflict was spurious): renew again by compare-and-swap, still leading,
/// one retry period later (a failed write is never re-sent at once: a lock that
/// kept answering so would make a busy loop).
#[test]
fn a1_conflict_on_renew_but_still_ours_renews_by_cas() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg.clone(), "1");
    n.fire();
    let (op, _, _) = n.update();
    n.answer(op, Err(LockError::Conflict));
    let op = n.get();
    n.answer(op, Ok(obs("1", stamped(acquiring(&cfg, 0), 1))));
    n.no_events();
    n.no_action();
    let (op, expected, _) = n.fire_until_action(4).into_update();
    assert_eq!(expected, Version::new("1"));
    assert_eq!(n.now, t(500), "one retry period after the conflict");
    n.answer(op, Ok(obs("2", stamped(renew_of_created(&cfg), 1))));
    assert!(n.elector.is_leader(n.now));
    assert_eq!(n.elector.deadline(), Some(t(2_000)));
}

/// A15: every call takes longer than the request timeout: the leader stops exactly
/// at its deadline (send time of the last success + renew deadline), and a late
/// success never revives the term.
#[test]
fn a15_latency_beyond_the_deadline_steps_down_at_the_deadline() {
    let mut n = Node::leader(fast("a"), "1");
    let mut unanswered = Vec::new();
    while n.now < t(1_500) {
        let before = n.timeout().expect("a timer");
        let probe = before.min(t(1_500)) - std::time::Duration::from_nanos(1);
        assert!(
            n.elector.is_leader(probe),
            "still leading just before {before:?}"
        );
        n.fire();
        if n.has_action() {
            unanswered.push(n.action());
        }
    }
    assert_eq!(n.now, t(1_500), "the deadline is a timer of its own");
    assert!(!n.elector.is_leader(t(1_500)));
    let stops: Vec<_> = n
        .log
        .iter()
        .filter(|(_, e)| matches!(e, Event::StoppedLeading { .. }))
        .collect();
    assert_eq!(
        stops,
        vec![&(
            t(1_500),
            Event::StoppedLeading {
                term: term(0, "1"),
                reason: StopReason::DeadlineExceeded
            }
        )]
    );
    // The first renew (sent at 250 ms) finally succeeds: ignored, its call timed out.
    let first = unanswered
        .iter()
        .find(|a| matches!(a, Action::Update { .. }))
        .expect("a renew was sent");
    n.advance_to(t(1_600));
    n.events();
    n.answer(first.op(), Ok(obs("2", held("a", 2, 0))));
    assert!(!n.elector.is_leader(n.now));
    assert!(n.started().is_none());
    assert!(
        !n.events()
            .iter()
            .any(|e| matches!(e, Event::StartedLeading { .. }))
    );
}

/// A15 as the deadline timer sees it: `is_leader` turns false at the deadline by
/// itself, even when the host never calls the elector again.
#[test]
fn a15_is_leader_turns_false_by_itself_at_the_deadline() {
    let n = Node::leader(fast("a"), "1");
    assert!(n.elector.is_leader(t(1_499)));
    assert!(n.elector.is_leader(Instant::from_nanos(1_499_999_999)));
    assert!(!n.elector.is_leader(t(1_500)));
    assert!(!n.elector.is_leader(Instant::MAX));
}

/// A16: the answer to a renew comes late (held after commit): the deadline counts
/// from when the renew was sent, never from the answer.
#[test]
fn a16_deadline_is_anchored_at_send_time() {
    let mut n = Node::leader(fast("a"), "1");
    n.fire();
    let (op, _, record) = n.update();
    assert_eq!(n.now, t(250));
    n.set_clock(t(700));
    n.answer(op, Ok(obs("2", stamped(record, 1))));
    assert_eq!(
        n.elector.deadline(),
        Some(t(1_750)),
        "250 ms + 1.5 s, not 700 ms + 1.5 s"
    );
    assert_eq!(n.elector.last_renew(), Some(t(250)));
    // The next renew was due at 500 ms: it goes at once, with the answer.
    let (_, expected, _) = n.update();
    assert_eq!(expected, Version::new("2"));
    assert_eq!(n.timeout(), Some(t(1_200)), "its request timer");
}

/// A10: 500/504 after the write may have committed: leadership is not extended;
/// the leader reads, and if its write landed, counts it from its send time.
#[test]
fn a10_unknown_outcome_reads_before_acting() {
    let cfg = fast("a");
    for landed in [true, false] {
        let mut n = Node::leader(cfg.clone(), "1");
        n.fire();
        let (op, _, record) = n.update();
        n.set_clock(t(300));
        n.answer(op, Err(LockError::unknown("504 gateway timeout")));
        assert_eq!(
            n.events(),
            vec![Event::Warning(Warning::LockFailed {
                op: OpKind::Update,
                error: LockError::unknown("504 gateway timeout")
            })]
        );
        assert_eq!(n.elector.deadline(), Some(t(1_500)), "not extended");
        let op = n.get();
        let current = if landed {
            obs("2", stamped(record, 2))
        } else {
            obs("1", stamped(acquiring(&cfg, 0), 1))
        };
        n.set_clock(t(350));
        n.answer(op, Ok(current));
        n.no_events();
        assert!(n.elector.is_leader(n.now), "landed={landed}");
        if landed {
            assert_eq!(
                n.elector.deadline(),
                Some(t(1_750)),
                "from the send time, 250 ms"
            );
            assert_eq!(n.timeout(), Some(t(500)));
            let (_, expected, _) = n.fire_until_action(4).into_update();
            assert_eq!(expected, Version::new("2"));
        } else {
            assert_eq!(n.elector.deadline(), Some(t(1_500)));
            n.no_action();
            let (_, expected, _) = n.fire_until_action(4).into_update();
            assert_eq!(n.now, t(550), "a retry period after the failed write");
            assert_eq!(expected, Version::new("1"), "renews on the old version");
        }
    }
}

/// A10 through the request timer: a call not answered within the request timeout
/// is an unknown outcome; its late answer is ignored.
#[test]
fn a10_request_timeout_is_an_unknown_outcome() {
    let mut n = Node::leader(fast("a"), "1");
    n.fire();
    let (renew_op, _, record) = n.update();
    assert_eq!(n.timeout(), Some(t(750)), "the request timer");
    n.fire();
    assert_eq!(
        n.events(),
        vec![Event::Warning(Warning::RequestTimedOut {
            op: OpKind::Update,
            timeout: ms(500)
        })]
    );
    let read = n.get();
    assert_eq!(n.elector.deadline(), Some(t(1_500)));
    // The late answer to the renew is dropped: nothing changes.
    n.answer(renew_op, Ok(obs("2", stamped(record.clone(), 2))));
    n.no_events();
    n.no_action();
    assert_eq!(n.elector.deadline(), Some(t(1_500)));
    // The read shows the write landed: it counts from 250 ms.
    n.answer(read, Ok(obs("2", stamped(record, 2))));
    assert_eq!(n.elector.deadline(), Some(t(1_750)));
}

/// A9: 429 with Retry-After: the next attempt waits for it, but never beyond the
/// deadline, and the failure never extends leadership.
#[test]
fn a9_retry_after_is_honoured_within_the_deadline() {
    for (after, next) in [(100, 350), (400, 650), (10_000, 1_500)] {
        let mut n = Node::leader(fast("a"), "1");
        n.fire();
        let (op, _, _) = n.update();
        n.answer(
            op,
            Err(LockError::Transient {
                message: "429 too many requests".into(),
                retry_after: Some(ms(after)),
            }),
        );
        assert_eq!(n.elector.deadline(), Some(t(1_500)), "not extended");
        assert_eq!(n.timeout(), Some(t(next)), "Retry-After {after} ms");
        n.fire();
        if next < 1_500 {
            let (_, expected, _) = n.update();
            assert_eq!(expected, Version::new("1"));
            assert!(n.elector.is_leader(n.now));
        } else {
            assert!(!n.elector.is_leader(n.now), "the deadline comes first");
            assert!(n.events().contains(&Event::StoppedLeading {
                term: term(0, "1"),
                reason: StopReason::DeadlineExceeded
            }));
        }
    }
}

/// A9 for a follower: a 429 on a read delays the next attempt by Retry-After.
#[test]
fn a9_follower_waits_for_retry_after() {
    let mut n = Node::new(fast("a"));
    let op = n.get();
    n.answer(
        op,
        Err(LockError::Transient {
            message: "429".into(),
            retry_after: Some(ms(1_200)),
        }),
    );
    let next = n.timeout().expect("a retry is planned");
    assert!(next >= t(1_200), "{next:?}");
    let op = n.fire_until_action(10);
    assert!(matches!(op, Action::Get { .. }));
    assert!(n.now >= t(1_200));
}

/// A8: 422 on a renew is reported with its cause and not retried in a tight loop.
#[test]
fn a8_invalid_on_renew_is_reported_and_backed_off() {
    let mut n = Node::leader(fast("a"), "1");
    n.fire();
    let (op, _, _) = n.update();
    let error = LockError::Invalid {
        message: "spec.leaseDurationSeconds: Invalid value".into(),
    };
    n.answer(op, Err(error.clone()));
    assert_eq!(
        n.events(),
        vec![Event::Warning(Warning::LockFailed {
            op: OpKind::Update,
            error
        })]
    );
    n.no_action();
    assert_eq!(n.timeout(), Some(t(500)), "one retry period later");
    assert_eq!(n.elector.stats().lock_errors, 1);
}

/// Answers carrying an id the elector no longer waits for (timed out, never
/// issued, answered twice) are ignored.
#[test]
fn answers_with_stale_op_ids_are_ignored() {
    let mut n = Node::new(fast("a"));
    let first = n.get();
    n.fire(); // request timeout at 500 ms
    n.events();
    let second = n.fire_until_action(10).op();
    assert_ne!(OpId::from(first), second);
    // The right number as the wrong kind is no answer either.
    let OpId::Read(ReadId(n_second)) = second else {
        panic!("{second:?} is a read")
    };
    for stale in [
        first.into(),
        OpId::Write(WriteId(n_second)),
        OpId::Read(ReadId(99)),
        OpId::Write(WriteId(u64::MAX)),
    ] {
        n.answer(stale, Ok(obs("7", held("b", 2, 1))));
        n.no_events();
        n.no_action();
        assert_eq!(n.elector.observed(), None, "{stale:?} ignored");
    }
    n.answer(second, Ok(obs("1", held("", 1, 0))));
    let (op, _, record) = n.update();
    n.answer(op, Ok(obs("2", stamped(record.clone(), 2))));
    assert!(n.elector.is_leader(n.now));
    // A duplicate of the acquisition's answer changes nothing.
    n.events();
    n.answer(op, Ok(obs("2", stamped(record, 2))));
    n.no_events();
    n.no_action();
}

/// N1: a version we did not write names us (a twin's renew): both stop leading,
/// and the error names the identity.
#[test]
fn n1_identity_collision_on_a_leader_is_detected() {
    let mut n = Node::leader(fast("a"), "1");
    n.fire();
    let (op, _, _) = n.update();
    n.answer(op, Err(LockError::Conflict));
    let op = n.get();
    // The twin's own renew: our identity, a fresh renewTime, a version we never wrote.
    let mut twin = held("a", 2, 0);
    twin.renew_time = Stamp::At(WallTime::new(1_700_000_500, 0));
    n.answer(op, Ok(obs("5", twin)));
    let evs = n.events();
    assert!(
        evs.contains(&Event::Warning(Warning::IdentityCollision("a".into()))),
        "{evs:?}"
    );
    assert!(evs.contains(&Event::StoppedLeading {
        term: term(0, "1"),
        reason: StopReason::IdentityCollision
    }));
    assert!(!n.elector.is_leader(n.now));
}

/// N1 from a follower: two versions it did not write that both name it prove a
/// twin; one alone may be its own previous life (N2).
#[test]
fn n1_identity_collision_seen_by_a_follower() {
    let mut n = Node::new(fast("a"));
    let op = n.get();
    n.answer(op, Ok(obs("5", held("a", 2, 0))));
    assert!(
        !n.events()
            .iter()
            .any(|e| matches!(e, Event::Warning(Warning::IdentityCollision(_)))),
        "one version naming us may be our previous life"
    );
    n.watch_active(true);
    n.advance_to(t(300));
    n.watch(WatchEvent::Changed(obs("6", held("a", 2, 0))));
    assert!(
        n.events()
            .contains(&Event::Warning(Warning::IdentityCollision("a".into())))
    );
    assert!(!n.elector.is_leader(n.now));
}

/// N4/N5: the process (or machine) was frozen longer than a lease: on resume the
/// deadline is checked before any action, and a renew of the old term is never sent.
#[test]
fn n5_pause_longer_than_a_lease_checks_the_deadline_before_acting() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg.clone(), "1");
    n.advance_to(t(5_000));
    let evs = n.events();
    assert_eq!(
        evs.first(),
        Some(&Event::StoppedLeading {
            term: term(0, "1"),
            reason: StopReason::DeadlineExceeded
        }),
        "{evs:?}"
    );
    assert!(!n.elector.is_leader(n.now));
    // Whatever comes next is not a renew of term 0: a read, or a compare-and-swap
    // acquisition of a new term.
    // The node campaigns again at once, so there is a next call.
    match n.action() {
        Action::Get { .. } => {}
        Action::Update {
            expected, record, ..
        } => {
            assert_eq!(expected, Version::new("1"));
            assert_eq!(record.transitions, 1, "a new term, not a renew");
        }
        other => panic!("unexpected {other:?}"),
    }
    // The same when an answer (not a timer) is the first thing after the pause.
    let mut n = Node::leader(cfg, "1");
    n.fire();
    let (op, _, record) = n.update();
    n.set_clock(t(5_000));
    n.answer(op, Ok(obs("2", stamped(record, 2))));
    assert!(!n.elector.is_leader(n.now));
    assert_eq!(
        n.events().first(),
        Some(&Event::StoppedLeading {
            term: term(0, "1"),
            reason: StopReason::DeadlineExceeded
        })
    );
}

/// `handle_timeout` returns when a timer fires while a call is in flight: here the
/// deadline passes while a read is outstanding (let_go re-arms the attempt timer).
/// Run on a thread with a time limit, so that a hang fails instead of stalling.
#[test]
fn handle_timeout_returns_when_a_timer_fires_during_a_call() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Lead at once after the create (no strict lock delay), so that the
        // deadline is what ends leadership below.
        let mut cfg = fast("a");
        cfg.lock_delay = LockDelay::Immediate;
        let mut e = Elector::new(cfg, t(0)).expect("valid");
        let get = e.poll_action().expect("read").op();
        e.handle(get.answer(Err(LockError::NotFound)), t(0));
        let create = e.poll_action().expect("create");
        let Action::Create { op, record } = create else {
            panic!("{create:?}")
        };
        e.handle(
            Input::Written {
                op,
                result: Ok(obs("1", record)),
            },
            t(0),
        );
        // Nothing is answered from now on: renew at 250 ms, read at 750 ms and at
        // 1.25 s (request timeouts), deadline at 1.5 s with the read in flight.
        let mut before = true;
        for at in [250, 750, 1_250] {
            e.handle_timeout(t(at));
            while e.poll_action().is_some() {}
            before &= e.is_leader(t(at));
        }
        e.handle_timeout(t(1_500));
        while e.poll_action().is_some() {}
        let _ = tx.send((before, e.is_leader(t(1_500))));
    });
    let (leading_before, leading_after) = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("handle_timeout(1.5 s) returned");
    assert!(leading_before, "led until the deadline");
    assert!(!leading_after, "not past the deadline");
}

/// How a third party's write shows to the leader in the R12 table.
#[derive(Clone, Copy, Debug)]
enum Seen {
    /// Through a 409 on the leader's renew, then the slow-path read.
    RenewConflict,
    /// Through a watch event, confirmed by a read.
    Watch,
}

/// What the leader must make of the record it reads.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Verdict {
    /// Only fields a holder does not stamp changed: keep leading, adopt the
    /// version, renew by compare-and-swap on it at once.
    Adopt,
    /// A version that a holder with our identity stamped: a twin (N1).
    Collision,
}

/// R12 (and N1): someone else rewrites the lock while we lead, without changing
/// the holder. Labels, annotations and owner references are not part of the
/// record, so a metadata-only edit shows as a new version of the very record our
/// last write stored: the leader adopts that version and renews on it at once,
/// and the deadline moves only when that renew succeeds. A record whose renew
/// time, acquire time or transitions differ from what our last write stored was
/// stamped by a holder with our identity: a twin, and the leader stops.
#[test]
fn r12_foreign_metadata_edit_while_leading_keeps_leadership() {
    type Edit = fn(&mut LockRecord);
    let cases: [(&str, Edit, Verdict); 7] = [
        (
            "label or annotation added (record unchanged)",
            |_| {},
            Verdict::Adopt,
        ),
        (
            "strategy set by a third party",
            |r| r.strategy = Some("OldestEmulationVersion".into()),
            Verdict::Adopt,
        ),
        (
            "lease duration edited by hand",
            |r| r.lease_duration_secs = Some(30),
            Verdict::Adopt,
        ),
        (
            "priority field edited",
            |r| r.priority = Some(5),
            Verdict::Adopt,
        ),
        (
            "twin's renew: a renew time of its own",
            |r| r.renew_time = Stamp::At(WallTime::new(1_700_000_500, 0)),
            Verdict::Collision,
        ),
        (
            "twin's acquisition: new acquire time and transitions",
            |r| {
                r.acquire_time = Stamp::At(WallTime::new(1_700_000_500, 0));
                r.renew_time = Stamp::At(WallTime::new(1_700_000_500, 0));
                r.transitions = 1;
            },
            Verdict::Collision,
        ),
        (
            "transitions changed alone",
            |r| r.transitions = 3,
            Verdict::Collision,
        ),
    ];
    for (name, edit, verdict) in cases {
        for path in [Seen::RenewConflict, Seen::Watch] {
            let cfg = fast("a");
            let mut n = Node::leader(cfg.clone(), "1");
            let stored = n.elector.observed().expect("our write").record.clone();
            let mut foreign = stored.clone();
            edit(&mut foreign);
            let read = match path {
                Seen::RenewConflict => {
                    n.fire();
                    let (op, expected, _) = n.update();
                    assert_eq!(expected, Version::new("1"));
                    n.answer(op, Err(LockError::Conflict));
                    n.get()
                }
                Seen::Watch => {
                    n.watch_active(true);
                    n.set_clock(t(100));
                    n.watch(WatchEvent::Changed(obs("7", foreign.clone())));
                    n.get()
                }
            };
            let before = n.elector.deadline();
            assert_eq!(before, Some(t(1_500)), "{name} / {path:?}");
            n.answer(read, Ok(obs("7", foreign.clone())));
            let evs = n.events();
            let collided = evs.contains(&Event::Warning(Warning::IdentityCollision("a".into())));
            match verdict {
                Verdict::Adopt => {
                    assert!(!collided, "{name} / {path:?}: {evs:?}");
                    assert!(
                        !evs.iter()
                            .any(|e| matches!(e, Event::StoppedLeading { .. })),
                        "{name} / {path:?}: {evs:?}"
                    );
                    assert!(n.elector.is_leader(n.now), "{name} / {path:?}");
                    assert_eq!(n.elector.deadline(), before, "no extension without a write");
                    // At once, by compare-and-swap on the adopted version, with
                    // what we own written back and the rest kept (after a
                    // conflict too: the read showed the lock moved on).
                    let sent = n.now;
                    let (op, expected, record) = n.update();
                    assert_eq!(expected, Version::new("7"), "{name} / {path:?}");
                    assert_eq!(&*record.holder, "a");
                    assert_eq!(record.renew_time, Stamp::Now);
                    assert_eq!(record.acquire_time, stored.acquire_time);
                    assert_eq!(record.transitions, stored.transitions);
                    assert_eq!(record.lease_duration_secs, Some(2), "ours written back");
                    assert_eq!(record.priority, cfg.priority);
                    assert_eq!(record.strategy, foreign.strategy, "kept");
                    n.answer(op, Ok(obs("8", stamped(record, 3))));
                    assert!(n.elector.is_leader(n.now));
                    assert_eq!(n.elector.deadline(), Some(sent + cfg.renew_deadline));
                    assert_eq!(n.elector.term(), Some(&term(0, "1")), "the same term");
                }
                Verdict::Collision => {
                    assert!(collided, "{name} / {path:?}: {evs:?}");
                    assert!(evs.contains(&Event::StoppedLeading {
                        term: term(0, "1"),
                        reason: StopReason::IdentityCollision
                    }));
                    assert!(!n.elector.is_leader(n.now), "{name} / {path:?}");
                }
            }
        }
    }
}

/// R12 during a release: the release loses its compare-and-swap to a metadata-only
/// edit; the fresh record is still our last one, so the release is written on the
/// new version (not dropped as an identity collision).
#[test]
fn r12_foreign_metadata_edit_during_release_still_releases() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg, "1");
    let stored = n.elector.observed().expect("our write").record.clone();
    n.set_clock(t(100));
    n.step_down();
    n.work_stopped();
    n.events();
    let (op, expected, _) = n.update();
    assert_eq!(expected, Version::new("1"));
    n.answer(op, Err(LockError::Conflict));
    let op = n.get();
    n.answer(op, Ok(obs("7", stored)));
    let evs = n.events();
    assert!(
        !evs.iter()
            .any(|e| matches!(e, Event::Warning(Warning::IdentityCollision(_)))),
        "{evs:?}"
    );
    let (op, expected, record) = n.update();
    assert_eq!(expected, Version::new("7"));
    assert_eq!(&*record.holder, "", "the release, on the new version");
    n.answer(op, Ok(obs("8", stamped(record, 3))));
    assert_eq!(n.elector.role(), Role::Follower);
}
