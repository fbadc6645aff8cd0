//! Coordinated leader election (FAULTS C1–C4): a coordinator writes the holder.
//! A candidate never creates, takes or asks; it claims an assignment naming it
//! at once, leads no earlier than one lease after the last version it saw held
//! by another (or after a version that may not follow directly), and gives the
//! lock back by a release when the record names a `preferredHolder`.
//!
//! Fast profile: 2 s lease, 1.5 s renew deadline, 250 ms retry.

mod support;

use election_core::{ConfigError, Mode};
use support::*;

fn coordinated(id: &str) -> Config {
    fast(id).coordinated()
}

/// What the coordinator writes when it gives the lock to `holder` over `prev`:
/// the holder, its default duration, no acquire time, no preferred holder, the
/// transitions kept.
fn assigned(holder: &str, prev: &LockRecord) -> LockRecord {
    LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(15),
        acquire_time: Stamp::Unset,
        renew_time: Stamp::At(WallTime::new(1_800_000_000, 0)),
        transitions: prev.transitions,
        priority: None,
        handover: None,
        strategy: Some("OldestEmulationVersion".into()),
    }
}

/// A watching follower of "b"'s lease (version 10, seen at 0): its watch
/// started from no version, so it delivered the current state first.
fn watching_follower(id: &str) -> Node {
    let mut n = Node::follower(coordinated(id), obs("10", held("b", 2, 3)));
    n.watch_active(true);
    n.watch(WatchEvent::Changed(obs("10", held("b", 2, 3))));
    n.events();
    n
}

/// A watching follower assigned the lock (version 12) 2.1 s after it last saw
/// "b" renew (so b is past by its own clock): its claim is in flight (the write
/// and its record returned).
fn claiming(id: &str) -> (Node, WriteId, LockRecord) {
    let mut n = watching_follower(id);
    n.advance(ms(2_100));
    n.watch(WatchEvent::Changed(obs(
        "12",
        assigned(id, &held("b", 2, 3)),
    )));
    let (op, _, claim) = n.update();
    (n, op, claim)
}

/// [`claiming`], the claim answered at version 13: the node leads. Its record
/// as stored is returned too.
fn claimed_leader(id: &str) -> (Node, LockRecord) {
    let (mut n, op, claim) = claiming(id);
    let mine = stamped(claim, 5);
    n.answer(op, Ok(obs("13", mine.clone())));
    assert!(n.elector.is_leader(n.now), "leads at once");
    (n, mine)
}

/// Answers every renew of a holder still in its wait (versions from `version`
/// on) until it starts leading; the instant it reported `StartedLeading`.
fn renew_until_leading(n: &mut Node, mut version: u32) -> Instant {
    while n.started().is_none() {
        let Action::Update { op, record, .. } = n.fire_until_action(10) else {
            panic!("a renew expected at {:?}", n.now);
        };
        n.answer(op, Ok(obs(&version.to_string(), stamped(record, 6))));
        version += 1;
    }
    n.log
        .iter()
        .find(|(_, e)| matches!(e, Event::StartedLeading { .. }))
        .expect("started")
        .0
}

/// A claimed leader that stepped down (at the instant returned) and drained:
/// its release write is in flight (the write and its record returned).
fn releasing_after_a_step_down(id: &str) -> (Node, Instant, WriteId, LockRecord) {
    let (mut n, _) = claimed_leader(id);
    let stepped_down_at = n.now;
    n.step_down();
    n.work_stopped();
    n.events();
    let (op, _, release) = n.fire_until_action(10).into_update();
    (n, stepped_down_at, op, release)
}

/// The node's next action claims "a"'s assignment at `version`, and not
/// before its step-down pause (one 2 s lease from `stepped_down_at`) is over.
fn claims_after_the_pause(n: &mut Node, stepped_down_at: Instant, version: &str) {
    let (_, expected, claim) = n.fire_until_action(10).into_update();
    assert!(
        n.now >= stepped_down_at + ms(2_000),
        "claimed during the step-down pause, at {:?}",
        n.now
    );
    assert_eq!(expected, Version::new(version));
    assert_eq!(claim.holder, "a".into());
}

