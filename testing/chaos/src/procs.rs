//! The candidate processes: which binaries, their command lines, spawning and
//! signals, and the guard that kills and reaps a child on every exit path.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

use crate::logs::{Reader, Source};

/// What a candidate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `leader-elector serve`.
    Serve,
    /// `leader-elector run -- sleep …`: a child only while leading.
    Run,
    /// The quick start (`kube-elector/examples/quickstart.rs`), `--mix` only.
    Quickstart,
    /// `testing/client-go-peer`: client-go's `tools/leaderelection`, the
    /// reference, `--client-go K` only.
    ClientGo,
}

impl Kind {
    /// How the report names it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Serve => "leader-elector serve",
            Kind::Run => "leader-elector run",
            Kind::Quickstart => "quickstart",
            Kind::ClientGo => "client-go-peer",
        }
    }

    /// Whether it is this library (not the client-go reference).
    pub fn is_ours(self) -> bool {
        self != Kind::ClientGo
    }

    /// Whether its leadership lines are on stdout (else stderr).
    pub fn reads_stdout(self) -> bool {
        matches!(self, Kind::Quickstart | Kind::ClientGo)
    }
}

/// The binaries the run starts.
#[derive(Debug, Clone)]
pub struct Bins {
    /// `leader-elector`.
    pub elector: PathBuf,
    /// The quick start, with `--mix`.
    pub quickstart: Option<PathBuf>,
    /// `client-go-peer`, with `--client-go K` (built by
    /// `testing/k8s-server/build.sh`, beside kube-apiserver).
    pub client_go: Option<PathBuf>,
    /// `setpriv`, when installed: children get SIGKILL if the harness dies.
    pub setpriv: Option<PathBuf>,
    /// libfaketime, when installed: preloaded into a candidate with a clock rate.
    pub libfaketime: Option<PathBuf>,
}

/// Debian's libfaketime (package `libfaketime`, installed with `faketime`).
/// Preloaded directly rather than through the `faketime` wrapper, which keeps a
/// semaphore named after its pid: one left by a SIGKILLed wrapper made a later
/// wrapper with the same pid exit with `sem_open: File exists`.
pub fn libfaketime() -> Option<PathBuf> {
    let dirs = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("faketime"));
    [
        PathBuf::from("/usr/lib/faketime"),
        PathBuf::from("/usr/local/lib/faketime"),
    ]
    .into_iter()
    .chain(dirs)
    .map(|dir| dir.join("libfaketime.so.1"))
    .find(|p| p.is_file())
}

/// The first `name` on `PATH`.
pub fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// The workspace's root (this crate's manifest is `testing/chaos/Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Whether this harness was built with optimisations.
pub fn release() -> bool {
    !cfg!(debug_assertions)
}

/// Builds what the run needs with cargo, in this harness's profile, and finds
/// it in the target directory of that profile (the one this harness runs from).
pub fn build(mix: bool, client_go: bool) -> Result<Bins, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut builds: Vec<Vec<&str>> = vec![vec!["-p", "leader-elector", "--bin", "leader-elector"]];
    if mix {
        builds.push(vec!["-p", "kube-elector", "--example", "quickstart"]);
    }
    for what in builds {
        let mut cmd = Command::new(&cargo);
        cmd.arg("build").arg("--quiet").args(&what);
        if release() {
            cmd.arg("--release");
        }
        let out = cmd
            .current_dir(workspace_root())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run cargo ({}): {e}", cargo.to_string_lossy()))?;
        if !out.status.success() {
            return Err(format!(
                "`cargo build {}` failed:\n{}",
                what.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this program: {e}"))?;
    // <target>/<profile>/chaos
    let profile_dir = exe
        .parent()
        .ok_or("cannot locate the target directory")?
        .to_path_buf();
    let found = |path: PathBuf| {
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{} is missing after the build: run `cargo build{} -p leader-elector{}`",
                path.display(),
                if release() { " --release" } else { "" },
                if mix {
                    " && cargo build -p kube-elector --example quickstart"
                } else {
                    ""
                }
            ))
        }
    };
    Ok(Bins {
        elector: found(profile_dir.join("leader-elector"))?,
        quickstart: if mix {
            Some(found(profile_dir.join("examples").join("quickstart"))?)
        } else {
            None
        },
        client_go: if client_go {
            let peer = test_kit::apiserver::bin_dir().join("client-go-peer");
            if !peer.is_file() {
                return Err(format!(
                    "{} is missing: build it with `{}`",
                    peer.display(),
                    test_kit::apiserver::BUILD_SCRIPT
                ));
            }
            Some(peer)
        } else {
            None
        },
        setpriv: which("setpriv"),
        libfaketime: libfaketime(),
    })
}

