//! The public test harness (`election_core::testing`) does what its docs say.

use core::time::Duration;

use election_core::testing::{Harness, Reply, ScriptedLock};
use election_core::{
    Config, Event, LockDelay, LockError, LockRecord, OpKind, Role, StopReason, WallTime, Warning,
};

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

#[test]
fn a_lone_candidate_creates_the_lock_and_leads_after_the_strict_delay() {
    let mut h = Harness::new(Config::fast("me")).unwrap();
    assert!(h.run_until(secs(5), |h| h.is_leader()));
    let lease = h.elector.config().lease_duration;
    let started = h
        .events()
        .into_iter()
        .find(|(_, e)| matches!(e, Event::StartedLeading { .. }))
        .expect("started")
        .0;
    assert!(started.since_epoch() >= lease, "led at {started:?}");
    let current = h.lock.register.current().expect("created");
    assert_eq!(&*current.record.holder, "me");
    assert!(h.lock.register.history.len() >= 2, "created, then renewed");
}

#[test]
fn a_hung_call_times_out_and_a_lost_answer_is_found_by_a_read() {
    let mut config = Config::fast("me");
    config.lock_delay = LockDelay::Immediate;
    let mut lock = ScriptedLock::new();
    lock.script(Reply::Hang); // the first read
    lock.script(Reply::Serve); // the read again: absent
    lock.script(Reply::AnswerLost); // the create lands, unanswered
    let mut h = Harness::with_lock(config, lock).unwrap();
    assert!(h.run_until(secs(5), |h| h.is_leader()));
    let events = h.events();
    let timeouts = events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Warning(Warning::RequestTimedOut { .. })))
        .count();
    assert_eq!(timeouts, 2, "{events:?}");
    assert!(
        events.iter().any(|(_, e)| matches!(
            e,
            Event::Warning(Warning::RequestTimedOut {
                op: OpKind::Create,
                ..
            })
        )),
        "{events:?}"
    );
    assert_eq!(
        h.lock.register.history.len(),
        2,
        "one create, one acquisition"
    );
}

#[test]
fn a_deletion_and_a_third_party_write_reach_the_elector_as_watch_events() {
    let mut config = Config::fast("me");
    config.lock_delay = LockDelay::Immediate;
    let mut h = Harness::new(config).unwrap();
    assert!(h.run_until(secs(5), |h| h.is_leader()));
    h.events();
    let deleted = h.lock.delete();
    h.watch(deleted);
    // It stops, re-creates the lock at once (no lock delay here) and leads again.
    let events = h.events();
    let stop = events.iter().position(|(_, e)| {
        matches!(
            e,
            Event::StoppedLeading {
                reason: StopReason::LockDeleted,
                ..
            }
        )
    });
    let start = events
        .iter()
        .position(|(_, e)| matches!(e, Event::StartedLeading { .. }));
    assert!(stop.is_some() && start > stop, "{events:?}");
    assert!(h.is_leader());
    // Then another tool names someone else.
    let other = LockRecord {
        holder: "intruder".into(),
        lease_duration_secs: Some(60),
        ..LockRecord::default()
    };
    let changed = h.lock.put(other, WallTime::new(1, 0));
    h.watch(changed);
    assert_eq!(h.elector.role(), Role::Follower);
    assert_eq!(h.elector.leader().map(|l| &**l), Some("intruder"));
}

#[test]
fn refused_calls_end_leadership_at_the_renew_deadline() {
    let mut h = Harness::new(Config::fast("me")).unwrap();
    assert!(h.run_until(secs(5), |h| h.is_leader()));
    let last = h.elector.last_renew().expect("holding");
    h.lock
        .script_always(Reply::Fail(LockError::transient("connection refused")));
    assert!(h.run_until(secs(5), |h| !h.is_leader()));
    let deadline = last + h.elector.config().renew_deadline;
    assert_eq!(h.now(), deadline, "ends exactly at the deadline");
}

#[test]
fn the_register_is_a_compare_and_swap_store_with_growing_versions() {
    use election_core::testing::Register;
    use election_core::{Action, ReadId, Stamp, Version, WriteId};
    let wall = WallTime::new(7, 0);
    let record = |holder: &str| LockRecord {
        holder: holder.into(),
        renew_time: Stamp::Now,
        ..LockRecord::default()
    };
    let get = Action::Get { op: ReadId(0) };
    let create = |holder: &str| Action::Create {
        op: WriteId(1),
        record: record(holder),
    };
    let update = |expected: &str, holder: &str| Action::Update {
        op: WriteId(2),
        expected: Version::new(expected),
        record: record(holder),
    };
    let mut r = Register::new();
    assert_eq!(r.apply(&get, wall), Err(LockError::NotFound));
    assert_eq!(r.apply(&update("1", "a"), wall), Err(LockError::NotFound));
    let created = r.apply(&create("a"), wall).expect("created");
    assert_eq!(created.version, Version::new("1"));
    assert_eq!(
        created.record.renew_time,
        Stamp::At(wall),
        "stamped when served"
    );
    assert_eq!(r.apply(&create("b"), wall), Err(LockError::AlreadyExists));
    assert_eq!(r.apply(&update("0", "b"), wall), Err(LockError::Conflict));
    let updated = r.apply(&update("1", "b"), wall).expect("updated");
    assert_eq!(updated.version, Version::new("2"));
    assert_eq!(r.apply(&get, wall), Ok(updated));
    assert_eq!(r.delete(), Version::new("3"), "a deletion takes a version");
    assert_eq!(r.apply(&get, wall), Err(LockError::NotFound));
    assert_eq!(r.last_version(), 3);
    let holders: Vec<&str> = r.records().map(|rec| &*rec.holder).collect();
    assert_eq!(holders, ["a", "b"]);
    assert_eq!(r.history.len(), 3);
}
