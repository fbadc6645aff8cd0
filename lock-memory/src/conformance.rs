//! A conformance suite for [`Lock`] implementations: the adversarial cases every
//! backend must pass, runnable against any lock, yours included.
//!
//! Give the suite a [`Harness`]: a factory of fresh, initially absent locks with
//! two client handles each, and (optionally) a way to delete the lock as a human
//! would. [`run_all`] runs every [`Case`] on a fresh lock and returns a [`Report`];
//! no case panics. Each call is bounded by [`CALL_TIMEOUT`] and each awaited watch
//! event by [`WATCH_TIMEOUT`] (measured with `async-io`'s timer, so the suite runs
//! on any executor), so a hanging backend fails instead of stalling the suite.
//!
//! ```
//! use lock_memory::conformance::{run_all, MemoryHarness};
//!
//! let report = futures_lite::future::block_on(run_all(&mut MemoryHarness::new()));
//! assert!(report.is_complete(), "{report}");
//! ```
//!
//! **Done means complete.** [`Report::is_success`] says that no case that ran
//! failed; a case that needs a watch (the lock has none) or a deletion (the
//! harness cannot delete) is skipped, and a skipped case proves nothing. A lock's
//! own test asserts [`Report::is_complete`] (every case ran and passed), or, for a
//! lock that cannot watch, `is_success` and exactly the skips it expects
//! ([`Report::skipped`]). The printed report names each case `ok`, `skipped` (with
//! why) or `FAILED` (with what differed, field by field).
//!
//! **The racing case runs the lock on threads of its own.**
//! [`Case::ConcurrentUpdatesHaveOneWinner`] releases compare-and-swap updates on
//! one version from several threads at once, each awaiting its call with a plain
//! `block_on` (there is no other way to race an in-process lock for real), and
//! blocks the calling thread meanwhile. So the lock's futures must make progress
//! on a thread with no async runtime: a lock built on a tokio-only client wraps
//! its futures in `async_compat::Compat` (as the Kubernetes and etcd locks do,
//! which is also what lets them run under smol and async-std).
//!
//! Records that a case writes use whole-second timestamps, so that backends that
//! store microseconds (Lease) or seconds (ConfigMap annotation) round-trip them.
//!
//! A lock that wraps another (metrics, tracing, fault injection) must forward
//! every method to it: [`check_wrapper`] checks one that is generic over the lock
//! it wraps.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use election_core::{
    Handover, Lock, LockError, LockRecord, MAX_TRANSITIONS, Observation, Stamp, Version, WallTime,
    WatchEvent, WatchStream,
};
use futures_lite::StreamExt;

use crate::MemoryStore;

mod diff;
mod race;
mod wrapper;
pub use wrapper::{PROBE_IDENTITY, Probe, ProbeNotes, WrapperFailure, check_wrapper};

/// How long one lock call may take before the case fails, by default.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the suite waits for an expected watch event, by default.
pub const WATCH_TIMEOUT: Duration = Duration::from_secs(10);

/// What the suite needs from a backend.
pub trait Harness {
    /// The lock under test.
    type Lock: Lock;

    /// Two handles, of two distinct clients, on a fresh lock that does not exist
    /// yet. Each case calls this once.
    fn fresh(&mut self) -> impl Future<Output = (Self::Lock, Self::Lock)>;

    /// Deletes the lock behind the handles last returned by [`Harness::fresh`], as
    /// a human with `kubectl delete` would. Returns `false` if the harness cannot
    /// (the cases that need it are then skipped), which is the default.
    fn delete(&mut self) -> impl Future<Output = bool> {
        async { false }
    }
}

/// The suite's harness for [`MemoryStore`]: a new store per case, clients `a` and `b`.
#[derive(Debug, Default)]
pub struct MemoryHarness {
    store: Option<MemoryStore>,
}

impl MemoryHarness {
    /// A harness making fault-free stores.
    pub fn new() -> Self {
        MemoryHarness::default()
    }

    /// The store of the current case.
    pub fn store(&self) -> Option<&MemoryStore> {
        self.store.as_ref()
    }
}

impl Harness for MemoryHarness {
    type Lock = crate::MemoryLock;

    async fn fresh(&mut self) -> (Self::Lock, Self::Lock) {
        let store = MemoryStore::new();
        let pair = (store.client("a"), store.client("b"));
        self.store = Some(store);
        pair
    }

    async fn delete(&mut self) -> bool {
        self.store.as_ref().is_some_and(MemoryStore::delete)
    }
}

/// A harness from a closure giving two handles on a fresh lock per call; it
/// cannot delete, so the cases that need a deletion are skipped. Build it with
/// [`harness_fn`].
#[derive(Debug)]
pub struct FnHarness<F>(F);

/// A [`Harness`] from a closure returning two handles (two clients) on a fresh,
/// absent lock each time it is called.
///
/// ```
/// use lock_memory::MemoryStore;
/// use lock_memory::conformance::{harness_fn, run_all};
///
/// let mut harness = harness_fn(|| {
///     let store = MemoryStore::new();
///     (store.client("a"), store.client("b"))
/// });
/// let report = futures_lite::future::block_on(run_all(&mut harness));
/// assert!(report.is_success(), "{report}"); // every case that applies passed
/// assert!(!report.is_complete()); // the three that delete the lock were skipped
/// assert_eq!(report.skipped().len(), 3);
/// ```
pub fn harness_fn<L: Lock, F: FnMut() -> (L, L)>(make: F) -> FnHarness<F> {
    FnHarness(make)
}

