//! The three-candidate story of `election.rs` on the ConfigMap lock, driven by
//! `adapter-smol` under smol and under async-std: kube's client gets its tokio
//! reactor from `async-compat` inside the lock. The emulator runs on a tokio
//! runtime thread of its own. The story is `kube_emulator::runtimes::three_candidates`,
//! shared with the Lease lock.

use adapter_smol::{Builder, Handle};
use election_core::Config;
use kube_emulator::Emulator;
use kube_emulator::runtimes::{Runtime, three_candidates};
use lock_configmap::ConfigMapLock;

fn candidate(emu: &Emulator, name: &str, id: &str) -> Handle {
    let config = Config::fast(id).seed(id.len() as u64 + 11);
    let client = kube_support::lock_client(emu.kube_config(id)).expect("client");
    let lock = ConfigMapLock::builder(client, "default", name)
        .election_config(&config)
        .build()
        .expect("valid names");
    Builder::new(lock, config).spawn().expect("valid config")
}

async fn story(name: &str) {
    let emu = Emulator::start_blocking().expect("emulator");
    three_candidates(|id| candidate(&emu, name, id)).await;
}

#[test]
fn three_candidates_on_smol() {
    Runtime::Smol.run(|| story("smol-election"));
}

#[test]
fn three_candidates_on_async_std() {
    Runtime::AsyncStd.run(|| story("async-std-election"));
}
