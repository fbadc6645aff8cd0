//! `--coordinated` against the API emulator acting as the coordinator
//! (docs/faults.md C3, C6): two real sidecar processes publish their
//! LeaseCandidates; the one at 1.0.0 leads; one at 0.9.0 joins and the
//! coordinator hands it the Lease (the 1.0.0 sidecar releases on the
//! `preferredHolder`); `kubectl get leasecandidates` lists both with their
//! versions; on SIGTERM the 0.9.0 sidecar deletes its candidacy, then releases,
//! and the coordinator gives the Lease back to the 1.0.0 one. The requests they
//! made are exactly those `deploy/rbac-coordinated.yaml` grants. The same story
//! runs with kube-apiserver's own coordinator, the sidecars authenticated as
//! the ServiceAccount `coordinated` after `kubectl apply -f
//! deploy/rbac-coordinated.yaml`: under its RBAC, that Role is enough.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Site, get};
use kube_emulator::{Coordinator, Emulator, Resource};
use test_kit::apiserver::ApiServer;
use test_kit::rbac::{not_granted, role_rules, unused};
use tokio::process::{Child, Command};

const LEASE: &str = "coordinated";
const RBAC_YAML: &str = include_str!("../../../deploy/rbac-coordinated.yaml");

/// The candidacy of `verbs-a` as an earlier run of it left it.
const EARLIER_CANDIDACY: &str = "apiVersion: coordination.k8s.io/v1beta1
kind: LeaseCandidate
metadata:
  name: verbs-a
spec:
  leaseName: verbs
  binaryVersion: 0.9.0
  emulationVersion: 0.9.0
  strategy: OldestEmulationVersion
";

/// A sidecar `id` at `version`, serving on `addr`; its stderr kept.
fn sidecar(kubeconfig: &std::path::Path, id: &str, version: &str, addr: &str) -> Child {
    Command::new(common::BIN)
        .args(common::FAST)
        .args(["--coordinated", "--binary-version", version])
        .args(["serve", "--lease", LEASE, "--addr", addr])
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("ELECTION_IDENTITY", id)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn")
}

