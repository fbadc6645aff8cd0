//! Sixteen shard Leases over replicas that join, leave and crash, on the bundled
//! API emulator (`election-shards`, `Config::fast`: 2 s lease, 250 ms retry).
//! After each change it prints how long until every shard had a holder and no
//! replica held more than its share, the longest time any shard went without a
//! holder, and the assignment. It checks every 5 ms that no shard has two
//! holders, and exits non-zero if one ever had.
//!
//! Run: `cargo run --example shards` (about 40 s).

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use adapter_tokio::TokioRuntime;
use election_core::Config;
use election_shards::Shards;
use election_shards::balance::target;
use kube_emulator::Emulator;

const SHARDS: usize = 16;

fn replica(emu: &Emulator, id: &str) -> Shards {
    let client = lock_kube::lock_client(emu.kube_config(id)).expect("client");
    Shards::builder(client, "default", "orders", SHARDS, Config::fast(id))
        .spawn(TokioRuntime::current().expect("inside tokio"))
        .expect("valid")
}

/// Who holds each shard; the number of shards with two holders.
fn assignment(replicas: &BTreeMap<String, Shards>) -> (BTreeMap<String, Vec<usize>>, usize) {
    let mut holders = [0usize; SHARDS];
    let out: BTreeMap<String, Vec<usize>> = replicas
        .iter()
        .map(|(id, r)| {
            let held = r.held();
            for &s in &held {
                holders[s] += 1;
            }
            (id.clone(), held)
        })
        .collect();
    (out, holders.iter().filter(|&&n| n > 1).count())
}

/// Samples every 5 ms until balanced: every shard held, none over its share,
/// holdings differing by at most one.
/// Returns the time it took and the longest stretch any one shard went without
/// a holder meanwhile.
async fn settle(replicas: &BTreeMap<String, Shards>) -> (Duration, Duration) {
    let start = Instant::now();
    let share = target(SHARDS, replicas.len());
    let mut unheld_since: [Option<Instant>; SHARDS] = [None; SHARDS];
    let mut worst = Duration::ZERO;
    loop {
        let (a, doubled) = assignment(replicas);
        assert_eq!(doubled, 0, "a shard with two holders: {a:?}");
        let now = Instant::now();
        let mut held = [false; SHARDS];
        for shards in a.values() {
            for &s in shards {
                held[s] = true;
            }
        }
        for s in 0..SHARDS {
            match (held[s], unheld_since[s]) {
                (false, None) => unheld_since[s] = Some(now),
                (true, Some(since)) => {
                    worst = worst.max(now - since);
                    unheld_since[s] = None;
                }
                _ => {}
            }
        }
        let counts: Vec<usize> = a.values().map(Vec::len).collect();
        let (lo, hi) = (
            counts.iter().copied().min().unwrap_or(0),
            counts.iter().copied().max().unwrap_or(0),
        );
        if held.iter().all(|&h| h) && hi <= share && hi - lo <= 1 {
            return (start.elapsed(), worst);
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "not balanced: {a:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn print(what: &str, replicas: &BTreeMap<String, Shards>, took: (Duration, Duration)) {
    println!(
        "{what}: balanced after {} ms (longest without a holder: {} ms)",
        took.0.as_millis(),
        took.1.as_millis()
    );
    for (id, held) in assignment(replicas).0 {
        println!("  {id}: {held:?}");
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let emu = Emulator::start().await.expect("emulator");
    let mut replicas = BTreeMap::new();
    println!("{SHARDS} shards; lease 2 s, retry 250 ms");
    for id in ["r0", "r1", "r2"] {
        replicas.insert(id.to_owned(), replica(&emu, id));
    }
    let took = settle(&replicas).await;
    print(
        "3 replicas started (the first leaders wait one lease)",
        &replicas,
        took,
    );
    for id in ["r3", "r4"] {
        replicas.insert(id.to_owned(), replica(&emu, id));
        let took = settle(&replicas).await;
        print(&format!("{id} joined"), &replicas, took);
    }
    let start = Instant::now();
    replicas.remove("r1").expect("r1").shutdown().await;
    let took = settle(&replicas).await;
    print("r1 left gracefully", &replicas, (start.elapsed(), took.1));
    let crashed = replicas.remove("r3").expect("r3");
    let held: Vec<String> = crashed
        .held()
        .iter()
        .map(|s| format!("orders-{s}"))
        .collect();
    crashed.abort();
    let took = settle(&replicas).await;
    print("r3 crashed", &replicas, took);
    // The shards the crashed replica held were free once the lease of its last
    // renew of each ran out: how much after the last of those every shard had a
    // holder again.
    let last = emu
        .write_history()
        .into_iter()
        .filter(|w| w.client == "r3" && w.committed && held.contains(&w.name))
        .map(|w| w.at)
        .max()
        .expect("r3 renewed its shards");
    let beyond = SystemTime::now()
        .duration_since(last + Config::fast("x").lease_duration)
        .unwrap_or_default();
    println!(
        "  every shard held again {} ms after the crashed replica's last lease ran out (at most; sampled every 5 ms)",
        beyond.as_millis()
    );
    replicas.insert("r5".to_owned(), replica(&emu, "r5"));
    let took = settle(&replicas).await;
    print("r5 joined", &replicas, took);
    for (_, r) in replicas {
        r.shutdown().await;
    }
}
