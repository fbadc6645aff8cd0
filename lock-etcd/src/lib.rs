//! A leader-election [`Lock`] on one etcd v3 key: a custom lock backend written
//! only against the public `Lock` trait of `election-core`, and the worked example
//! of the guide's "Writing your own lock" (`docs/guide/custom-locks.md`).
//!
//! - **The record** is the key's value: client-go's `LeaderElectionRecord` as JSON,
//!   with client-go's field names (`holderIdentity`, `leaseDurationSeconds`,
//!   `acquireTime`, `renewTime`, `leaderTransitions`), plus this library's
//!   priority and handover fields (see [`record`]). A value that is not a record
//!   reads as held by an unknown holder (docs/faults.md R6), never a panic.
//! - **The version** is the key's `mod_revision`, a decimal number that grows with
//!   every write to the store, deletions and re-creations included (as
//!   [`Version`] asks of decimal versions).
//! - **Create** is a transaction `create_revision == 0 ? put : range`;
//!   **update** is `mod_revision == expected ? put : range`: compare-and-swap, never
//!   a blind write. A failed compare answers [`LockError::AlreadyExists`],
//!   [`LockError::Conflict`] or [`LockError::NotFound`] from the range read in the
//!   same transaction. Every put takes a new revision, so an identical rewrite is
//!   seen as a renewal (docs/faults.md R10).
//! - **The watch** ([`Lock::watch`]) watches the key from a revision, with
//!   progress notifications: a watch that hears neither a change nor a
//!   notification for twice etcd's notification interval plus the request timeout
//!   ends, so a black-holed connection is noticed (docs/faults.md W1). A revision
//!   that etcd compacted away is etcd's form of Kubernetes' `410 Gone`: the stream
//!   ends with an error and the driver watches afresh, with a read first
//!   (docs/faults.md W2).
//! - **Timeouts** come from the election's [`Config`]
//!   through [`Lock::configure`], as for the Kubernetes locks: the opening of a
//!   watch (its first read and its request) is bounded by `request_timeout`; the
//!   calls of [`Lock`] are the driver's to bound, once.
//! - **Failures** are classified for the elector from etcd's gRPC status codes: a
//!   write whose answer was lost, or that etcd reports as timed out, has an unknown
//!   outcome ([`LockError::Unknown`]); a refused connection or `no leader` is
//!   transient; an answer that is not etcd's is reported, never trusted.
//!
//! # Why etcd's JSON gateway
//!
//! The lock speaks to etcd's gRPC gateway (`POST /v3/kv/range`, `/v3/kv/txn`,
//! `/v3/watch`, JSON over HTTP/1.1, served by every etcd since 3.4 on its client
//! port) with hyper, the HTTP stack the workspace already builds for the
//! Kubernetes locks' emulator and the sidecar. The alternative, `etcd-client` on
//! tonic, needs `protoc` at build time (Debian's `protobuf-compiler`, one more CI
//! install for every user) and brings a second HTTP/2 and gRPC stack into the
//! dependency tree, for four calls whose JSON forms are stable and small. The
//! price is that the lock speaks plain HTTP to one endpoint: point it at a local
//! member or at an `etcd grpc-proxy`/load balancer; TLS and etcd's own
//! authentication are not supported (yet).
//!
//! An etcd lease attached to the key is not used: the elector's deadline is the
//! safety mechanism (docs/design.md §1), and a key that outlives a crashed holder
//! is taken over after one lease duration like any expired record.
//!
//! # Example
//!
//! ```no_run
//! use election_core::{Config, Lock, LockError};
//! use lock_etcd::EtcdLock;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let lock = EtcdLock::builder("http://127.0.0.1:2379", "/elections/my-controller").build()?;
//! // The driver calls this itself, before its first call.
//! lock.configure(&Config::client_go("node-a"));
//! match lock.get().await {
//!     Ok(observed) => println!("{} holds it at revision {}", observed.record.holder, observed.version),
//!     Err(LockError::NotFound) => println!("nobody created it yet"),
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! With the driver (`election-driver` and a runtime adapter), the lock is used
//! like any other:
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use election_core::Config;
//! use election_driver::Builder;
//!
//! let lock = lock_etcd::EtcdLock::builder("http://127.0.0.1:2379", "/elections/demo").build()?;
//! let handle = Builder::new(lock, Config::client_go("node-a"))
//!     .spawn(adapter_tokio::TokioRuntime::current()?)?;
//! // ... `handle.is_leader()` while working, then:
//! handle.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! The `testing` feature adds the module `testing`: a throwaway etcd on 127.0.0.1 for
//! tests (it needs the `etcd` binary, Debian's `etcd-server`).
//!
//! [`Lock`]: election_core::Lock
//! [`Lock::watch`]: election_core::Lock::watch
//! [`Lock::configure`]: election_core::Lock::configure

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]
// docs.rs labels each feature-gated item with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod client;
pub mod fence;
#[doc(hidden)]
pub mod fuzzing;
pub mod record;
#[cfg(feature = "testing")]
pub mod testing;
mod watch;
mod wire;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use election_core::{
    Config, LeadershipChange, Lock, LockError, LockRecord, LockTask, Observation, Version,
    WallTime, WatchStream,
};
use serde_json::json;

