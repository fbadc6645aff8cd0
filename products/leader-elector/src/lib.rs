//! A leader-election sidecar on a Kubernetes Lease.
//!
//! - `leader-elector serve --lease NAME [--addr 127.0.0.1:4040]` campaigns and serves
//!   `GET /` → `{"name": "<holder>"}` (who leads by this node's knowledge at that
//!   instant, `""` if nobody: its own identity only while it leads, another
//!   holder until its lease, timed here, ends; [`Handle::leader_now`]), like the old
//!   `k8s.gcr.io/leader-elector` sidecar, `GET /leader` (200 while this sidecar
//!   leads, 503 otherwise: the plain question an application asks), plus `/healthz`
//!   (client-go's healthz meaning: fails only for a leader wedged past its deadline),
//!   `/readyz`, `/status` (JSON) and `/metrics` (Prometheus text, client-go's metric
//!   names) from [`election_ops`].
//! - `leader-elector run --lease NAME [--addr ADDR] -- CMD ARGS…` runs the command
//!   only while leading (with `--addr`, the same health and metrics endpoint). The
//!   child runs in a process group of its own, and every signal goes to the whole
//!   group, so whatever it started (a shell's children) stops with it. On a graceful
//!   give-up (SIGTERM or SIGINT to the sidecar, or a step-down, while this node still
//!   leads and renews) the group gets SIGTERM and the child is waited for up to
//!   `renew_deadline - request_timeout` ([`Config::drain_budget`]: the driver
//!   gives the drain and the release write one renew deadline, and the write may
//!   take one request timeout), then SIGKILL, before the lease is released. On a loss (the
//!   deadline passed, another holder, or a drain the driver stopped waiting for) the
//!   group gets SIGTERM and, at most `--kill-after` later (capped at half of
//!   `lease_duration - renew_deadline`, the least time before another candidate can
//!   lead), SIGKILL; the sidecar then campaigns again. Once the child has exited,
//!   anything left in its group is killed. When the child exits by itself, the
//!   sidecar releases the lease and exits with the child's exit code (128 + signal
//!   if it was killed by one; 127 if the command was not found, 126 if it could not
//!   be executed).
//!
//!   With `--api-proxy` the sidecar serves the Kubernetes API to the child on
//!   127.0.0.1 and gives it a `KUBECONFIG` naming it (and no
//!   `KUBERNETES_SERVICE_HOST`/`PORT`): the child's writes, from any client,
//!   pass the write guard (refused with a 403 `Status` once this Pod does not
//!   lead with a margin) and carry the term's stamp, for the fence of
//!   `fence-policy` ([`election_ops::proxy`]).
//!
//!   If the sidecar itself dies (SIGKILL, a crash), the child and everything it
//!   started in its group die at once: the sidecar starts it through a small shim
//!   that leads the group, asks for Linux's parent-death signal
//!   (`PR_SET_PDEATHSIG`), runs the command as its own child and, when that signal
//!   comes, SIGKILLs the whole group, so no leaderless child runs on (see the
//!   `child` module's source for the design, with no `unsafe`). Only a process
//!   that left the group (`setsid`) escapes; run the sidecar as the container's
//!   entry point, whose end takes everything along, if the command does that.
//! - `leader-elector fence-policy --lease NAME --protect RESOURCE…` prints the
//!   ValidatingAdmissionPolicy and its binding that fence a deposed leader's
//!   writes ([`election_ops::fence`]): the Lease's namespace is `--namespace`,
//!   else the kube config's; `--writer` says whose writes pass (`pod-name`, the
//!   default: the holder's Pod, with a stamp fixed for the term, so a write of
//!   what is stored is a no-op; `any`: whoever brings a stamp with a token of
//!   its own, every write a real one); `--fence-namespace`, `--exempt-user`,
//!   `--exempt-group` and `--no-default-exemptions` set what is fenced and who
//!   is exempt. It takes none of the election's flags (identity, timings,
//!   `--coordinated`, `--log-format`): given, they are refused, and its `--help`
//!   does not list them. `--version` prints the sidecar's version.
//!
//! The identity is `--identity NAME`, else `ELECTION_IDENTITY`, else
//! `$POD_NAME-<random>` or `<hostname>-<random>` ([`election_ops::identity`]); the
//! child sees it as `LEADER_ELECTOR_IDENTITY` and the term as `LEADER_ELECTOR_TERM`.
//! The cluster comes from `--kubeconfig PATH`, else the usual kube inference
//! (`KUBECONFIG`, `~/.kube/config`, in-cluster). Timings default to client-go's and
//! take Go-style durations, as client-go's flags do: `--lease-duration 15s
//! --renew-deadline 10s --retry-period 2s` ([`duration::parse_duration`]: `ms`, `s`,
//! `m`, `h`, combinations such as `1m30s`, fractions such as `1.5s`); the request
//! timeout follows client-go's rule ([`Config::client_go_request_timeout`]) unless
//! `--request-timeout` sets it; the leader renews every retry period unless
//! `--renew-interval` sets a longer interval (fewer writes, same failover time);
//! `--fleet-lease-duration` the longest lease of a fleet that mixes them. The older `--lease-duration-ms`,
//! `--renew-deadline-ms`, `--retry-period-ms` and `--kill-after-ms` (milliseconds)
//! still work, hidden from `--help`; each conflicts with its new spelling. A
//! combination that breaks a rule of [`Config::validate`] is refused before
//! anything starts, with the rule named.
//!
//! Logs go to stderr, one line per event, text or JSON (`--log-format json`),
//! filtered by `RUST_LOG` (default `info`); see [`logging`]. Leading starts and
//! stops are one line each with the term, the identity and (on a stop) the reason
//! (INFO for a graceful stop, WARN for a loss). They are also Kubernetes Events on
//! the Lease, as client-go records them (`<identity> became leader` / `<identity>
//! stopped leading`, reason `LeaderElection`); on exit the sidecar waits for those
//! still being written, at most one request timeout, after the lease is released.
//! A bad flag, an unusable kubeconfig or an invalid combination of timings ends the
//! sidecar with one line on stderr and a non-zero exit (2 for the command line, 1
//! otherwise). The workspace's `deploy/sidecar.yaml` runs it beside an app
//! (serve mode), `deploy/run-mode.yaml` as a Pod's entry point (run mode).
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
// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

