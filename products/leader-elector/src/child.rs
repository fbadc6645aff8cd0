//! `run` mode's child: started through a shim that ties it to the sidecar's life,
//! stopped as a process group.
//!
//! # Parent death
//!
//! The sidecar does not fork the command itself. It starts its own executable
//! ([`std::env::current_exe`]) as `leader-elector __exec-child --parent <pid> -- CMD
//! ARGS…`, in a new process group, with the child's environment. The shim
//! ([`exec_child`]) catches SIGTERM, asks the kernel for SIGTERM when its parent
//! dies (`PR_SET_PDEATHSIG`, through rustix, no `unsafe`), checks that its parent
//! is still the sidecar (if the sidecar died before the request, the signal would
//! never come: the shim exits at once instead), then starts the command as its own
//! child, in its group, and waits for it. The command starts with SIGTERM's default
//! action (a caught signal is reset by `exec`).
//!
//! - The command exits: the shim exits with its code (128 + the signal if a signal
//!   killed it), which the sidecar passes on.
//! - A SIGTERM arrives and the parent is still the sidecar: the sidecar is stopping
//!   the group, which got the same SIGTERM; the shim waits on for the command (and
//!   the sidecar's SIGKILL to the group, if it comes, ends the shim too).
//! - A SIGTERM arrives and the parent is gone (`getppid` changed: the kernel
//!   re-parents before it signals): the shim SIGKILLs its whole group, itself
//!   included.
//!
//! So if the sidecar is SIGKILLed (or dies any other way), the command and
//! everything it started in its group die at once: no leaderless worker runs on.
//! Only a process that left the group (`setsid`, `setpgid`) escapes; the sidecar as
//! the container's entry point covers that too, since its end takes the whole PID
//! namespace along. The sidecar itself never kills the shim alone (no
//! `kill_on_drop`, which would orphan the command): every signal goes to the group.
//!
//! Linux sends the parent-death signal when the *thread* that forked the child
//! exits, not the process. Every child is therefore forked by one dedicated thread
//! ([`Spawner`]) that lives as long as the process, never by a pool thread that may
//! be retired (tokio's blocking pool retires idle threads, and `block_in_place`
//! turns a worker thread into one).

use std::ffi::OsString;
use std::io;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock, Weak, mpsc};
use std::time::Duration;

use election_driver::{CancelSignal, Handle};
use rustix::process::{Pid, Signal};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{oneshot, watch};

/// The hidden subcommand that runs the shim.
pub const EXEC_CHILD: &str = "__exec-child";

/// The shim: leads a process group (the sidecar started it in a new one), asks
/// for SIGTERM at the parent's death, checks that the parent is still `parent`,
/// runs `command` in its group and waits for it. Exits with the command's code
/// (128 + the signal if a signal killed it); 1 if the parent is already gone, 127
/// if the command was not found, 126 if it could not be started. If the parent
/// dies first, it SIGKILLs its whole group, itself included.
pub fn exec_child(parent: u32, command: &[OsString]) -> ExitCode {
    let Some((program, args)) = command.split_first() else {
        eprintln!("leader-elector: {EXEC_CHILD}: no command");
        return ExitCode::from(2);
    };
    let shown = program.to_string_lossy();
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        eprintln!("leader-elector: {EXEC_CHILD}: {what} for {shown}: {e}");
        ExitCode::from(1)
    };
    // The group the shim SIGKILLs must be its own, never its caller's.
    let me = rustix::process::getpid();
    if rustix::process::getpgrp() != me
        && let Err(e) = rustix::process::setpgid(None, None)
    {
        return fail("failed to start a process group", &e);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail("failed to start a runtime", &e),
    };
    runtime.block_on(async {
        // Caught before it is asked for: the parent-death signal, and the
        // sidecar's SIGTERM to the group on a stop (the command got it too: the
        // shim waits on for it). The command, `exec`ed, starts with the default.
        let mut terms = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(e) => return fail("failed to catch SIGTERM", &e),
        };
        if let Err(e) = rustix::process::set_parent_process_death_signal(Some(Signal::TERM)) {
            return fail("failed to set the parent-death signal", &e);
        }
        // Asked after the request: a parent that died before it has re-parented us.
        let parent_gone =
            || rustix::process::getppid().map(|p| p.as_raw_pid().unsigned_abs()) != Some(parent);
        if parent_gone() {
            eprintln!("leader-elector: the sidecar (pid {parent}) is gone; not starting {shown}");
            return ExitCode::from(1);
        }
        let mut child = match tokio::process::Command::new(program).args(args).spawn() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("leader-elector: failed to start {shown}: {e}");
                return ExitCode::from(if e.kind() == io::ErrorKind::NotFound {
                    127
                } else {
                    126
                });
            }
        };
        let status = loop {
            tokio::select! {
                status = child.wait() => break status,
                Some(()) = terms.recv() => {
                    if parent_gone() {
                        // Kills the shim too: this is its end.
                        let _ = rustix::process::kill_process_group(me, Signal::KILL);
                    }
                }
            }
        };
        if parent_gone() {
            // Nobody is left to clean up what the command left in the group.
            let _ = rustix::process::kill_process_group(me, Signal::KILL);
        }
        ExitCode::from(status.map_or(1, exit_code))
    })
}

