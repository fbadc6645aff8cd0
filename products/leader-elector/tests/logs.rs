//! The sidecar's logs against the API emulator: `--log-format json` lines on
//! stderr, one for the start and one for the stop of leading, each with the term
//! and the identity (the stop with its reason); `RUST_LOG` filters them. A
//! graceful stop is an INFO line, a loss a WARN line.

mod common;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use kube_emulator::Emulator;
use tokio::process::{Child, Command};

/// Starts a `serve` sidecar named by `--identity id` (`ELECTION_IDENTITY` says
/// otherwise: the flag wins) with `extra` flags and `rust_log`; it and the address
/// it serves on.
fn spawn_sidecar(
    emu: &Emulator,
    dir: &Path,
    id: &str,
    extra: &[&str],
    rust_log: Option<&str>,
) -> (Child, String) {
    let kubeconfig = dir.join(format!("{id}.kubeconfig"));
    emu.write_kubeconfig(&kubeconfig, id).expect("kubeconfig");
    let addr = common::free_addr();
    let mut command = Command::new(common::BIN);
    command
        .args(common::FAST)
        .args(["--identity", id])
        .args(extra)
        .args(["serve", "--lease", id, "--addr", &addr])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .env("ELECTION_IDENTITY", "not-this-one")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(filter) = rust_log {
        command.env("RUST_LOG", filter);
    }
    (command.spawn().expect("spawn"), addr)
}

/// SIGTERM, then waits (10 s at most) for a clean exit; the sidecar's output.
async fn stop(sidecar: Child) -> Output {
    common::sigterm(&sidecar);
    let out = tokio::time::timeout(Duration::from_secs(10), sidecar.wait_with_output())
        .await
        .expect("exits after SIGTERM")
        .expect("output");
    assert!(out.status.success(), "{out:?}");
    out
}

/// Runs a `serve` sidecar as [`spawn_sidecar`] does, waits until it leads, stops
/// it with SIGTERM; its `/status` while leading and its output.
async fn lead_then_stop(
    emu: &Emulator,
    dir: &Path,
    id: &str,
    extra: &[&str],
    rust_log: Option<&str>,
) -> (serde_json::Value, Output) {
    let (sidecar, addr) = spawn_sidecar(emu, dir, id, extra, rust_log);
    let status = common::wait_leading(&addr, Duration::from_secs(15)).await;
    let out = stop(sidecar).await;
    assert_eq!(status["is_leader"], true, "it led: {status} {out:?}");
    (status, out)
}

/// The level of a text line: `<timestamp> <LEVEL> <target>: <message> <fields>`.
fn level(line: &str) -> &str {
    line.split_whitespace().nth(1).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_logs_name_the_term_and_identity_when_leading_starts_and_stops() {
    let emu = Emulator::start().await.expect("emulator");
    let dir = common::temp("logs-json");
    let (status, out) =
        lead_then_stop(&emu, &dir, "log-json", &["--log-format", "json"], None).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let with = |message: &str| -> Vec<&serde_json::Value> {
        lines.iter().filter(|l| l["message"] == message).collect()
    };
    let term = status["term"].as_str().expect("a term while leading");

    let started = with("started leading");
    assert_eq!(started.len(), 1, "one line for the start: {stderr}");
    assert_eq!(started[0]["term"], term, "{stderr}");
    assert_eq!(
        started[0]["identity"], "log-json",
        "the flag wins: {stderr}"
    );
    assert_eq!(started[0]["level"], "INFO", "{stderr}");
    assert!(started[0]["timestamp"].is_string(), "{stderr}");

    let stopped = with("stopped leading");
    assert_eq!(stopped.len(), 1, "one line for the stop: {stderr}");
    assert_eq!(stopped[0]["term"], term, "{stderr}");
    assert_eq!(stopped[0]["identity"], "log-json", "{stderr}");
    assert_eq!(stopped[0]["reason"], "shut down", "{stderr}");
    // Giving leadership up on SIGTERM is routine, not a warning.
    assert_eq!(stopped[0]["level"], "INFO", "{stderr}");

    // The drain names the term as the other lines do (Display, not `Some("…")`).
    let draining = with("draining leader work");
    assert_eq!(draining.len(), 1, "{stderr}");
    assert_eq!(draining[0]["term"], term, "{stderr}");

    // The election starts once (its state stream used to replay the initial
    // state, whose change is also `Started`, before the driver's own).
    assert_eq!(with("election started").len(), 1, "{stderr}");

    // The timings as the sidecar took them: the request timeout by client-go's
    // rule, max(1.5s / 2, 1s).
    let campaigning = with("campaigning");
    assert_eq!(campaigning.len(), 1, "{stderr}");
    assert_eq!(campaigning[0]["lease_duration"], "2s", "{stderr}");
    assert_eq!(campaigning[0]["renew_deadline"], "1.5s", "{stderr}");
    assert_eq!(campaigning[0]["request_timeout"], "1s", "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_log_warn_leaves_out_the_info_lines() {
    let emu = Emulator::start().await.expect("emulator");
    let dir = common::temp("logs-warn");
    // A start and a graceful stop are routine: at `warn` there is nothing to say.
    // Text lines by default: `<timestamp> <LEVEL> <target>: <message> <fields>`.
    let (_, out) = lead_then_stop(&emu, &dir, "log-warn", &[], Some("warn")).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("campaigning"), "{stderr}");
    assert!(!stderr.contains("started leading"), "{stderr}");
    assert!(!stderr.contains("stopped leading"), "{stderr}");
    for line in stderr.lines() {
        assert!(["WARN", "ERROR"].contains(&level(line)), "{line}");
    }

    // A loss is a warning, so `warn` keeps it: the leader is cut off from the API
    // (its requests hang) and stops at its renew deadline.
    let (sidecar, addr) = spawn_sidecar(&emu, &dir, "log-loss", &[], Some("warn"));
    let status = common::wait_leading(&addr, Duration::from_secs(15)).await;
    assert_eq!(status["is_leader"], true, "it led: {status}");
    emu.faults("log-loss").hang();
    let start = std::time::Instant::now();
    loop {
        let status = match common::get_path(&addr, "/status").await {
            Some((_, body)) => serde_json::from_str(&body).expect("JSON status"),
            None => serde_json::Value::Null,
        };
        if status["is_leader"] == false {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{status}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    emu.faults("log-loss").clear();
    let out = stop(sidecar).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stderr.lines() {
        assert!(["WARN", "ERROR"].contains(&level(line)), "{line}");
    }
    // The monitor's line (a failed Event write quotes "<id> stopped leading" too).
    let lost: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("election_ops::monitor: stopped leading"))
        .collect();
    assert_eq!(lost.len(), 1, "{stderr}");
    assert!(
        lost[0].contains("identity=\"log-loss\"")
            && lost[0].contains("reason=renew deadline exceeded"),
        "{stderr}"
    );

    // The same sidecar at the default level logs the routine lines, each once.
    let (_, out) = lead_then_stop(&emu, &dir, "log-info", &[], None).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    for message in ["started leading", "stopped leading"] {
        let lines: Vec<&str> = stderr.lines().filter(|l| l.contains(message)).collect();
        assert_eq!(lines.len(), 1, "{message}: {stderr}");
        assert!(
            level(lines[0]) == "INFO" && lines[0].contains("identity=\"log-info\""),
            "{stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}
