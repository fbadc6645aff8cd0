//! A three-candidate election on the ConfigMap lock over the API emulator: a leader is
//! elected, crashes, another takes over after the lease; that one hands over
//! gracefully, and a third leads at once. At no sampled instant do two candidates
//! report leadership. The story is `test_kit::story::three_candidates`
//! (shared with the Lease lock), driven by `adapter-tokio` on tokio and by
//! `adapter-smol` under smol and async-std, where kube's client gets its tokio
//! reactor from `async-compat` inside the lock and the emulator runs on a thread
//! and runtime of its own. The candidates record client-go's leadership Events
//! on the ConfigMap.

use std::time::Duration;

use election_core::Config;
use kube_emulator::Emulator;
use lock_configmap::ConfigMapLock;
use test_kit::runtimes::Runtime;
use test_kit::story::{check_story_events, three_candidates};

fn lock(emu: &Emulator, name: &str, config: &Config) -> ConfigMapLock {
    let id = &config.identity;
    let client = kube_support::lock_client(emu.kube_config(id)).expect("client");
    ConfigMapLock::builder(client, "default", name)
        .build()
        .expect("valid names")
}

fn config(id: &str) -> Config {
    Config::fast(id).seed(id.len() as u64 + 7)
}

/// The record names `holder` and counts at least the two hand-overs.
fn check_record(emu: &Emulator, name: &str, holder: &str) {
    let cm = emu
        .object(kube_emulator::Resource::ConfigMap, "default", name)
        .expect("the configmap");
    let record: serde_json::Value = serde_json::from_str(
        cm["metadata"]["annotations"][lock_configmap::record::ANNOTATION]
            .as_str()
            .expect("the annotation"),
    )
    .expect("JSON");
    assert_eq!(record["holderIdentity"], holder);
    assert!(record["leaderTransitions"].as_u64().unwrap_or(0) >= 2);
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
                election_driver::Builder::new(lock(&emu, name, &config), config)
                    .spawn(adapter_tokio::TokioRuntime::current().expect("inside tokio"))
                    .expect("valid config")
            },
            |holder| check_record(&emu, name, holder),
        ),
    )
    .await
    .expect("the story ends within a minute");
    check_story_events(&emu, "default", name).await;
}

async fn story_on_adapter_smol(name: &str) {
    let emu = Emulator::start_blocking().expect("emulator");
    three_candidates(
        |id| {
            let config = config(id);
            election_driver::Builder::new(lock(&emu, name, &config), config)
                .spawn(adapter_smol::SmolRuntime::new())
                .expect("valid config")
        },
        |holder| check_record(&emu, name, holder),
    )
    .await;
    check_story_events(&emu, "default", name).await;
}

#[test]
fn three_candidates_on_smol() {
    Runtime::Smol.run(|| story_on_adapter_smol("smol-election"));
}

#[test]
fn three_candidates_on_async_std() {
    Runtime::AsyncStd.run(|| story_on_adapter_smol("async-std-election"));
}