/// C1: whatever the lock looks like (absent, released, held and long expired,
/// held by a lower priority), a coordinated follower writes nothing: with a
/// watch it waits for events, without one it only reads.
#[test]
fn c1_a_coordinated_follower_never_creates_takes_or_asks() {
    let released = {
        let mut r = held("", 1, 3);
        r.acquire_time = Stamp::Unset;
        r
    };
    for (case, answer) in [
        ("absent", Err(LockError::NotFound)),
        ("released", Ok(obs("10", released))),
        ("held by another", Ok(obs("10", held("b", 2, 3)))),
    ] {
        // Polling: reads, never a write, over many leases.
        let mut n = Node::new(coordinated("a"));
        for _ in 0..200 {
            match n.fire_until_action(10_000) {
                Action::Get { op } => n.answer(op, answer.clone()),
                other => panic!("{case}: a coordinated follower wrote {other:?}"),
            }
        }
        assert!(n.now > t(20_000), "{case}: ran for many leases");
        assert_eq!(n.elector.role(), Role::Follower, "{case}");
        // Watching: after the first read nothing at all, not even at expiry.
        let mut n = Node::new(coordinated("a"));
        n.watch_active(true);
        let op = n.get();
        n.answer(op, answer.clone());
        n.advance(ms(60_000));
        n.no_action();
        assert_eq!(n.elector.role(), Role::Follower, "{case}");
    }
}

/// C1: the modes that would race the coordinator are refused with a typed error.
#[test]
fn c1_priority_and_steal_are_refused_in_coordinated_mode() {
    let err = Elector::new(coordinated("a").priority(5), t(0)).unwrap_err();
    assert_eq!(err, ConfigError::PreemptionInCoordinatedMode);
    let mut c = coordinated("a");
    c.preemption = Preemption::Steal;
    assert_eq!(c.validate(), Err(ConfigError::PreemptionInCoordinatedMode));
    assert_eq!(fast("a").mode, Mode::Classic, "classic by default");
    assert!(coordinated("a").validate().is_ok());
}

/// C2: an assignment that comes a lease after the last renewal of the holder the
/// node saw (the coordinator's clock agrees with ours) is claimed at once, as a
/// new term with the coordinator's strategy kept, and the node leads at once.
#[test]
fn c2_an_assignment_is_claimed_at_once_and_leads_when_the_last_holder_is_past() {
    let mut n = watching_follower("a");
    n.advance(ms(1_000));
    n.watch(WatchEvent::Changed(obs("11", held("b", 2, 3))));
    n.advance(ms(2_100)); // b's renewal at 1 s expired at 3 s by local observation
    let prev = held("b", 2, 3);
    n.watch(WatchEvent::Changed(obs("12", assigned("a", &prev))));
    let (op, expected, claim) = n.update();
    assert_eq!(expected, Version::new("12"));
    assert_eq!(claim.holder, "a".into());
    assert_eq!(claim.transitions, 4, "a new term");
    assert_eq!(claim.acquire_time, Stamp::Now);
    assert_eq!(claim.strategy.as_deref(), Some("OldestEmulationVersion"));
    assert_eq!(claim.lease_duration_secs, Some(2), "its own duration");
    n.answer(op, Ok(obs("13", stamped(claim, 5))));
    assert!(n.elector.is_leader(n.now), "leads at once");
    assert_eq!(n.started(), Some(&term(4, "13")));
}

/// C2: a coordinator whose clock runs ahead assigns the lock 0.5 s after the
/// holder's last renewal. The node claims it at once but leads only once the
/// holder's lease is over by its own observation (2 s after it saw that renewal).
#[test]
fn c2_an_early_assignment_leads_only_a_lease_after_the_last_holder_seen() {
    let mut n = watching_follower("a");
    n.advance(ms(1_000));
    n.watch(WatchEvent::Changed(obs("11", held("b", 2, 3))));
    let last_seen = n.now;
    n.advance(ms(500));
    n.watch(WatchEvent::Changed(obs(
        "12",
        assigned("a", &held("b", 2, 3)),
    )));
    let (op, _, claim) = n.update();
    n.answer(op, Ok(obs("13", stamped(claim, 5))));
    assert_eq!(
        n.elector.role(),
        Role::Acquiring,
        "holds, does not lead yet"
    );
    assert!(!n.elector.is_leader(n.now));
    // It renews meanwhile, and leads at the end of b's lease.
    let started_at = renew_until_leading(&mut n, 14);
    assert_eq!(started_at, last_seen + ms(2_000));
}

/// C2: a version that may not directly follow the one seen before it (read by
/// a poll, or delivered first after the watch broke) may hide a holder's
/// renewals: the node leads one lease after it saw the assignment.
#[test]
fn c2_an_assignment_seen_after_a_gap_leads_a_lease_later() {
    for case in ["polling", "watch broke"] {
        let mut n = watching_follower("a");
        n.advance(ms(3_000)); // b's lease is long over by local observation
        let assignment = obs("20", assigned("a", &held("b", 2, 3)));
        match case {
            "polling" => {
                n.watch_active(false);
                let op = n.get();
                n.answer(op, Ok(assignment));
            }
            _ => {
                n.watch_active(false);
                let op = n.get();
                n.answer(op, Ok(obs("10", held("b", 2, 3))));
                n.watch_active(true);
                n.watch(WatchEvent::Changed(assignment));
            }
        }
        let seen = n.now;
        let (op, _, claim) = n.update();
        n.answer(op, Ok(obs("21", stamped(claim, 5))));
        assert_eq!(n.elector.role(), Role::Acquiring, "{case}");
        let started_at = renew_until_leading(&mut n, 22);
        assert_eq!(started_at, seen + ms(2_000), "{case}");
    }
}

