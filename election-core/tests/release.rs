//! Scenarios for giving leadership up (DESIGN §4 "Release", §1 "No lost work"):
//! drain, report, then one compare-and-swap with an empty holder; and the FAULTS
//! rows about shutdown and the host (H1–H5) and 422 on a release (A8).
//!
//! Every leader here created the lock at time zero (term `0@1`) with the fast
//! profile: 2 s lease, 1.5 s renew deadline, 250 ms retry, 500 ms request timeout.

mod support;
use support::*;

/// The release of the record a leader holds: empty holder, one second, transitions
/// kept, both times stamped.
fn released(mut held: LockRecord) -> LockRecord {
    held.holder = "".into();
    held.lease_duration_secs = Some(1);
    held.acquire_time = Stamp::Now;
    held.renew_time = Stamp::Now;
    held.priority = None;
    held
}

#[test]
fn step_down_drains_then_stops_then_releases() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg.clone(), "1");
    n.set_clock(t(100));
    n.step_down();
    assert_eq!(
        n.events(),
        vec![Event::Draining {
            reason: StopReason::SteppedDown
        }]
    );
    assert_eq!(n.elector.role(), Role::Draining);
    assert!(
        n.elector.is_leader(n.now),
        "still leading while the work drains"
    );
    n.no_action();
    // Renewals go on while draining.
    n.fire();
    assert_eq!(n.now, t(250));
    let (op, expected, renew) = n.update();
    assert_eq!(expected, Version::new("1"));
    assert_eq!(renew.holder, "a".into());
    let renewed = obs("2", stamped(renew, 2));
    n.answer(op, Ok(renewed.clone()));
    assert_eq!(n.elector.deadline(), Some(t(1_750)));
    // The work ended: report, then release.
    n.set_clock(t(300));
    n.work_stopped();
    assert_eq!(
        n.events(),
        vec![Event::StoppedLeading {
            term: term(0, "1"),
            reason: StopReason::SteppedDown
        }]
    );
    assert!(
        !n.elector.is_leader(n.now),
        "not leader before the release is sent"
    );
    assert_eq!(n.elector.role(), Role::Releasing);
    let (op, expected, record) = n.update();
    assert_eq!(expected, Version::new("2"), "CAS on the version it holds");
    assert_eq!(record, released(renewed.record.clone()));
    assert_eq!(record.transitions, 0, "transitions kept");
    assert_eq!(record.lease_duration_secs, Some(1), "never 0 (A8)");
    n.answer(op, Ok(obs("3", stamped(record, 3))));
    assert_eq!(n.events(), vec![Event::LeaderChanged { leader: None }]);
    assert_eq!(n.elector.role(), Role::Follower);
    // It stays a follower for one lease so that another can take over.
    let write = n.fire_until_action(100);
    assert!(matches!(write, Action::Update { .. }), "{write:?}");
    assert!(n.now >= t(2_300), "took it back at {:?}", n.now);
}

