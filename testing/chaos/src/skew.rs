//! Clock-rate skew with faketime, and the probe that checks it reaches the
//! election's clock.
//!
//! faketime (`LD_PRELOAD` of libfaketime) fakes the clocks a program reads
//! through libc: Rust's `std::time::Instant`, tokio's timers, and the election
//! driver's `CLOCK_BOOTTIME` (read through libc for this reason:
//! `election-driver/src/clock.rs`). The probe checks the last of these in a
//! real sidecar before the run counts on it: a sidecar with libfaketime
//! preloaded and `FAKETIME="+0 x2"` creates a fresh Lease and, by the strict lock delay (design §4), leads
//! one lease duration after its create's answer, on its election clock. On a
//! clock twice as fast that is half a lease of real time; a whole one means
//! the election's clock ignores faketime, and the run stops with that finding.

use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use kube_emulator::Verb;

use crate::history::History;
use crate::logs::{Change, Msg, Reader, Source, change};
use crate::procs::{Bins, Kind, Proc, Spec, Timings, command, libfaketime, workspace_root};
use crate::server::Server;

/// Makes sure faketime is installed, installing it with the repository's
/// `.ci/install` when running as root; `Err` says what to do.
pub fn ensure_faketime() -> Result<(), String> {
    if libfaketime().is_some() {
        return Ok(());
    }
    let script = workspace_root().join(".ci").join("install");
    if rustix::process::geteuid().is_root() && script.is_file() {
        eprintln!("faketime is missing: installing it with `bash .ci/install faketime`");
        let status = std::process::Command::new("bash")
            .arg(&script)
            .arg("faketime")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status();
        if status.is_ok_and(|s| s.success()) && libfaketime().is_some() {
            return Ok(());
        }
    }
    Err("faketime is not installed and could not be installed: \
         run `bash .ci/install faketime` as root (Debian's package `faketime`), \
         or pass --no-faketime"
        .to_owned())
}

/// Runs the probe (a few seconds): one sidecar with libfaketime at `FAKETIME="+0 x2"` on
/// a Lease of its own. `Ok` is the report's line; `Err` says why the
/// election's clock cannot be skewed this way.
pub async fn probe(
    server: &Server,
    dir: &Path,
    bins: &Bins,
    reader: &Reader,
    msgs: &Receiver<Msg>,
    timings: Timings,
) -> Result<String, String> {
    const NAME: &str = "chaos-probe";
    let kubeconfig = dir.join("probe.kubeconfig");
    server.candidate_kubeconfig(NAME, &kubeconfig).await?;
    let spec = Spec {
        identity: NAME.into(),
        kind: Kind::Serve,
        kubeconfig,
        lease: NAME.into(),
        namespace: server.namespace().into(),
        timings,
        rate: Some(2.0),
    };
    let mut history = History::new(NAME);
    let proc = Proc::spawn(command(&spec, bins), Source::Probe, reader, false)
        .map_err(|e| format!("cannot start the faketime probe: {e}"))?;
    let wait_for = timings.lease * 4 + Duration::from_secs(3);
    let limit = Instant::now() + wait_for;
    let mut started = None;
    let mut last_lines: Vec<String> = Vec::new();
    while started.is_none() && Instant::now() < limit {
        while let Ok(msg) = msgs.try_recv() {
            if let Msg::Line {
                src: Source::Probe,
                at,
                text,
            } = msg
            {
                if matches!(change(&text), Some(Change::Started(_))) {
                    started = Some(at);
                }
                last_lines.push(text);
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(proc); // SIGKILL to its group, reaped
    history.collect(server);
    let created = history
        .writes()
        .find(|w| w.client == NAME && w.verb == Verb::Create)
        .map(|w| w.at);
    let lease = timings.lease;
    let Some((created, started)) = created.zip(started) else {
        let tail = last_lines[last_lines.len().saturating_sub(5)..].join("\n  ");
        return Err(format!(
            "the faketime probe did not lead within {:.0} s, so faketime's effect is unknown; last lines:\n  {tail}",
            wait_for.as_secs_f64()
        ));
    };
    let waited = started.saturating_duration_since(created);
    if waited < lease.mul_f64(0.75) {
        Ok(format!(
            "on: a sidecar under faketime x2 led {:.3} s after its create (strict lock delay of one {} s lease): faketime reaches its election clock",
            waited.as_secs_f64(),
            lease.as_secs()
        ))
    } else {
        Err(format!(
            "a sidecar under faketime x2 led {:.3} s (real) after its create, a whole {} s lease \
             (x2 would take {:.1} s): faketime does not reach the election's clock \
             (election-driver/src/clock.rs must read it through libc)",
            waited.as_secs_f64(),
            lease.as_secs(),
            lease.as_secs_f64() / 2.0
        ))
    }
}
