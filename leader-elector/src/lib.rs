//! A leader-election sidecar on a Kubernetes Lease.
//!
//! - `leader-elector serve --lease NAME [--addr 127.0.0.1:4040]` campaigns and serves
//!   `GET /` → `{"name": "<holder>"}` (the holder as this node last saw it, `""` if
//!   none), like the old `k8s.gcr.io/leader-elector` sidecar, plus `/healthz`
//!   (client-go's healthz meaning: fails only for a leader wedged past its deadline),
//!   `/readyz`, `/status` (JSON) and `/metrics` (Prometheus text, client-go's metric
//!   names) from [`election_ops`].
//! - `leader-elector run --lease NAME [--addr ADDR] -- CMD ARGS…` runs the command
//!   only while leading (with `--addr`, the same health and metrics endpoint). On a graceful give-up (SIGTERM or SIGINT to the sidecar, or a
//!   step-down) the child gets SIGTERM and is waited for, bounded by the leadership
//!   deadline (then SIGKILL), before the lease is released. On a loss (the deadline
//!   passed) the child gets SIGTERM and, at most `--kill-after-ms` later (capped at
//!   half of `lease_duration - renew_deadline`, the least time before another
//!   candidate can lead), SIGKILL; the sidecar then campaigns again. When the child exits by itself, the sidecar
//!   releases the lease and exits with the child's exit code (128 + signal if it was
//!   killed by one).
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
use std::sync::Arc;
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
    let monitor = Monitor::new(lock.describe(), config.identity.clone());
    let mut registry = prometheus_client::registry::Registry::default();
    monitor.register_metrics(&mut registry);
    let mut builder = Builder::new(monitor.lock(lock), config);
    if let Some(work) = work {
        builder = builder.leader_work(move |term, cancel| work.clone().run(term, cancel));
    }
    let handle = Arc::new(builder.spawn()?);
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
            let work = ChildWork {
                command: Arc::new(command.clone()),
                identity: id.clone(),
                kill_after: Duration::from_millis(*kill_after_ms).min(slack),
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
    kill_after: Duration,
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

fn sigterm(child: &tokio::process::Child) {
    if let Some(pid) = child
        .id()
        .and_then(|p| i32::try_from(p).ok())
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
}

impl ChildWork {
    async fn run(self, term: election_core::Term, cancel: CancellationToken) {
        let Some((program, args)) = self.command.split_first() else {
            return;
        };
        let mut child = match tokio::process::Command::new(program)
            .args(args)
            .env("LEADER_ELECTOR_TERM", term.to_string())
            .env("LEADER_ELECTOR_IDENTITY", &*self.identity)
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
        eprintln!("leader-elector: leading in term {term}; started {program}");
        tokio::select! {
            status = child.wait() => {
                let code = status.map_or(1, exit_code);
                eprintln!("leader-elector: {program} exited with {code}");
                self.exited.send_replace(Some(code));
            }
            () = cancel.cancelled() => {
                eprintln!("leader-elector: stopping {program} (SIGTERM)");
                sigterm(&child);
                // The driver waits for this work at most until the leadership
                // deadline; after a loss it no longer waits. Either way the child
                // gets `kill_after` to stop, then SIGKILL.
                match tokio::time::timeout(self.kill_after, child.wait()).await {
                    Ok(status) => {
                        let code = status.map_or(1, exit_code);
                        eprintln!("leader-elector: {program} stopped with {code}");
                    }
                    Err(_) => {
                        eprintln!("leader-elector: {program} ignored SIGTERM; SIGKILL");
                        let _ = child.kill().await;
                    }
                }
            }
        }
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
