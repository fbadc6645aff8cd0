//! Scenarios for an absent lock that may still have a believer (DESIGN §4 "Absent
//! lock while another may believe"): the strict lock delay (default) and
//! `LockDelay::Immediate`; FAULTS A4 (404 on renew); and the pairing rule for a
//! node that held the lock without ever leading.
//!
//! Fast profile: 2 s lease, 1.5 s renew deadline, 250 ms retry.

mod support;
use support::*;

/// A follower that saw "b" hold the lock (transitions 3), then saw it deleted, and
/// created it at 1 s. Returns the node with the create answered (version 8).
fn created_after_deletion(cfg: Config) -> Node {
    let mut n = Node::follower(cfg.clone(), obs("7", held("b", 2, 3)));
    n.watch_active(true);
    n.set_clock(t(1_000));
    n.watch(WatchEvent::Deleted(None));
    let (op, record) = n.create();
    let mut want = acquiring(&cfg, 4);
    want.lease_duration_secs = Some(2);
    assert_eq!(record, want, "transitions continue from the largest seen");
    n.answer(op, Ok(obs("8", stamped(record, 8))));
    n
}

/// Renews from the node's cache, answering each with a new version, until `until`.
fn renew_until(n: &mut Node, until: Instant) {
    let mut v = 100;
    while n.timeout().is_some_and(|t| t <= until) {
        n.fire();
        if n.has_action() {
            let (op, _, record) = match n.action() {
                Action::Update {
                    op,
                    expected,
                    record,
                } => (op, expected, record),
                other => panic!("expected a renew, got {other:?}"),
            };
            v += 1;
            n.answer(op, Ok(obs(&v.to_string(), stamped(record, v))));
        }
    }
}

#[test]
fn strict_lock_delay_waits_one_lease_after_creating() {
    let mut n = created_after_deletion(fast("a"));
    assert_eq!(n.elector.role(), Role::Acquiring);
    assert!(!n.elector.is_leader(n.now));
    assert_eq!(n.elector.term(), None);
    let evs = n.events();
    assert!(
        evs.contains(&Event::LeaderChanged {
            leader: Some("a".into())
        }),
        "{evs:?}"
    );
    assert!(
        !evs.iter()
            .any(|e| matches!(e, Event::StartedLeading { .. })),
        "{evs:?}"
    );
    // It renews meanwhile, and leads exactly one lease after the create was sent.
    renew_until(&mut n, t(2_999));
    assert!(n.started().is_none(), "not before 1 s + 2 s");
    assert!(!n.elector.is_leader(n.now));
    renew_until(&mut n, t(3_000));
    let start = n
        .log
        .iter()
        .find(|(_, e)| matches!(e, Event::StartedLeading { .. }))
        .expect("leads after the delay");
    assert_eq!(
        start,
        &(t(3_000), Event::StartedLeading { term: term(4, "8") })
    );
    assert!(n.elector.is_leader(t(3_000)));
}

#[test]
fn immediate_lock_delay_leads_at_once_like_client_go() {
    let mut cfg = fast("a");
    cfg.lock_delay = LockDelay::Immediate;
    let mut n = created_after_deletion(cfg);
    assert!(n.elector.is_leader(n.now));
    assert!(
        n.events()
            .contains(&Event::StartedLeading { term: term(4, "8") })
    );
}

/// With `LockDelay::Immediate`, a node that finds no lock creates it and leads at
/// once (the `Node::leader` fixture).
#[test]
fn immediate_lock_delay_creates_a_fresh_lock_and_leads_at_once() {
    let n = Node::leader(fast("a"), "1");
    assert_eq!(n.elector.term(), Some(&term(0, "1")));
}

/// The first time the lock in the story led this node to lead: the story's
/// `StartedLeading`, if any.
fn first_start(n: &Node) -> Option<Instant> {
    n.log
        .iter()
        .find(|(_, e)| matches!(e, Event::StartedLeading { .. }))
        .map(|(at, _)| *at)
}

