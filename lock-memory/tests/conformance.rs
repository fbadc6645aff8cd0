//! The lock conformance suite against `MemoryStore`, on two executors.

use lock_memory::conformance::{
    Case, Harness, MemoryHarness, Outcome, Report, Timeouts, run_all, run_all_with, run_case,
};

#[test]
fn memory_store_passes_every_case_on_futures_lite() {
    let report = futures_lite::future::block_on(run_all(&mut MemoryHarness::new()));
    assert!(report.is_complete(), "{report}");
    assert_eq!(report.passed(), Case::ALL, "{report}");
}

#[tokio::test(flavor = "current_thread")]
async fn memory_store_passes_every_case_on_tokio() {
    let report = run_all(&mut MemoryHarness::new()).await;
    assert!(report.is_complete(), "{report}");
    assert_eq!(report.passed(), Case::ALL, "{report}");
}

#[test]
fn cases_run_one_by_one() {
    let mut harness = MemoryHarness::new();
    for case in Case::ALL {
        let result = futures_lite::future::block_on(run_case(&mut harness, case));
        assert_eq!(result, Ok(Outcome::Passed), "{case}");
    }
}

// Negative controls: a lock with one flaw must fail the case that looks for it,
// so that the suite is known to catch what it claims to.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use election_core::{
    Config, Layer, Layered, LeadershipChange, Lock, LockError, LockRecord, LockTask, Observation,
    Stamp, Version, WatchStream,
};
use futures_lite::StreamExt;
use lock_memory::{MemoryLock, MemoryStore};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flaw {
    BlindUpdate,
    CreateOverwrites,
    CreateOnUpdate,
    SkipIdenticalWrites,
    DropStamps,
    DropHandover,
    NoWatch,
    WatchSkips,
    GetHangs,
    /// Checks the version, awaits something, then writes: not atomic.
    NonAtomicUpdate,
    /// Versions that count down (and no watch, which would catch it too).
    ShrinkingVersions,
    /// Versions that start over after a deletion (and no watch).
    RestartingVersions,
    /// `strategy` is not stored.
    DropStrategy,
}

struct Flawed {
    inner: MemoryLock,
    store: MemoryStore,
    flaw: Flaw,
    /// The store's version at the last deletion ([`Flaw::RestartingVersions`]).
    offset: Arc<AtomicU64>,
}

/// [`Flaw::ShrinkingVersions`] shows the store's version `n` as `FLIP - n`.
const FLIP: u64 = 1_000_000_000;

impl Flawed {
    /// The version the flawed lock shows for the store's `v` (`inward`: the
    /// store's for the one shown).
    fn map_version(&self, v: &Version, inward: bool) -> Version {
        let Ok(n) = v.as_str().parse::<u64>() else {
            return v.clone();
        };
        let offset = self.offset.load(Ordering::Relaxed);
        let mapped = match (self.flaw, inward) {
            (Flaw::ShrinkingVersions, _) => FLIP.saturating_sub(n),
            (Flaw::RestartingVersions, false) => n.saturating_sub(offset),
            (Flaw::RestartingVersions, true) => n + offset,
            _ => n,
        };
        Version::new(mapped.to_string())
    }

    fn shown(&self, result: Result<Observation, LockError>) -> Result<Observation, LockError> {
        result.map(|mut obs| {
            obs.version = self.map_version(&obs.version, false);
            obs
        })
    }

    fn mangle(&self, record: &LockRecord) -> LockRecord {
        let mut r = record.clone();
        if self.flaw == Flaw::DropStamps {
            for s in [&mut r.acquire_time, &mut r.renew_time] {
                if *s == Stamp::Now {
                    *s = Stamp::Unset;
                }
            }
        }
        if self.flaw == Flaw::DropHandover {
            r.handover = None;
            r.priority = None;
        }
        if self.flaw == Flaw::DropStrategy {
            r.strategy = None;
        }
        r
    }
}

impl Lock for Flawed {
    async fn get(&self) -> Result<Observation, LockError> {
        if self.flaw == Flaw::GetHangs {
            std::future::pending::<()>().await;
        }
        self.shown(self.inner.get().await)
    }

