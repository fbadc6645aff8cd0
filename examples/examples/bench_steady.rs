//! A level-triggered controller at rest on a real kube-apiserver:
//! three replicas of an `ElectedController` managing N ConfigMaps (100;
//! `--quick`: 10), nothing changing, and the writes a minute they make to
//! those objects beyond the Lease's own renewals.
//!
//! Each replica keeps a `Warm` of the N ConfigMaps (label-selected, read by the
//! admin), campaigns on a Lease of the same namespace (`LeaseLock`, the
//! admin's client) as its Pod's name (`app-0`, `app-1`, `app-2`) and writes
//! through its term client with that Pod's bound token (ServiceAccount `app`,
//! a Role on ConfigMaps). The reconcile is the ordinary level-triggered one: it
//! merges one fixed annotation (`example.com/reconciled: "yes"`) into the
//! ConfigMap it reconciles and awaits the next change. `Config::client_go`
//! (lease 15 s, renew deadline 10 s, retry 2 s): the Lease's renewals per
//! minute are a real leader's (`--quick`: `Config::fast`, a 2 s lease, so that
//! each row's first leader, who waits out a lease on a new Lease, comes
//! sooner).
//!
//! One row per configuration, each in a fresh namespace with a Lease of its
//! own, on one server: the term client before the idempotent fence (a token of each write,
//! `write_tokens(true)`, under the fence `--writer any` it needed), the
//! defaults under the default fence (`--writer pod-name`) and with no fence,
//! and the stamp off (`term_annotation(false)`) as the floor. A fence is
//! applied after the admin created the ConfigMaps (the admin does not stamp)
//! and before the replicas start. Once a leader's first pass has annotated
//! every object and a few seconds passed, a window (60 s; `--quick`: 4 s)
//! counts, per minute: the ConfigMap write requests by verb (the API server's
//! audit log, which audits ConfigMap writes), the new versions of the
//! ConfigMaps a watch sees, the reconciles, and the Lease's own requests by
//! verb (the audit log). Shown for each row: the users who wrote, and the
//! reconciles that failed.
//!
//! Run: `cargo run --release --example bench_steady`
//! (`-- --quick`: 10 objects, 4 s windows, for CI). Needs the built
//! kube-apiserver (`bash testing/k8s-server/build.sh`). Figures and machine in
//! BENCHMARKS.md, "Steady state: a level-triggered controller's writes".

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use election_controller::{ElectedController, TermContext, Warm};
use election_core::Config;
use election_driver::{Builder, Handle};
use election_ops::fence::{FencePolicy, Protected, Writer};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube_runtime::controller::Action;
use kube_runtime::watcher;
use test_kit::apiserver::{ADMIN, ApiServer, K8S_VERSION, Server};

/// The managed ConfigMaps' label.
const LABEL: &str = "bench=steady";
/// What the reconcile merges into each.
const ANNOTATION: &str = "example.com/reconciled";
/// The replicas: each one's identity and Pod.
const PODS: [&str; 3] = ["app-0", "app-1", "app-2"];
/// Their ServiceAccount.
const ACCOUNT: &str = "app";

/// One configuration of the term client and the fence.
struct Setup {
    label: &'static str,
    /// The Lease (and the fence's name, `fence-<lease>`).
    lease: &'static str,
    write_tokens: bool,
    stamp: bool,
    fence: Option<Writer>,
}

const SETUPS: [Setup; 4] = [
    Setup {
        label: "before (write tokens, fence --writer any)",
        lease: "steady-before",
        write_tokens: true,
        stamp: true,
        fence: Some(Writer::Any),
    },
    Setup {
        label: "defaults, default fence (pod-name)",
        lease: "steady-fenced",
        write_tokens: false,
        stamp: true,
        fence: Some(Writer::PodName),
    },
    Setup {
        label: "defaults, no fence",
        lease: "steady-unfenced",
        write_tokens: false,
        stamp: true,
        fence: None,
    },
    Setup {
        label: "stamp off (term_annotation(false)), no fence",
        lease: "steady-unstamped",
        write_tokens: false,
        stamp: false,
        fence: None,
    },
];

