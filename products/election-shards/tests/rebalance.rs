//! Sixteen shards over replicas that join, leave and crash, on the API emulator
//! with the real kube client: after each change every shard has a holder and no
//! replica holds more than its share, within a bound; at no sampled instant does
//! a shard have two holders, and the shard work never runs twice for a shard (a
//! handed-over shard's work has ended before another replica's starts). The
//! same story runs on a real kube-apiserver (`test_kit::apiserver`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use adapter_tokio::TokioRuntime;
use election_core::Config;
use election_shards::Shards;
use election_shards::balance::target;
use kube_emulator::Emulator;
use test_kit::apiserver::{ApiServer, Server};

const SHARDS: usize = 16;

/// How many works run for each shard now, and how many times a work started
/// while another ran for its shard (a panic inside the work would only be
/// reported by the driver, so it is counted instead).
#[derive(Default)]
struct Works {
    running: [AtomicUsize; SHARDS],
    doubled: AtomicUsize,
}

type Running = Arc<Works>;

fn replica(server: &dyn Server, ns: &str, id: &str, running: &Running) -> Shards {
    let client = lock_kube::lock_client(server.kube_config(id)).expect("client");
    let running = running.clone();
    Shards::builder(client, ns, "orders", SHARDS, Config::fast(id))
        .shard_work(move |shard, _term, cancel| {
            let running = running.clone();
            async move {
                if running.running[shard].fetch_add(1, Ordering::SeqCst) > 0 {
                    running.doubled.fetch_add(1, Ordering::SeqCst);
                }
                cancel.cancelled().await;
                running.running[shard].fetch_sub(1, Ordering::SeqCst);
            }
        })
        .spawn(TokioRuntime::current().expect("inside tokio"))
        .expect("valid")
}

/// Who holds each shard, as the replicas report it; panics on two holders.
fn assignment(replicas: &BTreeMap<String, Shards>) -> BTreeMap<String, Vec<usize>> {
    let mut seen = [0usize; SHARDS];
    let mut out = BTreeMap::new();
    for (id, r) in replicas {
        let held = r.held();
        for &s in &held {
            seen[s] += 1;
            assert!(seen[s] <= 1, "shard {s} has two holders");
        }
        out.insert(id.clone(), held);
    }
    out
}

type Replicas = std::sync::Mutex<BTreeMap<String, Shards>>;

/// Waits until every shard is held and holdings differ by at most one, none
/// over its share; returns how long that took.
async fn balanced(replicas: &Replicas, within: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let done = {
            let r = replicas.lock().expect("lock");
            let share = target(SHARDS, r.len());
            let a = assignment(&r);
            let (lo, hi) = (
                a.values().map(Vec::len).min().unwrap_or(0),
                a.values().map(Vec::len).max().unwrap_or(0),
            );
            a.values().map(Vec::len).sum::<usize>() == SHARDS && hi <= share && hi - lo <= 1
        };
        if done {
            return start.elapsed();
        }
        assert!(start.elapsed() < within, "not balanced within {within:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_rebalance_as_replicas_join_leave_and_crash_and_never_have_two_holders() {
    let emu = Emulator::start().await.expect("emulator");
    rebalance(&emu, "default").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
async fn shards_rebalance_as_replicas_join_leave_and_crash_and_never_have_two_holders_on_kube_apiserver()
 {
    let server = ApiServer::shared();
    let ns = tokio::task::block_in_place(|| server.namespace());
    let started = Instant::now();
    rebalance(server, &ns).await;
    eprintln!("kube-apiserver: the story took {:?}", started.elapsed());
}

/// Three replicas over [`SHARDS`] shard Leases in `ns` on `server`, then a
/// fourth joins, one leaves gracefully and one crashes: balanced after each
/// within its bound, never two holders, each shard's work once.
async fn rebalance(server: &dyn Server, ns: &str) {
    let replicas: Arc<Replicas> = Arc::default();
    let works: Running = Arc::default();
    // A sampler checks for two holders every 5 ms, through every change.
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (replicas, stop) = (replicas.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                assignment(&replicas.lock().expect("lock"));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let lease = Config::fast("x").lease_duration;
    let bound = Duration::from_secs(10);
    for id in ["r0", "r1", "r2"] {
        replicas
            .lock()
            .expect("lock")
            .insert(id.into(), replica(server, ns, id, &works));
    }
    balanced(&replicas, Duration::from_secs(20)).await;
    // A fourth joins: it gets its share by graceful handover, well within a lease.
    replicas
        .lock()
        .expect("lock")
        .insert("r3".into(), replica(server, ns, "r3", &works));
    let took = balanced(&replicas, bound).await;
    assert!(took < lease * 2, "join rebalanced in {took:?}");
    assert_eq!(replicas.lock().expect("lock")["r3"].held().len(), 4);
    // One leaves gracefully: its shards are taken at once.
    let gone = replicas.lock().expect("lock").remove("r1").expect("r1");
    let start = Instant::now();
    gone.shutdown().await;
    balanced(&replicas, bound).await;
    let took = start.elapsed();
    assert!(took < lease, "leave rebalanced in {took:?}");
    // One crashes: its shards are taken once their leases expire.
    let crashed = replicas.lock().expect("lock").remove("r2").expect("r2");
    crashed.abort();
    let took = balanced(&replicas, bound).await;
    assert!(took < lease * 3, "crash rebalanced in {took:?}");
    stop.store(true, Ordering::Relaxed);
    sampler.await.expect("no two holders");
    assert_eq!(
        works.doubled.load(Ordering::SeqCst),
        0,
        "a shard's work ran twice"
    );
    // Every held shard's work runs, once (it starts just after the leadership).
    let start = Instant::now();
    loop {
        let running: usize = works.running.iter().map(|n| n.load(Ordering::SeqCst)).sum();
        if running == SHARDS {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{running} works run"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let all: Vec<Shards> = std::mem::take(&mut *replicas.lock().expect("lock"))
        .into_values()
        .collect();
    for r in all {
        r.shutdown().await;
    }
}