/// A8: a release never writes `leaseDurationSeconds: 0` (the API rejects it), whatever
/// the configured lease; a 422 on the release is reported and not retried at once.
#[test]
fn a8_release_writes_lease_one_and_reports_invalid() {
    for cfg in [fast("a"), Config::client_go("a"), Config::openshift("a")] {
        let mut n = Node::leader(cfg.clone(), "1");
        n.step_down();
        n.work_stopped();
        n.events();
        let (op, _, record) = n.update();
        assert_eq!(record.lease_duration_secs, Some(1), "{cfg:?}");
        assert_eq!(&*record.holder, "");
        let error = LockError::Invalid {
            message: "spec.leaseDurationSeconds: must be greater than 0".into(),
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
        // The release is given up, not re-sent: the lease expires by itself, and
        // this node does not take it back for one lease duration.
        assert_eq!(n.elector.role(), Role::Follower, "{cfg:?}");
        assert!(!n.elector.is_leader(n.now));
        let released_at = n.now;
        let retake = loop {
            let at = n.timeout().expect("the node keeps campaigning");
            n.advance_to(at.max(n.now));
            match n.has_action().then(|| n.action()) {
                None => {}
                Some(Action::Get { op }) => {
                    n.answer(op, Ok(obs("1", stamped(acquiring(&cfg, 0), 1))));
                }
                Some(Action::Update {
                    expected,
                    record: w,
                    ..
                }) => {
                    assert_ne!(w, record, "the refused release re-sent at {:?}", n.now);
                    assert_eq!(expected, Version::new("1"));
                    assert_eq!(w.transitions, 1, "a new term");
                    break n.now;
                }
                Some(other) => panic!("unexpected {other:?}"),
            }
            assert!(n.now < released_at + cfg.lease_duration * 3, "stalled");
        };
        assert!(
            retake >= released_at + cfg.lease_duration,
            "took the lock back at {retake:?}, within a lease of the release"
        );
    }
}

/// A8 on a shutdown's release: the refused release is not re-sent; the node
/// terminates at once (the stop was reported before the release).
#[test]
fn a8_invalid_release_on_shutdown_terminates_without_resending() {
    let mut n = Node::leader(fast("a"), "1");
    n.shutdown();
    n.work_stopped();
    let evs = n.events();
    assert!(
        evs.iter()
            .any(|e| matches!(e, Event::StoppedLeading { .. })),
        "{evs:?}"
    );
    let (op, _, record) = n.update();
    assert_eq!(&*record.holder, "");
    n.answer(
        op,
        Err(LockError::Invalid {
            message: "rejected".into(),
        }),
    );
    let evs = n.events();
    assert_eq!(evs.last(), Some(&Event::Terminated), "{evs:?}");
    n.no_action();
    assert!(n.elector.is_terminated());
    assert_eq!(n.timeout(), None);
}

/// H4: the release loses its compare-and-swap and a fresh read shows another
/// holder: no write (client-go checks a stale copy and can evict the newer holder).
#[test]
fn h4_release_when_another_already_holds_writes_nothing() {
    let mut n = Node::leader(fast("a"), "1");
    n.set_clock(t(100));
    n.step_down();
    n.work_stopped();
    n.events();
    let (op, expected, _) = n.update();
    assert_eq!(expected, Version::new("1"));
    n.answer(op, Err(LockError::Conflict));
    let op = n.get();
    n.answer(op, Ok(obs("5", held("b", 2, 1))));
    assert_eq!(
        n.events(),
        vec![Event::LeaderChanged {
            leader: Some("b".into())
        }]
    );
    assert_eq!(n.elector.role(), Role::Follower);
    // Nothing is written while b's lease runs.
    let (at, write) = n.campaign(|_| Ok(obs("5", held("b", 2, 1))), 1_000);
    assert!(
        at >= t(2_100),
        "wrote {write:?} at {at:?} while b held the lock"
    );
    let Action::Update { record, .. } = write else {
        panic!("{write:?}")
    };
    assert_eq!(&*record.holder, "a", "an acquisition, not a release");
}

/// The release's compare-and-swap fails spuriously (the fresh read still shows our
/// version): it releases again, at that version.
#[test]
fn release_retries_when_the_fresh_record_still_names_us() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg.clone(), "1");
    n.step_down();
    n.work_stopped();
    let (op, _, first) = n.update();
    n.answer(op, Err(LockError::Conflict));
    let failed_at = n.now;
    let op = n.get();
    n.answer(op, Ok(obs("1", stamped(acquiring(&cfg, 0), 1))));
    n.no_action(); // a failed write is never re-sent at once
    let (op, expected, again) = n.fire_until_action(4).into_update();
    assert!(
        n.now >= failed_at + cfg.retry_period,
        "one retry period later"
    );
    assert!(
        n.now < failed_at + cfg.renew_deadline,
        "within the release budget"
    );
    assert_eq!(expected, Version::new("1"));
    assert_eq!(again, first);
    n.answer(op, Ok(obs("2", stamped(again, 2))));
    assert_eq!(n.elector.role(), Role::Follower);
}

