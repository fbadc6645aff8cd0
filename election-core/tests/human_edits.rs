//! FAULTS R1, R2 and R13: a human edits the held lock. A newer version that does
//! not name the leader ends its term at once (no read first, no release); a
//! follower takes only a release's shape at once, and never counts a held lease
//! as expiring sooner than its own configured duration.

mod support;

use election_core::{
    Action, Event, Instant, LockRecord, Observation, Role, StopReason, WatchEvent,
};
use support::*;

/// A leader of term 1@10 with the fast profile (2 s lease): it took over a
/// released record, so no lock delay. A watch delivers changes.
fn leader() -> Node {
    let mut n = Node::follower(fast("a"), obs("9", held("", 1, 0)));
    n.watch_active(true);
    let (op, _, record) = n.update();
    n.answer(op, Ok(obs("10", stamped(record, 1))));
    assert!(n.elector.is_leader(n.now));
    n.events();
    n
}

/// The leader's last record (version 10) with only `edit` applied, as a human's
/// patch would leave it: every stamp of the holder kept.
fn patched(n: &Node, edit: impl FnOnce(&mut LockRecord)) -> LockRecord {
    let mut record = n
        .elector
        .observed()
        .expect("the leader's record")
        .record
        .clone();
    edit(&mut record);
    record
}

/// An operator's `kubectl patch … holderIdentity: null`: the duration stays.
fn emptied(n: &Node) -> LockRecord {
    patched(n, |r| r.holder = "".into())
}

/// Fires timeouts, answering reads with `current`, until the node writes;
/// panics on a write before `not_before`. Returns when it wrote and the write.
fn first_write(n: &mut Node, current: &Observation, not_before: Instant) -> (Instant, Action) {
    let (at, write) = n.campaign(|_| Ok(current.clone()), 1_000);
    assert!(
        at >= not_before,
        "wrote at {at:?}, before {not_before:?}: {write:?}"
    );
    (at, write)
}

/// R2, the chaos run's case: a leader's confirming read (owed for an edit that
/// kept its name) is in flight when the watch shows a newer version with the
/// holder emptied. Whatever that read then does (429 with Retry-After, 500, time
/// out, or never answer), the leader stopped at the edit, and wrote no release.
#[test]
fn r2_a_leader_stops_at_once_on_a_newer_emptied_holder_whatever_its_read_does() {
    for (case, answer) in read_failures() {
        let mut n = leader();
        n.advance(ms(50));
        // A label added by hand: it names the leader, so the leader reads first.
        let labelled = patched(&n, |_| {});
        n.watch(WatchEvent::Changed(obs("11", labelled)));
        let read = n.get();
        assert!(
            n.elector.is_leader(n.now),
            "{case}: a kept name is confirmed first"
        );
        n.advance(ms(10));
        let edit = obs("12", emptied(&n));
        let edited_at = n.now;
        n.watch(WatchEvent::Changed(edit.clone()));
        assert_eq!(
            n.events(),
            vec![
                Event::StoppedLeading {
                    term: term(1, "10"),
                    reason: StopReason::ObservedOtherHolder { holder: "".into() }
                },
                Event::LeaderChanged { leader: None },
            ],
            "{case}: stopped at the edit itself"
        );
        assert!(!n.elector.is_leader(n.now), "{case}");
        assert_eq!(n.elector.role(), Role::Follower, "{case}");
        n.end_read(read, case, answer);
        assert!(n.started().is_none(), "{case}: no new start");
        // Not a release's shape: the old leader, now a follower, waits a lease
        // from the edit like everyone else, and its next write takes the lock
        // as a new term (no release of the emptied record).
        let lease = n.elector.config().lease_duration;
        let (_, write) = first_write(&mut n, &edit, edited_at + lease);
        let (_, expected, record) = write.into_update();
        assert_eq!(expected, edit.version, "{case}");
        assert_eq!(
            &*record.holder, "a",
            "{case}: an acquisition, not a release"
        );
        assert_eq!(record.transitions, 2, "{case}");
    }
}

/// R1 as R2: another identity written by hand ends the term at once, too.
#[test]
fn r1_a_leader_stops_at_once_on_a_newer_record_naming_another() {
    let mut n = leader();
    n.advance(ms(100));
    let edit = patched(&n, |r| r.holder = "mallory".into());
    n.watch(WatchEvent::Changed(obs("11", edit)));
    assert_eq!(
        n.events(),
        vec![
            Event::StoppedLeading {
                term: term(1, "10"),
                reason: StopReason::ObservedOtherHolder {
                    holder: "mallory".into()
                }
            },
            Event::LeaderChanged {
                leader: Some("mallory".into())
            },
        ]
    );
    assert!(!n.has_action(), "no read first, no release");
}

