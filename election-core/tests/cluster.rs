//! Stories of a few electors over one compare-and-swap store (FAULTS N7–N12): the
//! [`Cluster`] runs them on one real clock and checks after every step that no two
//! report leadership at once. Fast profile: 2 s lease, 1.5 s deadline, 250 ms retry.

mod support;
use support::*;

fn nodes(n: usize) -> Vec<Config> {
    (0..n)
        .map(|i| fast(&format!("node-{i}")).seed(i as u64 + 1))
        .collect()
}

/// Real instant (ms) at which node `i` first started leading.
fn first_start(c: &Cluster, i: usize) -> Option<u64> {
    c.spans[i].first().map(|s| s.0)
}

/// N11: many candidates at a release: exactly one compare-and-swap wins; the
/// others read the winner and do not lead.
#[test]
fn n11_many_candidates_at_a_release_exactly_one_wins() {
    within_time_limit(|| {
        let mut c = Cluster::new(nodes(6));
        c.store.put(held("", 1, 7), c.wall());
        c.run_until(3_000);
        let leaders: Vec<usize> = (0..6).filter(|&i| c.starts(i) > 0).collect();
        assert_eq!(leaders.len(), 1, "exactly one won: {leaders:?}");
        let acquisitions = c.store.records().filter(|o| o.transitions == 8).count();
        assert!(acquisitions >= 1);
        let winner = leaders[0];
        assert_eq!(c.leaders(), vec![winner]);
        assert_eq!(c.holder(), Some(format!("node-{winner}").as_str()));
    });
}

/// N7: the leader is cut off from the API (connection refused): it stops at its
/// deadline; the other takes over a lease after its last observed change; never
/// two leaders.
#[test]
fn n7_partitioned_leader_stops_at_its_deadline_and_another_takes_over() {
    within_time_limit(|| {
        let mut c = Cluster::over_released_lock(nodes(2));
        c.links[1] = Link::Paused;
        c.run_until(100);
        c.links[1] = Link::Up;
        assert_eq!(c.leaders(), vec![0]);
        c.run_until(1_000);
        let last_renew = c.nodes[0].elector.last_renew().expect("holding");
        c.links[0] = Link::Refused;
        c.run_until(8_000);
        let stop = c.spans[0][0].1.expect("node-0 stopped");
        assert_eq!(
            stop,
            (last_renew + ms(1_500)).as_nanos() / 1_000_000,
            "at its deadline"
        );
        let took = first_start(&c, 1).expect("node-1 took over");
        assert!(took >= stop, "no overlap");
        assert!(
            took >= last_renew.as_nanos() / 1_000_000 + 2_000,
            "a lease after the last change: {took}"
        );
        assert_eq!(c.leaders(), vec![1]);
        let old = term(1, "2");
        let new = c.nodes[1].elector.term().expect("node-1 leads").clone();
        assert!(new > old, "the fencing token grows: {old} then {new}");
        assert!(c.nodes[0].log.iter().any(|(_, e)| *e
            == Event::StoppedLeading {
                term: term(1, "2"),
                reason: StopReason::DeadlineExceeded
            }));
    });
}

/// N7 with calls that hang (no answer): the same, through the request timeouts.
#[test]
fn n7_blackholed_leader_stops_at_its_deadline() {
    within_time_limit(|| {
        let mut c = Cluster::over_released_lock(nodes(2));
        c.links[1] = Link::Paused;
        c.run_until(100);
        c.links[1] = Link::Up;
        c.run_until(1_000);
        c.links[0] = Link::Hang;
        c.run_until(8_000);
        assert_eq!(c.leaders(), vec![1]);
        assert_eq!(c.starts(0), 1);
    });
}

/// N8: the leader's requests arrive but the answers are lost: it stops at its
/// deadline, its writes keep landing, so nobody takes over until a lease after the
/// last one: a gap, never an overlap.
#[test]
fn n8_answers_lost_gives_a_gap_never_an_overlap() {
    within_time_limit(|| {
        let mut c = Cluster::over_released_lock(nodes(2));
        c.links[1] = Link::Paused;
        c.run_until(100);
        c.links[1] = Link::Up;
        c.run_until(1_000);
        c.links[0] = Link::AnswerLost;
        c.run_until(4_000);
        c.links[0] = Link::Paused; // then it crashes
        let last_write = c.store.history.len();
        c.run_until(12_000);
        assert_eq!(c.leaders(), vec![1]);
        assert!(c.store.history.len() > last_write);
        let stop = c.spans[0][0].1.expect("node-0 stopped");
        assert!(stop <= 2_500, "at its deadline at the latest: {stop}");
        assert!(first_start(&c, 1).expect("node-1 leads") >= stop);
    });
}

