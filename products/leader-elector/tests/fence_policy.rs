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