struct Context {
    term: TermContext,
    reconciles: Arc<AtomicU64>,
}

#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct Error(#[from] kube::Error);

async fn reconcile(cm: Arc<ConfigMap>, cx: Arc<Context>) -> Result<Action, Error> {
    cx.reconciles.fetch_add(1, Ordering::Relaxed);
    let api: Api<ConfigMap> =
        Api::namespaced(cx.term.client.clone(), &cm.namespace().unwrap_or_default());
    let patch = serde_json::json!({ "metadata": { "annotations": { ANNOTATION: "yes" } } });
    api.patch(
        &cm.name_any(),
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await?;
    Ok(Action::await_change())
}

/// What one row measured.
struct Figures {
    window: Duration,
    /// ConfigMap write requests per (user, verb), from the audit log.
    writes: BTreeMap<(String, String), u64>,
    /// The Lease's requests per (user, verb), from the audit log.
    lease: BTreeMap<(String, String), u64>,
    /// New versions of the ConfigMaps a watch saw.
    versions: u64,
    reconciles: u64,
    /// Reconciles that failed (the write refused, or not sent).
    errors: u64,
    /// Who led at the start and at the end of the window.
    leaders: (String, String),
    /// From the replicas' start to every object annotated.
    first_pass: Duration,
}

impl Figures {
    fn per_minute(&self, n: u64) -> f64 {
        n as f64 * 60.0 / self.window.as_secs_f64()
    }
    fn writes_per_minute(&self) -> f64 {
        self.per_minute(self.writes.values().sum())
    }
    /// `total (verb n, …)` per minute, or `0`.
    fn by_verb(&self, counts: &BTreeMap<(String, String), u64>) -> String {
        let mut verbs: BTreeMap<&str, u64> = BTreeMap::new();
        for ((_, verb), n) in counts {
            *verbs.entry(verb).or_insert(0) += n;
        }
        let total = rate(self.per_minute(verbs.values().sum()));
        if verbs.is_empty() {
            return total;
        }
        let parts: Vec<String> = verbs
            .iter()
            .map(|(verb, n)| format!("{verb} {}", rate(self.per_minute(*n))))
            .collect();
        format!("{total} ({})", parts.join(", "))
    }
}

/// A rate: `0`, one decimal under 100, none above.
fn rate(x: f64) -> String {
    if x == 0.0 {
        "0".to_owned()
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// Counts the new versions of the managed ConfigMaps in `ns` a watch sees from
/// its first listing on (Apply events after InitDone), in the background.
async fn count_versions(
    admin: kube::Client,
    ns: &str,
) -> (Arc<AtomicU64>, tokio::task::JoinHandle<()>) {
    let count = Arc::new(AtomicU64::new(0));
    let (ready_tx, ready) = tokio::sync::oneshot::channel();
    let mut ready_tx = Some(ready_tx);
    let mut events = watcher(
        Api::<ConfigMap>::namespaced(admin, ns),
        watcher::Config::default().labels(LABEL),
    )
    .boxed();
    let seen = Arc::clone(&count);
    let task = tokio::spawn(async move {
        let mut listed = false;
        while let Some(event) = events.next().await {
            match event {
                Ok(watcher::Event::InitDone) => {
                    listed = true;
                    if let Some(tx) = ready_tx.take() {
                        let _ = tx.send(());
                    }
                }
                Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) if listed => {
                    seen.fetch_add(1, Ordering::Relaxed);
                }
                Ok(_) => {}
                Err(e) => eprintln!("  (the counting watch: {e}; retrying)"),
            }
        }
    });
    ready.await.expect("the counting watch lists");
    (count, task)
}

/// Whether every managed ConfigMap in `api` bears the annotation.
async fn all_annotated(api: &Api<ConfigMap>, n: usize) -> bool {
    let Ok(list) = api.list(&ListParams::default().labels(LABEL)).await else {
        return false;
    };
    list.items.len() == n
        && list
            .items
            .iter()
            .all(|cm| cm.annotations().get(ANNOTATION).is_some_and(|v| v == "yes"))
}

fn leader(handles: &[Handle]) -> Option<&'static str> {
    PODS.iter()
        .zip(handles)
        .find(|(_, h)| h.is_leader())
        .map(|(pod, _)| *pod)
}

/// One row: a fresh namespace, its N ConfigMaps, the fence if any, the three
/// replicas, the first pass, `settle`, then the window.
async fn row(
    server: &ApiServer,
    setup: &Setup,
    objects: usize,
    window: Duration,
    settle: Duration,
    timings: fn(&'static str) -> Config,
) -> Figures {
    let admin = server.client(ADMIN);
    let ns = tokio::task::block_in_place(|| server.namespace());
    let rules = [serde_json::json!({
        "apiGroups": [""], "resources": ["configmaps"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
    })];
    test_kit::rbac::grant(server, &ns, ACCOUNT, &rules).await;
    let configs: Vec<kube::Config> = tokio::task::block_in_place(|| {
        let configs: Vec<_> = PODS
            .iter()
            .map(|pod| server.pod_config(&ns, ACCOUNT, pod))
            .collect();
        server.wait_allowed(&configs[0], &ns, "patch", "", "configmaps");
        configs
    });

    let api: Api<ConfigMap> = Api::namespaced(admin.clone(), &ns);
    for i in 0..objects {
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": { "name": format!("obj-{i:03}"), "labels": { "bench": "steady" } },
            "data": { "value": i.to_string() },
        }))
        .expect("a ConfigMap");
        api.create(&PostParams::default(), &cm)
            .await
            .expect("a ConfigMap");
    }
    // The fence after the objects (the admin does not stamp), before the
    // replicas; enforced once an unstamped dry-run create is refused.
    if let Some(writer) = &setup.fence {
        FencePolicy::new(&ns, setup.lease)
            .protect(Protected::new("", "v1", "configmaps"))
            .writer(writer.clone())
            .apply(admin.clone())
            .await
            .expect("the fence");
        test_kit::admission::until_configmaps_fenced(admin.clone(), &ns).await;
    }

    let (versions, counting) = count_versions(admin.clone(), &ns).await;
    let reconciles = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let handles: Vec<Handle> = PODS
        .iter()
        .zip(configs)
        .map(|(pod, config)| {
            let warm = Warm::spawn(api.clone(), watcher::Config::default().labels(LABEL));
            let lock = lock_lease::LeaseLock::new(
                lock_kube::lock_client(server.kube_config(ADMIN)).expect("a client"),
                &ns,
                setup.lease,
            )
            .expect("a valid name");
            let counted = Arc::clone(&reconciles);
            let failed = Arc::clone(&errors);
            ElectedController::new(warm, config)
                .write_tokens(setup.write_tokens)
                .term_annotation(setup.stamp)
                .spawn(Builder::new(lock, timings(pod)), move |controller, term| {
                    let cx = Arc::new(Context {
                        term,
                        reconciles: Arc::clone(&counted),
                    });
                    let failed = Arc::clone(&failed);
                    controller.run(
                        reconcile,
                        move |_, _: &Error, _| {
                            failed.fetch_add(1, Ordering::Relaxed);
                            Action::requeue(Duration::from_millis(500))
                        },
                        cx,
                    )
                })
                .expect("a replica")
        })
        .collect();

    let deadline = Instant::now() + Duration::from_secs(120);
    while !(leader(&handles).is_some() && all_annotated(&api, objects).await) {
        assert!(
            Instant::now() < deadline,
            "{}: no leader, or not every object annotated, after 120 s",
            setup.label
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let first_pass = started.elapsed();
    tokio::time::sleep(settle).await;

    let first = leader(&handles).unwrap_or("none").to_owned();
    let (v0, r0, e0) = (
        versions.load(Ordering::Relaxed),
        reconciles.load(Ordering::Relaxed),
        errors.load(Ordering::Relaxed),
    );
    let from = SystemTime::now();
    tokio::time::sleep(window).await;
    let to = SystemTime::now();
    let (v1, r1, e1) = (
        versions.load(Ordering::Relaxed),
        reconciles.load(Ordering::Relaxed),
        errors.load(Ordering::Relaxed),
    );
    let last = leader(&handles).unwrap_or("none").to_owned();
    // A request is in the log once answered.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (writes, lease) = tokio::task::block_in_place(|| {
        (
            server.audit_requests("configmaps", &ns, from, to),
            server.audit_requests("leases", &ns, from, to),
        )
    });

    // The followers first, so that none takes over (and writes) as the
    // leader releases.
    let mut order: Vec<&Handle> = handles.iter().filter(|h| !h.is_leader()).collect();
    order.extend(handles.iter().filter(|h| h.is_leader()));
    for handle in order {
        handle.shutdown().await;
    }
    counting.abort();
    Figures {
        window,
        writes,
        lease,
        versions: v1 - v0,
        reconciles: r1 - r0,
        errors: e1 - e0,
        leaders: (first, last),
        first_pass,
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (objects, window, settle) = if quick {
        (10, Duration::from_secs(4), Duration::from_secs(1))
    } else {
        (100, Duration::from_secs(60), Duration::from_secs(5))
    };
    let (timings, described): (fn(&'static str) -> Config, _) = if quick {
        (
            |id| Config::fast(id),
            "Config::fast (lease 2 s, renew deadline 1.5 s, retry 250 ms)",
        )
    } else {
        (
            |id| Config::client_go(id),
            "Config::client_go (lease 15 s, renew deadline 10 s, retry 2 s)",
        )
    };
    let server = ApiServer::start().expect("kube-apiserver");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    println!(
        "three replicas of an ElectedController, {objects} ConfigMaps, nothing changing; \
         kube-apiserver {K8S_VERSION}; {described}; window {} s after a {} s settle{}",
        window.as_secs(),
        settle.as_secs(),
        if quick { " (QUICK smoke mode)" } else { "" }
    );
    let mut rows = Vec::new();
    for setup in &SETUPS {
        let figures = runtime.block_on(row(&server, setup, objects, window, settle, timings));
        let users: Vec<String> = figures
            .writes
            .iter()
            .map(|((user, verb), n)| format!("{user} {verb} {n}"))
            .collect();
        println!(
            "  {}: first pass {:.1} s, leader {} then {}, writes in the window by user: [{}], \
             reconcile errors {}",
            setup.label,
            figures.first_pass.as_secs_f64(),
            figures.leaders.0,
            figures.leaders.1,
            users.join("; "),
            figures.errors
        );
        rows.push((setup, figures));
    }

    println!();
    println!(
        "| configuration | ConfigMap writes / min (audit, by verb) | new ConfigMap versions / min (watch) | reconciles / min | Lease requests / min (audit, by verb) | window |"
    );
    println!("|---|---|---|---|---|---|");
    for (setup, f) in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} s |",
            setup.label,
            f.by_verb(&f.writes),
            rate(f.per_minute(f.versions)),
            rate(f.per_minute(f.reconciles)),
            f.by_verb(&f.lease),
            f.window.as_secs()
        );
    }
    println!();
    let before = rows[0].1.writes_per_minute();
    for (setup, f) in &rows[1..3] {
        let after = f.writes_per_minute();
        if after == 0.0 {
            println!(
                "before / {}: {} writes/min against 0 (no ratio: nothing written)",
                setup.label,
                rate(before)
            );
        } else {
            println!(
                "before / {}: {} / {} writes/min = {:.0}x",
                setup.label,
                rate(before),
                rate(after),
                before / after
            );
        }
    }
}
