//! Cost of the in-memory lock's calls, without faults: a read, a compare-and-swap
//! update (blocking and async), and one write delivered to many watches.
//!
//! Run with `cargo bench -p lock-memory --bench store`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use election_core::{Lock, LockRecord, Stamp};
use futures_lite::StreamExt;
use futures_lite::future::block_on;
use lock_memory::MemoryStore;

fn record() -> LockRecord {
    LockRecord {
        holder: "a".into(),
        lease_duration_secs: Some(15),
        renew_time: Stamp::Now,
        ..LockRecord::default()
    }
}

fn calls(c: &mut Criterion) {
    let store = MemoryStore::new().with_write_log_capacity(1024);
    let a = store.client("a");
    let mut obs = a.blocking_create(&record()).expect("a fresh store");

    c.bench_function("get (async, block_on)", |b| {
        b.iter(|| block_on(a.get()).expect("the lock exists"))
    });
    c.bench_function("update (blocking CAS)", |b| {
        b.iter(|| {
            obs = a
                .blocking_update(&obs.version, &record())
                .expect("only writer");
        })
    });
    c.bench_function("update (async CAS, block_on)", |b| {
        b.iter(|| {
            obs = block_on(a.update(&obs.version, &record())).expect("only writer");
        })
    });
}

fn watch_fanout(c: &mut Criterion) {
    let mut group = c.benchmark_group("write delivered to n watches");
    for n in [1usize, 10, 100] {
        let store = MemoryStore::new().with_write_log_capacity(1024);
        let a = store.client("a");
        let mut obs = a.blocking_create(&record()).expect("a fresh store");
        let mut watches: Vec<_> = (0..n)
            .map(|i| {
                store
                    .client(&format!("w{i}"))
                    .watch(Some(&obs.version))
                    .expect("the memory lock watches")
            })
            .collect();
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                obs = a
                    .blocking_update(&obs.version, &record())
                    .expect("only writer");
                for w in &mut watches {
                    block_on(w.next())
                        .expect("the watch is open")
                        .expect("no faults");
                }
            })
        });
    }
    group.finish();
}

criterion_group!(benches, calls, watch_fanout);
criterion_main!(benches);
