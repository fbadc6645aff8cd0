//! The shared store: one lock record, a store-global version counter, the change
//! history that watches replay, the write log, and each client's fault state.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::Duration;

use election_core::{LockError, LockRecord, Observation, Stamp, Version, WallTime, WatchEvent};

use crate::clock::{Sleeper, WallClock, async_io_sleeper, system_clock};
use crate::faults::{CallStats, ClientFaults, FaultHandle, PartitionMode};
use crate::lock::MemoryLock;
use crate::log::{HUMAN, LoggedWrite, WriteKind};

/// How many changes a store keeps for watches to resume from, unless told otherwise.
pub const DEFAULT_HISTORY: usize = 1024;

/// A linearizable compare-and-swap store holding one lock, shared by many clients
/// (electors) of one process. Cloning shares the store.
///
/// Versions are decimal strings of a store-global counter that grows by one per
/// write (creates, updates, human edits and deletes alike) and never resets, so a
/// deleted and re-created lock never repeats a version. Every write, even of
/// identical bytes, takes a new version (FAULTS R10).
///
/// Faults are per client: see [`MemoryStore::faults`] and the [`crate::faults`]
/// module. They are drawn from generators seeded by [`MemoryStore::with_seed`].
#[derive(Clone)]
pub struct MemoryStore {
    pub(crate) shared: Arc<Shared>,
}

/// The store behind its lock.
pub(crate) struct Shared {
    state: Mutex<State>,
}

pub(crate) struct State {
    pub(crate) current: Option<Observation>,
    /// The last version issued.
    pub(crate) counter: u64,
    /// Recent changes, oldest first, for watches to replay.
    pub(crate) history: VecDeque<(u64, WatchEvent)>,
    history_cap: usize,
    /// Every change with a version above `floor` is in `history`.
    pub(crate) floor: u64,
    /// The most recent writes, oldest first.
    log: VecDeque<LoggedWrite>,
    /// How many writes the log keeps.
    log_cap: usize,
    /// The sequence number of the last write.
    log_seq: u64,
    clock: WallClock,
    sleeper: Sleeper,
    seed: u64,
    clients: HashMap<Arc<str>, ClientFaults>,
    /// Watches waiting for a change, by watch id.
    watchers: HashMap<u64, Waker>,
    next_watch_id: u64,
    /// Wakers to wake once the lock is released.
    to_wake: Vec<Waker>,
}

impl Shared {
    /// Runs `f` on the state, then wakes the watches it asked to wake, outside the lock.
    pub(crate) fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut guard = self.lock();
        let out = f(&mut guard);
        let wake = std::mem::take(&mut guard.to_wake);
        drop(guard);
        wake.into_iter().for_each(Waker::wake);
        out
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half-written (each
        // change is a few assignments), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn with_client<T>(&self, client: &str, f: impl FnOnce(&mut ClientFaults) -> T) -> T {
        self.with_state(|st| f(st.client(client)))
    }

    pub(crate) fn set_partition(&self, client: &str, mode: Option<PartitionMode>) {
        self.with_state(|st| {
            let c = st.client(client);
            c.partition = mode;
            if mode == Some(PartitionMode::Refused) {
                c.watch_generation += 1;
            }
            st.wake_all_watchers();
        });
    }

    pub(crate) fn break_watches(&self, client: &str) {
        self.with_state(|st| {
            st.client(client).watch_generation += 1;
            st.wake_all_watchers();
        });
    }

    pub(crate) fn sleeper(&self) -> Sleeper {
        self.lock().sleeper.clone()
    }
}

impl State {
    pub(crate) fn client(&mut self, name: &str) -> &mut ClientFaults {
        let seed = self.seed;
        self.clients
            .entry(Arc::from(name))
            .or_insert_with(|| ClientFaults::new(seed, name))
    }

    pub(crate) fn get(&self) -> Result<Observation, LockError> {
        self.current.clone().ok_or(LockError::NotFound)
    }

    /// A read served from the version before the current one, if the history
    /// still has it; else the current state.
    pub(crate) fn stale_get(&self) -> Result<Observation, LockError> {
        let n = self.history.len();
        let current_is_last = self.history.back().is_some_and(|(v, _)| *v == self.counter);
        match n.checked_sub(2).and_then(|i| self.history.get(i)) {
            Some((_, WatchEvent::Changed(obs))) if current_is_last => Ok(obs.clone()),
            Some((_, WatchEvent::Deleted(_))) if current_is_last => Err(LockError::NotFound),
            _ => self.get(),
        }
    }

    pub(crate) fn create(
        &mut self,
        who: &str,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        if self.current.is_some() {
            return Err(LockError::AlreadyExists);
        }
        Ok(self.commit_record(who, WriteKind::Create, record))
    }