/// Waits until `GET /` on `addr` names `holder`.
async fn wait_holder(addr: &str, holder: &str, within: Duration) {
    let start = Instant::now();
    let want = format!(r#"{{"name":"{holder}"}}"#);
    let mut last = None;
    while start.elapsed() < within {
        last = get(addr).await;
        if last.as_deref() == Some(want.as_str()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{addr} never named {holder} within {within:?}; last {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p leader-elector --test coordinated -- --ignored"]
async fn c6_coordinated_sidecars_follow_the_coordinators_choice() {
    let emu = Emulator::builder()
        .coordinator(Coordinator::default().scaled(0.1))
        .start()
        .await
        .expect("emulator");
    let dir = common::temp("coordinated");
    let kubeconfig = dir.join("kubeconfig");
    emu.write_kubeconfig(&kubeconfig, "sidecars")
        .expect("kubeconfig");
    let site = Site::emulator(&emu, "coordinated");
    follow_the_coordinator(&site, &kubeconfig, Duration::from_secs(15)).await;

    // deploy/rbac-coordinated.yaml grants every request the sidecars made, and
    // no more.
    let counts = emu.request_counts();
    let rules = role_rules(RBAC_YAML);
    assert_eq!(
        not_granted(&counts, "sidecars", &rules),
        [],
        "rules: {rules:?}"
    );
    assert_eq!(unused(&counts, "sidecars", &rules), [], "rules: {rules:?}");
    let _ = std::fs::remove_dir_all(dir);
}

/// The story with kube-apiserver's coordinator (its leader-election
/// controller: 5 s elections), the sidecars as the ServiceAccount
/// `coordinated` of `deploy/rbac-coordinated.yaml`, applied with kubectl: no
/// request of theirs refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
async fn c6_coordinated_sidecars_follow_the_coordinators_choice_on_kube_apiserver() {
    let site = tokio::task::block_in_place(|| {
        Site::apiserver(
            ApiServer::shared(),
            "coordinated",
            &["rbac-coordinated.yaml"],
            "coordinated",
        )
    });
    let kubeconfig = site.kubeconfig("sidecars");
    let started = Instant::now();
    follow_the_coordinator(&site, &kubeconfig, Duration::from_secs(60)).await;
    eprintln!("kube-apiserver: the story took {:?}", started.elapsed());
}

/// Each verb of `deploy/rbac-coordinated.yaml`'s Role is needed by a
/// coordinated sidecar: with one removed (applied with kubectl), the sidecar,
/// run as the ServiceAccount `coordinated`, logs kube-apiserver's refusal
/// naming the verb and the resource, while it campaigns or leads, or on its
/// way out after a SIGTERM. `update` on its candidacy is used when one is
/// there already (a restarted container's): the admin makes it first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
async fn without_any_verb_of_the_coordinated_role_the_sidecar_names_it_on_kube_apiserver() {
    let verbs = [
        ("leases", "get", None),
        ("leases", "update", None),
        ("leases", "watch", None),
        ("leasecandidates", "get", None),
        ("leasecandidates", "create", None),
        ("leasecandidates", "update", Some(EARLIER_CANDIDACY)),
        ("leasecandidates", "watch", None),
        ("leasecandidates", "delete", None),
        ("events", "create", None),
    ];
    common::each_missing_verb_is_named(
        ApiServer::shared(),
        "rbac-coordinated.yaml",
        &[],
        "coordinated",
        &["--coordinated", "--binary-version", "1.0.0"],
        &verbs,
    )
    .await;
}

/// Two coordinated sidecars with `kubeconfig` on `site`, each step within
/// `within`: side-a (1.0.0) leads; side-b (0.9.0) joins and the coordinator
/// hands it the Lease; kubectl lists both candidacies with their versions;
/// SIGTERM to side-b deletes its candidacy and releases, and the Lease goes
/// back to side-a. On kube-apiserver, neither sidecar's log names a refusal.
async fn follow_the_coordinator(site: &Site<'_>, kubeconfig: &std::path::Path, within: Duration) {
    let ns = site.ns.as_str();
    let (addr_a, addr_b) = (common::free_addr(), common::free_addr());
    let a = sidecar(kubeconfig, "side-a", "1.0.0", &addr_a);
    wait_holder(&addr_a, "side-a", within).await;
    common::wait_leading(&addr_a, within).await;

    let b = sidecar(kubeconfig, "side-b", "0.9.0", &addr_b);
    wait_holder(&addr_a, "side-b", within).await;
    let status = common::wait_leading(&addr_b, within).await;
    assert_eq!(status["is_leader"], true, "{status}");

    // kubectl lists the candidacies with their versions (its own columns:
    // the emulator prints no Tables).
    let columns = "-o=custom-columns=NAME:.metadata.name,VERSION:.spec.binaryVersion";
    match kube_emulator::kubectl_output(
        &site.operator,
        &["get", "leasecandidates", "-n", ns, columns],
        None,
    ) {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{text}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            for (id, version) in [("side-a", "1.0.0"), ("side-b", "0.9.0")] {
                assert!(
                    text.lines().any(|l| l.contains(id) && l.contains(version)),
                    "{id} {version} not listed:\n{text}"
                );
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("kubectl is not installed: this test uses it as the client")
        }
        Err(e) => panic!("kubectl could not be run: {e}"),
    }

    // SIGTERM: the candidacy goes first, then the Lease is released, and the
    // coordinator gives it back to side-a.
    common::sigterm(&b);
    let out = tokio::time::timeout(within, b.wait_with_output())
        .await
        .expect("exits")
        .expect("status");
    let b_logs = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{:?}: {b_logs}", out.status);
    assert!(
        site.server
            .object(Resource::LeaseCandidate, ns, "side-b")
            .is_none(),
        "side-b's candidacy was deleted"
    );
    wait_holder(&addr_a, "side-a", within).await;
    let status = common::wait_leading(&addr_a, within).await;
    assert_eq!(status["is_leader"], true, "{status}");
    common::sigterm(&a);
    let out = tokio::time::timeout(within, a.wait_with_output())
        .await
        .expect("exits")
        .expect("status");
    let a_logs = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{:?}: {a_logs}", out.status);
    site.assert_nothing_forbidden(&a_logs);
    site.assert_nothing_forbidden(&b_logs);
}

#[test]
fn version_flags_need_coordinated_and_bad_versions_are_refused() {
    let out = std::process::Command::new(common::BIN)
        .args(["--binary-version", "1.0.0", "serve", "--lease", "x"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--coordinated"), "{err}");
}
