//! Scenarios for priority (DESIGN §4 "Priority", FAULTS H7): the default handover
//! (the leader drains and releases to the asker, no overlap) and the steal mode
//! (overlap bounded by one renew interval), on a shared compare-and-swap store.
//!
//! Nodes: 0 = "low" (priority 1), 1 = "high" (priority 5), fast profile.

mod support;
use support::*;

fn low() -> Config {
    fast("low").priority(1)
}

/// H7, handover mode: the higher candidate asks; the leader drains and releases
/// naming it; only it may take the lock for one lease; no overlap at any instant.
#[test]
fn h7_handover_drains_releases_and_hands_over_without_overlap() {
    within_time_limit(|| {
        let mut c = Cluster::over_released_lock(vec![
            low(),
            fast("high").priority(5).seed(2),
            fast("mid").seed(3),
        ]);
        // "high" and "mid" start once "low" leads.
        c.links[1] = Link::Paused;
        c.links[2] = Link::Paused;
        c.run_until(100);
        assert_eq!(c.leaders(), vec![0]);
        c.links[1] = Link::Up;
        c.links[2] = Link::Up;
        c.run_until(8_000); // the cluster checks "never two leaders" at every step
        // The request was written by "high" into low's record, every other field kept.
        let ask = c
            .store
            .records()
            .find(|o| o.handover.is_some())
            .expect("a handover request was written");
        assert_eq!(&*ask.holder, "low");
        assert_eq!(
            ask.handover,
            Some(Handover {
                to: "high".into(),
                priority: Some(5)
            })
        );
        // "low" stopped, preempted by "high", and released naming it.
        assert!(c.nodes[0].log.iter().any(|(_, e)| *e
            == Event::Draining {
                reason: StopReason::Preempted { by: "high".into() }
            }));
        let release = c
            .store
            .records()
            .skip(1) // the released lock the story starts from
            .find(|o| o.holder.is_empty())
            .expect("low released");
        assert_eq!(release.handover.as_ref().map(|h| &*h.to), Some("high"));
        assert_eq!(release.lease_duration_secs, Some(1));
        // "high" leads, and "mid" (no priority) never did.
        assert_eq!(c.leaders(), vec![1]);
        assert_eq!(c.starts(1), 1);
        assert_eq!(c.starts(2), 0);
        assert_eq!(c.overlap_ms(0, 1), 0);
    });
}

/// Equal priority never preempts: the order is total and cannot flap.
#[test]
fn equal_priority_never_preempts() {
    within_time_limit(|| {
        let mut c =
            Cluster::over_released_lock(vec![fast("x").priority(5), fast("y").priority(5).seed(9)]);
        c.links[1] = Link::Paused;
        c.run_until(100);
        c.links[1] = Link::Up;
        c.run_until(6_000);
        assert_eq!(c.leaders(), vec![0]);
        assert_eq!(c.starts(1), 0);
        assert!(c.store.records().all(|r| r.handover.is_none()));
    });
}

/// H7, steal mode (Istio's): the higher candidate takes the unexpired lease at
/// once; the old leader learns at its next renew, so the overlap is bounded by one
/// renew interval, as documented.
#[test]
fn h7_steal_mode_takes_at_once_with_bounded_overlap() {
    within_time_limit(|| {
        let mut high = fast("high").priority(5).seed(2);
        high.preemption = Preemption::Steal;
        let mut c = Cluster::over_released_lock(vec![low(), high]);
        c.check_safety = false;
        c.links[1] = Link::Paused;
        c.run_until(130);
        c.links[1] = Link::Up;
        c.run_until(3_000);
        assert_eq!(c.leaders(), vec![1]);
        let took = c.spans[1][0].0;
        assert_eq!(took, 130, "at once");
        let lost = c.nodes[0]
            .log
            .iter()
            .find_map(|(at, e)| match e {
                Event::StoppedLeading { reason, .. } => Some((*at, reason.clone())),
                _ => None,
            })
            .expect("low stopped");
        assert_eq!(
            lost.1,
            StopReason::LostConflict {
                holder: "high".into()
            }
        );
        let overlap = c.overlap_ms(0, 1);
        assert!(
            overlap > 0,
            "steal overlaps until the old leader's next renew"
        );
        assert!(
            overlap <= 250,
            "bounded by one renew interval: {overlap} ms"
        );
        let stolen = c
            .store
            .records()
            .find(|o| &*o.holder == "high")
            .expect("stolen");
        assert_eq!(stolen.transitions, 2);
    });
}

/// A leader with `cfg` whose renew conflicts and whose read then shows an external
/// handover request to "preferred" (no priority): it drains, preempted.
fn draining_for_a_handover(cfg: &Config) -> Node {
    let mut n = Node::leader(cfg.clone(), "1");
    n.fire();
    let (op, _, _) = n.update();
    n.answer(op, Err(LockError::Conflict));
    let op = n.get();
    let mut asked = stamped(acquiring(cfg, 0), 1);
    asked.handover = Some(Handover {
        to: "preferred".into(),
        priority: None,
    });
    n.answer(op, Ok(obs("2", asked)));
    assert!(n.events().contains(&Event::Draining {
        reason: preempted_by_preferred()
    }));
    n
}

fn preempted_by_preferred() -> StopReason {
    StopReason::Preempted {
        by: "preferred".into(),
    }
}

