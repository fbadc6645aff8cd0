//! Two client-go and two kube-elector candidates on one Lease of the real
//! kube-apiserver: leadership moved by SIGTERM (a graceful handover) and by
//! SIGKILL (a crash) of whoever leads, ten of each, into each library in turn;
//! never an overlap, judged from the peers' lines and from the Lease's
//! history. Ignored in the workspace run; `.ci/run` runs it.

use std::collections::BTreeMap;
use std::time::Duration;

use fleet::harness::{Fleet, TIMINGS_MS, median_max};
use fleet::line::mono_now;
use fleet::peer::{Library, Signal};
use test_kit::runtimes::Runtime;

/// kube-elector's peer, built by cargo for this test.
const ELECTOR_PEER: &str = env!("CARGO_BIN_EXE_elector-peer");

const IDS: [&str; 4] = ["g-0", "g-1", "r-0", "r-1"];

fn name(library: Library) -> &'static str {
    match library {
        Library::ClientGo => "client-go",
        Library::Elector => "kube-elector",
    }
}

#[test]
#[ignore = "needs the built kube-apiserver and client-go peer: bash testing/k8s-server/build.sh; CI runs it"]
fn handovers_and_crashes_move_leadership_between_the_libraries_without_overlap() {
    Runtime::Tokio.run(|| async {
        let mut fleet = Fleet::new(ELECTOR_PEER.as_ref()).await;
        for id in IDS {
            fleet.start(id, None).await;
        }
        let lease = Duration::from_millis(TIMINGS_MS.0);
        assert!(
            fleet.next_leader(0, "", lease * 3).await.is_some(),
            "no leader within three leases"
        );
        // (signal, from, to) -> milliseconds from the signal to the new
        // leader's `leading` line.
        let mut took: BTreeMap<(&str, &str, &str), Vec<f64>> = BTreeMap::new();
        let rounds = [
            (Library::ClientGo, Signal::Term),
            (Library::Elector, Signal::Term),
            (Library::ClientGo, Signal::Kill),
            (Library::Elector, Signal::Kill),
        ];
        for (round, &(to, signal)) in rounds.iter().cycle().take(20).enumerate() {
            let leader = fleet.log.leader().expect("a leader between rounds");
            // Only the target library's followers stay candidates.
            let others: Vec<String> = fleet
                .peers
                .iter()
                .map(|p| p.id().to_owned())
                .filter(|id| *id != leader && Fleet::library(id) != to)
                .collect();
            for id in &others {
                fleet.signal(id, Signal::Term).await;
            }
            let since = mono_now();
            fleet.signal(&leader, signal).await;
            let (next, at) = fleet
                .next_leader(since, &leader, lease * 3)
                .await
                .unwrap_or_else(|| {
                    panic!("round {round}: no leader within three leases of {signal:?} to {leader}")
                });
            assert_eq!(Fleet::library(&next), to, "round {round}: {next} took over");
            let kind = if signal == Signal::Term {
                "SIGTERM"
            } else {
                "SIGKILL"
            };
            let ms = (at - since) as f64 / 1e6;
            eprintln!("round {round:2}: {kind} {leader} -> {next} in {ms:8.1} ms");
            took.entry((kind, name(Fleet::library(&leader)), name(to)))
                .or_default()
                .push(ms);
            for id in others.iter().chain([&leader]) {
                fleet.start(id, None).await;
            }
        }
        let judged = fleet.finish().await;
        eprintln!(
            "{:<8} {:<13} {:<13} {:>3} {:>10} {:>10}",
            "signal", "from", "to", "n", "median ms", "max ms"
        );
        for ((kind, from, to), ms) in &took {
            let (median, max) = median_max(ms);
            eprintln!(
                "{kind:<8} {from:<13} {to:<13} {:>3} {median:>10.1} {max:>10.1}",
                ms.len()
            );
        }
        eprintln!("the Lease's history: {} states", judged.history.len());
        judged.assert_clean();
        let directions = took.keys().filter(|(_, from, to)| from != to).count();
        assert_eq!(
            directions,
            4,
            "leadership moved both ways by both signals: {:?}",
            took.keys()
        );
    });
}
