//! The window controller against the API emulator: the real kube client over
//! HTTP on 127.0.0.1, Nodes, Leases, faults. Two of its stories (a window's
//! lifecycle, two controllers taking turns) run on a real kube-apiserver too
//! (`test_kit::apiserver`), each on a server of its own: Nodes are
//! cluster-wide.

use std::error::Error as StdError;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant as StdInstant, SystemTime};

use election_core::WallTime;
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_emulator::{Emulator, Match, Resource, Verb};
use lease_window::{
    Drainer, STATUS_ANNOTATION, Transition, WINDOW_ANNOTATION, WindowConfig, WindowController,
};
use lock_kube::time::{Clock, to_timestamp};
use serde_json::json;
use test_kit::apiserver::{ADMIN, ApiServer, Server};

const NODE: &str = "worker-1";

/// What happened, in real time: drains started and cancelled, statuses reported.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<(StdInstant, String, String)>>>);

impl Log {
    fn push(&self, who: &str, what: String) {
        self.0
            .lock()
            .expect("log")
            .push((StdInstant::now(), who.to_owned(), what));
    }
    fn entries(&self) -> Vec<(StdInstant, String, String)> {
        self.0.lock().expect("log").clone()
    }
    fn statuses(&self, who: &str) -> Vec<String> {
        self.entries()
            .into_iter()
            .filter(|(_, w, e)| w == who && e.starts_with("status "))
            .map(|(_, _, e)| e.trim_start_matches("status ").to_owned())
            .collect()
    }
}

/// A drainer that logs its calls.
struct LogDrainer {
    who: String,
    log: Log,
}

impl Drainer for LogDrainer {
    fn start<'a>(
        &'a self,
        node: &'a str,
    ) -> BoxFuture<'a, Result<(), Box<dyn StdError + Send + Sync>>> {
        self.log.push(&self.who, format!("drain {node}"));
        Box::pin(async { Ok(()) })
    }
    fn cancel<'a>(
        &'a self,
        node: &'a str,
    ) -> BoxFuture<'a, Result<(), Box<dyn StdError + Send + Sync>>> {
        self.log.push(&self.who, format!("cancel {node}"));
        Box::pin(async { Ok(()) })
    }
}

fn config(identity: &str, padding_secs: u64) -> WindowConfig {
    WindowConfig::new(identity)
        .expect("identity")
        .with_padding(Duration::from_secs(padding_secs))
        .expect("padding")
        .with_clock_skew(Duration::from_millis(200))
        .with_retry(Duration::from_millis(100))
        .with_max_requeue(Duration::from_secs(1))
        .with_request_timeout(Duration::from_secs(2))
}

/// Starts a controller as `identity` (its client's token); abort the handle to
/// crash it.
fn spawn(
    server: &dyn Server,
    identity: &str,
    padding_secs: u64,
    log: &Log,
    wall: Option<Clock>,
) -> tokio::task::JoinHandle<()> {
    let client = server.client(identity);
    let who = identity.to_owned();
    let hook_log = log.clone();
    let mut controller = WindowController::new(client, config(identity, padding_secs))
        .drainer(LogDrainer {
            who: who.clone(),
            log: log.clone(),
        })
        .on_transition(move |t: &Transition| {
            hook_log.push(&t.identity, format!("status {}", t.status))
        });
    if let Some(wall) = wall {
        controller = controller.wall_clock(wall);
    }
    tokio::spawn(controller.run())
}

async fn setup() -> (Emulator, Api<Node>, Api<Lease>) {
    let emu = Emulator::start().await.expect("emulator");
    let (nodes, leases) = node_on(&emu).await;
    (emu, nodes, leases)
}

/// The Node [`NODE`] made on `server` by its admin; the Nodes and the
/// window Leases (in `default`) as the admin sees them.
async fn node_on(server: &dyn Server) -> (Api<Node>, Api<Lease>) {
    let admin = server.client(ADMIN);
    let nodes: Api<Node> = Api::all(admin.clone());
    let mut node = Node::default();
    node.metadata.name = Some(NODE.into());
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("node");
    (nodes, Api::namespaced(admin, "default"))
}