    async fn create(&self, record: &LockRecord) -> Result<Observation, LockError> {
        let r = self.mangle(record);
        if let (Flaw::CreateOverwrites, Some(cur)) = (self.flaw, self.store.current()) {
            return self.inner.update(&cur.version, &r).await;
        }
        self.shown(self.inner.create(&r).await)
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        let r = self.mangle(record);
        let expected = &self.map_version(expected, true);
        let current = self.store.current();
        match (self.flaw, current) {
            (Flaw::BlindUpdate, Some(cur)) => return self.inner.update(&cur.version, &r).await,
            (Flaw::CreateOnUpdate, None) => return self.inner.create(&r).await,
            (Flaw::SkipIdenticalWrites, Some(cur))
                if cur.version == *expected && cur.record == r =>
            {
                return Ok(cur);
            }
            (Flaw::NonAtomicUpdate, Some(cur)) => {
                if cur.version != *expected {
                    return Err(LockError::Conflict);
                }
                futures_lite::future::yield_now().await;
                let now = self.store.current().ok_or(LockError::NotFound)?;
                return self.inner.update(&now.version, &r).await;
            }
            _ => {}
        }
        self.shown(self.inner.update(expected, &r).await)
    }

    fn watch(&self, from: Option<&Version>) -> Option<WatchStream> {
        match self.flaw {
            Flaw::NoWatch | Flaw::ShrinkingVersions | Flaw::RestartingVersions => None,
            Flaw::WatchSkips => {
                let inner = self.inner.watch(from)?;
                Some(Box::pin(
                    inner
                        .enumerate()
                        .filter(|(i, _)| i % 2 == 0)
                        .map(|(_, e)| e),
                ))
            }
            _ => self.inner.watch(from),
        }
    }

    fn describe(&self) -> String {
        format!("flawed({:?})", self.flaw)
    }

    fn configure(&self, config: &election_core::Config) {
        let _ = config; // nothing to configure
    }

    fn leadership_changed(&self, identity: &str, change: LeadershipChange) -> Option<LockTask> {
        self.inner.leadership_changed(identity, change)
    }
}

struct FlawedHarness {
    flaw: Flaw,
    store: Option<MemoryStore>,
    offset: Arc<AtomicU64>,
}

impl Harness for FlawedHarness {
    type Lock = Flawed;

    async fn fresh(&mut self) -> (Flawed, Flawed) {
        let store = MemoryStore::new();
        self.offset.store(0, Ordering::Relaxed);
        let make = |name: &str| Flawed {
            inner: store.client(name),
            store: store.clone(),
            flaw: self.flaw,
            offset: self.offset.clone(),
        };
        let pair = (make("a"), make("b"));
        self.store = Some(store);
        pair
    }

    async fn delete(&mut self) -> bool {
        let Some(store) = &self.store else {
            return false;
        };
        self.offset.store(store.last_version(), Ordering::Relaxed);
        store.delete()
    }
}

/// The report of the suite on a lock with `flaw`.
fn report(flaw: Flaw) -> Report {
    let quick = Timeouts {
        call: Duration::from_millis(30),
        watch: Duration::from_millis(30),
    };
    let mut harness = FlawedHarness {
        flaw,
        store: None,
        offset: Arc::default(),
    };
    futures_lite::future::block_on(run_all_with(&mut harness, quick))
}

/// The names of the cases a lock with `flaw` fails, and of those it skips.
fn verdict(flaw: Flaw) -> (BTreeSet<&'static str>, BTreeSet<&'static str>) {
    let report = report(flaw);
    let failed = report.failures().iter().map(|f| f.case.name()).collect();
    let skipped = report.skipped().iter().map(|(c, _)| c.name()).collect();
    (failed, skipped)
}

/// The failure message of `case` for a lock with `flaw`.
fn message(flaw: Flaw, case: Case) -> String {
    let report = report(flaw);
    let failure = report.failures().into_iter().find(|f| f.case == case);
    failure.map_or_else(
        || format!("{case} did not fail:\n{report}"),
        |f| f.expectation.clone(),
    )
}

