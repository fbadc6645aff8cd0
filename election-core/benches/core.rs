//! Cost of the core per input, allocations per renew cycle, and memory per elector.
//!
//! Run: `cargo bench -p election-core --bench core`. Smoke mode for CI (each
//! benchmark once, no measurement): `cargo bench -p election-core --bench core -- --test`;
//! a short run: `-- --quick`.
//!
//! Before the timed benchmarks it prints, measured here with a counting allocator
//! (`allocation-counter`, per thread):
//! - `size_of::<Elector>()` and the heap an elector owns after warm-up;
//! - heap allocations per steady-state renew cycle and per watch event.

use std::hint::black_box;
use std::time::Duration;

use allocation_counter::measure;
use criterion::{BatchSize, Criterion, Throughput, criterion_group};
use election_core::{
    Action, Config, Elector, Input, Instant, LockError, LockRecord, Observation, Stamp, Version,
    WallTime, WatchEvent,
};

/// Observations with distinct versions, used round-robin as answers (more of them
/// than the elector remembers of its own writes, so none reads as a stale echo).
fn ring(record: &LockRecord, n: u64) -> Vec<Observation> {
    (0..n)
        .map(|k| Observation::new(Version::new(format!("{}", 10_000 + k)), record.clone()))
        .collect()
}

/// A leader that created the lock and renewed a few times; every call answered.
fn warm_leader() -> (Elector, Instant, LockRecord) {
    let mut now = Instant::ZERO;
    let mut e = Elector::new(Config::fast("leader").seed(1), now).expect("valid");
    let mut version = 0u64;
    let mut record = LockRecord::default();
    for round in 0..=20 {
        while let Some(a) = e.poll_action() {
            let result = match a.clone() {
                Action::Get { .. } => Err(LockError::NotFound),
                Action::Create { record: r, .. } | Action::Update { record: r, .. } => {
                    version += 1;
                    record = r;
                    record.acquire_time = Stamp::At(WallTime::new(1, 0));
                    record.renew_time = Stamp::At(WallTime::new(2, 0));
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
            break;
        }
        now = e.poll_timeout().expect("timer").max(now);
        e.handle_timeout(now);
    }
    assert!(e.is_leader(now), "warm-up made a leader");
    (e, now, record)
}

/// A follower watching a lock held by another; a few watch events handled.
fn warm_follower() -> (Elector, Instant, LockRecord) {
    let mut now = Instant::ZERO;
    let mut e = Elector::new(Config::fast("follower").seed(2), now).expect("valid");
    let held = LockRecord {
        holder: "leader".into(),
        lease_duration_secs: Some(2),
        acquire_time: Stamp::At(WallTime::new(1, 0)),
        renew_time: Stamp::At(WallTime::new(2, 0)),
        ..LockRecord::default()
    };
    let op = e.poll_action().expect("first read").op();
    e.handle(op.answer(Ok(Observation::new("1", held.clone()))), now);
    e.handle(Input::WatchActive(true), now);
    for k in 0..10u64 {
        now = now + Duration::from_millis(250);
        let obs = Observation::new(Version::new(format!("{}", 2 + k)), held.clone());
        e.handle(Input::Watch(WatchEvent::Changed(obs)), now);
        while e.poll_action().is_some() {}
    }
    while e.poll_event().is_some() {}
    (e, now, held)
}

/// One steady-state renew: timer, the renew action, its answer, the events.
/// Two inputs (`handle_timeout`, `handle`).
#[inline]
fn renew_cycle(e: &mut Elector, now: &mut Instant, answer: Observation) {
    *now = e.poll_timeout().expect("renew timer").max(*now);
    e.handle_timeout(*now);
    let action = e.poll_action().expect("a renew");
    e.handle(action.op().answer(Ok(answer)), *now);
    black_box(action);
    while let Some(ev) = e.poll_event() {
        black_box(ev);
    }
}

/// One watch event for a follower: the input, the timers, the drains. Two inputs.
#[inline]
fn watch_cycle(e: &mut Elector, now: &mut Instant, obs: Observation) {
    *now = *now + Duration::from_millis(250);
    e.handle(Input::Watch(WatchEvent::Changed(obs)), *now);
    e.handle_timeout(*now);
    while let Some(a) = e.poll_action() {
        black_box(a);
    }
    while let Some(ev) = e.poll_event() {
        black_box(ev);
    }
}

/// The figures that are not timings: size, heap, allocations.
fn report_memory_and_allocations() {
    println!("== election-core: memory and allocations ==");
    println!(
        "size_of::<Elector>() = {} bytes",
        std::mem::size_of::<Elector>()
    );
    let mut kept = None;
    let info = measure(|| kept = Some(warm_leader()));
    println!(
        "heap owned by a warmed-up leader (live after warm-up, record included): {} bytes in {} allocations",
        info.bytes_current, info.count_current
    );
    drop(kept);

    let (mut e, mut now, record) = warm_leader();
    let answers = ring(&record, 64);
    let cycles = 10_000usize;
    let info = measure(|| {
        for k in 0..cycles {
            renew_cycle(&mut e, &mut now, answers[k % answers.len()].clone());
        }
    });
    assert!(e.is_leader(now));
    println!(
        "leader renew cycle: {} allocations in {cycles} cycles ({:.3} per cycle)",
        info.count_total,
        info.count_total as f64 / cycles as f64
    );

    // Each event a newer version, built before the counted region (a version
    // that goes back is a replay the elector ignores, so a ring would let the
    // lease expire and measure a takeover attempt instead).
    let (mut e, mut now, held) = warm_follower();
    let events = ring(&held, cycles as u64);
    let info = measure(|| {
        for obs in events {
            watch_cycle(&mut e, &mut now, obs);
        }
    });
    assert!(!e.is_leader(now) && e.leader().is_some_and(|l| &**l == "leader"));
    println!(
        "follower watch event: {} allocations in {cycles} events ({:.3} per event)",
        info.count_total,
        info.count_total as f64 / cycles as f64
    );
}

fn bench_inputs(c: &mut Criterion) {
    let mut g = c.benchmark_group("core");
    // Each iteration is two inputs (handle_timeout + handle); per input is half.
    g.throughput(Throughput::Elements(2));

    let (mut e, mut now, record) = warm_leader();
    let answers = ring(&record, 64);
    let mut k = 0usize;
    g.bench_function("leader_renew_cycle", |b| {
        b.iter(|| {
            k = (k + 1) % answers.len();
            renew_cycle(&mut e, &mut now, answers[k].clone());
        })
    });

    // Each event a newer version (see above), made outside the timed part.
    let (mut e, mut now, held) = warm_follower();
    let mut version = 10_000u64;
    g.bench_function("follower_watch_event", |b| {
        b.iter_batched(
            || {
                version += 1;
                Observation::new(Version::new(format!("{version}")), held.clone())
            },
            |obs| watch_cycle(&mut e, &mut now, obs),
            BatchSize::SmallInput,
        )
    });

    let (mut e, now, _) = warm_leader();
    g.throughput(Throughput::Elements(1));
    g.bench_function("handle_timeout_early", |b| {
        b.iter(|| {
            e.handle_timeout(black_box(now));
        })
    });
    g.finish();
}

criterion_group!(benches, bench_inputs);

fn main() {
    report_memory_and_allocations();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
