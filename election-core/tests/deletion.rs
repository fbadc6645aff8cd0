//! FAULTS A4: the lock deleted under its holder. A deletion the watch reports is
//! the server's own word that nothing is left to lead: the holder stops at that
//! instant, with no read first and no release write, whatever its other calls are
//! doing, and then follows the rules of an absent lock (the strict lock delay for
//! its own create).

mod support;

use election_core::{Action, Event, LockError, Role, StopReason, Version, WatchEvent};
use support::*;

/// A leader of term 1@10 (it took over an empty record, so no lock delay), with
/// the strict lock delay for any later create.
fn leader() -> Node {
    let mut n = Node::follower(fast("a"), obs("9", held("", 1, 0)));
    let (op, _, record) = n.update();
    n.answer(op, Ok(obs("10", stamped(record, 1))));
    assert!(n.elector.is_leader(n.now));
    n.events();
    n
}

/// The leader's record at a new `version`, as a label added by hand leaves it.
fn labelled(n: &Node, version: &str) -> election_core::Observation {
    let record = n
        .elector
        .observed()
        .expect("the leader's record")
        .record
        .clone();
    obs(version, record)
}

fn deleted_at(v: &str) -> WatchEvent {
    WatchEvent::Deleted(Some(Version::new(v)))
}

/// The stop the deletion must report, alone (no warning, no other event).
fn assert_stopped_by_deletion(n: &mut Node) {
    assert_eq!(
        n.events(),
        vec![Event::StoppedLeading {
            term: term(1, "10"),
            reason: StopReason::LockDeleted
        }]
    );
    assert!(
        !n.elector.is_leader(n.now),
        "is_leader turns false at the deletion"
    );
    assert_eq!(n.elector.role(), Role::Follower);
    assert_eq!(n.elector.term(), None);
}

/// After the deletion the node never writes a release (the lock is gone) and
/// never leads before one lease duration from its own create's answer (the
/// strict delay): it campaigns with a create, then leads once the delay is over.
fn assert_recreates_without_release(n: &mut Node, deletion: election_core::Instant) {
    for _ in 0..200 {
        match n.fire_until_action(10) {
            Action::Update { record, .. } => {
                panic!("a write to the deleted lock at {:?}: {record:?}", n.now)
            }
            Action::Get { op } => n.answer(op, Err(LockError::NotFound)),
            Action::Create { op, record } => {
                n.answer(op, Ok(obs("30", stamped(record, 3))));
                break;
            }
        }
    }
    assert!(n.now >= deletion);
    let limit = n.now + n.elector.config().lease_duration;
    assert_eq!(
        n.elector.role(),
        Role::Acquiring,
        "strict: the creator waits"
    );
    for version in 31.. {
        assert!(
            !n.elector.is_leader(n.now),
            "led at {:?} before {limit:?}",
            n.now
        );
        match n.fire_until_action(10) {
            Action::Update { op, record, .. } => {
                n.answer(op, Ok(obs(&version.to_string(), stamped(record, 4))))
            }
            other => panic!("unexpected {other:?}"),
        }
        if n.now >= limit {
            break;
        }
    }
    assert!(n.elector.is_leader(n.now), "leads once the delay is over");
}

/// The chaos run's case: a leader's confirming read (owed for another's edit of
/// the record) is in flight when the watch reports the deletion. Whatever that
/// read then does (429 with Retry-After, 500, time out, or never answer), the
/// leader stopped at the deletion.
#[test]
fn a4_watch_deletion_stops_the_leader_whatever_its_read_does() {
    for (case, answer) in read_failures() {
        let mut n = leader();
        // A label added by hand (a version that still names the leader): the
        // leader owes a read and sends it.
        n.advance(ms(50));
        n.watch(WatchEvent::Changed(labelled(&n, "11")));
        let read = n.get();
        n.advance(ms(10));
        let deletion = n.now;
        n.watch(deleted_at("12"));
        assert_stopped_by_deletion(&mut n);
        n.end_read(read, case, answer);
        assert!(!n.elector.is_leader(n.now), "{case}");
        assert!(n.started().is_none(), "{case}: no new start");
        assert_recreates_without_release(&mut n, deletion);
    }
}