fn set(names: &[&'static str]) -> BTreeSet<&'static str> {
    names.iter().copied().collect()
}

#[test]
fn the_suite_catches_a_blind_update() {
    assert_eq!(
        verdict(Flaw::BlindUpdate).0,
        set(&[
            "stale_version_conflicts",
            "concurrent_updates_have_one_winner"
        ])
    );
}

#[test]
fn the_suite_catches_a_create_that_overwrites() {
    assert_eq!(
        verdict(Flaw::CreateOverwrites).0,
        set(&["create_race_has_one_winner"])
    );
}

#[test]
fn the_suite_catches_create_on_update() {
    assert_eq!(
        verdict(Flaw::CreateOnUpdate).0,
        set(&["update_absent_is_not_found", "update_deleted_is_not_found"])
    );
}

#[test]
fn r10_the_suite_catches_identical_writes_that_keep_the_version() {
    let (failed, _) = verdict(Flaw::SkipIdenticalWrites);
    assert!(
        failed.contains("versions_change_on_identical_rewrite"),
        "{failed:?}"
    );
}

#[test]
fn the_suite_catches_lost_stamps_and_lost_handover_fields() {
    assert_eq!(
        verdict(Flaw::DropStamps).0,
        set(&["stamps_are_stamped_or_kept"])
    );
    assert_eq!(
        verdict(Flaw::DropHandover).0,
        set(&["handover_round_trips", "every_field_round_trips"])
    );
}

/// docs/faults.md N11: an update that checks the version, awaits, then writes passes
/// every single-writer case; racing updates catch it, and say so.
#[test]
fn n11_the_suite_catches_an_update_that_is_not_atomic() {
    assert_eq!(
        verdict(Flaw::NonAtomicUpdate).0,
        set(&["concurrent_updates_have_one_winner"])
    );
    let msg = message(Flaw::NonAtomicUpdate, Case::ConcurrentUpdatesHaveOneWinner);
    assert!(
        msg.contains("all succeeded") && msg.contains("not atomic"),
        "{msg}"
    );
}

/// docs/faults.md N11: versions that count down, or start over after a deletion, on a
/// lock with no watch (whose cases would catch them too): the growth cases
/// run on every lock, and name the versions.
#[test]
fn the_suite_catches_versions_that_shrink_or_restart_without_a_watch() {
    let watch_cases = set(&[
        "watch_delivers_in_order",
        "watch_resumes_from_version",
        "watch_sees_deletion",
    ]);
    let (failed, skipped) = verdict(Flaw::ShrinkingVersions);
    assert_eq!(
        failed,
        set(&["versions_grow", "versions_grow_across_recreation"])
    );
    assert_eq!(skipped, watch_cases);
    let msg = message(Flaw::ShrinkingVersions, Case::VersionsGrow);
    assert!(msg.contains("is older than"), "{msg}");
    let (failed, skipped) = verdict(Flaw::RestartingVersions);
    assert_eq!(failed, set(&["versions_grow_across_recreation"]));
    assert_eq!(skipped, watch_cases);
}

/// docs/faults.md N11: a lock that does not store `strategy` (coordinated election
/// reads it) fails the case that writes every field, which names the field.
#[test]
fn the_suite_catches_a_dropped_strategy_and_names_the_field() {
    assert_eq!(
        verdict(Flaw::DropStrategy).0,
        set(&["every_field_round_trips"])
    );
    let msg = message(Flaw::DropStrategy, Case::EveryFieldRoundTrips);
    assert!(
        msg.contains("strategy: wrote Some(\"OldestEmulationVersion\"), answered None"),
        "{msg}"
    );
    assert!(
        !msg.contains("holder"),
        "only the field that differs: {msg}"
    );
}

/// A write answer that carries the version it replaced is named as such.
#[test]
fn r10_a_write_answered_with_its_old_version_is_named() {
    let msg = message(
        Flaw::SkipIdenticalWrites,
        Case::VersionsChangeOnIdenticalRewrite,
    );
    assert!(
        msg.contains("the answer carries the version the update replaced"),
        "{msg}"
    );
}

#[test]
fn the_suite_skips_watch_cases_without_a_watch_and_catches_a_lossy_one() {
    let watch_cases = set(&[
        "watch_delivers_in_order",
        "watch_resumes_from_version",
        "watch_sees_deletion",
    ]);
    let (failed, skipped) = verdict(Flaw::NoWatch);
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(skipped, watch_cases);
    // Successful as far as it applies, but not complete.
    let no_watch = report(Flaw::NoWatch);
    assert!(
        no_watch.is_success() && !no_watch.is_complete(),
        "{no_watch}"
    );
    assert!(
        no_watch
            .to_string()
            .contains("skipped watch_delivers_in_order: the lock has no watch")
    );
    assert_eq!(verdict(Flaw::WatchSkips).0, watch_cases);
}

#[test]
fn a14_the_suite_fails_a_hanging_lock_instead_of_stalling() {
    let (failed, _) = verdict(Flaw::GetHangs);
    assert!(failed.contains("get_absent_is_not_found"), "{failed:?}");
    assert!(failed.contains("create_then_get_round_trips"), "{failed:?}");
}

/// A lock whose futures are as large as an HTTP client's can be.
struct Fat(MemoryLock);

const PAD: usize = 64 * 1024;

impl Lock for Fat {
    async fn get(&self) -> Result<Observation, LockError> {
        let pad = [1u8; PAD];
        let r = self.0.get().await;
        std::hint::black_box(&pad);
        r
    }

    async fn create(&self, record: &LockRecord) -> Result<Observation, LockError> {
        let pad = [1u8; PAD];
        let r = self.0.create(record).await;
        std::hint::black_box(&pad);
        r
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        let pad = [1u8; PAD];
        let r = self.0.update(expected, record).await;
        std::hint::black_box(&pad);
        r
    }

    fn watch(&self, from: Option<&Version>) -> Option<WatchStream> {
        self.0.watch(from)
    }

    fn describe(&self) -> String {
        "fat".into()
    }

    fn configure(&self, config: &election_core::Config) {
        let _ = config; // nothing to configure
    }

    fn leadership_changed(&self, identity: &str, change: LeadershipChange) -> Option<LockTask> {
        self.0.leadership_changed(identity, change)
    }
}

#[test]
fn the_suite_keeps_large_backend_futures_off_the_stack() {
    let mut harness = lock_memory::conformance::harness_fn(|| {
        let store = MemoryStore::new();
        (Fat(store.client("a")), Fat(store.client("b")))
    });
    let suite = run_all(&mut harness);
    let size = std::mem::size_of_val(&suite);
    assert!(size < PAD / 4, "the suite's future is {size} bytes");
    let report = futures_lite::future::block_on(suite);
    assert!(report.is_success(), "{report}");
}

// The wrapper check: a wrapper that forwards everything passes; one that drops a
// method (returns the old trait defaults instead of asking the lock it wraps)
// fails on that method.

use lock_memory::conformance::{WrapperFailure, check_wrapper};

/// What a [`Wrapper`] fails to forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Drops {
    Nothing,
    Watch,
    LeadershipChanged,
    /// Calls the wrapped lock's `leadership_changed` but drops its task.
    LeadershipTask,
    /// Keeps the configuration to itself (the trait's default).
    Configure,
}

/// A layer that drops what `Drops` names (its overrides can drop a call; what
/// it does not override, it cannot).
struct Dropping(Drops);

impl<L: Lock> Layer<L> for Dropping {
    fn watch(&self, inner: &L, from: Option<&Version>) -> Option<WatchStream> {
        match self.0 {
            Drops::Watch => None,
            _ => inner.watch(from),
        }
    }

    fn describe(&self, inner: &L) -> String {
        format!("wrapped {}", inner.describe())
    }

    fn leadership_changed(
        &self,
        inner: &L,
        identity: &str,
        change: LeadershipChange,
    ) -> Option<LockTask> {
        match self.0 {
            Drops::LeadershipChanged => None,
            Drops::LeadershipTask => {
                drop(inner.leadership_changed(identity, change));
                Some(Box::pin(async {}))
            }
            _ => inner.leadership_changed(identity, change),
        }
    }

    fn configure(&self, inner: &L, config: &Config) {
        if self.0 != Drops::Configure {
            inner.configure(config);
        }
    }
}

fn check(drops: Drops) -> Result<(), WrapperFailure> {
    futures_lite::future::block_on(check_wrapper(|inner| Layered::new(inner, Dropping(drops))))
}

#[test]
fn the_wrapper_check_passes_a_wrapper_that_forwards_everything() {
    assert_eq!(check(Drops::Nothing), Ok(()));
}

#[test]
fn the_wrapper_check_catches_a_dropped_leadership_change_or_its_task() {
    let e = check(Drops::LeadershipChanged).unwrap_err();
    assert_eq!(e.method, "leadership_changed", "{e}");
    assert!(e.expectation.contains("BecameLeader gave no task"), "{e}");
    let e = check(Drops::LeadershipTask).unwrap_err();
    assert_eq!(e.method, "leadership_changed", "{e}");
    assert!(e.expectation.contains("task_ran: false"), "{e}");
}

#[test]
fn the_wrapper_check_catches_a_dropped_configuration() {
    let e = check(Drops::Configure).unwrap_err();
    assert_eq!(e.method, "configure", "{e}");
    assert!(e.expectation.contains("was given []"), "{e}");
}

#[test]
fn the_wrapper_check_catches_a_dropped_watch() {
    let e = check(Drops::Watch).unwrap_err();
    assert_eq!(e.method, "watch", "{e}");
    assert!(
        e.expectation.contains("no watch through the wrapper"),
        "{e}"
    );
}
