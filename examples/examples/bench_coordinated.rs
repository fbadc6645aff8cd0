//! Coordinated against classic leader election on the Lease, in one run, over
//! the API emulator (the coordinator's timings scaled by 0.1: a 0.5 s ack window
//! and look interval).
//!
//! - **graceful hand-over**: the leader leaves (a coordinated one stops its
//!   candidacy first, then releases); from its `StoppedLeading` (it releases
//!   right after) to the next leader's first write after the release (its
//!   acquisition, or its claim of the coordinator's assignment) and to the next
//!   `StartedLeading`;
//! - **crash failover**: the leader's process is aborted (no release, its
//!   candidacy left in place unanswered); from its last write's commit to the
//!   next `StartedLeading`, minus the lease duration.
//!
//! Three replicas with `Config::fast` (2 s lease, 250 ms retry) on tokio, a
//! replacement joining after each run. Times are the wall clock at the state
//! hooks and the instant the emulator recorded each write (once handled), in one
//! process.
//!
//! Run: `cargo run --release --example bench_coordinated` (about two minutes), or
//! with `-- --quick` for a smoke run of a few iterations.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use adapter_tokio::TokioRuntime;
use election_core::{Config, Event};
use election_driver::{Builder, Change, Handle, LeadershipState};
use examples::report_ms;
use kube_emulator::{Coordinator, Emulator, Resource};
use lock_kube::candidate::LeaseCandidate;
use lock_lease::LeaseLock;
use test_kit::poll::Poll;

const NS: &str = "default";

/// One replica: its election (with, when coordinated, its candidacy beside it,
/// withdrawn by the shutdown before the release).
struct Replica {
    name: String,
    handle: Handle,
}

/// Three replicas on one Lease, replaced as they leave.
struct Pool {
    emu: Arc<Emulator>,
    lease: &'static str,
    coordinated: bool,
    replicas: Vec<Replica>,
    /// Every `StartedLeading`: who, and the wall time its hook ran.
    started: Arc<Mutex<Vec<(String, SystemTime)>>>,
    /// Every `StoppedLeading`, likewise.
    stopped: Arc<Mutex<Vec<(String, SystemTime)>>>,
    next: u64,
}

impl Pool {
    async fn new(emu: Arc<Emulator>, lease: &'static str, coordinated: bool) -> Self {
        let mut pool = Pool {
            emu,
            lease,
            coordinated,
            replicas: Vec::new(),
            started: Arc::default(),
            stopped: Arc::default(),
            next: 0,
        };
        while pool.replicas.len() < 3 {
            pool.add();
        }
        pool
    }

    fn add(&mut self) {
        self.next += 1;
        let name = format!("{}-{}", self.lease, self.next);
        let client = lock_kube::lock_client(self.emu.kube_config(&name)).expect("client");
        let mut config = Config::fast(name.as_str()).seed(self.next);
        if self.coordinated {
            config = config.coordinated();
        }
        let candidate = self.coordinated.then(|| {
            LeaseCandidate::builder(client.clone(), NS, &name, self.lease)
                .binary_version("1.0.0")
                .request_timeout(config.request_timeout)
                .build()
                .expect("candidacy")
        });
        let (started, stopped) = (self.started.clone(), self.stopped.clone());
        let hook = move |s: &LeadershipState| {
            let log = match s.change {
                Change::Elector(Event::StartedLeading { .. }) => &started,
                Change::Elector(Event::StoppedLeading { .. }) => &stopped,
                _ => return,
            };
            let now = SystemTime::now();
            log.lock().unwrap().push((s.identity.to_string(), now));
        };
        let lock = LeaseLock::builder(client, NS, self.lease)
            .without_events()
            .build()
            .expect("names");
        let mut builder = Builder::new(lock, config).on_state(hook);
        if let Some(candidate) = candidate {
            builder =
                builder.companion(move |stop| async move { candidate.run(stop.cancelled()).await });
        }
        let handle = builder
            .spawn(TokioRuntime::current().expect("tokio"))
            .expect("config");
        self.replicas.push(Replica { name, handle });
    }

    /// Who leads now (polled every millisecond, for at most `limit`).
    async fn leader(&self, limit: Duration) -> Option<usize> {
        Poll::within(limit)
            .leader(&self.replicas, |r| r.handle.is_leader())
            .await
    }

    /// Waits for a `StartedLeading` after the first `seen` ones.
    async fn next_start(&self, seen: usize, limit: Duration) -> Option<(String, SystemTime)> {
        Poll::within(limit)
            .every(Duration::from_micros(200))
            .entry(&self.started, seen)
            .await
    }

    fn writes(&self) -> Vec<(String, SystemTime, String)> {
        self.emu
            .committed_writes()
            .into_iter()
            .filter(|w| w.resource == Resource::Lease && w.name == self.lease)
            .map(|w| {
                let holder = w
                    .object
                    .as_ref()
                    .and_then(|o| o["spec"]["holderIdentity"].as_str())
                    .unwrap_or_default()
                    .to_owned();
                (w.client, w.at, holder)
            })
            .collect()
    }

