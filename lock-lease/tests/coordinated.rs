//! Coordinated leader election on the Lease over the API emulator acting as the
//! coordinator (docs/faults.md C3, C5): a rolling upgrade. Three replicas at
//! version 1.0.0 are replaced one by one by replicas at 1.1.0. Each replica
//! publishes its `LeaseCandidate` (`lock_kube::candidate`) and runs the
//! election in `Mode::Coordinated`; a replica leaves by stopping its candidacy
//! (the object is deleted) and then shutting the election down (it releases).
//!
//! What must hold: while a 1.0.0 replica is left, the leader is one of them;
//! once the last leaves, a 1.1.0 replica leads; no two replicas lead at once
//! (their drivers' reported terms on one clock); every Lease write by a replica
//! replaces a record that names it (only the coordinator assigns). Runs on tokio
//! (`adapter-tokio`) and smol (`adapter-smol`). The rolling upgrade runs on the
//! real kube-apiserver too, with its own coordinator (`test_kit::apiserver`;
//! ignored in the workspace run, `.ci/run` runs it).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adapter_smol::SmolRuntime;
use adapter_tokio::TokioRuntime;
use election_core::{Config, Event, Instant};
use election_driver::{Builder, Change, Handle, Runtime};
use futures::StreamExt;
use futures::channel::oneshot;
use kube_emulator::{Coordinator, Emulator, Resource};
use lock_kube::candidate::LeaseCandidate;
use lock_lease::LeaseLock;
use test_kit::apiserver::{ApiServer, Server};
use test_kit::runtimes::{self, sleep};

const NS: &str = "default";
const LEASE: &str = "upgrade";

/// Every leadership a replica's driver reported: start and stop instants on the
/// runtime's clock (`None`: still leading).
type Spans = Arc<Mutex<BTreeMap<String, Vec<(Instant, Option<Instant>)>>>>;

/// Where the replicas run: the server and the namespace of their Lease, and
/// the client configuration they all use if not each its own identity's (a
/// ServiceAccount bound to a Role under test).
#[derive(Clone, Copy)]
struct At<'a> {
    server: &'a dyn Server,
    ns: &'a str,
    account: Option<&'a kube::Config>,
}

impl<'a> At<'a> {
    fn new(server: &'a dyn Server, ns: &'a str) -> Self {
        At {
            server,
            ns,
            account: None,
        }
    }
}

/// One replica: its election, and its candidacy running until told to stop.
struct Replica {
    id: String,
    version: &'static str,
    handle: Handle,
    stop: oneshot::Sender<()>,
    stopped: oneshot::Receiver<()>,
}

impl Replica {
    /// Starts replica `id` at `version` on `rt`, on the Lease of `at`.
    fn start<R: Runtime + Clone>(
        at: At<'_>,
        rt: &R,
        id: &str,
        version: &'static str,
        spans: &Spans,
    ) -> Replica {
        let ns = at.ns;
        let config = at
            .account
            .cloned()
            .unwrap_or_else(|| at.server.kube_config(id));
        let client = lock_kube::lock_client(config).expect("client");
        let config = Config::fast(id).coordinated();
        let candidate = LeaseCandidate::builder(client.clone(), ns, id, LEASE)
            .binary_version(version)
            .request_timeout(config.request_timeout)
            .build()
            .expect("a valid candidacy");
        let lock = LeaseLock::builder(client, ns, LEASE)
            .build()
            .expect("valid names");
        let handle = Builder::new(lock, config)
            .spawn(rt.clone())
            .expect("valid config");
        let mut states = handle.states();
        let spans = spans.clone();
        let name = id.to_string();
        rt.spawn(Box::pin(async move {
            while let Some(s) = states.next().await {
                let mut all = spans.lock().unwrap();
                let mine = all.entry(name.clone()).or_default();
                match s.change {
                    Change::Elector(Event::StartedLeading { .. }) => mine.push((s.at, None)),
                    Change::Elector(Event::StoppedLeading { .. }) => {
                        if let Some(last) = mine.last_mut() {
                            last.1 = Some(s.at);
                        }
                    }
                    _ => {}
                }
            }
        }));
        let (stop, stop_rx) = oneshot::channel::<()>();
        let (done, stopped) = oneshot::channel::<()>();
        rt.spawn(Box::pin(async move {
            candidate
                .run(async {
                    let _ = stop_rx.await;
                })
                .await;
            let _ = done.send(());
        }));
        Replica {
            id: id.into(),
            version,
            handle,
            stop,
            stopped,
        }
    }