use client::{Http, Kind, b64, unb64};
use wire::{KeyValue, RangeResponse, TxnResponse};

/// The longest line of a watch stream the lock accepts (etcd's own request limit
/// is 1.5 MiB; one watch answer carries a few records at most).
pub(crate) const MAX_LINE: usize = 4 << 20;

/// etcd's default `--experimental-watch-progress-notify-interval`.
pub const DEFAULT_PROGRESS_NOTIFY_INTERVAL: Duration = Duration::from_secs(600);

/// The request timeout until the driver configures the lock: client-go's, for
/// its default 10 s renew deadline.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an [`EtcdLock`] could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The endpoint is not `http://host:port` (TLS is not supported).
    #[error("etcd endpoint {endpoint:?} is not http://host[:port]: {reason}")]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The key is empty.
    #[error("the etcd key must not be empty")]
    EmptyKey,
}

/// Builds an [`EtcdLock`]: [`EtcdLock::builder`].
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until built"]
pub struct EtcdLockBuilder {
    endpoint: String,
    key: String,
    progress_notify_interval: Duration,
}

impl EtcdLockBuilder {
    /// etcd's `--experimental-watch-progress-notify-interval`, as the server was
    /// started with (default [`DEFAULT_PROGRESS_NOTIFY_INTERVAL`], etcd's own):
    /// a watch that hears nothing for twice this plus the request timeout ends.
    pub fn progress_notify_interval(mut self, interval: Duration) -> Self {
        self.progress_notify_interval = interval;
        self
    }

    /// Checks the endpoint and the key, and builds the lock.
    pub fn build(self) -> Result<EtcdLock, BuildError> {
        let base = parse_endpoint(&self.endpoint)?;
        if self.key.is_empty() {
            return Err(BuildError::EmptyKey);
        }
        Ok(EtcdLock {
            inner: Arc::new(Inner {
                http: Http::new(base, DEFAULT_REQUEST_TIMEOUT),
                key_b64: b64(self.key.as_bytes()),
                key: self.key,
                request_timeout: AtomicU64::new(nanos(DEFAULT_REQUEST_TIMEOUT)),
                progress_notify_interval: self.progress_notify_interval,
                identities: Mutex::new(Vec::new()),
                last_write: Mutex::new(None),
            }),
        })
    }
}

/// `http://host[:port]` without a trailing slash, or why not.
fn parse_endpoint(endpoint: &str) -> Result<String, BuildError> {
    let bad = |reason: &str| BuildError::Endpoint {
        endpoint: endpoint.to_owned(),
        reason: reason.to_owned(),
    };
    let uri: http::Uri = endpoint.parse().map_err(|e| bad(&format!("{e}")))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some("https") => return Err(bad("TLS is not supported; use a plain-HTTP endpoint")),
        _ => return Err(bad("the scheme must be http")),
    }
    let authority = uri.authority().ok_or_else(|| bad("no host"))?;
    if authority.host().is_empty() {
        return Err(bad("no host"));
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err(bad("no path or query is allowed"));
    }
    Ok(format!("http://{authority}"))
}

