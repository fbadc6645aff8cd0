//! A lock of your own: named records in a `Mutex<HashMap>`, read and written by
//! compare-and-swap, with a watch. It is done when it passes the conformance
//! suite completely, which this program runs: it prints the report and exits 0
//! when every case ran and passed, 1 (naming each failed or skipped case and why)
//! otherwise.
//!
//! ```toml
//! [dev-dependencies]
//! kube-elector = { version = "0.1", features = ["conformance"] }
//! futures-lite = "2"
//! ```
//!
//! Run: `cargo run -p kube-elector --features conformance --example custom_lock`.
//! Then elect on it as on any lock: `Builder::new(MapLock::new(&store, "my-app"),
//! Config::client_go(id)).spawn(runtime)`.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};

use kube_elector::core::{
    Config, LeadershipChange, Lock, LockError, LockRecord, LockTask, Observation, Stamp, Stream,
    Version, WallTime, WatchEvent, WatchStream,
};
use kube_elector::memory::conformance::{Harness, run_all};

/// The store: a record per name, versions from one counter (so that they grow
/// across a deletion and a re-creation), and every change, for watches.
#[derive(Default)]
struct Store(Mutex<State>);

#[derive(Default)]
struct State {
    records: HashMap<String, (u64, LockRecord)>,
    counter: u64,
    /// (name, version, change), oldest first. A real store trims its history;
    /// a watch from a version it no longer has then ends, and is restarted.
    changes: Vec<(String, u64, WatchEvent)>,
    watches: Vec<(String, Weak<Mutex<Feed>>)>,
}

impl State {
    /// Writes (or, with `None`, deletes) `name` at a new version, and tells the
    /// watches of `name`.
    fn commit(&mut self, name: &str, record: Option<LockRecord>) -> Observation {
        self.counter += 1;
        let version = self.counter;
        let observed = Observation::new(version.to_string(), record.clone().unwrap_or_default());
        let event = match record {
            Some(record) => {
                self.records.insert(name.to_owned(), (version, record));
                WatchEvent::Changed(observed.clone())
            }
            None => {
                self.records.remove(name);
                WatchEvent::Deleted(Some(Version::from(version.to_string())))
            }
        };
        self.changes.push((name.to_owned(), version, event.clone()));
        self.watches.retain(|(watched, feed)| match feed.upgrade() {
            Some(feed) => {
                if watched == name {
                    feed.lock().unwrap().push(event.clone());
                }
                true
            }
            None => false, // the watch was dropped
        });
        observed
    }
}

/// The events a watch has not yielded yet, and who to wake for the next one.
#[derive(Default)]
struct Feed {
    events: VecDeque<WatchEvent>,
    waker: Option<Waker>,
}

impl Feed {
    fn push(&mut self, event: WatchEvent) {
        self.events.push_back(event);
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

struct Watch(Arc<Mutex<Feed>>);

impl Stream for Watch {
    type Item = Result<WatchEvent, LockError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut feed = self.0.lock().unwrap();
        match feed.events.pop_front() {
            Some(event) => Poll::Ready(Some(Ok(event))),
            None => {
                feed.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// A handle on one named lock of the store: what the election is given.
#[derive(Clone)]
struct MapLock {
    store: Arc<Store>,
    name: String,
}

impl MapLock {
    fn new(store: &Arc<Store>, name: &str) -> Self {
        MapLock {
            store: Arc::clone(store),
            name: name.to_owned(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.store.0.lock().unwrap()
    }
}

/// The record as stored: `Stamp::Now` becomes the store's time of the write.
fn stamped(record: &LockRecord) -> LockRecord {
    let now = WallTime::now();
    let stamp = |s: Stamp| if s == Stamp::Now { Stamp::At(now) } else { s };
    LockRecord {
        acquire_time: stamp(record.acquire_time),
        renew_time: stamp(record.renew_time),
        ..record.clone()
    }
}

impl Lock for MapLock {
    async fn get(&self) -> Result<Observation, LockError> {
        let state = self.state();
        let (version, record) = state.records.get(&self.name).ok_or(LockError::NotFound)?;
        Ok(Observation::new(version.to_string(), record.clone()))
    }

    async fn create(&self, record: &LockRecord) -> Result<Observation, LockError> {
        let mut state = self.state();
        if state.records.contains_key(&self.name) {
            return Err(LockError::AlreadyExists);
        }
        Ok(state.commit(&self.name, Some(stamped(record))))
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        let mut state = self.state();
        let (version, _) = state.records.get(&self.name).ok_or(LockError::NotFound)?;
        if version.to_string() != expected.as_str() {
            return Err(LockError::Conflict);
        }
        Ok(state.commit(&self.name, Some(stamped(record))))
    }

    fn watch(&self, from: Option<&Version>) -> Option<WatchStream> {
        let mut state = self.state();
        let mut feed = Feed::default();
        match from.and_then(|v| v.as_str().parse::<u64>().ok()) {
            // Every change after `from`, in order.
            Some(after) => state
                .changes
                .iter()
                .filter(|(name, version, _)| *name == self.name && *version > after)
                .for_each(|(_, _, event)| feed.push(event.clone())),
            // From no version: the current state first, the record or the
            // lock's absence (with the version of its deletion where known).
            None => feed.push(match state.records.get(&self.name) {
                Some((version, record)) => {
                    WatchEvent::Changed(Observation::new(version.to_string(), record.clone()))
                }
                None => WatchEvent::Deleted(
                    state
                        .changes
                        .iter()
                        .rev()
                        .find(|(name, _, _)| *name == self.name)
                        .map(|(_, version, _)| Version::from(version.to_string())),
                ),
            }),
        }
        let feed = Arc::new(Mutex::new(feed));
        state
            .watches
            .push((self.name.clone(), Arc::downgrade(&feed)));
        Some(Box::pin(Watch(feed)))
    }

    fn describe(&self) -> String {
        format!("map/{}", self.name)
    }

    fn leadership_changed(&self, _identity: &str, _change: LeadershipChange) -> Option<LockTask> {
        None // no Events to record
    }

    fn configure(&self, _config: &Config) {
        // Every call answers at once: no timeout of its own to take.
    }
}

/// The suite's view of the store: two handles on a fresh name per case, and a
/// deletion as an operator would make it.
#[derive(Default)]
struct MapHarness {
    store: Arc<Store>,
    case: u32,
}

impl Harness for MapHarness {
    type Lock = MapLock;

    async fn fresh(&mut self) -> (MapLock, MapLock) {
        self.case += 1;
        let name = format!("case-{}", self.case);
        (
            MapLock::new(&self.store, &name),
            MapLock::new(&self.store, &name),
        )
    }

    async fn delete(&mut self) -> bool {
        let name = format!("case-{}", self.case);
        let mut state = self.store.0.lock().unwrap();
        if state.records.contains_key(&name) {
            state.commit(&name, None);
        }
        true
    }
}

fn main() -> ExitCode {
    let report = futures_lite::future::block_on(run_all(&mut MapHarness::default()));
    print!("{report}");
    if report.is_complete() {
        println!("the lock passes every case of the conformance suite");
        return ExitCode::SUCCESS;
    }
    let failed: Vec<String> = report
        .failures()
        .iter()
        .map(|f| f.case.to_string())
        .collect();
    let skipped: Vec<String> = report
        .skipped()
        .iter()
        .map(|(c, _)| c.to_string())
        .collect();
    eprintln!("the lock is not done: failed {failed:?}, skipped {skipped:?} (why: above)");
    ExitCode::FAILURE
}
