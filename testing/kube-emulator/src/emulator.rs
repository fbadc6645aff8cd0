//! The in-process handle: start, inspect, inject faults, stop.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::coordinator::Coordinator;
use crate::faults::{Faults, RequestCounts, WriteRecord, lock};
use crate::resource::Resource;
use crate::server::{Shared, accept_loop, stopped};

/// Why the emulator could not do what was asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Binding the listening socket failed (port taken, no permission).
    /// Pick another port, or port 0 for any free one.
    #[error("failed to listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// Writing the kubeconfig file failed.
    #[error("failed to write the kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The path asked for.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// [`Emulator::start`] was called outside a tokio runtime. Call it from
    /// one, or use [`Emulator::start_blocking`], which brings its own.
    #[error(
        "failed to start: no tokio runtime here; use Emulator::start_blocking from other runtimes"
    )]
    NoRuntime,
    /// The emulator's own thread or runtime could not be started.
    #[error("failed to start the emulator thread: {0}")]
    Thread(#[source] std::io::Error),
    /// Building a kube client failed.
    #[cfg(feature = "client")]
    #[error("failed to build a kube client: {0}")]
    Client(#[source] kube::Error),
}

/// Options for [`Emulator::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct EmulatorBuilder {
    port: u16,
    history_limit: usize,
    write_history_limit: usize,
    bookmark_interval: Duration,
    default_watch_timeout: Duration,
    coordinator: Option<Coordinator>,
}

impl Default for EmulatorBuilder {
    fn default() -> Self {
        EmulatorBuilder {
            port: 0,
            history_limit: 1000,
            write_history_limit: crate::faults::DEFAULT_WRITE_HISTORY,
            bookmark_interval: Duration::from_secs(1),
            default_watch_timeout: Duration::from_secs(1800),
            coordinator: None,
        }
    }
}

impl EmulatorBuilder {
    /// Port on 127.0.0.1 (default 0: any free port).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// How many changes the watch history keeps (default 1000). A watch from a
    /// version older than the oldest kept change gets 410 Expired.
    pub fn history_limit(mut self, changes: usize) -> Self {
        self.history_limit = changes.max(1);
        self
    }

    /// How many write records [`Emulator::write_history`] keeps (default
    /// 100 000; the oldest go first).
    pub fn write_history_limit(mut self, records: usize) -> Self {
        self.write_history_limit = records.max(1);
        self
    }

    /// How often a watch with `allowWatchBookmarks=true` gets a BOOKMARK
    /// (default 1 s; the API server sends one about every minute).
    pub fn bookmark_interval(mut self, every: Duration) -> Self {
        self.bookmark_interval = every.max(Duration::from_millis(1));
        self
    }

    /// How long a watch without `timeoutSeconds` stays open (default 30 min).
    pub fn default_watch_timeout(mut self, timeout: Duration) -> Self {
        self.default_watch_timeout = timeout;
        self
    }

    /// Runs coordinated leader election with these timings (default: off):
    /// the emulator elects the holder of every Lease that LeaseCandidates
    /// name, as the API server's leader-election controller does. See
    /// [`Coordinator`].
    pub fn coordinator(mut self, timings: Coordinator) -> Self {
        self.coordinator = Some(timings);
        self
    }

    /// Binds 127.0.0.1 and starts serving on the current tokio runtime (and,
    /// when asked for, the coordinator).
    pub async fn start(self) -> Result<Emulator, Error> {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let shared = Arc::new(Shared::new(
            self.write_history_limit,
            self.history_limit,
            self.bookmark_interval,
            self.default_watch_timeout,
        ));
        let wanted = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let listener = TcpListener::bind(wanted)
            .await
            .map_err(|source| Error::Bind {
                addr: wanted,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Bind {
            addr: wanted,
            source,
        })?;
        *lock(&shared.addr) = Some(addr);
        if let Some(timings) = self.coordinator {
            lock(&shared.users).insert(
                Coordinator::CLIENT.to_owned(),
                crate::UserInfo::named(Coordinator::USER),
            );
            runtime.spawn(crate::coordinator::controller::run(shared.clone(), timings));
        }
        let task = runtime.spawn(accept_loop(listener, shared.clone()));
        Ok(Emulator {
            addr,
            shared,
            accept: Mutex::new(Some(task)),
            runtime,
        })
    }

    /// Starts the emulator on a thread of its own with its own tokio
    /// runtime, and returns once it listens. Callable from any runtime (smol,
    /// async-std) or none; the thread ends when the `Emulator` is dropped.
    pub fn start_blocking(self) -> Result<Emulator, Error> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("kube-emulator".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = tx.send(Err(Error::Thread(e)));
                        return;
                    }
                };
                match rt.block_on(self.start()) {
                    Ok(emu) => {
                        let mut shutdown = emu.shared.shutdown.subscribe();
                        if tx.send(Ok(emu)).is_ok() {
                            rt.block_on(stopped(&mut shutdown));
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                    }
                }
            })
            .map_err(Error::Thread)?;
        rx.recv().map_err(|_| {
            Error::Thread(std::io::Error::other(
                "the emulator thread ended before it started",
            ))
        })?
    }
}

