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
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
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
        // The election's flags, before or after the mode: not fence-policy's.
        (
            &[
                "--identity",
                "a",
                "fence-policy",
                "--lease",
                "orders",
                "--protect",
                "v1/configmaps",
            ],
            "fence-policy does not take --identity",
        ),
        (
            &[
                "--namespace",
                "shop",
                "fence-policy",
                "--lease",
                "orders",
                "--protect",
                "v1/configmaps",
                "--lease-duration",
                "15s",
                "--coordinated",
            ],
            "fence-policy does not take --lease-duration, --coordinated",
        ),
        (
            &[
                "--namespace",
                "shop",
                "fence-policy",
                "--lease",
                "orders",
                "--protect",
                "v1/configmaps",
                "--fence-namespace",
                "Other",
            ],
            "invalid namespace \"Other\"",
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

/// A kubeconfig whose context names the namespace `namespace` (nothing listens
/// at its server: `fence-policy` only reads it).
fn kubeconfig_with_namespace(dir: &std::path::Path, namespace: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{namespace}.kubeconfig"));
    let yaml = format!(
        "apiVersion: v1
kind: Config
clusters:
  - name: c
    cluster: {{ server: \"https://127.0.0.1:1\" }}
users:
  - name: u
    user: {{ token: t }}
contexts:
  - name: x
    context: {{ cluster: c, user: u, namespace: {namespace} }}
current-context: x
"
    );
    std::fs::write(&path, yaml).expect("write the kubeconfig");
    path
}

/// Without `--namespace`, the Lease's namespace is the kube config's, from
/// `KUBECONFIG` or `--kubeconfig`, as `serve` and `run` take it: the same
/// manifests as with `--namespace`.
#[test]
fn the_namespace_defaults_to_the_kube_configs() {
    let dir = common::temp("fence-policy-namespace");
    let kubeconfig = kubeconfig_with_namespace(&dir, "shop");
    let fence = [
        "fence-policy",
        "--lease",
        "orders",
        "--protect",
        "v1/configmaps",
    ];
    let explicit = run(&[&["--namespace", "shop"][..], &fence].concat());
    assert!(explicit.status.success(), "{explicit:?}");
    let yaml = String::from_utf8(explicit.stdout).expect("UTF-8");
    assert!(yaml.contains("namespace: shop\n"), "{yaml}");

    let by_env = Command::new(common::BIN)
        .args(fence)
        .env("KUBECONFIG", &kubeconfig)
        .stdin(Stdio::null())
        .output()
        .expect("run the sidecar");
    assert!(by_env.status.success(), "{by_env:?}");
    assert_eq!(String::from_utf8_lossy(&by_env.stdout), yaml);

    let path = kubeconfig.to_str().expect("UTF-8 path");
    for args in [
        [&["--kubeconfig", path][..], &fence].concat(),
        [&fence[..], &["--kubeconfig", path]].concat(),
    ] {
        let by_flag = run(&args);
        assert!(by_flag.status.success(), "{args:?}: {by_flag:?}");
        assert_eq!(String::from_utf8_lossy(&by_flag.stdout), yaml, "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--fence-namespace`, `--exempt-user`, `--exempt-group` and
/// `--no-default-exemptions` reach the manifests.
#[test]
fn fenced_namespaces_and_exemptions_reach_the_manifests() {
    let fence = [
        "--namespace",
        "shop",
        "fence-policy",
        "--lease",
        "orders",
        "--protect",
        "v1/configmaps",
    ];
    let yaml = |extra: &[&str]| {
        let args = [&fence[..], extra].concat();
        let out = run(&args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let selector_of =
        |ns: &str| format!("matchLabels:\n        kubernetes.io/metadata.name: {ns}\n");

    // Defaults: the Lease's namespace, the control plane's controllers exempt.
    let plain = yaml(&[]);
    assert!(plain.contains(&selector_of("shop")), "{plain}");
    assert!(
        plain.contains("'system:kube-controller-manager'"),
        "{plain}"
    );
    assert!(
        plain.contains("'system:serviceaccounts:kube-system'"),
        "{plain}"
    );

    let one = yaml(&["--fence-namespace", "billing"]);
    assert!(one.contains(&selector_of("billing")), "{one}");
    assert!(!one.contains(&selector_of("shop")), "{one}");
    // The parameter is still the Lease in its own namespace.
    assert!(
        one.contains("paramRef:\n    name: orders\n    namespace: shop\n"),
        "{one}"
    );

    let many = yaml(&[
        "--fence-namespace",
        "billing",
        "--fence-namespace",
        "shipping",
        "--exempt-user",
        "alice",
        "--exempt-user",
        "system:serviceaccount:ops:backup",
        "--exempt-group",
        "platform-admins",
    ]);
    assert!(
        many.contains(
            "operator: In\n          values:\n            - billing\n            - shipping\n"
        ),
        "{many}"
    );
    for exempt in [
        "'alice'",
        "'system:serviceaccount:ops:backup'",
        "'platform-admins'",
        "'system:kube-controller-manager'",
        "'system:serviceaccounts:kube-system'",
    ] {
        assert!(many.contains(exempt), "{exempt}: {many}");
    }

    let none = yaml(&["--no-default-exemptions"]);
    assert!(!none.contains("system:kube-controller-manager"), "{none}");
    assert!(
        !none.contains("system:serviceaccounts:kube-system"),
        "{none}"
    );
    let only_bob = yaml(&["--no-default-exemptions", "--exempt-user", "bob"]);
    assert!(
        only_bob.contains("request.userInfo.username in ['bob']"),
        "{only_bob}"
    );
    assert!(
        !only_bob.contains("system:kube-controller-manager"),
        "{only_bob}"
    );
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
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p leader-elector --test fence_policy -- --ignored"]
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
/// with them (`election.rs/holder`, `election.rs/term`) and a token of its own
/// (`election.rs/write`). With the policy applied,
/// the child's stamped write passes and an unstamped one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p leader-elector --test fence_policy -- --ignored"]
async fn a_run_mode_child_that_stamps_its_writes_passes_the_fence() {
    let (emu, dir) = fenced("fenced").await;
    // The child: one stamped create, one unstamped, each reported in a file.
    let script = format!(
        r#"stamped='{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"stamped","annotations":{{"election.rs/holder":"'"$LEADER_ELECTOR_IDENTITY"'","election.rs/term":"'"$LEADER_ELECTOR_TERM"'","election.rs/write":"'"$(cat /proc/sys/kernel/random/uuid)"'"}}}}}}'
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
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p leader-elector --test fence_policy -- --ignored"]
async fn n16_a_stopped_sidecars_child_is_fenced_off_by_the_server_after_a_takeover() {
    use kube_emulator::{Resource, Verb};
    let (emu, dir) = fenced("stop").await;
    // A child that writes a stamped ConfigMap every 50 ms, each under a new name.
    let sidecar = |id: &str| {
        let script = format!(
            r#"i=0; while true; do i=$((i+1))
printf '{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{id}-%s","annotations":{{"election.rs/holder":"%s","election.rs/term":"%s","election.rs/write":"%s"}}}}}}' $i "$LEADER_ELECTOR_IDENTITY" "$LEADER_ELECTOR_TERM" "$(cat /proc/sys/kernel/random/uuid)" | kubectl --kubeconfig {{kc}} create -f - >/dev/null 2>&1
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

/// docs/faults.md N17 with real processes: a child's patches that leave the
/// annotations alone (a JSON patch, a merge patch of its data only) are refused,
/// while its sidecar leads and after it was stopped (SIGSTOP) and another took
/// over and stamped the object last; the children's stamped patches pass while
/// their sidecar leads. Under the earlier policy the unstamped patches inherited
/// the stored stamp and were admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kubectl on PATH; CI runs it: cargo test -p leader-elector --test fence_policy -- --ignored"]
async fn n17_a_childs_patches_that_leave_the_stamp_alone_are_refused_before_and_after_a_takeover() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams};
    use kube_emulator::{Resource, UserInfo};
    let (emu, dir) = fenced("late").await;
    // The object both children patch is made by an exempt writer (the control
    // plane's), without a stamp, once the Lease exists (without it the API
    // server refuses every protected write, an exempt writer's too: the binding
    // fails before its match conditions are looked at).
    emu.set_user(
        "kcm",
        UserInfo {
            username: "system:kube-controller-manager".into(),
            ..UserInfo::default()
        },
    );
    // Each child, in a loop: a stamped merge patch (the documented way), then a
    // JSON patch and a merge patch that leave the annotations alone.
    let sidecar = |id: &str| {
        let script = format!(
            r#"i=0; while true; do i=$((i+1))
kubectl --kubeconfig {{kc}} patch configmap shared --type=merge -p '{{"metadata":{{"annotations":{{"election.rs/holder":"'"$LEADER_ELECTOR_IDENTITY"'","election.rs/term":"'"$LEADER_ELECTOR_TERM"'","election.rs/write":"'"$(cat /proc/sys/kernel/random/uuid)"'"}}}},"data":{{"by":"{id}"}}}}' >/dev/null 2>&1
kubectl --kubeconfig {{kc}} patch configmap shared --type=json -p '[{{"op":"add","path":"/data/{id}-json-'$i'","value":"bare"}}]' >/dev/null 2>&1
kubectl --kubeconfig {{kc}} patch configmap shared --type=merge -p '{{"data":{{"{id}-merge-'$i'":"bare"}}}}' >/dev/null 2>&1
sleep 0.05; done"#
        );
        run_mode(&emu, &dir, id, "late", &script)
    };
    let by = |emu: &kube_emulator::Emulator| {
        emu.object(Resource::ConfigMap, "default", "shared")
            .and_then(|o| o["data"]["by"].as_str().map(str::to_owned))
    };
    let refused = |emu: &kube_emulator::Emulator| {
        emu.write_history()
            .iter()
            .filter(|w| w.name == "shared" && w.code == 403)
            .count()
    };
    let a = sidecar("app-a");
    until("app-a takes the Lease", || {
        emu.object(Resource::Lease, "default", "late").is_some()
    })
    .await;
    let mut shared = ConfigMap::default();
    shared.metadata.name = Some("shared".into());
    Api::<ConfigMap>::namespaced(emu.client("kcm").expect("client"), "default")
        .create(&PostParams::default(), &shared)
        .await
        .expect("an exempt writer");
    until("app-a's child stamps the object", || {
        by(&emu).as_deref() == Some("app-a")
    })
    .await;
    until("app-a's bare patches are refused while it leads", || {
        refused(&emu) >= 2
    })
    .await;

    let b = sidecar("app-b");
    let pid = common::pid_of(&a);
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).expect("SIGSTOP");
    until("app-b takes over and stamps the object", || {
        by(&emu).as_deref() == Some("app-b")
    })
    .await;
    // app-a's child goes on patching (its sidecar is stopped): each refused.
    let after = refused(&emu);
    until("app-a's child keeps trying", || refused(&emu) >= after + 6).await;
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).expect("SIGCONT");

    let commits: Vec<serde_json::Value> = emu
        .committed_writes()
        .iter()
        .filter(|w| w.resource == Resource::ConfigMap && w.name == "shared")
        .filter_map(|w| w.object.clone())
        .collect();
    for object in &commits {
        let bare: Vec<&String> = object["data"]
            .as_object()
            .map(|d| {
                d.keys()
                    .filter(|k| k.contains("-json-") || k.contains("-merge-"))
                    .collect()
            })
            .unwrap_or_default();
        assert!(
            bare.is_empty(),
            "a patch that left the stamp alone was committed: {bare:?}"
        );
    }
    // After app-b's first commit, none of app-a's stamped patches either.
    let first_b = commits
        .iter()
        .position(|o| o["data"]["by"] == "app-b")
        .expect("app-b committed");
    assert!(
        commits[first_b..]
            .iter()
            .all(|o| o["data"]["by"] == "app-b"),
        "app-a's child wrote after the takeover"
    );
    for child in [a, b] {
        common::sigterm(&child);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), child.wait_with_output())
            .await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits (up to 30 s) until `done`, failing with `what`.
async fn until(what: &str, done: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "{what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