/// The election's timings, as every candidate of a run is given them.
#[derive(Debug, Clone, Copy)]
pub struct Timings {
    /// Lease duration.
    pub lease: Duration,
    /// Renew deadline.
    pub renew: Duration,
    /// Retry period.
    pub retry: Duration,
}

/// One candidate: what it runs and as whom.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Identity, also its bearer token (how the emulator tells it apart).
    pub identity: String,
    /// What it runs.
    pub kind: Kind,
    /// Its own kubeconfig (its token).
    pub kubeconfig: PathBuf,
    /// The Lease.
    pub lease: String,
    /// The Lease's namespace (the kubeconfig names it too).
    pub namespace: String,
    /// The timings (the quick start has client-go's, fixed).
    pub timings: Timings,
    /// A clock rate for faketime (`None`: the real clock).
    pub rate: Option<f64>,
}

fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// The command that starts `spec` (wrapped in `setpriv --pdeathsig KILL` when
/// installed, with libfaketime preloaded when it has a rate).
pub fn command(spec: &Spec, bins: &Bins) -> Command {
    let mut argv: Vec<String> = Vec::new();
    if let Some(setpriv) = &bins.setpriv {
        argv.extend([
            setpriv.display().to_string(),
            "--pdeathsig".into(),
            "KILL".into(),
            "--".into(),
        ]);
    }
    let t = spec.timings;
    let sidecar = |mode: &str| {
        vec![
            bins.elector.display().to_string(),
            mode.into(),
            "--lease".into(),
            spec.lease.clone(),
            "--identity".into(),
            spec.identity.clone(),
            "--kubeconfig".into(),
            spec.kubeconfig.display().to_string(),
            "--lease-duration".into(),
            format!("{}s", t.lease.as_secs()),
            "--renew-deadline".into(),
            ms(t.renew),
            "--retry-period".into(),
            ms(t.retry),
        ]
    };
    match spec.kind {
        Kind::Serve => {
            argv.extend(sidecar("serve"));
            argv.extend(["--addr".into(), "127.0.0.1:0".into()]);
        }
        Kind::Run => {
            argv.extend(sidecar("run"));
            argv.extend(["--".into(), "sleep".into(), "1000000".into()]);
        }
        Kind::Quickstart => {
            let bin = bins
                .quickstart
                .as_ref()
                .expect("--mix built the quick start");
            argv.push(bin.display().to_string());
        }
        Kind::ClientGo => {
            let bin = bins.client_go.as_ref().expect("--client-go found the peer");
            let millis = |d: Duration| d.as_millis().to_string();
            argv.extend([
                bin.display().to_string(),
                "--id".into(),
                spec.identity.clone(),
                "--lease".into(),
                spec.lease.clone(),
                "--namespace".into(),
                spec.namespace.clone(),
                "--kubeconfig".into(),
                spec.kubeconfig.display().to_string(),
                "--lease-duration-ms".into(),
                millis(t.lease),
                "--renew-deadline-ms".into(),
                millis(t.renew),
                "--retry-period-ms".into(),
                millis(t.retry),
                // Its work ticks rarely: the judge reads its start and stop.
                "--tick-ms".into(),
                "3600000".into(),
            ]);
        }
    }
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        // The driver's lock calls and their answers too: the trace of an
        // overlap or a late stop then shows whether the process was sending.
        .env("RUST_LOG", "info,election_driver=debug")
        .env("ELECTION_IDENTITY", &spec.identity)
        .env("KUBECONFIG", &spec.kubeconfig)
        .env("PROBE_ADDR", "127.0.0.1:0");
    if let Some(rate) = spec.rate {
        let lib = bins
            .libfaketime
            .as_ref()
            .expect("a clock rate only when libfaketime is installed (skew::ensure_faketime)");
        cmd.env("LD_PRELOAD", lib)
            .env("FAKETIME", format!("+0 x{rate:.4}"));
    }
    cmd
}

