//! The [`Lock`] trait that backends implement, and the error classes the core acts on.
//!
//! A lock is a single record with a version, read and written only by
//! compare-and-swap. Backends live in their own crates (`lock-memory`,
//! `lock-lease`, `lock-configmap`) and depend on this crate alone.

use alloc::boxed::Box;
use alloc::string::String;
use core::future::Future;
use core::pin::Pin;
use core::time::Duration;

use futures_core::Stream;

use crate::config::Config;
use crate::record::{LockRecord, Observation, Version};

/// What a watch yields: the lock as it now is, or the news that it was deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEvent {
    /// The lock has this record at this version.
    Changed(Observation),
    /// The lock no longer exists: deleted at this version, where the lock tells it
    /// (a Kubernetes DELETED event's resourceVersion). A holder stops leading at
    /// once on a deletion newer than what it saw. `None` where the lock cannot
    /// say (a watch that found the lock absent when it started): the elector
    /// cannot order that against its own writes, so a holder reads first.
    Deleted(Option<Version>),
}

/// A stream of changes to the lock. It ends when the watch breaks; the caller then
/// resumes it from the last version it saw, and polls meanwhile (silence never
/// means "unchanged").
///
/// Two ways to end, told apart by the driver:
/// - **the stream ends** (`None`): a clean end (a server's watch timeout, a closed
///   connection, a silence the lock no longer trusts). The driver resumes from the
///   last version delivered.
/// - **an `Err` item**: the watch failed, and the lock says why (refused, 410
///   Gone, forbidden). The driver reports it (`Change::Problem`), treats the
///   stream as ended, and resumes; a resumed watch that fails before delivering
///   anything is started afresh, from no version (its version may be gone). Yield
///   at most one error, then end: items after an error are not read.
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchEvent, LockError>> + Send + 'static>>;

/// A change of this candidate's own leadership, told to the lock by
/// [`Lock::leadership_changed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LeadershipChange {
    /// The candidate acquired the lock and started leading.
    BecameLeader,
    /// The candidate stopped leading (stepped down, lost, or shut down).
    StoppedLeading,
}

/// Best-effort work a lock asks the driver to run in the background (such as
/// recording a Kubernetes Event). It must end by itself, bound its own waiting,
/// and report its failures itself: the election never waits for it.
pub type LockTask = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A lock backend: one record, read and written by compare-and-swap.
///
/// A backend depends on this crate (`default-features = false` works: the trait
/// needs only `alloc`) and on whatever its store needs. A watch is a boxed
/// [`Stream`](futures_core::Stream) ([`WatchStream`]); this crate re-exports the
/// trait as `election_core::Stream`, so naming it needs no other crate, and a
/// backend builds its stream with a helper of its choice (`futures-lite`'s
/// `stream::unfold`, as `lock-etcd` does) or implements `Stream` by hand (as
/// `lock-memory` does). A backend without a watch returns `None` and needs no
/// stream at all.
/// Records a backend cannot decode are read as held by
/// [`MALFORMED_HOLDER`](crate::MALFORMED_HOLDER) with no duration, never an
/// error: the elector times them like any version and takes them over by
/// compare-and-swap (docs/faults.md R6).
///
/// Every method is a single attempt; timeouts and retries are the elector's
/// business (the driver bounds each call with the configured request timeout, and
/// an attempt cut off that way counts as [`LockError::Unknown`]). Successful writes
/// return the record as stored, with the timestamps the backend stamped and the new
/// version.
///
/// Implementations should pass the conformance suite in `lock-memory` (feature
/// `conformance`) against the real store, completely: every case run, none
/// skipped (`Report::is_complete`). A lock without a watch, or a harness that
/// cannot delete the lock, skips the cases that need one; `Report::is_success`
/// then says only that nothing that ran failed.
pub trait Lock: Send + Sync + 'static {
    /// Reads the record. A missing lock is [`LockError::NotFound`].
    fn get(&self) -> impl Future<Output = Result<Observation, LockError>> + Send;

    /// Creates the lock with `record`; [`LockError::AlreadyExists`] if it exists.
    fn create(
        &self,
        record: &LockRecord,
    ) -> impl Future<Output = Result<Observation, LockError>> + Send;

    /// Replaces the record if the lock is still at `expected`; [`LockError::Conflict`]
    /// if it moved on, [`LockError::NotFound`] if it is gone.
    fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> impl Future<Output = Result<Observation, LockError>> + Send;

    /// Starts a watch that yields every change after `from` (or the current state
    /// first, when `from` is `None`: `Changed` with the record, or, when the lock
    /// does not exist, `Deleted` with the version of its deletion if the store
    /// knows it and `Deleted(None)` if not). `None` if the backend cannot watch;
    /// the elector then polls. See [`WatchStream`] for how a watch ends. Versions
    /// of decimal form must grow with every write, across deletions too
    /// ([`Version::order`]).
    ///
    /// No default: a backend without a watch returns `None` in its own words; a
    /// wrapper is a [`Layer`](crate::Layer), which forwards it by default (one
    /// that forgot would silently turn every follower into a poller).
    fn watch(&self, from: Option<&Version>) -> Option<WatchStream>;

    /// A human-readable name of the lock, such as `leases/kube-system/my-controller`.
    fn describe(&self) -> String;

    /// Told when the candidate `identity` started or stopped leading, after the
    /// fact (client-go's `RecordEvent`). The lock may return a task, which the
    /// driver spawns on its runtime and never awaits: whatever it does (an Event
    /// on the lock object) cannot delay or fail the election. It must not block.
    ///
    /// No default: a lock with nothing to record returns `None` in its own words;
    /// a wrapper is a [`Layer`](crate::Layer), which forwards it by default (one
    /// that forgot would silently drop the wrapped lock's Events).
    fn leadership_changed(&self, identity: &str, change: LeadershipChange) -> Option<LockTask>;

    /// Told the election's configuration by the driver once, before its first
    /// call, so that timeouts are set in one place: the [`Config`]. The calls of
    /// this trait need no bound of the lock's own (the driver bounds each with
    /// `config.request_timeout`); a lock that waits on something by itself (the
    /// reads that open a watch, a best-effort Event) takes its bound from here.
    ///
    /// No default, as for every method: a lock with nothing of its own to bound
    /// says so in its own words; a wrapper is a [`Layer`](crate::Layer), which
    /// forwards it by default (one that forgot would leave the wrapped lock on
    /// its own defaults). A lock shared by several elections keeps the last
    /// configuration it was told.
    fn configure(&self, config: &Config);
}

