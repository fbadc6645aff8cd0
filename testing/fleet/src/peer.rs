//! A running peer process of either library, its lines collected into a
//! [`Log`] shared by the fleet, with the harness's own marks (each signal it
//! sends, on the same monotonic clock).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::line::{Event, Line, mono_now};

/// Which library a peer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Library {
    /// client-go's `tools/leaderelection` (`testing/client-go-peer`).
    ClientGo,
    /// kube-elector (`elector-peer`).
    Elector,
}

/// A signal the harness sends a peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM: shut down gracefully (release).
    Term,
    /// SIGKILL: a crash.
    Kill,
    /// SIGSTOP: a pause.
    Stop,
    /// SIGCONT: the pause ends.
    Cont,
}

/// The harness sent `signal` to `identity` at `mono`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// `CLOCK_MONOTONIC`, nanoseconds, just before sending.
    pub mono: u64,
    /// The peer's identity.
    pub identity: String,
    /// What was sent.
    pub signal: Signal,
}

#[derive(Default)]
struct Entries {
    lines: Vec<Line>,
    marks: Vec<Mark>,
    bad: Vec<String>,
    stderr: Vec<String>,
}

/// The lines of every peer of a fleet and the harness's marks.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Entries>>);

impl Log {
    fn entries(&self) -> MutexGuard<'_, Entries> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every line so far, in the order read.
    pub fn lines(&self) -> Vec<Line> {
        self.entries().lines.clone()
    }

    /// Every mark so far.
    pub fn marks(&self) -> Vec<Mark> {
        self.entries().marks.clone()
    }

    /// Output of a peer that did not read as a line.
    pub fn bad_lines(&self) -> Vec<String> {
        self.entries().bad.clone()
    }

    /// What the peers wrote to stderr (client-go's klog, errors), each line
    /// after its peer's identity.
    pub fn stderr(&self) -> Vec<String> {
        self.entries().stderr.clone()
    }

    /// The first line after `since` (monotonic) that `pred` takes, waiting up
    /// to `within`.
    pub async fn wait_for(
        &self,
        since: u64,
        within: Duration,
        pred: impl Fn(&Line) -> bool,
    ) -> Option<Line> {
        let started = Instant::now();
        loop {
            let found = self
                .entries()
                .lines
                .iter()
                .find(|l| l.mono > since && pred(l))
                .cloned();
            if found.is_some() || started.elapsed() > within {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Who leads by the lines: the identity whose last `leading` has no
    /// `stopped` after it and whose process was not killed since.
    pub fn leader(&self) -> Option<String> {
        let terms = crate::judge::terms(&self.lines(), &self.marks());
        terms
            .into_iter()
            .filter(|t| t.to.is_none())
            .map(|t| t.identity)
            .next_back()
    }
}

/// What a peer is started with.
#[derive(Clone, Debug)]
pub struct Spec {
    /// Its library.
    pub library: Library,
    /// Its identity.
    pub id: String,
    /// The Lease's name.
    pub lease: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// The kubeconfig it connects with.
    pub kubeconfig: PathBuf,
    /// client-go's three timings, in milliseconds.
    pub timings_ms: (u64, u64, u64),
    /// Its leader work's tick, milliseconds.
    pub tick_ms: u64,
    /// Coordinated election, with this binary version.
    pub coordinated: Option<String>,
}

impl Spec {
    /// The peer's command-line arguments (the same for both peers).
    pub fn args(&self) -> Vec<String> {
        let (lease, renew, retry) = self.timings_ms;
        let mut args: Vec<String> = [
            ("--id", self.id.clone()),
            ("--lease", self.lease.clone()),
            ("--namespace", self.namespace.clone()),
            ("--kubeconfig", self.kubeconfig.display().to_string()),
            ("--lease-duration-ms", lease.to_string()),
            ("--renew-deadline-ms", renew.to_string()),
            ("--retry-period-ms", retry.to_string()),
            ("--tick-ms", self.tick_ms.to_string()),
        ]
        .into_iter()
        .flat_map(|(k, v)| [k.to_owned(), v])
        .collect();
        if let Some(version) = &self.coordinated {
            args.push("--coordinated".into());
            args.extend(["--binary-version".into(), version.clone()]);
            args.extend(["--emulation-version".into(), version.clone()]);
        }
        args
    }
}

/// A running peer: killed (SIGKILL) on drop if it still runs.
pub struct Peer {
    /// What it was started with.
    pub spec: Spec,
    child: Child,
    log: Log,
}

impl Peer {
    /// Starts `spec` with the peer binary `bin`, its lines going to `log`.
    pub fn spawn(bin: &Path, spec: Spec, log: &Log) -> std::io::Result<Peer> {
        let mut child = Command::new(bin)
            .args(spec.args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let (sink, id) = (log.clone(), spec.id.clone());
        std::thread::spawn(move || {
            for text in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.entries().stderr.push(format!("{id}: {text}"));
            }
        });
        let sink = log.clone();
        std::thread::spawn(move || {
            for text in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut entries = sink.entries();
                match Line::parse(&text) {
                    Ok(line) => entries.lines.push(line),
                    Err(_) => entries.bad.push(text),
                }
            }
        });
        Ok(Peer {
            spec,
            child,
            log: log.clone(),
        })
    }

    /// Its identity.
    pub fn id(&self) -> &str {
        &self.spec.id
    }

    /// Sends `signal`, marked in the log first.
    pub fn signal(&self, signal: Signal) {
        use rustix::process::{Pid, Signal as S, kill_process};
        let sig = match signal {
            Signal::Term => S::TERM,
            Signal::Kill => S::KILL,
            Signal::Stop => S::STOP,
            Signal::Cont => S::CONT,
        };
        self.log.entries().marks.push(Mark {
            mono: mono_now(),
            identity: self.spec.id.clone(),
            signal,
        });
        let pid = i32::try_from(self.child.id())
            .ok()
            .and_then(Pid::from_raw)
            .expect("a child's pid");
        let _ = kill_process(pid, sig);
    }

    /// Its exit status if it exited (the client-go peer exits 1 when it loses
    /// its lease, as `RunOrDie` programs do).
    pub fn status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits up to `within` for it to exit; its exit status.
    pub async fn exited(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if started.elapsed() > within {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Waits for its `started` line.
    pub async fn started(&self, since: u64, within: Duration) -> bool {
        let id = self.spec.id.clone();
        self.log
            .wait_for(since, within, |l| {
                l.identity == id && l.event == Event::Started
            })
            .await
            .is_some()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
