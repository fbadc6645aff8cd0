//! Warm standby against cold, for the mirror controller on the API emulator:
//! from a leader change to the new leader's first reconcile, with 1,000 source
//! ConfigMaps (and their copies), after a graceful handover and after a crash;
//! and the requests a follower replica makes per minute.
//!
//! - warm: every replica caches sources and copies from start-up
//!   (`election-controller`); a new leader reconciles from its cache.
//! - cold: a replica starts its controller only on leadership
//!   (`Controller::new`: a LIST of the sources, and one of the copies), as a
//!   hand-written "start the controller in the leader callback" does.
//!
//! "Leader change" is the server's time of the new leader's acquiring Lease
//! write (the emulator's write history); the first reconcile is stamped by the
//! wall clock of the same machine.
//!
//! Run: `cargo run --release --example bench_controller`
//! (`-- --quick`: 100 objects, one round, for CI).

#[path = "../../products/election-controller/tests/mirror/mod.rs"]
mod mirror;

use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube_emulator::Emulator;

use mirror::{Log, Options, Replica};
use test_kit::figures::median;
use test_kit::poll::Poll;

/// Waits until `ok`, for at most 30 s.
async fn until(what: &str, ok: impl FnMut() -> bool) {
    Poll::within(Duration::from_secs(30)).until(what, ok).await;
}

/// The server time of the last committed Lease write that made `id` the holder
/// (the previous one named another, or nobody).
fn acquired_at(emu: &Emulator, id: &str) -> SystemTime {
    let mut previous = String::new();
    let mut acquired = None;
    for w in emu.committed_writes() {
        let Some(holder) = mirror::lease_holder(&w) else {
            continue;
        };
        if holder == id && previous != id {
            acquired = Some(w.at);
        }
        previous = holder.to_owned();
    }
    acquired.expect("an acquiring write")
}

struct Round {
    /// Acquire write to first reconcile.
    change: Duration,
    /// Acquire write to the term's controller being made (the election's part).
    elected: Duration,
    /// The old leader's shutdown call (or crash) to first reconcile.
    total: Duration,
}

