//! The three-candidate election story ([`three_candidates`]) on a Kubernetes lock
//! over the API emulator: a leader is elected, crashes, another takes over after
//! the lease; that one hands over gracefully, and a third leads at once. At no
//! sampled instant do two candidates report leadership. The candidates record
//! client-go's Events on the lock object as they start and stop leading (the
//! driver tells the lock, which writes them in the background); with Events
//! forbidden (docs/faults.md H9) the election goes on as before.
//!
//! The driver runs on the runtime the test passes: `adapter-tokio`'s on tokio
//! ([`on_tokio`]); `adapter-smol`'s under smol and async-std ([`on_any_runtime`]),
//! where kube's client gets its tokio reactor from `async-compat` inside the lock
//! and the emulator runs on a thread and runtime of its own.

use std::time::Duration;

use election_core::Config;
use election_driver::{Builder, Runtime};
use kube_emulator::{Emulator, Match, Resource, Verb};
use kube_support::ObjectLock;

use super::{KubeLock, NS, record};
use crate::story::{CANDIDATES, check_story_events, leader_events, three_candidates};

fn lock<S: KubeLock>(emu: &Emulator, name: &str, config: &Config) -> ObjectLock<S::Codec> {
    let id = &config.identity;
    let client = kube_support::lock_client(emu.kube_config(id)).expect("client");
    // The driver hands the lock the election's request timeout (Lock::configure).
    ObjectLock::<S::Codec>::builder(client, NS, name)
        .build()
        .expect("valid names")
}

fn config(id: &str) -> Config {
    Config::fast(id).seed(id.len() as u64 + 7)
}

/// The record names `holder` and counts at least the two hand-overs.
fn check_record<S: KubeLock>(emu: &Emulator, name: &str, holder: &str) {
    let rec = record::<S>(emu, name);
    assert_eq!(rec["holderIdentity"], holder);
    assert!(rec[S::TRANSITIONS].as_u64().unwrap_or(0) >= 2);
}

/// The story on `S`'s lock `name` with the driver on `rt`, Events forbidden or
/// not, then the check of its Events.
async fn story<S: KubeLock>(emu: &Emulator, rt: impl Runtime, name: &str, events_forbidden: bool) {
    if events_forbidden {
        forbid_events(emu);
    }
    three_candidates(
        |id| {
            let config = config(id);
            Builder::new(lock::<S>(emu, name, &config), config)
                .spawn(rt.clone())
                .expect("valid config")
        },
        |holder| check_record::<S>(emu, name, holder),
    )
    .await;
    check_events(emu, name, events_forbidden).await;
}

/// The story on tokio: the emulator on the caller's tokio runtime, the driver on
/// `rt` (`adapter_tokio::TokioRuntime`), within a minute.
pub async fn on_tokio<S: KubeLock>(rt: impl Runtime, name: &str, events_forbidden: bool) {
    let emu = Emulator::start().await.expect("emulator");
    tokio::time::timeout(
        Duration::from_secs(60),
        story::<S>(&emu, rt, name, events_forbidden),
    )
    .await
    .expect("the story ends within a minute");
}

/// The story on any runtime (run it with [`Runtime::run`](crate::runtimes::Runtime::run)):
/// the emulator on a thread and tokio runtime of its own, the driver on `rt`
/// (`adapter_smol::SmolRuntime` under smol and async-std).
pub async fn on_any_runtime<S: KubeLock>(rt: impl Runtime, name: &str, events_forbidden: bool) {
    let emu = Emulator::start_blocking().expect("emulator");
    story::<S>(&emu, rt, name, events_forbidden).await;
}

/// After a story: with Events forbidden, they were tried and none stored; else the
/// story's Events ([`check_story_events`]).
async fn check_events(emu: &Emulator, name: &str, events_forbidden: bool) {
    if events_forbidden {
        check_events_were_refused(emu, name);
    } else {
        check_story_events(emu, NS, name).await;
    }
}

/// Every client's Event creates are answered 403 (docs/faults.md H9).
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
    assert_eq!(leader_events(emu, NS, name), []);
}
