//! docs/faults.md R2 and R13 on the Lease over the API emulator, with the real
//! `kube` client: an operator patches the held Lease (the strategic-merge PATCH
//! `kubectl patch lease … -p '{"spec":…}'` sends) while one candidate of this
//! library leads and two follow. The leader's calls are answered 429 (its
//! confirming read would be held back a second by `Retry-After`), and for the
//! duration edit its watch is cut too, so it cannot learn of the edit at all.
//!
//! What must hold: no two candidates lead at any instant, judged on the drivers'
//! one shared clock (every driver runs on clones of one runtime) from the
//! instants their states report, and by sampling `is_leader` every millisecond.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use adapter_tokio::TokioRuntime;
use election_core::{Config, Event, Instant, StopReason};
use election_driver::{Builder, Change, Handle, Runtime};
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, Patch, PatchParams};
use kube_emulator::{Emulator, Fault, Match, Verb};
use lock_lease::LeaseLock;

const NS: &str = "default";

/// One candidate's leaderships, as its driver reported them: start and stop on
/// the drivers' clock (a stop of `None`: still leading), and why each stopped.
#[derive(Default)]
struct Terms {
    spans: Vec<(Instant, Option<Instant>, Option<StopReason>)>,
}

/// A candidate on the Lease `name`, as the emulator's client `id`.
fn candidate(emu: &Emulator, rt: &TokioRuntime, name: &str, id: &str) -> Handle {
    let client = lock_kube::lock_client(emu.kube_config(id)).expect("client");
    let lock = LeaseLock::builder(client, NS, name)
        .build()
        .expect("valid names");
    let config = Config::fast(id).seed(id.len() as u64 + 11);
    Builder::new(lock, config)
        .spawn(rt.clone())
        .expect("valid config")
}

/// Records the leaderships `handle` reports, from its first state on.
fn record_terms(handle: &Handle) -> Arc<std::sync::Mutex<Terms>> {
    let terms = Arc::new(std::sync::Mutex::new(Terms::default()));
    let mut states = handle.states();
    let out = terms.clone();
    tokio::spawn(async move {
        while let Some(s) = states.next().await {
            let mut t = out.lock().unwrap();
            match s.change {
                Change::Elector(Event::StartedLeading { .. }) => t.spans.push((s.at, None, None)),
                Change::Elector(Event::StoppedLeading { reason, .. }) => {
                    if let Some(last) = t.spans.last_mut() {
                        last.1 = Some(s.at);
                        last.2 = Some(reason);
                    }
                }
                _ => {}
            }
        }
    });
    terms
}