impl<L: Lock, F: FnMut() -> (L, L)> Harness for FnHarness<F> {
    type Lock = L;

    async fn fresh(&mut self) -> (L, L) {
        (self.0)()
    }
}

/// A case of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Case {
    /// A read of an absent lock is `NotFound`.
    GetAbsentIsNotFound,
    /// A create returns the record as stored, and a read by another client sees it.
    CreateThenGetRoundTrips,
    /// Two concurrent creates: exactly one wins, the other gets `AlreadyExists` (FAULTS A3).
    CreateRaceHasOneWinner,
    /// An update with a stale version is a `Conflict` and leaves the record as it was (A1, A2, W3).
    StaleVersionConflicts,
    /// Compare-and-swap updates from both clients at once, all on one version:
    /// exactly one wins each round, the others get `Conflict` (N11). Raced on
    /// threads of the suite's own and interleaved on one task, many rounds.
    ConcurrentUpdatesHaveOneWinner,
    /// An update of a lock that never existed is `NotFound`.
    UpdateAbsentIsNotFound,
    /// An update of a deleted lock is `NotFound`, and does not bring it back (A4).
    UpdateDeletedIsNotFound,
    /// Every write takes a new version, even with identical record bytes (R10).
    VersionsChangeOnIdenticalRewrite,
    /// Each write's version is newer than every earlier one: where versions are
    /// decimal, by [`Version::order`]; otherwise at least never repeated.
    VersionsGrow,
    /// After a deletion, the re-created lock's versions are newer than every
    /// version before the deletion (they do not restart).
    VersionsGrowAcrossRecreation,
    /// `Stamp::Now` is stamped by the backend; `Stamp::At` is kept; `Stamp::Unset` stays unset.
    StampsAreStampedOrKept,
    /// A release (holder `""`, lease 1 s, transitions kept) round-trips (R2).
    ReleaseRoundTrips,
    /// Transition counts round-trip, up to [`MAX_TRANSITIONS`] (R5).
    TransitionsRoundTrip,
    /// Absurd values (duration 0, negative, huge, absent; empty holder) are stored
    /// and read back consistently, or refused as `Invalid` (R3, R4, R7).
    AbsurdValuesReadTolerantly,
    /// The priority and handover fields round-trip.
    HandoverRoundTrips,
    /// A record with every field set (holder, duration, both times, transitions,
    /// priority, handover, strategy), then every field changed, then the optional
    /// ones removed: each write's answer and a read by the other client show
    /// exactly what was written.
    EveryFieldRoundTrips,
    /// Sparse records, as other implementations write them (`{}`: no holder,
    /// duration, timestamps or transitions; then a holder alone), are stored and
    /// read back consistently, or refused as `Invalid` (R7).
    SparseRecordsReadTolerantly,
    /// A watch from no version yields the current state, then each change in order.
    WatchDeliversInOrder,
    /// A watch from a version yields every change after it, in order (W1).
    WatchResumesFromVersion,
    /// A watch reports a deletion, then the re-creation.
    WatchSeesDeletion,
}

impl Case {
    /// Every case, in the order [`run_all`] runs them.
    pub const ALL: [Case; 20] = [
        Case::GetAbsentIsNotFound,
        Case::CreateThenGetRoundTrips,
        Case::CreateRaceHasOneWinner,
        Case::StaleVersionConflicts,
        Case::ConcurrentUpdatesHaveOneWinner,
        Case::UpdateAbsentIsNotFound,
        Case::UpdateDeletedIsNotFound,
        Case::VersionsChangeOnIdenticalRewrite,
        Case::VersionsGrow,
        Case::VersionsGrowAcrossRecreation,
        Case::StampsAreStampedOrKept,
        Case::ReleaseRoundTrips,
        Case::TransitionsRoundTrip,
        Case::AbsurdValuesReadTolerantly,
        Case::HandoverRoundTrips,
        Case::EveryFieldRoundTrips,
        Case::SparseRecordsReadTolerantly,
        Case::WatchDeliversInOrder,
        Case::WatchResumesFromVersion,
        Case::WatchSeesDeletion,
    ];

