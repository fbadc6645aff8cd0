//! Two (then three) sidecars in `run` mode against the API emulator: their children
//! never run at the same time, through a graceful hand-over (SIGTERM to the leading
//! sidecar), a partition of the next leader (docs/faults.md N7) and another hand-over back
//! to it after the heal; a child's own children die with it; the child's exit
//! code is passed through; and a SIGKILLed sidecar's child and its group die with
//! it. A failover after a SIGKILL runs on the emulator and on a real
//! kube-apiserver, there as the ServiceAccount `deploy/run-mode.yaml` binds to
//! the Role of `deploy/rbac.yaml` (both applied with kubectl).

mod common;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{Site, gone, sigterm, temp};
use kube_emulator::Emulator;
use test_kit::apiserver::ApiServer;
use tokio::process::{Child, Command};

fn sidecar(emu: &Emulator, dir: &Path, id: &str, child: &[&str]) -> Child {
    let kubeconfig = dir.join(format!("{id}.kubeconfig"));
    emu.write_kubeconfig(&kubeconfig, id).expect("kubeconfig");
    sidecar_with(&kubeconfig, id, child, Stdio::inherit())
}

/// A `run` sidecar `id` for the Lease `sidecar` with `kubeconfig`, running
/// `child` while it leads; its stderr to `stderr`.
fn sidecar_with(kubeconfig: &Path, id: &str, child: &[&str], stderr: Stdio) -> Child {
    Command::new(common::BIN)
        // The older millisecond spellings, kept as aliases of the Go-style flags.
        .args([
            "--lease-duration-ms",
            "2000",
            "--renew-deadline-ms",
            "1500",
            "--retry-period-ms",
            "250",
            // A drain budget of 1 s (renew deadline - request timeout).
            "--request-timeout",
            "500ms",
        ])
        .args(["run", "--lease", "sidecar", "--kill-after-ms", "300", "--"])
        .args(child)
        .env("KUBECONFIG", kubeconfig)
        .env("ELECTION_IDENTITY", id)
        .stdin(Stdio::null())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the sidecar")
}

/// Sends the sidecar SIGTERM and waits (10 s at most) for it to exit with success.
async fn stop_cleanly(child: Child) {
    sigterm(&child);
    let out = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("the sidecar exits")
        .expect("status");
    assert!(out.status.success(), "{out:?}");
}

fn lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The log's `<kind> <id> <value>` lines of one kind, as (id, value).
fn entries(log: &Path, kind: &str) -> Vec<(String, u64)> {
    lines(log)
        .iter()
        .filter_map(|l| {
            let mut parts = l.split(' ');
            (parts.next()? == kind).then_some(())?;
            let id = parts.next()?.to_owned();
            let value = parts.next()?.parse().ok()?;
            Some((id, value))
        })
        .collect()
}