/// C3: the holder's own release, seen by the watch right after its last
/// renewal, then the assignment: nobody else can lead, so the node leads at once
/// (a planned handover costs no lease). The follower has watched "b" for longer
/// than a lease, so nothing from before b's run is still running.
#[test]
fn c3_an_assignment_right_after_a_release_leads_at_once() {
    let mut n = watching_follower("a");
    n.advance(ms(2_500));
    n.watch(WatchEvent::Changed(obs("11", held("b", 2, 3))));
    n.advance(ms(100));
    let mut released = held("", 1, 3);
    released.renew_time = Stamp::At(WallTime::new(1_700_000_001, 0));
    n.watch(WatchEvent::Changed(obs("12", released.clone())));
    n.no_action();
    n.advance(ms(30));
    n.watch(WatchEvent::Changed(obs("13", assigned("a", &released))));
    let (op, _, claim) = n.update();
    n.answer(op, Ok(obs("14", stamped(claim, 5))));
    assert!(n.elector.is_leader(n.now), "leads at once");
}

/// C3: a release ends only its own holder's part. "z" renewed 0.3 s ago; then
/// "c" took over (a client-go candidate leads at once on an assignment) and
/// released at once. The node claims the assignment that follows, but leads
/// only once z's lease is over by its own clock.
#[test]
fn c3_a_release_ends_only_the_releasers_part() {
    let mut n = watching_follower("a");
    n.advance(ms(2_500));
    n.watch(WatchEvent::Changed(obs("11", held("z", 2, 3))));
    let z_seen = n.now;
    n.advance(ms(100));
    n.watch(WatchEvent::Changed(obs("12", held("c", 2, 3))));
    n.advance(ms(100));
    let released = held("", 1, 3);
    n.watch(WatchEvent::Changed(obs("13", released.clone())));
    n.advance(ms(100));
    n.watch(WatchEvent::Changed(obs("14", assigned("a", &released))));
    let (op, _, claim) = n.update();
    n.answer(op, Ok(obs("15", stamped(claim, 5))));
    assert_eq!(n.elector.role(), Role::Acquiring, "z may still lead");
    let started_at = renew_until_leading(&mut n, 16);
    assert_eq!(started_at, z_seen + ms(2_000));
}

/// C3: the coordinator names a better candidate as `preferredHolder` on the
/// leader's record (every stamp kept): the leader drains, reports, and releases,
/// so that the coordinator can give the lock on at once.
#[test]
fn c3_a_preferred_holder_ends_the_term_by_a_release() {
    let (mut n, mine) = claimed_leader("a");
    assert!(n.elector.is_leader(n.now));
    n.events();
    n.advance(ms(50));
    let mut preferred = mine.clone();
    preferred.handover = Some(Handover {
        to: "c".into(),
        priority: None,
    });
    n.watch(WatchEvent::Changed(obs("14", preferred.clone())));
    let op = n.get(); // a foreign edit that keeps the name is read first
    n.answer(op, Ok(obs("14", preferred)));
    assert_eq!(
        n.events(),
        vec![Event::Draining {
            reason: StopReason::Preempted { by: "c".into() }
        }]
    );
    // The renew owed for the adopted version, then the release.
    let (op, expected, renew) = n.update();
    assert_eq!((expected, renew.holder.as_ref()), (Version::new("14"), "a"));
    n.answer(op, Ok(obs("15", stamped(renew, 6))));
    n.work_stopped();
    assert!(matches!(n.events()[..], [Event::StoppedLeading { .. }]));
    let (_, expected, release) = n.fire_until_action(10).into_update();
    assert_eq!(expected, Version::new("15"));
    assert_eq!(release.holder, "".into());
    assert_eq!(release.lease_duration_secs, Some(1));
}

/// The record `mine` with the coordinator's `preferredHolder` naming `to` (every
/// stamp of the holder kept: a foreign edit).
fn preferring(mine: &LockRecord, to: &str) -> LockRecord {
    let mut preferred = mine.clone();
    preferred.handover = Some(Handover {
        to: to.into(),
        priority: None,
    });
    preferred
}