    /// The case's name in snake case.
    pub fn name(self) -> &'static str {
        match self {
            Case::GetAbsentIsNotFound => "get_absent_is_not_found",
            Case::CreateThenGetRoundTrips => "create_then_get_round_trips",
            Case::CreateRaceHasOneWinner => "create_race_has_one_winner",
            Case::StaleVersionConflicts => "stale_version_conflicts",
            Case::ConcurrentUpdatesHaveOneWinner => "concurrent_updates_have_one_winner",
            Case::UpdateAbsentIsNotFound => "update_absent_is_not_found",
            Case::UpdateDeletedIsNotFound => "update_deleted_is_not_found",
            Case::VersionsChangeOnIdenticalRewrite => "versions_change_on_identical_rewrite",
            Case::VersionsGrow => "versions_grow",
            Case::VersionsGrowAcrossRecreation => "versions_grow_across_recreation",
            Case::StampsAreStampedOrKept => "stamps_are_stamped_or_kept",
            Case::ReleaseRoundTrips => "release_round_trips",
            Case::TransitionsRoundTrip => "transitions_round_trip",
            Case::AbsurdValuesReadTolerantly => "absurd_values_read_tolerantly",
            Case::HandoverRoundTrips => "handover_round_trips",
            Case::EveryFieldRoundTrips => "every_field_round_trips",
            Case::SparseRecordsReadTolerantly => "sparse_records_read_tolerantly",
            Case::WatchDeliversInOrder => "watch_delivers_in_order",
            Case::WatchResumesFromVersion => "watch_resumes_from_version",
            Case::WatchSeesDeletion => "watch_sees_deletion",
        }
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a case that did not fail ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every expectation held.
    Passed,
    /// The backend or harness cannot do what the case needs (no watch, no delete).
    Skipped(&'static str),
}

/// A failed expectation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("conformance case {case} failed: {expectation}")]
pub struct CaseFailure {
    /// The case.
    pub case: Case,
    /// What was expected, and what happened instead.
    pub expectation: String,
}

/// The results of [`run_all`], in the order of [`Case::ALL`].
#[derive(Clone, Debug)]
pub struct Report {
    /// One result per case.
    pub results: Vec<(Case, Result<Outcome, CaseFailure>)>,
}

impl Report {
    /// Whether every case that applies passed: no case failed. A case the lock
    /// or harness cannot run (no watch, no way to delete) is skipped, and a skip
    /// is not a failure here; see [`Report::skipped`] for which and why, and
    /// [`Report::is_complete`] to require that every case ran.
    pub fn is_success(&self) -> bool {
        self.results.iter().all(|(_, r)| r.is_ok())
    }

    /// Whether every case ran and passed: none failed and none was skipped. A
    /// lock with a watch, tested by a harness that can delete the lock, must be
    /// complete; assert this in its test.
    pub fn is_complete(&self) -> bool {
        self.results.iter().all(|(_, r)| r == &Ok(Outcome::Passed))
    }

    /// The failures.
    pub fn failures(&self) -> Vec<&CaseFailure> {
        self.results
            .iter()
            .filter_map(|(_, r)| r.as_ref().err())
            .collect()
    }

    /// The cases that passed.
    pub fn passed(&self) -> Vec<Case> {
        self.results
            .iter()
            .filter(|(_, r)| r == &Ok(Outcome::Passed))
            .map(|(c, _)| *c)
            .collect()
    }

    /// The cases skipped, with why.
    pub fn skipped(&self) -> Vec<(Case, &'static str)> {
        self.results
            .iter()
            .filter_map(|(c, r)| match r {
                Ok(Outcome::Skipped(why)) => Some((*c, *why)),
                _ => None,
            })
            .collect()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (case, result) in &self.results {
            match result {
                Ok(Outcome::Passed) => writeln!(f, "ok      {case}")?,
                Ok(Outcome::Skipped(why)) => writeln!(f, "skipped {case}: {why}")?,
                Err(e) => writeln!(f, "FAILED  {case}: {}", e.expectation)?,
            }
        }
        Ok(())
    }
}

/// How long the suite waits before it fails a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// For one lock call.
    pub call: Duration,
    /// For an expected watch event.
    pub watch: Duration,
}

impl Default for Timeouts {
    /// [`CALL_TIMEOUT`] and [`WATCH_TIMEOUT`].
    fn default() -> Self {
        Timeouts {
            call: CALL_TIMEOUT,
            watch: WATCH_TIMEOUT,
        }
    }
}

/// Runs every case, each on a fresh lock from `harness`, with the default timeouts.
pub async fn run_all<H: Harness>(harness: &mut H) -> Report {
    run_all_with(harness, Timeouts::default()).await
}

/// Runs every case, each on a fresh lock from `harness`.
pub async fn run_all_with<H: Harness>(harness: &mut H, timeouts: Timeouts) -> Report {
    let mut results = Vec::with_capacity(Case::ALL.len());
    for case in Case::ALL {
        results.push((case, run_case_with(harness, case, timeouts).await));
    }
    Report { results }
}

/// Runs one case on a fresh lock from `harness`, with the default timeouts.
pub async fn run_case<H: Harness>(harness: &mut H, case: Case) -> Result<Outcome, CaseFailure> {
    run_case_with(harness, case, Timeouts::default()).await
}

