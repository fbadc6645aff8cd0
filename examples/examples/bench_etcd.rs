//! The etcd lock beside the Lease lock on the API emulator, same timings, one run:
//!
//! - **graceful hand-over**: from the leader's `shutdown()` call (drain, release
//!   write) to the follower's `StartedLeading` (its state hook);
//! - **crash failover beyond the lease**: from the crashed leader's last renew, as
//!   an observer's watch of the lock delivered it, to the follower's
//!   `StartedLeading`, minus the lease duration;
//! - **a follower's requests per minute** in steady state (one leader renewing,
//!   one follower watching): target 0 beyond the watch it opened.
//!
//! Two candidates with `Config::fast` (2 s lease, 1.5 s renew deadline, 250 ms
//! retry, 500 ms request timeout) and the real driver on tokio's multi-threaded
//! runtime; a fresh candidate joins after each run so that there are always two.
//! etcd is a throwaway one (`lock_etcd::testing`, data on tmpfs); the Lease lock
//! runs against `kube-emulator` in the same process.
//!
//! Run: `cargo run --release --example bench_etcd` (about two
//! minutes), or `-- --quick` for a smoke run of a few iterations.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adapter_tokio::TokioRuntime;
use election_core::{Config, Event, Lock, WatchEvent};
use election_driver::{Builder, Change, Handle};
use futures_lite::StreamExt;
use kube_emulator::Emulator;
use lock_etcd::testing::EtcdServer;
use test_kit::poll::Poll;

/// One backend: a lock per candidate name, and a count of a candidate's requests.
trait Backend {
    type L: Lock + Clone;
    fn name(&self) -> &'static str;
    fn lock(&self, candidate: &str) -> Self::L;
    fn requests(&self, candidate: &str, lock: &Self::L) -> u64;
}

struct Etcd(EtcdServer);

impl Backend for Etcd {
    type L = lock_etcd::EtcdLock;
    fn name(&self) -> &'static str {
        "etcd (lock-etcd, JSON gateway)"
    }
    fn lock(&self, _: &str) -> Self::L {
        self.0.lock("/bench/lock")
    }
    fn requests(&self, _: &str, lock: &Self::L) -> u64 {
        lock.requests()
    }
}

struct Lease(Emulator);

impl Backend for Lease {
    type L = lock_lease::LeaseLock;
    fn name(&self) -> &'static str {
        "Lease on kube-emulator (lock-lease)"
    }
    fn lock(&self, candidate: &str) -> Self::L {
        let client = lock_kube::lock_client(self.0.kube_config(candidate)).expect("client");
        lock_lease::LeaseLock::builder(client, "default", "bench")
            .build()
            .expect("valid names")
    }
    fn requests(&self, candidate: &str, _: &Self::L) -> u64 {
        self.0.request_counts().client_total(candidate)
    }
}

/// Two candidates, replaced as they leave.
struct Pool<'b, B: Backend> {
    backend: &'b B,
    nodes: Vec<(String, Handle, B::L)>,
    /// Every `StartedLeading`: who, when.
    started: Arc<Mutex<Vec<(String, Instant)>>>,
    next: u64,
}

impl<'b, B: Backend> Pool<'b, B> {
    fn new(backend: &'b B) -> Self {
        let mut pool = Pool {
            backend,
            nodes: Vec::new(),
            started: Arc::default(),
            next: 0,
        };
        while pool.nodes.len() < 2 {
            pool.add();
        }
        pool
    }

    fn add(&mut self) {
        self.next += 1;
        let name = format!("node-{}", self.next);
        let started = Arc::clone(&self.started);
        let hook = move |s: &election_driver::LeadershipState| {
            if let Change::Elector(Event::StartedLeading { .. }) = s.change {
                started
                    .lock()
                    .unwrap()
                    .push((s.identity.to_string(), Instant::now()));
            }
        };
        let lock = self.backend.lock(&name);
        let handle = Builder::new(lock.clone(), Config::fast(name.as_str()).seed(self.next))
            .on_state(hook)
            .spawn(TokioRuntime::current().expect("tokio"))
            .expect("valid configuration");
        self.nodes.push((name, handle, lock));
    }

    /// Who leads now (polled every 5 ms, for at most 30 s).
    async fn leader(&self) -> usize {
        Poll::within(Duration::from_secs(30))
            .every(Duration::from_millis(5))
            .leader(&self.nodes, |(_, h, _)| h.is_leader())
            .await
            .expect("no leader")
    }