/// The leader `a` after it read the coordinator's `preferredHolder` `b1` at
/// version 14 (and so drains); with its term and the record read.
fn preempted_by_b1() -> (Node, Term, LockRecord) {
    let (mut n, mine) = claimed_leader("a");
    let term = n.elector.term().cloned().expect("leads");
    n.events();
    n.advance(ms(50));
    let preferred = preferring(&mine, "b1");
    n.watch(WatchEvent::Changed(obs("14", preferred.clone())));
    let op = n.get();
    n.answer(op, Ok(obs("14", preferred.clone())));
    (n, term, preferred)
}

/// Answers the holder's lock calls until it has released and terminated: each
/// write as stored at the next version from `version` on, a read with the record
/// last stored (`lock` at first). Returns the release's record. No event but the
/// release's `LeaderChanged` and `Terminated` may come meanwhile.
fn release_and_terminate(n: &mut Node, lock: &LockRecord, mut version: u32) -> LockRecord {
    let mut last = lock.clone();
    for _ in 0..10 {
        match n.fire_until_action(10) {
            Action::Get { op } => n.answer(op, Ok(obs(&(version - 1).to_string(), last.clone()))),
            Action::Update { op, record, .. } => {
                let released = record.holder.is_empty();
                last = stamped(record, 7);
                n.answer(op, Ok(obs(&version.to_string(), last.clone())));
                version += 1;
                if released {
                    assert_eq!(
                        n.events(),
                        vec![Event::LeaderChanged { leader: None }, Event::Terminated]
                    );
                    assert!(n.elector.is_terminated());
                    return last;
                }
            }
            other => panic!("a renew or the release expected, got {other:?}"),
        }
        n.no_events();
    }
    panic!("no release");
}

/// C3: a stop the user asked for is a shutdown, whatever arrived
/// before it. The sidecar withdraws its candidacy before it shuts the elector
/// down, so the coordinator's `preferredHolder` can come first: the leader
/// drains for the preemption, then `shutdown` is asked while the work still
/// drains. The stop that follows is reported as
/// `ShutDown` (an INFO "shut down", not a WARN "preempted"), and nothing else
/// changes: no second `Draining`, still leading until the work ends, the
/// release written as the preemption asked.
#[test]
fn c3_shutdown_asked_while_draining_for_a_preferred_holder_is_reported_as_shut_down() {
    let (mut n, term, preferred) = preempted_by_b1();
    assert_eq!(
        n.events(),
        vec![Event::Draining {
            reason: StopReason::Preempted { by: "b1".into() }
        }]
    );
    n.advance(ms(10));
    n.shutdown();
    n.no_events();
    assert!(
        n.elector.is_leader(n.now),
        "still leads until the work has ended"
    );
    assert_eq!(n.elector.role(), Role::Draining);
    n.advance(ms(20));
    n.work_stopped();
    assert_eq!(
        n.events(),
        vec![Event::StoppedLeading {
            term,
            reason: StopReason::ShutDown
        }]
    );
    assert!(!n.elector.is_leader(n.now));
    let release = release_and_terminate(&mut n, &preferred, 15);
    assert_eq!(release.lease_duration_secs, Some(1));
    assert_eq!(release.handover, preferred.handover, "the request is kept");
}

/// The same when the work never ends: the release budget ends the leadership,
/// reported as `ShutDown`, and the lease is left to expire.
#[test]
fn c3_shutdown_asked_while_draining_for_a_preferred_holder_is_shut_down_at_the_budget() {
    let (mut n, term, _) = preempted_by_b1();
    n.events();
    n.shutdown();
    let mut version = 15;
    while !n.elector.is_terminated() {
        if !n.has_action() {
            n.fire();
            continue;
        }
        match n.action() {
            Action::Update { op, record, .. } => {
                assert_eq!(record.holder.as_ref(), "a", "no release under running work");
                n.answer(op, Ok(obs(&version.to_string(), stamped(record, 7))));
                version += 1;
            }
            other => panic!("a renew expected, got {other:?}"),
        }
    }
    assert_eq!(
        n.events_no_warnings(),
        vec![
            Event::StoppedLeading {
                term,
                reason: StopReason::ShutDown
            },
            Event::Terminated
        ]
    );
}