/// Runs one case on a fresh lock from `harness`.
pub async fn run_case_with<H: Harness>(
    harness: &mut H,
    case: Case,
    timeouts: Timeouts,
) -> Result<Outcome, CaseFailure> {
    let t = timeouts;
    let (a, b) = Box::pin(harness.fresh()).await;
    let result = match case {
        Case::GetAbsentIsNotFound => Box::pin(get_absent_is_not_found(&t, &a)).await,
        Case::CreateThenGetRoundTrips => Box::pin(create_then_get_round_trips(&t, &a, &b)).await,
        Case::CreateRaceHasOneWinner => Box::pin(create_race_has_one_winner(&t, &a, &b)).await,
        Case::StaleVersionConflicts => Box::pin(stale_version_conflicts(&t, &a, &b)).await,
        Case::ConcurrentUpdatesHaveOneWinner => {
            Box::pin(race::concurrent_updates_have_one_winner(&t, &a, &b)).await
        }
        Case::UpdateAbsentIsNotFound => Box::pin(update_absent_is_not_found(&t, &a)).await,
        Case::UpdateDeletedIsNotFound => {
            Box::pin(update_deleted_is_not_found(&t, harness, &a, &b)).await
        }
        Case::VersionsChangeOnIdenticalRewrite => {
            Box::pin(versions_change_on_identical_rewrite(&t, &a, &b)).await
        }
        Case::VersionsGrow => Box::pin(versions_grow(&t, &a, &b)).await,
        Case::VersionsGrowAcrossRecreation => {
            Box::pin(versions_grow_across_recreation(&t, harness, &a, &b)).await
        }
        Case::StampsAreStampedOrKept => Box::pin(stamps_are_stamped_or_kept(&t, &a, &b)).await,
        Case::ReleaseRoundTrips => Box::pin(release_round_trips(&t, &a, &b)).await,
        Case::TransitionsRoundTrip => Box::pin(transitions_round_trip(&t, &a, &b)).await,
        Case::AbsurdValuesReadTolerantly => {
            Box::pin(absurd_values_read_tolerantly(&t, &a, &b)).await
        }
        Case::HandoverRoundTrips => Box::pin(handover_round_trips(&t, &a, &b)).await,
        Case::EveryFieldRoundTrips => Box::pin(every_field_round_trips(&t, &a, &b)).await,
        Case::SparseRecordsReadTolerantly => {
            Box::pin(sparse_records_read_tolerantly(&t, &a, &b)).await
        }
        Case::WatchDeliversInOrder => Box::pin(watch_delivers_in_order(&t, &a, &b)).await,
        Case::WatchResumesFromVersion => Box::pin(watch_resumes_from_version(&t, &a, &b)).await,
        Case::WatchSeesDeletion => Box::pin(watch_sees_deletion(&t, harness, &a, &b)).await,
    };
    result.map_err(|expectation| CaseFailure { case, expectation })
}

/// A case's body: `Err` says which expectation failed.
type CaseResult = Result<Outcome, String>;

/// Fails the case with a message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// Deletes the lock through the harness `h`, or skips the case if it cannot.
macro_rules! delete_or_skip {
    ($h:expr) => {
        if !Box::pin($h.delete()).await {
            return Ok(Outcome::Skipped("the harness cannot delete the lock"));
        }
    };
}

/// Awaits `f`, or `None` after `d` (on `async-io`'s timer).
async fn within<T>(d: Duration, f: impl Future<Output = T>) -> Option<T> {
    futures_lite::future::or(async { Some(f.await) }, async {
        async_io::Timer::after(d).await;
        None
    })
    .await
}

/// Awaits a lock call, failing the case if it takes longer than the call timeout.
///
/// The call's future is boxed at once: a backend's futures can be large (an HTTP
/// client's are), and every enclosing future would otherwise carry a copy, which
/// in debug builds makes for very deep stacks.
fn call<'a, T: 'a>(
    t: &'a Timeouts,
    what: &'a str,
    f: impl Future<Output = Result<T, LockError>> + 'a,
) -> impl Future<Output = Result<Result<T, LockError>, String>> + 'a {
    let f = Box::pin(f);
    async move {
        within(t.call, f)
            .await
            .ok_or_else(|| format!("{what} did not answer within {:?}", t.call))
    }
}

/// Awaits a call that must succeed.
fn ok<'a, T: 'a>(
    t: &'a Timeouts,
    what: &'a str,
    f: impl Future<Output = Result<T, LockError>> + 'a,
) -> impl Future<Output = Result<T, String>> + 'a {
    let answer = call(t, what, f);
    async move { answer.await?.map_err(|e| format!("{what} failed: {e:?}")) }
}

/// Awaits a call that must be refused with `expected`; the message says what
/// the call `gave` (e.g. "an update of an absent lock gave").
async fn refused<T: PartialEq + fmt::Debug>(
    t: &Timeouts,
    what: &str,
    f: impl Future<Output = Result<T, LockError>>,
    expected: LockError,
    gave: &str,
) -> Result<(), String> {
    let got = call(t, what, f).await?;
    ensure!(
        got == Err(expected.clone()),
        "{gave} {got:?}, expected {expected:?}"
    );
    Ok(())
}

/// A plain record held by `holder`, with whole-second timestamps.
fn held(holder: &str) -> LockRecord {
    let t = Stamp::At(WallTime::new(1_700_000_000, 0));
    LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(15),
        acquire_time: t,
        renew_time: t,
        transitions: 1,
        ..LockRecord::default()
    }
}

/// Checks that a write's answer stored `written` as is.
fn stored_as_written(what: &str, obs: &Observation, written: &LockRecord) -> Result<(), String> {
    let diff = diff::record_diff(written, &obs.record, ("wrote", "answered"));
    ensure!(diff.is_empty(), "{what}: not stored as written: {diff}");
    Ok(())
}