// Not called: a dependency only to pick the Kubernetes version (feature `latest`)
// that kube and the lock crates compile against, as k8s-openapi asks of a binary.
use k8s_openapi as _;

mod api_proxy;
pub use api_proxy::ProxyError;
mod child;
pub mod duration;
#[doc(hidden)]
pub mod fuzzing;
mod lock_tasks;
pub mod logging;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use adapter_tokio::TokioRuntime;
use clap::parser::ValueSource;
use clap::{Parser, Subcommand};
use election_core::{Config, ConfigError, Layered, Lock};
use election_driver::{Builder, Handle};
use election_ops::Monitor;
use election_ops::health::Health;
use election_ops::http::Endpoint;
use lock_lease::LeaseLock;
use tokio::sync::watch;

use crate::api_proxy::ProxySetup;
use crate::child::ChildWork;
use crate::duration::{format_duration, parse_duration};
use crate::lock_tasks::LockTasks;
use crate::logging::LogFormat;

/// client-go's lease duration.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// client-go's renew deadline.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// client-go's retry period.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// How long a child may take to stop after a loss, by default.
pub const DEFAULT_KILL_AFTER: Duration = Duration::from_secs(2);

/// Command-line interface.
#[derive(Debug, Parser)]
#[command(
    name = "leader-elector",
    version,
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
    /// The flags of the modes that campaign, `serve` and `run`.
    #[command(flatten)]
    pub election: ElectionArgs,
    /// What to do.
    #[command(subcommand)]
    pub mode: Mode,
}

/// The flags of the modes that campaign, `serve` and `run`: the identity, the
/// timings, coordinated election and the log format. Global (given before or
/// after the subcommand); `fence-policy`, which campaigns for nothing, refuses
/// them by name and leaves them out of its `--help`.
#[derive(Clone, Debug, clap::Args)]
pub struct ElectionArgs {
    /// This candidate's identity, the Lease's holder while it leads (default:
    /// `ELECTION_IDENTITY`, else `POD_NAME` or the hostname plus a random suffix).
    #[arg(long, global = true, value_name = "NAME")]
    pub identity: Option<String>,
    /// Lease duration, a whole number of seconds (default 15s, client-go's).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration,
          conflicts_with = "lease_duration_ms")]
    pub lease_duration: Option<Duration>,
    /// Renew deadline: a leader that has not renewed for this long stops (default
    /// 10s, client-go's).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration,
          conflicts_with = "renew_deadline_ms")]
    pub renew_deadline: Option<Duration>,
    /// Retry period between attempts (default 2s, client-go's).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration,
          conflicts_with = "retry_period_ms")]
    pub retry_period: Option<Duration>,
    /// Timeout of one API request (default: client-go's rule, max(renew deadline /
    /// 2, 1s)).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub request_timeout: Option<Duration>,
    /// How often the leader renews (default: the retry period, as client-go); a
    /// longer interval writes less, and failed renews still retry every retry
    /// period. Needs `renew interval + request timeout < renew deadline`, e.g.
    /// `--renew-interval 5s --request-timeout 4s` at the default timings.
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub renew_interval: Option<Duration>,
    /// The longest lease duration any candidate of this Lease uses, where the
    /// fleet mixes them (a rollout that changes `--lease-duration`, candidates of
    /// other programs): every wait for a holder this one cannot see lasts at
    /// least this (default: this candidate's own lease duration).
    #[arg(long, global = true, value_name = "DURATION", value_parser = parse_duration)]
    pub fleet_lease_duration: Option<Duration>,
    /// The lease duration in milliseconds (older spelling of `--lease-duration`).
    #[arg(long, global = true, hide = true, value_name = "MS")]
    pub lease_duration_ms: Option<u64>,
    /// The renew deadline in milliseconds (older spelling of `--renew-deadline`).
    #[arg(long, global = true, hide = true, value_name = "MS")]
    pub renew_deadline_ms: Option<u64>,
    /// The retry period in milliseconds (older spelling of `--retry-period`).
    #[arg(long, global = true, hide = true, value_name = "MS")]
    pub retry_period_ms: Option<u64>,
    /// Take part in Kubernetes' coordinated leader election (KEP-4355): publish
    /// a LeaseCandidate named after the identity and lead only when the API
    /// server's coordinator names this candidate in the Lease (the cluster needs
    /// the CoordinatedLeaderElection feature gate and `coordination.k8s.io/v1beta1`).
    #[arg(long, global = true)]
    pub coordinated: bool,
    /// With `--coordinated`: the application's version, `MAJOR.MINOR.PATCH`
    /// (default: this sidecar's version). The coordinator prefers the oldest.
    #[arg(long, global = true, value_name = "VERSION", requires = "coordinated")]
    pub binary_version: Option<String>,
    /// With `--coordinated`: the version whose behaviour the application keeps,
    /// compared first (default: the binary version).
    #[arg(long, global = true, value_name = "VERSION", requires = "coordinated")]
    pub emulation_version: Option<String>,
    /// Log lines as text or JSON, on stderr; `RUST_LOG` filters them (default
    /// `info`).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// What to do: `serve`, `run` or `fence-policy` (and the child shim, internal).