#[test]
fn shutdown_of_a_leader_drains_releases_and_terminates() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg.clone(), "1");
    n.set_clock(t(100));
    n.shutdown();
    assert_eq!(
        n.events(),
        vec![Event::Draining {
            reason: StopReason::ShutDown
        }]
    );
    n.set_clock(t(120));
    n.work_stopped();
    assert_eq!(
        n.events(),
        vec![Event::StoppedLeading {
            term: term(0, "1"),
            reason: StopReason::ShutDown
        }]
    );
    releases_and_terminates(&mut n, &cfg);
    assert!(n.elector.is_terminated());
    assert_eq!(n.elector.role(), Role::Terminated);
    assert_eq!(n.timeout(), None);
    // Nothing more, whatever comes.
    n.advance_to(t(60_000));
    n.watch(WatchEvent::Deleted(None));
    n.shutdown();
    n.no_action();
    n.no_events();
}

/// Without `release_on_shutdown` the lock is left to expire: stop, terminate, no write.
#[test]
fn shutdown_without_release_leaves_the_lease_to_expire() {
    let mut cfg = fast("a");
    cfg.release_on_shutdown = false;
    let mut n = Node::leader(cfg, "1");
    n.shutdown();
    n.work_stopped();
    assert_eq!(
        n.events(),
        vec![
            Event::Draining {
                reason: StopReason::ShutDown
            },
            Event::StoppedLeading {
                term: term(0, "1"),
                reason: StopReason::ShutDown
            },
            Event::Terminated,
        ]
    );
    n.no_action();
}

/// A stop the user asked for is a shutdown: a shutdown asked while a
/// step-down drains is reported as `ShutDown` when the work ends. Only the
/// report changes: the step-down's release is written even without
/// `release_on_shutdown`, as before.
#[test]
fn shutdown_asked_while_a_step_down_drains_is_reported_as_shut_down() {
    let mut cfg = fast("a");
    cfg.release_on_shutdown = false;
    let mut n = Node::leader(cfg.clone(), "1");
    n.set_clock(t(100));
    n.step_down();
    assert_eq!(
        n.events(),
        vec![Event::Draining {
            reason: StopReason::SteppedDown
        }]
    );
    n.set_clock(t(110));
    n.shutdown();
    n.no_events();
    n.set_clock(t(120));
    n.work_stopped();
    assert_eq!(
        n.events(),
        vec![Event::StoppedLeading {
            term: term(0, "1"),
            reason: StopReason::ShutDown
        }]
    );
    releases_and_terminates(&mut n, &cfg);
}

/// H1: shutdown while a renew is in flight: the release uses the version the renew
/// produced, and retries on 409 after a fresh read.
#[test]
fn h1_shutdown_while_a_renew_is_in_flight() {
    let cfg = fast("a");
    let mut n = Node::leader(cfg.clone(), "1");
    n.fire();
    let (renew_op, _, renew) = n.update();
    n.set_clock(t(260));
    n.shutdown();
    n.set_clock(t(270));
    n.work_stopped();
    n.no_action();
    n.set_clock(t(280));
    let renewed = obs("2", stamped(renew, 2));
    n.answer(renew_op, Ok(renewed.clone()));
    let release = n.fire_until_action(10);
    assert_eq!(n.now, t(280), "at once, on the renew's answer");
    let Action::Update {
        op,
        expected,
        record,
    } = release
    else {
        panic!("expected the release, got {release:?}");
    };
    assert_eq!(expected, Version::new("2"), "the fresh version");
    assert_eq!(record, released(renewed.record.clone()));
    n.answer(op, Err(LockError::Conflict));
    let op = n.get();
    n.answer(op, Ok(renewed));
    let (op, expected, _) = n.fire_until_action(4).into_update();
    assert!(
        n.now <= t(260 + 1_500),
        "the retry, within the release budget"
    );
    assert_eq!(expected, Version::new("2"));
    n.answer(op, Ok(obs("3", held("", 1, 0))));
    assert!(n.events().contains(&Event::Terminated));
}

