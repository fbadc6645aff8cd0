//! A real Kubernetes API server for tests: `kube-apiserver` on etcd, both
//! built from source at the release `testing/k8s-server` pins
//! ([`K8S_VERSION`]), started on 127.0.0.1 and torn down on drop; and
//! [`Server`], what a suite needs of an API server, so that one suite runs
//! against the emulator and against kube-apiserver.
//!
//! The binaries come from `bash testing/k8s-server/build.sh` (`.ci/install`
//! runs it), which builds them once per machine into
//! `${KUBE_ELECTOR_CACHE:-$HOME/.cache/kube-elector}/k8s-<version>/bin`.
//! Without them [`ApiServer::start`] fails with [`ApiServerError::Missing`],
//! whose message names the script: a test that needs the server fails, it never
//! passes silently. Such tests are `#[ignore]`d with that reason, so that the
//! workspace's test command passes on a machine with only the Rust toolchain;
//! `.ci/run` runs them with `--ignored`.
//!
//! The server is set up as a cluster's is where the library depends on it:
//!
//! - HTTPS on a free port of 127.0.0.1, with a serving certificate for
//!   `IP:127.0.0.1` signed by a CA of its own (made with the `openssl` command),
//!   which every client trusts; the clients are the real `kube::Client` over
//!   rustls, built from a kubeconfig, as the library's users build theirs;
//! - RBAC authorization; bearer tokens from a static token file: [`ADMIN`] is
//!   in `system:masters`, each of [`TESTERS`] in the group [`TESTERS_GROUP`],
//!   which a ClusterRoleBinding gives `cluster-admin` (so the testers pass
//!   through the RBAC authorizer); any other identity a test names is a
//!   ServiceAccount of [`TESTERS_NAMESPACE`], bound the same way; and
//!   ServiceAccounts with no permission until a test binds them a Role, or
//!   bound to a Pod, with tokens the server issues
//!   ([`ApiServer::service_account_config`], [`Server::pod_config`]);
//! - `CoordinatedLeaderElection` on, `coordination.k8s.io/v1beta1`
//!   (LeaseCandidate) served;
//! - etcd on free ports, its data in a temporary directory (on `/dev/shm` where
//!   there is one).
//!
//! No controller-manager runs: nothing garbage-collects, no namespace is ever
//! finalized after a delete, no ServiceAccount `default` is made in a new
//! namespace.
//!
//! One server takes a few seconds to start: the tests of one binary share
//! [`ApiServer::shared`], each in a namespace of its own
//! ([`Server::namespace`]). The shared server is never dropped (it is a
//! static); a watchdog process kills etcd and kube-apiserver and removes their
//! directory when the test process exits, however it exits.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube_emulator::{Emulator, Resource};
// The test servers' shared helpers: etcd's testing module has them.
use lock_etcd::testing::{free_port, temp_dir};

/// The Kubernetes release `testing/k8s-server/go.mod` pins (a test checks they
/// agree): the directory of the built binaries is named after it.
pub const K8S_VERSION: &str = "v1.36.3";

/// The build script, as the error names it.
pub const BUILD_SCRIPT: &str = "bash testing/k8s-server/build.sh";

/// The user in `system:masters`: everything, without RBAC.
pub const ADMIN: &str = "admin";

/// The users with a static token besides [`ADMIN`]: the identities the suites
/// use (`a`, `b`, `human`, the story's `node-a`…). They are in
/// [`TESTERS_GROUP`], bound to `cluster-admin`.
pub const TESTERS: [&str; 14] = [
    "a", "b", "c", "d", "e", "human", "kubectl", "node-a", "node-b", "node-c", "node-d", "node-e",
    "leader", "follower",
];

/// The audit policy: every request on Leases and LeaseCandidates, and the
/// writes (`create`, `update`, `patch`, `delete`) of ConfigMaps, for the
/// tests and benchmarks that count a controller's writes; nothing else (no
/// ConfigMap reads or watches). `{LEASES}` is the level of the Leases' events
/// ([`AuditLeases`]).
const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: {LEASES}
    resources:
      - group: coordination.k8s.io
        resources: [leases]
  - level: Metadata
    resources:
      - group: coordination.k8s.io
        resources: [leasecandidates]
  - level: Metadata
    verbs: [create, update, patch, delete]
    resources:
      - group: \"\"
        resources: [configmaps]
  - level: None
";

/// What the audit log keeps of a request on a Lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AuditLeases {
    /// Who, what, when, the answer's code (level `Metadata`).
    #[default]
    Metadata,
    /// That, and the bodies sent and answered (level `RequestResponse`):
    /// the holder each write committed, for a judge of who led when.
    Bodies,
}

/// One event of the audit log ([`ApiServer::audit_events`]).
#[derive(Clone, Debug)]
pub struct AuditEvent {
    /// The request's audit ID (a watch has two events under one).
    pub id: String,
    /// `ResponseStarted` (watches) or `ResponseComplete`.
    pub stage: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, …
    pub verb: String,
    /// The user name.
    pub user: String,
    /// `leases`, `leasecandidates`, `configmaps`.
    pub resource: String,
    /// The object's namespace.
    pub namespace: String,
    /// The object's name (empty for a list or watch of a collection).
    pub name: String,
    /// The answer's HTTP code.
    pub code: u16,
    /// When the server received the request.
    pub received: std::time::SystemTime,
    /// When the server stamped this stage (for `ResponseComplete`: the
    /// answer done, a write committed before it).
    pub stamped: std::time::SystemTime,
    /// The answer's body, with [`AuditLeases::Bodies`] (a Lease, or a
    /// `Status`).
    pub response: Option<serde_json::Value>,
}

/// How long a ServiceAccount token the fixture requests lasts: longer than
/// the longest soak (an hour of faults after the setup).
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(6 * 3600);

/// The group of [`TESTERS`].
pub const TESTERS_GROUP: &str = "kube-elector:testers";

/// Where [`Server::kube_config`] makes a ServiceAccount for an identity that
/// has no static token; its ServiceAccounts are bound to `cluster-admin`, as
/// [`TESTERS_GROUP`] is.
pub const TESTERS_NAMESPACE: &str = "kube-elector-testers";

/// How long [`ApiServer::start`] waits for `/readyz`.
pub const READY_TIMEOUT: Duration = Duration::from_secs(90);

/// What a suite needs of a Kubernetes API server: clients per identity, reads
/// of what the server stores, a namespace per test. Implemented by the API
/// emulator (a fresh one per test: every test uses its `default` namespace)
/// and by [`ApiServer`].
pub trait Server: Send + Sync {
    /// Which server: `emulator` or `kube-apiserver v1.36.3`, for messages.
    fn name(&self) -> String;

