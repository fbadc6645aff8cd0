//! An in-process compare-and-swap lock for leader election, with seeded fault
//! injection: **the lock to unit-test with**.
//!
//! A [`MemoryStore`] holds one lock record. Each elector gets its own client
//! handle, a [`MemoryLock`], which implements [`election_core::Lock`] including
//! [`watch`](election_core::Lock::watch). The store is linearizable: each call is
//! applied atomically at one instant between its start and its answer (unless a
//! stale-read fault is injected on purpose).
//!
//! - **Versions** are decimal strings of a store-global counter that grows by one
//!   per write and never resets, also across delete and re-create.
//! - **Stamps**: `Stamp::Now` becomes the store's wall time ([`MemoryStore::set_wall_clock`],
//!   [`ManualClock`]); `Stamp::At` is kept; `Stamp::Unset` stays unset.
//! - **Faults**, per client and reproducible from [`MemoryStore::with_seed`]:
//!   latency, error answers of every [`LockError`](election_core::LockError) class,
//!   lost answers (applied, yet the caller gets `Unknown`), hangs, partitions that
//!   heal (refusing or black-holing), stale reads, broken watches. See [`faults`].
//! - **Observation for tests**: [`MemoryStore::current`], the [`MemoryStore::write_log`]
//!   with sequence numbers, and human edits ([`MemoryStore::set_record`],
//!   [`MemoryStore::delete`]).
//! - **Timers**: latency is waited out by a pluggable sleeper, by default
//!   `async-io`'s timer (any executor); plug `tokio::time::sleep` for paused time
//!   ([`MemoryStore::with_sleeper`]). The driver follows paused time by itself:
//!   `adapter_tokio::TokioRuntime::current()` reads tokio's clock when it finds
//!   it paused (the boot clock otherwise), so a test on
//!   `#[tokio::test(start_paused = true)]` needs no clock option
//!   (`adapter-tokio/tests/paused_time.rs` is such a test). The blocking calls
//!   ([`MemoryLock::blocking_get`], …) need no runtime at all: the example
//!   `threads` drives three electors on plain threads with them.
//! - With the `conformance` feature, the `conformance` module is a suite of
//!   adversarial cases that any `Lock` implementation can run.
//!
//! # Example
//! ```
//! use election_core::{Lock, LockError, LockRecord, Stamp};
//! use lock_memory::{Fault, MemoryStore, WriteKind};
//!
//! let store = MemoryStore::with_seed(42);
//! let (a, b) = (store.client("a"), store.client("b"));
//! let record = |holder: &str| LockRecord {
//!     holder: holder.into(),
//!     lease_duration_secs: Some(15),
//!     renew_time: Stamp::Now,
//!     ..LockRecord::default()
//! };
//!
//! futures_lite::future::block_on(async {
//!     // Both saw the lock absent; one create wins.
//!     let won = a.create(&record("a")).await.unwrap();
//!     assert_eq!(b.create(&record("b")).await, Err(LockError::AlreadyExists));
//!     assert!(matches!(won.record.renew_time, Stamp::At(_)));
//!
//!     // b's answer is lost: its compare-and-swap landed, but b cannot know.
//!     store.faults("b").inject(Fault::AnswerLost);
//!     let lost = b.update(&won.version, &record("b")).await;
//!     assert!(lost.unwrap_err().outcome_unknown());
//!     assert_eq!(&*store.current().unwrap().record.holder, "b");
//!
//!     // a's renew from its stale version conflicts.
//!     assert_eq!(a.update(&won.version, &record("a")).await, Err(LockError::Conflict));
//! });
//!
//! let log = store.write_log();
//! assert_eq!(log.iter().map(|w| w.kind).collect::<Vec<_>>(), [WriteKind::Create, WriteKind::Update]);
//! assert_eq!(log[1].version.as_str(), "2");
//! ```

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]
// docs.rs labels each feature-gated item with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod clock;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod faults;
mod lock;
mod log;
mod store;
mod watch;

pub use clock::{ManualClock, Sleeper, WallClock};
pub use faults::{CallStats, Delay, Fault, FaultError, FaultHandle, Faults, PartitionMode};
pub use lock::{DEFAULT_BLOCKING_TIMEOUT, MemoryLock};
pub use log::{HUMAN, LoggedWrite, WriteKind};
pub use store::{DEFAULT_HISTORY, MemoryStore};