    /// One graceful hand-over: (the leader's stop -> the next leader's first
    /// write, the stop -> the next start), in ms; or why it could not be measured.
    async fn handover(&mut self) -> Result<(f64, f64), String> {
        let i = self
            .leader(Duration::from_secs(15))
            .await
            .ok_or("no leader")?;
        let seen = self.started.lock().unwrap().len();
        let before = self.writes().len();
        let r = self.replicas.remove(i);
        r.handle.shutdown().await;
        let measured = self.measure_handover(&r.name, seen, before).await;
        self.add();
        // The newcomer settles for more than a lease: a coordinated replica that
        // started less than a lease ago waits out the rest of it when chosen
        // (design §4 "Coordinated election"); this measures the steady state.
        tokio::time::sleep(Duration::from_millis(2_300)).await;
        measured
    }

    async fn measure_handover(
        &self,
        left: &str,
        seen: usize,
        before: usize,
    ) -> Result<(f64, f64), String> {
        let (next, at) = self
            .next_start(seen, Duration::from_secs(15))
            .await
            .ok_or("no next leader within 15 s")?;
        let stop = self
            .stopped
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|(who, _)| who == left)
            .ok_or_else(|| format!("{left} reported no stop"))?
            .1;
        // The first write of the next leader after the leaving one's release,
        // in the emulator's commit order.
        let writes = self.writes();
        let after = &writes[before..];
        let released = after
            .iter()
            .position(|(c, _, h)| c == left && h.is_empty())
            .ok_or_else(|| format!("no release by {left} in {after:?}"))?;
        let first = after[released..]
            .iter()
            .find(|(c, _, _)| *c == next)
            .ok_or_else(|| format!("no write by {next} after the release in {after:?}"))?
            .1;
        let ms = |a: SystemTime, b: SystemTime| match b.duration_since(a) {
            Ok(d) => d.as_secs_f64() * 1e3,
            Err(e) => -e.duration().as_secs_f64() * 1e3,
        };
        Ok((ms(stop, first), ms(stop, at)))
    }

    /// One crash: last write -> next start, minus the lease, in ms.
    async fn failover(&mut self) -> Option<f64> {
        let i = self.leader(Duration::from_secs(15)).await?;
        let seen = self.started.lock().unwrap().len();
        let r = self.replicas.remove(i);
        // The process is gone: its requests go unanswered, so its candidacy,
        // stopped with the aborted driver, acks nothing and deletes nothing.
        self.emu.faults(&r.name).hang();
        r.handle.abort();
        let (_, at) = self.next_start(seen, Duration::from_secs(15)).await?;
        let last = self.writes().iter().rev().find(|(c, _, _)| *c == r.name)?.1;
        let lease = Config::fast("x").lease_duration.as_secs_f64() * 1e3;
        let ms = at.duration_since(last).ok()?.as_secs_f64() * 1e3 - lease;
        self.add();
        tokio::time::sleep(Duration::from_millis(300)).await;
        Some(ms)
    }

    async fn close(self) {
        for r in self.replicas {
            r.handle.shutdown().await;
        }
    }
}

async fn measure(emu: &Arc<Emulator>, lease: &'static str, coordinated: bool, runs: usize) {
    let mode = if coordinated {
        "coordinated"
    } else {
        "classic"
    };
    let mut pool = Pool::new(emu.clone(), lease, coordinated).await;
    let (mut first, mut start, mut failed) = (Vec::new(), Vec::new(), 0);
    for _ in 0..runs {
        match pool.handover().await {
            Ok((f, s)) => {
                first.push(f);
                start.push(s);
            }
            Err(why) => {
                eprintln!("{mode}: a hand-over not measured: {why}");
                failed += 1;
            }
        }
    }
    report_ms(
        &format!("{mode}: hand-over, stop -> next leader's first write"),
        first,
        failed,
    );
    report_ms(
        &format!("{mode}: hand-over, stop -> next leader leads"),
        start,
        failed,
    );
    let (mut xs, mut failed) = (Vec::new(), 0);
    for _ in 0..runs {
        match pool.failover().await {
            Some(ms) => xs.push(ms),
            None => failed += 1,
        }
    }
    report_ms(
        &format!("{mode}: crash, last write -> next leader leads, beyond the lease"),
        xs,
        failed,
    );
    pool.close().await;
}

#[tokio::main]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runs = if quick { 2 } else { 15 };
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("machine: {cpus} CPUs, {}", examples::cpu_model());
    println!(
        "profile: {}; Config::fast (lease 2 s, retry 250 ms); Lease lock on the emulator; coordinator scaled 0.1",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    let emu = Arc::new(
        Emulator::builder()
            .coordinator(Coordinator::default().scaled(0.1))
            .start()
            .await
            .expect("emulator"),
    );
    measure(&emu, "classic", false, runs).await;
    measure(&emu, "coordinated", true, runs).await;
}
