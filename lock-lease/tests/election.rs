//! A three-candidate election on the Lease lock over the API emulator, driven by
//! `adapter-tokio`: a leader is elected, crashes, another takes over after the
//! lease; that one hands over gracefully, and a third leads at once. At no sampled
//! instant do two candidates report leadership.

use std::time::{Duration, Instant};

use adapter_tokio::{Builder, Handle};
use election_core::Config;
use kube_emulator::Emulator;
use lock_lease::LeaseLock;

const NAME: &str = "three-candidates";

fn candidate(emu: &Emulator, id: &str) -> Handle {
    let config = Config::fast(id).seed(id.len() as u64 + 7);
    let client = kube_support::lock_client(emu.kube_config(id)).expect("client");
    let lock = LeaseLock::builder(client, "default", NAME)
        .election_config(&config)
        .build()
        .expect("valid names");
    Builder::new(lock, config).spawn().expect("valid config")
}

/// Waits until exactly one of `nodes` leads, checking that never two do; returns
/// its index and how long it took.
async fn one_leader(nodes: &[Option<Handle>], within: Duration) -> (usize, Duration) {
    let start = Instant::now();
    loop {
        let leaders: Vec<usize> = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.as_ref().is_some_and(Handle::is_leader))
            .map(|(i, _)| i)
            .collect();
        assert!(leaders.len() <= 1, "two leaders at once: {leaders:?}");
        if let [i] = leaders[..] {
            return (i, start.elapsed());
        }
        assert!(start.elapsed() < within, "no leader within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_candidates() {
    tokio::time::timeout(
        Duration::from_secs(60),
        three_candidates_survive_a_leader_crash_and_hand_over_gracefully(),
    )
    .await
    .expect("the story ends within a minute");
}

async fn three_candidates_survive_a_leader_crash_and_hand_over_gracefully() {
    let emu = Emulator::start().await.expect("emulator");
    let mut nodes: Vec<Option<Handle>> = ["node-a", "node-b", "node-c"]
        .iter()
        .map(|id| Some(candidate(&emu, id)))
        .collect();
    let (first, _) = one_leader(&nodes, Duration::from_secs(10)).await;
    eprintln!("first leader {first}");

    // The leader crashes: no release. Another leads after the lease (2 s) has
    // passed on its own clock, plus a retry and a request.
    nodes[first].take().expect("running").abort();
    let (second, failover) = one_leader(&nodes, Duration::from_secs(10)).await;
    assert_ne!(second, first);
    eprintln!("second leader {second} after {failover:?}");
    assert!(
        failover >= Duration::from_millis(500),
        "not before the lease expired: {failover:?}"
    );

    // The new leader steps down gracefully: it releases, and the third node takes
    // over well before a lease would have expired.
    let leaving = nodes[second].take().expect("running");
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), leaving.shutdown())
        .await
        .expect("shutdown ends");
    eprintln!("shut down after {:?}", started.elapsed());
    let (third, _) = one_leader(&nodes, Duration::from_secs(10)).await;
    let handover = started.elapsed();
    assert_ne!(third, first);
    assert_ne!(third, second);
    assert!(
        handover < Duration::from_secs(2),
        "a release is taken at once, took {handover:?}"
    );

    let lease = emu
        .object(kube_emulator::Resource::Lease, "default", NAME)
        .expect("the lease");
    assert_eq!(
        lease["spec"]["holderIdentity"],
        ["node-a", "node-b", "node-c"][third]
    );
    assert!(lease["spec"]["leaseTransitions"].as_u64().unwrap_or(0) >= 2);
    for n in nodes.into_iter().flatten() {
        tokio::time::timeout(Duration::from_secs(10), n.shutdown())
            .await
            .expect("shutdown ends");
    }
}