type SpawnRequest = (
    tokio::process::Command,
    oneshot::Sender<io::Result<tokio::process::Child>>,
);

/// The thread that forks every child (see the module docs: the parent-death
/// signal follows the forking thread). Started on first use; it lives until the
/// process ends, since its sender is never dropped.
struct Spawner {
    requests: mpsc::Sender<SpawnRequest>,
}

static SPAWNER: OnceLock<Result<Spawner, String>> = OnceLock::new();

impl Spawner {
    /// The spawner, started (with the current runtime's handle) on first use.
    fn get() -> io::Result<&'static Spawner> {
        let spawner = SPAWNER.get_or_init(|| {
            let runtime = tokio::runtime::Handle::current();
            let (requests, incoming) = mpsc::channel::<SpawnRequest>();
            std::thread::Builder::new()
                .name("child-spawner".into())
                .spawn(move || {
                    // tokio's child handles need the runtime (its SIGCHLD driver).
                    let _runtime = runtime.enter();
                    for (mut command, reply) in incoming {
                        let _ = reply.send(command.spawn());
                    }
                })
                .map(|_| Spawner { requests })
                .map_err(|e| e.to_string())
        });
        spawner.as_ref().map_err(|e| io::Error::other(e.clone()))
    }

    /// Spawns `command` on the spawner thread.
    async fn spawn(command: tokio::process::Command) -> io::Result<tokio::process::Child> {
        let (reply, answer) = oneshot::channel();
        Self::get()?
            .requests
            .send((command, reply))
            .map_err(|_| io::Error::other("the child-spawner thread is gone"))?;
        answer
            .await
            .map_err(|_| io::Error::other("the child-spawner thread is gone"))?
    }
}

/// The leader work of `run` mode: the child process.
#[derive(Clone)]
pub(crate) struct ChildWork {
    pub(crate) command: Arc<Vec<String>>,
    pub(crate) identity: Arc<str>,
    /// How long a child may take to stop after a loss.
    pub(crate) kill_after: Duration,
    /// How long a child may take to stop on a graceful give-up.
    pub(crate) graceful: Duration,
    /// The election's handle, set once it is spawned: whether this node still
    /// leads decides which bound applies.
    pub(crate) handle: Arc<OnceLock<Weak<Handle>>>,
    pub(crate) exited: Arc<watch::Sender<Option<u8>>>,
    /// With `--api-proxy`: the child's kubeconfig, naming the proxy.
    pub(crate) kubeconfig: Option<Arc<std::path::Path>>,
}

fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c & 0xff).unwrap_or(1),
        (None, Some(s)) => u8::try_from(128 + (s & 0x7f)).unwrap_or(1),
        _ => 1,
    }
}

/// Sends `signal` to the process group `group` (the child's pid: it leads its own
/// group). A group that no longer exists is no error.
fn signal_group(group: Option<Pid>, signal: Signal) {
    if let Some(group) = group {
        let _ = rustix::process::kill_process_group(group, signal);
    }
}

/// SIGKILLs the child's group when dropped: the work's future was dropped with
/// the child still running (a runtime shutting down). Disarmed once the group is
/// stopped.
struct GroupGuard(Option<Pid>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        signal_group(self.0, Signal::KILL);
    }
}

