//! `leader-elector fence-policy`: the README's command prints exactly the
//! manifests the README shows (so the README cannot drift from the generator),
//! and bad input ends it with one line and exit code 2 (never a half-printed
//! manifest).

mod common;

use std::process::{Command, Output, Stdio};

fn run(args: &[&str]) -> Output {
    Command::new(common::BIN)
        .args(args)
        .env("KUBECONFIG", "/nonexistent/leader-elector-tests/kubeconfig")
        .stdin(Stdio::null())
        .output()
        .expect("run the sidecar")
}

/// The README's `fence-policy` command (its arguments) and the YAML block after it.
fn readme_example() -> (Vec<String>, String) {
    let readme = include_str!("../../../README.md");
    let section = readme
        .split("### Server-side fencing")
        .nth(1)
        .expect("the README's fencing section");
    let command = section
        .split("```text\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the command block");
    let args = command
        .replace("\\\n", " ")
        .split('|')
        .next()
        .expect("the command before the pipe")
        .split_whitespace()
        .skip(1) // leader-elector
        .map(str::to_owned)
        .collect();
    let yaml = section
        .split("```yaml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the manifests block");
    (args, yaml.to_owned())
}

#[test]
fn the_readmes_manifests_are_what_the_command_prints() {
    let (args, yaml) = readme_example();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert!(args.contains(&"fence-policy"), "{args:?}");
    let out = run(&args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), yaml);
}

