//! A three-candidate election on the Lease lock over the API emulator: a leader is
//! elected, crashes, another takes over after the lease; that one hands over
//! gracefully, and a third leads at once. At no sampled instant do two candidates
//! report leadership. The story is `kube_emulator::runtimes::three_candidates`
//! (shared with the ConfigMap lock), driven by `adapter-tokio` on tokio and by
//! `adapter-smol` under smol and async-std, where kube's client gets its tokio
//! reactor from `async-compat` inside the lock and the emulator runs on a thread
//! and runtime of its own.

use std::time::Duration;

use election_core::Config;
use kube_emulator::Emulator;
use kube_emulator::runtimes::{Runtime, three_candidates};
use lock_lease::LeaseLock;

fn lock(emu: &Emulator, name: &str, config: &Config) -> LeaseLock {
    let id = &config.identity;
    let client = kube_support::lock_client(emu.kube_config(id)).expect("client");
    LeaseLock::builder(client, "default", name)
        .election_config(config)
        .build()
        .expect("valid names")
}

fn config(id: &str) -> Config {
    Config::fast(id).seed(id.len() as u64 + 7)
}

/// The Lease names `holder` and counts at least the two hand-overs.
fn check_lease(emu: &Emulator, name: &str, holder: &str) {
    let lease = emu
        .object(kube_emulator::Resource::Lease, "default", name)
        .expect("the lease");
    assert_eq!(lease["spec"]["holderIdentity"], holder);
    assert!(lease["spec"]["leaseTransitions"].as_u64().unwrap_or(0) >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_candidates_on_tokio() {
    let emu = Emulator::start().await.expect("emulator");
    let name = "tokio-election";
    tokio::time::timeout(
        Duration::from_secs(60),
        three_candidates(
            |id| {
                let config = config(id);
                adapter_tokio::Builder::new(lock(&emu, name, &config), config)
                    .spawn()
                    .expect("valid config")
            },
            |holder| check_lease(&emu, name, holder),
        ),
    )
    .await
    .expect("the story ends within a minute");
}

async fn story_on_adapter_smol(name: &str) {
    let emu = Emulator::start_blocking().expect("emulator");
    three_candidates(
        |id| {
            let config = config(id);
            adapter_smol::Builder::new(lock(&emu, name, &config), config)
                .spawn()
                .expect("valid config")
        },
        |holder| check_lease(&emu, name, holder),
    )
    .await;
}

#[test]
fn three_candidates_on_smol() {
    Runtime::Smol.run(|| story_on_adapter_smol("smol-election"));
}

#[test]
fn three_candidates_on_async_std() {
    Runtime::AsyncStd.run(|| story_on_adapter_smol("async-std-election"));
}
