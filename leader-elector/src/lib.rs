//! A leader-election sidecar on a Kubernetes Lease.
//!
//! - `leader-elector serve --lease NAME [--addr 127.0.0.1:4040]` campaigns and serves
//!   `GET /` → `{"name": "<holder>"}` (the holder as this node last saw it, `""` if
//!   none), like the old `k8s.gcr.io/leader-elector` sidecar, plus `/healthz`
//!   (client-go's healthz meaning: fails only for a leader wedged past its deadline),
//!   `/readyz`, `/status` (JSON) and `/metrics` (Prometheus text, client-go's metric
//!   names) from [`election_ops`].
//! - `leader-elector run --lease NAME [--addr ADDR] -- CMD ARGS…` runs the command
//!   only while leading (with `--addr`, the same health and metrics endpoint). The
//!   child runs in a process group of its own, and every signal goes to the whole
//!   group, so whatever it started (a shell's children) stops with it. On a graceful
//!   give-up (SIGTERM or SIGINT to the sidecar, or a step-down, while this node still
//!   leads and renews) the group gets SIGTERM and the child is waited for up to
//!   `renew_deadline - retry_period` (the driver waits one renew deadline for the
//!   leader work before it gives up without releasing; one retry period is left for
//!   the release write), then SIGKILL, before the lease is released. On a loss (the
//!   deadline passed, another holder, or a drain the driver stopped waiting for) the
//!   group gets SIGTERM and, at most `--kill-after-ms` later (capped at half of
//!   `lease_duration - renew_deadline`, the least time before another candidate can
//!   lead), SIGKILL; the sidecar then campaigns again. Once the child has exited,
//!   anything left in its group is killed. When the child exits by itself, the
//!   sidecar releases the lease and exits with the child's exit code (128 + signal
//!   if it was killed by one).
//!
//!   If the sidecar itself is SIGKILLed, the child's group survives it: a
//!   parent-death signal (`PR_SET_PDEATHSIG`) needs `pre_exec`, which is `unsafe`,
//!   and the workspace forbids `unsafe`. Run the sidecar as the container's entry
//!   point (PID 1 of its PID namespace): the container's end then takes the group
//!   with it.
//!
//! The identity is `ELECTION_IDENTITY`, else `$POD_NAME-<random>` or
//! `<hostname>-<random>` ([`election_ops::identity`]); the child sees it as
//! `LEADER_ELECTOR_IDENTITY`. The cluster comes from `--kubeconfig PATH`, else the
//! usual kube inference (`KUBECONFIG`, `~/.kube/config`, in-cluster). Timings default
//! to client-go's (15 s / 10 s / 2 s). `deploy.yaml` beside this crate is a
//! Deployment with its ServiceAccount and RBAC.
//!
//! ```
//! use clap::Parser;
//! use leader_elector::{Cli, Mode};
//!
//! let cli = Cli::try_parse_from(["leader-elector", "run", "--lease", "db-migrate", "--", "sleep", "5"]).unwrap();
//! let Mode::Run { lease, command, .. } = cli.mode else { unreachable!() };
//! assert_eq!((lease.as_str(), command.as_slice()), ("db-migrate", &["sleep".to_string(), "5".into()][..]));
//! ```
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use adapter_tokio::{Builder, CancellationToken, Handle};
use clap::{Parser, Subcommand};
use election_core::{Config, Lock};
use election_ops::Monitor;
use election_ops::health::Health;
use election_ops::http::Endpoint;
use lock_lease::LeaseLock;
use tokio::sync::watch;

/// Command-line interface.
#[derive(Debug, Parser)]
#[command(
    name = "leader-elector",
    about = "Leader election on a Kubernetes Lease"
)]
pub struct Cli {
    /// Namespace of the Lease (default: the kube config's namespace).
    #[arg(long, global = true)]
    pub namespace: Option<String>,
    /// A kubeconfig file to use (default: `KUBECONFIG`, `~/.kube/config`, then the
    /// in-cluster configuration).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Lease duration in milliseconds (client-go default 15000).
    #[arg(long, global = true, default_value_t = 15_000)]
    pub lease_duration_ms: u64,
    /// Renew deadline in milliseconds (client-go default 10000).
    #[arg(long, global = true, default_value_t = 10_000)]
    pub renew_deadline_ms: u64,
    /// Retry period in milliseconds (client-go default 2000).
    #[arg(long, global = true, default_value_t = 2_000)]
    pub retry_period_ms: u64,
    /// What to do.
    #[command(subcommand)]
    pub mode: Mode,
}

