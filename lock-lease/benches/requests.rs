//! The Lease lock against the API emulator, the watch (this library's default)
//! against polling only (as client-go behaves), in one run so the ratios compare
//! like with like:
//!
//! - API requests per minute by each follower and by the leader, counted by the
//!   emulator per client and verb, at `Config::fast` and `Config::client_go`
//!   timings (all four groups side by side over one window), and the leader's
//!   writes with the renew interval at a third of the lease beside them;
//! - graceful handover latency: from the release write's server timestamp (the
//!   emulator's write history) to the next `StartedLeading` seen by another
//!   handle;
//! - crash failover beyond the lease: `Handle::abort` (no release), measured from
//!   the crashed leader's last committed write + lease duration to the next
//!   `StartedLeading`, and from the `abort()` call; at the fast timings with the
//!   renew interval at the retry period and at a third of the lease.
//!
//! Run with `cargo bench -p lock-lease --bench requests` (about 2 minutes).
//! Smoke mode (well under 30 s): `-- --quick`, `BENCH_QUICK=1`, or any run without
//! cargo bench's `--bench` argument (`cargo test --benches`). Environment:
//! `BENCH_SECS` = request-count window in seconds (default 60), `BENCH_HANDOVERS`
//! (default 15), `BENCH_CRASHES` (default 8).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use adapter_tokio::TokioRuntime;
use election_core::{Config, LockDelay};
use election_driver::{Builder, Handle};
use futures::StreamExt;
use kube_emulator::{Emulator, Resource, Verb};
use lock_lease::LeaseLock;
use tokio::sync::mpsc;

/// This library's way (A) or client-go's (B).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Watch,
    Poll,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Watch => "A watch",
            Mode::Poll => "B poll",
        }
    }
}

/// Timings preset, with the leader renewing every retry period (as client-go) or
/// every third of the lease (`Config::renew_interval`, on a request timeout short
/// enough for the rule `renew_interval + request_timeout < renew_deadline`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Timings {
    Fast,
    ClientGo,
    FastThird,
    ClientGoThird,
}

impl Timings {
    fn label(self) -> &'static str {
        match self {
            Timings::Fast => "fast 2s/1.5s/250ms",
            Timings::ClientGo => "client_go 15s/10s/2s",
            Timings::FastThird => "fast, renew 667ms",
            Timings::ClientGoThird => "client_go, renew 5s",
        }
    }

    fn tag(self) -> &'static str {
        match self {
            Timings::Fast => "fast",
            Timings::ClientGo => "cgo",
            Timings::FastThird => "fast3",
            Timings::ClientGoThird => "cgo3",
        }
    }

    fn config(self, id: &str) -> Config {
        let mut c = match self {
            Timings::Fast => Config::fast(id),
            Timings::ClientGo => Config::client_go(id),
            Timings::FastThird => Config::fast(id).renew_interval(Duration::from_millis(667)),
            Timings::ClientGoThird => {
                let mut c = Config::client_go(id).renew_interval(Duration::from_secs(5));
                c.request_timeout = Duration::from_secs(4);
                c
            }
        };
        // Both modes keep the presets' jitter (1.2, client-go's). Leading at once on
        // create (as client-go does) only shortens the start; steady state and the
        // measured transitions never create the Lease.
        c.lock_delay = LockDelay::Immediate;
        c
    }
}

static SEED: AtomicU64 = AtomicU64::new(1);

fn candidate(emu: &Emulator, lease: &str, id: &str, mode: Mode, timings: Timings) -> Handle {
    let config = timings
        .config(id)
        .seed(SEED.fetch_add(0x9e37_79b9, Ordering::Relaxed));
    let client = kube_support::lock_client(emu.kube_config(id)).expect("client");
    let mut b = LeaseLock::builder(client, "default", lease);
    if mode == Mode::Poll {
        b = b.polling_only();
    }
    Builder::new(b.build().expect("valid names"), config)
        .spawn(TokioRuntime::current().expect("inside tokio"))
        .expect("valid config")
}