/// A node reads 404 at 0 and sends its
/// create, which is served late (answered at 0.2 s). Meanwhile another node may
/// have created the lock, led, and seen it deleted just before this create was
/// served: that leader believes until its deadline, up to a lease after the
/// deletion. The strict delay therefore counts from the create's answer (0.2 s +
/// 2 s), not from the 404 (0 + 2 s).
#[test]
fn strict_lock_delay_counts_from_the_creates_answer_not_the_earlier_404() {
    let mut n = Node::new(fast("a"));
    let op = n.get();
    n.answer(op, Err(LockError::NotFound));
    let (op, record) = n.create();
    n.set_clock(t(200));
    n.answer(op, Ok(obs("5", stamped(record, 5))));
    assert_eq!(n.elector.role(), Role::Acquiring, "holds, waits the delay");
    renew_until(&mut n, t(2_199));
    assert_eq!(first_start(&n), None, "not at 0 + 2 s: the 404 is too old");
    assert!(!n.elector.is_leader(n.now));
    renew_until(&mut n, t(2_200));
    assert_eq!(first_start(&n), Some(t(2_200)));
    assert!(n.elector.is_leader(t(2_200)));
}

/// As above, when the create's outcome is unknown (request timeout at 0.5 s): the
/// read at 0.5 s shows the record our create made (answered at 0.6 s), and the
/// compare-and-swap that takes it back is answered at 0.7 s. The create was served
/// at some unknown instant before 0.6 s, so the delay counts from 0.7 s.
#[test]
fn strict_lock_delay_after_a_create_of_unknown_outcome_counts_from_the_take_back() {
    let mut n = Node::new(fast("a"));
    let op = n.get();
    n.answer(op, Err(LockError::NotFound));
    let (_lost, record) = n.create();
    n.fire(); // the request timeout (500 ms): outcome unknown
    assert_eq!(n.now, t(500));
    let op = n.get();
    n.set_clock(t(600));
    n.answer(op, Ok(obs("5", stamped(record, 5))));
    let (op, expected, record) = n.update();
    assert_eq!(
        expected,
        Version::from("5"),
        "takes back its own record by CAS"
    );
    assert_eq!(&*record.holder, "a");
    n.set_clock(t(700));
    n.answer(op, Ok(obs("6", stamped(record, 6))));
    renew_until(&mut n, t(2_699));
    assert_eq!(first_start(&n), None, "not at 0 + 2 s");
    renew_until(&mut n, t(2_700));
    assert_eq!(first_start(&n), Some(t(2_700)));
}

/// A create of unknown outcome
/// does not delay every later acquisition. Here the read after the timeout shows
/// the lock created and held by "b", not by our create; a lease after that
/// observation we take it over from "b" and lead at once. Whoever held the lock
/// before our create may have been served had to see "b"'s record expire too, so
/// nobody can still believe. (Taking back a record that names us is delayed: the
/// test above.)
#[test]
fn a_create_of_unknown_outcome_does_not_delay_taking_over_another_holder() {
    let mut n = Node::new(fast("a"));
    let op = n.get();
    n.answer(op, Err(LockError::NotFound));
    let (_lost, _record) = n.create();
    n.fire(); // the request timeout (500 ms): outcome unknown
    assert_eq!(n.now, t(500));
    let op = n.get();
    n.set_clock(t(600));
    let b = held("b", 2, 0);
    n.answer(op, Ok(obs("5", b.clone())));
    let (at, write) = n.campaign(|_| Ok(obs("5", b.clone())), 1_000);
    assert!(at >= t(2_600), "a lease after seeing b's version: {at:?}");
    let Action::Update {
        op,
        expected,
        record,
    } = write
    else {
        panic!("expected a compare-and-swap, got {write:?}");
    };
    assert_eq!(expected, Version::from("5"));
    assert_eq!(record.transitions, 1);
    n.answer(op, Ok(obs("6", stamped(record, 6))));
    assert!(
        n.elector.is_leader(n.now),
        "leads at once, not a lease later"
    );
    assert_eq!(first_start(&n), Some(n.now));
}

/// A create of unknown outcome delays taking a record naming no one only if that
/// record may be the create's: here the read after the timeout shows "b" holding
/// the created lock, and later a released record counting one more transition
/// than our create wrote (b took it by the rules, then released). Taking it is a
/// new term, led at once (two lock delays in a row, ours after b's, would
/// overshoot the liveness bound).
#[test]
fn a_create_of_unknown_outcome_does_not_delay_taking_a_record_released_since() {
    let mut n = Node::new(fast("a"));
    let op = n.get();
    n.answer(op, Err(LockError::NotFound));
    let (_lost, create) = n.create();
    assert_eq!(create.transitions, 0);
    n.fire(); // the request timeout (500 ms): outcome unknown
    let op = n.get();
    n.set_clock(t(600));
    n.answer(op, Ok(obs("5", held("b", 2, 1))));
    n.watch_active(true);
    n.set_clock(t(2_100)); // past the delay the 404 at 0 started
    n.watch(WatchEvent::Changed(obs("7", held("", 1, 1))));
    let (op, expected, record) = n.update();
    assert_eq!(expected, Version::from("7"));
    assert_eq!(record.transitions, 2);
    n.answer(op, Ok(obs("8", stamped(record, 8))));
    assert!(
        n.elector.is_leader(n.now),
        "leads at once, not a lease later"
    );
    assert_eq!(first_start(&n), Some(t(2_100)));
}