/// Checks that a read returns exactly what the last write answered.
async fn reads_back<L: Lock>(t: &Timeouts, lock: &L, expected: &Observation) -> Result<(), String> {
    let got = ok(t, "get", lock.get()).await?;
    let diff = diff::observation_diff(expected, &got, ("the last write answered", "get read"));
    ensure!(
        diff.is_empty(),
        "a read differs from the last write's answer: {diff}"
    );
    Ok(())
}

/// An update that must succeed, and whose answer must carry a new version.
async fn update_ok<L: Lock>(
    t: &Timeouts,
    what: &str,
    lock: &L,
    expected: &Version,
    record: &LockRecord,
) -> Result<Observation, String> {
    let obs = ok(t, what, lock.update(expected, record)).await?;
    ensure!(
        obs.version != *expected,
        "{what}: the answer carries the version the update replaced ({expected}); a \
         successful write answers with the new version"
    );
    Ok(obs)
}

/// A write of `record` that must succeed (a create, or with `prev` an update of
/// it, which must answer a new version), store `record` as written, and that
/// `reader` must read back as answered.
async fn round_trips<L: Lock>(
    t: &Timeouts,
    what: &str,
    (writer, reader): (&L, &L),
    prev: Option<&Version>,
    record: &LockRecord,
) -> Result<Observation, String> {
    let obs = match prev {
        None => ok(t, what, writer.create(record)).await?,
        Some(prev) => update_ok(t, what, writer, prev, record).await?,
    };
    stored_as_written(what, &obs, record)?;
    reads_back(t, reader, &obs).await?;
    Ok(obs)
}

/// The answer to a write the lock may refuse as `Invalid` (`doing` says which,
/// for the message). Accepted, the stored record must pass `check` and `reader`
/// must read it back as answered: `Some` of it. Refused: `None`. Any other
/// answer fails the case.
async fn accepted_or_invalid<L: Lock>(
    t: &Timeouts,
    reader: &L,
    answer: Result<Observation, LockError>,
    doing: &str,
    check: impl FnOnce(&LockRecord) -> Result<(), String>,
) -> Result<Option<Observation>, String> {
    match answer {
        Ok(written) => {
            check(&written.record)?;
            reads_back(t, reader, &written).await?;
            Ok(Some(written))
        }
        Err(LockError::Invalid { .. }) => Ok(None),
        Err(e) => Err(format!("{doing} gave {e:?}, expected success or Invalid")),
    }
}

/// An update of `obs` to `record` that the lock may refuse as `Invalid`
/// ([`accepted_or_invalid`]): accepted, `obs` becomes the answer; refused,
/// `reader` must still read `obs`.
async fn update_or_invalid<L: Lock>(
    t: &Timeouts,
    writer: &L,
    reader: &L,
    obs: &mut Observation,
    record: &LockRecord,
    doing: &str,
    check: impl FnOnce(&LockRecord) -> Result<(), String>,
) -> Result<(), String> {
    let answer = call(t, "update", writer.update(&obs.version, record)).await?;
    match accepted_or_invalid(t, reader, answer, doing, check).await? {
        Some(written) => *obs = written,
        None => reads_back(t, reader, obs).await?,
    }
    Ok(())
}

/// Checks that `version`, of the write `what`, is newer than every one in
/// `earlier` ([`Version::is_newer_than`]), naming the one it is not.
fn newer_than_all(what: &str, version: &Version, earlier: &[Version]) -> Result<(), String> {
    for e in earlier {
        ensure!(
            version != e,
            "{what}: version {version} repeats an earlier write's version"
        );
        ensure!(
            version.is_newer_than(e),
            "{what}: version {version} is older than {e}, an earlier write's: decimal \
             versions must grow with every write (the elector ignores news older than \
             what it saw, and orders terms by them)"
        );
    }
    Ok(())
}

/// Checks that, after a refused update, the lock still reads as absent.
async fn still_absent<L: Lock>(t: &Timeouts, lock: &L) -> Result<(), String> {
    refused(
        t,
        "get",
        lock.get(),
        LockError::NotFound,
        "after a refused update the lock reads",
    )
    .await
}

async fn get_absent_is_not_found<L: Lock>(t: &Timeouts, a: &L) -> CaseResult {
    refused(
        t,
        "get of an absent lock",
        a.get(),
        LockError::NotFound,
        "get of an absent lock gave",
    )
    .await?;
    Ok(Outcome::Passed)
}

async fn create_then_get_round_trips<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let obs = round_trips(t, "create", (a, b), None, &held("a")).await?;
    reads_back(t, a, &obs).await?;
    Ok(Outcome::Passed)
}

async fn create_race_has_one_winner<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let (ra, rb) = (held("a"), held("b"));
    let (x, y) = futures_lite::future::zip(
        call(t, "create by a", a.create(&ra)),
        call(t, "create by b", b.create(&rb)),
    )
    .await;
    let (x, y) = (x?, y?);
    let winner = match (&x, &y) {
        (Ok(obs), Err(LockError::AlreadyExists)) | (Err(LockError::AlreadyExists), Ok(obs)) => {
            obs.clone()
        }
        _ => {
            return Err(format!(
                "racing creates gave {x:?} and {y:?}, expected one success and one AlreadyExists"
            ));
        }
    };
    reads_back(t, a, &winner).await?;
    refused(
        t,
        "a second create",
        b.create(&rb),
        LockError::AlreadyExists,
        "a create of an existing lock gave",
    )
    .await?;
    reads_back(t, b, &winner).await?;
    Ok(Outcome::Passed)
}