/// R2: news that is not newer than the leader's own version is not an edit of
/// it: an older emptied record (a resumed watch replaying a release from before
/// this term) is ignored, and one at the leader's own version is its write.
#[test]
fn r2_an_older_or_equal_emptied_record_does_not_stop_the_leader() {
    let mut n = leader();
    n.advance(ms(100));
    n.watch(WatchEvent::Changed(obs("9", held("", 1, 0))));
    n.watch(WatchEvent::Changed(obs("8", held("", 15, 0))));
    assert!(n.elector.is_leader(n.now));
    n.no_events();
    n.no_action();
    n.watch(WatchEvent::Changed(obs("10", emptied(&n))));
    assert!(n.elector.is_leader(n.now), "its own version");
    n.no_events();
    // Versions without an order cannot be placed before or after the leader's:
    // it reads first, and stops on what the read shows.
    let mut cfg = fast("a");
    cfg.lock_delay = election_core::LockDelay::Immediate;
    let mut n = Node::follower(cfg, obs("v-b", held("", 1, 0)));
    n.watch_active(true);
    let (op, _, record) = n.update();
    n.answer(op, Ok(obs("v-c", stamped(record, 1))));
    assert!(n.elector.is_leader(n.now));
    n.events();
    let edit = obs("v-d", emptied(&n));
    n.watch(WatchEvent::Changed(edit.clone()));
    assert!(n.elector.is_leader(n.now), "unordered: confirmed first");
    let read = n.get();
    n.answer(read, Ok(edit));
    assert!(!n.elector.is_leader(n.now));
}

/// R2: a follower takes a release at once, in either shape libraries write
/// (holder empty with a duration of 1 s, or holder and duration both removed),
/// and an emptied holder of any other shape only a lease after it saw it.
#[test]
fn r2_a_follower_takes_a_release_at_once_and_an_emptied_holder_after_a_lease() {
    let releases = [
        ("client-go's release", held("", 1, 3)),
        ("kubert's vacate", {
            let mut r = held("", 1, 3);
            r.lease_duration_secs = None;
            r
        }),
    ];
    for (what, record) in releases {
        let mut n = Node::follower(fast("c"), obs("5", held("b", 2, 3)));
        n.watch_active(true);
        n.advance(ms(300));
        n.watch(WatchEvent::Changed(obs("6", record)));
        let (_, expected, write) = n.update();
        assert_eq!(expected.as_str(), "6", "{what}: at once");
        assert_eq!(&*write.holder, "c", "{what}");
    }
    // An operator emptied the holder and left the duration (2 s, or longer, or
    // shorter): a lease from the edit, never less than this node's own.
    for secs in [2, 30, 1_000_000, 0, -3] {
        let mut n = Node::follower(fast("c"), obs("5", held("b", 2, 3)));
        n.watch_active(true);
        n.advance(ms(300));
        let edit = obs("6", held("", secs, 3));
        let seen = n.now;
        n.watch(WatchEvent::Changed(edit.clone()));
        n.no_action();
        let wait = match secs {
            s if s > 2 => ms(s.unsigned_abs().min(3_600) * 1_000),
            _ => n.elector.config().lease_duration,
        };
        let (at, write) = first_write(&mut n, &edit, seen + wait);
        assert!(at < seen + wait + ms(1_000), "{secs}: taken once due");
        let (_, expected, record) = write.into_update();
        assert_eq!(expected.as_str(), "6", "{secs}");
        assert_eq!(&*record.holder, "c", "{secs}");
        assert_eq!(record.transitions, 4, "{secs}: a new term");
    }
}

/// R13: a held record whose duration is shorter than this node's own (an
/// operator shortened it, or its holder is configured shorter) is not taken
/// before this node's own lease duration has passed since it saw the record;
/// a longer one is honoured as before.
#[test]
fn r13_a_follower_does_not_trust_a_shortened_duration() {
    let mut cfg = fast("c");
    cfg.lease_duration = ms(5_000);
    cfg.renew_deadline = ms(3_000);
    cfg.max_lease_duration = ms(3_600_000);
    for (secs, wait) in [(1, 5_000), (4, 5_000), (5, 5_000), (8, 8_000)] {
        let mut n = Node::new(cfg.clone());
        n.watch_active(true);
        let op = n.get();
        n.advance(ms(200));
        let record = obs("7", held("b", secs, 1));
        let seen = n.now;
        n.answer(op, Ok(record.clone()));
        let (at, write) = first_write(&mut n, &record, seen + ms(wait));
        assert!(at < seen + ms(wait + 1_000), "{secs} s: taken once due");
        assert!(matches!(write, Action::Update { .. }), "{secs} s");
    }
}