/// A4: 404 on the renew (deleted while held): leadership ends at once (no later
/// than the deadline), and the lock is re-created under the strict delay.
#[test]
fn a4_lock_deleted_while_leading_ends_leadership_and_recreates() {
    let cfg = fast("a");
    // Leading by taking over an empty record (term 0@1), with the strict delay.
    let mut n = Node::follower(cfg.clone(), obs("0", held("", 1, 0)));
    let (op, _, record) = n.update();
    n.answer(op, Ok(obs("1", stamped(record, 1))));
    assert!(n.elector.is_leader(n.now));
    n.events();
    n.fire();
    let (op, _, _) = n.update();
    n.answer(op, Err(LockError::NotFound));
    assert_eq!(
        n.events().first(),
        Some(&Event::StoppedLeading {
            term: term(1, "1"),
            reason: StopReason::LockDeleted
        })
    );
    assert!(!n.elector.is_leader(n.now));
    let (op, record) = n.fire_until_action(4).into_create();
    assert_eq!(record.transitions, 2, "the term keeps growing");
    assert!(n.now <= t(1_500));
    n.answer(op, Ok(obs("9", stamped(record, 9))));
    assert_eq!(
        n.elector.role(),
        Role::Acquiring,
        "strict: waits a lease first"
    );
    assert!(!n.elector.is_leader(n.now));
}

/// Start and stop are strictly paired: a node that holds the lock under the delay
/// and never led reports no stop, whether it shuts down, steps down, or misses
/// its deadline.
#[test]
fn no_stop_without_a_start_while_delayed() {
    // Shutdown: release without StoppedLeading.
    let mut n = created_after_deletion(fast("a"));
    n.events();
    n.shutdown();
    let (op, rel) = renew_until_release(&mut n);
    n.answer(op, Ok(obs("99", stamped(rel, 99))));
    let evs = n.events();
    assert!(evs.contains(&Event::Terminated), "{evs:?}");
    assert!(
        !evs.iter()
            .any(|e| matches!(e, Event::StoppedLeading { .. } | Event::Draining { .. })),
        "{evs:?}"
    );
    // Step-down: release without Draining or StoppedLeading (renewing until the
    // release is due: a delayed holder may keep the lock until the delay ends).
    let mut n = created_after_deletion(fast("a"));
    n.events();
    n.step_down();
    let (op, rel) = renew_until_release(&mut n);
    assert_eq!(&*rel.holder, "");
    n.answer(op, Ok(obs("99", stamped(rel, 99))));
    assert!(
        !n.events()
            .iter()
            .any(|e| matches!(e, Event::StoppedLeading { .. } | Event::Draining { .. }))
    );
    // Deadline: every renew fails; no stop is reported.
    let mut n = created_after_deletion(fast("a"));
    n.events();
    while n.now < t(3_500) {
        n.fire();
        if n.has_action() {
            let a = n.action();
            n.answer(a.op(), Err(LockError::transient("503")));
        }
    }
    assert!(n.started().is_none());
    assert!(
        !n.log
            .iter()
            .any(|(_, e)| matches!(e, Event::StoppedLeading { .. }))
    );
    assert_eq!(n.elector.role(), Role::Follower);
}

/// Answers renews until the release comes (no later than the end of the delay at
/// 3 s); returns the release.
fn renew_until_release(n: &mut Node) -> (WriteId, LockRecord) {
    let mut v = 10;
    loop {
        let (op, _, rec) = n.fire_until_action(4).into_update();
        if rec.holder.is_empty() {
            return (op, rec);
        }
        assert!(n.now <= t(3_000), "still not released at {:?}", n.now);
        v += 1;
        n.answer(op, Ok(obs(&v.to_string(), stamped(rec, v))));
    }
}