async fn stale_version_conflicts<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let v1 = ok(t, "create", a.create(&held("a"))).await?;
    let v2 = update_ok(t, "update", a, &v1.version, &held("a")).await?;
    refused(
        t,
        "update with a stale version",
        b.update(&v1.version, &held("b")),
        LockError::Conflict,
        "an update with a stale version gave",
    )
    .await?;
    reads_back(t, b, &v2).await?;
    let bogus = Version::new("not-a-version-this-lock-issued");
    refused(
        t,
        "update with a foreign version",
        b.update(&bogus, &held("b")),
        LockError::Conflict,
        "an update with a foreign version gave",
    )
    .await?;
    reads_back(t, a, &v2).await?;
    Ok(Outcome::Passed)
}

async fn update_absent_is_not_found<L: Lock>(t: &Timeouts, a: &L) -> CaseResult {
    refused(
        t,
        "update of an absent lock",
        a.update(&Version::new("1"), &held("a")),
        LockError::NotFound,
        "an update of an absent lock gave",
    )
    .await?;
    still_absent(t, a).await?;
    Ok(Outcome::Passed)
}

async fn update_deleted_is_not_found<H: Harness>(
    t: &Timeouts,
    h: &mut H,
    a: &H::Lock,
    b: &H::Lock,
) -> CaseResult {
    let obs = ok(t, "create", a.create(&held("a"))).await?;
    delete_or_skip!(h);
    refused(
        t,
        "update of a deleted lock",
        a.update(&obs.version, &held("a")),
        LockError::NotFound,
        "an update of a deleted lock gave",
    )
    .await?;
    still_absent(t, b).await?;
    Ok(Outcome::Passed)
}

async fn versions_change_on_identical_rewrite<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let record = held("a");
    let v1 = ok(t, "create", a.create(&record)).await?;
    let v2 = update_ok(t, "identical update", a, &v1.version, &record).await?;
    let v3 = update_ok(t, "identical update", a, &v2.version, &record).await?;
    ensure!(
        v1.version != v2.version && v2.version != v3.version && v1.version != v3.version,
        "identical rewrites gave versions {:?}, {:?}, {:?}; expected three distinct",
        v1.version,
        v2.version,
        v3.version
    );
    stored_as_written("identical update", &v3, &record)?;
    reads_back(t, b, &v3).await?;
    Ok(Outcome::Passed)
}

async fn versions_grow<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let mut obs = ok(t, "create", a.create(&held("a"))).await?;
    let mut seen = vec![obs.version.clone()];
    // Both clients write in turn; each write's version must be newer than all.
    for (n, (lock, holder)) in [(a, "a"), (b, "b"), (b, "b"), (a, "a")]
        .into_iter()
        .enumerate()
    {
        let what = format!("update {}", n + 1);
        obs = update_ok(t, &what, lock, &obs.version, &held(holder)).await?;
        newer_than_all(&what, &obs.version, &seen)?;
        seen.push(obs.version.clone());
    }
    reads_back(t, a, &obs).await?;
    Ok(Outcome::Passed)
}

async fn versions_grow_across_recreation<H: Harness>(
    t: &Timeouts,
    h: &mut H,
    a: &H::Lock,
    b: &H::Lock,
) -> CaseResult {
    let v1 = ok(t, "create", a.create(&held("a"))).await?;
    let v2 = update_ok(t, "update", a, &v1.version, &held("a")).await?;
    delete_or_skip!(h);
    let before = [v1.version, v2.version];
    let again = ok(t, "re-create after the deletion", b.create(&held("b"))).await?;
    newer_than_all("the re-create after the deletion", &again.version, &before)?;
    let next = update_ok(
        t,
        "update of the re-created lock",
        b,
        &again.version,
        &held("b"),
    )
    .await?;
    newer_than_all("the update of the re-created lock", &next.version, &before)?;
    reads_back(t, a, &next).await?;
    Ok(Outcome::Passed)
}

async fn stamps_are_stamped_or_kept<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let kept = WallTime::new(1_600_000_000, 0);
    let mut record = held("a");
    record.acquire_time = Stamp::At(kept);
    record.renew_time = Stamp::Now;
    let v1 = ok(t, "create", a.create(&record)).await?;
    ensure!(
        v1.record.acquire_time == Stamp::At(kept),
        "Stamp::At was not kept: {:?}",
        v1.record.acquire_time
    );
    ensure!(
        matches!(v1.record.renew_time, Stamp::At(_)),
        "Stamp::Now was not stamped: {:?}",
        v1.record.renew_time
    );
    reads_back(t, b, &v1).await?;

    record.acquire_time = Stamp::Now;
    record.renew_time = Stamp::Unset;
    let v2 = update_ok(t, "update", a, &v1.version, &record).await?;
    ensure!(
        matches!(v2.record.acquire_time, Stamp::At(_)),
        "Stamp::Now was not stamped: {:?}",
        v2.record.acquire_time
    );
    ensure!(
        v2.record.renew_time == Stamp::Unset,
        "Stamp::Unset did not stay unset: {:?}",
        v2.record.renew_time
    );
    reads_back(t, b, &v2).await?;
    Ok(Outcome::Passed)
}