/// The other order (shutdown first, the `preferredHolder` during its drain)
/// keeps the shutdown's reason too.
#[test]
fn c3_a_preferred_holder_seen_during_a_shutdown_drain_is_reported_as_shut_down() {
    let (mut n, mine) = claimed_leader("a");
    let term = n.elector.term().cloned().expect("leads");
    n.events();
    n.advance(ms(50));
    n.shutdown();
    assert_eq!(
        n.events(),
        vec![Event::Draining {
            reason: StopReason::ShutDown
        }]
    );
    n.advance(ms(10));
    let preferred = preferring(&mine, "b1");
    n.watch(WatchEvent::Changed(obs("14", preferred.clone())));
    let op = n.get();
    n.answer(op, Ok(obs("14", preferred.clone())));
    n.no_events();
    n.advance(ms(20));
    n.work_stopped();
    assert_eq!(
        n.events(),
        vec![Event::StoppedLeading {
            term,
            reason: StopReason::ShutDown
        }]
    );
    release_and_terminate(&mut n, &preferred, 15);
}

/// A real loss during a shutdown drain is not a shutdown: another holder's
/// version ends leadership at once, as early as ever, reported as the loss it
/// is (the operator must learn that the work may have outlived the lease), and
/// nothing is released.
#[test]
fn c3_another_holder_seen_during_a_shutdown_drain_is_reported_as_the_loss() {
    let (mut n, term, preferred) = preempted_by_b1();
    n.events();
    n.shutdown();
    n.advance(ms(10));
    n.watch(WatchEvent::Changed(obs("15", assigned("b1", &preferred))));
    assert_eq!(
        n.events(),
        vec![
            Event::StoppedLeading {
                term,
                reason: StopReason::ObservedOtherHolder {
                    holder: "b1".into()
                }
            },
            Event::LeaderChanged {
                leader: Some("b1".into())
            },
        ]
    );
    assert!(!n.elector.is_leader(n.now), "stops at once");
    n.work_stopped();
    n.no_events();
    // The renew owed for the adopted version was in flight: once it failed
    // (b1's write made it conflict), the node terminates without a release.
    let (op, _, renew) = n.update();
    assert_eq!(renew.holder.as_ref(), "a");
    n.answer(op, Err(LockError::Conflict));
    assert_eq!(n.events(), vec![Event::Terminated]);
    n.no_action();
}

/// C4: a version naming this node, with an acquire time, that it did not write
/// (its own previous life, or a twin) is no assignment: it is timed like another
/// holder's lease and taken back after a read past its expiry.
#[test]
fn c4_a_record_naming_this_node_that_it_did_not_write_is_timed_first() {
    let mut n = Node::new(coordinated("a"));
    n.watch_active(true);
    let op = n.get();
    n.answer(op, Ok(obs("10", held("a", 2, 3))));
    n.no_action();
    let (at, write) = n.campaign(|_| Ok(obs("10", held("a", 2, 3))), 10);
    assert!(at >= t(2_000), "taken back only after a lease: {at:?}");
    let (_, expected, record) = write.into_update();
    assert_eq!(expected, Version::new("10"));
    assert_eq!(record.transitions, 4);
}

/// C2: a read sent before the coordinator created the lock, answered "not
/// found" after the watch told of the create, is older news: the follower keeps
/// the assignment and claims it (it would otherwise wait for a change that
/// never comes, since the coordinator leaves an assignment to the best
/// candidate as it is).
#[test]
fn c2_a_stale_not_found_does_not_hide_the_coordinators_create() {
    let mut n = Node::new(coordinated("a"));
    n.watch_active(true);
    let read = n.get();
    n.advance(ms(10));
    n.watch(WatchEvent::Changed(obs(
        "5",
        assigned("a", &LockRecord::default()),
    )));
    n.no_action(); // the read is still in flight
    n.advance(ms(10));
    n.answer(read, Err(LockError::NotFound));
    let (_, expected, claim) = n.fire_until_action(10).into_update();
    assert_eq!(expected, Version::new("5"));
    assert_eq!(claim.holder, "a".into());
}

/// C3: the coordinator gives the lock on over the leader's release before the
/// release's answer comes back. The watch's event (a held record, so never the
/// release's echo) is read after the release: the view is the assignment, not
/// the release.
#[test]
fn c3_an_assignment_that_overtakes_the_release_answer_is_read() {
    let (mut n, _) = claimed_leader("a");
    n.events();
    n.shutdown();
    n.work_stopped();
    n.events();
    let (op, _, release) = n.fire_until_action(10).into_update();
    assert_eq!(release.holder, "".into());
    n.advance(ms(5));
    let given_on = obs("15", assigned("c", &release));
    n.watch(WatchEvent::Changed(given_on.clone()));
    n.answer(op, Ok(obs("14", stamped(release, 6))));
    assert_eq!(
        n.elector.role(),
        Role::Terminated,
        "a shutdown ends with the release"
    );
    // A step-down keeps running: the held record it missed is read.
    let (mut n, _) = claimed_leader("a");
    n.step_down();
    n.work_stopped();
    n.events();
    let (op, _, release) = n.fire_until_action(10).into_update();
    n.watch(WatchEvent::Changed(obs("15", assigned("c", &release))));
    n.answer(op, Ok(obs("14", stamped(release, 6))));
    let read = n.get();
    n.answer(read, Ok(given_on));
    assert_eq!(n.elector.leader().map(|l| &**l), Some("c"));
}

