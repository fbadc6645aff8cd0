//! A throwaway etcd for tests (feature `testing`): one member on 127.0.0.1,
//! free ports, a temporary data directory, killed and removed on drop.
//!
//! It needs the `etcd` binary (Debian's `etcd-server`; the project's
//! `.ci/install` installs it), found on `PATH` or named by `ETCD_BIN`. Without
//! it [`EtcdServer::start`] fails with [`TestingError::Missing`], whose message
//! says how to install it: a test that needs etcd fails, it never passes
//! silently. This crate's own such tests are `#[ignore]`d with that reason, so
//! that the workspace's test command passes on a machine with only the Rust
//! toolchain; `cargo test -p lock-etcd -- --ignored` runs them, as CI does.
//!
//! Besides locks on it ([`EtcdServer::lock`]), the server offers what tests do
//! to etcd from outside: stop it ([`EtcdServer::pause`], [`EtcdServer::kill`])
//! and start it again on the same data ([`EtcdServer::resume`],
//! [`EtcdServer::restart`]), write or delete a key as another program would,
//! compact the history, and read a key's history revision by revision
//! ([`EtcdServer::history`]).
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use election_core::Lock;
//! let etcd = lock_etcd::testing::EtcdServer::start().await?;
//! let lock = etcd.lock("/elections/test");
//! assert!(lock.get().await.is_err()); // NotFound: nobody created it
//! # Ok(())
//! # }
//! ```

use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_compat::Compat;
use election_core::{LockError, LockRecord};
use rustix::process::{Pid, Signal};
use serde_json::json;

use crate::client::{Http, Kind, b64, unb64};
use crate::wire::{Header, RangeResponse};
use crate::{EtcdLock, record};

/// How often the throwaway etcd sends watch progress notifications
/// (`--experimental-watch-progress-notify-interval`), so that a silent watch is
/// noticed within a second or two in tests.
pub const PROGRESS_NOTIFY_INTERVAL: Duration = Duration::from_millis(500);

/// How long [`EtcdServer::start`] and [`EtcdServer::restart`] wait for etcd to
/// answer.
pub const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// Why the throwaway etcd could not be had. Its `Debug` form is its message, so
/// that a test's `.expect(…)` prints what to do, not a variant's name.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum TestingError {
    /// No `etcd` binary.
    #[error(
        "etcd is not installed: no `etcd` on PATH (nor in ETCD_BIN). lock-etcd's tests need a real etcd: \
         run `.ci/install` as root (it installs Debian's etcd-server), or `apt-get install etcd-server`"
    )]
    Missing,
    /// The process or its directory could not be set up.
    #[error("cannot start etcd: {0}")]
    Start(String),
    /// etcd exited, or did not answer in time; with the end of its log.
    #[error("etcd did not become ready: {reason}\n--- etcd log (end) ---\n{log}")]
    NotReady {
        /// What happened.
        reason: String,
        /// The end of etcd's log.
        log: String,
    },
}

impl std::fmt::Debug for TestingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

/// A running single-member etcd on 127.0.0.1, killed and its data removed on drop.
#[derive(Debug)]
pub struct EtcdServer {
    binary: PathBuf,
    /// The temporary directory: `data/` and `etcd.log` inside.
    root: PathBuf,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
    http: Http,
}

/// One write to a key, as [`EtcdServer::history`] reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revision {
    /// The store revision of the write.
    pub revision: i64,
    /// The record written, or `None` for a deletion.
    pub record: Option<LockRecord>,
}

impl EtcdServer {
    /// Starts a fresh etcd and waits until it answers.
    pub async fn start() -> Result<EtcdServer, TestingError> {
        let binary = find_binary().ok_or(TestingError::Missing)?;
        let mut last = None;
        // A free port found by binding can be taken by another test before etcd
        // binds it: try again with new ports.
        for _ in 0..3 {
            let port =
                || free_port().map_err(|e| TestingError::Start(format!("no free port: {e}")));
            let (client_port, peer_port) = (port()?, port()?);
            let root = temp_dir("lock-etcd").map_err(|e| TestingError::Start(e.to_string()))?;
            let base = format!("http://127.0.0.1:{client_port}");
            let mut server = EtcdServer {
                binary: binary.clone(),
                root,
                client_port,
                peer_port,
                child: None,
                http: Http::new(base, Duration::from_secs(1)),
            };
            match server.spawn_and_wait().await {
                Ok(()) => return Ok(server),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| TestingError::Start("no attempt made".into())))
    }