async fn release_round_trips<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let mut record = held("a");
    record.transitions = 3;
    let v1 = ok(t, "create", a.create(&record)).await?;
    let release = LockRecord {
        holder: "".into(),
        lease_duration_secs: Some(1),
        ..record
    };
    let v2 = update_ok(t, "release", a, &v1.version, &release).await?;
    stored_as_written("release", &v2, &release)?;
    ensure!(
        !v2.record.is_held(),
        "a released lock reads as held by {:?}",
        v2.record.holder
    );
    reads_back(t, b, &v2).await?;
    // The empty holder is acquirable by compare-and-swap.
    let v3 = update_ok(t, "acquire after release", b, &v2.version, &held("b")).await?;
    reads_back(t, a, &v3).await?;
    Ok(Outcome::Passed)
}

async fn transitions_round_trip<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let mut record = held("a");
    record.transitions = 0;
    let mut obs = ok(t, "create", a.create(&record)).await?;
    stored_as_written("create", &obs, &record)?;
    for n in [1, MAX_TRANSITIONS - 1, MAX_TRANSITIONS, 7] {
        record.transitions = n;
        obs = round_trips(t, "update", (a, b), Some(&obs.version), &record).await?;
    }
    Ok(Outcome::Passed)
}

async fn absurd_values_read_tolerantly<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let mut obs = ok(t, "create", a.create(&held("a"))).await?;
    for duration in [
        Some(0),
        Some(-5),
        Some(i64::from(i32::MAX)),
        Some(10_000_000_000),
        None,
    ] {
        for holder in ["a", ""] {
            let record = LockRecord {
                holder: holder.into(),
                lease_duration_secs: duration,
                ..held("a")
            };
            let doing = format!("writing lease_duration_secs {duration:?} with holder {holder:?}");
            update_or_invalid(t, a, b, &mut obs, &record, &doing, |stored| {
                ensure!(
                    stored.holder == record.holder,
                    "holder {holder:?} was stored as {:?}",
                    stored.holder
                );
                Ok(())
            })
            .await?;
        }
    }
    Ok(Outcome::Passed)
}

async fn sparse_records_read_tolerantly<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let empty = LockRecord::default();
    let holder_only = LockRecord {
        holder: "a".into(),
        ..LockRecord::default()
    };
    // The first write creates the lock; if a backend refuses the empty record, a
    // plain one stands in so that the update of the sparse ones is still tried.
    let answer = call(t, "create", a.create(&empty)).await?;
    let created = accepted_or_invalid(t, b, answer, "creating {}", |stored| {
        ensure!(
            stored.holder.is_empty() && stored.transitions == 0,
            "an empty record was stored as {stored:?}"
        );
        Ok(())
    })
    .await?;
    let mut obs = match created {
        Some(created) => created,
        None => ok(t, "create", a.create(&held("a"))).await?,
    };
    for record in [holder_only, empty] {
        let doing = format!("writing {record:?}");
        update_or_invalid(t, a, b, &mut obs, &record, &doing, |stored| {
            ensure!(
                stored.holder == record.holder && stored.transitions == 0,
                "{record:?} was stored as {stored:?}"
            );
            Ok(())
        })
        .await?;
    }
    Ok(Outcome::Passed)
}

async fn handover_round_trips<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let mut record = held("a");
    record.priority = Some(7);
    record.handover = Some(Handover {
        to: Arc::from("b"),
        priority: Some(9),
    });
    let mut obs = round_trips(t, "create", (a, b), None, &record).await?;
    for (priority, handover) in [
        (
            Some(-3),
            Some(Handover {
                to: Arc::from("c"),
                priority: None,
            }),
        ),
        (None, None),
    ] {
        record.priority = priority;
        record.handover = handover;
        obs = round_trips(t, "update", (a, b), Some(&obs.version), &record).await?;
    }
    Ok(Outcome::Passed)
}

async fn every_field_round_trips<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let full = LockRecord {
        holder: "a".into(),
        lease_duration_secs: Some(15),
        acquire_time: Stamp::At(WallTime::new(1_700_000_000, 0)),
        renew_time: Stamp::At(WallTime::new(1_700_000_007, 0)),
        transitions: 5,
        priority: Some(3),
        handover: Some(Handover {
            to: Arc::from("b"),
            priority: Some(4),
        }),
        strategy: Some("OldestEmulationVersion".into()),
    };
    // Every field changed (a handover without a priority is Kubernetes'
    // `preferredHolder`), then every optional field removed.
    let changed = LockRecord {
        holder: "b".into(),
        lease_duration_secs: Some(30),
        acquire_time: Stamp::At(WallTime::new(1_700_000_100, 0)),
        renew_time: Stamp::At(WallTime::new(1_700_000_200, 0)),
        transitions: 6,
        priority: Some(-2),
        handover: Some(Handover {
            to: Arc::from("c"),
            priority: None,
        }),
        strategy: Some("example.com/custom-strategy".into()),
    };
    let bare = LockRecord {
        holder: "c".into(),
        lease_duration_secs: None,
        acquire_time: Stamp::Unset,
        renew_time: Stamp::Unset,
        transitions: 7,
        priority: None,
        handover: None,
        strategy: None,
    };
    let mut obs = round_trips(t, "create with every field", (a, b), None, &full).await?;
    for (what, record) in [
        ("update changing every field", &changed),
        ("update removing the optional fields", &bare),
        ("update setting every field again", &full),
    ] {
        obs = round_trips(t, what, (a, b), Some(&obs.version), record).await?;
    }
    Ok(Outcome::Passed)
}

