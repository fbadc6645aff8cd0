//! The mirror controller (`tests/mirror`, which the examples crate's
//! `controller` and `bench_controller` run too) on the API emulator, with the
//! real kube client and kube-runtime: who writes, when, and what a takeover
//! costs.
//! Its handover-and-crash story runs on a real kube-apiserver too
//! (`test_kit::apiserver`).

mod mirror;

use std::time::{Duration, Instant};

use election_controller::{ControllerError, ElectedController, Warm};
use election_core::Config;
use election_driver::Builder;
use election_ops::health::{Health, ReadyWhen};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_emulator::{Emulator, Match, Resource, Verb};
use kube_runtime::watcher;
use test_kit::apiserver::{ADMIN, ApiServer, Server};

use mirror::{Log, Options, Outcome, Replica};

const RENEW_DEADLINE: Duration = Duration::from_millis(1500); // Config::fast

fn options() -> Options {
    Options::fast()
}

async fn until(what: &str, within: Duration, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < within, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

fn leader(replicas: &[Replica]) -> Option<String> {
    replicas
        .iter()
        .find(|r| r.handle.is_leader())
        .map(|r| r.id.clone())
}

/// Starts a replica per id and waits for one to lead; the replicas and the leader.
async fn start_and_elect(server: &dyn Server, ids: &[&str], log: &Log) -> (Vec<Replica>, String) {
    let replicas: Vec<Replica> = ids
        .iter()
        .map(|id| mirror::start(&server.kube_config(id), id, &options(), log))
        .collect();
    until("a leader", Duration::from_secs(5), || {
        leader(&replicas).is_some()
    })
    .await;
    let first = leader(&replicas).expect("leader");
    (replicas, first)
}

fn lists(emu: &Emulator, id: &str) -> u64 {
    emu.request_counts()
        .get(id, Verb::List, Resource::ConfigMap)
}

/// An emulator with the two namespaces and `n` sources.
async fn setup(n: usize) -> (Emulator, Api<ConfigMap>) {
    mirror::cluster((0..n).map(|i| format!("s{i}"))).await
}

async fn set_value(sources: &Api<ConfigMap>, name: &str, value: &str) {
    mirror::set_value(sources, name, value).await;
}

/// Waits until `replica` has reconciled `name` with `outcome` since `since`.
async fn reconciled(log: &Log, replica: &str, name: &str, outcome: Outcome, since: Instant) {
    until(
        &format!("{replica} reconciles {name}: {outcome:?}"),
        Duration::from_secs(5),
        || {
            log.entries().iter().any(|r| {
                r.replica == replica && r.name == name && r.outcome == outcome && r.started >= since
            })
        },
    )
    .await;
}

/// Shuts the leader down (a graceful handover) and waits for the next; the new
/// leader and when the handover began.
async fn hand_over(replicas: &mut Vec<Replica>) -> (String, Instant) {
    let gone = mirror::take_leader(replicas).expect("a leader");
    let start = Instant::now();
    gone.handle.shutdown().await;
    until("a new leader", Duration::from_secs(5), || {
        leader(replicas).is_some()
    })
    .await;
    (leader(replicas).expect("leader"), start)
}

/// Crashes the leader (no release) and waits for the next, a lease later; the
/// new leader and when the crash happened.
async fn crash(replicas: &mut Vec<Replica>) -> (String, Instant) {
    let crashed = mirror::take_leader(replicas).expect("a leader");
    let start = Instant::now();
    crashed.handle.abort();
    drop(crashed);
    until("a new leader", Duration::from_secs(5), || {
        leader(replicas).is_some()
    })
    .await;
    (leader(replicas).expect("leader"), start)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handover_and_crash_keep_every_write_with_the_leader_of_its_instant_and_list_nothing() {
    let (emu, sources) = setup(20).await;
    let lists_by_replicas = || ["a", "b", "c"].iter().map(|id| lists(&emu, id)).sum();
    let [first, second, third] = handover_and_crash(&emu, &sources, lists_by_replicas).await;
    let history = mirror::check_history(&emu.committed_writes(), RENEW_DEADLINE).expect("history");
    assert_eq!(history.runs, [first, second, third]);
}

/// The story on kube-apiserver: the copies' stamps name the leader that wrote
/// each (kube-apiserver keeps no write history to check), and its own request
/// metrics count no LIST of ConfigMaps from the handover on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
async fn handover_and_crash_keep_every_write_with_the_leader_of_its_instant_and_list_nothing_on_kube_apiserver()
 {
    let server = ApiServer::shared();
    let sources = mirror::populate(server.client(ADMIN), (0..20).map(|i| format!("s{i}"))).await;
    let namespaced_lists = || {
        tokio::task::block_in_place(|| {
            let labels = [
                ("verb", "LIST"),
                ("resource", "configmaps"),
                ("scope", "namespace"),
            ];
            server.metric_sum("apiserver_request_total", &labels) as u64
        })
    };
    let started = Instant::now();
    let [first, second, third] = handover_and_crash(server, &sources, namespaced_lists).await;
    eprintln!("kube-apiserver: the story took {:?}", started.elapsed());
    let copies: Api<ConfigMap> = Api::namespaced(server.client(ADMIN), mirror::TARGET);
    for i in 0..20 {
        let name = format!("s{i}");
        let copy = copies.get(&name).await.expect("the copy");
        let writer = match i {
            3 => &second,
            4 => &third,
            _ => &first,
        };
        let stamp = copy
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kube-elector.dev/holder"));
        assert_eq!(stamp, Some(writer), "{name}'s stamp: {:?}", copy.metadata);
        let value = if i == 3 || i == 4 { "v2" } else { "v1" };
        assert_eq!(
            copy.data
                .as_ref()
                .and_then(|d| d.get("value"))
                .map(String::as_str),
            Some(value),
            "{name}"
        );
    }
}

/// Three replicas `a`, `b`, `c` of the mirror controller on `server`, over
/// the 20 sources of `sources`: the first leader copies them all; a graceful
/// handover, whose new leader reconciles from its warm cache (its first
/// reconcile finds the copies unchanged) and copies a change; a crash, whose
/// next leader waits out the lease and copies another. `lists` counts the
/// replicas' LISTs of ConfigMaps: none from the handover on. The leaders, in
/// order.
async fn handover_and_crash(
    server: &dyn Server,
    sources: &Api<ConfigMap>,
    lists: impl Fn() -> u64,
) -> [String; 3] {
    let log = Log::default();
    let (mut replicas, first) = start_and_elect(server, &["a", "b", "c"], &log).await;
    let t = Instant::now() - Duration::from_secs(10);
    reconciled(&log, &first, "s19", Outcome::Wrote, t).await;

    // Health per role: live everywhere, ready only on the leader (an option).
    for r in &replicas {
        let health = Health::new(r.handle.observer()).ready_when(ReadyWhen::Leader);
        assert!(health.liveness().is_ok(), "{} is live", r.id);
        assert_eq!(health.readiness().is_ok(), r.id == first, "{} ready", r.id);
    }

    // Graceful handover.
    let lists_before = lists();
    // Each replica's two caches listed once as they started: counted.
    assert!(lists_before >= 6, "{lists_before} LISTs counted");
    let (second, start) = hand_over(&mut replicas).await;
    // Its first reconcile: from the warm cache, the copies unchanged.
    until("its first reconcile", Duration::from_secs(5), || {
        log.first_by(&second, start).is_some()
    })
    .await;
    assert_eq!(
        log.first_by(&second, start).expect("reconcile").outcome,
        Outcome::Unchanged
    );
    set_value(sources, "s3", "v2").await;
    reconciled(&log, &second, "s3", Outcome::Wrote, start).await;

    // Crash: no release; the next leader waits out the lease.
    let (third, start) = crash(&mut replicas).await;
    set_value(sources, "s4", "v2").await;
    reconciled(&log, &third, "s4", Outcome::Wrote, start).await;

    assert_eq!(
        lists(),
        lists_before,
        "{second} and {third} listed nothing to take over"
    );
    for r in &replicas {
        r.handle.shutdown().await;
    }
    [first, second, third]
}

/// With the server-side fencing policy applied to the copies' namespace
/// (docs/design.md §7 "Server-side fencing"), the controller's fenced client
/// (`TermContext::client`: the guard and the term stamp) keeps writing through
/// a graceful handover and a crash: every leader's writes pass the policy, each
/// copy stamped with the holder that wrote it; a write stamped for an earlier
/// term is refused by the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fenced_client_passes_the_server_side_fence_through_handover_and_crash() {
    use election_ops::fence::{FencePolicy, HOLDER_ANNOTATION, Protected};

    let (emu, sources) = setup(5).await;
    // Each replica writes from its Pod, named as its identity (the default
    // fence's writer check).
    for id in ["a", "b", "c"] {
        emu.set_user(id, kube_emulator::UserInfo::pod("default", "mirror", id));
    }
    let fence = FencePolicy::new("default", mirror::LEASE)
        .namespaces([mirror::TARGET])
        .protect(Protected::new("", "v1", "configmaps"));
    let admin = emu.client("admin").expect("client");
    fence
        .apply(admin.clone())
        .await
        .expect("policy and binding");
    let copies: Api<ConfigMap> = Api::namespaced(admin, mirror::TARGET);
    let stamped_by = |cm: &ConfigMap| {
        cm.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(HOLDER_ANNOTATION))
            .cloned()
    };

    let log = Log::default();
    let (mut replicas, first) = start_and_elect(&emu, &["a", "b", "c"], &log).await;
    let t = Instant::now() - Duration::from_secs(10);
    reconciled(&log, &first, "s4", Outcome::Wrote, t).await;
    let old = copies.get("s4").await.expect("copied through the fence");
    assert_eq!(stamped_by(&old), Some(first.clone()));

    let (second, start) = hand_over(&mut replicas).await;
    set_value(&sources, "s3", "v2").await;
    reconciled(&log, &second, "s3", Outcome::Wrote, start).await;
    assert_eq!(
        stamped_by(&copies.get("s3").await.unwrap()),
        Some(second.clone())
    );

    let (third, start) = crash(&mut replicas).await;
    set_value(&sources, "s2", "v2").await;
    reconciled(&log, &third, "s2", Outcome::Wrote, start).await;
    assert_eq!(
        stamped_by(&copies.get("s2").await.unwrap()),
        Some(third.clone())
    );
    assert!(
        !log.entries()
            .iter()
            .any(|r| matches!(r.outcome, Outcome::Failed(_))),
        "no reconcile failed: {:?}",
        log.entries()
    );

    // The first leader's stamp, written again now: refused by the server.
    let mut replay = old.clone();
    replay.metadata.name = Some("replayed".to_owned());
    replay.metadata.resource_version = None;
    replay.metadata.uid = None;
    let refused = copies
        .create(&PostParams::default(), &replay)
        .await
        .expect_err("an earlier term's stamp is refused");
    assert!(
        matches!(&refused, kube::Error::Api(s)
            if s.code == 403 && s.message.contains("fenced by fence-mirror-controller")),
        "{refused:?}"
    );
    for r in &replicas {
        r.handle.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n7_a_reconcile_that_outlives_its_term_gets_not_leader_and_the_object_is_untouched() {
    let (emu, sources) = setup(2).await;
    let log = Log::default();
    let a = mirror::start(&emu.kube_config("a"), "a", &options(), &log);
    let t = Instant::now();
    reconciled(&log, "a", "s1", Outcome::Wrote, t).await;
    reconciled(&log, "a", "s0", Outcome::Wrote, t).await;

    // A source whose reconcile waits 1.2 s before writing; meanwhile the
    // leader's renewals fail, so its deadline (1.5 s after its last renew,
    // minus the guard's 0.5 s margin) passes before the write.
    sources
        .create(&PostParams::default(), &mirror::slow_source("slow", 1200))
        .await
        .expect("create");
    emu.faults("a")
        .on(Match::writes().resource(Resource::Lease))
        .error(500);
    reconciled(&log, "a", "slow", Outcome::Refused, t).await;
    // Refused within the margin before the deadline, which then passes.
    until("a's deadline passes", Duration::from_secs(1), || {
        !a.handle.is_leader()
    })
    .await;
    let copies: Api<ConfigMap> = Api::namespaced(emu.client("admin").expect("c"), mirror::TARGET);
    assert!(
        copies.get_opt("slow").await.expect("get").is_none(),
        "the refused write was not sent"
    );
    assert!(
        !emu.write_history()
            .iter()
            .any(|w| w.name == "slow" && w.namespace == mirror::TARGET),
        "no request reached the server"
    );
    mirror::check_history(&emu.committed_writes(), RENEW_DEADLINE).expect("history");
    a.handle.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h3_a_graceful_give_up_lets_the_running_reconcile_finish_before_the_release() {
    let (emu, sources) = setup(1).await;
    let log = Log::default();
    let a = mirror::start(&emu.kube_config("a"), "a", &options(), &log);
    let t = Instant::now();
    reconciled(&log, "a", "s0", Outcome::Wrote, t).await;
    sources
        .create(&PostParams::default(), &mirror::slow_source("slow", 400))
        .await
        .expect("create");
    tokio::time::sleep(Duration::from_millis(100)).await; // its reconcile is running
    a.handle.shutdown().await;
    let history = emu.committed_writes();
    let copy = history
        .iter()
        .find(|w| w.name == "slow" && w.namespace == mirror::TARGET)
        .and_then(|w| w.version())
        .expect("the running reconcile wrote its copy");
    let release = history
        .iter()
        .find(|w| mirror::lease_holder(w) == Some(""))
        .and_then(|w| w.version())
        .expect("a release");
    assert!(copy < release, "copy at {copy}, release at {release}");
    mirror::check_history(&history, RENEW_DEADLINE).expect("history");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_loss_the_replica_keeps_its_cache_campaigns_again_and_reconciles_in_a_new_term() {
    let (emu, sources) = setup(3).await;
    let log = Log::default();
    let a = mirror::start(&emu.kube_config("a"), "a", &options(), &log);
    let t = Instant::now();
    reconciled(&log, "a", "s2", Outcome::Wrote, t).await;
    let first_term = a.handle.term().expect("a leads");
    let b = mirror::start(&emu.kube_config("b"), "b", &options(), &log);

    // a's renewals fail: it loses, and b takes the expired lease.
    emu.faults("a")
        .on(Match::writes().resource(Resource::Lease))
        .error(500);
    until("b leads", Duration::from_secs(6), || b.handle.is_leader()).await;
    emu.faults("a").clear();
    let lists_a = lists(&emu, "a");
    set_value(&sources, "s0", "v2").await;
    reconciled(&log, "b", "s0", Outcome::Wrote, t).await;

    // b steps down; a, still running and warm, leads again in a new term.
    b.handle.step_down().await;
    until("a leads again", Duration::from_secs(6), || {
        a.handle.is_leader()
    })
    .await;
    let second_term = a.handle.term().expect("a leads");
    assert!(second_term > first_term);
    set_value(&sources, "s1", "v2").await;
    until(
        "a reconciles in its new term",
        Duration::from_secs(5),
        || {
            log.entries().iter().any(|r| {
                r.replica == "a"
                    && r.term == second_term
                    && r.name == "s1"
                    && r.outcome == Outcome::Wrote
            })
        },
    )
    .await;
    assert_eq!(lists(&emu, "a"), lists_a, "no relist to lead again");
    let history = mirror::check_history(&emu.committed_writes(), RENEW_DEADLINE).expect("history");
    assert_eq!(history.runs, ["a", "b", "a"]);
    a.handle.shutdown().await;
    b.handle.shutdown().await;
}

/// Secondary objects from a warm cache: the copies' `subscribe_changes` feeds
/// the term's `watches_shared_stream`, so a copy changed by hand and one
/// deleted by hand are put back by the leader at once, with no LIST, and no
/// one else writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_changed_or_deleted_by_hand_is_put_back_by_the_leader_from_its_warm_cache() {
    let (emu, _sources) = setup(3).await;
    let log = Log::default();
    let (replicas, first) = start_and_elect(&emu, &["a", "b"], &log).await;
    let t = Instant::now() - Duration::from_secs(10);
    for name in ["s0", "s1", "s2"] {
        reconciled(&log, &first, name, Outcome::Wrote, t).await;
    }
    let lists_before = lists(&emu, &first);
    let copies: Api<ConfigMap> =
        Api::namespaced(emu.client("admin").expect("client"), mirror::TARGET);
    let value = |cm: Option<ConfigMap>| {
        cm.and_then(|cm| cm.data)
            .and_then(|d| d.get("value").cloned())
    };
    let put_back = |name: &'static str| {
        let copies = copies.clone();
        async move {
            let start = Instant::now();
            while value(copies.get_opt(name).await.expect("get")).as_deref() != Some("v1") {
                assert!(
                    start.elapsed() < Duration::from_secs(5),
                    "{name} was not put back"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };

    copies
        .patch(
            "s1",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"value": "changed by hand"}})),
        )
        .await
        .expect("patch");
    put_back("s1").await;
    copies
        .delete("s2", &DeleteParams::default())
        .await
        .expect("delete");
    put_back("s2").await;

    assert_eq!(lists(&emu, &first), lists_before, "nothing listed");
    let mut writes = emu.committed_writes();
    writes.retain(|w| w.client != "admin");
    let history = mirror::check_history(&writes, RENEW_DEADLINE).expect("history");
    assert_eq!(history.runs, [first.as_str()]);
    assert_eq!(
        history.writes[&first], 5,
        "three copies, then the two put back"
    );
    for r in &replicas {
        r.handle.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n7_with_exit_on_loss_the_election_ends_after_a_loss_and_reconciles_stop() {
    let (emu, sources) = setup(1).await;
    let log = Log::default();
    let exit = Options {
        exit_on_loss: true,
        ..options()
    };
    let a = mirror::start(&emu.kube_config("a"), "a", &exit, &log);
    let t = Instant::now();
    reconciled(&log, "a", "s0", Outcome::Wrote, t).await;
    let mut states = a.handle.states();
    emu.faults("a")
        .on(Match::writes().resource(Resource::Lease))
        .error(500);
    // The state stream ends when the driver does: after the loss, not before.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        use futures::StreamExt;
        while states.next().await.is_some() {}
    })
    .await;
    assert!(ended.is_ok(), "the election ended within 5 s of the loss");
    assert!(!a.handle.is_leader());
    emu.faults("a").clear();
    let after = Instant::now();
    set_value(&sources, "s0", "v2").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        log.first_by("a", after).is_none(),
        "no reconcile after the election ended"
    );
}