/// A leader-election lock on one etcd key, over etcd's JSON gateway. Cheap to
/// clone: clones share the HTTP connections and the configuration.
///
/// Build one with [`EtcdLock::builder`]; it implements [`Lock`] (see the crate
/// docs for how each method maps to etcd).
#[derive(Clone, Debug)]
pub struct EtcdLock {
    inner: Arc<Inner>,
}

/// What clones of one lock share.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) http: Http,
    /// The key, as given.
    pub(crate) key: String,
    /// The key in base64, as the gateway wants it.
    pub(crate) key_b64: String,
    /// Nanoseconds; set by [`Lock::configure`].
    request_timeout: AtomicU64,
    progress_notify_interval: Duration,
    /// The identities of the elections configured on this lock (one, unless
    /// clones of it serve several elections: then nothing is fenced).
    identities: Mutex<Vec<Arc<str>>>,
    /// The revision of this lock's last successful write and whether it named
    /// this node: what a fenced transaction compares.
    last_write: Mutex<Option<(i64, bool)>>,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl EtcdLock {
    /// A builder for the lock on `key` of the etcd whose client URL is `endpoint`
    /// (`http://host:port`; etcd's default is `http://127.0.0.1:2379`).
    pub fn builder(endpoint: impl Into<String>, key: impl Into<String>) -> EtcdLockBuilder {
        EtcdLockBuilder {
            endpoint: endpoint.into(),
            key: key.into(),
            progress_notify_interval: DEFAULT_PROGRESS_NOTIFY_INTERVAL,
        }
    }

    /// The key the lock lives in.
    pub fn key(&self) -> &str {
        &self.inner.key
    }

    /// The endpoint, as `http://host:port`.
    pub fn endpoint(&self) -> &str {
        self.inner.http.base()
    }

    /// How many HTTP requests this lock (and its clones) sent so far, watches
    /// included: what the benchmark counts.
    pub fn requests(&self) -> u64 {
        self.inner.http.requests()
    }

    /// The bound of the calls the lock makes by itself (a watch's first read and
    /// its opening), as configured (5 s until [`Lock::configure`]). The calls of
    /// [`Lock`] have none of their own: the driver bounds each.
    pub fn request_timeout(&self) -> Duration {
        self.inner.request_timeout()
    }
}

