//! Scenarios about time (DESIGN §2, §3): seeded jitter within bounds and
//! replayable, `handle_timeout` idempotent and safe early, time going backwards
//! clamped, and configurations at the edge (FAULTS H8).

mod support;
use std::time::Duration;
use support::*;

/// The instants at which a polling follower's timer fires, up to `until`, against a
/// lock held by "b" for 15 s (reads, if any, answered at once).
fn wakeups(config: Config, until: Instant) -> Vec<Instant> {
    let rec = held("b", 15, 1);
    let mut n = Node::follower(config, obs("7", rec.clone()));
    let mut at = vec![n.now];
    while n.timeout().is_some_and(|t| t < until) {
        at.push(n.fire());
        if n.has_action() {
            match n.action() {
                Action::Get { op } => n.answer(op, Ok(obs("7", rec.clone()))),
                other => panic!("no write before the lease expires: {other:?}"),
            }
        }
    }
    at
}

/// Candidates retry every `retry_period × [1, 1 + jitter)`: checked for many seeds;
/// the jitter really spreads (not a constant).
#[test]
fn jitter_stays_within_bounds_for_many_seeds() {
    let base = Config::client_go("a"); // 2 s retry, jitter 1.2: [2 s, 4.4 s)
    let (lo, hi) = (base.retry_period, base.max_retry_interval());
    assert_eq!(hi, Duration::from_millis(4_400));
    let (mut min, mut max) = (Duration::MAX, Duration::ZERO);
    let mut count = 0;
    for seed in 0..500u64 {
        let at = wakeups(base.clone().seed(seed), t(12_000));
        assert!(at.len() >= 3, "seed {seed}: {at:?}");
        for w in at.windows(2) {
            let gap = w[1] - w[0];
            assert!(gap >= lo && gap < hi, "seed {seed}: retry after {gap:?}");
            min = min.min(gap);
            max = max.max(gap);
            count += 1;
        }
    }
    assert!(count > 1_000);
    assert!(
        min < Duration::from_millis(2_100),
        "jitter spreads low: {min:?}"
    );
    assert!(
        max > Duration::from_millis(4_300),
        "jitter spreads high: {max:?}"
    );
}

/// The seed replays a run exactly; different seeds give different runs.
#[test]
fn jitter_replays_from_its_seed() {
    let base = Config::client_go("a");
    let run = |seed| wakeups(base.clone().seed(seed), t(12_000));
    assert_eq!(run(42), run(42));
    let distinct: std::collections::HashSet<_> = (0..20u64).map(run).collect();
    assert!(
        distinct.len() >= 19,
        "{} distinct runs of 20",
        distinct.len()
    );
}

/// Replicas must not poll in lockstep: configurations that set no seed (the
/// presets' default) draw their jitter from the identity and from entropy unique
/// to the process, so two candidates with different identities poll at different
/// instants, and so do two that share an identity by mistake. (The presets once
/// set seed 0: every replica, the sidecar's included, polled at the same instants.)
#[test]
fn default_seeds_differ_per_identity_and_per_instance() {
    let until = t(12_000);
    let a = wakeups(Config::client_go("replica-a"), until);
    let b = wakeups(Config::client_go("replica-b"), until);
    assert_ne!(
        a[1..],
        b[1..],
        "different identities poll at different instants"
    );
    let a_again = wakeups(Config::client_go("replica-a"), until);
    assert_ne!(
        a[1..],
        a_again[1..],
        "the same identity twice: different instants"
    );
    assert_eq!(Config::client_go("x").seed, None, "presets derive a seed");
    assert_eq!(
        Config::client_go("x").seed(3).seed,
        Some(3),
        "tests set one"
    );
}

/// Without jitter, retries come exactly every retry period.
#[test]
fn zero_jitter_retries_exactly_every_retry_period() {
    let mut cfg = Config::client_go("a");
    cfg.jitter = 0.0;
    let at = wakeups(cfg, t(12_000));
    assert_eq!(
        at,
        (0..6).map(|k| t(2_000 * k)).collect::<Vec<_>>(),
        "every 2 s"
    );
}