#[derive(Debug, Subcommand)]
pub enum Mode {
    /// Campaign and serve `GET /` → `{"name": "<holder>"}` (its own name only
    /// while it leads), `GET /leader` (200 while it leads, 503 otherwise), plus
    /// `/healthz`, `/readyz`, `/status` and `/metrics`.
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
        /// After a loss, SIGKILL the child this long after SIGTERM (default 2s);
        /// capped at half of `lease_duration - renew_deadline`, so that a child is
        /// gone before another candidate can lead.
        #[arg(long, value_name = "DURATION", value_parser = parse_duration,
              conflicts_with = "kill_after_ms")]
        kill_after: Option<Duration>,
        /// `--kill-after` in milliseconds (older spelling).
        #[arg(long, hide = true, value_name = "MS")]
        kill_after_ms: Option<u64>,
        /// Serve `/healthz`, `/readyz`, `/status` and `/metrics` here (off by
        /// default).
        #[arg(long)]
        addr: Option<SocketAddr>,
        /// Serve the Kubernetes API to the command, on `127.0.0.1` (a free
        /// port) or `--api-proxy=ADDR`: the command gets `KUBECONFIG` naming it,
        /// and its writes pass the write guard (refused with a 403 `Status`
        /// once this Pod does not lead with a margin) and carry the term's
        /// stamp, for the fence of `fence-policy`.
        #[arg(long, value_name = "ADDR", num_args = 0..=1, require_equals = true,
              default_missing_value = "127.0.0.1:0")]
        api_proxy: Option<SocketAddr>,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Print the ValidatingAdmissionPolicy and its binding that make the API
    /// server refuse every write to a protected resource that does not bring the
    /// stamp of the Lease's current term (the holder and the term, as
    /// election-ops' `TermAnnotationLayer` writes them on every verb; a delete
    /// needs the object stamped in this term, the layer's first request) from
    /// the holder's own Pod (`--writer`), except the exempt users and groups;
    /// apply them with `kubectl apply -f -`. The Lease's namespace is
    /// `--namespace`, else the kube config's (read, no request is sent).
    #[command(name = FENCE_POLICY)]
    FencePolicy(FencePolicyArgs),
    /// Internal: the shim `run` mode starts the child through; it runs the
    /// command in its group and kills the group when the sidecar dies.
    #[doc(hidden)]
    #[command(name = child::EXEC_CHILD, hide = true)]
    ExecChild {
        /// The sidecar's pid.
        #[arg(long)]
        parent: u32,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<OsString>,
    },
}

/// The arguments of `fence-policy`.
#[derive(Debug, clap::Args)]
pub struct FencePolicyArgs {
    /// The Lease's name.
    #[arg(long)]
    pub lease: String,
    /// A resource to fence with its subresources, as `group/version/resource`
    /// (`apps/v1/deployments`) or `version/resource` for the core group
    /// (`v1/configmaps`), or one subresource alone
    /// (`apps/v1/deployments/status`); repeat it for more.
    #[arg(long = "protect", value_name = "RESOURCE", required = true,
          value_parser = parse_protected)]
    pub protect: Vec<election_ops::fence::Protected>,
    /// Who may write, besides the stamp. `pod-name` (default): only the holder's
    /// Pod, by its pod-bound service-account token (Kubernetes 1.30+, the
    /// identity being the Pod's name); the stamp is fixed for a term, so a write
    /// that changes nothing else is a no-op. `username`: only the user named as
    /// the holder; the same cost. `any`: whoever brings the current term's
    /// stamp with a token of that write (the stamp layer's write tokens), so
    /// every write, a no-op included, stores a new version and sends a watch
    /// event; it does not fence a writer that forges the stamp (copies the
    /// Lease's holder and transitions and makes up a token: the stamp is a
    /// fencing token, not an identity), and refuses every status write of a
    /// custom resource.
    #[arg(long, value_enum, default_value_t = WriterArg::PodName)]
    pub writer: WriterArg,
    /// Warn and audit instead of refusing, to roll the policy out first.
    #[arg(long)]
    pub warn: bool,
    /// A namespace whose protected writes are fenced, the Lease's or another
    /// (default: the Lease's namespace); repeat it for more.
    #[arg(long = "fence-namespace", value_name = "NS")]
    pub fence_namespaces: Vec<String>,
    /// A user whose writes are admitted without a stamp (the policy does not
    /// apply to them), besides the default exemptions; repeat it for more.
    #[arg(long = "exempt-user", value_name = "NAME")]
    pub exempt_users: Vec<String>,
    /// A group whose members' writes are admitted without a stamp, besides the
    /// default exemptions; repeat it for more.
    #[arg(long = "exempt-group", value_name = "NAME")]
    pub exempt_groups: Vec<String>,
    /// Drop the default exemptions, the control plane's components: the users
    /// `system:kube-controller-manager` and `system:kube-scheduler`, the group
    /// `system:nodes`, and the group `system:serviceaccounts:kube-system` unless
    /// a fenced namespace is `kube-system`.
    #[arg(long)]
    pub no_default_exemptions: bool,
}

/// `--writer` of `fence-policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum WriterArg {
    /// Anyone whose write carries the stamp and a token of its own.
    Any,
    /// The holder's Pod, by its service-account token (default).
    PodName,
    /// The user named as the holder.
    Username,
}

fn parse_protected(s: &str) -> Result<election_ops::fence::Protected, String> {
    election_ops::fence::Protected::parse(s).map_err(|e| e.to_string())
}

impl FencePolicyArgs {
    /// The policy these arguments describe, for the Lease in `namespace`.
    pub fn policy(&self, namespace: &str) -> election_ops::fence::FencePolicy {
        use election_ops::fence::{Enforcement, FencePolicy, Writer};
        let policy = FencePolicy::new(namespace, &self.lease)
            .writer(match self.writer {
                WriterArg::Any => Writer::Any,
                WriterArg::PodName => Writer::PodName,
                WriterArg::Username => Writer::Username,
            })
            .enforcement(if self.warn {
                Enforcement::WarnAndAudit
            } else {
                Enforcement::Deny
            })
            .namespaces(self.fence_namespaces.iter().cloned())
            .default_exemptions(!self.no_default_exemptions);
        let policy = self
            .protect
            .iter()
            .fold(policy, |p, r| p.protect(r.clone()));
        let policy = self
            .exempt_users
            .iter()
            .fold(policy, |p, user| p.exempt_user(user));
        self.exempt_groups
            .iter()
            .fold(policy, |p, group| p.exempt_group(group))
    }