/// A running child in a process group of its own (so that signals reach the
/// `setpriv` wrapper's child too, and a Ctrl-C at the terminal reaches only the
/// harness). Dropping it kills the group and reaps the child, so that no exit
/// path (a panic included) leaves it running.
#[derive(Debug)]
pub struct Proc {
    child: Child,
    pid: Pid,
    /// When it was started.
    pub spawned: Instant,
    reaped: bool,
    /// Whether libfaketime was preloaded into it (see [`Proc::mark_reaped`]).
    faked: bool,
}

impl Proc {
    /// Starts `cmd` in a group of its own, its stderr (and stdout, for the quick
    /// start and kubectl) read as `src`.
    pub fn spawn(
        mut cmd: Command,
        src: Source,
        reader: &Reader,
        read_stdout: bool,
    ) -> std::io::Result<Proc> {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0)
            .stdin(Stdio::null())
            .stdout(if read_stdout {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(Stdio::piped());
        let faked = cmd
            .get_envs()
            .any(|(k, v)| k == "LD_PRELOAD" && v.is_some());
        let spawned = Instant::now();
        let mut child = cmd.spawn()?;
        let pid = Pid::from_child(&child);
        if let Some(out) = child.stdout.take() {
            reader.add(src, out);
        }
        if let Some(err) = child.stderr.take() {
            reader.add(src, err);
        }
        Ok(Proc {
            child,
            pid,
            spawned,
            reaped: false,
            faked,
        })
    }

    /// Marks it reaped. libfaketime keeps a semaphore and a shared memory
    /// object named after the pid, which only a clean exit removes: those of a
    /// killed candidate go here, so that they pile up neither in `/dev/shm` nor
    /// in the way of a later process given the same pid.
    fn mark_reaped(&mut self) {
        self.reaped = true;
        if self.faked {
            let pid = self.pid.as_raw_nonzero();
            let _ = std::fs::remove_file(format!("/dev/shm/sem.faketime_sem_{pid}"));
            let _ = std::fs::remove_file(format!("/dev/shm/faketime_shm_{pid}"));
        }
    }

    /// Its pid, while it has not been reaped.
    pub fn pid(&self) -> Option<i32> {
        (!self.reaped).then(|| self.pid.as_raw_nonzero().get())
    }

    /// Sends `sig` to its group.
    pub fn signal(&self, sig: Signal) {
        if !self.reaped {
            let _ = kill_process_group(self.pid, sig);
        }
    }

    /// SIGKILLs the group and reaps the child; the instant of the kill.
    pub fn kill(&mut self) -> Instant {
        let at = Instant::now();
        self.signal(Signal::KILL);
        let _ = self.child.wait();
        self.mark_reaped();
        at
    }

    /// Whether it has exited (reaping it), and how.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        if self.reaped {
            return self.child.try_wait().ok().flatten();
        }
        match self.child.try_wait() {
            Ok(Some(status)) => {
                self.mark_reaped();
                Some(status)
            }
            _ => None,
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
        }
    }
}

/// A temporary directory, removed when dropped.
#[derive(Debug)]
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh directory under the system's temporary directory. Directories
    /// that earlier runs could not remove (a harness SIGKILLed) go too: those
    /// named `chaos-<pid>` of a process that no longer exists.
    pub fn new() -> std::io::Result<TempDir> {
        let tmp = std::env::temp_dir();
        if let Ok(entries) = std::fs::read_dir(&tmp) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let stale = name
                    .to_str()
                    .and_then(|n| n.strip_prefix("chaos-"))
                    .and_then(|pid| pid.parse::<u32>().ok())
                    .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
                let ours = [
                    "probe.kubeconfig",
                    "kubectl.kubeconfig",
                    "cand-0.kubeconfig",
                ]
                .iter()
                .any(|f| entry.path().join(f).is_file());
                if stale && ours {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
        let dir = tmp.join(format!("chaos-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