/// N9: a follower that can read but not write never leads, and says why.
#[test]
fn n9_follower_that_cannot_write_never_leads() {
    within_time_limit(|| {
        let mut c = Cluster::over_released_lock(nodes(2));
        c.links[1] = Link::Paused;
        c.run_until(100);
        c.links[1] = Link::ReadOnly;
        c.run_until(1_000);
        c.links[0] = Link::Paused; // the leader dies
        c.run_until(10_000);
        assert_eq!(c.starts(1), 0);
        assert!(c.leaders().is_empty());
        assert!(c.nodes[1].log.iter().any(|(_, e)| matches!(
            e,
            Event::Warning(Warning::LockFailed {
                op: OpKind::Update,
                error: LockError::Forbidden { .. }
            })
        )));
    });
}

/// N10 (and A11): the control plane is down longer than the renew deadline: the
/// leader stops at its deadline, nobody leads during the outage, and after it the
/// others take over only a full lease after their first fresh observation.
#[test]
fn n10_control_plane_down_longer_than_the_deadline() {
    within_time_limit(|| {
        let mut c = Cluster::over_released_lock(nodes(3));
        c.links[1] = Link::Paused;
        c.links[2] = Link::Paused;
        c.run_until(100);
        c.links[1] = Link::Up;
        c.links[2] = Link::Up;
        c.run_until(1_000);
        for l in &mut c.links {
            *l = Link::Refused;
        }
        c.run_until(6_000);
        assert!(c.leaders().is_empty(), "nobody leads during the outage");
        assert_eq!(
            c.spans[0][0].1,
            Some(2_500),
            "the leader stopped at its deadline"
        );
        // The old leader does not come back; the others see the API again.
        c.links = vec![Link::Paused, Link::Up, Link::Up];
        c.run_until(15_000);
        let new = (1..3)
            .filter_map(|i| first_start(&c, i))
            .min()
            .expect("a leader after the outage");
        assert!(new >= 8_000, "a full lease after the outage ended: {new}");
        assert_eq!(c.leaders().len(), 1);
    });
}

/// N12: clock rates that differ by less than `lease / renew_deadline` (1.33 here):
/// the leader's clock runs slow, the follower's fast; the leader is cut off: no
/// overlap.
#[test]
fn n12_clock_rates_within_the_tolerance_never_overlap() {
    within_time_limit(|| {
        let ratio = fast("x").tolerated_clock_ratio();
        for (slow, fastr) in [(1.0, 1.3), (0.8, 1.05), (0.9, 0.9 * ratio * 0.99)] {
            let mut c = Cluster::over_released_lock(nodes(2));
            c.rates = vec![slow, fastr];
            c.links[1] = Link::Paused;
            c.run_until(100);
            c.links[1] = Link::Up;
            c.run_until(1_000);
            c.links[0] = Link::Refused;
            c.run_until(10_000); // checks at every step
            assert_eq!(c.leaders(), vec![1], "rates {slow} / {fastr}");
            assert_eq!(c.overlap_ms(0, 1), 0);
        }
    });
}

/// N1: two live processes with the same identity over one lock: never both
/// leaders at once (checked at every step), and the collision is reported with the
/// identity. The twin that comes second only ever sees versions it did not write
/// naming it, so it treats the lock as held by another: it never leads, and the
/// first keeps leading undisturbed (it sees no version it did not write). Both
/// twins stop leading only where both hold, which `renew.rs` covers (the leader
/// sees the twin's renew).
#[test]
fn n1_twins_never_lead_together_and_the_collision_is_reported() {
    within_time_limit(|| {
        let mut c = Cluster::over_released_lock(vec![fast("twin").seed(1), fast("twin").seed(2)]);
        c.links[1] = Link::Paused;
        c.run_until(100);
        assert_eq!(c.leaders(), vec![0]);
        c.links[1] = Link::Up;
        c.run_until(10_000);
        let reported = c.nodes.iter().any(|n| {
            n.log
                .iter()
                .any(|(_, e)| *e == Event::Warning(Warning::IdentityCollision("twin".into())))
        });
        assert!(reported, "the collision is reported, naming the identity");
        assert_eq!(c.starts(1), 0, "the second twin never leads");
        assert_eq!(c.leaders(), vec![0]);
        assert_eq!(c.spans[0].len(), 1, "the first twin led once");
        assert_eq!(c.spans[0][0].1, None, "and was not disturbed");
    });
}
