//! A three-candidate election on the Lease lock over the API emulator: a leader is
//! elected, crashes, another takes over after the lease; that one hands over
//! gracefully, and a third leads at once. At no sampled instant do two candidates
//! report leadership. The story is `test_kit::story::three_candidates`
//! (shared with the ConfigMap lock), driven by `adapter-tokio` on tokio and by
//! `adapter-smol` under smol and async-std, where kube's client gets its tokio
//! reactor from `async-compat` inside the lock and the emulator runs on a thread
//! and runtime of its own.
//!
//! The candidates record client-go's Events on the Lease as they start and stop
//! leading (the driver tells the lock, which writes them in the background); with
//! Events forbidden (FAULTS H9) the election goes on as before.

use std::time::Duration;

use election_core::Config;
use kube_emulator::{Emulator, Match, Resource, Verb};
use lock_lease::LeaseLock;
use test_kit::runtimes::Runtime;
use test_kit::story::{CANDIDATES, check_story_events, leader_events, three_candidates};

fn lock(emu: &Emulator, name: &str, config: &Config) -> LeaseLock {
    let id = &config.identity;
    let client = kube_support::lock_client(emu.kube_config(id)).expect("client");
    LeaseLock::builder(client, "default", name)
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

/// The story on tokio (`adapter-tokio`), Events forbidden or not.
async fn story_on_tokio(name: &str, events_forbidden: bool) {
    let emu = Emulator::start().await.expect("emulator");
    if events_forbidden {
        forbid_events(&emu);
    }
    tokio::time::timeout(
        Duration::from_secs(60),
        three_candidates(
            |id| {
                let config = config(id);
                election_driver::Builder::new(lock(&emu, name, &config), config)
                    .spawn(adapter_tokio::TokioRuntime::current().expect("inside tokio"))
                    .expect("valid config")
            },
            |holder| check_lease(&emu, name, holder),
        ),
    )
    .await
    .expect("the story ends within a minute");
    check_events(&emu, name, events_forbidden).await;
}

/// The story under smol or async-std (`adapter-smol`), Events forbidden or not.
async fn story_on_adapter_smol(name: &str, events_forbidden: bool) {
    let emu = Emulator::start_blocking().expect("emulator");
    if events_forbidden {
        forbid_events(&emu);
    }
    three_candidates(
        |id| {
            let config = config(id);
            election_driver::Builder::new(lock(&emu, name, &config), config)
                .spawn(adapter_smol::SmolRuntime::new())
                .expect("valid config")
        },
        |holder| check_lease(&emu, name, holder),
    )
    .await;
    check_events(&emu, name, events_forbidden).await;
}

/// After a story: with Events forbidden, they were tried and none stored; else the
/// story's Events (`check_story_events`).
async fn check_events(emu: &Emulator, name: &str, events_forbidden: bool) {
    if events_forbidden {
        check_events_were_refused(emu, name);
    } else {
        check_story_events(emu, "default", name).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_candidates_on_tokio() {
    story_on_tokio("tokio-election", false).await;
}

/// Every client's Event creates are answered 403 (FAULTS H9).
fn forbid_events(emu: &Emulator) {
    emu.faults_for_all()
        .on(Match::verbs(&[Verb::Create]).resource(Resource::Event))
        .forbidden();
}

/// The candidates did try to record Events (at least the three `became
/// leader`), and none was stored.
fn check_events_were_refused(emu: &Emulator, name: &str) {
    let counts = emu.request_counts();
    let tried: u64 = CANDIDATES
        .iter()
        .map(|id| counts.get(id, Verb::Create, Resource::Event))
        .sum();
    assert!(tried >= 3, "Event creates tried: {tried}");
    assert_eq!(leader_events(emu, "default", name), []);
}

/// FAULTS H9: with Events forbidden the three-candidate story (election, failover
/// after a crash, graceful handover) runs as it does with Events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h9_events_forbidden_leave_the_election_unchanged_on_tokio() {
    story_on_tokio("tokio-no-events", true).await;
}

/// FAULTS H9 under smol (`adapter-smol`).
#[test]
fn h9_events_forbidden_leave_the_election_unchanged_on_smol() {
    Runtime::Smol.run(|| story_on_adapter_smol("smol-no-events", true));
}

#[test]
fn three_candidates_on_smol() {
    Runtime::Smol.run(|| story_on_adapter_smol("smol-election", false));
}

#[test]
fn three_candidates_on_async_std() {
    Runtime::AsyncStd.run(|| story_on_adapter_smol("async-std-election", false));
}