/// R13: a leader whose record was shortened by hand (its name and stamps kept)
/// confirms the edit by a read and renews at once, writing its own duration back.
#[test]
fn r13_a_leader_that_sees_its_duration_shortened_renews_at_once() {
    let mut n = leader();
    n.advance(ms(100));
    let edit = obs("11", patched(&n, |r| r.lease_duration_secs = Some(1)));
    n.watch(WatchEvent::Changed(edit.clone()));
    let read = n.get();
    n.answer(read, Ok(edit));
    assert!(n.elector.is_leader(n.now));
    let (_, expected, record) = n.update();
    assert_eq!(expected.as_str(), "11", "at once, on the edited version");
    assert_eq!(record.lease_duration_secs, Some(2), "its own duration back");
}

/// R1, the chaos soak's case (seed 12): a human sets the holder to a follower's
/// identity while another node leads. The follower once had a takeover write
/// whose outcome it never learned, but that write (a compare-and-swap on an
/// older version) cannot be the edited record: the lock moved on to another
/// holder's version since. So the record is treated as held by another (N2):
/// the follower waits a lease from seeing it, as the leader, which stops when
/// it sees the edit, may not have seen it yet.
#[test]
fn r1_a_follower_named_by_an_edit_waits_a_lease_despite_an_old_unknown_write() {
    let mut n = Node::new(fast("a"));
    n.watch_active(true);
    let op = n.get();
    let held_by_b = obs("7", held("b", 2, 1));
    n.answer(op, Ok(held_by_b.clone()));
    let (_, write) = n.campaign(|_| Ok(held_by_b.clone()), 1_000);
    let (op, expected, _) = write.into_update();
    assert_eq!(expected.as_str(), "7", "a takeover of b's expired lease");
    n.advance(ms(1_000));
    n.answer(
        op,
        Err(LockError::unknown("no answer within the request timeout")),
    );
    // c took the lock meanwhile: a's compare-and-swap on version 7 lost for good.
    let held_by_c = obs("9", held("c", 2, 2));
    if n.has_action() {
        let op = n.get();
        n.answer(op, Ok(held_by_c.clone()));
    } else {
        n.watch(WatchEvent::Changed(held_by_c.clone()));
    }
    assert!(!n.elector.is_leader(n.now));
    n.advance(ms(300));
    // The operator's patch: c's record with a's name.
    let mut named_a = held_by_c.record.clone();
    named_a.holder = "a".into();
    let edit = obs("10", named_a);
    let seen = n.now;
    n.watch(WatchEvent::Changed(edit.clone()));
    let (at, write) = first_write(&mut n, &edit, seen + ms(2_000));
    assert!(
        matches!(write, Action::Update { ref expected, .. } if expected.as_str() == "10"),
        "{write:?}"
    );
    assert!(
        n.started().is_none(),
        "not leading before its write succeeded: {at:?}"
    );
}

/// R1: the operator's patch names this follower over another's record whose
/// transition count happens to be the one a write of its own of unknown
/// outcome asked for. That write wrote this node's lease duration (6 s), the
/// patched record keeps the other holder's (2 s): it is not this node's write,
/// and is timed for a lease before any write (the simulator found the
/// coincidence: the node took it back at once while the other still led).
#[test]
fn r1_an_edit_naming_this_follower_with_its_unknown_writes_count_but_another_duration_is_timed() {
    let mut cfg = fast("a");
    cfg.lease_duration = ms(6_000);
    cfg.renew_deadline = ms(4_500);
    let mut n = Node::new(cfg);
    let op = n.get();
    let held_by_b = obs("7", held("b", 2, 1));
    n.answer(op, Ok(held_by_b.clone()));
    let (_, write) = n.campaign(|_| Ok(held_by_b.clone()), 1_000);
    let (op, _, record) = write.into_update();
    assert_eq!(record.transitions, 2);
    n.advance(ms(100));
    n.answer(op, Err(LockError::unknown("no answer")));
    // The patch: c's record (transitions 2, c's 2 s lease) with a's name.
    let mut named_a = held("c", 2, 2);
    named_a.holder = "a".into();
    let edit = obs("12", named_a);
    let read = n.get();
    let seen = n.now;
    n.answer(read, Ok(edit.clone()));
    let (at, write) = first_write(&mut n, &edit, seen + ms(6_000));
    assert!(
        matches!(write, Action::Update { ref expected, .. } if expected.as_str() == "12"),
        "{write:?} at {at:?}"
    );
}