/// H2: shutdown while a read is in flight: prompt exit, no stop reported (it never
/// led), no hang, the late answer ignored.
#[test]
fn h2_shutdown_while_a_read_is_in_flight_exits_promptly() {
    let mut n = Node::new(fast("a"));
    let op = n.get();
    n.set_clock(t(10));
    n.shutdown();
    assert_eq!(n.events(), vec![Event::Terminated]);
    assert!(n.elector.is_terminated());
    assert_eq!(n.timeout(), None);
    n.answer(op, Ok(obs("1", held("", 1, 0))));
    n.no_action();
    n.no_events();
}

/// H2 for a leader whose read is in flight (after an unknown renew outcome): it
/// drains, stops, and terminates within its budget, however the read ends.
#[test]
fn h2_shutdown_of_a_leader_while_a_read_is_in_flight() {
    within_time_limit(|| {
        let cfg = fast("a");
        let mut n = Node::leader(cfg.clone(), "1");
        n.fire();
        let (op, _, _) = n.update();
        n.answer(op, Err(LockError::unknown("connection reset")));
        let read = n.get();
        n.set_clock(t(300));
        n.shutdown();
        n.work_stopped();
        n.answer(read, Ok(obs("1", stamped(acquiring(&cfg, 0), 1))));
        for _ in 0..20 {
            if n.elector.is_terminated() {
                break;
            }
            if n.has_action() {
                let a = n.action();
                n.answer(a.op(), Ok(obs("2", held("", 1, 0))));
            } else {
                n.fire();
            }
        }
        assert!(n.elector.is_terminated());
        assert!(n.now <= t(300 + 1_500), "within the budget: {:?}", n.now);
        let stops = n
            .log
            .iter()
            .filter(|(_, e)| matches!(e, Event::StoppedLeading { .. }))
            .count();
        assert_eq!(stops, 1);
    });
}

/// H3: leader work slow to stop: renewals go on while it drains; leadership is given
/// up no later than the budget (one renew deadline) even if the work never ends.
#[test]
fn h3_slow_leader_work_is_bounded_and_renewals_continue() {
    let mut n = Node::leader(fast("a"), "1");
    n.set_clock(t(100));
    n.step_down();
    n.events();
    let mut version = 1;
    let mut renews = 0;
    while n.started().is_some() {
        n.fire();
        if n.has_action() {
            let (op, _, record) = n.update();
            assert_eq!(&*record.holder, "a");
            version += 1;
            renews += 1;
            n.answer(op, Ok(obs(&version.to_string(), stamped(record, version))));
        }
        assert!(n.now <= t(1_600), "still leading at {:?}", n.now);
    }
    assert!(renews >= 5, "renewals continued while draining: {renews}");
    let stop = n
        .log
        .iter()
        .find(|(_, e)| matches!(e, Event::StoppedLeading { .. }))
        .expect("stopped");
    assert_eq!(
        stop.1,
        Event::StoppedLeading {
            term: term(0, "1"),
            reason: StopReason::SteppedDown
        }
    );
    assert!(!n.elector.is_leader(n.now));
    // After the stop, no renew of the old term is ever sent: the next write is an
    // acquisition of a new term, a full lease after the last renew it saw.
    let last = obs(&version.to_string(), held("a", 2, 0));
    let (_, write) = n.campaign(|_| Ok(last.clone()), 1_000);
    let (_, _, record) = write.into_update();
    assert_eq!(record.transitions, 1, "a new term, not a renew: {record:?}");
}

