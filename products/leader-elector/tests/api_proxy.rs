//! `run --api-proxy`: the sidecar serves the Kubernetes API to its child. An
//! unmodified client (kube-rs here, with the child's `KUBECONFIG`; kubectl and
//! the Python client in `api_proxy_fence`) writes through it: every write is
//! stamped with the term, a write of what is stored changes nothing, a watch
//! streams through it and outlives a term; once the term is over, writes are
//! refused with a `Status` and never sent. The sidecar reaches the emulator
//! through a TCP proxy (`test_kit::proxy`), to cut it off.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Site;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube_emulator::{Emulator, Resource};
use test_kit::proxy::{Mode, Proxy};

const LEASE: &str = "proxied";
const HOLDER: &str = "kube-elector.dev/holder";
const TERM: &str = "kube-elector.dev/term";

/// The child's environment as it wrote it to `path` (`env` output), once the
/// file is there; the file is removed, so the next child's can be told apart.
async fn child_env(path: &Path, within: Duration) -> BTreeMap<String, String> {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            let _ = std::fs::remove_file(path);
            return text
                .lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
        }
        assert!(
            start.elapsed() < within,
            "no child started within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A kube client as an unmodified program builds it from `kubeconfig`.
async fn client_of(kubeconfig: &str) -> kube::Client {
    let file = kube::config::Kubeconfig::read_from(kubeconfig).expect("the child's kubeconfig");
    let config =
        kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
            .await
            .expect("a usable kubeconfig");
    kube::Client::try_from(config).expect("a client")
}

/// The stamp (holder, term) of the stored ConfigMap `name`, and its version.
fn stored(site: &Site<'_>, name: &str) -> (String, String, String) {
    let object = site
        .server
        .object(Resource::ConfigMap, &site.ns, name)
        .unwrap_or_else(|| panic!("{name} is stored"));
    let annotation = |key: &str| {
        object["metadata"]["annotations"][key]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    (
        annotation(HOLDER),
        annotation(TERM),
        object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// What a watch through the proxy delivered: (event type, name, term stamped).
type Seen = Arc<Mutex<Vec<(String, String, String)>>>;

fn watch_through(api: Api<ConfigMap>, from: String, seen: Seen) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let params = WatchParams::default().timeout(290);
        let mut events = api.watch(&params, &from).await.expect("a watch").boxed();
        while let Ok(Some(event)) = events.try_next().await {
            let (kind, cm) = match event {
                WatchEvent::Added(cm) => ("ADDED", cm),
                WatchEvent::Modified(cm) => ("MODIFIED", cm),
                WatchEvent::Deleted(cm) => ("DELETED", cm),
                WatchEvent::Bookmark(_) | WatchEvent::Error(_) => continue,
            };
            let term = cm
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(TERM).cloned())
                .unwrap_or_default();
            let name = cm.metadata.name.unwrap_or_default();
            seen.lock().expect("seen").push((kind.into(), name, term));
        }
    })
}

/// How many events for `name` the watch delivered so far.
fn events_for(seen: &Seen, name: &str) -> Vec<(String, String)> {
    seen.lock()
        .expect("seen")
        .iter()
        .filter(|(_, n, _)| n == name)
        .map(|(kind, _, term)| (kind.clone(), term.clone()))
        .collect()
}

/// Waits until the watch delivered `count` events for `name` (at most 10 s),
/// then 500 ms more for any that should not come.
async fn settled_events(seen: &Seen, name: &str, count: usize) -> Vec<(String, String)> {
    let start = Instant::now();
    while events_for(seen, name).len() < count && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    events_for(seen, name)
}

fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": name },
        "data": data.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect::<BTreeMap<_, _>>(),
    }))
    .expect("a ConfigMap")
}

/// The Kubernetes `Status` a refused request was answered with: code, reason,
/// message.
fn refusal(e: &kube::Error) -> Option<(u16, String, String)> {
    match e {
        kube::Error::Api(status) => {
            Some((status.code, status.reason.clone(), status.message.clone()))
        }
        _ => None,
    }
}