/// C3: as above, but the coordinator gives the lock back to the node that
/// stepped down, and the read that should show it fails. The read is still
/// owed: the node reads again (no change would ever come by the watch, since
/// the coordinator waits for the claim) and claims the assignment once its
/// step-down pause is over. Found by the simulator (seeds 1176323, 1607794).
#[test]
fn c3_a_failed_read_after_the_release_is_read_again_and_the_assignment_claimed() {
    let (mut n, stepped_down_at, op, release) = releasing_after_a_step_down("a");
    n.watch(WatchEvent::Changed(obs("15", assigned("a", &release))));
    n.answer(op, Ok(obs("14", stamped(release, 6))));
    let read = n.get();
    n.answer(read, Err(LockError::transient("503")));
    let Action::Get { op: again } = n.fire_until_action(10) else {
        panic!("the failed read is not read again");
    };
    let given_back = obs("15", assigned("a", &held("", 1, 3)));
    n.answer(again, Ok(given_back));
    claims_after_the_pause(&mut n, stepped_down_at, "15");
}

/// C3: the Lease is deleted while the release is in flight, and the
/// coordinator re-creates it naming the node again before the release's answer
/// ("not found") comes back. That answer is older news than the re-created
/// Lease the watch showed: the node keeps the newer view and claims the
/// assignment once its step-down pause is over, instead of waiting on an
/// absent lock for a change that never comes. Found by the simulator (seed
/// 1375262).
#[test]
fn c3_a_release_answered_not_found_after_a_recreated_assignment_keeps_the_assignment() {
    let (mut n, stepped_down_at, op, _) = releasing_after_a_step_down("a");
    n.advance(ms(5));
    n.watch(WatchEvent::Deleted(Some(Version::new("14"))));
    n.advance(ms(5));
    n.watch(WatchEvent::Changed(obs(
        "15",
        assigned("a", &LockRecord::default()),
    )));
    n.answer(op, Err(LockError::NotFound));
    claims_after_the_pause(&mut n, stepped_down_at, "15");
}

/// C2: the lock was deleted under the leader and the coordinator re-created it
/// naming the same node. The leader's renew conflicts and its read shows an
/// assignment (no acquire time), not a twin: the term ends as `Reassigned`, no
/// collision is reported, and the assignment is claimed as a new term.
#[test]
fn c2_a_leader_reassigned_by_the_coordinator_ends_its_term_and_claims_anew() {
    let (mut n, _) = claimed_leader("a");
    assert!(n.elector.is_leader(n.now));
    n.events();
    let (op, _, _) = n.fire_until_action(10).into_update();
    n.answer(op, Err(LockError::Conflict));
    let read = n.get();
    n.answer(read, Ok(obs("20", assigned("a", &LockRecord::default()))));
    assert_eq!(
        n.events(),
        vec![Event::StoppedLeading {
            term: term(4, "13"),
            reason: StopReason::Reassigned
        }]
    );
    let (_, expected, again) = n.fire_until_action(10).into_update();
    assert_eq!(expected, Version::new("20"));
    assert_eq!(again.transitions, 5, "a new term, past every count seen");
}

/// C2: the watch shows the claim's own write before the claim's answer comes
/// back. The echo names this node with an acquire time, as a twin's write
/// would, but a write of its own is in flight: it is not taken for another
/// holder, and the node leads at once when the answer comes.
#[test]
fn c2_the_claims_watch_echo_before_its_answer_does_not_delay_leading() {
    let (mut n, op, claim) = claiming("a");
    let mine = obs("13", stamped(claim, 5));
    n.advance(ms(2));
    n.watch(WatchEvent::Changed(mine.clone()));
    n.advance(ms(1));
    n.answer(op, Ok(mine));
    assert!(n.elector.is_leader(n.now), "leads at once");
}

/// R14: a gap hides any holder this node has seen, with the longest lease it
/// saw. A polling node (lease 2 s) reads at 0 that "x" holds the Lease with a
/// 6 s lease; it is paused until 8.1 s while x renews (last just before 8.1 s)
/// and then loses the API; the coordinator, judging x expired by its skewed
/// stamps, assigns this node, which reads the assignment at 8.1 s. x may believe
/// until 6 s after its last renew: the node leads no earlier than 8.1 s + 6 s.
#[test]
fn r14_an_assignment_read_after_a_gap_waits_the_longest_lease_seen() {
    let mut n = Node::follower(coordinated("a"), obs("10", held("x", 6, 3)));
    n.advance_to(t(8_100));
    let op = n.get();
    n.answer(op, Ok(obs("30", assigned("a", &held("x", 6, 3)))));
    let seen = n.now;
    let (op, _, claim) = n.update();
    n.answer(op, Ok(obs("31", stamped(claim, 5))));
    assert_eq!(n.elector.role(), Role::Acquiring);
    let started_at = renew_until_leading(&mut n, 32);
    assert_eq!(started_at, seen + ms(6_000));
}

