//! The sidecar records Kubernetes Events about leadership, as client-go's lock
//! does: `<identity> became leader` and `<identity> stopped leading`, reason
//! `LeaderElection`, on the Lease. Two real `serve` sidecars against the API
//! emulator: one leads, SIGTERM hands over to the other, SIGTERM stops that one
//! too; the Events are read back as an operator would, through the real kube
//! client, and through `kubectl` when it is installed. The same story runs
//! against a real kube-apiserver (`test_kit::apiserver`), the sidecars
//! authenticated as the ServiceAccount `deploy/sidecar.yaml` binds to the Role
//! of `deploy/rbac.yaml`, both applied with kubectl: that Role is enough for
//! serve mode, Events included.
//!
//! The Events go out through `Lock::leadership_changed`, which the sidecar's lock
//! reaches only through the metrics wrapper (`election_ops::ObservedLock`): a
//! wrapper that drops it records none, and this test fails.

mod common;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::Site;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use kube_emulator::Emulator;
use test_kit::apiserver::ApiServer;
use tokio::process::{Child, Command};

const LEASE: &str = "evented";

/// One leadership Event as read back: (message, reason, involved object's kind,
/// involved object's name).
type Seen = (String, String, String, String);

/// A `serve` sidecar named `id` campaigning for [`LEASE`] on `site`; its stderr
/// is kept for failure messages.
fn sidecar(site: &Site<'_>, id: &str, addr: &str) -> Child {
    common::serve(&site.kubeconfig(id), id, LEASE, addr)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the sidecar")
}

/// SIGTERM, then waits (10 s at most) for a clean exit; the sidecar's output.
async fn stop(child: Child) -> Output {
    common::sigterm(&child);
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("the sidecar exits after SIGTERM")
        .expect("its output");
    assert!(out.status.success(), "{out:?}");
    out
}

