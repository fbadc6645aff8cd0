//! `--help` and `--version` through the binary: each mode's help lists the flags
//! it uses (`fence-policy`'s none of the election's), and `--version` prints the
//! crate's version.

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

/// The help `args` print on stdout, with success.
fn help(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// The election's flags: `serve` and `run` use them, `fence-policy` does not.
const ELECTION_FLAGS: [&str; 10] = [
    "--identity",
    "--lease-duration",
    "--renew-deadline",
    "--retry-period",
    "--request-timeout",
    "--renew-interval",
    "--coordinated",
    "--binary-version",
    "--emulation-version",
    "--log-format",
];

#[test]
fn fence_policys_help_lists_only_the_flags_it_uses() {
    for args in [
        &["fence-policy", "--help"][..],
        &["fence-policy", "-h"],
        &["help", "fence-policy"],
    ] {
        let text = help(args);
        for flag in ELECTION_FLAGS {
            assert!(!text.contains(flag), "{args:?} lists {flag}: {text}");
        }
        for flag in [
            "--lease <LEASE>",
            "--protect",
            "--writer",
            "--warn",
            "--namespace",
            "--kubeconfig",
            "--fence-namespace",
            "--exempt-user",
            "--exempt-group",
            "--no-default-exemptions",
        ] {
            assert!(text.contains(flag), "{args:?} omits {flag}: {text}");
        }
    }
}

#[test]
fn serve_and_run_help_list_the_election_flags() {
    for args in [
        &["serve", "--help"][..],
        &["run", "--help"],
        &["help", "serve"],
        &["--help"],
    ] {
        let text = help(args);
        for flag in ELECTION_FLAGS {
            assert!(text.contains(flag), "{args:?} omits {flag}: {text}");
        }
    }
}

#[test]
fn version_prints_the_crate_version() {
    for flag in ["--version", "-V"] {
        let out = run(&[flag]);
        assert_eq!(out.status.code(), Some(0), "{flag}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("leader-elector {}\n", env!("CARGO_PKG_VERSION")),
            "{flag}"
        );
        assert!(out.stderr.is_empty(), "{flag}: {out:?}");
    }
}