/// Samples every millisecond until told to stop; counts the samples in which
/// two or more candidates led. Each candidate is read twice per sample and
/// counts only if it led in both reads: a stop and another's start between two
/// reads of a loaded machine are not taken for an overlap.
fn sample(nodes: Vec<Arc<Handle>>, sampling: Arc<AtomicBool>) -> tokio::task::JoinHandle<u32> {
    tokio::spawn(async move {
        let both = AtomicU32::new(0);
        while sampling.load(Ordering::Relaxed) {
            let first: Vec<bool> = nodes.iter().map(|n| n.is_leader()).collect();
            let steady = nodes
                .iter()
                .zip(&first)
                .filter(|(n, led)| **led && n.is_leader())
                .count();
            if steady > 1 {
                both.fetch_add(1, Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        both.into_inner()
    })
}

/// The scenario: `leader` leads, two others follow, the leader's requests but
/// its watch get 429 (and, with `cut_watch`, its watches fall silent from the
/// start), the admin sends `patch`. Returns the leader's terms, the first
/// successor's start, and the instant the patch was sent, all on the drivers'
/// clock, after checking that no two candidates ever led at once.
async fn patched_under_a_leader(
    name: &str,
    patch: serde_json::Value,
    cut_watch: bool,
) -> (
    Vec<(Instant, Option<Instant>, Option<StopReason>)>,
    Instant,
    Instant,
) {
    let emu = Emulator::start().await.expect("emulator");
    let rt = TokioRuntime::current().expect("inside tokio");
    if cut_watch {
        emu.faults("leader")
            .on(Match::verbs(&[Verb::Watch]))
            .inject(Fault::WatchSilent);
    }
    let leader = Arc::new(candidate(&emu, &rt, name, "leader"));
    let leader_terms = record_terms(&leader);
    let start = std::time::Instant::now();
    while !leader.is_leader() {
        assert!(start.elapsed() < Duration::from_secs(10), "no leader");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let followers: Vec<Arc<Handle>> = ["follower-1", "follower-2"]
        .into_iter()
        .map(|id| Arc::new(candidate(&emu, &rt, name, id)))
        .collect();
    let follower_terms: Vec<_> = followers.iter().map(|f| record_terms(f)).collect();
    // The followers in place (their watches open) before the edit.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(leader.is_leader() && followers.iter().all(|f| !f.is_leader()));
    let sampling = Arc::new(AtomicBool::new(true));
    let mut all = followers.clone();
    all.push(leader.clone());
    let sampler = sample(all, sampling.clone());
    emu.faults("leader")
        .on(Match::verbs(&[Verb::Get, Verb::Create, Verb::Update]))
        .too_many_requests(1);
    let admin = lock_kube::lock_client(emu.kube_config("admin")).expect("client");
    let api: Api<Lease> = Api::namespaced(admin, NS);
    let edited = rt.now();
    api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("the operator's patch");
    let start = std::time::Instant::now();
    let successor = loop {
        if let Some(f) = followers.iter().position(|f| f.is_leader()) {
            break f;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no successor");
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    // A little longer with the successor leading, then stop sampling.
    tokio::time::sleep(Duration::from_millis(300)).await;
    sampling.store(false, Ordering::Relaxed);
    let both = sampler.await.expect("sampler");

    let leader_spans = leader_terms.lock().unwrap().spans.clone();
    let successor_start = follower_terms[successor].lock().unwrap().spans[0].0;
    let mut spans: Vec<(&str, Instant, Instant)> = Vec::new();
    let now = rt.now();
    let mut push = |who: &'static str, terms: &[(Instant, Option<Instant>, Option<StopReason>)]| {
        for (from, to, _) in terms {
            spans.push((who, *from, to.unwrap_or(now)));
        }
    };
    push("leader", &leader_spans);
    for (i, t) in follower_terms.iter().enumerate() {
        push(["follower-1", "follower-2"][i], &t.lock().unwrap().spans);
    }
    for (i, a) in spans.iter().enumerate() {
        for b in &spans[i + 1..] {
            assert!(
                a.2 <= b.1 || b.2 <= a.1,
                "two leaders on the drivers' clock: {a:?} and {b:?} (the patch was sent at {edited:?})"
            );
        }
    }
    assert_eq!(
        both, 0,
        "{both} samples of 1 ms with two leaders: {spans:?}"
    );
    for f in &followers {
        f.shutdown().await;
    }
    leader.shutdown().await;
    (leader_spans, successor_start, edited)
}

/// R2: `kubectl patch lease … -p '{"spec":{"holderIdentity":null}}'` on the held
/// Lease. The leader stops at once on its watch's event, with no read first
/// (the 429's one-second `Retry-After` would hold it back); the record keeps
/// the leader's duration, so it is not a release's shape and the followers take
/// it only a lease after they saw it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r2_an_operator_empties_the_holder_under_a_429_leader_and_no_two_lead() {
    let patch = serde_json::json!({"spec": {"holderIdentity": null}});
    let (leader, successor, edited) = patched_under_a_leader("r2-emptied", patch, false).await;
    let (_, stop, reason) = leader.last().expect("the leader's term").clone();
    let stop = stop.expect("the leader stopped");
    assert_eq!(
        reason,
        Some(StopReason::ObservedOtherHolder { holder: "".into() }),
        "stopped on the edit itself"
    );
    assert!(
        stop.saturating_duration_since(edited) < Duration::from_millis(500),
        "stopped {:?} after the patch was sent: within the 429's Retry-After means at once",
        stop.saturating_duration_since(edited)
    );
    assert!(
        successor.saturating_duration_since(edited) >= Duration::from_secs(2),
        "a follower led {:?} after the patch: not a release, so a lease (2 s) first",
        successor.saturating_duration_since(edited)
    );
}

/// R13: `kubectl patch lease … -p '{"spec":{"leaseDurationSeconds":1}}'` on the
/// held Lease (2 s), its holder cut off: every request but the watch answered
/// 429, and its watches silent, so it never learns of the edit and believes
/// until its renew deadline. The followers count the lease with their own
/// duration (2 s), not the record's 1 s, and take over after the leader's
/// deadline passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r13_an_operator_shortens_the_duration_under_a_cut_off_leader_and_no_two_lead() {
    let patch = serde_json::json!({"spec": {"leaseDurationSeconds": 1}});
    let (leader, successor, edited) = patched_under_a_leader("r13-shortened", patch, true).await;
    let (_, stop, reason) = leader.last().expect("the leader's term").clone();
    assert!(stop.is_some(), "the leader stopped");
    assert_eq!(
        reason,
        Some(StopReason::DeadlineExceeded),
        "it never saw the edit"
    );
    assert!(
        successor.saturating_duration_since(edited) >= Duration::from_secs(2),
        "a follower led {:?} after the patch: its own 2 s lease, not the record's 1 s",
        successor.saturating_duration_since(edited)
    );
}