/// Awaits the watch's next event, which must be `expected`.
async fn next_is(
    t: &Timeouts,
    watch: &mut WatchStream,
    expected: &WatchEvent,
    what: &str,
) -> Result<(), String> {
    let got = within(t.watch, watch.next()).await.ok_or_else(|| {
        format!(
            "{what}: no watch event within {:?} (the stream is still open), expected {expected:?}",
            t.watch
        )
    })?;
    match got {
        Some(Ok(ev)) if ev == *expected => Ok(()),
        None => Err(format!(
            "{what}: the watch stream ended, expected {expected:?}"
        )),
        Some(Err(e)) => Err(format!(
            "{what}: the watch yielded the error {e:?}, expected {expected:?}"
        )),
        Some(Ok(WatchEvent::Changed(got))) => match expected {
            WatchEvent::Changed(want) => Err(format!(
                "{what}: the watch yielded another change: {}",
                diff::observation_diff(want, &got, ("expected", "yielded"))
            )),
            _ => Err(format!(
                "{what}: the watch yielded {got:?}, expected {expected:?}"
            )),
        },
        Some(Ok(other)) => Err(format!(
            "{what}: the watch yielded {other:?}, expected {expected:?}"
        )),
    }
}

async fn watch_delivers_in_order<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let v1 = ok(t, "create", a.create(&held("a"))).await?;
    let Some(mut watch) = b.watch(None) else {
        return Ok(Outcome::Skipped("the lock has no watch"));
    };
    next_is(
        t,
        &mut watch,
        &WatchEvent::Changed(v1.clone()),
        "the current state first",
    )
    .await?;
    let v2 = update_ok(t, "update", a, &v1.version, &held("a")).await?;
    let v3 = update_ok(t, "update", a, &v2.version, &held("a")).await?;
    next_is(t, &mut watch, &WatchEvent::Changed(v2), "first change").await?;
    next_is(t, &mut watch, &WatchEvent::Changed(v3), "second change").await?;
    Ok(Outcome::Passed)
}

async fn watch_resumes_from_version<L: Lock>(t: &Timeouts, a: &L, b: &L) -> CaseResult {
    let v1 = ok(t, "create", a.create(&held("a"))).await?;
    let v2 = update_ok(t, "update", a, &v1.version, &held("a")).await?;
    let v3 = update_ok(t, "update", a, &v2.version, &held("a")).await?;
    let Some(mut watch) = b.watch(Some(&v1.version)) else {
        return Ok(Outcome::Skipped("the lock has no watch"));
    };
    next_is(
        t,
        &mut watch,
        &WatchEvent::Changed(v2),
        "the first change after the version",
    )
    .await?;
    next_is(
        t,
        &mut watch,
        &WatchEvent::Changed(v3.clone()),
        "the second change after the version",
    )
    .await?;
    let v4 = update_ok(t, "update", a, &v3.version, &held("a")).await?;
    next_is(
        t,
        &mut watch,
        &WatchEvent::Changed(v4),
        "a change after the resumption",
    )
    .await?;
    Ok(Outcome::Passed)
}

async fn watch_sees_deletion<H: Harness>(
    t: &Timeouts,
    h: &mut H,
    a: &H::Lock,
    b: &H::Lock,
) -> CaseResult {
    let v1 = ok(t, "create", a.create(&held("a"))).await?;
    let Some(mut watch) = b.watch(Some(&v1.version)) else {
        return Ok(Outcome::Skipped("the lock has no watch"));
    };
    delete_or_skip!(h);
    let deleted_at = match within(t.watch, watch.next()).await {
        Some(Some(Ok(WatchEvent::Deleted(at)))) => at,
        other => {
            return Err(format!(
                "the deletion: the watch yielded {other:?}, expected Deleted"
            ));
        }
    };
    // A deletion's version, where the lock tells it, comes after the record it
    // deleted: the elector ignores news older than it.
    if let Some(d) = &deleted_at {
        ensure!(
            d.is_newer_than(&v1.version),
            "the deletion's version {d:?} is not newer than the deleted record's {:?}",
            v1.version
        );
    }
    let again = ok(t, "re-create", a.create(&held("a"))).await?;
    ensure!(
        again.version != v1.version,
        "the re-created lock repeats the version {:?}",
        v1.version
    );
    if let Some(d) = &deleted_at {
        ensure!(
            again.version.is_newer_than(d),
            "the re-created lock's version {:?} is not newer than the deletion's {d:?}",
            again.version
        );
    }
    next_is(
        t,
        &mut watch,
        &WatchEvent::Changed(again),
        "the re-creation",
    )
    .await?;
    Ok(Outcome::Passed)
}