    /// The client URL, `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// A lock on `key` of this etcd, told the server's progress-notification
    /// interval.
    pub fn lock(&self, key: &str) -> EtcdLock {
        EtcdLock::builder(self.endpoint(), key)
            .progress_notify_interval(PROGRESS_NOTIFY_INTERVAL)
            .build()
            .unwrap_or_else(|e| unreachable!("a valid endpoint and key: {e}"))
    }

    /// The process id of the running etcd, if it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Stops etcd with SIGSTOP: connections stay open, nothing answers (a hung
    /// server, a black hole).
    pub fn pause(&self) -> Result<(), TestingError> {
        self.signal(Signal::STOP)
    }

    /// Continues a paused etcd (SIGCONT).
    pub fn resume(&self) -> Result<(), TestingError> {
        self.signal(Signal::CONT)
    }

    fn signal(&self, signal: Signal) -> Result<(), TestingError> {
        let child = self
            .child
            .as_ref()
            .ok_or_else(|| TestingError::Start("etcd is not running".into()))?;
        rustix::process::kill_process(Pid::from_child(child), signal)
            .map_err(|e| TestingError::Start(format!("cannot signal etcd: {e}")))
    }

    /// Kills etcd (SIGKILL) and waits for it; its data stays for
    /// [`EtcdServer::restart`].
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same data and ports (after [`EtcdServer::kill`];
    /// kills it first if it runs) and waits until it answers.
    pub async fn restart(&mut self) -> Result<(), TestingError> {
        self.kill();
        self.spawn_and_wait().await
    }

    /// The store's current revision.
    pub async fn revision(&self) -> Result<i64, LockError> {
        let r: RangeResponse = self
            .call("/v3/kv/range", json!({ "key": b64(b"\0") }))
            .await?;
        Ok(r.header.revision)
    }

    /// Writes `value` to `key` unconditionally, as another program would;
    /// returns the revision of the write.
    pub async fn put(&self, key: &str, value: &[u8]) -> Result<i64, LockError> {
        #[derive(serde::Deserialize)]
        struct Put {
            #[serde(default)]
            header: Header,
        }
        let r: Put = self
            .call(
                "/v3/kv/put",
                json!({ "key": b64(key.as_bytes()), "value": b64(value) }),
            )
            .await?;
        Ok(r.header.revision)
    }

    /// The value of `key` now (`None`: absent), as `etcdctl get` reads it.
    pub async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, LockError> {
        let mut r: RangeResponse = self
            .call("/v3/kv/range", json!({ "key": b64(key.as_bytes()) }))
            .await?;
        match r.kvs.pop() {
            None => Ok(None),
            Some(kv) => unb64(kv.value.as_deref().unwrap_or(""))
                .map(Some)
                .map_err(|e| LockError::Invalid {
                    message: format!("etcd key {key:?}: a value that is not base64 ({e})"),
                }),
        }
    }

    /// Deletes `key`, as `etcdctl del` would; returns the store's revision after.
    pub async fn delete(&self, key: &str) -> Result<i64, LockError> {
        #[derive(serde::Deserialize)]
        struct Deleted {
            #[serde(default)]
            header: Header,
        }
        let r: Deleted = self
            .call("/v3/kv/deleterange", json!({ "key": b64(key.as_bytes()) }))
            .await?;
        Ok(r.header.revision)
    }

    /// Compacts the history up to `revision` (physically: the call returns once
    /// the old revisions are gone), as `etcdctl compact --physical` would.
    pub async fn compact(&self, revision: i64) -> Result<(), LockError> {
        let _: serde_json::Value = self
            .call(
                "/v3/kv/compaction",
                json!({ "revision": revision.to_string(), "physical": true }),
            )
            .await?;
        Ok(())
    }

    /// Every write to `key` from revision `from` (inclusive, and not compacted)
    /// to now, in order: etcd's own history of the lock. Values that are not
    /// records read as [`record::MALFORMED_HOLDER`]'s.
    pub async fn history(&self, key: &str, from: i64) -> Result<Vec<Revision>, LockError> {
        let now = self.revision().await?;
        let mut out: Vec<Revision> = Vec::new();
        let mut last_mod = 0;
        for at in from.max(1)..=now {
            let r: RangeResponse = self
                .call(
                    "/v3/kv/range",
                    json!({ "key": b64(key.as_bytes()), "revision": at.to_string() }),
                )
                .await?;
            match r.kvs.first() {
                Some(kv) if kv.mod_revision != last_mod => {
                    last_mod = kv.mod_revision;
                    let value = kv
                        .value
                        .as_deref()
                        .map(unb64)
                        .transpose()
                        .map_err(|e| LockError::Invalid {
                            message: format!("not base64: {e}"),
                        })?
                        .unwrap_or_default();
                    out.push(Revision {
                        revision: kv.mod_revision,
                        record: Some(record::record_or_malformed(
                            &format!("etcd key {key}"),
                            &value,
                        )),
                    });
                }
                Some(_) => {}
                None if last_mod != 0 => {
                    last_mod = 0;
                    out.push(Revision {
                        revision: at,
                        record: None,
                    });
                }
                None => {}
            }
        }
        Ok(out)
    }

    async fn call<T: for<'de> serde::Deserialize<'de>>(
        &self,
        path: &str,
        body: serde_json::Value,
    ) -> Result<T, LockError> {
        self.http
            .call(
                path,
                body.to_string(),
                Kind::Write,
                Some(Duration::from_secs(5)),
            )
            .await
    }

    fn log_path(&self) -> PathBuf {
        self.root.join("etcd.log")
    }

    async fn spawn_and_wait(&mut self) -> Result<(), TestingError> {
        self.spawn()?;
        self.wait_ready().await
    }

    fn spawn(&mut self) -> Result<(), TestingError> {
        let log = fs::File::create(self.log_path())
            .map_err(|e| TestingError::Start(format!("cannot create the log file: {e}")))?;
        let log2 = log
            .try_clone()
            .map_err(|e| TestingError::Start(format!("cannot share the log file: {e}")))?;
        let client = format!("http://127.0.0.1:{}", self.client_port);
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let child = Command::new(&self.binary)
            .arg("--name=test")
            .arg(format!("--data-dir={}", self.root.join("data").display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=test={peer}"))
            .arg(format!(
                "--experimental-watch-progress-notify-interval={}ms",
                PROGRESS_NOTIFY_INTERVAL.as_millis()
            ))
            .arg("--logger=zap")
            .arg("--log-outputs=stderr")
            .arg("--log-level=warn")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| {
                TestingError::Start(format!("cannot run {}: {e}", self.binary.display()))
            })?;
        self.child = Some(child);
        Ok(())
    }

    async fn wait_ready(&mut self) -> Result<(), TestingError> {
        let started = Instant::now();
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(TestingError::NotReady {
                    reason: format!("etcd exited: {status}"),
                    log: log_tail(&self.log_path()),
                });
            }
            let answer = self
                .http
                .call::<RangeResponse>(
                    "/v3/kv/range",
                    json!({ "key": b64(b"\0") }).to_string(),
                    Kind::Read,
                    Some(Duration::from_secs(1)),
                )
                .await;
            if answer.is_ok() {
                return Ok(());
            }
            if started.elapsed() > READY_TIMEOUT {
                self.kill();
                return Err(TestingError::NotReady {
                    reason: format!("no answer within {READY_TIMEOUT:?}: {answer:?}"),
                    log: log_tail(&self.log_path()),
                });
            }
            Compat::new(tokio::time::sleep(Duration::from_millis(50))).await;
        }
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// `ETCD_BIN`, or `etcd` on `PATH`.
fn find_binary() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ETCD_BIN").map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join("etcd"))
        .find(|p| p.is_file())
}

/// A free TCP port on 127.0.0.1: bound, then let go, so another process may
/// take it before the caller binds it (retry with a new one then). Shared with
/// the workspace's other test servers (`test_kit::apiserver`).
///
/// # Errors
///
/// When no port can be bound.
pub fn free_port() -> std::io::Result<u16> {
    TcpListener::bind("127.0.0.1:0")?
        .local_addr()
        .map(|a| a.port())
}

/// A new empty directory `<prefix>-<pid>-<n>-<nanos>` on a RAM disk where
/// there is one (`/dev/shm`: etcd fsyncs every write), else in the temporary
/// directory; for a test server's data. Shared with the workspace's other test
/// servers (`test_kit::apiserver`).
///
/// # Errors
///
/// When it cannot be created; the error names it.
pub fn temp_dir(prefix: &str) -> std::io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = base.join(format!(
        "{prefix}-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    fs::create_dir_all(&dir).map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display()))
    })?;
    Ok(dir)
}

/// The last 40 lines of etcd's log.
fn log_tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}
