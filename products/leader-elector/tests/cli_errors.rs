//! Bad flags, bad timings and bad kubeconfigs end the sidecar with one clear line
//! on stderr and a non-zero exit: never a panic, never a backtrace. None of these
//! needs a cluster: each fails before it would reach one.

mod common;

use std::process::{Command, Stdio};

/// A `KUBECONFIG` that does not exist: no test here may reach a cluster.
const NO_KUBECONFIG: &str = "/nonexistent/leader-elector-tests/kubeconfig";

/// Runs the sidecar with `args` (a backtrace would be printed if it panicked);
/// asserts it fails with exactly one line on stderr and no panic; that line.
fn fails(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(common::BIN)
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .env("KUBECONFIG", NO_KUBECONFIG)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run the sidecar");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} succeeded: {out:?}");
    let lower = stderr.to_lowercase();
    assert!(!lower.contains("panicked"), "{args:?}: {stderr}");
    assert!(!lower.contains("backtrace"), "{args:?}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line: {stderr}");
    assert!(lines[0].starts_with("leader-elector: "), "{stderr}");
    (out.status.code(), lines[0].to_owned())
}

#[test]
fn an_unknown_flag_is_named() {
    let (code, line) = fails(&["--no-such-flag", "serve", "--lease", "x"]);
    assert_eq!(code, Some(2));
    assert!(
        line.contains("unexpected argument '--no-such-flag'"),
        "{line}"
    );
}

/// No mode: the help (several lines, as clap prints it) and a failure.
#[test]
fn no_mode_prints_the_help_and_fails() {
    let out = Command::new(common::BIN)
        .stdin(Stdio::null())
        .output()
        .expect("run the sidecar");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("Usage: leader-elector") && stderr.contains("serve"),
        "{stderr}"
    );
}

#[test]
fn a_missing_lease_is_named() {
    let (code, line) = fails(&["serve"]);
    assert_eq!(code, Some(2));
    assert!(line.contains("--lease <LEASE>"), "{line}");
}

#[test]
fn a_bad_duration_names_the_flag_and_the_problem() {
    let (code, line) = fails(&["--lease-duration", "15", "serve", "--lease", "x"]);
    assert_eq!(code, Some(2));
    assert!(
        line.contains("--lease-duration") && line.contains("missing unit"),
        "{line}"
    );
    let (_, line) = fails(&["--retry-period", "2sec", "serve", "--lease", "x"]);
    assert!(
        line.contains("--retry-period") && line.contains("unknown unit \"sec\""),
        "{line}"
    );
    let (_, line) = fails(&["run", "--lease", "x", "--kill-after=-1s", "--", "true"]);
    assert!(
        line.contains("--kill-after") && line.contains("sign"),
        "{line}"
    );
}

#[test]
fn old_and_new_spellings_of_a_timing_conflict() {
    let (code, line) = fails(&[
        "--lease-duration",
        "15s",
        "--lease-duration-ms",
        "15000",
        "serve",
        "--lease",
        "x",
    ]);
    assert_eq!(code, Some(2));
    assert!(
        line.contains("--lease-duration <DURATION>") && line.contains("--lease-duration-ms"),
        "{line}"
    );
}

/// A combination that breaks a rule of the configuration's validation is refused
/// before anything starts (the kubeconfig is never read), with the rule named.
#[test]
fn timings_that_break_a_rule_name_it() {
    // Not whole seconds: the record stores integer seconds.
    let (code, line) = fails(&["--lease-duration", "1.5s", "serve", "--lease", "x"]);
    assert_eq!(code, Some(2));
    assert!(
        line.contains("lease_duration must be a whole number of seconds") && line.contains("1.5s"),
        "{line}"
    );
    // A renew deadline beyond the lease.
    let (_, line) = fails(&["--renew-deadline", "20s", "serve", "--lease", "x"]);
    assert!(
        line.contains("lease_duration (15s) must be greater than renew_deadline (20s)"),
        "{line}"
    );
    // A request timeout that leaves no time to renew: 2s + 9s >= 10s.
    let (_, line) = fails(&[
        "--request-timeout",
        "9s",
        "run",
        "--lease",
        "x",
        "--",
        "true",
    ]);
    assert!(
        line.contains("retry_period + request_timeout") && line.contains("renew_deadline"),
        "{line}"
    );
    // The older millisecond spelling goes through the same rules.
    let (_, line) = fails(&["--lease-duration-ms", "2500", "serve", "--lease", "x"]);
    assert!(line.contains("whole number of seconds"), "{line}");
}

#[test]
fn an_empty_identity_is_refused() {
    let (code, line) = fails(&["--identity", "", "serve", "--lease", "x"]);
    assert_eq!(code, Some(2));
    assert!(line.contains("identity is empty"), "{line}");
}

#[test]
fn a_missing_kubeconfig_names_the_file() {
    let dir = common::temp("cli-missing-kubeconfig");
    let path = dir.join("no-such-kubeconfig");
    let (code, line) = fails(&[
        "--kubeconfig",
        path.to_str().expect("UTF-8"),
        "serve",
        "--lease",
        "x",
    ]);
    assert_eq!(code, Some(1));
    assert!(
        line.contains("failed to load the kubeconfig file") && line.contains("no-such-kubeconfig"),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_garbage_kubeconfig_names_the_file_and_the_problem() {
    let dir = common::temp("cli-garbage-kubeconfig");
    for (name, content) in [
        ("unclosed", "clusters: [\n"),
        ("text", "this is not a kubeconfig\n"),
        ("binary", "\u{1}\u{2}\u{fffd}{{{: :\n"),
        // Valid YAML, but no context to use.
        ("empty", "apiVersion: v1\nkind: Config\n"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, content).expect("write");
        let (code, line) = fails(&[
            "--kubeconfig",
            path.to_str().expect("UTF-8"),
            "serve",
            "--lease",
            "x",
        ]);
        assert_eq!(code, Some(1), "{name}: {line}");
        assert!(
            line.contains("failed to load the kubeconfig file") && line.contains(name),
            "{name}: {line}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_invalid_rust_log_is_named() {
    let out = Command::new(common::BIN)
        .args(["serve", "--lease", "x"])
        .env("RUST_LOG", "info,election_driver=loud")
        .env("KUBECONFIG", NO_KUBECONFIG)
        .stdin(Stdio::null())
        .output()
        .expect("run the sidecar");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("invalid RUST_LOG"), "{stderr}");
}
