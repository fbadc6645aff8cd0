//! Two (then three) sidecars in `run` mode against the API emulator: their children
//! never run at the same time, through a graceful hand-over (SIGTERM to the leading
//! sidecar) and a partition of the next leader (FAULTS N7); and the child's exit code
//! is passed through.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use kube_emulator::Emulator;
use tokio::process::{Child, Command};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("leader-elector-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn sidecar(emu: &Emulator, dir: &Path, id: &str, child: &[&str]) -> Child {
    let kubeconfig = dir.join(format!("{id}.kubeconfig"));
    emu.write_kubeconfig(&kubeconfig, id).expect("kubeconfig");
    Command::new(env!("CARGO_BIN_EXE_leader-elector"))
        .args([
            "--lease-duration-ms",
            "2000",
            "--renew-deadline-ms",
            "1500",
            "--retry-period-ms",
            "250",
        ])
        .args(["run", "--lease", "sidecar", "--kill-after-ms", "300", "--"])
        .args(child)
        .env("KUBECONFIG", &kubeconfig)
        .env("ELECTION_IDENTITY", id)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the sidecar")
}

fn sigterm(child: &Child) {
    let pid = rustix::process::Pid::from_raw(child.id().expect("running") as i32).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("kill");
}

fn lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until the log has `line`.
async fn wait_for(log: &Path, line: &str, within: Duration) {
    let start = Instant::now();
    while !lines(log).iter().any(|l| l == line) {
        assert!(
            start.elapsed() < within,
            "no {line:?} within {within:?}: {:?}",
            lines(log)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The first `start <id>` line's id, waiting for one.
async fn first_start(log: &Path, after: usize, within: Duration) -> String {
    let start = Instant::now();
    loop {
        if let Some(id) = lines(log)
            .iter()
            .skip(after)
            .find_map(|l| l.strip_prefix("start "))
        {
            return id.to_owned();
        }
        assert!(
            start.elapsed() < within,
            "no child started: {:?}",
            lines(log)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_of_two_sidecars_never_run_at_the_same_time() {
    let emu = Emulator::start().await.expect("emulator");
    let dir = temp("overlap");
    let log = dir.join("children.log");
    let script = format!(
        "echo \"start $LEADER_ELECTOR_IDENTITY\" >> {log}; \
         trap 'echo \"stop $LEADER_ELECTOR_IDENTITY\" >> {log}; exit 0' TERM; \
         while :; do sleep 0.05; done",
        log = log.display()
    );
    let child = ["sh", "-c", script.as_str()];
    let mut a = Some(sidecar(&emu, &dir, "sidecar-a", &child));
    let mut b = Some(sidecar(&emu, &dir, "sidecar-b", &child));

    // 1. Someone leads; SIGTERM its sidecar: graceful hand-over.
    let first = first_start(&log, 0, Duration::from_secs(15)).await;
    let leaving = if first == "sidecar-a" {
        a.take()
    } else {
        b.take()
    }
    .expect("running");
    sigterm(&leaving);
    let status = tokio::time::timeout(Duration::from_secs(10), leaving.wait_with_output())
        .await
        .expect("the sidecar exits")
        .expect("status");
    assert!(status.status.success(), "{status:?}");
    wait_for(&log, &format!("stop {first}"), Duration::from_secs(1)).await;
    let second = first_start(&log, 2, Duration::from_secs(10)).await;
    assert_ne!(first, second);

    // 2. A third sidecar joins; the second leader is partitioned from the API: it
    // loses at its deadline and stops its child; the third takes over afterwards.
    let mut c = Some(sidecar(&emu, &dir, "sidecar-c", &child));
    tokio::time::sleep(Duration::from_millis(500)).await;
    emu.faults(&second).hang();
    wait_for(&log, &format!("stop {second}"), Duration::from_secs(10)).await;
    let third = first_start(&log, 4, Duration::from_secs(15)).await;
    assert_ne!(third, second);

    // 3. Stop everyone.
    emu.faults(&second).clear();
    for s in [a.take(), b.take(), c.take()].into_iter().flatten() {
        sigterm(&s);
        let out = tokio::time::timeout(Duration::from_secs(10), s.wait_with_output())
            .await
            .expect("exits")
            .expect("status");
        assert!(out.status.success(), "{out:?}");
    }

    // Never two children at once: replay the log.
    let log = lines(&log);
    let mut running: Vec<&str> = Vec::new();
    for l in &log {
        if let Some(id) = l.strip_prefix("start ") {
            assert!(
                running.is_empty(),
                "{id} started while {running:?} ran: {log:?}"
            );
            running.push(id);
        } else if let Some(id) = l.strip_prefix("stop ") {
            running.retain(|r| *r != id);
        }
    }
    assert!(running.is_empty(), "every child stopped: {log:?}");
    assert!(log.len() >= 6, "three leaderships: {log:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_childs_exit_code_is_passed_through() {
    let emu = Emulator::start().await.expect("emulator");
    let dir = temp("exit");
    let s = sidecar(&emu, &dir, "sidecar-x", &["sh", "-c", "exit 3"]);
    let out = tokio::time::timeout(Duration::from_secs(15), s.wait_with_output())
        .await
        .expect("exits")
        .expect("status");
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    // It released the lease on the way out.
    let lease = emu
        .object(kube_emulator::Resource::Lease, "default", "sidecar")
        .expect("lease exists");
    assert_eq!(lease["spec"]["holderIdentity"], "", "{lease}");
    let _ = std::fs::remove_dir_all(dir);
}
