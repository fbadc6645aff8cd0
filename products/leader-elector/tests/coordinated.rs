//! `--coordinated` against the API emulator acting as the coordinator
//! (docs/faults.md C3, C6): two real sidecar processes publish their
//! LeaseCandidates; the one at 1.0.0 leads; one at 0.9.0 joins and the
//! coordinator hands it the Lease (the 1.0.0 sidecar releases on the
//! `preferredHolder`); `kubectl get leasecandidates` lists both with their
//! versions; on SIGTERM the 0.9.0 sidecar deletes its candidacy, then releases,
//! and the coordinator gives the Lease back to the 1.0.0 one. The requests they
//! made are exactly those `deploy/rbac-coordinated.yaml` grants.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::get;
use kube_emulator::rbac::{not_granted, role_rules, unused};
use kube_emulator::{Coordinator, Emulator, Resource};
use tokio::process::{Child, Command};

const LEASE: &str = "coordinated";
const RBAC_YAML: &str = include_str!("../../../deploy/rbac-coordinated.yaml");

/// A sidecar `id` at `version`, serving on `addr`.
fn sidecar(kubeconfig: &std::path::Path, id: &str, version: &str, addr: &str) -> Child {
    Command::new(common::BIN)
        .args([
            "--lease-duration",
            "2s",
            "--renew-deadline",
            "1.5s",
            "--retry-period",
            "250ms",
        ])
        .args(["--coordinated", "--binary-version", version])
        .args(["serve", "--lease", LEASE, "--addr", addr])
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("ELECTION_IDENTITY", id)
        .stdin(Stdio::null())
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
    let (addr_a, addr_b) = (common::free_addr(), common::free_addr());
    let mut a = sidecar(&kubeconfig, "side-a", "1.0.0", &addr_a);
    let within = Duration::from_secs(15);
    wait_holder(&addr_a, "side-a", within).await;
    common::wait_leading(&addr_a, within).await;

    let mut b = sidecar(&kubeconfig, "side-b", "0.9.0", &addr_b);
    wait_holder(&addr_a, "side-b", within).await;
    let status = common::wait_leading(&addr_b, within).await;
    assert_eq!(status["is_leader"], true, "{status}");

    // kubectl lists the candidacies with their versions.
    match kube_emulator::kubectl_output(
        &kubeconfig,
        &["get", "leasecandidates", "-n", "default"],
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
    let code = tokio::time::timeout(within, b.wait())
        .await
        .expect("exits")
        .expect("status");
    assert!(code.success(), "{code:?}");
    assert!(
        emu.object(Resource::LeaseCandidate, "default", "side-b")
            .is_none(),
        "side-b's candidacy was deleted"
    );
    wait_holder(&addr_a, "side-a", within).await;
    let status = common::wait_leading(&addr_a, within).await;
    assert_eq!(status["is_leader"], true, "{status}");
    common::sigterm(&a);
    let _ = tokio::time::timeout(within, a.wait()).await;

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