/// A follower of a lock held by "x", gone (2 s lease, version 1), that sent its
/// takeover (count 1, on version 1) and never learned its outcome: the call
/// timed out. Returns the node, the read it then owes pending.
fn takeover_lost() -> Node {
    let gone = obs("1", held("x", 2, 0));
    let mut n = Node::follower(fast_nojitter("n1"), gone.clone());
    let (_, write) = n.campaign(|_| Ok(gone.clone()), 1_000);
    let Action::Update {
        expected, record, ..
    } = write
    else {
        panic!("a takeover, got {write:?}");
    };
    assert_eq!((expected.as_str(), record.transitions), ("1", 1));
    n
}

/// Fires timeouts, answering reads with `current` and writes with `written`
/// at the next versions, until the node leads; returns when.
fn lead(n: &mut Node, current: &Observation) -> Instant {
    let mut version = current.version.as_str().parse::<u64>().unwrap();
    for _ in 0..1_000 {
        if n.is_leader() {
            return n.now;
        }
        match n.next_action() {
            Some(Action::Get { op }) => n.answer(op, Ok(current.clone())),
            Some(Action::Update { op, record, .. } | Action::Create { op, record }) => {
                version += 1;
                n.answer(op, Ok(obs(&version.to_string(), stamped(record, 9))));
            }
            None => {
                n.fire();
            }
        }
    }
    panic!("never led");
}

/// R15, the model checker's shortest schedule (`election-check`, 2 faults):
/// n0's takeover on the same base won (version 2, count 1, the same 2 s
/// lease), n1's was lost before the lock; an operator's edit then names n1 on
/// n0's record (version 3, count 1, duration 2). n1 reads the edit before any
/// version of n0's: a record its lost write could have made. It takes it back
/// as a new term, but a record it only may have written is a gap like any (n0
/// may believe until its deadline): it leads no earlier than a lease after it
/// saw the edit. Before, it led at once, 1.5 s inside n0's term.
#[test]
fn r15_an_edit_naming_a_follower_whose_takeover_was_lost_is_waited_out() {
    let mut n = takeover_lost();
    let op = n.fire_until_action(10);
    let Action::Get { op } = op else {
        panic!("a read after the timed-out takeover, got {op:?}");
    };
    let edit = obs("3", stamped(held("n1", 2, 1), 5));
    n.answer(op, Ok(edit.clone()));
    let seen = n.now;
    let (op, expected, record) = n.update();
    assert_eq!(
        (expected.as_str(), record.transitions),
        ("3", 2),
        "a take-back, as a new term"
    );
    n.answer(op, Ok(obs("4", stamped(record, 6))));
    let led = lead(&mut n, &obs("4", stamped(held("n1", 2, 2), 6)));
    assert!(led >= seen + ms(2_000), "led at {led:?}, seen {seen:?}");
}

/// R15, the simulator's seed 7,165,829: while n1's takeover (on version 1) is
/// in flight, its watch shows n0's takeover (version 2); then the takeover
/// times out, and the read it owes shows version 2 again. The lock moved past
/// the takeover's base before the timeout, so that write can never land: an
/// operator's edit naming n1 on n0's record (version 3, count 1, duration 2),
/// adjacent on the watch, is not n1's and is timed like any holder's. Before,
/// the version seen while the write was in flight was never checked against
/// it (only versions seen after), and n1 took the edit back and led at once.
#[test]
fn r15_a_version_seen_while_a_takeover_was_in_flight_rules_the_takeover_out() {
    let mut n = takeover_lost();
    n.watch_active(true);
    let won = obs("2", stamped(held("n0", 2, 1), 3));
    n.watch(WatchEvent::Changed(won.clone()));
    let Action::Get { op } = n.fire_until_action(10) else {
        panic!("a read after the timed-out takeover");
    };
    n.answer(op, Ok(won));
    let edit = obs("3", stamped(held("n1", 2, 1), 3));
    n.watch(WatchEvent::Changed(edit.clone()));
    let seen = n.now;
    let (at, write) = first_write(&mut n, &edit, seen + ms(2_000));
    assert!(
        matches!(&write, Action::Update { expected, .. } if expected.as_str() == "3"),
        "{write:?} at {at:?}"
    );
}