/// R14: the lock delay after an absence covers the longest lease seen, not this
/// node's own. "x" holds the lock with a 6 s lease (this node's is 2 s); the
/// next poll finds the lock deleted (a human, a namespace clean-up) while x,
/// partitioned and blind to it, may believe until nearly 6 s after its last
/// renew before 0. The node creates at once (allowed) but leads only 6 s after
/// its create's answer, not 2 s.
#[test]
fn r14_a_lock_deleted_under_a_longer_lease_waits_that_lease_before_leading() {
    let mut n = Node::follower(fast("a"), obs("7", held("x", 6, 3)));
    let op = match n.fire_until_action(10) {
        Action::Get { op } => op,
        other => panic!("a poll, not {other:?}"),
    };
    assert!(n.now < t(2_000), "polled within a lease: {:?}", n.now);
    n.answer(op, Err(LockError::NotFound));
    let (op, record) = n.create();
    n.advance(ms(20));
    let answered = n.now;
    n.answer(op, Ok(obs("9", stamped(record, 9))));
    assert_eq!(n.elector.role(), Role::Acquiring);
    renew_until(&mut n, answered + ms(5_999));
    assert_eq!(first_start(&n), None, "led within x's 6 s lease");
    renew_until(&mut n, answered + ms(6_000));
    assert_eq!(first_start(&n), Some(answered + ms(6_000)));
}

/// R14 with R13: "x" (a 6 s lease) renews, then its duration is edited to 1 s
/// while it is cut off and cannot learn of it. This node (2 s) times the edited
/// version by the longest duration it saw x write, not by the longer of 1 s and
/// its own 2 s: no takeover before 6 s from the edit.
#[test]
fn r14_a_duration_edited_under_a_longer_lease_holder_is_timed_by_what_it_wrote() {
    let mut n = Node::follower(fast("a"), obs("7", held("x", 6, 3)));
    n.watch_active(true);
    n.watch(WatchEvent::Changed(obs("7", held("x", 6, 3))));
    n.advance(ms(500));
    n.watch(WatchEvent::Changed(obs("8", held("x", 1, 3))));
    let edited = n.now;
    let (at, write) = n.campaign(|_| Ok(obs("8", held("x", 1, 3))), 100);
    assert!(at >= edited + ms(6_000), "took over at {at:?}: {write:?}");
}

/// R14, a gap in the classic mode: this polling node saw "x" (6 s lease) hold
/// the lock; behind its back the lock was deleted and created again by "y"
/// (2 s), which never led (it waits out its lock delay) and died. The next poll
/// shows y's record, which expires 2 s later; x, cut off and blind to the
/// deletion, may believe for 6 s. The node takes y's expired record, but leads
/// only 6 s after the poll that could not tell what it missed.
#[test]
fn r14_a_takeover_after_a_gap_leads_only_once_the_longest_lease_seen_is_over() {
    let mut n = Node::follower(fast("a"), obs("7", held("x", 6, 3)));
    let op = match n.fire_until_action(10) {
        Action::Get { op } => op,
        other => panic!("a poll, not {other:?}"),
    };
    n.answer(op, Ok(obs("20", held("y", 2, 4))));
    let gap = n.now;
    let (at, write) = n.campaign(|_| Ok(obs("20", held("y", 2, 4))), 100);
    assert!(at >= gap + ms(2_000) && at < gap + ms(6_000), "{at:?}");
    let (op, _, record) = write.into_update();
    n.answer(op, Ok(obs("21", stamped(record, 9))));
    assert_eq!(n.elector.role(), Role::Acquiring, "holds, waiting");
    renew_until(&mut n, gap + ms(5_999));
    assert_eq!(first_start(&n), None, "led within x's lease after the gap");
    renew_until(&mut n, gap + ms(6_000));
    assert_eq!(first_start(&n), Some(gap + ms(6_000)));
}

/// R14's knob: a node that never saw the longest-lease holder (it started after
/// that holder took the lock, then found the lock deleted) waits the fleet's
/// longest lease when told it (`Config::fleet_lease_duration`), and its own
/// without.
#[test]
fn r14_the_fleets_longest_lease_covers_a_holder_never_seen() {
    for (fleet, wait) in [(None, 2_000), (Some(ms(6_000)), 6_000)] {
        let mut cfg = fast("a");
        cfg.fleet_lease_duration = fleet;
        let mut n = Node::new(cfg);
        let op = n.get();
        n.answer(op, Err(LockError::NotFound));
        let (op, record) = n.create();
        let answered = n.now;
        n.answer(op, Ok(obs("9", stamped(record, 9))));
        renew_until(&mut n, answered + ms(wait - 1));
        assert_eq!(first_start(&n), None, "{fleet:?}");
        renew_until(&mut n, answered + ms(wait));
        assert_eq!(first_start(&n), Some(answered + ms(wait)), "{fleet:?}");
    }
}