/// `handle_timeout` is idempotent and safe to call early: nothing happens before a
/// timer is due, and a due timer fires once however often it is handled.
#[test]
fn handle_timeout_is_idempotent_and_safe_early() {
    let mut n = Node::leader(fast("a"), "1");
    let due = n.timeout().expect("renew timer");
    assert_eq!(due, t(250));
    for early in [0, 1, 100, 249] {
        n.advance_to(t(early));
        n.advance_to(t(early));
        n.no_action();
        n.no_events();
        assert_eq!(n.timeout(), Some(due));
    }
    n.advance_to(t(250));
    let (op, _, record) = n.update();
    for _ in 0..3 {
        n.advance_to(t(250));
        n.no_action();
        n.no_events();
    }
    assert_eq!(n.timeout(), Some(t(750)), "only the renew's request timer");
    n.answer(op, Ok(obs("2", stamped(record, 2))));
    assert_eq!(n.timeout(), Some(t(500)));
}

/// Time going backwards is clamped to the latest instant seen: nothing fires
/// twice, and a send time is never earlier than an instant already seen.
#[test]
fn now_going_backwards_is_clamped() {
    let mut n = Node::leader(fast("a"), "1");
    n.advance_to(t(600));
    let (op, _, record) = n.update(); // the renew due at 250 ms, sent at 600 ms
    n.advance_to(t(100)); // backwards
    n.no_action();
    n.no_events();
    n.set_clock(t(50)); // the answer comes "before" it was sent
    n.answer(op, Ok(obs("2", stamped(record, 2))));
    assert_eq!(n.elector.deadline(), Some(t(2_100)), "600 ms + 1.5 s");
    assert_eq!(n.elector.last_renew(), Some(t(600)));
    // The next renew is one retry period after 600 ms, not after 50 ms.
    assert_eq!(n.timeout(), Some(t(850)));
    n.advance_to(t(0));
    n.no_action();
    // A new elector created at a late instant and fed an earlier one.
    let mut m = Node::new_at(fast("b"), t(10_000));
    let op = m.get();
    m.set_clock(t(0));
    m.answer(op, Err(LockError::NotFound));
    let (op, record) = m.create();
    m.answer(op, Ok(obs("1", stamped(record, 1))));
    assert_eq!(m.elector.deadline(), Some(t(11_500)));
}

/// H8: configurations at the edge are rejected with the rule named, or accepted
/// only where they keep the promises; an accepted edge configuration still works.
#[test]
fn h8_edge_configurations_are_rejected_or_safe() {
    // renew_deadline = 1.2 × retry_period: rejected (client-go's rule).
    let mut c = Config::client_go("a");
    c.renew_deadline = Duration::from_millis(2_400);
    c.request_timeout = Duration::from_millis(100);
    assert!(matches!(
        Elector::new(c, t(0)),
        Err(election_core::ConfigError::RenewDeadlineNotAboveJitteredRetry { .. })
    ));
    // A fractional lease (client-go truncates 1.5 s to 1 s): rejected.
    let mut c = Config::fast("a");
    c.lease_duration = Duration::from_millis(2_500);
    assert_eq!(
        Elector::new(c, t(0)).err(),
        Some(election_core::ConfigError::LeaseNotWholeSeconds(
            Duration::from_millis(2_500)
        ))
    );
    // lease = renew_deadline: rejected.
    let mut c = Config::fast("a");
    c.renew_deadline = Duration::from_secs(2);
    assert!(matches!(
        Elector::new(c, t(0)),
        Err(election_core::ConfigError::LeaseNotAboveRenewDeadline { .. })
    ));
    // An empty identity: rejected.
    assert_eq!(
        Elector::new(Config::fast(""), t(0)).err(),
        Some(election_core::ConfigError::EmptyIdentity)
    );
    // lease = renew_deadline + ε: accepted, tolerating almost no clock-rate
    // difference, and the deadline still comes before the lease ends.
    let mut c = Config::client_go("a");
    c.lease_duration = Duration::from_secs(11);
    c.renew_deadline = Duration::from_millis(10_999);
    assert!(c.tolerated_clock_ratio() < 1.001);
    let mut n = Node::leader(c, "1");
    assert_eq!(n.elector.deadline(), Some(t(10_999)));
    n.advance_to(t(10_999));
    assert!(
        !n.elector.is_leader(n.now),
        "stops before others may take over at 11 s"
    );
}