impl Inner {
    /// The revision of this lock's last write, if it named this node.
    pub(crate) fn holding_revision(&self) -> Option<i64> {
        match *self
            .last_write
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some((revision, true)) => Some(revision),
            _ => None,
        }
    }

    /// The identities of the elections configured on this lock.
    pub(crate) fn identities(&self) -> Vec<Arc<str>> {
        self.identities
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Remembers a write of this lock's that stored `record` at `revision`: it
    /// names this node when the lock serves one election and the record names it.
    fn wrote(&self, revision: i64, record: &LockRecord) {
        let names_me = matches!(
            self.identities.lock().unwrap_or_else(PoisonError::into_inner).as_slice(),
            [me] if *record.holder == **me
        );
        *self
            .last_write
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((revision, names_me));
    }

    pub(crate) fn request_timeout(&self) -> Duration {
        Duration::from_nanos(self.request_timeout.load(Ordering::Relaxed))
    }

    /// How long a watch may hear nothing, not even a progress notification.
    pub(crate) fn watch_silence(&self) -> Duration {
        self.progress_notify_interval
            .saturating_mul(2)
            .saturating_add(self.request_timeout())
    }

    /// A linearizable read of the key: the store's revision and the key, if any.
    /// Bounded by `bound` where the lock reads by itself (a watch's first read);
    /// a read of [`Lock::get`] has none (the driver bounds it).
    pub(crate) async fn range(
        &self,
        bound: Option<Duration>,
    ) -> Result<(i64, Option<KeyValue>), LockError> {
        let body = json!({ "key": self.key_b64 }).to_string();
        let mut r: RangeResponse = self
            .http
            .call("/v3/kv/range", body, Kind::Read, bound)
            .await?;
        Ok((r.header.revision, r.kvs.pop()))
    }

    /// The observation a key's value and revision make. A value that is not a
    /// record reads as held by an unknown holder (reported); a revision or a
    /// byte field the gateway should not have sent is an error.
    pub(crate) fn observation(&self, kv: &KeyValue) -> Result<Observation, LockError> {
        if kv.mod_revision <= 0 {
            return Err(LockError::Invalid {
                message: format!(
                    "etcd key {:?}: an answer without a revision ({}), not etcd's",
                    self.key, kv.mod_revision
                ),
            });
        }
        let value = match kv.value.as_deref() {
            None => Vec::new(),
            Some(v) => unb64(v).map_err(|e| LockError::Invalid {
                message: format!(
                    "etcd key {:?}: a value that is not base64 ({e}), not etcd's answer",
                    self.key
                ),
            })?,
        };
        let record = record::record_or_malformed(&format!("etcd key {}", self.key), &value);
        Ok(Observation::new(kv.mod_revision.to_string(), record))
    }

    /// The compare that the lock's key was last written at `revision`.
    pub(crate) fn unchanged_since(&self, revision: i64) -> serde_json::Value {
        json!({
            "target": "MOD",
            "result": "EQUAL",
            "key": self.key_b64,
            "mod_revision": revision.to_string(),
        })
    }

    /// A transaction: `compare ? success : range of the lock's key`. `Ok(Ok(revision))`
    /// when the compare held; `Ok(Err(current))` with the key as it is (or `None`)
    /// when it did not.
    pub(crate) async fn txn(
        &self,
        compare: serde_json::Value,
        success: Vec<serde_json::Value>,
    ) -> Result<Result<i64, Option<KeyValue>>, LockError> {
        let body = json!({
            "compare": [compare],
            "success": success,
            "failure": [{ "request_range": { "key": self.key_b64 } }],
        })
        .to_string();
        let r: TxnResponse = self
            .http
            .call("/v3/kv/txn", body, Kind::Write, None)
            .await?;
        self.txn_outcome(r)
    }

    /// What a transaction's answer says: `Ok(Ok(revision))` when the compare
    /// held, `Ok(Err(current))` with the key as the failure branch read it
    /// (or `None`) when it did not; an answer without a revision is not etcd's.
    pub(crate) fn txn_outcome(
        &self,
        mut r: TxnResponse,
    ) -> Result<Result<i64, Option<KeyValue>>, LockError> {
        if !r.succeeded {
            let current = r
                .responses
                .pop()
                .and_then(|op| op.response_range)
                .and_then(|mut range| range.kvs.pop());
            return Ok(Err(current));
        }
        if r.header.revision <= 0 {
            return Err(LockError::unknown(format!(
                "etcd key {:?}: a transaction answer without a revision, not etcd's; the write may have happened",
                self.key
            )));
        }
        Ok(Ok(r.header.revision))
    }

    /// [`Inner::txn`] that puts `record` in the lock's key: the observation of
    /// the write when the compare held.
    async fn put_if(
        &self,
        compare: serde_json::Value,
        record: &LockRecord,
    ) -> Result<Result<Observation, Option<KeyValue>>, LockError> {
        let value = record::encode_record(record, WallTime::now());
        let put = json!({ "request_put": { "key": self.key_b64, "value": b64(value.as_bytes()) } });
        Ok(self.txn(compare, vec![put]).await?.map(|revision| {
            // What a read returns: the record as stored, stamps resolved.
            let stored =
                record::record_or_malformed(&format!("etcd key {}", self.key), value.as_bytes());
            self.wrote(revision, &stored);
            Observation::new(revision.to_string(), stored)
        }))
    }
}

impl Lock for EtcdLock {
    async fn get(&self) -> Result<Observation, LockError> {
        match self.inner.range(None).await? {
            (_, Some(kv)) => self.inner.observation(&kv),
            (_, None) => Err(LockError::NotFound),
        }
    }