/// Answers the node's renewals until it writes its release; the release, and the
/// instant it was answered.
fn serve_until_released(n: &mut Node) -> (LockRecord, Instant) {
    loop {
        let a = n.fire_until_action(4);
        let Action::Update {
            op,
            expected,
            record,
        } = a
        else {
            panic!("{a:?}")
        };
        let released = record.holder.is_empty();
        n.answer(
            op,
            Ok(obs(&format!("{expected}0"), stamped(record.clone(), 3))),
        );
        if released {
            return (record, n.now);
        }
    }
}

/// An external handover request (Kubernetes' `preferredHolder`: no priority) is
/// always honoured: the leader drains, then releases naming the preferred holder.
#[test]
fn external_handover_request_is_honoured() {
    let mut n = draining_for_a_handover(&fast("a").priority(100));
    n.work_stopped();
    let (release, _) = serve_until_released(&mut n);
    assert_eq!(release.handover.map(|h| h.to), Some("preferred".into()));
}

/// A step-down asked while the leader already drains for a handover keeps the
/// handover's reason, and adds the step-down's pause: after the release the node
/// takes no lock for one lease duration, even one released to nobody.
#[test]
fn a_step_down_during_a_handover_drain_pauses_after_the_release() {
    let cfg = fast("a");
    let mut n = draining_for_a_handover(&cfg);
    n.step_down();
    n.no_events();
    n.work_stopped();
    assert!(n.events().iter().any(
        |e| matches!(e, Event::StoppedLeading { reason, .. } if *reason == preempted_by_preferred())
    ));
    let (_, released_at) = serve_until_released(&mut n);
    // The lock now reads as released to nobody: without the pause, "a" would
    // take it back at once.
    let (at, write) = n.campaign(|_| Ok(obs("9", held("", 1, 0))), 1_000);
    assert!(matches!(write, Action::Update { .. }), "{write:?}");
    assert!(
        at >= released_at + cfg.lease_duration,
        "took the lock back at {at:?}, released at {released_at:?}"
    );
}

/// After a handover release, for one lease duration only the named candidate may
/// take the lock (a lower candidate cannot win the race); after that anyone may
/// (the asker may have died). The named candidate takes it at once.
#[test]
fn handover_release_reserves_the_lock_for_its_target_for_one_lease() {
    let mut released = held("", 1, 4);
    released.handover = Some(Handover {
        to: "high".into(),
        priority: Some(5),
    });
    // The target: at once.
    let mut n = Node::follower(fast("high").priority(5), obs("9", released.clone()));
    let (_, expected, record) = n.update();
    assert_eq!(expected, Version::new("9"));
    assert_eq!(record.transitions, 5);
    assert_eq!(record.handover, None, "the request is fulfilled");
    assert_eq!(n.now, t(0));
    // Anyone else: only a lease (the configured 2 s) after seeing the release.
    for other in [fast("mid"), fast("higher").priority(50)] {
        let mut n = Node::new(other);
        let op = n.get();
        n.set_clock(t(100));
        n.answer(op, Ok(obs("9", released.clone())));
        let (at, write) = n.campaign(|_| Ok(obs("9", released.clone())), 1_000);
        assert!(at >= t(2_100), "{write:?} at {at:?}");
        assert!(at < t(2_100) + fast("x").max_retry_interval(), "{at:?}");
    }
}

/// A still higher candidate overrides a lower pending request; an external one
/// (no priority) is never overridden.
#[test]
fn a_higher_request_overrides_a_lower_one_but_not_an_external_one() {
    let mut rec = held("low", 2, 1);
    rec.priority = Some(1);
    rec.handover = Some(Handover {
        to: "mid".into(),
        priority: Some(3),
    });
    let mut n = Node::follower(fast("high").priority(5), obs("7", rec.clone()));
    let (_, expected, ask) = n.update();
    assert_eq!(expected, Version::new("7"));
    let mut want = rec.clone();
    want.handover = Some(Handover {
        to: "high".into(),
        priority: Some(5),
    });
    assert_eq!(ask, want, "only the request changes");
    // An external request stays: no write before the lease expires.
    rec.handover = Some(Handover {
        to: "chosen".into(),
        priority: None,
    });
    let mut n = Node::follower(fast("high").priority(5), obs("7", rec.clone()));
    n.no_action();
    let (at, _) = n.campaign(|_| Ok(obs("7", rec.clone())), 1_000);
    assert!(at >= t(2_000), "{at:?}");
}

/// What this node writes is valid by construction: a handover request keeps the
/// holder's record, but a `leaseDurationSeconds` the API would refuse (0,
/// negative, beyond an int32) is written as the duration this node times the
/// lease by (it was once copied as read, and answered 422).
#[test]
fn h7_a_handover_request_writes_a_valid_duration() {
    for bad in [0, -5, i64::MIN, i64::MAX, i64::from(i32::MAX) + 1] {
        let cfg = fast("high").priority(5);
        let mut rec = held("low", 2, 3);
        rec.lease_duration_secs = Some(bad);
        let mut n = Node::follower(cfg, obs("4", rec.clone()));
        let (_, expected, ask) = n.update();
        assert_eq!(expected, Version::new("4"));
        let secs = ask.lease_duration_secs.expect("a duration");
        assert!((1..=i64::from(i32::MAX)).contains(&secs), "{bad} -> {secs}");
        assert_eq!(
            (
                &ask.holder,
                ask.renew_time,
                ask.acquire_time,
                ask.transitions
            ),
            (
                &rec.holder,
                rec.renew_time,
                rec.acquire_time,
                rec.transitions
            ),
            "the holder's stamps kept"
        );
        assert_eq!(ask.handover.map(|h| h.to), Some("high".into()));
    }
}
