//! The lock conformance suite against `MemoryStore`, on two executors.

use lock_memory::conformance::{
    Case, Harness, MemoryHarness, Outcome, Timeouts, run_all, run_all_with, run_case,
};

#[test]
fn memory_store_passes_every_case_on_futures_lite() {
    let report = futures_lite::future::block_on(run_all(&mut MemoryHarness::new()));
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed().len(), Case::ALL.len(), "{report}");
}

#[tokio::test(flavor = "current_thread")]
async fn memory_store_passes_every_case_on_tokio() {
    let report = run_all(&mut MemoryHarness::new()).await;
    assert!(report.is_success(), "{report}");
    assert_eq!(report.passed().len(), Case::ALL.len(), "{report}");
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
use std::time::Duration;

use election_core::{
    Config, LeadershipChange, Lock, LockError, LockRecord, LockTask, Observation, Stamp, Version,
    WatchStream,
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
}

struct Flawed {
    inner: MemoryLock,
    store: MemoryStore,
    flaw: Flaw,
}

impl Flawed {
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
        r
    }
}

impl Lock for Flawed {
    async fn get(&self) -> Result<Observation, LockError> {
        if self.flaw == Flaw::GetHangs {
            std::future::pending::<()>().await;
        }
        self.inner.get().await
    }

    async fn create(&self, record: &LockRecord) -> Result<Observation, LockError> {
        let r = self.mangle(record);
        if let (Flaw::CreateOverwrites, Some(cur)) = (self.flaw, self.store.current()) {
            return self.inner.update(&cur.version, &r).await;
        }
        self.inner.create(&r).await
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        let r = self.mangle(record);
        let current = self.store.current();
        match (self.flaw, current) {
            (Flaw::BlindUpdate, Some(cur)) => return self.inner.update(&cur.version, &r).await,
            (Flaw::CreateOnUpdate, None) => return self.inner.create(&r).await,
            (Flaw::SkipIdenticalWrites, Some(cur))
                if cur.version == *expected && cur.record == r =>
            {
                return Ok(cur);
            }
            _ => {}
        }
        self.inner.update(expected, &r).await
    }

    fn watch(&self, from: Option<&Version>) -> Option<WatchStream> {
        match self.flaw {
            Flaw::NoWatch => None,
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
}

impl Harness for FlawedHarness {
    type Lock = Flawed;

    async fn fresh(&mut self) -> (Flawed, Flawed) {
        let store = MemoryStore::new();
        let make = |name: &str| Flawed {
            inner: store.client(name),
            store: store.clone(),
            flaw: self.flaw,
        };
        let pair = (make("a"), make("b"));
        self.store = Some(store);
        pair
    }

    async fn delete(&mut self) -> bool {
        self.store.as_ref().is_some_and(MemoryStore::delete)
    }
}

/// The names of the cases a lock with `flaw` fails, and of those it skips.
fn verdict(flaw: Flaw) -> (BTreeSet<&'static str>, BTreeSet<&'static str>) {
    let quick = Timeouts {
        call: Duration::from_millis(30),
        watch: Duration::from_millis(30),
    };
    let mut harness = FlawedHarness { flaw, store: None };
    let report = futures_lite::future::block_on(run_all_with(&mut harness, quick));
    let failed = report.failures().iter().map(|f| f.case.name()).collect();
    let skipped = report.skipped().iter().map(|(c, _)| c.name()).collect();
    (failed, skipped)
}

fn set(names: &[&'static str]) -> BTreeSet<&'static str> {
    names.iter().copied().collect()
}

#[test]
fn the_suite_catches_a_blind_update() {
    assert_eq!(
        verdict(Flaw::BlindUpdate).0,
        set(&["stale_version_conflicts"])
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
        set(&["handover_round_trips"])
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

struct Wrapper<L> {
    inner: L,
    drops: Drops,
}

impl<L: Lock> Lock for Wrapper<L> {
    async fn get(&self) -> Result<Observation, LockError> {
        self.inner.get().await
    }

    async fn create(&self, record: &LockRecord) -> Result<Observation, LockError> {
        self.inner.create(record).await
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        self.inner.update(expected, record).await
    }

    fn watch(&self, from: Option<&Version>) -> Option<WatchStream> {
        match self.drops {
            Drops::Watch => None,
            _ => self.inner.watch(from),
        }
    }

    fn describe(&self) -> String {
        format!("wrapped {}", self.inner.describe())
    }

    fn leadership_changed(&self, identity: &str, change: LeadershipChange) -> Option<LockTask> {
        match self.drops {
            Drops::LeadershipChanged => None,
            Drops::LeadershipTask => {
                drop(self.inner.leadership_changed(identity, change));
                Some(Box::pin(async {}))
            }
            _ => self.inner.leadership_changed(identity, change),
        }
    }

    fn configure(&self, config: &Config) {
        if self.drops != Drops::Configure {
            self.inner.configure(config);
        }
    }
}

fn check(drops: Drops) -> Result<(), WrapperFailure> {
    futures_lite::future::block_on(check_wrapper(|inner| Wrapper { inner, drops }))
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