/// Which of the sidecars serving on `addrs` leads, waiting up to `within`;
/// checks on the way that never two do.
async fn leader(addrs: &[&str], within: Duration) -> usize {
    let start = Instant::now();
    loop {
        let mut leading = Vec::new();
        for (i, addr) in addrs.iter().enumerate() {
            if let Some((_, body)) = common::get_path(addr, "/status").await {
                let status: serde_json::Value = serde_json::from_str(&body).expect("JSON status");
                if status["is_leader"] == true {
                    leading.push(i);
                }
            }
        }
        assert!(leading.len() <= 1, "two leaders at once: {leading:?}");
        if let [i] = leading[..] {
            return i;
        }
        assert!(start.elapsed() < within, "no leader within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The Events in `ns`, through the kube client (the typed `core/v1` list).
async fn events_by_client(client: &kube::Client, ns: &str) -> Vec<Seen> {
    let api: Api<Event> = Api::namespaced(client.clone(), ns);
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    let mut seen: Vec<Seen> = api
        .list(&ListParams::default())
        .await
        .expect("list Events through the kube client")
        .items
        .iter()
        .map(|e| {
            (
                text(&e.message),
                text(&e.reason),
                text(&e.involved_object.kind),
                text(&e.involved_object.name),
            )
        })
        .collect();
    seen.sort();
    seen
}

/// The Events in `ns`, through `kubectl get events -o json` with the
/// kubeconfig at `kubeconfig`; `None` when kubectl is not installed.
async fn events_by_kubectl(kubeconfig: &Path, ns: &str) -> Option<Vec<Seen>> {
    let out = match Command::from(kube_emulator::kubectl(kubeconfig))
        .args(["get", "events", "--namespace", ns, "-o", "json"])
        .output()
        .await
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("kubectl could not be run: {e}"),
    };
    assert!(out.status.success(), "kubectl get events: {out:?}");
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("kubectl's JSON");
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_owned();
    let mut seen: Vec<Seen> = list["items"]
        .as_array()
        .expect("an item list")
        .iter()
        .map(|e| {
            (
                text(&e["message"]),
                text(&e["reason"]),
                text(&e["involvedObject"]["kind"]),
                text(&e["involvedObject"]["name"]),
            )
        })
        .collect();
    seen.sort();
    Some(seen)
}

/// The Events expected: each message once, reason `LeaderElection`, on the Lease.
fn expected(messages: &[String]) -> Vec<Seen> {
    let mut want: Vec<Seen> = messages
        .iter()
        .map(|m| {
            (
                m.clone(),
                "LeaderElection".into(),
                "Lease".into(),
                LEASE.into(),
            )
        })
        .collect();
    want.sort();
    want
}

/// Waits (5 s at most: the sidecar writes its Events in the background) until the
/// kube client lists exactly the Events of `messages`, and checks that kubectl,
/// when present, lists the same.
async fn check_events(
    client: &kube::Client,
    ns: &str,
    kubectl: Option<&Path>,
    messages: &[String],
    logs: &str,
) {
    let want = expected(messages);
    let start = Instant::now();
    let mut seen = events_by_client(client, ns).await;
    while seen != want && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        seen = events_by_client(client, ns).await;
    }
    assert_eq!(seen, want, "the Events, through the kube client; {logs}");
    if let Some(kubeconfig) = kubectl {
        let by_kubectl = events_by_kubectl(kubeconfig, ns)
            .await
            .expect("kubectl was found before");
        assert_eq!(by_kubectl, want, "the Events, through kubectl; {logs}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecars_record_became_and_stopped_leading_events_through_a_handover() {
    let emu = Emulator::start().await.expect("emulator");
    handover_with_events(&Site::emulator(&emu, "events")).await;
}

/// The story on kube-apiserver, the sidecars as the ServiceAccount `my-app`
/// of `deploy/sidecar.yaml` under `deploy/rbac.yaml`'s Role: no request of
/// theirs is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
async fn sidecars_record_became_and_stopped_leading_events_through_a_handover_on_kube_apiserver() {
    let site = tokio::task::block_in_place(|| {
        Site::apiserver(
            ApiServer::shared(),
            "events",
            &["rbac.yaml", "sidecar.yaml"],
            "my-app",
        )
    });
    handover_with_events(&site).await;
}

/// Two `serve` sidecars on `site`: one leads and records it; SIGTERM hands
/// over to the other; SIGTERM stops that one too; the four Events, and the
/// Lease released.
async fn handover_with_events(site: &Site<'_>) {
    let ns = site.ns.as_str();
    let ids = ["events-a", "events-b"];
    let addrs = [common::free_addr(), common::free_addr()];
    let mut sidecars: Vec<Option<Child>> = ids
        .iter()
        .zip(&addrs)
        .map(|(id, addr)| Some(sidecar(site, id, addr)))
        .collect();
    let addr_refs = [addrs[0].as_str(), addrs[1].as_str()];

    // The checker is a third party with its own token: an operator's client.
    let client = site.server.client("operator");
    let kubeconfig = site.operator.clone();
    let kubectl = match events_by_kubectl(&kubeconfig, ns).await {
        Some(_) => Some(kubeconfig.as_path()),
        None => {
            eprintln!(
                "NOTE: kubectl is not installed (not found on PATH): the Events are \
                 checked through the kube client only"
            );
            None
        }
    };

    // One leads (after the strict lock delay, one lease from its create).
    let first = leader(&addr_refs, Duration::from_secs(15)).await;
    let second = 1 - first;
    let (first_id, second_id) = (ids[first], ids[second]);
    check_events(
        &client,
        ns,
        kubectl,
        &[format!("{first_id} became leader")],
        "both sidecars still run",
    )
    .await;

    // SIGTERM: it drains, releases, and the other takes over.
    let out = stop(sidecars[first].take().expect("running")).await;
    let first_logs = String::from_utf8_lossy(&out.stderr).into_owned();
    let took_over = leader(&[addr_refs[second]], Duration::from_secs(10)).await;
    assert_eq!(took_over, 0, "{first_logs}");
    check_events(
        &client,
        ns,
        kubectl,
        &[
            format!("{first_id} became leader"),
            format!("{first_id} stopped leading"),
            format!("{second_id} became leader"),
        ],
        &format!("first leader's logs: {first_logs}"),
    )
    .await;

    // SIGTERM to the second: its stop is recorded too.
    let out = stop(sidecars[second].take().expect("running")).await;
    let second_logs = String::from_utf8_lossy(&out.stderr).into_owned();
    check_events(
        &client,
        ns,
        kubectl,
        &[
            format!("{first_id} became leader"),
            format!("{first_id} stopped leading"),
            format!("{second_id} became leader"),
            format!("{second_id} stopped leading"),
        ],
        &format!("first leader's logs: {first_logs}\nsecond leader's logs: {second_logs}"),
    )
    .await;
    let lease = site
        .server
        .object(kube_emulator::Resource::Lease, ns, LEASE)
        .expect("the Lease exists");
    assert_eq!(lease["spec"]["holderIdentity"], "", "released: {lease}");
    site.assert_nothing_forbidden(&first_logs);
    site.assert_nothing_forbidden(&second_logs);
}