    async fn create(&self, record: &LockRecord) -> Result<Observation, LockError> {
        let compare = json!({
            "target": "CREATE",
            "result": "EQUAL",
            "key": self.inner.key_b64,
            "create_revision": "0",
        });
        match self.inner.put_if(compare, record).await? {
            Ok(stored) => Ok(stored),
            Err(_) => Err(LockError::AlreadyExists),
        }
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        // Only a revision this lock handed out can match. A comparison with 0
        // would hold for an absent key and create it: never.
        let revision = match expected.as_str().parse::<i64>() {
            Ok(r) if r > 0 => r,
            _ => return Err(LockError::Conflict),
        };
        let compare = self.inner.unchanged_since(revision);
        match self.inner.put_if(compare, record).await? {
            Ok(stored) => Ok(stored),
            Err(Some(_)) => Err(LockError::Conflict),
            Err(None) => Err(LockError::NotFound),
        }
    }

    fn watch(&self, from: Option<&Version>) -> Option<WatchStream> {
        Some(watch::watch(Arc::clone(&self.inner), from.cloned()))
    }

    fn describe(&self) -> String {
        format!("etcd {} key {}", self.inner.http.base(), self.inner.key)
    }

    fn leadership_changed(&self, identity: &str, change: LeadershipChange) -> Option<LockTask> {
        // etcd has no Events to record; the driver's state stream and tracing
        // report leadership changes.
        let _ = (identity, change);
        None
    }

    fn configure(&self, config: &Config) {
        self.inner
            .request_timeout
            .store(nanos(config.request_timeout), Ordering::Relaxed);
        let mut identities = self
            .inner
            .identities
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !identities.contains(&config.identity) {
            identities.push(Arc::clone(&config.identity));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_plain_http_host_and_port() {
        let ok = |e: &str| parse_endpoint(e).unwrap();
        assert_eq!(ok("http://127.0.0.1:2379"), "http://127.0.0.1:2379");
        assert_eq!(ok("http://etcd:2379/"), "http://etcd:2379");
        for bad in [
            "https://127.0.0.1:2379",
            "127.0.0.1:2379",
            "http://127.0.0.1:2379/v3",
            "http://",
            "not a url",
            "",
        ] {
            assert!(
                matches!(parse_endpoint(bad), Err(BuildError::Endpoint { .. })),
                "{bad}"
            );
        }
        assert_eq!(
            EtcdLock::builder("http://127.0.0.1:2379", "")
                .build()
                .unwrap_err(),
            BuildError::EmptyKey
        );
    }

    #[test]
    fn the_configured_request_timeout_bounds_calls_and_the_watch_silence() {
        let lock = EtcdLock::builder("http://127.0.0.1:2379", "/k")
            .progress_notify_interval(Duration::from_secs(1))
            .build()
            .unwrap();
        assert_eq!(lock.request_timeout(), DEFAULT_REQUEST_TIMEOUT);
        lock.configure(&Config::fast("a"));
        assert_eq!(lock.request_timeout(), Duration::from_millis(500));
        assert_eq!(lock.inner.watch_silence(), Duration::from_millis(2_500));
    }

    #[test]
    fn bad_gateway_answers_are_errors_not_panics() {
        let lock = EtcdLock::builder("http://127.0.0.1:2379", "/k")
            .build()
            .unwrap();
        let kv = |rev: i64, value: Option<&str>| KeyValue {
            mod_revision: rev,
            value: value.map(str::to_owned),
        };
        assert!(matches!(
            lock.inner.observation(&kv(0, None)),
            Err(LockError::Invalid { .. })
        ));
        assert!(matches!(
            lock.inner.observation(&kv(3, Some("***"))),
            Err(LockError::Invalid { .. })
        ));
        // A value that is not a record: held by an unknown holder.
        let obs = lock.inner.observation(&kv(3, Some(&b64(b"[]")))).unwrap();
        assert_eq!(obs.version.as_str(), "3");
        assert_eq!(obs.record.holder.as_ref(), record::MALFORMED_HOLDER);
    }
}