/// Waits until the log has `n` lines of `kind` (for `id`, if given).
async fn wait_count(log: &Path, kind: &str, id: Option<&str>, n: usize, within: Duration) {
    let start = Instant::now();
    let count = || {
        entries(log, kind)
            .iter()
            .filter(|(i, _)| id.is_none_or(|id| i == id))
            .count()
    };
    while count() < n {
        assert!(
            start.elapsed() < within,
            "not {n} {kind:?} lines for {id:?} within {within:?}: {:?}",
            lines(log)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The id of the `n`-th child started (from 0), waiting for it.
async fn nth_start(log: &Path, n: usize, within: Duration) -> String {
    wait_count(log, "start", None, n + 1, within).await;
    entries(log, "start").swap_remove(n).0
}

/// Two, then three sidecars run a child that starts a grandchild ignoring SIGTERM
/// (as a shell script's background job might). Each child appends `start <id>
/// <epoch-ns>` when it starts and `stop <id> <epoch-ns>` from an EXIT trap, at its
/// real exit. Checked: the children's [start, stop] intervals never overlap
/// (through a graceful hand-over, docs/faults.md N7's partition and a second hand-over),
/// the partitioned sidecar campaigns again and leads after the heal, and no
/// grandchild outlives its child's sidecar's stop (the group is killed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_of_two_sidecars_never_run_at_the_same_time() {
    let emu = Emulator::start().await.expect("emulator");
    let dir = temp("overlap");
    let log = dir.join("children.log");
    let script = format!(
        "id=$LEADER_ELECTOR_IDENTITY; \
         echo \"start $id $(date +%s%N)\" >> {log}; \
         trap 'echo \"stop $id $(date +%s%N)\" >> {log}' EXIT; \
         trap 'exit 0' TERM; \
         sh -c 'trap \"\" TERM; exec sleep 1000' & \
         echo \"grand $id $!\" >> {log}; \
         wait",
        log = log.display()
    );
    let child = ["sh", "-c", script.as_str()];
    let mut a = Some(sidecar(&emu, &dir, "sidecar-a", &child));
    let mut b = Some(sidecar(&emu, &dir, "sidecar-b", &child));

    // 1. Someone leads; SIGTERM its sidecar: graceful hand-over.
    let first = nth_start(&log, 0, Duration::from_secs(15)).await;
    let leaving = if first == "sidecar-a" {
        a.take()
    } else {
        b.take()
    }
    .expect("running");
    stop_cleanly(leaving).await;
    wait_count(&log, "stop", Some(&first), 1, Duration::from_secs(1)).await;
    let second = nth_start(&log, 1, Duration::from_secs(10)).await;
    assert_ne!(first, second);
    let (mut second_s, mut other) = if second == "sidecar-a" {
        (a.take(), b.take())
    } else {
        (b.take(), a.take())
    };
    assert!(other.is_none(), "the first leader's sidecar has exited");

    // 2. A third sidecar joins; the second leader is partitioned from the API: it
    // loses at its deadline and stops its child; the third takes over afterwards.
    other = Some(sidecar(&emu, &dir, "sidecar-c", &child));
    tokio::time::sleep(Duration::from_millis(500)).await;
    emu.faults(&second).hang();
    wait_count(&log, "stop", Some(&second), 1, Duration::from_secs(10)).await;
    let third = nth_start(&log, 2, Duration::from_secs(15)).await;
    assert_eq!(third, "sidecar-c");

    // 3. Heal; the third leader leaves gracefully: the partitioned sidecar, which
    // campaigned on, leads again.
    emu.faults(&second).clear();
    let leaving = other.take().expect("running");
    stop_cleanly(leaving).await;
    let fourth = nth_start(&log, 3, Duration::from_secs(15)).await;
    assert_eq!(fourth, second, "the healed sidecar leads again");

    // 4. Stop it.
    let s = second_s.take().expect("running");
    stop_cleanly(s).await;

    // Never two children at once: every [start, stop] interval ends before the
    // next one begins.
    let starts = entries(&log, "start");
    let stops = entries(&log, "stop");
    assert_eq!(starts.len(), 4, "four leaderships: {:?}", lines(&log));
    assert_eq!(stops.len(), 4, "every child stopped: {:?}", lines(&log));
    let mut intervals = Vec::new();
    for (id, begun) in &starts {
        // Each sidecar's children run one at a time: its k-th stop ends its k-th
        // start.
        let k = intervals.iter().filter(|(i, _, _)| i == id).count();
        let (_, ended) = stops
            .iter()
            .filter(|(i, _)| i == id)
            .nth(k)
            .unwrap_or_else(|| panic!("no stop for {id}'s child: {:?}", lines(&log)));
        assert!(begun <= ended);
        intervals.push((id.clone(), *begun, *ended));
    }
    intervals.sort_by_key(|(_, begun, _)| *begun);
    for pair in intervals.windows(2) {
        assert!(
            pair[0].2 < pair[1].1,
            "{} started at {} while {} ran until {}: {:?}",
            pair[1].0,
            pair[1].1,
            pair[0].0,
            pair[0].2,
            lines(&log)
        );
    }
    // The grandchildren, which ignore SIGTERM, died with their groups.
    let grands = entries(&log, "grand");
    assert_eq!(grands.len(), 4, "{:?}", lines(&log));
    for (id, pid) in grands {
        let start = Instant::now();
        while !gone(pid) && start.elapsed() < Duration::from_secs(2) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(gone(pid), "{id}'s grandchild {pid} survived");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Nanoseconds since the epoch, as the children's `date +%s%N` writes them.
fn epoch_ns() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after the epoch");
    u64::try_from(since.as_nanos()).expect("fits")
}

/// Two `run` sidecars on `site`; the leader's sidecar is SIGKILLed (a crash:
/// no release). Checked: its child dies with it, the other sidecar starts its
/// child only after that, one lease later (the crashed holder's lease is
/// honoured: at least 1.5 s of the 2 s, at most 10 s), and on SIGTERM stops
/// its child (the child's TERM trap runs), releases the Lease and exits 0.
/// On kube-apiserver, no request of either sidecar was refused.
async fn a_sigkilled_leaders_child_dies_and_the_other_takes_over(site: &Site<'_>) {
    let log = site.dir.join("children.log");
    let script = format!(
        "id=$LEADER_ELECTOR_IDENTITY; \
         echo \"start $id $(date +%s%N)\" >> {log}; \
         echo \"pid $id $$\" >> {log}; \
         trap 'echo \"stop $id $(date +%s%N)\" >> {log}; exit 0' TERM; \
         while :; do sleep 0.05; done",
        log = log.display()
    );
    let child = ["sh", "-c", script.as_str()];
    let ids = ["run-a", "run-b"];
    let mut sidecars: Vec<Option<Child>> = ids
        .iter()
        .map(|id| {
            Some(sidecar_with(
                &site.kubeconfig(id),
                id,
                &child,
                Stdio::piped(),
            ))
        })
        .collect();

    let first = nth_start(&log, 0, Duration::from_secs(15)).await;
    let i = ids.iter().position(|id| *id == first).expect("one of ours");
    let pid = entries(&log, "pid")[0].1;
    let crashed = sidecars[i].take().expect("running");
    common::sigkill(&crashed);
    let killed_at = epoch_ns();
    assert!(
        common::wait_gone(pid, Duration::from_secs(2)).await,
        "{first}'s child outlived its SIGKILLed sidecar"
    );
    let crashed = tokio::time::timeout(Duration::from_secs(5), crashed.wait_with_output())
        .await
        .expect("the SIGKILLed sidecar is reaped")
        .expect("its output");
    assert!(!crashed.status.success(), "{crashed:?}");
    let crashed_logs = String::from_utf8_lossy(&crashed.stderr).into_owned();

    let second = nth_start(&log, 1, Duration::from_secs(15)).await;
    assert_ne!(second, first, "{:?}", lines(&log));
    let began = entries(&log, "start")[1].1;
    let failover = Duration::from_nanos(began.saturating_sub(killed_at));
    eprintln!(
        "{}: failover after a SIGKILL: {failover:?} (lease 2 s)",
        site.server.name()
    );
    assert!(
        began > killed_at && failover >= Duration::from_millis(1_500),
        "{second}'s child started {failover:?} after the crash, within the crashed lease"
    );
    assert!(failover < Duration::from_secs(10), "{failover:?}");

    let survivor = sidecars[1 - i].take().expect("running");
    sigterm(&survivor);
    let out = tokio::time::timeout(Duration::from_secs(10), survivor.wait_with_output())
        .await
        .expect("the sidecar exits after SIGTERM")
        .expect("its output");
    let logs = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{:?}: {logs}", out.status);
    let stops = entries(&log, "stop");
    assert_eq!(
        stops.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        [second.as_str()],
        "the survivor's child stopped through its TERM trap, the crashed one's never: {:?}",
        lines(&log)
    );
    let lease = site
        .server
        .object(kube_emulator::Resource::Lease, &site.ns, "sidecar")
        .expect("the Lease exists");
    assert_eq!(lease["spec"]["holderIdentity"], "", "released: {lease}");
    site.assert_nothing_forbidden(&crashed_logs);
    site.assert_nothing_forbidden(&logs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_leaders_child_dies_and_the_other_sidecar_takes_over() {
    let emu = Emulator::start().await.expect("emulator");
    a_sigkilled_leaders_child_dies_and_the_other_takes_over(&Site::emulator(&emu, "crash")).await;
}

/// The failover on kube-apiserver, the sidecars as the ServiceAccount
/// `nightly-report` of `deploy/run-mode.yaml` under `deploy/rbac.yaml`'s Role.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
async fn a_sigkilled_leaders_child_dies_and_the_other_sidecar_takes_over_on_kube_apiserver() {
    let site = tokio::task::block_in_place(|| {
        Site::apiserver(
            ApiServer::shared(),
            "crash",
            &["rbac.yaml", "run-mode.yaml"],
            "nightly-report",
        )
    });
    a_sigkilled_leaders_child_dies_and_the_other_takes_over(&site).await;
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

/// A graceful give-up (SIGTERM to the sidecar while it leads) waits for the child
/// beyond `--kill-after-ms` (up to the drain budget, `renew_deadline -
/// request_timeout`: 1 s here): a child that takes 0.6 s to clean up finishes. After a loss (partitioned past its deadline)
/// the short bound holds: the same child is SIGKILLed before it finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_waits_for_the_child_and_a_loss_does_not() {
    let emu = Emulator::start().await.expect("emulator");
    let dir = temp("graceful");
    let log = dir.join("children.log");
    let script = format!(
        "id=$LEADER_ELECTOR_IDENTITY; \
         trap 'sleep 0.6; echo \"cleaned $id 0\" >> {log}; exit 0' TERM; \
         echo \"up $id $$\" >> {log}; \
         while :; do sleep 0.05; done",
        log = log.display()
    );
    let child = ["sh", "-c", script.as_str()];

    let s = sidecar(&emu, &dir, "sidecar-g", &child);
    wait_count(&log, "up", Some("sidecar-g"), 1, Duration::from_secs(15)).await;
    stop_cleanly(s).await;
    assert_eq!(
        entries(&log, "cleaned").len(),
        1,
        "the child finished its clean-up: {:?}",
        lines(&log)
    );

    let s = sidecar(&emu, &dir, "sidecar-l", &child);
    wait_count(&log, "up", Some("sidecar-l"), 1, Duration::from_secs(15)).await;
    let pid = entries(&log, "up")[1].1;
    emu.faults("sidecar-l").hang();
    // Loss at the deadline (1.5 s after the last renew), SIGKILL 0.3 s later.
    let start = Instant::now();
    while !gone(pid) && start.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone(pid), "the child was stopped after the loss");
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        entries(&log, "cleaned").len(),
        1,
        "after a loss the child was killed before its clean-up: {:?}",
        lines(&log)
    );
    emu.faults("sidecar-l").clear();
    stop_cleanly(s).await;
    let _ = std::fs::remove_dir_all(dir);
}

/// The pids of every live (not zombie) process in process group `pgid`.
fn group_members(pgid: u64) -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
        .filter(|&pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid pgrp …`
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next().unwrap_or("Z");
            let pgrp = fields.nth(1).and_then(|g| g.parse::<u64>().ok());
            !state.starts_with(['Z', 'X']) && pgrp == Some(pgid)
        })
        .collect()
}

/// The process group of `pid`.
fn pgid_of(pid: u64) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let (_, rest) = stat.rsplit_once(')').expect("stat format");
    rest.split_whitespace()
        .nth(2)
        .expect("pgrp")
        .parse()
        .expect("a pgid")
}

/// The sidecar is SIGKILLed while its child runs: no chance to stop it. The child
/// is a shell that started a grandchild in the background (same group) and then
/// `exec`ed a long sleep. Within a second the child, the grandchild and every
/// process of the group are gone: the shim between sidecar and child got its
/// parent-death signal and SIGKILLed the group, itself included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_child_and_its_group_die_with_a_sigkilled_sidecar() {
    let emu = Emulator::start().await.expect("emulator");
    let dir = temp("pdeathsig");
    let log = dir.join("children.log");
    let script = format!(
        "sleep 1000 & echo \"grand $LEADER_ELECTOR_IDENTITY $!\" >> {log}; \
         echo \"up $LEADER_ELECTOR_IDENTITY $$\" >> {log}; exec sleep 1000",
        log = log.display()
    );
    let s = sidecar(&emu, &dir, "sidecar-k", &["sh", "-c", script.as_str()]);
    wait_count(&log, "up", Some("sidecar-k"), 1, Duration::from_secs(15)).await;
    let pid = entries(&log, "up")[0].1;
    let grand = entries(&log, "grand")[0].1;
    let pgid = pgid_of(pid);
    assert_eq!(
        pgid_of(grand),
        pgid,
        "the grandchild is in the child's group"
    );
    let sidecar_pid = u64::from(s.id().expect("running"));
    assert_ne!(pgid, sidecar_pid, "the child's group is not the sidecar's");
    let members = group_members(pgid);
    assert!(
        members.contains(&pid) && members.contains(&grand) && members.contains(&pgid),
        "the shim (the group's leader), the child and the grandchild run: {members:?}"
    );

    common::sigkill(&s);
    let killed = Instant::now();
    let mut left = group_members(pgid);
    while !left.is_empty() && killed.elapsed() < Duration::from_secs(1) {
        tokio::time::sleep(Duration::from_millis(5)).await;
        left = group_members(pgid);
    }
    let took = killed.elapsed();
    let status = tokio::time::timeout(Duration::from_secs(5), s.wait_with_output())
        .await
        .expect("the sidecar dies")
        .expect("status");
    assert!(!status.status.success());
    if !left.is_empty() {
        // Do not leave them behind.
        let _ = rustix::process::kill_process_group(
            rustix::process::Pid::from_raw(pgid as i32).expect("pgid"),
            rustix::process::Signal::KILL,
        );
    }
    assert!(
        left.is_empty(),
        "the group {pgid} outlived its SIGKILLed sidecar by {took:?}: {left:?}"
    );
    assert!(
        gone(pid) && gone(grand),
        "the child and the grandchild are gone"
    );
    eprintln!("the group was gone {took:?} after the SIGKILL");
    let _ = std::fs::remove_dir_all(dir);
}

/// The shim alone: it runs the command as its own child, in the group it leads
/// (never its caller's), and exits with the command's code (128 + the signal that
/// killed it); it answers 127 for a command that does not exist, and refuses to
/// start anything when its parent is not the pid it was given (the sidecar died
/// before it could ask for the parent-death signal).
#[tokio::test]
async fn the_exec_child_shim_runs_the_command_only_under_its_parent() {
    let me = std::process::id().to_string();
    let shim = |parent: &str, command: &[&str]| {
        let child = std::process::Command::new(common::BIN)
            .args(["__exec-child", "--parent", parent, "--"])
            .args(command)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run the shim");
        let id = u64::from(child.id());
        (id, child.wait_with_output().expect("the shim's output"))
    };
    let (shim_pid, out) = shim(
        &me,
        &[
            "sh",
            "-c",
            "echo $$ $PPID $(ps -o pgid= -p $$ 2>/dev/null); exit 7",
        ],
    );
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut ids = stdout
        .split_whitespace()
        .map(|w| w.parse::<u64>().expect("a pid"));
    let (ran_as, its_parent) = (ids.next().expect("pid"), ids.next().expect("ppid"));
    assert_ne!(ran_as, shim_pid);
    assert_eq!(its_parent, shim_pid, "the shim is the command's parent");
    if let Some(group) = ids.next() {
        assert_eq!(
            group, shim_pid,
            "the command runs in the group the shim leads"
        );
    }

    let (_, out) = shim(&me, &["sh", "-c", "kill -KILL $$"]);
    assert_eq!(out.status.code(), Some(128 + 9), "{out:?}");

    let (_, out) = shim(&me, &["/nonexistent/command"]);
    assert_eq!(out.status.code(), Some(127), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/command"), "{stderr}");

    let (_, out) = shim("1", &["sh", "-c", "echo ran"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "the command did not run: {out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is gone"), "{stderr}");
}