/// The story on `site`; the second object is written by server-side apply
/// where the server has it (kube-apiserver), else by a strategic-merge patch.
async fn proxied_child(site: &Site<'_>) {
    let net = Proxy::start(common::server_of(&site.kubeconfig("probe")))
        .await
        .expect("proxy");
    let kubeconfig = common::through(&site.kubeconfig("app-0"), net.addr());
    let env_file = site.dir.join("env");
    let script = format!(
        "{{ env; echo CHILD_PID=$$; }} > {tmp}; mv {tmp} {env}; exec sleep 600",
        tmp = site.dir.join("env.tmp").display(),
        env = env_file.display()
    );
    let mut sidecar = tokio::process::Command::new(common::BIN)
        .args(["--lease-duration", "2s", "--renew-deadline", "1.5s"])
        .args(["--retry-period", "250ms", "--identity", "app-0"])
        .args(["--namespace", &site.ns, "run", "--lease", LEASE])
        .args(["--api-proxy", "--", "sh", "-c", &script])
        .env("KUBECONFIG", &kubeconfig)
        // What a Pod has: the child must not get it (it would bypass the proxy).
        .env("KUBERNETES_SERVICE_HOST", "10.96.0.1")
        .env("KUBERNETES_SERVICE_PORT", "443")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the sidecar");

    let env = child_env(&env_file, Duration::from_secs(15)).await;
    let proxied = env.get("KUBECONFIG").expect("the child gets KUBECONFIG");
    assert_ne!(Path::new(proxied), kubeconfig.as_path());
    for var in ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"] {
        assert!(!env.contains_key(var), "the child got {var}: {env:?}");
    }
    let term1 = env["LEADER_ELECTOR_TERM"].clone();
    let api: Api<ConfigMap> = Api::default_namespaced(client_of(proxied).await);

    // A watch through the proxy, from the current version.
    let from = api
        .list_metadata(&Default::default())
        .await
        .expect("a list through the proxy")
        .metadata
        .resource_version
        .expect("a list version");
    let seen: Seen = Arc::default();
    let watch = watch_through(api.clone(), from, Arc::clone(&seen));

    // Create, server-side apply, merge patch: each stamped with the term.
    api.create(&PostParams::default(), &configmap("created", &[("a", "1")]))
        .await
        .expect("a create through the proxy");
    let applied = configmap("applied", &[("a", "1")]);
    let (apply, applied) = if site.enforces_rbac() {
        (PatchParams::apply("child"), Patch::Apply(&applied))
    } else {
        (PatchParams::default(), Patch::Strategic(&applied))
    };
    if !site.enforces_rbac() {
        api.create(&PostParams::default(), &configmap("applied", &[]))
            .await
            .expect("a create through the proxy");
    }
    api.patch("applied", &apply, &applied)
        .await
        .expect("an apply through the proxy");
    let merge = serde_json::json!({ "data": { "b": "2" } });
    api.patch("created", &PatchParams::default(), &Patch::Merge(&merge))
        .await
        .expect("a merge patch through the proxy");
    for name in ["created", "applied"] {
        let (holder, term, _) = stored(site, name);
        assert_eq!(
            (holder.as_str(), term.as_str()),
            ("app-0", term1.as_str()),
            "{name}"
        );
    }
    // A write of what is stored, three times: no new version, no event.
    let (.., version) = stored(site, "applied");
    for _ in 0..3 {
        api.patch("applied", &apply, &applied)
            .await
            .expect("a no-op apply");
        api.patch("created", &PatchParams::default(), &Patch::Merge(&merge))
            .await
            .expect("a no-op merge patch");
    }
    assert_eq!(
        stored(site, "applied").2,
        version,
        "a no-op apply is a no-op"
    );
    let t1 = term1.as_str();
    assert_eq!(
        settled_events(&seen, "created", 2).await,
        [("ADDED".into(), t1.into()), ("MODIFIED".into(), t1.into())],
        "one event per change, none for the no-ops"
    );
    let applied_events = settled_events(&seen, "applied", 1).await;
    assert_eq!(applied_events.first(), Some(&("ADDED".into(), t1.into())));
    // On the emulator, the create and the patch that gave it data.
    assert_eq!(
        applied_events.len(),
        if site.enforces_rbac() { 1 } else { 2 }
    );

    // Cut off: the term ends at the sidecar's deadline. Writes that passed the
    // guard before it wait in the partition and time out (504, which kube-rs
    // retries); from the deadline on, each is refused at once (403, as the
    // fence refuses) and never sent.
    net.set(Mode::Hold);
    let cut = Instant::now();
    let mut refused: Vec<String> = Vec::new();
    for i in 0.. {
        assert!(cut.elapsed() < Duration::from_secs(10), "no write refused");
        let name = format!("late-{i}");
        let answer = api
            .create(&PostParams::default(), &configmap(&name, &[]))
            .await;
        let e = answer.expect_err("no write succeeds while cut off");
        let (code, reason, message) = refusal(&e).unwrap_or_else(|| panic!("a Status: {e:?}"));
        match code {
            403 => {
                assert_eq!(reason, "Forbidden", "{message}");
                assert!(
                    message.contains("refused by the leader-election sidecar, not sent"),
                    "{message}"
                );
                refused.push(name);
                if refused.len() == 5 {
                    break;
                }
            }
            504 => assert!(
                refused.is_empty(),
                "a write sent after one was refused: {message}"
            ),
            other => panic!("answered {other} {reason}: {message}"),
        }
    }
    // Reads still pass the guard: the list is sent (and waits in the partition).
    let list = tokio::time::timeout(
        Duration::from_millis(300),
        api.list_metadata(&Default::default()),
    )
    .await;
    assert!(
        list.is_err(),
        "a read is sent, not refused: it waits in the partition"
    );

    // Held until the term is over, the child stopped (a renew that waits in
    // the partition, let through before the deadline, would prolong the term).
    let child: u64 = env["CHILD_PID"].parse().expect("a pid");
    assert!(
        common::wait_gone(child, Duration::from_secs(10)).await,
        "the child is stopped at the end of the term"
    );
    // Healed: the sidecar leads again, in a new term; its new child starts.
    net.set(Mode::Pass);
    let env = child_env(&env_file, Duration::from_secs(20)).await;
    let term2 = env["LEADER_ELECTOR_TERM"].clone();
    assert_ne!(term2, term1, "a new term");
    for name in &refused {
        assert!(
            site.server
                .object(Resource::ConfigMap, &site.ns, name)
                .is_none(),
            "{name} was refused, yet stored"
        );
    }
    // The watch opened in the first term still streams: the first write of
    // the object in the new term changes its stamp (one event); the same
    // write again changes nothing.
    for _ in 0..3 {
        api.patch("created", &PatchParams::default(), &Patch::Merge(&merge))
            .await
            .expect("a merge patch in the new term");
    }
    assert_eq!(stored(site, "created").1, term2);
    let t2 = term2.as_str();
    assert_eq!(
        settled_events(&seen, "created", 3).await,
        [
            ("ADDED".into(), t1.into()),
            ("MODIFIED".into(), t1.into()),
            ("MODIFIED".into(), t2.into())
        ],
        "the watch outlived the term; the new term's stamp is one event"
    );
    assert!(!watch.is_finished(), "the watch is still open");
    watch.abort();
    common::sigterm(&sidecar);
    let status = tokio::time::timeout(Duration::from_secs(10), sidecar.wait())
        .await
        .expect("the sidecar exits")
        .expect("a status");
    assert!(status.success(), "{status:?}");
    assert!(
        !Path::new(proxied).exists(),
        "the child's kubeconfig is removed at exit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_stamps_the_childs_writes_streams_its_watch_and_refuses_writes_after_the_term() {
    let emu = Emulator::start().await.expect("emulator");
    proxied_child(&Site::emulator(&emu, "api-proxy")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
async fn the_proxy_stamps_the_childs_writes_streams_its_watch_and_refuses_writes_after_the_term_on_kube_apiserver()
 {
    let site = common::run_mode_site("api-proxy", &["get", "list", "watch", "create", "patch"]);
    proxied_child(&site).await;
}
