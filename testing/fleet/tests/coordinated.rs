//! Coordinated election with client-go and kube-elector candidates under
//! kube-apiserver's own coordinator, through a rolling upgrade by version
//! across both libraries: two replicas on 1.35.0 (one of each library), two
//! on 1.36.0 joining, the old ones leaving one by one. The Lease stays with an
//! old replica until the last old one is gone (`OldestEmulationVersion`), then
//! goes to a new one; then the new leader crashes and the coordinator gives
//! the Lease to the other; never two leaders, judged from the lines and from
//! the Lease's history. Ignored in the workspace run; `.ci/run` runs it.

use std::time::Duration;

use fleet::harness::Fleet;
use fleet::line::{Event, mono_now};
use fleet::peer::Signal;
use test_kit::runtimes::Runtime;

/// kube-elector's peer, built by cargo for this test.
const ELECTOR_PEER: &str = env!("CARGO_BIN_EXE_elector-peer");

const OLD: &str = "1.35.0";
const NEW: &str = "1.36.0";

#[test]
#[ignore = "needs the built kube-apiserver and client-go peer: bash testing/k8s-server/build.sh; CI runs it"]
fn a_rolling_upgrade_across_both_libraries_keeps_the_lease_on_the_oldest_version() {
    Runtime::Tokio.run(|| async {
        let mut fleet = Fleet::new(ELECTOR_PEER.as_ref()).await;
        // The coordinator looks again within seconds; a handover asks the
        // holder to end its term and waits for it (up to a renew deadline).
        let within = Duration::from_secs(40);
        // Candidates created in different seconds: the coordinator breaks a
        // tie of versions by the LeaseCandidate's creation time (seconds); two
        // created in one second compare equal, and its choice between them
        // can change from one look to the next (docs/kube-apiserver.md).
        let apart = Duration::from_millis(1100);
        fleet.start("r-old", Some(OLD)).await;
        tokio::time::sleep(apart).await;
        fleet.start("g-old", Some(OLD)).await;
        let (first, _) = fleet.next_leader(0, "", within).await.expect("a leader");
        assert_eq!(first, "r-old", "the oldest candidate of the oldest version");
        fleet.start("g-new", Some(NEW)).await;
        tokio::time::sleep(apart).await;
        fleet.start("r-new", Some(NEW)).await;
        // Long enough for the coordinator to see the new candidates (they
        // must not take over while an old one runs).
        tokio::time::sleep(Duration::from_secs(8)).await;
        let leader = fleet.log.leader().expect("a leader");
        assert_eq!(leader, "r-old", "the leader while old replicas run");
        // The old follower leaves first, then the old leader, the last old one.
        let follower = if leader == "g-old" { "r-old" } else { "g-old" };
        fleet.signal(follower, Signal::Term).await;
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert_eq!(fleet.log.leader().as_deref(), Some(leader.as_str()));
        let last_old_gone = mono_now();
        fleet.signal(&leader, Signal::Term).await;
        let (next, at) = fleet
            .next_leader(last_old_gone, &leader, within)
            .await
            .expect("a new replica takes over");
        eprintln!(
            "{next} leads {:.0} ms after the last old replica ({leader}) got SIGTERM",
            (at - last_old_gone) as f64 / 1e6
        );
        assert_eq!(next, "g-new", "the oldest candidate of the new version");
        // No new replica led while an old one ran.
        let early: Vec<_> = fleet
            .log
            .lines()
            .into_iter()
            .filter(|l| {
                l.event == Event::Leading && l.identity.ends_with("-new") && l.mono < last_old_gone
            })
            .collect();
        assert!(
            early.is_empty(),
            "a new replica led before the old ones left: {early:?}"
        );
        // A crash of the new leader (client-go): the coordinator assigns the
        // Lease to the other new replica (kube-elector) once the lease ran out.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let crashed = mono_now();
        fleet.signal("g-new", Signal::Kill).await;
        let (next, at) = fleet
            .next_leader(crashed, "g-new", within)
            .await
            .expect("the coordinator assigns the Lease after a crash");
        assert_eq!(next, "r-new");
        eprintln!(
            "after a crash of g-new, {next} leads {:.0} ms later (lease {} ms)",
            (at - crashed) as f64 / 1e6,
            fleet::harness::TIMINGS_MS.0
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        fleet.finish().await.assert_clean();
    });
}