/// C7: the end of term arrives while a renew is in flight. The watch shows the
/// renew's own version, then the coordinator's `preferredHolder` on it, both
/// before the renew's answer. The answer shows the second version is not its
/// echo: the holder reads at once (and drains), not a renew interval later.
#[test]
fn c7_an_end_of_term_seen_during_a_successful_renew_is_read_at_once() {
    let (mut n, _) = claimed_leader("a");
    n.events();
    let (op, expected, renew) = n.fire_until_action(10).into_update();
    assert_eq!(expected, Version::new("13"));
    let renewed = stamped(renew, 6);
    n.advance(ms(20));
    n.watch(WatchEvent::Changed(obs("14", renewed.clone())));
    n.advance(ms(20));
    let marked = preferring(&renewed, "c");
    n.watch(WatchEvent::Changed(obs("15", marked.clone())));
    n.no_action();
    n.advance(ms(20));
    n.answer(op, Ok(obs("14", renewed)));
    let read = n.get();
    n.answer(read, Ok(obs("15", marked)));
    assert_eq!(
        n.events(),
        vec![Event::Draining {
            reason: StopReason::Preempted { by: "c".into() }
        }]
    );
}

/// C7: a landed claim overtaken on the watch by an edit that keeps every stamp
/// of it, before the claim's answer came. The edit is adopted, not taken for a
/// record of another: with a label added the node leads at once and renews on
/// the edited version; with the coordinator's end-of-term mark it never leads
/// and gives the Lease back at once, the mark kept for its target.
#[test]
fn c7_a_landed_claim_overtaken_by_an_edit_of_it_is_adopted() {
    for case in ["label", "mark"] {
        let (mut n, op, claim) = claiming("a");
        let mine = stamped(claim, 5);
        n.advance(ms(10));
        n.watch(WatchEvent::Changed(obs("13", mine.clone())));
        n.advance(ms(10));
        let edited = match case {
            "label" => mine.clone(), // metadata is not part of the record
            _ => preferring(&mine, "c"),
        };
        n.watch(WatchEvent::Changed(obs("14", edited)));
        n.advance(ms(10));
        n.answer(op, Ok(obs("13", mine)));
        let (_, expected, next) = n.update();
        assert_eq!(expected, Version::new("14"), "{case}: written on the edit");
        match case {
            "label" => {
                assert!(n.elector.is_leader(n.now), "label: leads at once");
                assert_eq!(next.holder, "a".into(), "label: renews");
            }
            _ => {
                assert_eq!(n.started(), None, "mark: never leads");
                assert_eq!(n.elector.role(), Role::Releasing);
                assert_eq!(next.holder, "".into(), "mark: releases");
                assert_eq!(
                    next.handover.map(|h| h.to),
                    Some("c".into()),
                    "mark: kept for its target"
                );
            }
        }
    }
}

/// C7: the coordinator assigned this node, then found a better candidate and
/// marked the still-valid assignment for the end of term before this node
/// claimed it (kube-apiserver's coordinator does). The node never claims it
/// nor leads, and never erases the mark: it releases the assignment at once,
/// the mark kept, so the coordinator gives the Lease on without waiting for it
/// to expire.
#[test]
fn c7_an_assignment_marked_for_the_end_of_term_is_released_unclaimed() {
    let mut n = watching_follower("a");
    n.advance(ms(2_100));
    let marked = preferring(&assigned("a", &held("b", 2, 3)), "c");
    n.watch(WatchEvent::Changed(obs("12", marked)));
    let (op, expected, release) = n.update();
    assert_eq!(expected, Version::new("12"));
    assert_eq!(release.holder, "".into());
    assert_eq!(release.lease_duration_secs, Some(1));
    assert_eq!(release.handover.as_ref().map(|h| &*h.to), Some("c"));
    n.answer(op, Ok(obs("13", stamped(release, 5))));
    assert_eq!(n.started(), None, "never leads");
    assert_eq!(n.elector.role(), Role::Follower);
    n.advance(ms(10_000));
    n.no_action();
    assert!(
        !n.log
            .iter()
            .any(|(_, e)| matches!(e, Event::StartedLeading { .. })),
        "{:?}",
        n.log
    );
}