/// How often a stopping child's bound is re-checked (a loss during a graceful
/// stop shortens it).
const RECHECK: Duration = Duration::from_millis(50);

impl ChildWork {
    /// Whether this node still leads (time-bounded) and renews: a stop now is a
    /// graceful one.
    fn still_leading(&self) -> bool {
        self.handle
            .get()
            .and_then(Weak::upgrade)
            .is_some_and(|h| h.is_leader())
    }

    /// The shim's command line for the child: `<self> __exec-child --parent <pid>
    /// -- CMD ARGS…`, in a group of its own, with the term and identity.
    fn command(&self, term: &election_core::Term) -> io::Result<tokio::process::Command> {
        let exe = std::env::current_exe()?;
        let mut command = tokio::process::Command::new(exe);
        command
            .arg(EXEC_CHILD)
            .arg("--parent")
            .arg(std::process::id().to_string())
            .arg("--")
            .args(self.command.iter())
            .env("LEADER_ELECTOR_TERM", term.to_string())
            .env("LEADER_ELECTOR_IDENTITY", &*self.identity)
            // A group of its own: signals reach the shim, the command and
            // everything it started. No `kill_on_drop`: it would kill the shim
            // alone (see `GroupGuard`).
            .process_group(0);
        if let Some(kubeconfig) = &self.kubeconfig {
            command.env("KUBECONFIG", &**kubeconfig);
            for var in crate::api_proxy::IN_CLUSTER_VARS {
                command.env_remove(var);
            }
        }
        Ok(command)
    }

    pub(crate) async fn run(self, term: election_core::Term, cancel: CancelSignal) {
        let Some(program) = self.command.first() else {
            return;
        };
        let spawned = match self.command(&term) {
            Ok(command) => Spawner::spawn(command).await,
            Err(e) => Err(e),
        };
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(program, error = %e, "failed to start the child");
                self.exited.send_replace(Some(127));
                return;
            }
        };
        let pid = child.id();
        let group = pid
            .and_then(|p| i32::try_from(p).ok())
            .and_then(Pid::from_raw);
        // If this future is dropped before the group is stopped, the group dies.
        let mut guard = GroupGuard(group);
        tracing::info!(program, pid, %term, identity = &*self.identity, "child started");
        tokio::select! {
            status = child.wait() => {
                let code = status.map_or(1, exit_code);
                tracing::info!(program, pid, code, "child exited by itself");
                // Whatever it left behind must not outlive the term.
                signal_group(group, Signal::KILL);
                self.exited.send_replace(Some(code));
            }
            () = cancel.cancelled() => {
                self.stop(program, &mut child, group).await;
            }
        }
        // Stopped: the group was SIGKILLed already.
        guard.0 = None;
    }

    /// Stops the child's group: SIGTERM, then SIGKILL once the bound has passed.
    /// The bound is `graceful` while this node still leads (a step-down or
    /// shutdown: renewals go on and the driver waits), `kill_after` from the
    /// moment it no longer leads (a loss: another may lead soon).
    async fn stop(&self, program: &str, child: &mut tokio::process::Child, group: Option<Pid>) {
        let pid = child.id();
        tracing::info!(program, pid, "stopping the child (SIGTERM to its group)");
        signal_group(group, Signal::TERM);
        let begun = tokio::time::Instant::now();
        let graceful_until = begun + self.graceful;
        let mut lost_at = None;
        loop {
            if lost_at.is_none() && !self.still_leading() {
                lost_at = Some(tokio::time::Instant::now());
            }
            let kill_at = lost_at.map_or(graceful_until, |at| {
                (at + self.kill_after).min(graceful_until)
            });
            tokio::select! {
                status = child.wait() => {
                    let code = status.map_or(1, exit_code);
                    tracing::info!(program, pid, code, "child stopped");
                    break;
                }
                () = tokio::time::sleep_until(kill_at) => {
                    tracing::warn!(program, pid, "child ignored SIGTERM; SIGKILL to its group");
                    signal_group(group, Signal::KILL);
                    let _ = child.kill().await;
                    break;
                }
                () = tokio::time::sleep(RECHECK), if lost_at.is_none() => {}
            }
        }
        // Anything left in the group (a child's own children) goes too.
        signal_group(group, Signal::KILL);
    }
}