    /// The first `StartedLeading` by someone other than `leaver` after `since`.
    async fn next_start(&self, leaver: &str, since: Instant) -> Instant {
        Poll::within(Duration::from_secs(30))
            .until_some(|| {
                let started = self.started.lock().unwrap();
                let found = started
                    .iter()
                    .find(|(who, at)| who != leaver && *at >= since);
                found.map(|(_, at)| *at)
            })
            .await
            .expect("nobody took over")
    }

    async fn shutdown_all(self) {
        for (_, h, _) in &self.nodes {
            h.shutdown().await;
        }
    }
}

/// Watches the lock and records when each new record arrived.
fn observe<L: Lock>(lock: &L) -> Arc<Mutex<Vec<(String, Instant)>>> {
    let seen: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let mut stream = lock.watch(None).expect("the lock watches");
    let out = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Some(Ok(event)) = stream.next().await {
            if let WatchEvent::Changed(o) = event {
                out.lock()
                    .unwrap()
                    .push((o.record.holder.to_string(), Instant::now()));
            }
        }
    });
    seen
}

#[derive(Default)]
struct Figures {
    handover_ms: Vec<f64>,
    failover_ms: Vec<f64>,
    follower_per_minute: f64,
    follower_window: Duration,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn measure<B: Backend>(
    backend: &B,
    handovers: usize,
    failovers: usize,
    window: Duration,
) -> Figures {
    let lease = Config::fast("x").lease_duration;
    let mut figures = Figures {
        follower_window: window,
        ..Figures::default()
    };
    let mut pool = Pool::new(backend);
    let leader = pool.leader().await;
    let seen = observe(&backend.lock("observer"));

    // Steady state: the follower's requests over the window.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (name, _, lock) = &pool.nodes[1 - leader];
    let before = backend.requests(name, lock);
    tokio::time::sleep(window).await;
    let after = backend.requests(name, lock);
    figures.follower_per_minute = (after - before) as f64 * 60.0 / window.as_secs_f64();

    for _ in 0..handovers {
        let i = pool.leader().await;
        // Let the newest candidate's watch start.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (name, handle, _) = pool.nodes.remove(i);
        let t0 = Instant::now();
        handle.shutdown().await;
        let at = pool.next_start(&name, t0).await;
        figures.handover_ms.push(ms(at - t0));
        pool.add();
    }
    for _ in 0..failovers {
        let i = pool.leader().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (name, handle, _) = pool.nodes.remove(i);
        let t0 = Instant::now();
        handle.abort();
        let last_renew = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(who, at)| *who == name && *at <= t0)
            .map(|(_, at)| *at)
            .next_back()
            .expect("the observer saw the leader renew");
        let at = pool.next_start(&name, t0).await;
        figures
            .failover_ms
            .push(ms(at.saturating_duration_since(last_renew)) - ms(lease));
        pool.add();
    }
    pool.shutdown_all().await;
    figures
}

fn print(name: &str, f: &Figures) {
    println!("{name}");
    for (what, v) in [
        (
            "graceful hand-over (shutdown call -> next StartedLeading)",
            &f.handover_ms,
        ),
        (
            "crash failover beyond the 2 s lease (last renew seen -> next StartedLeading - lease)",
            &f.failover_ms,
        ),
    ] {
        println!(
            "  {what}: runs {}, median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
            v.len(),
            test_kit::figures::percentile(v, 0.5),
            test_kit::figures::percentile(v, 0.9),
            test_kit::figures::percentile(v, 1.0)
        );
    }
    println!(
        "  follower requests per minute (steady state, over {:?}): {:.1}",
        f.follower_window, f.follower_per_minute
    );
}

fn run<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (handovers, failovers, window) = if quick {
        (2, 1, Duration::from_secs(2))
    } else {
        (20, 8, Duration::from_secs(60))
    };
    let started = Instant::now();
    run(async {
        let etcd = Etcd(
            EtcdServer::start()
                .await
                .expect("a throwaway etcd (run .ci/install)"),
        );
        let figures = measure(&etcd, handovers, failovers, window).await;
        print(etcd.name(), &figures);
        let lease = Lease(Emulator::start().await.expect("emulator"));
        let figures = measure(&lease, handovers, failovers, window).await;
        print(lease.name(), &figures);
    });
    println!("total {:.1} s", started.elapsed().as_secs_f64());
}