#[test]
fn bad_input_prints_no_manifest_and_one_line() {
    for (args, says) in [
        (
            &[
                "fence-policy",
                "--lease",
                "orders",
                "--protect",
                "v1/configmaps",
            ][..],
            "needs --namespace",
        ),
        (
            &[
                "--namespace",
                "shop",
                "fence-policy",
                "--lease",
                "orders",
                "--protect",
                "configmaps",
            ],
            "invalid resource \"configmaps\"",
        ),
        (
            &[
                "--namespace",
                "Shop",
                "fence-policy",
                "--lease",
                "orders",
                "--protect",
                "v1/configmaps",
            ],
            "invalid namespace \"Shop\"",
        ),
        (
            &["--namespace", "shop", "fence-policy", "--lease", "orders"],
            "--protect",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: printed {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// Runs kubectl against the emulator with `stdin`; its output, whatever its status.
fn kubectl(kubeconfig: &std::path::Path, args: &[&str], stdin: &str) -> Output {
    kube_emulator::kubectl_output(kubeconfig, args, Some(stdin)).unwrap_or_else(|e| {
        match e.kind() {
            std::io::ErrorKind::NotFound => {
                panic!("kubectl is not installed: this test uses it as the client")
            }
            _ => panic!("kubectl could not be run: {e}"),
        }
    })
}

/// The README's manifests go into a cluster with `kubectl apply -f -` (the
/// emulator, checking every field against the types' schema), and kubectl lists
/// the policy and its binding; a manifest with a field the type lacks is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_applies_the_manifests_and_lists_them() {
    let emu = kube_emulator::Emulator::start().await.expect("emulator");
    let dir = common::temp("fence-policy");
    let kubeconfig = dir.join("kubeconfig");
    emu.write_kubeconfig(&kubeconfig, "operator")
        .expect("kubeconfig");
    let (args, yaml) = readme_example();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let printed = String::from_utf8(run(&args).stdout).expect("UTF-8");
    assert_eq!(printed, yaml);

    let out = kubectl(&kubeconfig, &["apply", "-f", "-"], &printed);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            "validatingadmissionpolicy.admissionregistration.k8s.io/fence-orders created",
            "validatingadmissionpolicybinding.admissionregistration.k8s.io/fence-orders created",
        ]
    );
    for (kind, listed) in [
        (
            "validatingadmissionpolicies",
            "validatingadmissionpolicy.admissionregistration.k8s.io/fence-orders",
        ),
        (
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicybinding.admissionregistration.k8s.io/fence-orders",
        ),
    ] {
        let out = kubectl(&kubeconfig, &["get", kind, "-o", "name"], "");
        assert!(out.status.success(), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), listed);
    }
    let stored = emu
        .object(
            kube_emulator::Resource::ValidatingAdmissionPolicy,
            "",
            "fence-orders",
        )
        .expect("stored");
    assert_eq!(stored["spec"]["paramKind"]["kind"], "Lease");

    // A misspelt field is refused, and nothing is stored.
    let broken = printed.replacen("failurePolicy: Fail", "failurePolicyy: Fail", 1);
    let out = kubectl(
        &kubeconfig,
        &["apply", "--dry-run=server", "-f", "-"],
        &broken.replace("fence-orders", "fence-broken"),
    );
    assert!(!out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("failurePolicyy"), "{stderr}");
    assert_eq!(
        emu.object(
            kube_emulator::Resource::ValidatingAdmissionPolicy,
            "",
            "fence-broken"
        ),
        None
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An emulator with the fencing policy of the Lease `default/<lease>` over
/// ConfigMaps applied with kubectl, as `fence-policy` prints it; and a directory
/// for kubeconfigs.
async fn fenced(lease: &str) -> (kube_emulator::Emulator, std::path::PathBuf) {
    let emu = kube_emulator::Emulator::start().await.expect("emulator");
    let dir = common::temp(&format!("fence-{lease}"));
    let admin = dir.join("admin.kubeconfig");
    emu.write_kubeconfig(&admin, "admin").expect("kubeconfig");
    let printed = run(&[
        "--namespace",
        "default",
        "fence-policy",
        "--lease",
        lease,
        "--protect",
        "v1/configmaps",
    ]);
    let yaml = String::from_utf8(printed.stdout).expect("UTF-8");
    let out = kubectl(&admin, &["apply", "-f", "-"], &yaml);
    assert!(out.status.success(), "{out:?}");
    (emu, dir)
}

/// A sidecar `id` in `run` mode on the Lease `default/<lease>` (2 s lease), its
/// child `sh -c <script>`, where `{kc}` in the script is the child's kubeconfig.
fn run_mode(
    emu: &kube_emulator::Emulator,
    dir: &std::path::Path,
    id: &str,
    lease: &str,
    script: &str,
) -> tokio::process::Child {
    let kubeconfig = dir.join(format!("{id}.kubeconfig"));
    emu.write_kubeconfig(&kubeconfig, id).expect("kubeconfig");
    let script = script.replace("{kc}", kubeconfig.to_str().expect("UTF-8 path"));
    tokio::process::Command::new(common::BIN)
        .args(["--lease-duration", "2s", "--renew-deadline", "1500ms"])
        .args(["--retry-period", "250ms", "--namespace", "default", "run"])
        .args(["--lease", lease, "--", "sh", "-c", &script])
        .env("KUBECONFIG", &kubeconfig)
        .env("ELECTION_IDENTITY", id)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the sidecar")
}

/// The sidecar's documented way to fence an application: in `run` mode the child
/// gets `LEADER_ELECTOR_IDENTITY` and `LEADER_ELECTOR_TERM`, and stamps its writes
/// with them (`election.rs/holder`, `election.rs/term`). With the policy applied,
/// the child's stamped write passes and an unstamped one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_mode_child_that_stamps_its_writes_passes_the_fence() {
    let (emu, dir) = fenced("fenced").await;
    // The child: one stamped create, one unstamped, each reported in a file.
    let script = format!(
        r#"stamped='{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"stamped","annotations":{{"election.rs/holder":"'"$LEADER_ELECTOR_IDENTITY"'","election.rs/term":"'"$LEADER_ELECTOR_TERM"'"}}}}}}'
echo "$stamped" | kubectl --kubeconfig {{kc}} create -f - > {dir}/stamped.out 2>&1; echo $? >> {dir}/stamped.out
kubectl --kubeconfig {{kc}} create configmap bare > {dir}/bare.out 2>&1; echo $? >> {dir}/bare.out
sleep 60"#,
        dir = dir.display()
    );
    let mut sidecar = run_mode(&emu, &dir, "app-0", "fenced", &script);
    let done = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .ok()
            .filter(|s| s.lines().count() >= 2)
    };
    let start = std::time::Instant::now();
    while done("stamped.out").is_none() || done("bare.out").is_none() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the child did not write"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let stamped = done("stamped.out").unwrap();
    assert!(
        stamped.trim_end().ends_with('0'),
        "the stamped write: {stamped}"
    );
    assert!(
        emu.object(kube_emulator::Resource::ConfigMap, "default", "stamped")
            .is_some()
    );
    let bare = done("bare.out").unwrap();
    assert!(
        bare.contains("denied request: fenced by fence-fenced"),
        "the unstamped write: {bare}"
    );
    assert!(
        emu.object(kube_emulator::Resource::ConfigMap, "default", "bare")
            .is_none()
    );
    common::sigterm(&sidecar);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), sidecar.wait()).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// docs/faults.md N16 with real processes: the leading sidecar is stopped
