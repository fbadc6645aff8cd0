//! The three-candidate election story ([`three_candidates`]) on a Kubernetes lock
//! over the API emulator ([`on_tokio`], [`on_any_runtime`]) or the real
//! kube-apiserver ([`on_server`]): a leader is elected, crashes, another takes over after
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
use lock_kube::ObjectLock;

use super::{KubeLock, NS, record_in};
use crate::apiserver::Server;
use crate::story::{CANDIDATES, check_story_events, leader_events, three_candidates};

fn lock<S: KubeLock>(emu: &Emulator, name: &str, config: &Config) -> ObjectLock<S::Codec> {
    lock_in::<S>(emu, NS, name, config)
}

fn lock_in<S: KubeLock>(
    server: &dyn Server,
    ns: &str,
    name: &str,
    config: &Config,
) -> ObjectLock<S::Codec> {
    let id = &config.identity;
    let client = lock_kube::lock_client(server.kube_config(id)).expect("client");
    // The driver hands the lock the election's request timeout (Lock::configure).
    ObjectLock::<S::Codec>::builder(client, ns, name)
        .build()
        .expect("valid names")
}

fn config(id: &str) -> Config {
    Config::fast(id).seed(id.len() as u64 + 7)
}

/// The record names `holder` and counts at least the two hand-overs.
fn check_record<S: KubeLock>(server: &dyn Server, ns: &str, name: &str, holder: &str) {
    let rec = record_in::<S>(server, ns, name);
    assert_eq!(rec["holderIdentity"], holder);
    assert!(rec[S::TRANSITIONS].as_u64().unwrap_or(0) >= 2);
}

/// The story on `S`'s lock `name` in `ns` of `server` with the driver on
/// `rt`, then the check of its Events (none stored if `events_forbidden`: the
/// caller forbade them).
async fn story<S: KubeLock>(
    server: &dyn Server,
    ns: &str,
    rt: impl Runtime,
    name: &str,
    events_forbidden: bool,
) {
    three_candidates(
        |id| {
            let config = config(id);
            Builder::new(lock_in::<S>(server, ns, name, &config), config)
                .spawn(rt.clone())
                .expect("valid config")
        },
        |holder| check_record::<S>(server, ns, name, holder),
    )
    .await;
    if events_forbidden {
        assert_eq!(leader_events(server, ns, name), []);
    } else {
        check_story_events(server, ns, name).await;
    }
}

/// The story and its checks on the emulator, Events forbidden or not.
async fn story_on_emulator<S: KubeLock>(
    emu: &Emulator,
    rt: impl Runtime,
    name: &str,
    events_forbidden: bool,
) {
    if events_forbidden {
        forbid_events(emu);
    }
    story::<S>(emu, NS, rt, name, events_forbidden).await;
    if events_forbidden {
        check_events_were_tried(emu);
    }
}

/// The story on tokio: the emulator on the caller's tokio runtime, the driver on
/// `rt` (`adapter_tokio::TokioRuntime`), within a minute.
pub async fn on_tokio<S: KubeLock>(rt: impl Runtime, name: &str, events_forbidden: bool) {
    let emu = Emulator::start().await.expect("emulator");
    tokio::time::timeout(
        Duration::from_secs(60),
        story_on_emulator::<S>(&emu, rt, name, events_forbidden),
    )
    .await
    .expect("the story ends within a minute");
}

/// The story on any runtime (run it with [`Runtime::run`](crate::runtimes::Runtime::run)):
/// the emulator on a thread and tokio runtime of its own, the driver on `rt`
/// (`adapter_smol::SmolRuntime` under smol and async-std).
pub async fn on_any_runtime<S: KubeLock>(rt: impl Runtime, name: &str, events_forbidden: bool) {
    let emu = Emulator::start_blocking().expect("emulator");
    story_on_emulator::<S>(&emu, rt, name, events_forbidden).await;
}

/// The story against any [`Server`] (kube-apiserver:
/// [`ApiServer::shared`](crate::apiserver::ApiServer::shared)), in a namespace
/// of its own, with the driver on `rt`, within a minute: the election, the
/// failover after a crash no earlier than the lease allows, the graceful
/// handover within [`HANDOVER_BOUND`](crate::story::HANDOVER_BOUND), the record
/// as the server has it, and the leadership Events the server stored.
pub async fn on_server<S: KubeLock>(server: &dyn Server, rt: impl Runtime, name: &str) {
    let ns = server.namespace();
    crate::runtimes::timeout(
        Duration::from_secs(60),
        story::<S>(server, &ns, rt, name, false),
    )
    .await
    .expect("the story ends within a minute");
}

/// Every client's Event creates are answered 403 (docs/faults.md H9).
fn forbid_events(emu: &Emulator) {
    emu.faults_for_all()
        .on(Match::verbs(&[Verb::Create]).resource(Resource::Event))
        .forbidden();
}

/// The candidates did try to record Events (at least the three `became
/// leader`), though none was stored.
fn check_events_were_tried(emu: &Emulator) {
    let counts = emu.request_counts();
    let tried: u64 = CANDIDATES
        .iter()
        .map(|id| counts.get(id, Verb::Create, Resource::Event))
        .sum();
    assert!(tried >= 3, "Event creates tried: {tried}");
}

