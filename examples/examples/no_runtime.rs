//! Leader election without any async runtime: three plain threads, each driving
//! an `Elector` with the memory lock's blocking calls and `std::thread::sleep`.
//! This is the whole driver loop for a synchronous program; the async driver in
//! `election-driver` does the same with timers and a watch.
//!
//! The story: three candidates elect a leader, the leader shuts down (drain,
//! release) and another takes over at its next poll, then everyone shuts down.
//!
//! Run from the repository root: `cargo run --example no_runtime`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant as StdInstant};

use election_core::{Config, Elector, Event, answer_calls};
use election_driver::BootClock;
use lock_memory::{MemoryLock, MemoryStore};

/// The longest one sleep lasts, so that a stop request is noticed promptly.
const MAX_NAP: Duration = Duration::from_millis(50);

/// One candidate's loop. Returns when its elector has terminated.
fn run(name: &str, lock: MemoryLock, stop: Arc<AtomicBool>, clock: BootClock, start: StdInstant) {
    let say = |what: String| {
        println!(
            "{:>8.1} ms  {name:<8} {what}",
            start.elapsed().as_secs_f64() * 1e3
        );
    };
    let config = Config::fast(name).seed(name.len() as u64);
    // A blocking call that hangs gives up after the request timeout, as the async
    // driver's calls do, so no call outlives the renew deadline (the memory lock's
    // default blocking timeout is longer).
    let lock = lock.with_blocking_timeout(config.request_timeout);
    let mut elector = match Elector::new(config, clock.now()) {
        Ok(e) => e,
        Err(e) => return say(format!("invalid configuration: {e}")),
    };
    let mut stopping = false;
    loop {
        // 1. The lock calls the elector wants, each answered at once (blocking).
        answer_calls(
            &mut elector,
            |action| lock.blocking_call(&action),
            || clock.now(),
        );
        // 2. Events. There is no leader work to drain here, so a drain ends at once.
        let mut more = false;
        while let Some(event) = elector.poll_event() {
            match event {
                Event::StartedLeading { term } => say(format!("STARTED LEADING (term {term})")),
                Event::Draining { reason } => {
                    say(format!("draining ({reason})"));
                    elector.work_stopped(clock.now());
                    more = true; // the release write is now due
                }
                Event::StoppedLeading { term, reason } => {
                    say(format!("stopped leading (term {term}: {reason})"))
                }
                Event::LeaderChanged { leader } => say(format!("sees leader {leader:?}")),
                Event::Warning(w) => say(format!("warning: {w}")),
                Event::Terminated => {
                    say("terminated".to_owned());
                    return;
                }
                other => say(format!("{other:?}")), // `Event` may grow
            }
        }
        if more {
            continue;
        }
        // 3. A stop request from the main thread: shut down (drain, release).
        if stop.load(Ordering::Acquire) && !stopping {
            stopping = true;
            elector.shutdown(clock.now());
            continue;
        }
        // 4. Sleep until the next timeout (at most MAX_NAP), then handle it.
        let now = clock.now();
        if let Some(at) = elector.poll_timeout() {
            if at > now {
                thread::sleep((at - now).min(MAX_NAP));
            }
        } else {
            thread::sleep(MAX_NAP);
        }
        elector.handle_timeout(clock.now());
    }
}

fn main() {
    let start = StdInstant::now();
    let clock = BootClock::new();
    let store = MemoryStore::new();
    let names = ["alpha", "bravo", "charlie"];
    let stops: Vec<Arc<AtomicBool>> = names.iter().map(|_| Arc::default()).collect();
    let threads: Vec<_> = names
        .iter()
        .zip(&stops)
        .map(|(&name, stop)| {
            let (lock, stop) = (store.client(name), stop.clone());
            thread::spawn(move || run(name, lock, stop, clock, start))
        })
        .collect();

    // Wait for a leader (the creator of a fresh lock waits one lease first).
    let holder = || {
        store
            .current()
            .map(|o| o.record.holder.to_string())
            .filter(|h| !h.is_empty())
    };
    thread::sleep(Duration::from_millis(3_000));
    let Some(leader) = holder() else {
        eprintln!("no leader after 3 s");
        std::process::exit(1);
    };
    println!(
        "{:>8.1} ms  main     == stopping the leader {leader}",
        start.elapsed().as_secs_f64() * 1e3
    );
    let i = names.iter().position(|n| *n == leader).unwrap_or(0);
    stops[i].store(true, Ordering::Release);
    thread::sleep(Duration::from_millis(1_500));
    println!(
        "{:>8.1} ms  main     == lock now held by {:?}; stopping everyone",
        start.elapsed().as_secs_f64() * 1e3,
        holder()
    );
    for s in &stops {
        s.store(true, Ordering::Release);
    }
    for t in threads {
        if t.join().is_err() {
            eprintln!("a candidate thread panicked");
            std::process::exit(1);
        }
    }
    println!(
        "lock at exit: {:?}",
        store.current().map(|o| o.record.holder)
    );
}