/// The two modes.
#[derive(Debug, Subcommand)]
pub enum Mode {
    /// Campaign and serve `GET /` → `{"name": "<holder>"}`, plus `/healthz`,
    /// `/readyz`, `/status` and `/metrics`.
    Serve {
        /// The Lease's name.
        #[arg(long)]
        lease: String,
        /// Where to listen.
        #[arg(long, default_value = "127.0.0.1:4040")]
        addr: SocketAddr,
    },
    /// Run a command only while leading.
    Run {
        /// The Lease's name.
        #[arg(long)]
        lease: String,
        /// SIGKILL the child this long (ms) after SIGTERM; capped at half of
        /// `lease_duration - renew_deadline`, so that a child is gone before another
        /// candidate can lead.
        #[arg(long, default_value_t = 2_000)]
        kill_after_ms: u64,
        /// Serve `/healthz`, `/readyz`, `/status` and `/metrics` here (off by
        /// default).
        #[arg(long)]
        addr: Option<SocketAddr>,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

/// Why the sidecar could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The identity from the environment is unusable.
    #[error("failed to choose an identity: {0}")]
    Identity(#[from] election_ops::identity::IdentityError),
    /// No usable kube configuration.
    #[error("failed to load the kube configuration: {0}")]
    KubeConfig(#[from] kube::config::InferConfigError),
    /// The kubeconfig file given with `--kubeconfig` is unusable.
    #[error("failed to load the kubeconfig file: {0}")]
    KubeconfigFile(#[from] kube::config::KubeconfigError),
    /// The kube client could not be built.
    #[error("failed to build the kube client: {0}")]
    Client(#[from] kube::Error),
    /// The Lease name is invalid.
    #[error("invalid lease: {0}")]
    Lease(String),
    /// The election could not start (invalid timings).
    #[error("failed to start the election: {0}")]
    Driver(#[from] election_driver::DriverError),
    /// The listener could not be bound.
    #[error("failed to listen: {0}")]
    Io(#[from] std::io::Error),
}

/// Parses the command line and runs; the process's exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("leader-elector: failed to start a runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("leader-elector: {e}");
            ExitCode::from(1)
        }
    }
}

/// A running election with its health and metrics endpoint.
struct Election {
    handle: Arc<Handle>,
    endpoint: Endpoint<Arc<Handle>>,
}

async fn kube_config(cli: &Cli) -> Result<kube::Config, StartError> {
    Ok(match &cli.kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)?;
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await?
        }
        None => kube::Config::infer().await?,
    })
}

async fn start(
    cli: &Cli,
    id: Arc<str>,
    lease: &str,
    work: Option<ChildWork>,
) -> Result<Election, StartError> {
    let mut config = Config::client_go(id);
    config.lease_duration = Duration::from_millis(cli.lease_duration_ms);
    config.renew_deadline = Duration::from_millis(cli.renew_deadline_ms);
    config.retry_period = Duration::from_millis(cli.retry_period_ms);
    config.request_timeout = (config.renew_deadline / 2).max(Duration::from_millis(500));
    let kube_config = kube_config(cli).await?;
    let namespace = cli
        .namespace
        .clone()
        .unwrap_or_else(|| kube_config.default_namespace.clone());
    let client = kube_support::lock_client(kube_config)?;
    let lock = LeaseLock::builder(client, &namespace, lease)
        .election_config(&config)
        .build()
        .map_err(|e| StartError::Lease(e.to_string()))?;
    eprintln!("leader-elector: identity {}", config.identity);
    // client-go's `name` label is the election's name: the Lease's name.
    let monitor = Monitor::builder(lock.describe(), config.identity.clone())
        .name(lease)
        .build();
    let mut registry = prometheus_client::registry::Registry::default();
    monitor.register_metrics(&mut registry);
    let mut builder = Builder::new(monitor.lock(lock), config);
    let handle_slot = work.as_ref().map(|w| Arc::clone(&w.handle));
    if let Some(work) = work {
        builder = builder.leader_work(move |term, cancel| work.clone().run(term, cancel));
    }
    let handle = Arc::new(builder.spawn()?);
    if let Some(slot) = handle_slot {
        // A weak reference: the work must not keep the election alive.
        let _ = slot.set(Arc::downgrade(&handle));
    }
    tokio::spawn(Arc::clone(&monitor).follow(handle.states()));
    let leader = Arc::clone(&handle);
    let endpoint = Endpoint::new(Health::new(Arc::clone(&handle)).monitor(Arc::clone(&monitor)))
        .metrics(monitor, registry)
        .route("/", move || {
            let name = leader.leader().map(|l| l.to_string()).unwrap_or_default();
            (
                200,
                "application/json",
                serde_json::json!({ "name": name }).to_string(),
            )
        });
    Ok(Election { handle, endpoint })
}

/// Binds `addr` and serves the endpoint on a task of its own.
async fn spawn_endpoint(
    endpoint: Endpoint<Arc<Handle>>,
    addr: SocketAddr,
) -> Result<(), StartError> {
    let bound = endpoint.spawn(addr).await?;
    eprintln!("leader-elector: serving on {bound}");
    Ok(())
}

/// The sidecar's own SIGTERM or SIGINT.
async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut t), Ok(mut i)) => {
            tokio::select! { _ = t.recv() => {}, _ = i.recv() => {} }
        }
        _ => std::future::pending().await,
    }
}