    pub(crate) fn update(
        &mut self,
        who: &str,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        match &self.current {
            None => Err(LockError::NotFound),
            Some(cur) if cur.version != *expected => Err(LockError::Conflict),
            Some(_) => Ok(self.commit_record(who, WriteKind::Update, record)),
        }
    }

    /// Stores `record` at a new version, stamped with the write's wall time.
    fn commit_record(&mut self, who: &str, kind: WriteKind, record: &LockRecord) -> Observation {
        let wall = self.next_version();
        let obs = Observation::new(self.counter.to_string(), stamp(record, wall));
        self.current = Some(obs.clone());
        self.record_change(who, kind, wall, WatchEvent::Changed(obs.clone()));
        obs
    }

    /// Removes the lock, taking a version.
    fn commit_delete(&mut self, who: &str) {
        let wall = self.next_version();
        self.current = None;
        let version = Version::new(self.counter.to_string());
        self.record_change(
            who,
            WriteKind::Delete,
            wall,
            WatchEvent::Deleted(Some(version)),
        );
    }

    /// Issues the next version; returns the wall time of the write.
    fn next_version(&mut self) -> WallTime {
        self.counter = self.counter.saturating_add(1);
        (self.clock)()
    }

    /// Appends the change to the history and the log, and wakes every waiting watch.
    fn record_change(&mut self, who: &str, kind: WriteKind, wall: WallTime, event: WatchEvent) {
        let record = match &event {
            WatchEvent::Changed(obs) => Some(obs.record.clone()),
            WatchEvent::Deleted(_) => None,
        };
        self.history.push_back((self.counter, event));
        self.trim_history();
        self.log_seq += 1;
        self.log.push_back(LoggedWrite {
            seq: self.log_seq,
            client: Arc::from(who),
            kind,
            wall,
            version: Version::new(self.counter.to_string()),
            record,
        });
        while self.log.len() > self.log_cap {
            self.log.pop_front();
        }
        self.wake_all_watchers();
    }

    fn trim_history(&mut self) {
        while self.history.len() > self.history_cap {
            if let Some((v, _)) = self.history.pop_front() {
                self.floor = v;
            }
        }
    }

    fn wake_all_watchers(&mut self) {
        let wakers = self.watchers.drain().map(|(_, w)| w);
        self.to_wake.extend(wakers);
    }

    pub(crate) fn new_watch_id(&mut self) -> u64 {
        self.next_watch_id += 1;
        self.next_watch_id
    }

    pub(crate) fn park_watch(&mut self, id: u64, waker: &Waker) {
        self.watchers.insert(id, waker.clone());
    }

    pub(crate) fn unpark_watch(&mut self, id: u64) {
        self.watchers.remove(&id);
    }

    /// The lock as it is now, as a watch event.
    pub(crate) fn current_event(&self) -> WatchEvent {
        match &self.current {
            Some(obs) => WatchEvent::Changed(obs.clone()),
            // Absent since its deletion at the current version (none: never created).
            None => WatchEvent::Deleted(
                (self.counter > 0).then(|| Version::new(self.counter.to_string())),
            ),
        }
    }
}

