//! Scenarios for standby (`Elector::set_standby`, docs/design.md §4 "Standby"): a
//! node that follows the lock and times its lease but never writes to take it,
//! and takes a lease it timed past its expiry at once when it campaigns again.
//!
//! Fast profile: 2 s lease, 1.5 s renew deadline, 250 ms retry.

mod support;
use support::*;

/// A watching follower on standby lets an expired lease and an empty holder
/// pass without a write; back from standby, it takes the lease it timed at once
/// (one confirming read), without waiting another lease.
#[test]
fn a_follower_on_standby_never_writes_and_takes_an_expired_lease_at_once_after() {
    let cfg = fast("a");
    let mut n = Node::follower(cfg.clone(), obs("1", held("b", 2, 0)));
    n.watch_active(true);
    n.elector.set_standby(true, n.now);
    assert!(n.elector.is_standby());
    // Well past the lease: no write, not even a read.
    n.advance_to(t(10_000));
    n.no_action();
    // Released by its holder: still nothing.
    n.watch(WatchEvent::Changed(obs("2", LockRecord::default())));
    n.advance_to(t(12_000));
    n.no_action();
    // Held again by another, then that one goes silent past its lease.
    n.watch(WatchEvent::Changed(obs("3", held("c", 2, 1))));
    n.advance_to(t(15_000));
    n.no_action();
    // Back from standby: the lease timed from 12 s expired at 14 s; a read at or
    // past the expiry confirms it, then the takeover.
    n.elector.set_standby(false, n.now);
    n.advance_to(n.now);
    let op = n.get();
    n.answer(op, Ok(obs("3", held("c", 2, 1))));
    let (op, expected, record) = n.update();
    assert_eq!(expected, Version::new("3"));
    assert_eq!(record, acquiring(&cfg, 2));
    n.answer(op, Ok(obs("4", stamped(record, 15))));
    assert!(n.elector.is_leader(n.now));
    assert_eq!(n.now, t(15_000), "no second lease waited");
}

/// A polling follower on standby keeps reading every jittered retry period, and
/// never writes, even over an absent lock.
#[test]
fn a_polling_follower_on_standby_reads_on_schedule_and_never_writes() {
    let cfg = fast("a");
    let mut n = Node::new(cfg.clone());
    n.elector.set_standby(true, n.now);
    let op = n.get();
    n.answer(op, Ok(obs("1", LockRecord::default())));
    n.no_action();
    let mut reads = 0;
    let mut last = n.now;
    while n.now < t(5_000) {
        n.fire();
        match n.has_action().then(|| n.action()) {
            Some(Action::Get { op }) => {
                reads += 1;
                let gap = n.now.saturating_duration_since(last);
                assert!(gap >= cfg.retry_period, "read after {gap:?}");
                last = n.now;
                n.answer(op, Err(LockError::NotFound));
            }
            Some(other) => panic!("a write on standby: {other:?}"),
            None => {}
        }
    }
    assert!(reads >= 5, "{reads} reads in 5 s");
    // Back from standby over the absent lock: a create at once, counting one
    // transition more than the record it saw before the lock went.
    n.elector.set_standby(false, n.now);
    n.advance_to(n.now);
    let (_, record) = n.create();
    assert_eq!(record, acquiring(&cfg, 1));
}

/// Standby does not end a leadership; after a step-down the node does not take
/// the lock again while on standby, however long it waits.
#[test]
fn a_leader_on_standby_leads_until_it_steps_down_then_stays_out() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg, "1");
    n.elector.set_standby(true, n.now);
    let v = n.renew_ok("2");
    assert!(n.elector.is_leader(v), "still leading on standby");
    n.step_down();
    n.work_stopped();
    let (op, _, record) = n.update();
    assert!(record.holder.is_empty(), "released");
    n.answer(op, Ok(obs("3", stamped(record, 2))));
    assert!(!n.elector.is_leader(n.now));
    n.events();
    n.advance_to(t(30_000));
    while n.has_action() {
        match n.action() {
            Action::Get { op } => n.answer(op, Ok(obs("3", LockRecord::default()))),
            other => panic!("a write on standby: {other:?}"),
        }
        n.advance_to(n.now);
    }
    n.no_action();
}

/// A node that stood by and stepped down (a shard handed over) and is then told
/// to campaign again takes the lock back at once: the step-down's pause of one
/// lease is lifted with the standby.
#[test]
fn back_from_standby_after_a_step_down_the_pause_is_lifted() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg.clone(), "1");
    n.watch_active(true);
    n.elector.set_standby(true, n.now);
    n.step_down();
    n.work_stopped();
    let (op, _, record) = n.update();
    assert!(record.holder.is_empty(), "released");
    let released = stamped(record, 2);
    n.answer(op, Ok(obs("2", released.clone())));
    n.events();
    n.advance_to(t(300));
    n.no_action();
    n.elector.set_standby(false, n.now);
    n.advance_to(n.now);
    let (op, expected, record) = n.update();
    assert_eq!(expected, Version::new("2"));
    assert_eq!(record.holder, cfg.identity);
    n.answer(op, Ok(obs("3", stamped(record, 3))));
    assert!(
        n.elector.is_leader(n.now),
        "taken back at once, not a lease later"
    );
}

/// How long another holder may lead by this node's knowledge
/// (`Elector::holder_lease_end`, what the sidecar's `GET /` names a holder
/// by): the lease of the version seen last, timed from the instant this node
/// first saw it; each new version restarts it, a version seen again does not;
/// none once the record is released, none while this node holds the lock.
#[test]
fn another_holders_lease_ends_a_lease_after_its_version_was_first_seen() {
    let cfg = fast("a");
    let mut n = Node::follower(cfg.clone(), obs("1", held("b", 2, 0)));
    n.watch_active(true);
    n.elector.set_standby(true, n.now);
    let start = n.now;
    assert_eq!(n.elector.holder_lease_end(), Some(start + ms(2_000)));
    n.advance_to(start + ms(1_000));
    n.watch(WatchEvent::Changed(obs("2", held("b", 2, 0))));
    assert_eq!(n.elector.holder_lease_end(), Some(start + ms(3_000)));
    n.advance_to(start + ms(1_500));
    n.watch(WatchEvent::Changed(obs("2", held("b", 2, 0))));
    assert_eq!(
        n.elector.holder_lease_end(),
        Some(start + ms(3_000)),
        "the same version seen again"
    );
    n.watch(WatchEvent::Changed(obs("3", LockRecord::default())));
    assert_eq!(n.elector.holder_lease_end(), None, "released");
    n.watch(WatchEvent::Changed(obs("4", held("c", 2, 1))));
    assert_eq!(n.elector.holder_lease_end(), Some(start + ms(3_500)));
    // Past c's lease, this node campaigns again and takes the lock.
    n.advance_to(start + ms(6_000));
    n.elector.set_standby(false, n.now);
    n.advance_to(n.now);
    let op = n.get();
    n.answer(op, Ok(obs("4", held("c", 2, 1))));
    let (op, _, record) = n.update();
    n.answer(op, Ok(obs("5", stamped(record, 6))));
    assert!(n.elector.is_leader(n.now));
    assert_eq!(n.elector.holder_lease_end(), None, "this node holds it");
}
