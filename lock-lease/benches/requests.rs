//! API requests per minute per follower and per leader on the Lease lock, with the
//! watch versus polling only (client-go's way), over the API emulator; and the
//! graceful handover latency in both modes. Prints figures; run with
//! `cargo bench -p lock-lease --bench requests` (about 30 s; `BENCH_SECS` sets the
//! observation window per mode, default 8).

use std::time::{Duration, Instant};

use adapter_tokio::{Builder, Handle};
use election_core::Config;
use kube_emulator::Emulator;
use lock_lease::LeaseLock;

const IDS: [&str; 3] = ["node-a", "node-b", "node-c"];

fn candidate(emu: &Emulator, name: &str, id: &str, watch: bool) -> Handle {
    let config = Config::fast(id).seed(id.len() as u64);
    let client = kube_support::lock_client(emu.kube_config(id)).expect("client");
    let mut b = LeaseLock::builder(client, "default", name).election_config(&config);
    if !watch {
        b = b.polling_only();
    }
    Builder::new(b.build().expect("valid names"), config)
        .spawn()
        .expect("valid config")
}

async fn leader(nodes: &[Option<Handle>]) -> usize {
    let start = Instant::now();
    loop {
        if let Some(i) = nodes
            .iter()
            .position(|n| n.as_ref().is_some_and(Handle::is_leader))
        {
            return i;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no leader");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn measure(watch: bool, window: Duration) {
    let emu = Emulator::start().await.expect("emulator");
    let name = if watch { "bench-watch" } else { "bench-poll" };
    let mut nodes: Vec<Option<Handle>> = IDS
        .iter()
        .map(|id| Some(candidate(&emu, name, id, watch)))
        .collect();
    let first = leader(&nodes).await;
    // Let the followers settle, then count over the window.
    tokio::time::sleep(Duration::from_secs(1)).await;
    emu.reset_request_counts();
    tokio::time::sleep(window).await;
    let counts = emu.request_counts();
    let per_min = |id: &str| counts.client_total(id) as f64 * 60.0 / window.as_secs_f64();
    let leader_rate = per_min(IDS[first]);
    let followers: Vec<f64> = IDS
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != first)
        .map(|(_, id)| per_min(id))
        .collect();
    let follower_rate = followers.iter().sum::<f64>() / followers.len() as f64;
    // Graceful handover: from the release to the next leader.
    let started = Instant::now();
    nodes[first].take().expect("running").shutdown().await;
    let _ = leader(&nodes).await;
    let handover = started.elapsed();
    println!(
        "{:<8} leader {:>6.1} req/min   follower {:>6.1} req/min (a watch counts once, when opened)   handover {:>7.1} ms",
        if watch { "watch" } else { "polling" },
        leader_rate,
        follower_rate,
        handover.as_secs_f64() * 1e3
    );
    for n in nodes.into_iter().flatten() {
        n.shutdown().await;
    }
}

fn main() {
    // `cargo test --benches` runs this with `--bench`-less args; keep it short then.
    let quick = std::env::args().any(|a| a == "--test");
    let secs = std::env::var("BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if quick { 1 } else { 8 });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    println!(
        "Lease lock over the emulator, 3 candidates, Config::fast (2 s / 1.5 s / 250 ms), window {secs} s"
    );
    rt.block_on(async {
        measure(true, Duration::from_secs(secs)).await;
        measure(false, Duration::from_secs(secs)).await;
    });
}