    /// Whether this is the emulator, which serves the kinds of leader
    /// election only: no OpenAPI documents (kubectl's validation needs
    /// `--validate=false`), no Roles and no RBAC enforced, and no parameter
    /// selectors in admission bindings.
    fn is_emulator(&self) -> bool {
        false
    }

    /// A `kube` configuration authenticating as `identity`, default namespace
    /// `default`.
    fn kube_config(&self, identity: &str) -> kube::Config;

    /// A client for `identity` (direct calls: inside
    /// [`compat`](crate::runtimes::compat), which kube's client wants).
    fn client(&self, identity: &str) -> kube::Client {
        let config = self.kube_config(identity);
        lock_kube::call::in_tokio_context(|| kube::Client::try_from(config)).expect("a kube client")
    }

    /// The object `name` of `resource` in `namespace` as the server has it
    /// (read by the admin), or `None` if there is none. Blocks the caller
    /// briefly (any runtime).
    fn object(&self, resource: Resource, namespace: &str, name: &str) -> Option<serde_json::Value>;

    /// The objects of `resource` in `namespace`, as a list gives them.
    fn objects(&self, resource: Resource, namespace: &str) -> Vec<serde_json::Value>;

    /// A namespace for one test: the emulator's `default`, a new one on
    /// kube-apiserver.
    fn namespace(&self) -> String;

    /// A `kube` configuration for the Pod `pod` of the ServiceAccount
    /// `service_account` in `namespace`, as a Pod-bound token authenticates
    /// it: user `system:serviceaccount:<namespace>:<service_account>`, extra
    /// `authentication.kubernetes.io/pod-name: <pod>`. The emulator maps the
    /// token `pod` to that user; kube-apiserver makes the ServiceAccount and
    /// the Pod (never scheduled: no kubelet) and issues a token bound to the
    /// Pod (TokenRequest).
    fn pod_config(&self, namespace: &str, service_account: &str, pod: &str) -> kube::Config;

    /// Makes every resource version handed out so far one a watch cannot
    /// resume from (410 Gone), as after a long disconnection: the emulator
    /// compacts its history; kube-apiserver restarts on the same etcd
    /// ([`ApiServer::restart_apiserver`]: its watch cache begins after them),
    /// which only a server of the test's own may do.
    fn expire_watch_history(&self);
}

impl Server for Emulator {
    fn name(&self) -> String {
        "emulator".to_owned()
    }
    fn is_emulator(&self) -> bool {
        true
    }
    fn kube_config(&self, identity: &str) -> kube::Config {
        Emulator::kube_config(self, identity)
    }
    fn object(&self, resource: Resource, namespace: &str, name: &str) -> Option<serde_json::Value> {
        Emulator::object(self, resource, namespace, name)
    }
    fn objects(&self, resource: Resource, namespace: &str) -> Vec<serde_json::Value> {
        Emulator::objects(self, resource, namespace)
    }
    fn namespace(&self) -> String {
        "default".to_owned()
    }
    fn pod_config(&self, namespace: &str, service_account: &str, pod: &str) -> kube::Config {
        self.set_user(
            pod,
            kube_emulator::UserInfo::pod(namespace, service_account, pod),
        );
        Emulator::kube_config(self, pod)
    }
    fn expire_watch_history(&self) {
        self.compact();
    }
}

/// Why the API server could not be had. Its `Debug` form is its message, so
/// that a test's `.expect(…)` prints what to do.
#[non_exhaustive]
pub enum ApiServerError {
    /// The binaries are not built.
    Missing {
        /// The binary looked for.
        binary: PathBuf,
    },
    /// The files or processes could not be set up.
    Start(String),
    /// A process exited, or the server did not answer in time; with the end of
    /// its log.
    NotReady {
        /// What happened.
        reason: String,
        /// The end of kube-apiserver's and etcd's logs.
        log: String,
    },
}

impl fmt::Display for ApiServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiServerError::Missing { binary } => write!(
                f,
                "kube-apiserver {K8S_VERSION} is not built: no {}. The real-server tests need it: \
                 run `{BUILD_SCRIPT}` (Go 1.26; about ten minutes the first time, cached after; \
                 `.ci/install` runs it)",
                binary.display()
            ),
            ApiServerError::Start(e) => write!(f, "cannot start kube-apiserver: {e}"),
            ApiServerError::NotReady { reason, log } => write!(
                f,
                "kube-apiserver did not become ready: {reason}\n--- logs (end) ---\n{log}"
            ),
        }
    }
}

impl fmt::Debug for ApiServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for ApiServerError {}

/// The directory `testing/k8s-server/build.sh` builds into.
pub fn bin_dir() -> PathBuf {
    let cache = std::env::var_os("KUBE_ELECTOR_CACHE")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home =
                std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
            home.join(".cache").join("kube-elector")
        });
    cache.join(format!("k8s-{K8S_VERSION}")).join("bin")
}

/// A running kube-apiserver on its etcd, killed and its files removed on drop.
pub struct ApiServer {
    dir: PathBuf,
    url: String,
    port: u16,
    etcd: Mutex<Child>,
    etcd_bin: PathBuf,
    etcd_args: Vec<String>,
    apiserver: Mutex<Child>,
    apiserver_bin: PathBuf,
    apiserver_args: Vec<String>,
    /// Kills the two (by the process ids in `dir/*.pid`) and removes `dir`
    /// when its stdin closes: when this process ends without dropping the
    /// server.
    watchdog: Option<(Child, ChildStdin)>,
    runtime: Option<tokio::runtime::Runtime>,
    configs: BTreeMap<String, kube::Config>,
    /// Per (namespace, `account/pod`): the configuration and its kubeconfig
    /// text.
    service_accounts: Mutex<BTreeMap<(String, String), (kube::Config, String)>>,
    startup: Duration,
}

impl fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiServer")
            .field("url", &self.url)
            .field("dir", &self.dir)
            .field("startup", &self.startup)
            .finish_non_exhaustive()
    }
}