/// How long a candidate that leads at once on its create may lead beside the
/// holder of a lock deleted under it, in the mixed-fleet test: the holder's
/// handling of its watch's deletion event against the other's create round
/// trip, on a loaded two-core machine.
const MIXED_FLEET_RACE: Duration = Duration::from_millis(100);

/// docs/faults.md A4 in a mixed fleet: this project's leader (strict
/// lock delay) and a candidate that creates and leads at once
/// (`LockDelay::Immediate`, as client-go does), watching the lock too; the lock
/// is deleted while every request of the leader but its watch is answered 429.
/// The leader stops at once on the watch's deletion, without the read (which
/// the 429's one-second `Retry-After` holds back). The other hears the same
/// deletion and leads on its create's answer: the two race, the leader's
/// handling of the event against the other's round trip, and under load the
/// create can win by a millisecond. What the leader's
/// watch bounds is the overlap: by the drivers' own clock (one process, one
/// clock), and by 1 ms samples, at most `MIXED_FLEET_RACE` (100 ms), where a leader
/// that waited for its read would overlap for a second or more.
pub async fn a4_deletion_under_429_in_a_mixed_fleet_stops_the_leader_at_once<S: KubeLock>(
    rt: impl Runtime,
) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use election_core::{Event, LockDelay, StopReason};
    use election_driver::{Change, LeadershipState, StateStream};
    use futures::StreamExt;

    /// The first state of `states` that `pick` accepts.
    async fn first(mut states: StateStream, pick: fn(&LeadershipState) -> bool) -> LeadershipState {
        while let Some(s) = states.next().await {
            if pick(&s) {
                return s;
            }
        }
        panic!("the state stream ended");
    }

    let emu = Emulator::start().await.expect("emulator");
    let name = "mixed-fleet";
    let strict = Config::fast("strict").seed(3);
    let a = Arc::new(
        Builder::new(lock::<S>(&emu, name, &strict), strict)
            .spawn(rt.clone())
            .expect("valid config"),
    );
    let start = std::time::Instant::now();
    while !a.is_leader() {
        assert!(start.elapsed() < Duration::from_secs(10), "no leader");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut eager = Config::fast("eager").seed(5);
    eager.lock_delay = LockDelay::Immediate;
    let b = Arc::new(
        Builder::new(lock::<S>(&emu, name, &eager), eager)
            .spawn(rt)
            .expect("valid config"),
    );
    // The follower in place (its watch open) before the deletion.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(a.is_leader() && !b.is_leader());
    // A burst of 429s on every request of the leader but its watch.
    emu.faults("strict")
        .on(Match::verbs(&[Verb::Get, Verb::Create, Verb::Update]))
        .too_many_requests(1);
    let a_stop = tokio::spawn(first(a.states(), |s| {
        matches!(
            &s.change,
            Change::Elector(Event::StoppedLeading {
                reason: StopReason::LockDeleted,
                ..
            })
        )
    }));
    let b_start = tokio::spawn(first(b.states(), |s| {
        matches!(&s.change, Change::Elector(Event::StartedLeading { .. }))
    }));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (a, b, sampling) = (a.clone(), b.clone(), sampling.clone());
        tokio::spawn(async move {
            let mut both = 0u32;
            while sampling.load(Ordering::Relaxed) {
                // The two reads are not one instant: count a sample only if
                // `a` led both before and after `b` was read (a term of `a`
                // does not end and start again within one sample), so that a
                // stop of `a` and a start of `b` between the reads, on a
                // loaded machine, is not taken for an overlap.
                let a_before = a.is_leader();
                let b_now = b.is_leader();
                both += u32::from(a_before && b_now && a.is_leader());
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            both
        })
    };
    let admin = lock_kube::lock_client(emu.kube_config("admin")).expect("client");
    let api: kube::Api<super::Object<S>> = kube::Api::namespaced(admin, NS);
    api.delete(name, &Default::default())
        .await
        .expect("the admin deletes the lock");
    let deleted = std::time::Instant::now();
    let stopped = tokio::time::timeout(Duration::from_secs(10), a_stop)
        .await
        .expect("the leader stops")
        .expect("task");
    let stop_took = deleted.elapsed();
    let started = tokio::time::timeout(Duration::from_secs(10), b_start)
        .await
        .expect("the other leads")
        .expect("task");
    sampling.store(false, Ordering::Relaxed);
    let both = sampler.await.expect("sampler");
    let overlap = stopped.at.saturating_duration_since(started.at);
    assert!(
        overlap <= MIXED_FLEET_RACE,
        "the leader stopped at {:?}, {overlap:?} after the other started at {:?}",
        stopped.at,
        started.at
    );
    assert!(
        u128::from(both) <= MIXED_FLEET_RACE.as_millis(),
        "{both} samples of 1 ms with two leaders (the leader stopped at {:?}, the other started at {:?})",
        stopped.at,
        started.at
    );
    // At once: well before the 429's one-second Retry-After would let a read go.
    assert!(
        stop_took < Duration::from_millis(500),
        "stopped after {stop_took:?}"
    );
    b.shutdown().await;
    a.shutdown().await;
}