/// Runs `story` on a kube-apiserver of its own (its Node is cluster-wide),
/// on a tokio runtime of the test's; stops the server after.
fn on_kube_apiserver<F>(story: impl FnOnce(Arc<ApiServer>) -> F)
where
    F: std::future::Future<Output = ()>,
{
    let server = Arc::new(ApiServer::start().expect("kube-apiserver"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(story(Arc::clone(&server)));
    runtime.shutdown_background();
    drop(server);
}

async fn annotate(nodes: &Api<Node>, window: Option<&str>) {
    nodes
        .patch(
            NODE,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {WINDOW_ANNOTATION: window}}})),
        )
        .await
        .expect("annotate");
}

/// The Node's request, status and cordon.
async fn node_state(nodes: &Api<Node>) -> (Option<String>, Option<String>, bool) {
    let node = nodes.get(NODE).await.expect("node");
    let a = node.metadata.annotations.unwrap_or_default();
    (
        a.get(WINDOW_ANNOTATION).cloned(),
        a.get(STATUS_ANNOTATION).cloned(),
        node.spec.and_then(|s| s.unschedulable).unwrap_or(false),
    )
}

fn holder(lease: &Lease) -> Option<String> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .filter(|h| !h.is_empty())
}

/// Polls `check` every 20 ms until it holds, failing after `within`.
async fn wait_for<F, Fut>(what: &str, within: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = StdInstant::now();
    loop {
        if check().await {
            return;
        }
        assert!(start.elapsed() < within, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_status(nodes: &Api<Node>, status: &str, within: Duration) {
    wait_for(&format!("status {status}"), within, || async {
        node_state(nodes).await.1.as_deref() == Some(status)
    })
    .await;
}

/// Waits until the window Lease lasts `secs` (its `leaseDurationSeconds`).
async fn wait_duration(leases: &Api<Lease>, secs: i32, within: Duration) {
    wait_for(&format!("updated to {secs} s"), within, || async {
        let lease = leases.get(NODE).await.expect("lease");
        lease.spec.and_then(|s| s.lease_duration_seconds) == Some(secs)
    })
    .await;
}

/// The committed window Lease writes, in order: (server time, client, holder, duration).
fn lease_writes(emu: &Emulator) -> Vec<(SystemTime, String, Option<String>, i64)> {
    emu.write_history()
        .into_iter()
        .filter(|w| w.resource == Resource::Lease && w.name == NODE && w.committed)
        .map(|w| {
            let spec = w
                .object
                .as_ref()
                .map(|o| o["spec"].clone())
                .unwrap_or_default();
            (
                w.at,
                w.client.clone(),
                spec["holderIdentity"].as_str().map(str::to_owned),
                spec["leaseDurationSeconds"].as_i64().unwrap_or(0),
            )
        })
        .collect()
}

/// Every Node write a controller made (as the server saw it) happened while
/// the latest committed Lease write named that controller as holder, within
/// that write's duration (plus `slack` for the request on its way).
fn assert_node_writes_within_own_windows(emu: &Emulator, controllers: &[&str], slack: Duration) {
    let leases = lease_writes(emu);
    let node_writes: Vec<_> = emu
        .write_history()
        .into_iter()
        .filter(|w| w.resource == Resource::Node && controllers.contains(&w.client.as_str()))
        .collect();
    assert!(!node_writes.is_empty(), "the controllers wrote to the Node");
    for w in node_writes {
        let latest = leases
            .iter()
            .rev()
            .find(|(at, ..)| *at <= w.at)
            .unwrap_or_else(|| panic!("{} wrote to the Node before any Lease write", w.client));
        assert_eq!(
            latest.2.as_deref(),
            Some(w.client.as_str()),
            "{} wrote to the Node while the Lease named {:?}",
            w.client,
            latest.2
        );
        let end =
            latest.0 + Duration::from_secs(u64::try_from(latest.3).expect("positive")) + slack;
        assert!(
            w.at <= end,
            "{} wrote to the Node {:?} after its window's end",
            w.client,
            w.at.duration_since(end).unwrap_or_default()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_window_cordons_drains_and_ends_with_each_status() {
    let (emu, nodes, leases) = setup().await;
    a_window_cordons_drains_and_ends(&emu, &nodes, &leases).await;
    assert_node_writes_within_own_windows(&emu, &["a"], Duration::from_millis(200));
}

/// The window's lifecycle on kube-apiserver: the Lease owned by the Node, its
/// duration, each status once, the cordon and the drain.
#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn a_window_cordons_drains_and_ends_with_each_status_on_kube_apiserver() {
    on_kube_apiserver(|server| async move {
        let (nodes, leases) = node_on(&*server).await;
        a_window_cordons_drains_and_ends(&*server, &nodes, &leases).await;
    });
}

/// One controller `a` on `server`; the Node asks for a 2 s window: the
/// window Lease (owned by the Node, the window plus the padding long), the
/// cordon, the drain and its cancel, each status once, the Lease ended.
async fn a_window_cordons_drains_and_ends(
    server: &dyn Server,
    nodes: &Api<Node>,
    leases: &Api<Lease>,
) {
    let log = Log::default();
    let a = spawn(server, "a", 2, &log, None);
    annotate(nodes, Some("2")).await;
    wait_for("cordoned and active", Duration::from_secs(5), || async {
        node_state(nodes).await == (Some("2".into()), Some("active".into()), true)
    })
    .await;
    let lease = leases.get(NODE).await.expect("window lease");
    let node = nodes.get(NODE).await.expect("node");
    assert_eq!(holder(&lease).as_deref(), Some("a"));
    let spec = lease.spec.clone().expect("spec");
    assert_eq!(
        spec.lease_duration_seconds,
        Some(4),
        "window 2 s + padding 2 s"
    );
    assert_eq!(spec.acquire_time, spec.renew_time);
    let owner = &lease.metadata.owner_references.clone().expect("owned")[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Node", NODE));
    assert_eq!(
        Some(&owner.uid),
        node.metadata.uid.as_ref(),
        "the Node's uid"
    );

    wait_for("ended", Duration::from_secs(5), || async {
        node_state(nodes).await == (None, Some("ended".into()), false)
    })
    .await;
    wait_for("the lease ended", Duration::from_secs(2), || async {
        holder(&leases.get(NODE).await.expect("lease")).is_none()
    })
    .await;
    assert_eq!(
        log.statuses("a"),
        ["new (create)", "active", "ended"],
        "each transition once"
    );
    let calls: Vec<String> = log
        .entries()
        .into_iter()
        .filter(|(_, _, e)| !e.starts_with("status"))
        .map(|(_, _, e)| e)
        .collect();
    assert_eq!(calls, [format!("drain {NODE}"), format!("cancel {NODE}")]);
    a.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_controllers_never_both_hold_one_nodes_window() {
    let (emu, nodes, leases) = setup().await;
    two_controllers_take_turns(&emu, &nodes, &leases).await;
    assert_node_writes_within_own_windows(&emu, &["a", "b"], Duration::from_millis(200));
}

/// Two controllers on kube-apiserver, four windows: never two drains at once,
/// one of them waited.
#[test]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
fn two_controllers_never_both_hold_one_nodes_window_on_kube_apiserver() {
    on_kube_apiserver(|server| async move {
        let (nodes, leases) = node_on(&*server).await;
        two_controllers_take_turns(&*server, &nodes, &leases).await;
    });
}

/// Controllers `a` and `b` on `server`, four 1 s windows asked in turn: each
/// round active then ended, the drains never overlapping, and one controller
/// waited at least once.
async fn two_controllers_take_turns(server: &dyn Server, nodes: &Api<Node>, leases: &Api<Lease>) {
    let log = Log::default();
    let a = spawn(server, "a", 1, &log, None);
    let b = spawn(server, "b", 1, &log, None);
    for round in 0..4 {
        annotate(nodes, Some("1")).await;
        wait_for(
            &format!("round {round} active"),
            Duration::from_secs(5),
            || async { node_state(nodes).await.1.as_deref() == Some("active") },
        )
        .await;
        wait_for(
            &format!("round {round} ended"),
            Duration::from_secs(6),
            || async {
                let (request, status, cordoned) = node_state(nodes).await;
                let lease = leases.get(NODE).await.expect("lease");
                request.is_none()
                    && status.as_deref() == Some("ended")
                    && !cordoned
                    && holder(&lease).is_none()
            },
        )
        .await;
    }
    a.abort();
    b.abort();

    // Drains never overlap: each start is followed by its own cancel before
    // anyone's next start.
    let drains: Vec<(String, String)> = log
        .entries()
        .into_iter()
        .filter(|(_, _, e)| e.starts_with("drain") || e.starts_with("cancel"))
        .map(|(_, w, e)| (w, e))
        .collect();
    assert_eq!(drains.len(), 8, "{drains:?}");
    for pair in drains.chunks(2) {
        assert!(
            pair[0].1.starts_with("drain")
                && pair[1].1.starts_with("cancel")
                && pair[0].0 == pair[1].0,
            "overlapping drains: {drains:?}"
        );
    }
    // The one not holding waited at least once.
    let waited = log.statuses("a").contains(&"waiting".to_owned())
        || log.statuses("b").contains(&"waiting".to_owned());
    assert!(waited, "{:?}", log.entries());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holder_crashes_mid_window_and_the_next_reconcile_cleans_up() {
    let (emu, nodes, leases) = setup().await;
    let log = Log::default();
    // Window 1 s, padding 3 s: the lease lasts 4 s.
    let a = spawn(&emu, "a", 3, &log, None);
    annotate(&nodes, Some("1")).await;
    wait_status(&nodes, "active", Duration::from_secs(5)).await;
    let taken = StdInstant::now();
    a.abort();
    let _ = a.await;
    // The window (1 s) expires while nobody runs; the Lease (4 s) does not.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (request, status, cordoned) = node_state(&nodes).await;
    assert_eq!(
        (request.as_deref(), status.as_deref(), cordoned),
        (Some("1"), Some("active"), true)
    );

    // The restarted controller (no record of its write: it judges by wall clock).
    let a2 = spawn(&emu, "a", 3, &log, None);
    wait_for("cleaned up", Duration::from_secs(3), || async {
        node_state(&nodes).await == (None, Some("ended".into()), false)
    })
    .await;
    assert!(
        taken.elapsed() < Duration::from_secs(4),
        "within the lease time"
    );
    wait_for("the lease ended", Duration::from_secs(2), || async {
        holder(&leases.get(NODE).await.expect("lease")).is_none()
    })
    .await;
    a2.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_holders_expired_window_is_torn_down_by_another() {
    let (emu, nodes, leases) = setup().await;
    let log = Log::default();
    let a = spawn(&emu, "a", 1, &log, None);
    annotate(&nodes, Some("1")).await;
    wait_status(&nodes, "active", Duration::from_secs(5)).await;
    a.abort();
    let _ = a.await;
    // The asker gives up on the window; the holder is gone and its Lease expires.
    annotate(&nodes, None).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(node_state(&nodes).await.2, "still cordoned");

    let b = spawn(&emu, "b", 1, &log, None);
    wait_for("uncordoned by b", Duration::from_secs(4), || async {
        node_state(&nodes).await == (None, Some("ended".into()), false)
    })
    .await;
    wait_for("the lease ended", Duration::from_secs(2), || async {
        holder(&leases.get(NODE).await.expect("lease")).is_none()
    })
    .await;
    // b took a padding-long lease (1 s) to do it.
    let writes = lease_writes(&emu);
    assert!(
        writes
            .iter()
            .any(|(_, c, h, d)| c == "b" && h.as_deref() == Some("b") && *d == 1),
        "{writes:?}"
    );
    assert_node_writes_within_own_windows(&emu, &["a", "b"], Duration::from_millis(200));
    b.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_removed_recreated_and_changed_at_each_state() {
    let (emu, nodes, leases) = setup().await;
    let log = Log::default();
    // Another controller's valid window, written by hand: "a" waits.
    let mut other = Lease::default();
    other.metadata.name = Some(NODE.into());
    let now = WallTime::now();
    other.spec = Some(LeaseSpec {
        holder_identity: Some("other".into()),
        acquire_time: Some(MicroTime(to_timestamp(now))),
        renew_time: Some(MicroTime(to_timestamp(now))),
        lease_duration_seconds: Some(3),
        lease_transitions: Some(0),
        ..LeaseSpec::default()
    });
    leases
        .create(&PostParams::default(), &other)
        .await
        .expect("other's lease");
    let a = spawn(&emu, "a", 2, &log, None);
    annotate(&nodes, Some("1")).await;
    wait_for("waiting", Duration::from_secs(3), || async {
        log.statuses("a").last().map(String::as_str) == Some("waiting")
    })
    .await;
    // waiting: changed, removed, re-created: a writes nothing to the Node.
    annotate(&nodes, Some("2")).await;
    annotate(&nodes, None).await;
    annotate(&nodes, Some("3")).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(node_state(&nodes).await, (Some("3".into()), None, false));
    assert_eq!(
        emu.request_counts().get("a", Verb::Patch, Resource::Node),
        0
    );

    // other's window expires: a acquires it (transitions + 1) and is active.
    wait_status(&nodes, "active", Duration::from_secs(5)).await;
    let lease = leases.get(NODE).await.expect("lease");
    let spec = lease.spec.clone().expect("spec");
    assert_eq!(
        (
            holder(&lease).as_deref(),
            spec.lease_duration_seconds,
            spec.lease_transitions
        ),
        (Some("a"), Some(5), Some(1))
    );
    assert!(log.statuses("a").contains(&"new (acquired)".to_owned()));

    // active: changed to 6 s → updated, the same window with the new duration.
    annotate(&nodes, Some("6")).await;
    wait_duration(&leases, 8, Duration::from_secs(3)).await;
    wait_status(&nodes, "active", Duration::from_secs(3)).await;
    assert!(log.statuses("a").contains(&"updated".to_owned()));
    let after_update = leases.get(NODE).await.expect("lease").spec.expect("spec");
    assert_eq!(
        after_update.acquire_time, spec.acquire_time,
        "the same window"
    );

    // active: removed → ended, uncordoned, the lease ended.
    annotate(&nodes, None).await;
    wait_for("ended", Duration::from_secs(3), || async {
        node_state(&nodes).await == (None, Some("ended".into()), false)
            && holder(&leases.get(NODE).await.expect("lease")).is_none()
    })
    .await;

    // ended: re-created → a new window on the ended lease (new, reused).
    annotate(&nodes, Some("1")).await;
    wait_status(&nodes, "active", Duration::from_secs(3)).await;
    assert!(log.statuses("a").contains(&"new (reused)".to_owned()));

    // within the padding, the teardown stuck on a refused request removal:
    // the request changed to a longer window → updated, active again.
    emu.faults("a")
        .on(Match::verbs(&[Verb::Patch]).resource(Resource::Node))
        .error(500);
    tokio::time::sleep(Duration::from_millis(1300)).await; // past the 1 s window
    assert_eq!(
        node_state(&nodes).await,
        (Some("1".into()), Some("active".into()), true)
    );
    annotate(&nodes, Some("5")).await;
    emu.faults("a").clear();
    wait_duration(&leases, 7, Duration::from_secs(3)).await;
    wait_status(&nodes, "active", Duration::from_secs(3)).await;

    // ended while the lease is still held (its end refused), then re-created
    // → a new window (new, recreate).
    emu.faults("a")
        .on(Match::verbs(&[Verb::Update]).resource(Resource::Lease))
        .error(500);
    annotate(&nodes, None).await;
    wait_for(
        "ended, lease still held",
        Duration::from_secs(3),
        || async { node_state(&nodes).await == (None, Some("ended".into()), false) },
    )
    .await;
    assert_eq!(
        holder(&leases.get(NODE).await.expect("lease")).as_deref(),
        Some("a")
    );
    // The request comes back while the Lease's end is still refused, so the
    // controller cannot end the Lease first (with the fault cleared before, a
    // retry of the end could win the race on a loaded machine: `reused`).
    annotate(&nodes, Some("1")).await;
    wait_for("new (recreate) decided", Duration::from_secs(3), || async {
        log.statuses("a").last().map(String::as_str) == Some("new (recreate)")
    })
    .await;
    emu.faults("a").clear();
    wait_status(&nodes, "active", Duration::from_secs(3)).await;
    let statuses = log.statuses("a");
    let last_end = statuses.iter().rposition(|s| s == "ended").expect("ended");
    assert_eq!(
        statuses[last_end + 1..].first().map(String::as_str),
        Some("new (recreate)"),
        "{statuses:?}"
    );
    assert_node_writes_within_own_windows(&emu, &["a"], Duration::from_millis(200));
    a.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teardown_errors_are_retried_only_within_the_remaining_lease_time() {
    let (emu, nodes, leases) = setup().await;
    let log = Log::default();
    // Window 1 s, padding 2 s.
    let a = spawn(&emu, "a", 2, &log, None);
    annotate(&nodes, Some("1")).await;
    wait_status(&nodes, "active", Duration::from_secs(5)).await;
    // Every Node write of a fails from now on: the teardown cannot progress.
    emu.faults("a")
        .on(Match::verbs(&[Verb::Patch]).resource(Resource::Node))
        .too_many_requests(1);
    // Sample a's Node patch attempts (the emulator counts refused ones too).
    let mut attempts: Vec<SystemTime> = Vec::new();
    let mut seen = emu.request_counts().get("a", Verb::Patch, Resource::Node);
    let until = StdInstant::now() + Duration::from_secs(5);
    while StdInstant::now() < until {
        let n = emu.request_counts().get("a", Verb::Patch, Resource::Node);
        for _ in seen..n {
            attempts.push(SystemTime::now());
        }
        seen = n;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(attempts.len() >= 3, "retried: {attempts:?}");
    // Each attempt falls within a window a held.
    let windows: Vec<_> = lease_writes(&emu)
        .into_iter()
        .filter(|(_, c, h, _)| c == "a" && h.as_deref() == Some("a"))
        .collect();
    // The request could not be removed, so past the first window's end it is
    // still there: a new window (stale) by compare-and-swap, never a Node
    // write on the old one.
    assert!(
        windows.len() >= 2,
        "a took a new window after the first: {windows:?}"
    );
    let slack = Duration::from_millis(150); // the sampling period and the request's way
    for at in &attempts {
        let within = windows.iter().any(|(start, _, _, d)| {
            *start <= *at + slack
                && *at <= *start + Duration::from_secs(u64::try_from(*d).expect("positive")) + slack
        });
        assert!(
            within,
            "a Node write outside a's windows at {at:?}: {windows:?}"
        );
    }
    // Once the API answers again, the teardown completes.
    emu.faults("a").clear();
    wait_for("ended", Duration::from_secs(5), || async {
        node_state(&nodes).await == (None, Some("ended".into()), false)
            && holder(&leases.get(NODE).await.expect("lease")).is_none()
    })
    .await;
    a.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_with_a_slow_wall_clock_stops_at_its_own_end() {
    let (emu, nodes, _leases) = setup().await;
    let log = Log::default();
    // a's wall clock runs at half speed from its start.
    let origin_wall = SystemTime::now();
    let origin = StdInstant::now();
    let slow =
        Clock::from_fn(move || WallTime::from_system_time(origin_wall + origin.elapsed() / 2));
    let a = spawn(&emu, "a", 3, &log, Some(slow));
    annotate(&nodes, Some("2")).await;
    wait_status(&nodes, "active", Duration::from_secs(5)).await;
    wait_status(&nodes, "ended", Duration::from_secs(5)).await;
    // The drain is cancelled after the status is written.
    wait_for("the drain cancelled", Duration::from_secs(2), || async {
        log.entries()
            .iter()
            .any(|(_, _, e)| e.starts_with("cancel"))
    })
    .await;
    let entries = log.entries();
    let at = |what: &str| {
        entries
            .iter()
            .find(|(_, _, e)| e.starts_with(what))
            .map(|(t, ..)| *t)
            .unwrap_or_else(|| panic!("no {what} in {entries:?}"))
    };
    let created = at("status new (create)");
    let ended = at("status ended");
    let window = ended.duration_since(created);
    // By its wall clock only 1 s had passed at the 2 s window's end; it ended
    // the window by its monotonic clock.
    assert!(
        window >= Duration::from_millis(1900) && window < Duration::from_millis(2600),
        "ended {window:?} after the window was taken"
    );
    assert!(at("cancel") >= ended);
    a.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_is_gone_and_the_drain_cancelled_when_the_node_is_deleted() {
    let (emu, nodes, leases) = setup().await;
    let log = Log::default();
    let a = spawn(&emu, "a", 30, &log, None);
    annotate(&nodes, Some("60")).await;
    wait_status(&nodes, "active", Duration::from_secs(5)).await;
    wait_for("the drain", Duration::from_secs(2), || async {
        log.entries().iter().any(|(_, _, e)| e.starts_with("drain"))
    })
    .await;
    assert!(leases.get_opt(NODE).await.expect("get").is_some());
    nodes
        .delete(NODE, &DeleteParams::default())
        .await
        .expect("delete the node");
    assert!(
        leases.get_opt(NODE).await.expect("get").is_none(),
        "the window Lease went with its Node"
    );
    // No reconcile runs for a Node gone from the cache: the drain is cancelled
    // from the Node watch's delete, at once, not at the window's end 90 s on.
    wait_for("the drain cancelled", Duration::from_secs(2), || async {
        log.entries()
            .iter()
            .any(|(_, _, e)| e == &format!("cancel {NODE}"))
    })
    .await;
    // The controller neither re-creates the Lease nor fails on the missing Node.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(leases.get_opt(NODE).await.expect("get").is_none());
    assert!(!a.is_finished(), "the controller keeps running");
    assert_eq!(log.statuses("a"), ["new (create)", "active"]);
    a.abort();
}

/// The Node is deleted (its window Lease collected with it) while a reconcile
/// is reading: held 500 ms at the emulator, its read of the Lease comes back
/// "absent" after the deletion. The controller reads the Node after the Lease,
/// finds it gone, and creates no window for it. (`.ci/repeat` caught the old
/// order, Node then Lease, creating one in
/// `the_lease_is_gone_and_the_drain_cancelled_when_the_node_is_deleted`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_deleted_under_a_reconcile_gets_no_new_window() {
    let (emu, nodes, leases) = setup().await;
    let log = Log::default();
    let a = spawn(&emu, "a", 30, &log, None);
    annotate(&nodes, Some("60")).await;
    wait_status(&nodes, "active", Duration::from_secs(5)).await;
    let gets = || emu.request_counts().get("a", Verb::Get, Resource::Lease);
    let before = gets();
    emu.faults("a")
        .on(Match::verbs(&[Verb::Get]).resource(Resource::Lease))
        .times(1)
        .latency(Duration::from_millis(500));
    // Any change of the Node makes the controller reconcile it.
    nodes
        .patch(
            NODE,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"poke": "1"}}})),
        )
        .await
        .expect("poke");
    wait_for("the Lease read sent", Duration::from_secs(3), || async {
        gets() > before
    })
    .await;
    nodes
        .delete(NODE, &DeleteParams::default())
        .await
        .expect("delete the node");
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert!(
        leases.get_opt(NODE).await.expect("get").is_none(),
        "no window Lease for a deleted Node"
    );
    assert_eq!(log.statuses("a"), ["new (create)", "active"]);
    a.abort();
}

/// The request changed while the teardown's removal of the old one is on its
/// way (held 1.5 s by the emulator): the removal tests the value it decided
/// on, fails (422), and the controller decides again on the new request, an
/// update of the same window, instead of removing the asker's new request.
/// (`.ci/repeat` series 5 caught the old removal, a plain merge patch, wiping
/// the new request in `the_request_removed_recreated_and_changed_at_each_state`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_changed_under_the_teardown_is_kept_and_updates_the_window() {
    let (emu, nodes, leases) = setup().await;
    let log = Log::default();
    let a = spawn(&emu, "a", 2, &log, None);
    annotate(&nodes, Some("1")).await;
    wait_for("cordoned and active", Duration::from_secs(5), || async {
        node_state(&nodes).await == (Some("1".into()), Some("active".into()), true)
    })
    .await;
    // The next Node patch of a is the teardown's first write: the removal.
    let patches = || emu.request_counts().get("a", Verb::Patch, Resource::Node);
    let before = patches();
    emu.faults("a")
        .on(Match::verbs(&[Verb::Patch]).resource(Resource::Node))
        .times(1)
        .latency(Duration::from_millis(1_500));
    wait_for("the removal sent", Duration::from_secs(3), || async {
        patches() > before
    })
    .await;
    annotate(&nodes, Some("5")).await;
    wait_duration(&leases, 7, Duration::from_secs(5)).await;
    wait_status(&nodes, "active", Duration::from_secs(3)).await;
    assert_eq!(
        node_state(&nodes).await.0.as_deref(),
        Some("5"),
        "the new request kept"
    );
    assert!(log.statuses("a").contains(&"updated".to_owned()));
    a.abort();
}