    /// The manifests for the Lease in `namespace`, or the reason there are none.
    pub fn to_yaml(&self, namespace: &str) -> Result<String, String> {
        self.policy(namespace).to_yaml().map_err(|e| e.to_string())
    }
}

/// The name of the `fence-policy` subcommand.
const FENCE_POLICY: &str = "fence-policy";

/// Whether `arg` is one of [`ElectionArgs`], which `fence-policy` refuses and
/// its `--help` does not list.
fn election_only(arg: &clap::Arg) -> bool {
    use clap::Args;
    ElectionArgs::augment_args(clap::Command::new("election"))
        .get_arguments()
        .any(|a| a.get_id() == arg.get_id())
}

/// The command line as the binary reads it: [`Cli`]'s, with the global flags
/// that only `serve` and `run` use hidden from `fence-policy --help` (they are
/// still parsed there, to be refused by [`Cli::try_parse_args`] with a reason).
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let command = Cli::command();
    let hidden: Vec<clap::Arg> = command
        .get_arguments()
        .filter(|a| election_only(a))
        .map(|a| a.clone().hide(true))
        .collect();
    // A subcommand that has an argument of a global's id keeps its own: these
    // hidden copies, instead of the listed globals.
    command.mut_subcommand(FENCE_POLICY, |sc| sc.args(hidden))
}

/// The election's flags given to `fence-policy`, refused with their names.
fn refuse_election_flags(
    command: &mut clap::Command,
    matches: &clap::ArgMatches,
) -> Result<(), clap::Error> {
    let given: Vec<String> = command
        .get_arguments()
        .filter(|a| election_only(a))
        .filter(|a| matches.value_source(a.get_id().as_str()) == Some(ValueSource::CommandLine))
        .filter_map(|a| a.get_long().map(|long| format!("--{long}")))
        .collect();
    if given.is_empty() {
        return Ok(());
    }
    let sub = command
        .find_subcommand_mut(FENCE_POLICY)
        .expect("fence-policy is a subcommand");
    Err(sub.error(
        clap::error::ErrorKind::ArgumentConflict,
        format!(
            "fence-policy does not take {} (for serve and run only)",
            given.join(", ")
        ),
    ))
}

/// The Lease's namespace for `fence-policy`: `--namespace`, else the kube
/// config's, read as `serve` and `run` read it (no request is sent); an error
/// only when no kube config can be loaded.
fn fence_namespace(cli: &Cli) -> Result<String, String> {
    if let Some(namespace) = &cli.namespace {
        return Ok(namespace.clone());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("failed to start a runtime: {e}"))?;
    let config = rt.block_on(kube_config(cli)).map_err(|e| {
        let message = e.to_string();
        format!(
            "fence-policy needs --namespace, or a kube config to take it from: {}",
            message.lines().next().unwrap_or_default().trim_end()
        )
    })?;
    Ok(config.default_namespace)
}

/// `fence-policy`: the manifests on stdout, or one line on stderr and exit
/// code 2 (never a half-printed manifest).
fn print_fence_policy(cli: &Cli, args: &FencePolicyArgs) -> ExitCode {
    match fence_namespace(cli).and_then(|namespace| args.to_yaml(&namespace)) {
        Ok(yaml) => {
            print!("{yaml}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("leader-elector: {e}");
            ExitCode::from(2)
        }
    }
}

/// The election's timings as the command line sets them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timings {
    /// `--lease-duration` (or `--lease-duration-ms`), else client-go's 15 s.
    pub lease_duration: Duration,
    /// `--renew-deadline` (or `--renew-deadline-ms`), else client-go's 10 s.
    pub renew_deadline: Duration,
    /// `--retry-period` (or `--retry-period-ms`), else client-go's 2 s.
    pub retry_period: Duration,
    /// `--request-timeout`, else `None`: client-go's rule applies.
    pub request_timeout: Option<Duration>,
    /// `--renew-interval`, else `None`: the retry period.
    pub renew_interval: Option<Duration>,
}

impl Cli {
    /// Parses `args` (the program name first) as the binary does: with
    /// [`command`], whose `fence-policy --help` lists only the flags it uses, and
    /// refusing for `fence-policy` the election's flags (`--identity`, the
    /// timings, `--coordinated`, …), before or after the subcommand.
    pub fn try_parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        use clap::FromArgMatches;
        let mut command = command();
        let matches = command.try_get_matches_from_mut(args)?;
        let cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))?;
        if let Mode::FencePolicy(_) = cli.mode {
            refuse_election_flags(&mut command, &matches)?;
        }
        Ok(cli)
    }
}

impl ElectionArgs {
    /// The timings given, with client-go's defaults for those not given.
    pub fn timings(&self) -> Timings {
        let pick = |d: Option<Duration>, ms: Option<u64>, default| {
            d.or(ms.map(Duration::from_millis)).unwrap_or(default)
        };
        Timings {
            lease_duration: pick(
                self.lease_duration,
                self.lease_duration_ms,
                DEFAULT_LEASE_DURATION,
            ),
            renew_deadline: pick(
                self.renew_deadline,
                self.renew_deadline_ms,
                DEFAULT_RENEW_DEADLINE,
            ),
            retry_period: pick(
                self.retry_period,
                self.retry_period_ms,
                DEFAULT_RETRY_PERIOD,
            ),
            request_timeout: self.request_timeout,
            renew_interval: self.renew_interval,
        }
    }