/// C2: the Lease deleted and re-created by the coordinator naming this leader
/// while its renew's outcome is unknown (timed out). The read shows the
/// assignment: no acquire time and transitions 0, so not the renew landing. The
/// term ends as `Reassigned` and the assignment is claimed as a new term (an
/// acquire time, transitions above any seen), led on only after the wait.
#[test]
fn c2_an_assignment_after_a_renew_of_unknown_outcome_ends_the_term() {
    let (mut n, _) = claimed_leader("a");
    n.events();
    let _renew = n.fire_until_action(10).into_update();
    n.advance(n.elector.config().request_timeout);
    let read = n.get();
    n.answer(read, Ok(obs("40", assigned("a", &LockRecord::default()))));
    let stops: Vec<_> = n
        .events()
        .into_iter()
        .filter(|e| matches!(e, Event::StoppedLeading { .. }))
        .collect();
    assert_eq!(
        stops,
        vec![Event::StoppedLeading {
            term: term(4, "13"),
            reason: StopReason::Reassigned
        }]
    );
    let (op, expected, claim) = n.fire_until_action(10).into_update();
    assert_eq!(expected, Version::new("40"));
    assert_eq!(claim.transitions, 5, "a new term, past every count seen");
    assert_eq!(claim.acquire_time, Stamp::Now);
    n.answer(op, Ok(obs("41", stamped(claim, 7))));
    assert_eq!(
        n.elector.role(),
        Role::Acquiring,
        "the read was a gap: it waits"
    );
}

/// C4: an assignment is no twin's write. Its previous life's record and then
/// an assignment naming it, or a claim that conflicts and then a read of a new
/// assignment: no `IdentityCollision` is reported.
#[test]
fn c4_assignments_are_not_reported_as_identity_collisions() {
    let collisions = |n: &Node| {
        n.log
            .iter()
            .filter(|(_, e)| matches!(e, Event::Warning(Warning::IdentityCollision(_))))
            .count()
    };
    // Its previous life's record, then an assignment naming it.
    let mut n = Node::new(coordinated("a"));
    n.watch_active(true);
    let op = n.get();
    n.answer(op, Ok(obs("10", held("a", 2, 3))));
    n.advance(ms(100));
    n.watch(WatchEvent::Changed(obs(
        "11",
        assigned("a", &held("a", 2, 3)),
    )));
    assert_eq!(collisions(&n), 0, "previous life, then an assignment");
    // A claim that conflicts, then a read showing a new assignment.
    let (mut n, op, _) = claiming("a");
    n.answer(op, Err(LockError::Conflict));
    let read = n.get();
    n.answer(read, Ok(obs("14", assigned("a", &held("c", 2, 3)))));
    assert_eq!(collisions(&n), 0, "a conflict, then a new assignment");
}

/// C8: a shutdown asked while the claim is in flight. The claim lands: the node
/// never leads, and releases at once, not a renew interval after the claim.
#[test]
fn c8_a_shutdown_during_a_claim_releases_at_once() {
    let (mut n, op, claim) = claiming("a");
    n.advance(ms(50));
    n.shutdown();
    n.advance(ms(50));
    n.answer(op, Ok(obs("13", stamped(claim, 5))));
    let (_, expected, release) = n.update();
    assert_eq!(expected, Version::new("13"));
    assert_eq!(release.holder, "".into());
    assert_eq!(n.started(), None, "never leads");
}

/// The model checker's busy loop (`election-check`, coordinated, one fault):
/// a polling candidate reads an assignment and claims it at that instant; the
/// lock is deleted before the claim lands, which finds it gone. The version
/// the claim was sent on is no news that overtook the "not found": the node
/// takes the lock as absent, and never sends the claim on that version again
/// (it did, at the same instant, for ever: under a paused test clock, a hang).
#[test]
fn c2_a_claim_that_finds_the_lock_deleted_is_not_sent_again() {
    let mut n = Node::new(coordinated("a"));
    let op = n.get();
    n.answer(op, Ok(obs("12", assigned("a", &held("b", 2, 3)))));
    let (op, expected, _) = n.update();
    assert_eq!(expected.as_str(), "12");
    n.answer(op, Err(LockError::NotFound));
    for _ in 0..20 {
        match n.next_action() {
            Some(Action::Update { expected, .. }) if expected.as_str() == "12" => {
                panic!("the claim on version 12 sent again at {:?}", n.now)
            }
            Some(Action::Get { op }) => n.answer(op, Err(LockError::NotFound)),
            Some(other) => panic!("a coordinated candidate wrote {other:?} to an absent lock"),
            None => {
                n.fire();
            }
        }
    }
}
