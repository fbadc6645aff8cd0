//! `serve` mode against the API emulator: `GET /` names the holder, `/healthz`,
//! `/readyz`, `/status` and `/metrics` answer, and SIGTERM releases the Lease.
//! On a real kube-apiserver, each verb of `deploy/rbac.yaml`'s Role is needed:
//! without it the sidecar's log names the refused verb.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{get, get_path};
use kube_emulator::Emulator;
use test_kit::apiserver::{ApiServer, Server};
use tokio::io::{AsyncBufReadExt, BufReader};
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
        .args([
            "--lease-duration",
            "2s",
            "--renew-deadline",
            "1.5s",
            "--retry-period",
            "250ms",
        ])
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
    let start = Instant::now();
    let mut last = None;
    while start.elapsed() < Duration::from_secs(15) {
        last = get(&addr).await;
        if last.as_deref() == Some(r#"{"name":"serve-a"}"#) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(last.as_deref(), Some(r#"{"name":"serve-a"}"#));

    // Health, readiness, status and metrics on the same address.
    let (line, body) = get_path(&addr, "/healthz").await.expect("healthz");
    assert!(line.contains(" 200 "), "{line}: {body}");
    let (line, _) = get_path(&addr, "/readyz").await.expect("readyz");
    assert!(line.contains(" 200 "), "{line}");
    // It names itself as soon as its create lands, and leads after the strict lock
    // delay (one lease from the create).
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
    let server = ApiServer::shared();
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
    let rbac = std::fs::read_to_string(deploy.join("rbac.yaml")).expect("deploy/rbac.yaml");
    let dir = common::temp("verbs");
    let verbs = [
        ("leases", "get"),
        ("leases", "create"),
        ("leases", "update"),
        ("leases", "watch"),
        ("events", "create"),
    ];
    for (resource, verb) in verbs {
        // The Role as shipped, less one verb on one resource (less the rule,
        // if that was its only verb: a rule without verbs is invalid).
        let mut narrower = String::new();
        for (i, rule) in rbac.split("\n  - apiGroups: ").enumerate() {
            let on_resource = rule.contains(&format!("resources: [\"{resource}\"]"));
            let mut kept_rule = String::new();
            let mut left = 1;
            for line in rule.lines() {
                let line = match line.trim().strip_prefix("verbs: ") {
                    Some(list) if on_resource => {
                        let kept: Vec<&str> = list
                            .trim_matches(['[', ']'])
                            .split(", ")
                            .filter(|v| *v != format!("\"{verb}\""))
                            .collect();
                        assert_ne!(kept.len(), list.split(", ").count(), "{verb} is granted");
                        left = kept.len();
                        line.replace(list, &format!("[{}]", kept.join(", ")))
                    }
                    _ => line.to_owned(),
                };
                kept_rule.push_str(&line);
                kept_rule.push('\n');
            }
            if i == 0 {
                narrower.push_str(&kept_rule);
            } else if left > 0 {
                narrower.push_str("  - apiGroups: ");
                narrower.push_str(&kept_rule);
            }
        }
        let role = dir.join(format!("rbac-without-{verb}-{resource}.yaml"));
        std::fs::write(&role, &narrower).expect("write");
        let kubeconfig = dir.join(format!("without-{verb}-{resource}.kubeconfig"));
        let ns = tokio::task::block_in_place(|| {
            let ns = server.namespace();
            server.kubectl_apply(&ns, &[role.clone(), deploy.join("sidecar.yaml")]);
            server.write_service_account_kubeconfig(&ns, "my-app", &kubeconfig);
            let account = server.service_account_config(&ns, "my-app");
            let (probe_verb, probe_resource) = if verb == "get" {
                ("update", "leases")
            } else {
                ("get", "leases")
            };
            server.wait_allowed(
                &account,
                &ns,
                probe_verb,
                "coordination.k8s.io",
                probe_resource,
            );
            ns
        });
        let addr = common::free_addr();
        let mut sidecar = Command::new(common::BIN)
            .args(["--lease-duration", "2s", "--renew-deadline", "1.5s"])
            .args(["--retry-period", "250ms"])
            .args(["serve", "--lease", "verbs", "--addr", &addr])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .env("ELECTION_IDENTITY", "verbs-a")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn");
        let mut lines = BufReader::new(sidecar.stderr.take().expect("piped")).lines();
        let wanted = format!("cannot {verb} resource \"{resource}\"");
        let mut seen = Vec::new();
        let found = tokio::time::timeout(Duration::from_secs(15), async {
            while let Ok(Some(line)) = lines.next_line().await {
                let found = line.contains(&wanted);
                seen.push(line);
                if found {
                    return true;
                }
            }
            false
        })
        .await;
        common::sigkill(&sidecar);
        let _ = sidecar.wait().await;
        assert_eq!(
            found,
            Ok(true),
            "in {ns}, without {verb} on {resource}: no line names {wanted:?}: {seen:#?}"
        );
        eprintln!(
            "without {verb} on {resource}: {}",
            seen.last().expect("the line")
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
