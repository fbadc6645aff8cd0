//! `serve` mode against the API emulator: `GET /` names the holder (itself only
//! while it leads), `/leader` answers whether it leads, `/healthz`, `/readyz`,
//! `/status` and `/metrics` answer, and SIGTERM releases the Lease.
//! On a real kube-apiserver, each verb of `deploy/rbac.yaml`'s Role is needed:
//! without it the sidecar's log names the refused verb.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{get, get_path};
use kube_emulator::Emulator;
use test_kit::apiserver::ApiServer;
use tokio::process::Command;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_names_the_holder() {
    let emu = Emulator::start().await.expect("emulator");
    let dir = common::temp("serve");
    let kubeconfig = dir.join("kubeconfig");
    emu.write_kubeconfig(&kubeconfig, "serve-a")
        .expect("kubeconfig");
    let addr = common::free_addr();
    let mut s = Command::new(common::BIN)
        // Go-style durations, as client-go's flags take them.
        .args(common::FAST)
        .args(["serve", "--lease", "served", "--addr", &addr])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        // `--kubeconfig` wins over the environment.
        .env("KUBECONFIG", dir.join("missing"))
        .env("ELECTION_IDENTITY", "serve-a")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    // It holds the Lease as soon as its create lands, and leads after the
    // strict lock delay (one lease from the create): meanwhile `GET /` does not
    // name it and `/leader` answers 503. Whenever `GET /` names it, `/status`
    // read after says it leads (it cannot lose in this test).
    let start = Instant::now();
    let (mut named_early, mut last) = (false, None);
    while start.elapsed() < Duration::from_secs(15) {
        last = get(&addr).await;
        let (Some(_), Some((line, body))) = (&last, get_path(&addr, "/leader").await) else {
            // Not serving yet.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let status = common::status(&addr).await;
        if last.as_deref() == Some(r#"{"name":"serve-a"}"#) {
            assert_eq!(
                status["is_leader"], true,
                "named while not leading: {status}"
            );
            assert!(line.contains(" 200 "), "{line}: {body}");
            assert_eq!(body, r#"{"is_leader":true}"#);
            break;
        }
        // Its view names it, and it does not lead: the lock delay (its
        // published role reads `Acquiring` or, when the create's watch event
        // came before the create's answer, still `Follower`).
        if status["holder"] == "serve-a" && status["is_leader"] == false {
            assert_eq!(last.as_deref(), Some(r#"{"name":""}"#), "{status}");
            assert!(line.contains(" 503 "), "{line}: {body}");
            assert_eq!(body, r#"{"is_leader":false}"#);
            named_early = true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(last.as_deref(), Some(r#"{"name":"serve-a"}"#));
    assert!(named_early, "the strict lock delay was observed, unnamed");

    // Health, readiness, status and metrics on the same address.
    let (line, body) = get_path(&addr, "/healthz").await.expect("healthz");
    assert!(line.contains(" 200 "), "{line}: {body}");
    let (line, _) = get_path(&addr, "/readyz").await.expect("readyz");
    assert!(line.contains(" 200 "), "{line}");
    let status = common::wait_leading(&addr, Duration::from_secs(10)).await;
    assert_eq!(status["is_leader"], true, "{status}");
    assert_eq!(status["role"], "Leader", "{status}");
    assert_eq!(status["holder"], "serve-a", "{status}");
    let (line, metrics) = get_path(&addr, "/metrics").await.expect("metrics");
    assert!(line.contains(" 200 "), "{line}");
    assert!(
        metrics.contains("leader_election_master_status{name=\"served\"} 1"),
        "{metrics}"
    );
    let (line, _) = get_path(&addr, "/nothing").await.expect("404");
    assert!(line.contains(" 404 "), "{line}");

    // SIGTERM: the sidecar releases the Lease (holder present and empty) and exits 0.
    common::sigterm(&s);
    let status = tokio::time::timeout(Duration::from_secs(10), s.wait())
        .await
        .expect("exits after SIGTERM")
        .expect("wait");
    assert!(status.success(), "{status:?}");
    let lease = emu
        .object(kube_emulator::Resource::Lease, "default", "served")
        .expect("the lease exists");
    assert_eq!(lease["spec"]["holderIdentity"], "", "released: {lease}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Each verb of the Role of `deploy/rbac.yaml` is needed by a `serve`
/// sidecar: with one removed (the rest applied with kubectl, with
/// `deploy/sidecar.yaml` binding its ServiceAccount), the sidecar, run as that
/// account, logs kube-apiserver's refusal, which names the verb and the
/// resource: `cannot <verb> resource "<resource>"`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
async fn without_any_verb_of_the_shipped_role_the_sidecar_names_it_on_kube_apiserver() {
    let verbs = [
        ("leases", "get", None),
        ("leases", "create", None),
        ("leases", "update", None),
        ("leases", "watch", None),
        ("events", "create", None),
    ];
    common::each_missing_verb_is_named(
        ApiServer::shared(),
        "rbac.yaml",
        &["sidecar.yaml"],
        "my-app",
        &[],
        &verbs,
    )
    .await;
}