/// The record as stored: `Stamp::Now` becomes the write's wall time; `At` and
/// `Unset` are kept.
fn stamp(record: &LockRecord, wall: WallTime) -> LockRecord {
    let fix = |s: Stamp| if s == Stamp::Now { Stamp::At(wall) } else { s };
    let mut r = record.clone();
    r.acquire_time = fix(r.acquire_time);
    r.renew_time = fix(r.renew_time);
    r
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store (no lock) with seed 0, the system wall clock, `async-io`'s
    /// timer for latency, and [`DEFAULT_HISTORY`] changes kept for watches.
    pub fn new() -> Self {
        MemoryStore::with_seed(0)
    }

    /// An empty store whose fault draws derive from `seed`: print it in a failing
    /// test and the run replays.
    pub fn with_seed(seed: u64) -> Self {
        MemoryStore {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    current: None,
                    counter: 0,
                    history: VecDeque::new(),
                    history_cap: DEFAULT_HISTORY,
                    floor: 0,
                    log: VecDeque::new(),
                    log_cap: usize::MAX,
                    log_seq: 0,
                    clock: system_clock(),
                    sleeper: async_io_sleeper(),
                    seed,
                    clients: HashMap::new(),
                    watchers: HashMap::new(),
                    next_watch_id: 0,
                    to_wake: Vec::new(),
                }),
            }),
        }
    }

    /// Uses `sleep` to wait out injected latency, e.g. `tokio::time::sleep` so that
    /// tests with paused time run in virtual time.
    #[must_use]
    pub fn with_sleeper<F, Fut>(self, sleep: F) -> Self
    where
        F: Fn(Duration) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.shared.with_state(|st| {
            st.sleeper = Arc::new(move |d| Box::pin(sleep(d)));
        });
        self
    }

    /// Keeps the last `changes` changes for watches to resume from; a watch asked
    /// to resume from an older version gets the current state first.
    #[must_use]
    pub fn with_history(self, changes: usize) -> Self {
        self.shared.with_state(|st| {
            st.history_cap = changes;
            st.trim_history();
        });
        self
    }

    /// Keeps only the last `writes` writes in the write log (it is unbounded by
    /// default); sequence numbers keep counting. For long runs and benchmarks.
    #[must_use]
    pub fn with_write_log_capacity(self, writes: usize) -> Self {
        self.shared.with_state(|st| {
            st.log_cap = writes;
            while st.log.len() > writes {
                st.log.pop_front();
            }
        });
        self
    }

    /// The seed fault draws derive from.
    pub fn seed(&self) -> u64 {
        self.shared.with_state(|st| st.seed)
    }

    /// A handle for the client `name`; handles with the same name share their faults.
    pub fn client(&self, name: &str) -> MemoryLock {
        self.shared.with_client(name, |_| ());
        MemoryLock::new(self.shared.clone(), Arc::from(name))
    }

    /// The fault controls of the client `client`.
    pub fn faults(&self, client: &str) -> FaultHandle {
        FaultHandle {
            shared: self.shared.clone(),
            client: Arc::from(client),
        }
    }

    /// Partitions `client` with [`PartitionMode::Refused`]: its calls fail at once
    /// with a transient "connection refused" and its watches end.
    pub fn partition(&self, client: &str) {
        self.faults(client).partition(PartitionMode::Refused);
    }

    /// Partitions `client` as `mode` says.
    pub fn partition_with(&self, client: &str, mode: PartitionMode) {
        self.faults(client).partition(mode);
    }

    /// Heals the partition of `client`.
    pub fn heal(&self, client: &str) {
        self.faults(client).heal();
    }

    /// How many calls `client` started.
    pub fn calls(&self, client: &str) -> CallStats {
        self.faults(client).calls()
    }

    /// The lock as it is, or `None` if absent. Not a client call: no faults, not counted.
    pub fn current(&self) -> Option<Observation> {
        self.shared.with_state(|st| st.current.clone())
    }

    /// The last version issued (0 before the first write).
    pub fn last_version(&self) -> u64 {
        self.shared.with_state(|st| st.counter)
    }

    /// Every write applied so far, oldest first (the most recent ones only, if
    /// the log is capped with [`MemoryStore::with_write_log_capacity`]).
    pub fn write_log(&self) -> Vec<LoggedWrite> {
        self.shared
            .with_state(|st| st.log.iter().cloned().collect())
    }

    /// The logged writes with a sequence number above `seq`.
    pub fn write_log_since(&self, seq: u64) -> Vec<LoggedWrite> {
        self.shared.with_state(|st| {
            let newer = st.log.partition_point(|w| w.seq <= seq);
            st.log.range(newer..).cloned().collect()
        })
    }

    /// The sequence number of the last write (0 before the first).
    pub fn last_seq(&self) -> u64 {
        self.shared.with_state(|st| st.log_seq)
    }

    /// A human edit: stores `record` at a new version, creating the lock if it is
    /// absent. `Stamp::Now` fields get the store's wall time.
    pub fn set_record(&self, record: LockRecord) -> Observation {
        self.shared
            .with_state(|st| st.commit_record(HUMAN, WriteKind::SetRecord, &record))
    }

    /// A human edit: deletes the lock (taking a version, like an etcd delete).
    /// Returns whether there was a lock to delete.
    pub fn delete(&self) -> bool {
        self.shared.with_state(|st| {
            if st.current.is_none() {
                return false;
            }
            st.commit_delete(HUMAN);
            true
        })
    }

    /// Stamps writes with `clock` from now on (see also [`crate::ManualClock`]).
    /// The clock is called with the store locked: it must not call the store.
    pub fn set_wall_clock(&self, clock: impl Fn() -> WallTime + Send + Sync + 'static) {
        self.shared.with_state(|st| st.clock = Arc::new(clock));
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.shared.with_state(|st| {
            f.debug_struct("MemoryStore")
                .field("current", &st.current)
                .field("last_version", &st.counter)
                .field("writes", &st.log_seq)
                .field("seed", &st.seed)
                .finish_non_exhaustive()
        })
    }
}