    /// The identity: `--identity` as given, else from the environment
    /// ([`election_ops::identity::from_env`]).
    pub fn identity(&self) -> Result<Arc<str>, election_ops::identity::IdentityError> {
        match &self.identity {
            Some(id) => election_ops::identity::identity_from(Some(id.clone()), None, None),
            None => election_ops::identity::from_env(),
        }
    }

    /// client-go's configuration with the timings of the command line
    /// ([`Config::timings`], which sets the request timeout by client-go's rule,
    /// unless `--request-timeout` overrides it), checked ([`Config::validate`]).
    pub fn config(&self, identity: Arc<str>) -> Result<Config, ConfigError> {
        let t = self.timings();
        let mut config =
            Config::client_go(identity).timings(t.lease_duration, t.renew_deadline, t.retry_period);
        if let Some(timeout) = t.request_timeout {
            config.request_timeout = timeout;
        }
        config.renew_interval = t.renew_interval;
        config.fleet_lease_duration = self.fleet_lease_duration;
        if self.coordinated {
            config = config.coordinated();
        }
        config.validate()?;
        Ok(config)
    }
}

/// Why the sidecar could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The identity is unusable.
    #[error("invalid identity: {0}")]
    Identity(#[from] election_ops::identity::IdentityError),
    /// The timings break a rule of [`Config::validate`] (named in the message).
    #[error("invalid timings: {0}")]
    Config(#[from] ConfigError),
    /// No usable kube configuration.
    #[error("failed to load the kube configuration: {0}")]
    KubeConfig(#[from] kube::config::InferConfigError),
    /// The kubeconfig file given with `--kubeconfig` is unusable.
    #[error("failed to load the kubeconfig file {path}: {source}")]
    KubeconfigFile {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        source: kube::config::KubeconfigError,
    },
    /// The kube client could not be built.
    #[error("failed to build the kube client: {0}")]
    Client(#[from] kube::Error),
    /// The Lease name is invalid.
    #[error("invalid lease: {0}")]
    Lease(String),
    /// `--binary-version` or `--emulation-version` is unusable.
    #[error("invalid candidacy: {0}")]
    Candidate(#[from] lock_kube::candidate::CandidateError),
    /// The election could not start.
    #[error("failed to start the election: {0}")]
    Driver(#[from] election_driver::DriverError),
    /// `--api-proxy` could not be set up.
    #[error(transparent)]
    Proxy(#[from] api_proxy::ProxyError),
    /// The listener could not be bound.
    #[error("failed to listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

impl StartError {
    /// The exit code: 2 for what the command line got wrong (identity, timings),
    /// 1 for the rest.
    pub fn exit_code(&self) -> u8 {
        match self {
            StartError::Identity(_) | StartError::Config(_) | StartError::Candidate(_) => 2,
            _ => 1,
        }
    }
}

/// A command-line error as one line: clap's first paragraph, without its
/// `error: ` prefix, its lines joined.
fn one_line(rendered: &str) -> String {
    let first = rendered.split("\n\n").next().unwrap_or(rendered);
    let joined = first
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    joined.strip_prefix("error: ").unwrap_or(&joined).to_owned()
}

/// Parses the command line and runs; the process's exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse_args(std::env::args_os()) {
        Ok(cli) => cli,
        // `--help` and `--version` print as clap prints them.
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        // No mode at all: the help, as clap prints it, and a failure.
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!(
                "leader-elector: {} (see --help)",
                one_line(&e.render().to_string())
            );
            return ExitCode::from(2);
        }
    };
    match &cli.mode {
        Mode::ExecChild { parent, command } => return child::exec_child(*parent, command),
        Mode::FencePolicy(args) => return print_fence_policy(&cli, args),
        Mode::Serve { .. } | Mode::Run { .. } => {}
    }
    if let Err(e) = logging::init(cli.election.log_format) {
        eprintln!("leader-elector: {e}");
        return ExitCode::from(2);
    }
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
            // Whatever RUST_LOG says: the reason the sidecar did not start is
            // always printed, as one plain line (some errors append a multi-line
            // excerpt, as the YAML parser does: its first line names the problem).
            let message = e.to_string();
            eprintln!(
                "leader-elector: {}",
                message.lines().next().unwrap_or_default().trim_end()
            );
            ExitCode::from(e.exit_code())
        }
    }
}

/// A running election (its health and metrics endpoint comes with it from
/// [`start`]).
struct Election {
    handle: Arc<Handle>,
    /// The lock's background tasks (its leadership Events).
    lock_tasks: LockTasks,
    /// How long one of them may take: the request timeout bounds each Event write.
    request_timeout: Duration,
}

impl Election {
    /// Shuts the election down (drain, release), then lets the lock's Events
    /// (`<identity> stopped leading`) finish before the process exits and its
    /// runtime drops them; the lease is released by then, so this wait delays
    /// nobody's election.
    async fn shutdown(&mut self) {
        // The LeaseCandidate (the election's companion) is withdrawn first: the
        // coordinator must not give the released Lease straight back.
        self.handle.shutdown().await;
        if !self.lock_tasks.settled(self.request_timeout).await {
            tracing::warn!("a leadership Event was still being written at exit: it may be lost");
        }
    }
}

async fn kube_config(cli: &Cli) -> Result<kube::Config, StartError> {
    Ok(match &cli.kubeconfig {
        Some(path) => {
            let file_error = |source| StartError::KubeconfigFile {
                path: path.clone(),
                source,
            };
            let file = kube::config::Kubeconfig::read_from(path).map_err(file_error)?;
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(file_error)?
        }
        None => kube::Config::infer().await?,
    })
}

async fn start(
    cli: &Cli,
    kube_config: kube::Config,
    config: Config,
    lease: &str,
    work: Option<(ChildWork, Option<&mut ProxySetup>)>,
) -> Result<(Election, Endpoint<Arc<Handle>>), StartError> {
    let namespace = cli
        .namespace
        .clone()
        .unwrap_or_else(|| kube_config.default_namespace.clone());
    let proxy_config = work
        .as_ref()
        .and_then(|(_, proxy)| proxy.as_ref())
        .map(|_| kube_config.clone());
    let client = lock_kube::lock_client(kube_config)?;
    let candidacy = if cli.election.coordinated {
        let mut candidate = lock_kube::candidate::LeaseCandidate::builder(
            client.clone(),
            &namespace,
            &config.identity,
            lease,
        )
        .binary_version(
            cli.election
                .binary_version
                .clone()
                .unwrap_or_else(|| env!("CARGO_PKG_VERSION").into()),
        )
        .request_timeout(config.request_timeout);
        if let Some(v) = &cli.election.emulation_version {
            candidate = candidate.emulation_version(v.clone());
        }
        let candidate = candidate.build()?;
        tracing::info!(spec = ?candidate.spec(), "publishing the LeaseCandidate");
        Some(candidate)
    } else {
        None
    };
    let lock = LeaseLock::builder(client, &namespace, lease)
        .build()
        .map_err(|e| StartError::Lease(e.to_string()))?;
    tracing::info!(
        identity = &*config.identity,
        lease,
        namespace,
        lease_duration = %format_duration(config.lease_duration),
        renew_deadline = %format_duration(config.renew_deadline),
        retry_period = %format_duration(config.retry_period),
        renew_interval = %format_duration(config.renew_every()),
        request_timeout = %format_duration(config.request_timeout),
        "campaigning"
    );
    // client-go's `name` label is the election's name: the Lease's name.
    let monitor = Monitor::builder(lock.describe(), config.identity.clone())
        .name(lease)
        .build();
    let mut registry = prometheus_client::registry::Registry::default();
    monitor.register_metrics(&mut registry);
    let request_timeout = config.request_timeout;
    let lock_tasks = LockTasks::new();
    let lock = Layered::new(monitor.lock(lock), lock_tasks.clone());
    let mut builder = Builder::new(lock, config);
    if let Some(candidate) = candidacy {
        builder =
            builder.companion(move |stop| async move { candidate.run(stop.cancelled()).await });
    }
    let (work, proxy) = work.unzip();
    let handle_slot = work.as_ref().map(|w| Arc::clone(&w.handle));
    if let Some(work) = work {
        builder = builder.leader_work(move |term, cancel| work.clone().run(term, cancel));
    }
    let handle = Arc::new(builder.spawn(TokioRuntime::current()?)?);
    if let Some(slot) = handle_slot {
        // A weak reference: the work must not keep the election alive.
        let _ = slot.set(Arc::downgrade(&handle));
    }
    // Before the child can have sent anything: its connections wait in the
    // listener's backlog until then.
    if let (Some(Some(proxy)), Some(config)) = (proxy, proxy_config) {
        proxy.serve(config, &handle)?;
    }
    // The monitor logs each leadership change (started, draining, stopped, with
    // term, identity and reason) and keeps the metrics and health.
    tokio::spawn(Arc::clone(&monitor).follow(handle.states()));
    let (named, asked) = (Arc::clone(&handle), Arc::clone(&handle));
    let endpoint = Endpoint::new(Health::new(Arc::clone(&handle)).monitor(Arc::clone(&monitor)))
        .metrics(monitor, registry)
        .route("/", move || {
            let name = named
                .leader_now()
                .map(|n| n.to_string())
                .unwrap_or_default();
            (
                200,
                "application/json",
                serde_json::json!({ "name": name }).to_string(),
            )
        })
        .route(LEADER_PATH, move || {
            let leads = asked.is_leader();
            (
                if leads { 200 } else { 503 },
                "application/json",
                serde_json::json!({ "is_leader": leads }).to_string(),
            )
        });
    let election = Election {
        handle,
        lock_tasks,
        request_timeout,
    };
    Ok((election, endpoint))
}

/// The path that answers whether this sidecar leads now: 200
/// `{"is_leader":true}`, else 503 `{"is_leader":false}`.
pub const LEADER_PATH: &str = "/leader";

/// Binds `addr` and serves the endpoint on a task of its own.
async fn spawn_endpoint(
    endpoint: Endpoint<Arc<Handle>>,
    addr: SocketAddr,
) -> Result<(), StartError> {
    let bound = endpoint
        .spawn(addr)
        .await
        .map_err(|source| StartError::Listen { addr, source })?;
    tracing::info!(addr = %bound, "serving");
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
            tokio::select! {
                _ = t.recv() => tracing::info!("SIGTERM: shutting down"),
                _ = i.recv() => tracing::info!("SIGINT: shutting down"),
            }
        }
        _ => std::future::pending().await,
    }
}