/// A running Kubernetes API emulator on 127.0.0.1.
///
/// Dropping it stops the server: open watches end and hung requests are released.
#[derive(Debug)]
pub struct Emulator {
    /// Where it listens (`127.0.0.1:<port>`).
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Mutex<Option<JoinHandle<()>>>,
    runtime: tokio::runtime::Handle,
}

impl Emulator {
    /// Starts an emulator on a free port of 127.0.0.1 with default options.
    pub async fn start() -> Result<Emulator, Error> {
        EmulatorBuilder::default().start().await
    }

    /// Starts an emulator with default options on a thread and runtime of its
    /// own (see [`EmulatorBuilder::start_blocking`]).
    pub fn start_blocking() -> Result<Emulator, Error> {
        EmulatorBuilder::default().start_blocking()
    }

    /// Options: port, watch history length, bookmark interval, coordinated
    /// leader election.
    pub fn builder() -> EmulatorBuilder {
        EmulatorBuilder::default()
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Fault rules for one client, told apart by its bearer token (else its user agent).
    pub fn faults(&self, client: &str) -> Faults {
        Faults::new(self.shared.control.clone(), Some(client.to_owned()))
    }

    /// Fault rules that apply to every client.
    pub fn faults_for_all(&self) -> Faults {
        Faults::new(self.shared.control.clone(), None)
    }

    /// Requests seen so far, per client, verb and resource.
    pub fn request_counts(&self) -> RequestCounts {
        lock(&self.shared.control).counts()
    }

    /// Forgets the request counts.
    pub fn reset_request_counts(&self) {
        lock(&self.shared.control).reset_counts();
    }

    /// Every write request so far, in order, with server timestamps.
    pub fn write_history(&self) -> Vec<WriteRecord> {
        lock(&self.shared.control).writes()
    }

    /// The writes that changed the store, in the order the server committed
    /// them (by the version each produced, deletions included; the history
    /// itself is in the order the requests were answered, which concurrent
    /// writes may swap).
    pub fn committed_writes(&self) -> Vec<WriteRecord> {
        let mut writes = self.write_history();
        writes.retain(|w| w.committed);
        writes.sort_by_key(WriteRecord::version);
        writes
    }

    /// The current resourceVersion of the whole store.
    pub fn resource_version(&self) -> u64 {
        lock(&self.shared.store).resource_version()
    }

    /// Requests with `token` are made as `user` (`request.userInfo` of admission
    /// policies); any other token is a user of its own name with no extra.
    pub fn set_user(&self, token: &str, user: crate::UserInfo) {
        lock(&self.shared.users).insert(token.to_owned(), user);
    }

    /// The stored object, as a client would get it.
    pub fn object(&self, resource: Resource, namespace: &str, name: &str) -> Option<Value> {
        let ns = if resource.namespaced() { namespace } else { "" };
        lock(&self.shared.store)
            .get_object(resource, ns, name)
            .cloned()
    }

    /// The stored objects of `resource` in `namespace`, as a list would give them.
    pub fn objects(&self, resource: Resource, namespace: &str) -> Vec<Value> {
        let ns = resource.namespaced().then_some(namespace);
        lock(&self.shared.store).objects(resource, ns)
    }

    /// Drops the whole watch history, as an etcd compaction does: a watch
    /// resuming from any version before now gets 410 Expired.
    pub fn compact(&self) {
        lock(&self.shared.store).compact();
    }

    /// Closes every open connection (watches included) without an answer.
    pub fn drop_connections(&self) {
        self.shared.conn_epoch.send_modify(|e| *e += 1);
    }

    /// Stops listening and closes every open connection: from its return on, new
    /// requests get "connection refused" until [`Emulator::resume_listening`].
    /// Awaits the accept task's end (the listener is closed when its future is
    /// dropped, on the emulator's runtime); callable from any runtime.
    pub async fn stop_listening(&self) {
        let task = lock(&self.accept).take();
        self.drop_connections();
        if let Some(task) = task {
            task.abort();
            // Resolves (cancelled) only after the aborted future, and with it the
            // listener, has been dropped.
            let _ = task.await;
        }
    }

    /// Listens again on the same address after [`Emulator::stop_listening`].
    pub async fn resume_listening(&self) -> Result<(), Error> {
        if lock(&self.accept).is_some() {
            return Ok(());
        }
        let bind_error = |source| Error::Bind {
            addr: self.addr,
            source,
        };
        let std_listener = std::net::TcpListener::bind(self.addr).map_err(bind_error)?;
        std_listener.set_nonblocking(true).map_err(bind_error)?;
        let listener = {
            let _in_runtime = self.runtime.enter();
            TcpListener::from_std(std_listener).map_err(bind_error)?
        };
        let task = self
            .runtime
            .spawn(accept_loop(listener, self.shared.clone()));
        *lock(&self.accept) = Some(task);
        Ok(())
    }

    /// A kubeconfig document (YAML) whose user carries `token`.
    pub fn kubeconfig_yaml(&self, token: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kube-emulator\n  cluster:\n    server: {url}\nusers:\n- name: {token:?}\n  user:\n    token: {token:?}\ncontexts:\n- name: kube-emulator\n  context:\n    cluster: kube-emulator\n    user: {token:?}\n    namespace: default\ncurrent-context: kube-emulator\n",
            url = self.url()
        )
    }

