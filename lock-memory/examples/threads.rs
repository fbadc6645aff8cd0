//! Three electors on plain threads, no async runtime at all: each drives its
//! `Elector` with the blocking calls of a `MemoryLock`. After two seconds the
//! leader is partitioned away from the store; another takes over once its lease
//! ran out; at five seconds the partition heals; at seven everyone shuts down.
//!
//! Run with `cargo run -p lock-memory --example threads`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant as StdInstant};

use election_core::{Config, Elector, Event, Instant, answer_calls};
use lock_memory::{MemoryLock, MemoryStore};

/// The elector's clock: time since the example started.
fn now(start: StdInstant) -> Instant {
    Instant::from_nanos(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX))
}

/// Runs one elector until `stop` is set, then shuts it down and releases.
fn run(name: &str, lock: MemoryLock, start: StdInstant, stop: Arc<AtomicBool>) {
    let mut elector = match Elector::new(Config::fast(name), now(start)) {
        Ok(e) => e,
        Err(e) => return eprintln!("{name}: bad configuration: {e}"),
    };
    let mut shutting_down = false;
    loop {
        if stop.load(Ordering::Relaxed) && !shutting_down {
            shutting_down = true;
            elector.shutdown(now(start));
        }
        answer_calls(
            &mut elector,
            |action| lock.blocking_call(&action),
            || now(start),
        );
        while let Some(event) = elector.poll_event() {
            println!("{} {name}: {event:?}", now(start));
            match event {
                // No leader work to drain in this example.
                Event::Draining { .. } => elector.work_stopped(now(start)),
                Event::Terminated => return,
                _ => {}
            }
        }
        let wake = elector
            .poll_timeout()
            .unwrap_or(now(start) + Duration::from_millis(50));
        let wait = wake
            .saturating_duration_since(now(start))
            .min(Duration::from_millis(50));
        thread::sleep(wait);
        elector.handle_timeout(now(start));
    }
}

fn main() {
    let store = MemoryStore::with_seed(1);
    let start = StdInstant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|name| {
            let (lock, stop) = (store.client(name), stop.clone());
            thread::spawn(move || run(name, lock, start, stop))
        })
        .collect();

    thread::sleep(Duration::from_secs(2));
    let leader = store.current().map(|o| o.record.holder.to_string());
    if let Some(leader) = &leader {
        println!("{} -- partitioning the leader {leader}", now(start));
        store.partition(leader);
    }
    thread::sleep(Duration::from_secs(3));
    if let Some(leader) = &leader {
        println!("{} -- healing {leader}", now(start));
        store.heal(leader);
    }
    thread::sleep(Duration::from_secs(2));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }

    println!("-- write log");
    for w in store.write_log() {
        let holder = w.record.as_ref().map(|r| r.holder.to_string());
        println!(
            "#{} v{} {:?} by {}: holder {:?}",
            w.seq, w.version, w.kind, w.client, holder
        );
    }
}