async fn wait_leader(nodes: &[Handle]) -> usize {
    let start = Instant::now();
    loop {
        if let Some(i) = nodes.iter().position(Handle::is_leader) {
            return i;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no leader");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

// ---------------------------------------------------------------- requests

struct Rates {
    follower: f64,
    follower_reads: f64,
    follower_writes: f64,
    leader_reads: f64,
    leader_writes: f64,
    max_leader_writes: f64,
}

struct Group {
    mode: Mode,
    timings: Timings,
    ids: Vec<String>,
    nodes: Vec<Handle>,
}

/// Counts requests of all six groups over one window on one emulator (each
/// client has its own token, each group its own Lease): both modes at both
/// presets, and the watch with the longer renew interval.
async fn request_rates(window: Duration) -> Vec<(Mode, Timings, Rates)> {
    let emu = Emulator::start().await.expect("emulator");
    let mut groups = Vec::new();
    let plan = [
        (Timings::Fast, Mode::Watch),
        (Timings::Fast, Mode::Poll),
        (Timings::ClientGo, Mode::Watch),
        (Timings::ClientGo, Mode::Poll),
        (Timings::FastThird, Mode::Watch),
        (Timings::ClientGoThird, Mode::Watch),
    ];
    for (timings, mode) in plan {
        let tag = format!(
            "{}-{}",
            if mode == Mode::Watch { "watch" } else { "poll" },
            timings.tag()
        );
        let ids: Vec<String> = (0..3).map(|i| format!("{tag}-node-{i}")).collect();
        let nodes = ids
            .iter()
            .map(|id| candidate(&emu, &format!("rate-{tag}"), id, mode, timings))
            .collect();
        groups.push(Group {
            mode,
            timings,
            ids,
            nodes,
        });
    }
    let mut leaders = Vec::new();
    for g in &groups {
        leaders.push(wait_leader(&g.nodes).await);
    }
    // Past the start (first reads, failed creates, watches opening).
    tokio::time::sleep(Duration::from_secs(3)).await;
    emu.reset_request_counts();
    tokio::time::sleep(window).await;
    let counts = emu.request_counts();
    let per_min = 60.0 / window.as_secs_f64();
    let mut out = Vec::new();
    for (g, &first) in groups.iter().zip(&leaders) {
        let now = g.nodes.iter().position(Handle::is_leader);
        assert_eq!(now, Some(first), "leadership changed during the window");
        let reads = |id: &str| {
            [Verb::Get, Verb::List, Verb::Watch]
                .iter()
                .map(|&v| counts.get(id, v, Resource::Lease))
                .sum::<u64>() as f64
        };
        let writes = |id: &str| counts.client_writes(id) as f64;
        let followers: Vec<&String> = g
            .ids
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != first)
            .map(|(_, id)| id)
            .collect();
        let n = followers.len() as f64;
        let leader = &g.ids[first];
        let renew = g.timings.config("x").renew_every();
        out.push((
            g.mode,
            g.timings,
            Rates {
                follower: followers
                    .iter()
                    .map(|id| counts.client_total(id) as f64)
                    .sum::<f64>()
                    * per_min
                    / n,
                follower_reads: followers.iter().map(|id| reads(id)).sum::<f64>() * per_min / n,
                follower_writes: followers.iter().map(|id| writes(id)).sum::<f64>() * per_min / n,
                leader_reads: reads(leader) * per_min,
                leader_writes: writes(leader) * per_min,
                max_leader_writes: 60.0 / renew.as_secs_f64(),
            },
        ));
    }
    for g in groups {
        for n in g.nodes {
            n.shutdown().await;
        }
    }
    out
}

// ---------------------------------------------------------------- latencies

struct Latencies {
    handover_ms: Vec<f64>,
    handover_from_history: usize,
    /// From the `shutdown()` call (drain, report, release request included).
    handover_call_ms: Vec<f64>,
    /// Beyond the lease: from the crashed leader's last write + lease duration.
    crash_ms: Vec<f64>,
    /// From the `abort()` call.
    crash_call_ms: Vec<f64>,
}

/// Resolves when any of `nodes` (but `except`) reports that it leads; sends the
/// wall time it saw it.
fn watch_for_leader(
    nodes: &[Handle],
    except: usize,
) -> (
    mpsc::UnboundedReceiver<SystemTime>,
    Vec<tokio::task::JoinHandle<()>>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let tasks = nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != except)
        .map(|(_, n)| {
            let mut states = n.states();
            let tx = tx.clone();
            tokio::spawn(async move {
                while let Some(s) = states.next().await {
                    if s.leading() {
                        let _ = tx.send(SystemTime::now());
                        break;
                    }
                }
            })
        })
        .collect();
    (rx, tasks)
}

/// The last committed write of `client` on `lease`, by server time.
fn last_write(emu: &Emulator, client: &str, lease: &str) -> Option<SystemTime> {
    emu.write_history()
        .into_iter()
        .filter(|w| w.client == client && w.name == lease && w.committed)
        .map(|w| w.at)
        .max()
}

fn ms_between(from: SystemTime, to: SystemTime) -> f64 {
    match to.duration_since(from) {
        Ok(d) => d.as_secs_f64() * 1e3,
        Err(e) => -e.duration().as_secs_f64() * 1e3,
    }
}

async fn latencies(mode: Mode, timings: Timings, handovers: usize, crashes: usize) -> Latencies {
    let emu = Emulator::start().await.expect("emulator");
    let lease = "bench-latency";
    let lease_duration = timings.config("x").lease_duration;
    let settle = Duration::from_millis(600);
    let mut next_id = 0;
    let mut spawn = |emu: &Emulator| {
        next_id += 1;
        let id = format!("node-{next_id}");
        (id.clone(), candidate(emu, lease, &id, mode, timings))
    };
    let (mut ids, mut nodes): (Vec<String>, Vec<Handle>) = (0..3).map(|_| spawn(&emu)).unzip();
    let mut out = Latencies {
        handover_ms: Vec::new(),
        handover_from_history: 0,
        handover_call_ms: Vec::new(),
        crash_ms: Vec::new(),
        crash_call_ms: Vec::new(),
    };
    for run in 0..handovers + crashes {
        let crash = run >= handovers;
        let l = wait_leader(&nodes).await;
        // Followers in place (watches open) and the leader past its first renews.
        tokio::time::sleep(settle).await;
        let l = if nodes[l].is_leader() {
            l
        } else {
            wait_leader(&nodes).await
        };
        let (mut rx, tasks) = watch_for_leader(&nodes, l);
        let gone_id = ids.remove(l);
        let gone = nodes.remove(l);
        let called = SystemTime::now();
        if crash {
            gone.abort();
        } else {
            gone.shutdown().await;
        }
        let led = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("a follower takes over")
            .expect("sender alive");
        for t in tasks {
            t.abort();
        }
        let last = last_write(&emu, &gone_id, lease);
        if crash {
            let last = last.expect("the crashed leader wrote");
            out.crash_ms.push(ms_between(last + lease_duration, led));
            out.crash_call_ms.push(ms_between(called, led));
        } else {
            // The release is the leader's last write, made after the call.
            let from = match last {
                Some(at) if at >= called => {
                    out.handover_from_history += 1;
                    at
                }
                _ => called,
            };
            out.handover_ms.push(ms_between(from, led));
            out.handover_call_ms.push(ms_between(called, led));
        }
        let (id, n) = spawn(&emu);
        ids.push(id);
        nodes.push(n);
    }
    for n in nodes {
        n.shutdown().await;
    }
    out
}

// ---------------------------------------------------------------- report

fn percentile(xs: &[f64], p: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    // Nearest rank.
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick")
        || std::env::var("BENCH_QUICK").is_ok_and(|v| v != "0")
        || !args.iter().any(|a| a == "--bench");
    let window = Duration::from_secs(env_or("BENCH_SECS", if quick { 5 } else { 60 }).max(1));
    let handovers = env_or("BENCH_HANDOVERS", if quick { 3 } else { 15 }).max(1) as usize;
    let crashes = env_or("BENCH_CRASHES", if quick { 2 } else { 8 }).max(1) as usize;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let started = Instant::now();
    println!(
        "Lease lock over the API emulator, 3 candidates per group; A = watching followers (default), B = polling_only (client-go's way); jitter 1.2 in both{}",
        if quick { "; QUICK smoke mode" } else { "" }
    );
    let (rates, lat_a, lat_b, lat_third) = rt.block_on(async {
        let rates = request_rates(window).await;
        let a = latencies(Mode::Watch, Timings::Fast, handovers, crashes).await;
        let b = latencies(Mode::Poll, Timings::Fast, handovers, crashes).await;
        let third = latencies(Mode::Watch, Timings::FastThird, handovers, crashes).await;
        (rates, a, b, third)
    });

    println!();
    println!(
        "API requests per minute on the Lease (window {} s, counted by the emulator per client)",
        window.as_secs()
    );
    println!(
        "{:<22} {:<8} {:>10} {:>8} {:>8} | {:>12} {:>13} {:>12}",
        "timings",
        "mode",
        "follower",
        "reads",
        "writes",
        "leader reads",
        "leader writes",
        "max writes"
    );
    for (mode, timings, r) in &rates {
        println!(
            "{:<22} {:<8} {:>10.2} {:>8.2} {:>8.2} | {:>12.2} {:>13.1} {:>12.1}",
            timings.label(),
            mode.label(),
            r.follower,
            r.follower_reads,
            r.follower_writes,
            r.leader_reads,
            r.leader_writes,
            r.max_leader_writes
        );
    }
    for timings in [Timings::Fast, Timings::ClientGo] {
        let find = |m: Mode| {
            rates
                .iter()
                .find(|(mode, t, _)| *mode == m && *t == timings)
                .map(|(_, _, r)| r)
                .expect("measured")
        };
        let (a, b) = (find(Mode::Watch), find(Mode::Poll));
        println!(
            "  {}: follower requests B/A = {}",
            timings.label(),
            if a.follower > 0.0 {
                format!("{:.1}", b.follower / a.follower)
            } else {
                format!("{:.2}/0 (A made no request in the window)", b.follower)
            }
        );
    }

    println!();
    println!(
        "Latencies at Config::fast (2 s / 1.5 s / 250 ms), ms; handover from the release write's server time, crash from last write + lease (2 s)"
    );
    println!(
        "{:<8} {:>9} {:>9} {:>5} {:>9} | {:>10} {:>9} | {:>9} {:>9} {:>5}",
        "mode", "handover", "p90", "n", "(hist)", "from call", "p90", "crash", "p90", "n"
    );
    for (mode, l) in [(Mode::Watch, &lat_a), (Mode::Poll, &lat_b)] {
        println!(
            "{:<8} {:>9.1} {:>9.1} {:>5} {:>9} | {:>10.1} {:>9.1} | {:>9.1} {:>9.1} {:>5}",
            mode.label(),
            percentile(&l.handover_ms, 0.5),
            percentile(&l.handover_ms, 0.9),
            l.handover_ms.len(),
            l.handover_from_history,
            percentile(&l.handover_call_ms, 0.5),
            percentile(&l.handover_call_ms, 0.9),
            percentile(&l.crash_ms, 0.5),
            percentile(&l.crash_ms, 0.9),
            l.crash_ms.len()
        );
    }
    let ratio = |b: &[f64], a: &[f64]| {
        let (b, a) = (percentile(b, 0.5), percentile(a, 0.5));
        if a > 0.0 {
            format!("{:.0}x", b / a)
        } else {
            // The write record is stamped after the commit; under load a successor
            // can be seen leading before the release's record is stamped.
            format!("n/a (A median {a:.1} ms)")
        }
    };
    println!(
        "  ratios B/A (median): handover {}, handover from the call {}, crash failover {}",
        ratio(&lat_b.handover_ms, &lat_a.handover_ms),
        ratio(&lat_b.handover_call_ms, &lat_a.handover_call_ms),
        ratio(&lat_b.crash_ms, &lat_a.crash_ms)
    );
    println!("  raw handover ms A: {:?}", round(&lat_a.handover_ms));
    println!("  raw handover ms B: {:?}", round(&lat_b.handover_ms));
    println!("  raw crash ms A: {:?}", round(&lat_a.crash_ms));
    println!("  raw crash ms B: {:?}", round(&lat_b.crash_ms));

    println!();
    println!(
        "Renew interval (A, watching followers): every retry period (client-go) or every third of the lease"
    );
    for (short, long) in [
        (Timings::Fast, Timings::FastThird),
        (Timings::ClientGo, Timings::ClientGoThird),
    ] {
        let writes = |t: Timings| {
            rates
                .iter()
                .find(|(mode, tm, _)| *mode == Mode::Watch && *tm == t)
                .map(|(_, _, r)| r.leader_writes)
                .expect("measured")
        };
        let (a, b) = (writes(short), writes(long));
        println!(
            "  leader writes/min: {} {a:.1}, {} {b:.1}: {:.2}x fewer",
            short.label(),
            long.label(),
            a / b
        );
    }
    println!(
        "{:<20} {:>9} {:>9} | {:>12} {:>9} | {:>9} {:>9}",
        "fast timings", "crash", "p90", "from abort", "p90", "handover", "p90"
    );
    for (t, l) in [(Timings::Fast, &lat_a), (Timings::FastThird, &lat_third)] {
        println!(
            "{:<20} {:>9.1} {:>9.1} | {:>12.1} {:>9.1} | {:>9.1} {:>9.1}",
            t.label(),
            percentile(&l.crash_ms, 0.5),
            percentile(&l.crash_ms, 0.9),
            percentile(&l.crash_call_ms, 0.5),
            percentile(&l.crash_call_ms, 0.9),
            percentile(&l.handover_ms, 0.5),
            percentile(&l.handover_ms, 0.9),
        );
    }
    println!("total {:.0} s", started.elapsed().as_secs_f64());
}

fn round(xs: &[f64]) -> Vec<f64> {
    xs.iter().map(|x| (x * 10.0).round() / 10.0).collect()
}