async fn run(cli: Cli) -> Result<u8, StartError> {
    let id = election_ops::identity::from_env()?;
    match &cli.mode {
        Mode::Serve { lease, addr } => {
            let Election { handle, endpoint } = start(&cli, id, lease, None).await?;
            spawn_endpoint(endpoint, *addr).await?;
            terminated().await;
            handle.shutdown().await;
            Ok(0)
        }
        Mode::Run {
            lease,
            kill_after_ms,
            addr,
            command,
        } => {
            let (exit_tx, mut exit_rx) = watch::channel(None::<u8>);
            // After a loss, another candidate may lead `lease - renew` after our
            // deadline at the earliest: the child must be gone well before.
            let slack =
                Duration::from_millis(cli.lease_duration_ms.saturating_sub(cli.renew_deadline_ms))
                    / 2;
            // The driver waits one renew deadline for the work to drain before it
            // gives up without releasing: leave one retry period for the release.
            let graceful =
                Duration::from_millis(cli.renew_deadline_ms.saturating_sub(cli.retry_period_ms));
            let work = ChildWork {
                command: Arc::new(command.clone()),
                identity: id.clone(),
                kill_after: Duration::from_millis(*kill_after_ms).min(slack),
                graceful,
                handle: Arc::new(OnceLock::new()),
                exited: Arc::new(exit_tx),
            };
            let Election { handle, endpoint } = start(&cli, id, lease, Some(work)).await?;
            if let Some(addr) = addr {
                spawn_endpoint(endpoint, *addr).await?;
            }
            let code = tokio::select! {
                r = exit_rx.wait_for(Option::is_some) => r.map_or(0, |c| c.unwrap_or(0)),
                () = terminated() => 0,
            };
            // Drains the child (SIGTERM, bounded wait) and releases.
            handle.shutdown().await;
            let code = exit_rx.borrow().unwrap_or(code);
            Ok(code)
        }
    }
}

/// The leader work of `run` mode: the child process.
#[derive(Clone)]
struct ChildWork {
    command: Arc<Vec<String>>,
    identity: Arc<str>,
    /// How long a child may take to stop after a loss.
    kill_after: Duration,
    /// How long a child may take to stop on a graceful give-up.
    graceful: Duration,
    /// The election's handle, set once it is spawned: whether this node still
    /// leads decides which bound applies.
    handle: Arc<OnceLock<Weak<Handle>>>,
    exited: Arc<watch::Sender<Option<u8>>>,
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
fn signal_group(group: Option<rustix::process::Pid>, signal: rustix::process::Signal) {
    if let Some(group) = group {
        let _ = rustix::process::kill_process_group(group, signal);
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

    async fn run(self, term: election_core::Term, cancel: CancellationToken) {
        let Some((program, args)) = self.command.split_first() else {
            return;
        };
        let mut child = match tokio::process::Command::new(program)
            .args(args)
            .env("LEADER_ELECTOR_TERM", term.to_string())
            .env("LEADER_ELECTOR_IDENTITY", &*self.identity)
            // A group of its own: signals reach everything the child started.
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                eprintln!("leader-elector: failed to start {program}: {e}");
                self.exited.send_replace(Some(127));
                return;
            }
        };
        let group = child
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw);
        eprintln!("leader-elector: leading in term {term}; started {program}");
        tokio::select! {
            status = child.wait() => {
                let code = status.map_or(1, exit_code);
                eprintln!("leader-elector: {program} exited with {code}");
                // Whatever it left behind must not outlive the term.
                signal_group(group, rustix::process::Signal::KILL);
                self.exited.send_replace(Some(code));
            }
            () = cancel.cancelled() => {
                self.stop(program, &mut child, group).await;
            }
        }
    }

    /// Stops the child's group: SIGTERM, then SIGKILL once the bound has passed.
    /// The bound is `graceful` while this node still leads (a step-down or
    /// shutdown: renewals go on and the driver waits), `kill_after` from the
    /// moment it no longer leads (a loss: another may lead soon).
    async fn stop(
        &self,
        program: &str,
        child: &mut tokio::process::Child,
        group: Option<rustix::process::Pid>,
    ) {
        eprintln!("leader-elector: stopping {program} (SIGTERM)");
        signal_group(group, rustix::process::Signal::TERM);
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
                    eprintln!("leader-elector: {program} stopped with {code}");
                    break;
                }
                () = tokio::time::sleep_until(kill_at) => {
                    eprintln!("leader-elector: {program} ignored SIGTERM; SIGKILL");
                    signal_group(group, rustix::process::Signal::KILL);
                    let _ = child.kill().await;
                    break;
                }
                () = tokio::time::sleep(RECHECK), if lost_at.is_none() => {}
            }
        }
        // Anything left in the group (a child's own children) goes too.
        signal_group(group, rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    /// In a cluster the API server speaks HTTPS: the binary carries a TLS stack
    /// (kube's `rustls-tls` with `ring`), so a client for an `https://` URL builds.
    /// Without one, kube refuses it ("no TLS stack") and the sidecar could not start.
    #[tokio::test]
    async fn the_sidecar_can_talk_https() {
        let config = kube::Config::new("https://127.0.0.1:6443".parse().expect("a URL"));
        kube_support::lock_client(config).expect("a client for an HTTPS API server");
    }
}