/// Why a lock call failed, classified by what the elector must do about it.
///
/// The messages read "…: {0}" with the backend's own words; the variant docs say
/// how the elector reacts.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The lock does not exist. A read that finds none leads to a create.
    #[error("lock not found")]
    NotFound,
    /// A create lost the race: someone else created the lock first. The elector
    /// reads the winner's record and times it like any other.
    #[error("lock already exists")]
    AlreadyExists,
    /// The version given to a compare-and-swap is stale. The elector reads afresh.
    #[error("lock changed since it was read (conflict)")]
    Conflict,
    /// The attempt did not happen (connection refused, 503, 429): retry later,
    /// not before `retry_after` if the server said so.
    #[error("transient failure: {message}")]
    Transient {
        /// What the backend said.
        message: String,
        /// The server's `Retry-After`, if any.
        retry_after: Option<Duration>,
    },
    /// Not allowed (401, 403): reported, retried with backoff in case it is granted.
    #[error("forbidden: {message}")]
    Forbidden {
        /// What the backend said, naming the verb and resource where it can.
        message: String,
    },
    /// The request was rejected as invalid (422), or the lock's place is missing
    /// (a namespace that does not exist): a configuration problem, reported, never
    /// retried with the same payload in a tight loop.
    #[error("invalid: {message}")]
    Invalid {
        /// What the backend said.
        message: String,
    },
    /// The outcome is unknown (a timeout, a 500 or 504 after sending, a connection
    /// reset): a write may have happened. The elector does not extend its
    /// leadership on it and re-reads before acting.
    #[error("outcome unknown: {message}")]
    Unknown {
        /// What the backend said.
        message: String,
    },
}

impl LockError {
    /// A [`LockError::Transient`] without `Retry-After`.
    pub fn transient(message: impl Into<String>) -> Self {
        LockError::Transient {
            message: message.into(),
            retry_after: None,
        }
    }

    /// A [`LockError::Unknown`].
    pub fn unknown(message: impl Into<String>) -> Self {
        LockError::Unknown {
            message: message.into(),
        }
    }

    /// A short snake_case name of the error's class, for metric labels and log
    /// fields.
    pub fn class(&self) -> &'static str {
        match self {
            LockError::NotFound => "not_found",
            LockError::AlreadyExists => "already_exists",
            LockError::Conflict => "conflict",
            LockError::Transient { .. } => "transient",
            LockError::Forbidden { .. } => "forbidden",
            LockError::Invalid { .. } => "invalid",
            LockError::Unknown { .. } => "unknown",
        }
    }

    /// Whether a write that failed this way may nevertheless have been applied.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, LockError::Unknown { .. })
    }
}