#[tokio::test]
async fn a_drain_timeout_beyond_the_release_budget_is_refused() {
    let emu = Emulator::start().await.expect("emulator");
    let client = emu.client("a").expect("client");
    let warm = Warm::<ConfigMap>::spawn(
        Api::namespaced(client.clone(), "default"),
        watcher::Config::default(),
    );
    let lock = lock_lease::LeaseLock::new(client, "default", "x").expect("name");
    // Config::fast: renew deadline 1.5 s, request timeout 0.5 s: at most 1 s.
    let err = ElectedController::new(warm, emu.kube_config("a"))
        .drain_timeout(Duration::from_millis(1001))
        .spawn(Builder::new(lock, Config::fast("a")), |c, _| {
            c.run(
                |_, _| async {
                    Ok::<_, kube::Error>(kube_runtime::controller::Action::await_change())
                },
                |_, _, _| kube_runtime::controller::Action::await_change(),
                std::sync::Arc::new(()),
            )
        })
        .expect_err("too long");
    assert!(
        matches!(err, ControllerError::DrainTooLong { budget, .. } if budget == Duration::from_secs(1)),
        "{err}"
    );
}

/// The history check itself fails on the violations it looks for.
#[test]
fn the_history_check_catches_a_write_by_a_non_holder_and_one_past_the_deadline() {
    use std::time::SystemTime;
    let at = SystemTime::now();
    let record =
        |client: &str, resource, ns: &str, rv: u64, at, holder: &str| kube_emulator::WriteRecord {
            at,
            client: client.into(),
            verb: Verb::Update,
            resource,
            namespace: ns.into(),
            name: if resource == Resource::Lease {
                mirror::LEASE.into()
            } else {
                "s0".into()
            },
            code: 200,
            committed: true,
            resource_version: Some(rv.to_string()),
            spoiled_by: None,
            object: Some(serde_json::json!({"spec": {"holderIdentity": holder}})),
        };
    let lease = |client, rv, at| record(client, Resource::Lease, "default", rv, at, client);
    let copy = |client, rv, at| record(client, Resource::ConfigMap, mirror::TARGET, rv, at, "");
    let good = [
        lease("a", 1, at),
        copy("a", 2, at),
        lease("b", 3, at),
        copy("b", 4, at),
    ];
    let h = mirror::check_history(&good, RENEW_DEADLINE).expect("good");
    assert_eq!(h.runs, ["a", "b"]);
    let late_old_leader = [lease("a", 1, at), lease("b", 3, at), copy("a", 4, at)];
    assert!(mirror::check_history(&late_old_leader, RENEW_DEADLINE).is_err());
    let past_deadline = [lease("a", 1, at), copy("a", 2, at + Duration::from_secs(2))];
    assert!(mirror::check_history(&past_deadline, RENEW_DEADLINE).is_err());
}
