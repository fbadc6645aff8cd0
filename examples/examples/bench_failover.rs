//! Hand-over and failover latencies of the driver on the memory lock, in real time.
//!
//! - **graceful hand-over**: from the leader's release write (the store's log) to
//!   the next `StartedLeading` (the new leader's state hook), with followers that
//!   watch the lock, and as a baseline with followers that poll (client-go's
//!   behaviour: the lock offers no watch);
//! - **crash failover beyond the lease**: from the crashed leader's last renew
//!   write to the next `StartedLeading`, minus the lease duration.
//!
//! Three candidates with `Config::fast` (2 s lease, 250 ms retry), tokio's
//! multi-threaded runtime with the suspend-aware clock; a replacement candidate
//! joins after each run so that there are always three.
//!
//! Run: `cargo run --release --example bench_failover` (about a minute), or with
//! `-- --quick` for a smoke run of a few iterations.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use adapter_tokio::TokioRuntime;
use election_core::Event;
use election_core::{Config, WallTime};
use election_driver::{Builder, Change, Handle};
use examples::report_ms;
use lock_memory::MemoryStore;
use test_kit::poll::Poll;

fn wall_ms(w: &WallTime) -> f64 {
    w.unix_secs as f64 * 1e3 + f64::from(w.nanos) / 1e6
}

/// Three candidates on one store, replaced as they leave.
struct Pool {
    rt: TokioRuntime,
    store: MemoryStore,
    watch: bool,
    nodes: Vec<(String, Handle)>,
    /// Every `StartedLeading`: who, and the wall time the driver delivered it.
    started: Arc<Mutex<Vec<(String, WallTime)>>>,
    next: u64,
}

impl Pool {
    fn new(rt: TokioRuntime, watch: bool) -> Self {
        let mut pool = Pool {
            rt,
            store: MemoryStore::new(),
            watch,
            nodes: Vec::new(),
            started: Arc::default(),
            next: 0,
        };
        while pool.nodes.len() < 3 {
            pool.add();
        }
        pool
    }

    fn add(&mut self) {
        self.next += 1;
        let name = format!("node-{}", self.next);
        let started = self.started.clone();
        let config = Config::fast(name.as_str()).seed(self.next);
        let hook = move |s: &election_driver::LeadershipState| {
            if let Change::Elector(Event::StartedLeading { .. }) = s.change {
                let now = WallTime::from_system_time(SystemTime::now());
                started.lock().unwrap().push((s.identity.to_string(), now));
            }
        };
        let lock = self.store.client(&name);
        // Without a watch, followers poll, as client-go's do.
        let lock = if self.watch {
            lock
        } else {
            lock.without_watch()
        };
        let handle = Builder::new(lock, config)
            .on_state(hook)
            .spawn(self.rt.clone())
            .expect("valid configuration");
        self.nodes.push((name, handle));
    }

    /// Who leads now (polled every millisecond, for at most `limit`).
    async fn leader(&self, limit: Duration) -> Option<usize> {
        Poll::within(limit)
            .leader(&self.nodes, |(_, h)| h.is_leader())
            .await
    }

    /// Waits for a `StartedLeading` after the first `seen` ones.
    async fn next_start(&self, seen: usize, limit: Duration) -> Option<(String, WallTime)> {
        Poll::within(limit)
            .every(Duration::from_micros(200))
            .entry(&self.started, seen)
            .await
    }

    /// One graceful hand-over: release write -> next StartedLeading, in ms.
    async fn handover(&mut self) -> Option<f64> {
        let i = self.leader(Duration::from_secs(6)).await?;
        let seen = self.started.lock().unwrap().len();
        let log_len = self.store.write_log().len();
        let (name, handle) = self.nodes.remove(i);
        handle.shutdown().await;
        let (_, at) = self.next_start(seen, Duration::from_secs(3)).await?;
        let log = self.store.write_log();
        let release = log[log_len..].iter().find(|w| {
            *w.client == *name && w.record.as_ref().is_some_and(|r| r.holder.is_empty())
        })?;
        let ms = wall_ms(&at) - wall_ms(&release.wall);
        self.add();
        tokio::time::sleep(Duration::from_millis(100)).await; // the newcomer settles
        Some(ms)
    }

    /// One crash: last renew write -> next StartedLeading, minus the lease, in ms.
    async fn failover(&mut self) -> Option<f64> {
        let i = self.leader(Duration::from_secs(6)).await?;
        let seen = self.started.lock().unwrap().len();
        let (name, handle) = self.nodes.remove(i);
        handle.abort();
        let (_, at) = self.next_start(seen, Duration::from_secs(6)).await?;
        let log = self.store.write_log();
        let last = log.iter().rev().find(|w| *w.client == *name)?;
        let lease = Config::fast("x").lease_duration.as_secs_f64() * 1e3;
        let ms = wall_ms(&at) - wall_ms(&last.wall) - lease;
        self.add();
        tokio::time::sleep(Duration::from_millis(100)).await;
        Some(ms)
    }

    async fn close(self) {
        for (_, h) in self.nodes {
            h.shutdown().await;
        }
    }
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (n_handover, n_polling, n_failover) = if quick { (3, 2, 2) } else { (40, 20, 15) };
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("machine: {cpus} CPUs, {}", examples::cpu_model());
    println!(
        "profile: {}; Config::fast (lease 2 s, retry 250 ms); memory lock; tokio multi-thread",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    let rt = TokioRuntime::current().expect("inside tokio");

    let mut pool = Pool::new(rt.clone(), true);
    let (mut xs, mut failed) = (Vec::new(), 0);
    for _ in 0..n_handover {
        match pool.handover().await {
            Some(ms) => xs.push(ms),
            None => failed += 1,
        }
    }
    report_ms(
        "graceful hand-over, watching followers (release -> start)",
        xs,
        failed,
    );

    let (mut xs, mut failed) = (Vec::new(), 0);
    for _ in 0..n_failover {
        match pool.failover().await {
            Some(ms) => xs.push(ms),
            None => failed += 1,
        }
    }
    report_ms(
        "crash failover beyond the lease, watching followers",
        xs,
        failed,
    );
    pool.close().await;

    let mut pool = Pool::new(rt, false);
    let (mut xs, mut failed) = (Vec::new(), 0);
    for _ in 0..n_polling {
        match pool.handover().await {
            Some(ms) => xs.push(ms),
            None => failed += 1,
        }
    }
    report_ms(
        "baseline: hand-over, polling followers (client-go-like)",
        xs,
        failed,
    );
    pool.close().await;
}