/// (SIGSTOP) while its child keeps writing with the term it was started with;
/// another sidecar takes over, and from its acquisition on the API server refuses
/// every write of the stopped leader's child (none is committed after the new
/// holder's Lease write), until the sidecar, continued (SIGCONT), stops its child.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n16_a_stopped_sidecars_child_is_fenced_off_by_the_server_after_a_takeover() {
    use kube_emulator::{Resource, Verb};
    let (emu, dir) = fenced("stop").await;
    // A child that writes a stamped ConfigMap every 50 ms, each under a new name.
    let sidecar = |id: &str| {
        let script = format!(
            r#"i=0; while true; do i=$((i+1))
printf '{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{id}-%s","annotations":{{"election.rs/holder":"%s","election.rs/term":"%s"}}}}}}' $i "$LEADER_ELECTOR_IDENTITY" "$LEADER_ELECTOR_TERM" | kubectl --kubeconfig {{kc}} create -f - >/dev/null 2>&1
sleep 0.05; done"#
        );
        run_mode(&emu, &dir, id, "stop", &script)
    };
    // kubectl sends no bearer token over plain HTTP: a child's writes are told
    // apart by their names (`<sidecar>-<n>`).
    let by = |w: &kube_emulator::WriteRecord, id: &str| {
        w.resource == Resource::ConfigMap && w.name.starts_with(&format!("{id}-"))
    };
    let writes_by = |id: &str| emu.committed_writes().iter().filter(|w| by(w, id)).count();
    let a = sidecar("app-a");
    let start = std::time::Instant::now();
    while writes_by("app-a") < 3 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "app-a's child writes"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let b = sidecar("app-b");
    let pid = common::pid_of(&a);
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).expect("SIGSTOP");
    while writes_by("app-b") < 3 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "app-b's child writes"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // app-a's child went on writing meanwhile (its sidecar is stopped): refused.
    let refused = emu
        .write_history()
        .into_iter()
        .filter(|w| by(w, "app-a") && w.code == 403)
        .count();
    assert!(
        refused > 0,
        "the stopped leader's child kept writing and was refused"
    );
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).expect("SIGCONT");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;

    // Committed history: no write of app-a's child after app-b's Lease write.
    let history = emu.committed_writes();
    let taken = history
        .iter()
        .find(|w| {
            w.resource == Resource::Lease
                && w.verb != Verb::Delete
                && w.object
                    .as_ref()
                    .and_then(|o| o["spec"]["holderIdentity"].as_str())
                    == Some("app-b")
        })
        .and_then(|w| w.version())
        .expect("app-b took the Lease");
    let late: Vec<_> = history
        .iter()
        .filter(|w| by(w, "app-a"))
        .filter(|w| w.version().is_some_and(|v| v > taken))
        .map(|w| w.name.clone())
        .collect();
    assert!(late.is_empty(), "committed after the takeover: {late:?}");
    for child in [a, b] {
        common::sigterm(&child);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait_with_output())
            .await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