    /// Writes [`Emulator::kubeconfig_yaml`] to `path`.
    pub fn write_kubeconfig(&self, path: &std::path::Path, token: &str) -> Result<(), Error> {
        std::fs::write(path, self.kubeconfig_yaml(token)).map_err(|source| Error::Kubeconfig {
            path: path.to_owned(),
            source,
        })
    }

    /// A `kube::Config` for this emulator whose requests carry `token`.
    ///
    /// kube's default retry of 429/503/504 is turned off so that injected
    /// faults reach the caller; no read timeout is set (set `read_timeout`
    /// to see a hung request fail).
    #[cfg(feature = "client")]
    pub fn kube_config(&self, token: &str) -> kube::Config {
        let uri: hyper::Uri = self
            .url()
            .parse()
            .unwrap_or_else(|_| unreachable!("http://127.0.0.1:<port> is a valid URI"));
        let mut config = kube::Config::new(uri);
        config.default_namespace = "default".to_owned();
        config.default_retry = false;
        if let Ok(value) = hyper::header::HeaderValue::from_str(&format!("Bearer {token}")) {
            config.headers.push((hyper::header::AUTHORIZATION, value));
        }
        config
    }

    /// A `kube::Client` for this emulator whose requests carry `token`.
    #[cfg(feature = "client")]
    pub fn client(&self, token: &str) -> Result<kube::Client, Error> {
        kube::Client::try_from(self.kube_config(token)).map_err(Error::Client)
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.shared.shutdown.send_replace(true);
        if let Some(task) = lock(&self.accept).take() {
            task.abort();
        }
    }
}

/// `kubectl` pointed at the kubeconfig at `kubeconfig` (one that
/// [`Emulator::write_kubeconfig`] or the binary wrote), with its discovery cache
/// beside it and its standard input closed: add the arguments and run it (tokio's
/// `Command` takes it through `From`). For tests that use kubectl as a real
/// client; where kubectl is not installed, running it fails with
/// [`std::io::ErrorKind::NotFound`].
pub fn kubectl(kubeconfig: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new("kubectl");
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(kubeconfig.with_extension("kubectl-cache"))
        .stdin(std::process::Stdio::null());
    cmd
}

/// Runs [`kubectl`] with `args`, feeding it `stdin` (none: its input closed), and
/// waits for it: its output, whatever its exit status; an error only where kubectl
/// cannot be run at all ([`std::io::ErrorKind::NotFound`]: not installed).
pub fn kubectl_output(
    kubeconfig: &std::path::Path,
    args: &[&str],
    stdin: Option<&str>,
) -> std::io::Result<std::process::Output> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = kubectl(kubeconfig)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input.as_bytes())?;
    }
    child.wait_with_output()
}
