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