impl ApiServer {
    /// The server shared by the tests of this process, started by the first
    /// that asks (each test then takes a namespace of its own).
    ///
    /// # Panics
    ///
    /// When the server cannot be started ([`ApiServerError`]'s message says
    /// why, and how to build it when it is missing).
    pub fn shared() -> &'static ApiServer {
        static SHARED: OnceLock<ApiServer> = OnceLock::new();
        SHARED.get_or_init(|| ApiServer::start().expect("the shared kube-apiserver"))
    }

    /// Starts etcd and kube-apiserver, and waits until the server is ready and
    /// the testers' binding is in force. Blocks (it runs on a tokio runtime of
    /// its own, on threads of its own: call it from any runtime or none).
    pub fn start() -> Result<ApiServer, ApiServerError> {
        Self::start_with(AuditLeases::Metadata)
    }

    /// [`start`](Self::start), with the audit log keeping `leases` of each
    /// request on a Lease.
    pub fn start_with(leases: AuditLeases) -> Result<ApiServer, ApiServerError> {
        let bin = bin_dir();
        for name in ["kube-apiserver", "etcd"] {
            let binary = bin.join(name);
            if !binary.is_file() {
                return Err(ApiServerError::Missing { binary });
            }
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("kube-apiserver-fixture")
            .enable_all()
            .build()
            .map_err(|e| ApiServerError::Start(format!("no tokio runtime: {e}")))?;
        let mut last = None;
        // A free port found by binding can be taken by another process before
        // the server binds it: try again with new ports.
        for _ in 0..3 {
            let started = Instant::now();
            match Self::spawn(&bin, &runtime, leases) {
                Ok(mut server) => {
                    let ready = on(&runtime, {
                        let admin = server.configs[ADMIN].clone();
                        async move { wait_ready(admin).await }
                    });
                    let ready = ready.and_then(|()| server.exited());
                    match ready.and_then(|()| on(&runtime, bind_testers(server.configs.clone()))) {
                        Ok(()) => {
                            server.startup = started.elapsed();
                            server.runtime = Some(runtime);
                            eprintln!(
                                "kube-apiserver {K8S_VERSION} on {} ready in {:.1} s",
                                server.url,
                                server.startup.as_secs_f64()
                            );
                            return Ok(server);
                        }
                        Err(reason) => {
                            let exited = server.exited().err();
                            last = Some(ApiServerError::NotReady {
                                reason: exited
                                    .map_or(reason.clone(), |e| format!("{e} ({reason})")),
                                log: server.log_tail(),
                            });
                        }
                    }
                }
                Err(e) => last = Some(e),
            }
        }
        runtime.shutdown_background();
        Err(last.unwrap_or_else(|| ApiServerError::Start("no attempt made".into())))
    }

    /// Makes the directory, the certificates, keys and tokens, and starts the
    /// processes; does not wait.
    fn spawn(
        bin: &Path,
        runtime: &tokio::runtime::Runtime,
        leases: AuditLeases,
    ) -> Result<ApiServer, ApiServerError> {
        let dir =
            temp_dir("kube-elector-apiserver").map_err(|e| ApiServerError::Start(e.to_string()))?;
        let fail = |e: String| {
            let _ = fs::remove_dir_all(&dir);
            ApiServerError::Start(e)
        };
        make_certificates(&dir).map_err(fail)?;
        let level = match leases {
            AuditLeases::Metadata => "Metadata",
            AuditLeases::Bodies => "RequestResponse",
        };
        fs::write(
            dir.join("audit-policy.yaml"),
            AUDIT_POLICY.replace("{LEASES}", level),
        )
        .map_err(|e| fail(format!("cannot write the audit policy: {e}")))?;
        let tokens = write_tokens(&dir).map_err(fail)?;
        let port = || free_port().map_err(|e| format!("no free port: {e}"));
        let ports = (|| Ok::<_, String>((port()?, port()?, port()?)))();
        let (etcd_port, peer_port, port) = ports.map_err(fail)?;
        let url = format!("https://127.0.0.1:{port}");

        let etcd_client = format!("http://127.0.0.1:{etcd_port}");
        let etcd_peer = format!("http://127.0.0.1:{peer_port}");
        let etcd_bin = bin.join("etcd");
        let etcd_args: Vec<String> = vec![
            "--name=test".into(),
            format!("--data-dir={}", dir.join("etcd").display()),
            format!("--listen-client-urls={etcd_client}"),
            format!("--advertise-client-urls={etcd_client}"),
            format!("--listen-peer-urls={etcd_peer}"),
            format!("--initial-advertise-peer-urls={etcd_peer}"),
            format!("--initial-cluster=test={etcd_peer}"),
            "--log-level=warn".into(),
        ];
        let etcd = spawn_server("etcd", &etcd_bin, &etcd_args, &dir).map_err(fail)?;
        let d = |f: &str| dir.join(f).display().to_string();
        let apiserver_args: Vec<String> = vec![
            format!("--etcd-servers={etcd_client}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={port}"),
            format!("--cert-dir={}", d("certs")),
            format!("--tls-cert-file={}", d("server.crt")),
            format!("--tls-private-key-file={}", d("server.key")),
            format!("--client-ca-file={}", d("ca.crt")),
            "--authorization-mode=RBAC".into(),
            format!("--token-auth-file={}", d("tokens.csv")),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", d("sa.pub")),
            format!("--service-account-signing-key-file={}", d("sa.key")),
            "--feature-gates=CoordinatedLeaderElection=true".into(),
            "--runtime-config=coordination.k8s.io/v1beta1=true".into(),
            "--service-cluster-ip-range=10.0.0.0/24".into(),
            // The `kubernetes` Service's Endpoints may not name a loopback
            // address: no reconciler, rather than an error a second.
            "--endpoint-reconciler-type=none".into(),
            // Every request on Leases and LeaseCandidates, and every write of
            // a ConfigMap, in the audit log (`audit_log`), for tests that
            // count a client's requests.
            format!("--audit-policy-file={}", d("audit-policy.yaml")),
            format!("--audit-log-path={}", d("audit.log")),
            "--audit-log-format=json".into(),
            "--audit-log-maxsize=0".into(),
        ];
        let apiserver_bin = bin.join("kube-apiserver");
        let apiserver = spawn_server("kube-apiserver", &apiserver_bin, &apiserver_args, &dir);
        let mut etcd = etcd;
        let apiserver = match apiserver {
            Ok(child) => child,
            Err(e) => {
                let _ = etcd.kill();
                let _ = etcd.wait();
                return Err(fail(e));
            }
        };
        let watchdog = spawn_watchdog(&dir);
        let mut server = ApiServer {
            dir: dir.clone(),
            url: url.clone(),
            port,
            etcd: Mutex::new(etcd),
            etcd_bin,
            etcd_args,
            apiserver: Mutex::new(apiserver),
            apiserver_bin,
            apiserver_args,
            watchdog,
            runtime: None,
            configs: BTreeMap::new(),
            service_accounts: Mutex::new(BTreeMap::new()),
            startup: Duration::ZERO,
        };
        for (identity, token) in &tokens {
            let path = server.kubeconfig(identity);
            fs::write(
                &path,
                kubeconfig_text(&url, &dir.join("ca.crt"), identity, token),
            )
            .map_err(|e| ApiServerError::Start(format!("cannot write {}: {e}", path.display())))?;
            let text = fs::read_to_string(&path).unwrap_or_default();
            let config = on(runtime, async move { kube_config_from(&text).await })
                .map_err(ApiServerError::Start)?;
            server.configs.insert(identity.clone(), config);
        }
        Ok(server)
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port it serves on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// How long it took from start to ready: from making its certificates to
    /// `/readyz` answering `ok` and the testers' binding in force.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// kube-apiserver's process id (its CPU time is in `/proc/<pid>/stat`).
    pub fn pid(&self) -> u32 {
        lock(&self.apiserver).id()
    }

    /// Restarts kube-apiserver on the same etcd, port, certificates and tokens,
    /// and waits until it is ready again. Meanwhile every request fails (its
    /// connections are refused or cut); afterwards a watch cannot resume from a
    /// resource version handed out before (410 Gone: the new watch cache starts
    /// after them), as after a restart of a cluster's API server. Not on the
    /// shared server: the other tests' requests would fail.
    pub fn restart_apiserver(&self) -> Result<(), ApiServerError> {
        self.restart_apiserver_after(Duration::ZERO)
    }

    /// As [`ApiServer::restart_apiserver`], kube-apiserver down for `down`
    /// before it starts again (an outage longer than a renew deadline).
    pub fn restart_apiserver_after(&self, down: Duration) -> Result<(), ApiServerError> {
        {
            let mut child = lock(&self.apiserver);
            let _ = child.kill();
            let _ = child.wait();
            std::thread::sleep(down);
            *child = spawn_server(
                "kube-apiserver",
                &self.apiserver_bin,
                &self.apiserver_args,
                &self.dir,
            )
            .map_err(ApiServerError::Start)?;
        }
        self.until_ready()
    }

    /// Restarts etcd on its data (killed, down for `down`, started again),
    /// kube-apiserver left running, and waits until the server is ready
    /// again. Meanwhile every request that reaches etcd fails or waits;
    /// kube-apiserver's own watches of etcd break and resume. Not on the
    /// shared server: the other tests' requests would fail.
    pub fn restart_etcd_after(&self, down: Duration) -> Result<(), ApiServerError> {
        {
            let mut child = lock(&self.etcd);
            let _ = child.kill();
            let _ = child.wait();
            std::thread::sleep(down);
            *child = spawn_server("etcd", &self.etcd_bin, &self.etcd_args, &self.dir)
                .map_err(ApiServerError::Start)?;
        }
        self.until_ready()
    }

    /// Stops etcd (SIGSTOP) for `stalled`, then continues it (SIGCONT),
    /// kube-apiserver left running; blocks meanwhile. Every write and quorum
    /// read of every client waits: the control plane slow as a whole (a disk
    /// that stalls etcd's fsync does this), not one client's network.
    pub fn stall_etcd_for(&self, stalled: Duration) -> Result<(), ApiServerError> {
        use rustix::process::{Pid, Signal, kill_process};
        let child = lock(&self.etcd);
        let pid = Pid::from_child(&child);
        let signal = |s: Signal| {
            kill_process(pid, s)
                .map_err(|e| ApiServerError::Start(format!("cannot signal etcd: {e}")))
        };
        signal(Signal::STOP)?;
        std::thread::sleep(stalled);
        signal(Signal::CONT)
    }

    /// Waits until the server answers the admin again.
    fn until_ready(&self) -> Result<(), ApiServerError> {
        let admin = self.configs[ADMIN].clone();
        self.block_on(async move { wait_ready(admin).await })
            .map_err(|reason| ApiServerError::NotReady {
                reason,
                log: self.log_tail(),
            })
    }

    /// Kills kube-apiserver and etcd now: for a server leaked to lend it for
    /// `'static`, which is never dropped (its files go when this process
    /// ends). Every request fails after.
    pub fn stop(&self) {
        for child in [&self.apiserver, &self.etcd] {
            let mut child = lock(child);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// etcd's process id.
    pub fn etcd_pid(&self) -> u32 {
        lock(&self.etcd).id()
    }

    /// The API server's audit log: one JSON event per line (`audit.k8s.io/v1`
    /// `Event`, level `Metadata` unless [`AuditLeases::Bodies`]) for each
    /// request on Leases and LeaseCandidates, at its `ResponseStarted`
    /// (watches) and `ResponseComplete` stages, and for each write (`create`,
    /// `update`, `patch`, `delete`) of a ConfigMap, at its `ResponseComplete`
    /// stage; nothing else is audited (not a ConfigMap's reads, lists or
    /// watches).
    pub fn audit_log(&self) -> PathBuf {
        self.dir.join("audit.log")
    }

    /// The audit log's events from byte `offset` on, and the offset of what
    /// is not read yet (a line still being written is left for the next
    /// call). A request is logged when answered, refused ones included.
    pub fn audit_events(&self, offset: u64) -> (Vec<AuditEvent>, u64) {
        use k8s_openapi::jiff::Timestamp;
        use std::io::{Read, Seek, SeekFrom};
        let mut text = Vec::new();
        if let Ok(mut file) = fs::File::open(self.audit_log())
            && file.seek(SeekFrom::Start(offset)).is_ok()
        {
            let _ = file.read_to_end(&mut text);
        }
        let complete = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let mut events = Vec::new();
        for line in text[..complete].split(|b| *b == b'\n') {
            let Ok(event) = serde_json::from_slice::<serde_json::Value>(line) else {
                continue;
            };
            let field = |p: &str| {
                event
                    .pointer(p)
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_owned()
            };
            let time = |p: &str| {
                field(p)
                    .parse::<Timestamp>()
                    .ok()
                    .map(std::time::SystemTime::from)
            };
            let (Some(received), Some(stamped)) =
                (time("/requestReceivedTimestamp"), time("/stageTimestamp"))
            else {
                continue;
            };
            events.push(AuditEvent {
                id: field("/auditID"),
                stage: field("/stage"),
                verb: field("/verb"),
                user: field("/user/username"),
                resource: field("/objectRef/resource"),
                namespace: field("/objectRef/namespace"),
                name: field("/objectRef/name"),
                code: event
                    .pointer("/responseStatus/code")
                    .and_then(serde_json::Value::as_u64)
                    .and_then(|c| u16::try_from(c).ok())
                    .unwrap_or(0),
                received,
                stamped,
                response: event.get("responseObject").cloned(),
            });
        }
        (events, offset + complete as u64)
    }

    /// The requests on `resource` (`leases`, `leasecandidates`: all of them;
    /// `configmaps`: its writes, the only ones audited) in `namespace` that the
    /// audit log records as received between `from` and `to` (inclusive), per
    /// (user name, verb): each audit ID once (a watch has an event when it
    /// starts and one when it ends). A request is written to the log when
    /// answered, refused ones included: read it a moment after `to`.
    pub fn audit_requests(
        &self,
        resource: &str,
        namespace: &str,
        from: std::time::SystemTime,
        to: std::time::SystemTime,
    ) -> BTreeMap<(String, String), u64> {
        let mut seen = std::collections::BTreeSet::new();
        let mut counts = BTreeMap::new();
        for event in self.audit_events(0).0 {
            if event.namespace != namespace
                || event.resource != resource
                || event.received < from
                || event.received > to
                || !seen.insert(event.id)
            {
                continue;
            }
            *counts.entry((event.user, event.verb)).or_insert(0) += 1;
        }
        counts
    }

    /// The CA certificate the server's serving certificate is signed by (PEM).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    /// A kubeconfig file for `identity` ([`ADMIN`] or one of [`TESTERS`]),
    /// for `kubectl --kubeconfig`: the server, its CA, the identity's token,
    /// namespace `default`.
    pub fn kubeconfig(&self, identity: &str) -> PathBuf {
        self.dir.join(format!("{identity}.kubeconfig"))
    }

    /// Writes a kubeconfig for `identity` whose context's namespace is
    /// `namespace` to `path` (for a kubectl that should default to a test's
    /// namespace).
    ///
    /// # Panics
    ///
    /// When `identity` has no token, or the file cannot be written.
    pub fn write_kubeconfig(&self, identity: &str, namespace: &str, path: &Path) {
        let text = fs::read_to_string(self.kubeconfig(identity))
            .unwrap_or_else(|e| panic!("no kubeconfig for {identity:?} ({e}): see TESTERS"));
        let text = text.replace("namespace: default", &format!("namespace: {namespace}"));
        fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }

    /// Runs `future` on the server's own runtime and waits for it, from any
    /// runtime or none (the calling thread blocks meanwhile).
    pub fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        on(self.runtime.as_ref().expect("started"), future)
    }

    /// A `kube` configuration for the ServiceAccount `name` in `namespace`,
    /// with a token the server issues for it (TokenRequest, [`TOKEN_LIFETIME`]),
    /// creating the account if it does not exist. Its user is
    /// `system:serviceaccount:<namespace>:<name>`, with no permission until a
    /// test binds it a Role.
    ///
    /// # Panics
    ///
    /// When the server refuses.
    pub fn service_account_config(&self, namespace: &str, name: &str) -> kube::Config {
        self.token_config(namespace, name, None)
    }

    /// `kubectl apply -n <namespace> -f <file>…` as [`ADMIN`], as a manifest's
    /// header tells an operator to apply it (kubectl must be on `PATH`).
    ///
    /// # Panics
    ///
    /// When kubectl cannot be run or fails, with its output.
    pub fn kubectl_apply(&self, namespace: &str, files: &[PathBuf]) {
        let mut command = kube_emulator::kubectl(&self.kubeconfig(ADMIN));
        command.args(["apply", "-n", namespace]);
        for file in files {
            command.arg("-f").arg(file);
        }
        let out = command
            .output()
            .unwrap_or_else(|e| panic!("kubectl cannot be run (is it on PATH?): {e}"));
        assert!(
            out.status.success(),
            "kubectl apply -n {namespace} {files:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Whether `config`'s user may `verb` the `resource` of `group` in
    /// `namespace` now, as a SelfSubjectAccessReview answers.
    ///
    /// # Panics
    ///
    /// When the review fails.
    pub fn allowed(
        &self,
        config: &kube::Config,
        namespace: &str,
        verb: &str,
        group: &str,
        resource: &str,
    ) -> bool {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    namespace: Some(namespace.to_owned()),
                    verb: Some(verb.to_owned()),
                    group: Some(group.to_owned()),
                    resource: Some(resource.to_owned()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let config = config.clone();
        self.block_on(async move {
            let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
            let answer = Api::<SelfSubjectAccessReview>::all(client)
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(answer.status.is_some_and(|s| s.allowed))
        })
        .unwrap_or_else(|e| panic!("SelfSubjectAccessReview ({verb} {resource}): {e}"))
    }

    /// Waits (10 s at most) until [`allowed`](Self::allowed) answers yes: the
    /// RBAC authorizer sees a new binding through its informer, a moment
    /// after it is created.
    ///
    /// # Panics
    ///
    /// When it is still not allowed after 10 s, or a review fails.
    pub fn wait_allowed(
        &self,
        config: &kube::Config,
        namespace: &str,
        verb: &str,
        group: &str,
        resource: &str,
    ) {
        let started = Instant::now();
        while !self.allowed(config, namespace, verb, group, resource) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{verb} {resource} in {namespace}: not allowed after 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The sum of the samples of the metric `name` in kube-apiserver's
    /// `/metrics` (read as [`ADMIN`]) whose labels include every pair of
    /// `labels`: `metric_sum("apiserver_request_total", &[("verb", "LIST"),
    /// ("resource", "configmaps")])` counts the LISTs of ConfigMaps served so
    /// far, by every client.
    ///
    /// # Panics
    ///
    /// When `/metrics` cannot be read.
    pub fn metric_sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let admin = self.admin();
        let text = self
            .block_on(async move {
                let request = http::Request::get("/metrics")
                    .body(Vec::new())
                    .map_err(|e| e.to_string())?;
                admin.request_text(request).await.map_err(|e| e.to_string())
            })
            .unwrap_or_else(|e| panic!("GET /metrics: {e}"));
        let wanted: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (series, value) = l.rsplit_once(' ')?;
                let (metric, rest) = series.split_once('{').unwrap_or((series, ""));
                let pairs: Vec<&str> = rest.trim_end_matches('}').split(',').collect();
                (metric == name && wanted.iter().all(|w| pairs.contains(&w.as_str())))
                    .then(|| value.parse::<f64>().ok())
                    .flatten()
            })
            .sum()
    }

    /// Writes a kubeconfig file for the ServiceAccount `name` in `namespace`
    /// to `path`: the token of [`service_account_config`](Self::service_account_config)
    /// (issued on first use), the server and its CA, the context's namespace
    /// `namespace`; for a program the test runs as that account (a sidecar,
    /// `kubectl`).
    ///
    /// # Panics
    ///
    /// When the server refuses, or the file cannot be written.
    pub fn write_service_account_kubeconfig(&self, namespace: &str, name: &str, path: &Path) {
        self.write_token_kubeconfig(namespace, name, None, path);
    }

    /// A kubeconfig file for the Pod `pod` of the ServiceAccount
    /// `service_account` in `namespace`, with a token bound to the Pod
    /// ([`Server::pod_config`]'s): what a Pod's own program runs with.
    ///
    /// # Panics
    ///
    /// When the server refuses, or the file cannot be written.
    pub fn write_pod_kubeconfig(
        &self,
        namespace: &str,
        service_account: &str,
        pod: &str,
        path: &Path,
    ) {
        self.write_token_kubeconfig(namespace, service_account, Some(pod), path);
    }

    fn write_token_kubeconfig(&self, namespace: &str, name: &str, pod: Option<&str>, path: &Path) {
        self.token_config(namespace, name, pod);
        let key = account_key(namespace, name, pod);
        let text = lock(&self.service_accounts)
            .get(&key)
            .map(|(_, text)| text.clone())
            .expect("kept by token_config");
        fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }

    /// A configuration with a token issued for the ServiceAccount `name` in
    /// `namespace` (made if missing), bound to the Pod `pod` (made if
    /// missing) if one is named; kept, so that one token serves each.
    fn token_config(&self, namespace: &str, name: &str, pod: Option<&str>) -> kube::Config {
        let key = account_key(namespace, name, pod);
        if let Some((config, _)) = lock(&self.service_accounts).get(&key) {
            return config.clone();
        }
        let admin = self.admin();
        let (ns, sa, pod_name) = (
            namespace.to_owned(),
            name.to_owned(),
            pod.map(str::to_owned),
        );
        let token = self
            .block_on(async move {
                let api: Api<ServiceAccount> = Api::namespaced(admin.clone(), &ns);
                let account = ServiceAccount {
                    metadata: ObjectMeta {
                        name: Some(sa.clone()),
                        ..ObjectMeta::default()
                    },
                    ..ServiceAccount::default()
                };
                match api.create(&PostParams::default(), &account).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(e) => return Err(format!("create ServiceAccount {ns}/{sa}: {e}")),
                }
                let bound = match &pod_name {
                    None => None,
                    Some(pod) => Some(make_pod(admin, &ns, &sa, pod).await?),
                };
                let request = TokenRequest {
                    spec: Some(TokenRequestSpec {
                        expiration_seconds: Some(TOKEN_LIFETIME.as_secs() as i64),
                        bound_object_ref: bound,
                        ..TokenRequestSpec::default()
                    }),
                    ..TokenRequest::default()
                };
                let answer = api
                    .create_token_request(&sa, &PostParams::default(), &request)
                    .await
                    .map_err(|e| format!("TokenRequest for {ns}/{sa}: {e}"))?;
                answer
                    .status
                    .and_then(|s| s.token)
                    .ok_or_else(|| format!("TokenRequest for {ns}/{sa}: no token in the answer"))
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let user = format!("{namespace}-{name}-{}", pod.unwrap_or("sa"));
        let text = kubeconfig_text(&self.url, &self.ca_file(), &user, &token)
            .replace("namespace: default", &format!("namespace: {namespace}"));
        let config = self
            .block_on({
                let text = text.clone();
                async move { kube_config_from(&text).await }
            })
            .unwrap_or_else(|e| panic!("{e}"));
        lock(&self.service_accounts).insert(key, (config.clone(), text));
        config
    }

    fn admin(&self) -> kube::Client {
        let config = self.configs[ADMIN].clone();
        let _guard = self.runtime.as_ref().expect("started").enter();
        kube::Client::try_from(config).expect("a kube client")
    }

    /// An error if etcd or kube-apiserver has exited.
    fn exited(&mut self) -> Result<(), String> {
        for (name, child) in [
            ("etcd", &mut *lock(&self.etcd)),
            ("kube-apiserver", &mut *lock(&self.apiserver)),
        ] {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("{name} exited: {status}"));
            }
        }
        Ok(())
    }

    fn log_tail(&self) -> String {
        ["kube-apiserver.log", "etcd.log"]
            .iter()
            .map(|f| format!("--- {f}\n{}", tail(&self.dir.join(f), 30)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Server for ApiServer {
    fn name(&self) -> String {
        format!("kube-apiserver {K8S_VERSION}")
    }

    /// [`ADMIN`] and [`TESTERS`] by their static tokens; any other identity
    /// as the ServiceAccount of that name in [`TESTERS_NAMESPACE`] (made on
    /// first use, bound to `cluster-admin`), with a token the server issued.
    fn kube_config(&self, identity: &str) -> kube::Config {
        match self.configs.get(identity) {
            Some(config) => config.clone(),
            None => self.token_config(TESTERS_NAMESPACE, identity, None),
        }
    }

    fn object(&self, resource: Resource, namespace: &str, name: &str) -> Option<serde_json::Value> {
        let path = format!("{}/{name}", collection_path(resource, namespace));
        let admin = self.admin();
        self.block_on(async move { get_json(&admin, &path).await })
            .unwrap_or_else(|e| panic!("GET {e}"))
    }

    fn objects(&self, resource: Resource, namespace: &str) -> Vec<serde_json::Value> {
        let path = collection_path(resource, namespace);
        let admin = self.admin();
        let list = self
            .block_on(async move { get_json(&admin, &path).await })
            .unwrap_or_else(|e| panic!("GET {e}"))
            .unwrap_or_default();
        list["items"].as_array().cloned().unwrap_or_default()
    }

    fn namespace(&self) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let admin = self.admin();
        let ns = name.clone();
        self.block_on(async move {
            let api: Api<Namespace> = Api::all(admin);
            let namespace = Namespace {
                metadata: ObjectMeta {
                    name: Some(ns),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            };
            api.create(&PostParams::default(), &namespace).await
        })
        .unwrap_or_else(|e| panic!("cannot create the namespace {name}: {e}"));
        name
    }

    fn pod_config(&self, namespace: &str, service_account: &str, pod: &str) -> kube::Config {
        self.token_config(namespace, service_account, Some(pod))
    }

    fn expire_watch_history(&self) {
        self.restart_apiserver().expect("kube-apiserver restarts");
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        // The watchdog first, so that it signals no process id after it is
        // reused.
        if let Some((mut watchdog, stdin)) = self.watchdog.take() {
            let _ = watchdog.kill();
            let _ = watchdog.wait();
            drop(stdin);
        }
        for child in [&mut *lock(&self.apiserver), &mut *lock(&self.etcd)] {
            let _ = child.kill();
            let _ = child.wait();
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The key of a ServiceAccount's (or one of its Pods') kept configuration.
fn account_key(namespace: &str, name: &str, pod: Option<&str>) -> (String, String) {
    (
        namespace.to_owned(),
        format!("{name}/{}", pod.unwrap_or_default()),
    )
}

/// The Pod `pod` of the ServiceAccount `sa` in `ns` (made if missing; never
/// scheduled), as a token's bound object.
async fn make_pod(
    admin: kube::Client,
    ns: &str,
    sa: &str,
    pod: &str,
) -> Result<BoundObjectReference, String> {
    let api: Api<Pod> = Api::namespaced(admin, ns);
    let spec: Pod = serde_json::from_value(serde_json::json!({
        "metadata": { "name": pod },
        "spec": {
            "serviceAccountName": sa,
            "automountServiceAccountToken": false,
            "containers": [{ "name": "app", "image": "registry.invalid/app:1" }],
        },
    }))
    .map_err(|e| format!("a Pod: {e}"))?;
    let made = match api.create(&PostParams::default(), &spec).await {
        Ok(made) => made,
        Err(kube::Error::Api(s)) if s.code == 409 => api
            .get(pod)
            .await
            .map_err(|e| format!("get Pod {ns}/{pod}: {e}"))?,
        Err(e) => return Err(format!("create Pod {ns}/{pod}: {e}")),
    };
    Ok(BoundObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: Some(pod.into()),
        uid: made.metadata.uid,
    })
}

/// `/api/v1/namespaces/<ns>/configmaps`, `/apis/<group>/<version>/…`.
fn collection_path(resource: Resource, namespace: &str) -> String {
    let base = if resource.group().is_empty() {
        format!("/api/{}", resource.version())
    } else {
        format!("/apis/{}/{}", resource.group(), resource.version())
    };
    if resource.namespaced() {
        format!("{base}/namespaces/{namespace}/{}", resource.plural())
    } else {
        format!("{base}/{}", resource.plural())
    }
}

/// The JSON at `path`, `None` on 404.
async fn get_json(client: &kube::Client, path: &str) -> Result<Option<serde_json::Value>, String> {
    let request = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| format!("{path}: {e}"))?;
    match client.request::<serde_json::Value>(request).await {
        Ok(v) => Ok(Some(v)),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(e) => Err(format!("{path}: {e}")),
    }
}

/// Polls `/readyz` as the admin until it answers `ok`.
async fn wait_ready(admin: kube::Config) -> Result<(), String> {
    let client = kube::Client::try_from(admin).map_err(|e| format!("no client: {e}"))?;
    let started = Instant::now();
    let mut last = String::from("no answer yet");
    while started.elapsed() < READY_TIMEOUT {
        let request = http::Request::get("/readyz")
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        match tokio::time::timeout(Duration::from_secs(5), client.request_text(request)).await {
            Ok(Ok(body)) if body.trim() == "ok" => return Ok(()),
            Ok(Ok(body)) => last = body,
            Ok(Err(e)) => last = e.to_string(),
            Err(_) => last = "a /readyz request took over 5 s".into(),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("/readyz not ok within {READY_TIMEOUT:?}: {last}"))
}

/// Binds [`TESTERS_GROUP`] to `cluster-admin` and waits until a tester may
/// read Leases (the RBAC authorizer sees bindings through its informer).
async fn bind_testers(configs: BTreeMap<String, kube::Config>) -> Result<(), String> {
    let admin = kube::Client::try_from(configs[ADMIN].clone()).map_err(|e| e.to_string())?;
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some("kube-elector-testers".into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "ClusterRole".into(),
            name: "cluster-admin".into(),
        },
        subjects: Some(
            [
                TESTERS_GROUP,
                &format!("system:serviceaccounts:{TESTERS_NAMESPACE}"),
            ]
            .map(|group| Subject {
                api_group: Some("rbac.authorization.k8s.io".into()),
                kind: "Group".into(),
                name: group.into(),
                ..Subject::default()
            })
            .into(),
        ),
    };
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .map_err(|e| format!("cannot bind the testers: {e}"))?;
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(TESTERS_NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(admin)
        .create(&PostParams::default(), &namespace)
        .await
        .map_err(|e| format!("cannot create {TESTERS_NAMESPACE}: {e}"))?;
    let tester = kube::Client::try_from(configs[TESTERS[0]].clone()).map_err(|e| e.to_string())?;
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> = Api::namespaced(tester, "default");
    let started = Instant::now();
    loop {
        match leases.list(&Default::default()).await {
            Ok(_) => return Ok(()),
            Err(e) if started.elapsed() > Duration::from_secs(20) => {
                return Err(format!(
                    "the testers' binding is not in force after 20 s: {e}"
                ));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Runs `future` on `runtime` and waits for its output on this thread.
fn on<F>(runtime: &tokio::runtime::Runtime, future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    runtime.spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv().expect("the fixture's runtime ran the task")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A `kube::Config` from kubeconfig text, as a user's program loads its
/// kubeconfig (`Config::from_custom_kubeconfig`).
async fn kube_config_from(text: &str) -> Result<kube::Config, String> {
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| format!("kubeconfig: {e}"))?;
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| format!("kubeconfig: {e}"))
}

fn kubeconfig_text(url: &str, ca: &Path, user: &str, token: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: kube-elector-test
  cluster:
    server: {url}
    certificate-authority: {ca}
users:
- name: {user}
  user:
    token: {token}
contexts:
- name: {user}
  context:
    cluster: kube-elector-test
    user: {user}
    namespace: default
current-context: {user}
",
        ca = ca.display()
    )
}

/// The CA, the serving certificate for `IP:127.0.0.1` and `localhost`, and the
/// ServiceAccount signing key, all ECDSA P-256, with the `openssl` command.
fn make_certificates(dir: &Path) -> Result<(), String> {
    fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n\
         basicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature\n\
         extendedKeyUsage=serverAuth\n",
    )
    .map_err(|e| format!("cannot write server.ext: {e}"))?;
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    let steps = [
        format!("req -x509 {ec} -keyout ca.key -out ca.crt -days 7 -subj /CN=kube-elector-test-ca"),
        format!("req {ec} -keyout server.key -out server.csr -subj /CN=kube-apiserver"),
        "x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt \
         -days 7 -extfile server.ext"
            .to_owned(),
        "ecparam -name prime256v1 -genkey -noout -out sa.key".to_owned(),
        "ec -in sa.key -pubout -out sa.pub".to_owned(),
    ];
    for args in &steps {
        let out = Command::new("openssl")
            .args(args.split_whitespace())
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                format!("cannot run openssl (install it: apt-get install openssl): {e}")
            })?;
        if !out.status.success() {
            return Err(format!(
                "openssl {args}: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(())
}

/// `tokens.csv` for `--token-auth-file`: a random token per identity;
/// returns them.
fn write_tokens(dir: &Path) -> Result<Vec<(String, String)>, String> {
    let mut random = [0u8; 16];
    let mut urandom = fs::File::open("/dev/urandom").map_err(|e| format!("/dev/urandom: {e}"))?;
    let mut tokens = Vec::new();
    let mut csv = String::new();
    for (identity, group) in std::iter::once((ADMIN, "system:masters"))
        .chain(TESTERS.iter().map(|t| (*t, TESTERS_GROUP)))
    {
        std::io::Read::read_exact(&mut urandom, &mut random)
            .map_err(|e| format!("/dev/urandom: {e}"))?;
        let token: String = random.iter().map(|b| format!("{b:02x}")).collect();
        csv.push_str(&format!("{token},{identity},uid-{identity},\"{group}\"\n"));
        tokens.push((identity.to_owned(), token));
    }
    fs::write(dir.join("tokens.csv"), csv).map_err(|e| format!("cannot write tokens.csv: {e}"))?;
    Ok(tokens)
}

/// Starts the server `name` (`etcd`, `kube-apiserver`) from `bin` with
/// `args`, its output appended to `dir/<name>.log`, its process id in
/// `dir/<name>.pid` (for the watchdog).
fn spawn_server(name: &str, bin: &Path, args: &[String], dir: &Path) -> Result<Child, String> {
    let log = dir.join(format!("{name}.log"));
    let file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
    let file2 = file
        .try_clone()
        .map_err(|e| format!("cannot share a log file: {e}"))?;
    let child = Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(file2)
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    write_pid(dir, name, child.id());
    Ok(child)
}

/// `dir/<name>.pid`, for the watchdog.
fn write_pid(dir: &Path, name: &str, pid: u32) {
    let _ = fs::write(dir.join(format!("{name}.pid")), format!("{pid}\n"));
}

/// A shell that waits for its stdin to close (this process ended, or dropped
/// the server), then kills the processes of `dir/*.pid` and removes `dir`.
fn spawn_watchdog(dir: &Path) -> Option<(Child, ChildStdin)> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(
            "cat >/dev/null; kill -9 $(cat \"$DIR\"/*.pid) 2>/dev/null; sleep 0.2; rm -rf \"$DIR\"",
        )
        .env("DIR", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let stdin = child.stdin.take()?;
    Some((child, stdin))
}

fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The version the fixture looks for is the one go.mod pins.
    #[test]
    fn the_version_is_the_one_go_mod_pins() {
        let go_mod =
            fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../k8s-server/go.mod"))
                .expect("testing/k8s-server/go.mod");
        let pinned = go_mod
            .lines()
            .map(str::split_whitespace)
            .find_map(|mut w| (w.next() == Some("k8s.io/kubernetes")).then(|| w.next()))
            .flatten();
        assert_eq!(pinned, Some(K8S_VERSION));
    }

    #[test]
    fn paths_of_collections() {
        assert_eq!(
            collection_path(Resource::Lease, "ns"),
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases"
        );
        assert_eq!(
            collection_path(Resource::ConfigMap, "ns"),
            "/api/v1/namespaces/ns/configmaps"
        );
        assert_eq!(collection_path(Resource::Node, "ns"), "/api/v1/nodes");
    }

    /// The fixture as the suites rely on it: TLS with its CA, the admin, a
    /// tester through RBAC, a ServiceAccount with a token the server issued
    /// and no permission, a Pod-bound token naming its Pod, an unknown token
    /// refused, LeaseCandidate served,
    /// kubeconfigs that kube loads; and everything gone after drop.
    #[test]
    #[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
    fn the_server_starts_and_authenticates_as_a_cluster_does() {
        let server = ApiServer::start().expect("kube-apiserver");
        eprintln!("started in {:?}", server.startup_time());
        let ns = server.namespace();
        let sa = server.service_account_config(&ns, "elector");
        let pod = server.pod_config(&ns, "app", "app-0");
        let mut unknown = server.kube_config("a");
        unknown.auth_info.token = Some("not-a-token".to_owned().into());
        let admin = server.kube_config(ADMIN);
        let tester = server.kube_config("node-a");
        let anyone = server.kube_config("someone-else");
        let dir = server.dir.clone();
        let version = server.block_on(async move {
            let client = |c: kube::Config| kube::Client::try_from(c).expect("client");
            let lease = k8s_openapi::api::coordination::v1::Lease {
                metadata: ObjectMeta {
                    name: Some("l".into()),
                    ..ObjectMeta::default()
                },
                ..Default::default()
            };
            let leases =
                |c| Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(client(c), &ns);
            leases(tester.clone())
                .create(&PostParams::default(), &lease)
                .await
                .expect("a tester creates a Lease");
            let mut other = lease.clone();
            other.metadata.name = Some("m".into());
            leases(anyone)
                .create(&PostParams::default(), &other)
                .await
                .expect("any identity (a ServiceAccount bound to cluster-admin) creates one");
            match leases(sa).get("l").await {
                Err(kube::Error::Api(s)) => {
                    assert_eq!(s.code, 403, "{s:?}");
                    assert!(
                        s.message.contains("system:serviceaccount:"),
                        "{}",
                        s.message
                    );
                }
                other => panic!("a ServiceAccount without a Role is refused: {other:?}"),
            }
            match leases(unknown).get("l").await {
                Err(kube::Error::Api(s)) => assert_eq!(s.code, 401, "{s:?}"),
                other => panic!("an unknown token is refused: {other:?}"),
            }
            // A Pod-bound token names its Pod, as the fencing's writer check reads it.
            let review = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
                .header("content-type", "application/json")
                .body(
                    br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#
                        .to_vec(),
                )
                .expect("a request");
            let me: serde_json::Value = client(pod).request(review).await.expect("whoami");
            let user = &me["status"]["userInfo"];
            assert_eq!(user["username"], format!("system:serviceaccount:{ns}:app"));
            assert_eq!(
                user["extra"]["authentication.kubernetes.io/pod-name"],
                serde_json::json!(["app-0"]),
                "{me}"
            );
            let candidates = get_json(
                &client(admin.clone()),
                &format!("/apis/coordination.k8s.io/v1beta1/namespaces/{ns}/leasecandidates"),
            )
            .await
            .expect("LeaseCandidates are served");
            assert_eq!(candidates.expect("a list")["kind"], "LeaseCandidateList");
            client(admin)
                .apiserver_version()
                .await
                .expect("version")
                .git_version
        });
        assert_eq!(version, K8S_VERSION);
        assert!(
            server
                .object(Resource::Lease, &server.namespace(), "l")
                .is_none()
        );
        let pids = [server.pid(), server.etcd_pid()];
        drop(server);
        assert!(!dir.exists(), "the directory is removed");
        for pid in pids {
            assert!(
                !Path::new(&format!("/proc/{pid}")).exists(),
                "{pid} is gone"
            );
        }
    }

    /// Without the binaries, the error names the build script.
    #[test]
    fn the_missing_binary_error_names_the_build_script() {
        let e = ApiServerError::Missing {
            binary: PathBuf::from("/nowhere/kube-apiserver"),
        };
        assert!(format!("{e:?}").contains(BUILD_SCRIPT), "{e:?}");
    }
}