async fn run(cli: Cli) -> Result<u8, StartError> {
    let id = cli.election.identity()?;
    // Checked before anything else: a bad combination names its rule at once.
    let config = cli.election.config(id.clone())?;
    match &cli.mode {
        Mode::Serve { lease, addr } => {
            let kube_config = kube_config(&cli).await?;
            let (mut election, endpoint) = start(&cli, kube_config, config, lease, None).await?;
            spawn_endpoint(endpoint, *addr).await?;
            terminated().await;
            election.shutdown().await;
            Ok(0)
        }
        Mode::Run {
            lease,
            kill_after,
            kill_after_ms,
            addr,
            api_proxy,
            command,
        } => {
            let kube_config = kube_config(&cli).await?;
            // Dropped (the kubeconfig removed) when the sidecar ends.
            let mut proxy = match api_proxy {
                Some(addr) => Some(ProxySetup::new(*addr, &kube_config.default_namespace).await?),
                None => None,
            };
            let (exit_tx, mut exit_rx) = watch::channel(None::<u8>);
            // After a loss, another candidate may lead `lease - renew` after our
            // deadline at the earliest: the child must be gone well before.
            let slack = config.lease_duration.saturating_sub(config.renew_deadline) / 2;
            let graceful = config.drain_budget();
            let kill_after = kill_after
                .or(kill_after_ms.map(Duration::from_millis))
                .unwrap_or(DEFAULT_KILL_AFTER);
            let work = ChildWork {
                command: Arc::new(command.clone()),
                identity: id,
                kill_after: kill_after.min(slack),
                graceful,
                handle: Arc::new(OnceLock::new()),
                exited: Arc::new(exit_tx),
                kubeconfig: proxy.as_ref().map(|p| Arc::from(p.kubeconfig())),
            };
            let (mut election, endpoint) = start(
                &cli,
                kube_config,
                config,
                lease,
                Some((work, proxy.as_mut())),
            )
            .await?;
            if let Some(addr) = addr {
                spawn_endpoint(endpoint, *addr).await?;
            }
            let code = tokio::select! {
                r = exit_rx.wait_for(Option::is_some) => r.map_or(0, |c| c.unwrap_or(0)),
                () = terminated() => 0,
            };
            // Drains the child (SIGTERM, bounded wait) and releases.
            election.shutdown().await;
            let code = exit_rx.borrow().unwrap_or(code);
            Ok(code)
        }
        Mode::ExecChild { .. } | Mode::FencePolicy(_) => Ok(2), // handled in `main`, before any runtime
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(args: &[&str]) -> Cli {
        let mut all = vec!["leader-elector"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["serve", "--lease", "x"]);
        Cli::try_parse_from(all).expect("valid flags")
    }

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    #[test]
    fn timings_default_to_client_go_and_take_go_style_durations() {
        let t = cli(&[]).election.timings();
        assert_eq!(
            (
                t.lease_duration,
                t.renew_deadline,
                t.retry_period,
                t.request_timeout
            ),
            (s(15), s(10), s(2), None)
        );
        let t = cli(&[
            "--lease-duration",
            "1m",
            "--renew-deadline",
            "45s",
            "--retry-period",
            "1.5s",
            "--request-timeout",
            "500ms",
        ])
        .election
        .timings();
        assert_eq!(
            (
                t.lease_duration,
                t.renew_deadline,
                t.retry_period,
                t.request_timeout
            ),
            (
                s(60),
                s(45),
                Duration::from_millis(1_500),
                Some(Duration::from_millis(500))
            )
        );
        // The older millisecond flags give the same.
        let old = cli(&[
            "--lease-duration-ms",
            "60000",
            "--renew-deadline-ms",
            "45000",
            "--retry-period-ms",
            "1500",
        ])
        .election
        .timings();
        assert_eq!(t.renew_interval, None);
        assert_eq!(
            (old.lease_duration, old.renew_deadline, old.retry_period),
            (t.lease_duration, t.renew_deadline, t.retry_period)
        );
        // Flags go before or after the mode (they are global).
        let after = Cli::try_parse_from([
            "leader-elector",
            "serve",
            "--lease",
            "x",
            "--lease-duration",
            "20s",
        ])
        .expect("valid");
        assert_eq!(after.election.timings().lease_duration, s(20));
    }

    #[test]
    fn each_old_spelling_conflicts_with_its_new_one() {
        for (new, old) in [
            (
                ["--lease-duration", "15s"],
                ["--lease-duration-ms", "15000"],
            ),
            (
                ["--renew-deadline", "10s"],
                ["--renew-deadline-ms", "10000"],
            ),
            (["--retry-period", "2s"], ["--retry-period-ms", "2000"]),
        ] {
            let args = [
                "leader-elector",
                new[0],
                new[1],
                old[0],
                old[1],
                "serve",
                "--lease",
                "x",
            ];
            let e = Cli::try_parse_from(args).expect_err("conflict");
            assert_eq!(
                e.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{args:?}"
            );
        }
        let e = Cli::try_parse_from([
            "leader-elector",
            "run",
            "--lease",
            "x",
            "--kill-after",
            "1s",
            "--kill-after-ms",
            "1000",
            "--",
            "true",
        ])
        .expect_err("conflict");
        assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
    }

    /// The request timeout is client-go's rule, written once in election-core,
    /// unless `--request-timeout` sets it; the result is validated.
    #[test]
    fn the_request_timeout_follows_client_go_unless_given() {
        let config = cli(&[]).election.config("a".into()).expect("valid");
        assert_eq!(
            config.request_timeout,
            Config::client_go_request_timeout(s(10))
        );
        assert_eq!(config.request_timeout, s(5));
        let config = cli(&[
            "--lease-duration",
            "2s",
            "--renew-deadline",
            "1.5s",
            "--retry-period",
            "250ms",
        ])
        .election
        .config("a".into())
        .expect("valid");
        assert_eq!(config.request_timeout, s(1), "max(renew / 2, 1 s)");
        let config = cli(&["--request-timeout", "3s"])
            .election
            .config("a".into())
            .expect("valid");
        assert_eq!(config.request_timeout, s(3));
        assert!(matches!(
            cli(&["--request-timeout", "8s"])
                .election
                .config("a".into()),
            Err(ConfigError::RetryPlusTimeoutNotBelowRenewDeadline { .. })
        ));
        assert!(matches!(
            cli(&["--lease-duration", "1.5s"])
                .election
                .config("a".into()),
            Err(ConfigError::LeaseNotWholeSeconds(_))
        ));
        // The renew interval is the retry period unless given, and checked.
        assert_eq!(
            cli(&[])
                .election
                .config("a".into())
                .expect("valid")
                .renew_every(),
            s(2)
        );
        let config = cli(&["--renew-interval", "5s", "--request-timeout", "4s"])
            .election
            .config("a".into())
            .expect("valid");
        assert_eq!(config.renew_every(), s(5));
        assert!(matches!(
            cli(&["--renew-interval", "5s"]).election.config("a".into()),
            Err(ConfigError::RenewIntervalPlusTimeoutNotBelowRenewDeadline { .. })
        ));
        // The fleet's longest lease, for a rollout that changes the duration.
        let config = cli(&["--fleet-lease-duration", "30s"])
            .election
            .config("a".into())
            .expect("valid");
        assert_eq!(config.fleet_lease_duration, Some(s(30)));
        assert_eq!(config.unseen_holder_lease(), s(30));
        assert!(matches!(
            cli(&["--fleet-lease-duration", "2h"])
                .election
                .config("a".into()),
            Err(ConfigError::FleetLeaseOutOfRange(_))
        ));
    }

    #[test]
    fn the_identity_flag_is_taken_as_given_and_checked() {
        assert_eq!(
            &*cli(&["--identity", "pod-a"])
                .election
                .identity()
                .expect("valid"),
            "pod-a"
        );
        assert!(
            cli(&["--identity", "two words"])
                .election
                .identity()
                .is_err()
        );
    }

    #[test]
    fn command_line_errors_are_one_line() {
        let e = Cli::try_parse_from(["leader-elector", "serve"]).expect_err("no lease");
        let line = one_line(&e.render().to_string());
        assert_eq!(
            line,
            "the following required arguments were not provided: --lease <LEASE>"
        );
        let e = Cli::try_parse_from([
            "leader-elector",
            "--lease-duration",
            "15",
            "serve",
            "--lease",
            "x",
        ])
        .expect_err("no unit");
        let line = one_line(&e.render().to_string());
        assert!(
            line.starts_with("invalid value '15' for '--lease-duration <DURATION>': missing unit"),
            "{line}"
        );
    }

    /// The binary's command line is a valid clap command (clap's own checks of
    /// the hidden copies `fence-policy` gets), and every existing spelling of
    /// `serve` and `run` parses as before: flags before or after the mode.
    #[test]
    fn the_binarys_command_line_keeps_every_spelling_of_serve_and_run() {
        command().debug_assert();
        for args in [
            &[
                "--identity",
                "a",
                "--lease-duration",
                "20s",
                "serve",
                "--lease",
                "x",
            ][..],
            &[
                "serve",
                "--lease",
                "x",
                "--identity",
                "a",
                "--lease-duration",
                "20s",
            ],
            &[
                "--coordinated",
                "--binary-version",
                "1.2.3",
                "serve",
                "--lease",
                "x",
                "--identity",
                "a",
                "--lease-duration",
                "20s",
            ],
            &[
                "run",
                "--lease",
                "x",
                "--identity",
                "a",
                "--lease-duration",
                "20s",
                "--",
                "true",
            ],
        ] {
            let cli =
                Cli::try_parse_args(std::iter::once("leader-elector").chain(args.iter().copied()))
                    .unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert_eq!(cli.election.identity.as_deref(), Some("a"), "{args:?}");
            assert_eq!(cli.election.timings().lease_duration, s(20), "{args:?}");
        }
    }

    /// `fence-policy` refuses the election's flags wherever they stand, naming
    /// them; it takes `--namespace` and `--kubeconfig` on either side.
    #[test]
    fn fence_policy_refuses_the_elections_flags() {
        let parse = |args: &[&str]| {
            Cli::try_parse_args(std::iter::once("leader-elector").chain(args.iter().copied()))
        };
        let fence = ["fence-policy", "--lease", "x", "--protect", "v1/configmaps"];
        for (flags, named) in [
            (&["--identity", "a"][..], "--identity"),
            (&["--lease-duration", "20s"], "--lease-duration"),
            (&["--retry-period-ms", "500"], "--retry-period-ms"),
            (&["--coordinated"], "--coordinated"),
            (&["--log-format", "json"], "--log-format"),
        ] {
            for args in [[flags, &fence[..]].concat(), [&fence[..], flags].concat()] {
                let e = parse(&args).expect_err("refused");
                assert_eq!(
                    e.kind(),
                    clap::error::ErrorKind::ArgumentConflict,
                    "{args:?}"
                );
                let line = one_line(&e.render().to_string());
                assert!(
                    line.starts_with("fence-policy does not take") && line.contains(named),
                    "{args:?}: {line}"
                );
            }
        }
        let cli = parse(
            &[
                &["--namespace", "a"][..],
                &fence[..],
                &["--kubeconfig", "k"],
            ]
            .concat(),
        )
        .expect("valid");
        assert_eq!(cli.namespace.as_deref(), Some("a"));
        assert_eq!(cli.kubeconfig, Some(PathBuf::from("k")));
    }

    /// `--no-default-exemptions`' help names the exemptions election-ops applies.
    #[test]
    fn the_default_exemptions_help_names_them() {
        let mut command = command();
        let help = command
            .find_subcommand_mut(FENCE_POLICY)
            .expect("fence-policy")
            .render_long_help()
            .to_string();
        for name in election_ops::fence::DEFAULT_EXEMPT_USERS
            .iter()
            .chain(&election_ops::fence::DEFAULT_EXEMPT_GROUPS)
        {
            assert!(help.contains(&format!("`{name}`")), "{name}: {help}");
        }
    }

    /// In a cluster the API server speaks HTTPS: the binary carries a TLS stack
    /// (kube's `rustls-tls` with `ring`), so a client for an `https://` URL builds.
    /// Without one, kube refuses it ("no TLS stack") and the sidecar could not start.
    #[tokio::test]
    async fn the_sidecar_can_talk_https() {
        let config = kube::Config::new("https://127.0.0.1:6443".parse().expect("a URL"));
        lock_kube::lock_client(config).expect("a client for an HTTPS API server");
    }
}
