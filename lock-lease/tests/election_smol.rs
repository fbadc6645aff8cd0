//! The three-candidate story of `election.rs` on the Lease lock, driven by
//! `adapter-smol` under smol and under async-std: kube's client gets its tokio
//! reactor from `async-compat` inside the lock. The emulator runs on a tokio
//! runtime thread of its own.

use std::time::{Duration, Instant};

use adapter_smol::{Builder, Handle};
use election_core::Config;
use kube_emulator::Emulator;
use lock_lease::LeaseLock;

fn candidate(emu: &Emulator, name: &str, id: &str) -> Handle {
    let config = Config::fast(id).seed(id.len() as u64 + 11);
    let client = kube_support::lock_client(emu.kube_config(id)).expect("client");
    let lock = LeaseLock::builder(client, "default", name)
        .election_config(&config)
        .build()
        .expect("valid names");
    Builder::new(lock, config).spawn().expect("valid config")
}

async fn one_leader(nodes: &[Option<Handle>], within: Duration) -> usize {
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
            return i;
        }
        assert!(start.elapsed() < within, "no leader within {within:?}");
        smol::Timer::after(Duration::from_millis(20)).await;
    }
}

async fn story(emu: &Emulator, name: &str) {
    let mut nodes: Vec<Option<Handle>> = ["node-a", "node-b", "node-c"]
        .iter()
        .map(|id| Some(candidate(emu, name, id)))
        .collect();
    let first = one_leader(&nodes, Duration::from_secs(10)).await;
    nodes[first].take().expect("running").abort();
    let second = one_leader(&nodes, Duration::from_secs(10)).await;
    assert_ne!(second, first);
    let started = Instant::now();
    nodes[second].take().expect("running").shutdown().await;
    let third = one_leader(&nodes, Duration::from_secs(10)).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "handover after a release"
    );
    assert!(third != first && third != second);
    for n in nodes.into_iter().flatten() {
        n.shutdown().await;
    }
}

fn emulator() -> (Emulator, tokio::runtime::Runtime) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let emu = rt.block_on(Emulator::start()).expect("emulator");
    (emu, rt)
}

#[test]
fn three_candidates_on_smol() {
    let (emu, _rt) = emulator();
    smol::block_on(story(&emu, "smol-election"));
}

#[test]
fn three_candidates_on_async_std() {
    let (emu, _rt) = emulator();
    async_std::task::block_on(story(&emu, "async-std-election"));
}
