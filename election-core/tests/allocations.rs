//! Steady state allocates nothing: a leader's renew cycle (timer, action, answer,
//! events, timeout) and a follower's handling of watch events make zero heap
//! allocations inside the elector's calls, once warmed up.
//!
//! The counting allocator is `allocation-counter`'s (this workspace forbids the
//! `unsafe` a global allocator needs); it counts per thread, so the test harness's
//! other threads do not disturb the figures. Inputs are built before the counted
//! region; only the elector's own calls are inside it.

use allocation_counter::measure;
use election_core::{
    Action, Config, Elector, Event, Input, Instant, LockRecord, Observation, Stamp, Version,
    WallTime, WatchEvent,
};

fn stamped(mut r: LockRecord) -> LockRecord {
    r.acquire_time = Stamp::At(WallTime::new(1, 0));
    r.renew_time = Stamp::At(WallTime::new(2, 0));
    r
}

/// A leader at time zero, renewed a few times (warm-up). Returns it, the instant,
/// and its record.
fn warm_leader() -> (Elector, Instant, LockRecord) {
    let mut now = Instant::ZERO;
    let mut e = Elector::new(Config::fast("a").seed(1), now).expect("valid");
    let mut version = 0u64;
    let mut record = LockRecord::default();
    for round in 0..=20 {
        while let Some(a) = e.poll_action() {
            let result = match a.clone() {
                Action::Get { .. } => Err(election_core::LockError::NotFound),
                Action::Create { record: r, .. } | Action::Update { record: r, .. } => {
                    version += 1;
                    record = stamped(r);
                    Ok(Observation::new(
                        version.to_string().as_str(),
                        record.clone(),
                    ))
                }
            };
            e.handle(a.op().answer(result), now);
        }
        while e.poll_event().is_some() {}
        if round == 20 {
            break; // every call answered, every event drained
        }
        now = e.poll_timeout().expect("timer").max(now);
        e.handle_timeout(now);
    }
    assert!(e.is_leader(now));
    assert_eq!(e.stats().lock_errors, 0);
    (e, now, record)
}

#[test]
fn the_counter_counts() {
    let info = measure(|| {
        std::hint::black_box(Box::new(1u64));
    });
    assert_eq!(info.count_total, 1);
}

#[test]
fn leader_renew_cycle_allocates_nothing_in_steady_state() {
    let (mut e, mut now, record) = warm_leader();
    // Answers prepared ahead: one observation per cycle, versions distinct.
    let cycles = 200u64;
    let answers: Vec<Observation> = (0..cycles * 2)
        .map(|k| Observation::new(Version::new(format!("{}", 1_000 + k)), record.clone()))
        .collect();
    let mut answers = answers.into_iter();
    let mut renews = 0u64;
    let info = measure(|| {
        for _ in 0..cycles {
            let at = e.poll_timeout().expect("renew timer");
            now = at.max(now);
            e.handle_timeout(now);
            while let Some(action) = e.poll_action() {
                let op = action.op();
                let answer = answers.next().expect("prepared");
                // The action (a clone of the cached record) is dropped here: a
                // driver hands it to the lock; dropping frees, never allocates.
                drop(action);
                e.handle(op.answer(Ok(answer)), now);
                renews += 1;
            }
            while let Some(ev) = e.poll_event() {
                drop(ev);
            }
        }
    });
    assert!(renews >= cycles / 2, "the loop renewed: {renews}");
    assert!(e.is_leader(now));
    assert_eq!(e.stats().lock_errors, 0, "a clean steady state");
    assert_eq!(e.stats().slow_path, 0, "never read");
    println!(
        "leader: {renews} renews in {cycles} cycles, {} allocations, {:?}",
        info.count_total,
        e.stats()
    );
    assert_eq!(info.count_total, 0, "allocations in {renews} renew cycles");
}

#[test]
fn follower_watch_events_allocate_nothing_in_steady_state() {
    let mut now = Instant::ZERO;
    let mut e = Elector::new(Config::fast("f").seed(3), now).expect("valid");
    let op = e.poll_action().expect("first read").op();
    let mut held = LockRecord {
        holder: "b".into(),
        lease_duration_secs: Some(2),
        ..LockRecord::default()
    };
    held = stamped(held);
    e.handle(op.answer(Ok(Observation::new("1", held.clone()))), now);
    e.handle(Input::WatchActive(true), now);
    while e.poll_event().is_some() {}
    // Warm-up with a few watch events.
    let step = std::time::Duration::from_millis(250);
    for k in 0..10u64 {
        now = now + step;
        let ev = WatchEvent::Changed(Observation::new(
            Version::new(format!("{}", 10 + k)),
            held.clone(),
        ));
        e.handle(Input::Watch(ev), now);
        while e.poll_action().is_some() {}
        while e.poll_event().is_some() {}
    }
    let inputs: Vec<Input> = (0..500u64)
        .map(|k| {
            Input::Watch(WatchEvent::Changed(Observation::new(
                Version::new(format!("{}", 100 + k)),
                held.clone(),
            )))
        })
        .collect();
    let mut inputs = inputs.into_iter();
    let mut events = 0;
    let info = measure(|| {
        for _ in 0..500 {
            now = now + step;
            e.handle(inputs.next().expect("prepared"), now);
            e.handle_timeout(now);
            while let Some(a) = e.poll_action() {
                drop(a);
            }
            while let Some(ev) = e.poll_event() {
                if !matches!(ev, Event::Warning(_)) {
                    events += 1;
                }
            }
        }
    });
    assert!(!e.is_leader(now));
    println!(
        "follower: 500 watch events, {} allocations",
        info.count_total
    );
    assert_eq!(
        info.count_total, 0,
        "allocations for 500 watch events ({events} events)"
    );
}
