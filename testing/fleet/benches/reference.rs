//! client-go's leader election and kube-elector measured in one run, on the
//! same real kube-apiserver, with the same timings (`fleet::harness::TIMINGS_MS`:
//! lease 4 s, renew deadline 3 s, retry 1 s), on the same machine: two fleets of two candidates, one
//! of each library, side by side.
//!
//! - API requests per minute of a leader and of a follower, from the API
//!   server's audit log, both fleets in the same window;
//! - graceful handover (SIGTERM of the leader to the follower's `leading`
//!   line) and crash failover (SIGKILL), interleaved: each round does each
//!   library once, the leader restarted after each.
//!
//! ```text
//! cargo bench -p fleet --bench reference [-- --rounds 20 --window 60 --tsv PATH]
//! ```
//!
//! `--tsv PATH` writes every handover and failover time (`kind`, `library`,
//! `ms`), which `cargo run -p fleet --bin plots` draws as distributions.
//!
//! Needs the built kube-apiserver and client-go peer
//! (`bash testing/k8s-server/build.sh`). Both fleets are judged at the end
//! (no overlap, a sound Lease history).

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use fleet::harness::{Fleet, TIMINGS_MS, flag, median_max};
use fleet::line::mono_now;
use fleet::peer::{Library, Signal};
use test_kit::runtimes::Runtime;

/// kube-elector's peer, built by cargo for this benchmark.
const ELECTOR_PEER: &str = env!("CARGO_BIN_EXE_elector-peer");

fn number(name: &str, default: u64) -> u64 {
    flag(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let rounds = number("--rounds", 20);
    let window = Duration::from_secs(number("--window", 60));
    let tsv = flag("--tsv").map(std::path::PathBuf::from);
    Runtime::Tokio.block_on(run(rounds, window, tsv));
}

async fn run(rounds: u64, window: Duration, tsv: Option<std::path::PathBuf>) {
    let lease = Duration::from_millis(TIMINGS_MS.0);
    let libraries = [
        (Library::ClientGo, "client-go", "g"),
        (Library::Elector, "kube-elector", "r"),
    ];
    let mut fleets = Vec::new();
    for (_, _, prefix) in libraries {
        let mut fleet = Fleet::new(ELECTOR_PEER.as_ref()).await;
        for n in 0..2 {
            fleet.start(&format!("{prefix}-{n}"), None).await;
        }
        fleet.next_leader(0, "", lease * 3).await.expect("a leader");
        fleets.push(fleet);
    }
    // Settled: a lease past the first acquisition.
    tokio::time::sleep(lease).await;

    // Requests, both fleets in one window.
    let leaders: Vec<String> = fleets
        .iter()
        .map(|f| f.log.leader().expect("a leader"))
        .collect();
    let from = SystemTime::now();
    tokio::time::sleep(window).await;
    let to = SystemTime::now();
    let per_minute = 60.0 / window.as_secs_f64();
    println!(
        "requests per minute, {:.0} s window (lease {} ms, renew deadline {} ms, retry {} ms):",
        window.as_secs_f64(),
        TIMINGS_MS.0,
        TIMINGS_MS.1,
        TIMINGS_MS.2
    );
    for ((_, name, prefix), (fleet, leader)) in libraries.iter().zip(fleets.iter().zip(&leaders)) {
        assert_eq!(
            fleet.log.leader().as_ref(),
            Some(leader),
            "{name}: the leader changed in the window"
        );
        let counts = fleet.server.audit_requests("leases", &fleet.ns, from, to);
        for n in 0..2 {
            let id = format!("{prefix}-{n}");
            let user = Fleet::user(&id);
            let mine: BTreeMap<&str, u64> = counts
                .iter()
                .filter(|((u, _), _)| *u == user)
                .map(|((_, verb), n)| (verb.as_str(), *n))
                .collect();
            let total: u64 = mine.values().sum();
            let role = if id == *leader { "leader" } else { "follower" };
            let verbs: Vec<String> = mine
                .iter()
                .map(|(verb, n)| format!("{verb} {:.1}", *n as f64 * per_minute))
                .collect();
            println!(
                "  {name:<13} {role:<9} {:>7.1}/min  ({})",
                total as f64 * per_minute,
                verbs.join(", ")
            );
        }
    }

    // Handovers and failovers, interleaved.
    let mut took: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for _ in 0..rounds {
        for signal in [Signal::Term, Signal::Kill] {
            for ((_, name, _), fleet) in libraries.iter().zip(fleets.iter_mut()) {
                let leader = fleet.log.leader().expect("a leader");
                let since = mono_now();
                fleet.signal(&leader, signal).await;
                let (_, at) = fleet
                    .next_leader(since, &leader, lease * 3)
                    .await
                    .expect("the follower takes over");
                let kind = if signal == Signal::Term {
                    "handover"
                } else {
                    "failover"
                };
                took.entry((kind, name))
                    .or_default()
                    .push((at - since) as f64 / 1e6);
                fleet.start(&leader, None).await;
            }
        }
    }
    println!("{rounds} rounds, interleaved:");
    println!(
        "  {:<9} {:<13} {:>4} {:>11} {:>9}",
        "", "", "n", "median ms", "max ms"
    );
    for ((kind, name), ms) in &took {
        let (median, max) = median_max(ms);
        println!(
            "  {kind:<9} {name:<13} {:>4} {median:>11.1} {max:>9.1}",
            ms.len()
        );
    }
    if let Some(path) = tsv {
        let mut text = String::from("kind\tlibrary\tms\n");
        for ((kind, name), ms) in &took {
            for m in ms {
                text.push_str(&format!("{kind}\t{name}\t{m:.1}\n"));
            }
        }
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    for kind in ["handover", "failover"] {
        let median = |name| median_max(&took[&(kind, name)]).0;
        println!(
            "  {kind}: kube-elector / client-go, medians: {:.3}",
            median("kube-elector") / median("client-go")
        );
    }
    for fleet in fleets {
        fleet.finish().await.assert_clean();
    }
    println!("both fleets judged: no overlap, a sound Lease history");
}