    /// Leaves as a rolling update's replica does: the candidacy first (its
    /// object deleted), then the election (drain, release).
    async fn leave(self) {
        let _ = self.stop.send(());
        let _ = self.stopped.await;
        self.handle.shutdown().await;
    }
}

/// The replica that leads, once exactly one does and the Lease names it.
async fn wait_for_leader(emu: At<'_>, replicas: &[Replica], within: Duration) -> usize {
    let waited = runtimes::timeout(within, async {
        loop {
            let leading: Vec<usize> = (0..replicas.len())
                .filter(|&i| replicas[i].handle.is_leader())
                .collect();
            let holder = holder(emu);
            if let [i] = leading[..]
                && holder.as_deref() == Some(replicas[i].id.as_str())
            {
                return i;
            }
            sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    waited.unwrap_or_else(|| {
        panic!(
            "no single leader within {within:?}; Lease holder {:?}",
            holder(emu)
        )
    })
}

/// The Lease's holder as stored.
fn holder(at: At<'_>) -> Option<String> {
    let lease = at.server.object(Resource::Lease, at.ns, LEASE)?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

/// The rolling upgrade on the emulator as coordinator (ten times faster than
/// kube-apiserver's), with the emulator's write log checked.
async fn rolling_upgrade<R: Runtime + Clone>(rt: R, tag: &str) {
    let emu = Emulator::builder()
        .coordinator(Coordinator::default().scaled(0.1))
        .start_blocking()
        .expect("emulator");
    let leaders = rolling_upgrade_on(At::new(&emu, NS), rt, tag, Duration::from_secs(20)).await;
    check_only_the_coordinator_assigns(&emu);
    // The leader moved to a 1.1.0 replica only at the end.
    assert!(
        leaders[..3].iter().all(|l| l.ends_with("-v1")),
        "{leaders:?}"
    );
    assert!(leaders[3].ends_with("-v2"), "{leaders:?}");
}

/// The rolling upgrade on runtime `rt` against the coordinator of `server`,
/// on the Lease of `ns`, with identities prefixed by `tag`, each election
/// within `within`; the leaders in turn.
async fn rolling_upgrade_on<R: Runtime + Clone>(
    emu: At<'_>,
    rt: R,
    tag: &str,
    within: Duration,
) -> Vec<String> {
    let spans: Spans = Arc::default();
    let id = |n: &str, v: u32| format!("{tag}-{n}-v{v}");
    let mut replicas: Vec<Replica> = ["a", "b", "c"]
        .iter()
        .map(|n| Replica::start(emu, &rt, &id(n, 1), "1.0.0", &spans))
        .collect();
    let first = wait_for_leader(emu, &replicas, within).await;
    assert_eq!(replicas[first].version, "1.0.0");
    let mut leaders = vec![replicas[first].id.clone()];
    for (step, n) in ["a", "b", "c"].iter().enumerate() {
        let old = replicas
            .iter()
            .position(|r| r.id == id(n, 1))
            .expect("the old replica");
        let leaving = replicas.remove(old);
        leaving.leave().await;
        replicas.push(Replica::start(emu, &rt, &id(n, 2), "1.1.0", &spans));
        let leader = wait_for_leader(emu, &replicas, within).await;
        let olds_left = 2 - step;
        let expected = if olds_left > 0 { "1.0.0" } else { "1.1.0" };
        assert_eq!(
            replicas[leader].version, expected,
            "after replacing {n} ({olds_left} at 1.0.0 left), {} leads",
            replicas[leader].id
        );
        leaders.push(replicas[leader].id.clone());
    }
    eprintln!("{tag}: leaders in turn: {leaders:?}");
    for r in replicas {
        r.leave().await;
    }
    assert_no_overlap(&spans.lock().unwrap());
    leaders
}

/// Only the coordinator assigns: every replica's write replaces a record that
/// names it; the coordinator wrote the Lease first (the emulator's write log).
fn check_only_the_coordinator_assigns(emu: &Emulator) {
    let writes: Vec<_> = emu
        .committed_writes()
        .into_iter()
        .filter(|w| w.resource == Resource::Lease && w.name == LEASE)
        .collect();
    assert_eq!(
        writes.first().map(|w| w.client.as_str()),
        Some(Coordinator::CLIENT)
    );
    let mut previous: Option<String> = None;
    for w in &writes {
        if w.client != Coordinator::CLIENT {
            assert_eq!(
                previous.as_deref(),
                Some(w.client.as_str()),
                "{} wrote over a Lease held by {previous:?}",
                w.client
            );
        }
        previous = w
            .object
            .as_ref()
            .and_then(|o| o["spec"]["holderIdentity"].as_str())
            .map(str::to_owned);
    }
    let claims = writes
        .iter()
        .filter(|w| w.client != Coordinator::CLIENT)
        .count();
    assert!(
        claims > 4,
        "the replicas claimed and renewed ({claims} writes)"
    );
}

/// C3 and C6: two replicas at 1.0.0 lead in turn; a replica at 0.9.0 joins and
/// the coordinator names it `preferredHolder`, so the leader hands over (drain,
/// release) and 0.9.0 leads. Then that replica hangs (every request of its
/// client never answers): its lease runs out, the coordinator pings the
/// candidates, and, as it never acks, it is passed over although its version is
/// the best: a 1.0.0 replica leads, and the hung one's candidacy is still there.
async fn a_better_candidate_preempts_and_one_that_stops_acking_is_passed_over<R>(rt: R, tag: &str)
where
    R: Runtime + Clone,
{
    let emu = Emulator::builder()
        .coordinator(Coordinator::default().scaled(0.1))
        .start_blocking()
        .expect("emulator");
    let spans: Spans = Arc::default();
    let within = Duration::from_secs(20);
    let at = At::new(&emu, NS);
    let mut replicas = vec![
        Replica::start(at, &rt, &format!("{tag}-x"), "1.0.0", &spans),
        Replica::start(at, &rt, &format!("{tag}-z"), "1.0.0", &spans),
    ];
    let first = wait_for_leader(at, &replicas, within).await;
    assert_eq!(replicas[first].version, "1.0.0");
    let better = format!("{tag}-y");
    replicas.push(Replica::start(at, &rt, &better, "0.9.0", &spans));
    let leader = wait_for_leader_where(at, &replicas, |r| r.id == better, within).await;
    assert_eq!(
        replicas[leader].version, "0.9.0",
        "the better version preempted"
    );
    // It hangs: its candidacy cannot ack, its election cannot renew.
    emu.faults(&better).hang();
    // Its lease runs out, and the coordinator gives the Lease to one that acks.
    let next = wait_for_leader_where(at, &replicas, |r| r.id != better, within).await;
    assert_eq!(replicas[next].version, "1.0.0");
    assert!(
        !replicas[leader].handle.is_leader(),
        "the hung one stopped at its deadline"
    );
    assert!(
        emu.object(Resource::LeaseCandidate, NS, &better).is_some(),
        "its candidacy is still published, only not acked"
    );
    emu.faults(&better).clear();
    for r in replicas {
        r.leave().await;
    }
    assert_no_overlap(&spans.lock().unwrap());
}

/// The leader index once a replica for which `wanted` holds leads alone (and the
/// Lease names it).
async fn wait_for_leader_where(
    emu: At<'_>,
    replicas: &[Replica],
    wanted: impl Fn(&Replica) -> bool,
    within: Duration,
) -> usize {
    let waited = runtimes::timeout(within, async {
        loop {
            let i = wait_for_leader(emu, replicas, within).await;
            if wanted(&replicas[i]) {
                return i;
            }
            sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    waited.unwrap_or_else(|| {
        panic!(
            "no such leader within {within:?}; Lease holder {:?}",
            holder(emu)
        )
    })
}

/// No two replicas led at once, on the drivers' one clock.
fn assert_no_overlap(spans: &BTreeMap<String, Vec<(Instant, Option<Instant>)>>) {
    let all: Vec<(&String, Instant, Option<Instant>)> = spans
        .iter()
        .flat_map(|(id, s)| s.iter().map(move |&(a, b)| (id, a, b)))
        .collect();
    for (i, (x, a0, a1)) in all.iter().enumerate() {
        for (y, b0, b1) in &all[i + 1..] {
            let a_end = a1.unwrap_or(Instant::MAX);
            let b_end = b1.unwrap_or(Instant::MAX);
            assert!(
                a_end <= *b0 || b_end <= *a0,
                "{x} led {a0:?}..{a1:?} and {y} led {b0:?}..{b1:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c6_a_better_candidate_preempts_and_one_that_stops_acking_is_passed_over_on_tokio() {
    let rt = TokioRuntime::current().expect("inside tokio");
    a_better_candidate_preempts_and_one_that_stops_acking_is_passed_over(rt, "tokio").await;
}

#[test]
fn c6_a_better_candidate_preempts_and_one_that_stops_acking_is_passed_over_on_smol() {
    test_kit::runtimes::Runtime::Smol.run(|| {
        a_better_candidate_preempts_and_one_that_stops_acking_is_passed_over(
            SmolRuntime::new(),
            "smol",
        )
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c5_a_rolling_upgrade_keeps_the_old_version_leading_until_it_is_gone_on_tokio() {
    rolling_upgrade(TokioRuntime::current().expect("inside tokio"), "tokio").await;
}

#[test]
fn c5_a_rolling_upgrade_keeps_the_old_version_leading_until_it_is_gone_on_smol() {
    test_kit::runtimes::Runtime::Smol.run(|| rolling_upgrade(SmolRuntime::new(), "smol"));
}

/// C5 with kube-apiserver's own coordinator (its leader-election controller,
/// `CoordinatedLeaderElection` on): the leader stays on 1.0.0 until the last
/// 1.0.0 replica is gone, then a 1.1.0 replica leads, never two at once. Its
/// timings are the controller's own (a 5 s election, a 5 s Lease).
#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn c5_a_rolling_upgrade_keeps_the_old_version_leading_until_it_is_gone_on_kube_apiserver() {
    test_kit::runtimes::Runtime::Tokio.run(|| async {
        let server = ApiServer::shared();
        let ns = server.namespace();
        let rt = TokioRuntime::current().expect("inside tokio");
        let started = std::time::Instant::now();
        let leaders =
            rolling_upgrade_on(At::new(server, &ns), rt, "kas", Duration::from_secs(60)).await;
        eprintln!(
            "kube-apiserver: the rolling upgrade took {:?}",
            started.elapsed()
        );
        assert!(
            leaders[..3].iter().all(|l| l.ends_with("-v1")),
            "{leaders:?}"
        );
        assert!(leaders[3].ends_with("-v2"), "{leaders:?}");
    });
}

/// The coordinated Role of `deploy/` under kube-apiserver's RBAC, with its
/// coordinator: `kubectl apply -n <namespace> -f deploy/rbac-coordinated.yaml`
/// as its header says, then the rolling upgrade with every replica
/// authenticated as the ServiceAccount `coordinated` it binds (a token the
/// server issued): the verbs it grants are enough for candidacies, claims,
/// renewals, watches, Events and releases (a refused request would stall the
/// election and fail the test).
#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn c5_the_coordinated_role_of_deploy_is_enough_on_kube_apiserver() {
    test_kit::runtimes::Runtime::Tokio.run(|| async {
        let server = ApiServer::shared();
        let ns = server.namespace();
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../deploy/rbac-coordinated.yaml");
        let out = kube_emulator::kubectl(&server.kubeconfig(test_kit::apiserver::ADMIN))
            .args(["apply", "-n", &ns, "-f"])
            .arg(&manifest)
            .output()
            .expect("kubectl runs (CI installs it)");
        assert!(
            out.status.success(),
            "kubectl apply: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let account = server.service_account_config(&ns, "coordinated");
        // The binding in force (the authorizer reads bindings through an
        // informer): a read of the missing Lease answers 404, not 403.
        let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> = kube::Api::namespaced(
            kube::Client::try_from(account.clone()).expect("client"),
            &ns,
        );
        let started = std::time::Instant::now();
        while leases.get_opt(LEASE).await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the Role is not in force"
            );
            sleep(Duration::from_millis(20)).await;
        }
        let at = At {
            server,
            ns: &ns,
            account: Some(&account),
        };
        let rt = TokioRuntime::current().expect("inside tokio");
        let leaders = rolling_upgrade_on(at, rt, "rbac", Duration::from_secs(60)).await;
        assert!(leaders[3].ends_with("-v2"), "{leaders:?}");
    });
}