async fn takeover(
    emu: &Emulator,
    log: &Log,
    replicas: &mut Vec<Replica>,
    crash: bool,
) -> (Round, String) {
    let old = mirror::take_leader(replicas).expect("a leader");
    let start = Instant::now();
    if crash {
        old.handle.abort();
    } else {
        old.handle.shutdown().await;
    }
    until("a new leader", || {
        replicas.iter().any(|r| r.handle.is_leader())
    })
    .await;
    let new = replicas
        .iter()
        .find(|r| r.handle.is_leader())
        .expect("leader")
        .id
        .clone();
    until("its first reconcile", || {
        log.first_by(&new, start).is_some()
    })
    .await;
    let first = log.first_by(&new, start).expect("reconcile");
    let change = first
        .started_at
        .duration_since(acquired_at(emu, &new))
        .unwrap_or_default();
    let acquired = acquired_at(emu, &new);
    let elected = log
        .last_term_start(&new)
        .and_then(|t| t.duration_since(acquired).ok())
        .unwrap_or_default();
    (
        Round {
            change,
            elected,
            total: first.started - start,
        },
        old.id,
    )
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// One mode: `rounds` graceful handovers and crashes among two replicas.
async fn run(
    objects: usize,
    rounds: usize,
    window: Duration,
    cold: bool,
) -> (Vec<Round>, Vec<Round>, f64) {
    let (emu, _) = mirror::cluster((0..objects).map(|i| format!("s{i:04}"))).await;
    let log = Log::default();
    let options = Options {
        cold,
        ..Options::fast()
    };
    let mut next = 0;
    let mut spawn = |emu: &Emulator| {
        next += 1;
        let id = format!("r{next}");
        mirror::start(&emu.kube_config(&id), &id, &options, &log)
    };
    let mut replicas = vec![spawn(&emu), spawn(&emu)];
    until("a leader", || replicas.iter().any(|r| r.handle.is_leader())).await;
    let copies: Api<ConfigMap> =
        Api::namespaced(emu.client("admin").expect("client"), mirror::TARGET);
    loop {
        let n = copies
            .list(&Default::default())
            .await
            .expect("list")
            .items
            .len();
        if n == objects {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A follower's requests over a window of steady state.
    let follower = replicas
        .iter()
        .find(|r| !r.handle.is_leader())
        .expect("a follower")
        .id
        .clone();
    let before = emu.request_counts().client_total(&follower);
    tokio::time::sleep(window).await;
    let per_minute = (emu.request_counts().client_total(&follower) - before) as f64 * 60.0
        / window.as_secs_f64();

    let (mut graceful, mut crashes) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (round, _) = takeover(&emu, &log, &mut replicas, false).await;
        graceful.push(round);
        replicas.push(spawn(&emu));
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (round, _) = takeover(&emu, &log, &mut replicas, true).await;
        crashes.push(round);
        replicas.push(spawn(&emu));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for r in &replicas {
        r.handle.shutdown().await;
    }
    (graceful, crashes, per_minute)
}

/// The floor both modes share: a kube-runtime `Controller` over a store that
/// already holds `objects`, from its construction to its first reconcile (no
/// API server, no election): the time its scheduler takes to hand out a request
/// due now.
async fn floor(objects: usize, rounds: usize) -> Duration {
    use kube_runtime::{Controller, reflector, watcher::Event};
    let (store, mut writer) = reflector::store::<ConfigMap>();
    writer.apply_watcher_event(&Event::Init);
    for i in 0..objects {
        let mut cm = mirror::source(&format!("s{i:04}"), "v1");
        cm.metadata.namespace = Some(mirror::SOURCE.to_owned());
        writer.apply_watcher_event(&Event::InitApply(cm));
    }
    writer.apply_watcher_event(&Event::InitDone);
    let mut samples = Vec::new();
    for _ in 0..rounds.max(3) {
        let (tx, rx) = futures::channel::oneshot::channel::<Instant>();
        let tx = std::sync::Mutex::new(Some(tx));
        let start = Instant::now();
        let trigger = futures::stream::iter(store.state()).chain(futures::stream::pending());
        let run = Controller::for_shared_stream(trigger, store.clone()).run(
            move |_, _: std::sync::Arc<()>| {
                if let Some(tx) = tx.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    let _ = tx.send(Instant::now());
                }
                async { Ok::<_, kube::Error>(kube_runtime::controller::Action::await_change()) }
            },
            |_, _, _| kube_runtime::controller::Action::await_change(),
            std::sync::Arc::new(()),
        );
        let task = tokio::spawn(run.for_each(|_| async {}));
        samples.push(rx.await.expect("a reconcile") - start);
        task.abort();
    }
    median(samples)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (objects, rounds, window) = if quick {
        (100, 1, Duration::from_secs(2))
    } else {
        (1000, 5, Duration::from_secs(60))
    };
    println!(
        "mirror controller, {objects} sources, Config::fast (lease 2 s), {rounds} rounds per mode, medians"
    );
    let mut rows = Vec::new();
    for cold in [false, true] {
        let (graceful, crashes, per_minute) = run(objects, rounds, window, cold).await;
        let mode = if cold { "cold" } else { "warm" };
        let g = median(graceful.iter().map(|r| r.change).collect());
        let c = median(crashes.iter().map(|r| r.change).collect());
        println!(
            "{mode}: handover: acquire -> first reconcile {} (of which acquire -> controller made {}; shutdown call -> first reconcile {}); crash: acquire -> first reconcile {} (of which {}; crash -> first reconcile {}); follower requests/min {per_minute:.1}",
            ms(g),
            ms(median(graceful.iter().map(|r| r.elected).collect())),
            ms(median(graceful.iter().map(|r| r.total).collect())),
            ms(c),
            ms(median(crashes.iter().map(|r| r.elected).collect())),
            ms(median(crashes.iter().map(|r| r.total).collect())),
        );
        rows.push((g, c));
    }
    println!(
        "floor of both: a kube-runtime Controller over {objects} objects already in memory, made -> first reconcile {}",
        ms(floor(objects, rounds).await)
    );
    let ratio = |w: Duration, c: Duration| c.as_secs_f64() / w.as_secs_f64().max(1e-6);
    println!(
        "cold / warm, acquire -> first reconcile: handover {:.1}x, crash {:.1}x",
        ratio(rows[0].0, rows[1].0),
        ratio(rows[0].1, rows[1].1)
    );
}