/// H5: shutdown races an acquisition that succeeds: never a silently held lease.
/// Either start, stop and release, or release without starting.
#[test]
fn h5_shutdown_racing_a_successful_acquisition_releases() {
    let cfg = fast("a");
    let mut n = Node::new(cfg.clone());
    let op = n.get();
    n.answer(op, Ok(obs("5", held("", 1, 2))));
    let (op, _, record) = n.update();
    n.set_clock(t(10));
    n.shutdown();
    assert!(!n.elector.is_terminated(), "a write of ours is in flight");
    n.set_clock(t(20));
    n.answer(op, Ok(obs("6", stamped(record, 6))));
    let release = n.fire_until_action(10);
    let Action::Update {
        op,
        expected,
        record,
    } = release
    else {
        panic!("expected a release, got {release:?}");
    };
    assert_eq!(expected, Version::new("6"));
    assert_eq!(&*record.holder, "");
    n.answer(op, Ok(obs("7", stamped(record, 7))));
    assert!(n.elector.is_terminated());
    assert!(
        n.started().is_none(),
        "a start, if any, was followed by a stop"
    );
}

/// H5 with an unknown outcome: the acquisition timed out; the elector reads, and
/// releases if the record names it, else terminates without a write.
#[test]
fn h5_shutdown_racing_an_acquisition_of_unknown_outcome() {
    let cfg = fast("a");
    for landed in [true, false] {
        let mut n = Node::new(cfg.clone());
        let op = n.get();
        n.answer(op, Ok(obs("5", held("", 1, 2))));
        let (op, _, record) = n.update();
        n.shutdown();
        n.answer(op, Err(LockError::unknown("504")));
        let read = n.get();
        let current = if landed {
            obs("6", stamped(record, 6))
        } else {
            obs("6", held("c", 2, 3))
        };
        n.answer(read, Ok(current));
        if landed {
            let (op, expected, rel) = n.fire_until_action(10).into_update();
            assert_eq!(expected, Version::new("6"));
            assert_eq!(&*rel.holder, "");
            assert!(!n.elector.is_terminated());
            n.answer(op, Ok(obs("7", stamped(rel, 7))));
        } else {
            n.no_action();
        }
        assert!(n.elector.is_terminated(), "landed={landed}");
        assert!(n.started().is_none());
    }
}

/// H5, with a watch event arriving while the confirming read is in flight: the
/// elector must wait for the read before it ends. The
/// read shows the record its create of unknown outcome made. With the strict lock
/// delay it does not release that record (a leader of the lock deleted
/// before the create may still believe, and an empty
/// holder is taken at once): it ends without a write and the record expires. With
/// `LockDelay::Immediate` (client-go) it releases.
#[test]
fn h5_watch_event_during_the_confirming_read_does_not_end_the_shutdown() {
    for delay in [LockDelay::Strict, LockDelay::Immediate] {
        let mut cfg = fast("a");
        cfg.lock_delay = delay;
        let mut n = Node::new(cfg);
        let op = n.get();
        n.answer(op, Err(LockError::NotFound));
        let (op, record) = n.create();
        n.shutdown();
        n.answer(op, Err(LockError::unknown("reset after send")));
        let read = n.get();
        let created = obs("1", stamped(record, 1));
        n.watch(WatchEvent::Changed(created.clone()));
        n.watch_active(false);
        assert!(
            !n.elector.is_terminated(),
            "{delay:?}: terminated with its create's outcome unknown"
        );
        n.answer(read, Ok(created));
        if delay == LockDelay::Strict {
            n.no_action();
            assert!(
                n.elector.is_terminated(),
                "ends, leaving the record to expire"
            );
            continue;
        }
        let (op, expected, rel) = n.fire_until_action(10).into_update();
        assert_eq!(expected, Version::new("1"));
        assert_eq!(&*rel.holder, "");
        n.answer(op, Ok(obs("2", stamped(rel, 2))));
        assert!(n.elector.is_terminated());
    }
}

/// The release of a leader of `cfg` that acquired at version "1": written over
/// that version, answered, then the release's `LeaderChanged` and `Terminated`.
fn releases_and_terminates(n: &mut Node, cfg: &Config) {
    let (op, expected, record) = n.update();
    assert_eq!(expected, Version::new("1"));
    assert_eq!(record, released(stamped(acquiring(cfg, 0), 1)));
    n.answer(op, Ok(obs("2", stamped(record, 2))));
    assert_eq!(
        n.events(),
        vec![Event::LeaderChanged { leader: None }, Event::Terminated]
    );
}