/// An absence with no version (the watch found the lock absent when it
/// started) may predate this node's own create: a holder confirms it by a read
/// first, and stops on the read's `NotFound`.
#[test]
fn a4_absence_reported_at_watch_start_is_confirmed_by_a_read() {
    let mut n = leader();
    n.advance(ms(100));
    n.watch(WatchEvent::Deleted(None));
    assert!(n.elector.is_leader(n.now), "not yet: it reads first");
    let read = n.get();
    let deletion = n.now;
    n.answer(read, Err(LockError::NotFound));
    assert_stopped_by_deletion(&mut n);
    assert_recreates_without_release(&mut n, deletion);
    // The same absence while the lock is in fact ours: the read shows it, and
    // leadership goes on.
    let mut n = leader();
    n.watch(WatchEvent::Deleted(None));
    let read = n.get();
    let ours = n.elector.observed().cloned().expect("ours");
    n.answer(read, Ok(ours));
    assert!(n.elector.is_leader(n.now));
    n.no_events();
}

/// A replayed deletion, older than the version the leader wrote since (a watch
/// resumed from before the lock was re-created), is not news.
#[test]
fn a4_replayed_deletion_older_than_the_lock_is_ignored() {
    let mut n = leader();
    n.advance(ms(100));
    n.watch(deleted_at("5"));
    assert!(n.elector.is_leader(n.now));
    n.no_events();
    // A follower ignores it too: it keeps timing the lease it saw.
    let mut f = Node::follower(fast("b"), obs("10", held("a", 2, 1)));
    f.watch_active(true);
    f.watch(deleted_at("7"));
    f.no_action();
    assert_eq!(
        f.elector.observed().map(|o| o.version.clone()),
        Some(Version::new("10"))
    );
}

/// Draining (stepping down) when the lock is deleted: the stop is reported at
/// once, no release is written, and the host's later `work_stopped` does nothing.
#[test]
fn a4_watch_deletion_while_draining_stops_at_once_without_release() {
    let mut n = leader();
    n.step_down();
    assert!(matches!(
        n.events().as_slice(),
        [Event::Draining {
            reason: StopReason::SteppedDown
        }]
    ));
    assert!(n.elector.is_leader(n.now), "draining still leads");
    n.advance(ms(100));
    n.watch(deleted_at("12"));
    assert_stopped_by_deletion(&mut n);
    n.work_stopped();
    n.no_events();
    n.no_action();
}

/// A renew is in flight when the deletion is reported, and its success arrives
/// afterwards (the write landed just before the deletion): it must not bring
/// leadership back, nor make the lock look present again.
#[test]
fn a4_late_renew_success_after_the_deletion_does_not_resurrect_leadership() {
    let mut n = leader();
    let (op, _, record) = n.fire_until_action(4).into_update();
    let deletion = n.now;
    n.watch(deleted_at("12"));
    assert_stopped_by_deletion(&mut n);
    n.answer(op, Ok(obs("11", stamped(record, 2))));
    n.no_events();
    assert!(!n.elector.is_leader(n.now));
    assert_eq!(n.elector.role(), Role::Follower);
    // The lock is still known absent: the next write is a create.
    assert_recreates_without_release(&mut n, deletion);
}

/// The same late success for a follower's takeover: the write landed before a
/// deletion the watch already reported, so there is nothing to hold.
#[test]
fn a4_acquisition_answered_after_the_deletion_is_not_held() {
    let mut n = Node::follower(fast("a"), obs("9", held("", 1, 0)));
    let (op, _, record) = n.update();
    n.watch(deleted_at("11"));
    n.answer(op, Ok(obs("10", stamped(record, 1))));
    assert_eq!(n.elector.role(), Role::Follower);
    assert!(n.started().is_none());
    assert!(matches!(n.fire_until_action(4), Action::Create { .. }));
}

/// A read answered `NotFound` while leading ends leadership at once, as does a
/// renew answered `NotFound` (`a4_lock_deleted_while_leading_ends_leadership_and_recreates`).
#[test]
fn a4_read_not_found_while_leading_stops_at_once() {
    let mut n = leader();
    n.advance(ms(50));
    n.watch(WatchEvent::Changed(labelled(&n, "11")));
    let read = n.get();
    let deletion = n.now;
    n.answer(read, Err(LockError::NotFound));
    assert_stopped_by_deletion(&mut n);
    assert_recreates_without_release(&mut n, deletion);
}

/// Shutting down while the release write is in flight, the lock is deleted: the
/// node ends without re-trying the release.
#[test]
fn a4_watch_deletion_during_release_ends_the_shutdown() {
    let mut n = leader();
    n.shutdown();
    n.work_stopped();
    n.events();
    let (op, _, record) = n.fire_until_action(4).into_update();
    assert_eq!(&*record.holder, "", "the release");
    n.watch(deleted_at("12"));
    n.answer(op, Err(LockError::NotFound));
    assert!(n.events().contains(&Event::Terminated));
    n.no_action();
}
