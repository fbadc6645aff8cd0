//! Three replicas of a small real controller in one process, on the bundled API
//! emulator: it copies the ConfigMaps labelled `mirror=true` from the namespace
//! `source` into `mirror` and keeps them in sync (see `mirror/mod.rs`). Only
//! the leader reconciles; every replica keeps its caches warm.
//!
//! It prints who leads, each reconcile, a graceful handover and a crash
//! failover with their timings, then checks the emulator's write history
//! (every copy written by the leader of that instant, before its deadline) and
//! that no new leader listed anything to take over. Exits non-zero if a check
//! fails.
//!
//! Run: `cargo run --example controller` (about 15 s).

#[path = "../../products/election-controller/tests/mirror/mod.rs"]
mod mirror;

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube_emulator::{Emulator, Resource, Verb};

use mirror::{Log, Options, Replica};

const SOURCES: usize = 5;

/// Waits until `what` holds, sampling every millisecond, for at most 10 s.
async fn until(what: &str, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out: {what}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn leader(replicas: &[Replica]) -> Option<&Replica> {
    replicas.iter().find(|r| r.handle.is_leader())
}

fn lists(emu: &Emulator, id: &str) -> u64 {
    emu.request_counts()
        .get(id, Verb::List, Resource::ConfigMap)
}

/// Changes a source's value, then gives the leader a moment to copy it.
async fn change(sources: &Api<ConfigMap>, name: &str, value: &str, t0: Instant) {
    mirror::set_value(sources, name, value).await;
    println!("{:>9} == {name} changed to {value}", ms(t0.elapsed()));
    tokio::time::sleep(Duration::from_millis(300)).await;
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let t0 = Instant::now();
    let (emu, sources) = mirror::cluster((0..SOURCES).map(|i| format!("settings-{i}"))).await;
    let log = Log::default();
    let options = Options {
        verbose: true,
        ..Options::fast()
    };
    println!(
        "three replicas, Lease `{}`, Config::fast (lease 2 s, renew deadline 1.5 s, retry 250 ms)",
        mirror::LEASE
    );
    let mut replicas: Vec<Replica> = ["alpha", "bravo", "charlie"]
        .iter()
        .map(|id| mirror::start(&emu.kube_config(id), id, &options, &log))
        .collect();
    for r in &replicas {
        let (id, mut states) = (r.id.clone(), r.handle.states());
        tokio::spawn(async move {
            let mut leading = false;
            while let Some(s) = states.next().await {
                if s.leading() != leading {
                    leading = s.leading();
                    let what = if leading {
                        "STARTED LEADING"
                    } else {
                        "stopped leading"
                    };
                    let term = s.term.map(|t| t.to_string()).unwrap_or_default();
                    let line = format!("{:>9} {id:<8} {what} {term}", ms(t0.elapsed()));
                    println!("{}", line.trim_end());
                }
            }
        });
    }
    for r in &replicas {
        r.sources.synced().await;
    }
    println!("{:>9} every replica's cache is synced", ms(t0.elapsed()));

    until("a leader", || leader(&replicas).is_some()).await;
    let first = leader(&replicas).expect("leader").id.clone();
    let copies: Api<ConfigMap> =
        Api::namespaced(emu.client("admin").expect("client"), mirror::TARGET);
    let all_copied = || async {
        copies
            .list(&Default::default())
            .await
            .map(|l| l.items.len())
            .unwrap_or(0)
            == SOURCES
    };
    while !all_copied().await {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "{:>9} == {first} leads; all {SOURCES} copies made",
        ms(t0.elapsed())
    );

    change(&sources, "settings-0", "v2", t0).await;

    // A graceful handover: the leader shuts down (drain, release).
    let lists_before: Vec<u64> = replicas.iter().map(|r| lists(&emu, &r.id)).collect();
    let gone = mirror::take_leader(&mut replicas).expect("a leader");
    println!(
        "{:>9} == shutting {first} down gracefully",
        ms(t0.elapsed())
    );
    let start = Instant::now();
    gone.handle.shutdown().await;
    let drained = start.elapsed();
    until("a new leader", || leader(&replicas).is_some()).await;
    let second = leader(&replicas).expect("leader").id.clone();
    until("its first reconcile", || {
        log.first_by(&second, start).is_some()
    })
    .await;
    let handover = log.first_by(&second, start).expect("reconcile").started - start;
    println!(
        "{:>9} == handover: {second} reconciled {} after the shutdown call (drain and release: {})",
        ms(t0.elapsed()),
        ms(handover),
        ms(drained)
    );
    change(&sources, "settings-1", "v2", t0).await;

    // A crash: the new leader stops at once, without a release.
    println!("{:>9} == crashing {second} (no release)", ms(t0.elapsed()));
    let crashed = mirror::take_leader(&mut replicas).expect("a leader");
    let start = Instant::now();
    crashed.handle.abort();
    drop(crashed);
    until("a third leader", || leader(&replicas).is_some()).await;
    let third = leader(&replicas).expect("leader").id.clone();
    until("its first reconcile", || {
        log.first_by(&third, start).is_some()
    })
    .await;
    let failover = log.first_by(&third, start).expect("reconcile").started - start;
    println!(
        "{:>9} == failover: {third} reconciled {} after the crash (the lease is 2 s)",
        ms(t0.elapsed()),
        ms(failover)
    );
    change(&sources, "settings-2", "v2", t0).await;

    // A copy deleted by hand: the copies' warm cache brings its source back to
    // the leader's reconcile.
    copies
        .delete("settings-3", &Default::default())
        .await
        .expect("delete a copy");
    let start = Instant::now();
    println!(
        "{:>9} == the copy settings-3 deleted by hand",
        ms(t0.elapsed())
    );
    while copies.get_opt("settings-3").await.ok().flatten().is_none() {
        assert!(start.elapsed() < Duration::from_secs(5), "not put back");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    println!(
        "{:>9} == {third} put it back {} after the delete",
        ms(t0.elapsed()),
        ms(start.elapsed())
    );

    let mut ok = true;
    println!("\nchecks:");
    // Every write to the copies but the delete by hand above.
    let mut writes = emu.committed_writes();
    writes.retain(|w| w.client != "admin");
    let history = mirror::check_history(&writes, Duration::from_millis(1500));
    match history {
        Ok(h) => println!(
            "  write history: copies written by {:?}, in runs {:?}: every one by the leader of its instant, before its deadline",
            h.writes, h.runs
        ),
        Err(e) => {
            println!("  write history: VIOLATION: {e}");
            ok = false;
        }
    }
    for (id, before) in ["alpha", "bravo", "charlie"].iter().zip(lists_before) {
        let after = lists(&emu, id);
        println!(
            "  LIST requests by {id}: {after} in all, {} since the handover began",
            after - before
        );
        if (*id == second || *id == third) && after != before {
            ok = false;
        }
    }
    for r in &replicas {
        r.handle.shutdown().await;
    }
    if !ok {
        std::process::exit(1);
    }
}
