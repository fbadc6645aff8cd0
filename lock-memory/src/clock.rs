//! The store's wall clock (what `Stamp::Now` becomes) and its sleeper (how latency
//! is waited out), both replaceable by tests.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use election_core::WallTime;

/// The wall clock a store stamps writes with.
pub type WallClock = Arc<dyn Fn() -> WallTime + Send + Sync>;

/// How a store waits out injected latency: a function from a duration to a future
/// that completes after it. The default uses `async-io`'s timer, which works under
/// any executor; tests on tokio with paused time plug `tokio::time::sleep` in with
/// [`crate::MemoryStore::with_sleeper`].
pub type Sleeper = Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The system clock, [`WallTime::now`].
pub(crate) fn system_clock() -> WallClock {
    Arc::new(WallTime::now)
}

/// `async-io`'s timer.
pub(crate) fn async_io_sleeper() -> Sleeper {
    Arc::new(|d| {
        Box::pin(async move {
            async_io::Timer::after(d).await;
        })
    })
}

/// A wall clock that moves only when told to: plug it into a store with
/// [`ManualClock::install`] and the stamps of every write become predictable.
///
/// ```
/// use election_core::WallTime;
/// use lock_memory::{ManualClock, MemoryStore};
///
/// let store = MemoryStore::new();
/// let clock = ManualClock::new(WallTime::new(1_700_000_000, 0));
/// clock.install(&store);
/// clock.advance(std::time::Duration::from_secs(5));
/// assert_eq!(clock.now(), WallTime::new(1_700_000_005, 0));
/// ```
#[derive(Clone, Debug)]
pub struct ManualClock(Arc<Mutex<WallTime>>);

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: WallTime) -> Self {
        ManualClock(Arc::new(Mutex::new(start)))
    }

    /// The time it shows.
    pub fn now(&self) -> WallTime {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the time, forwards or backwards (a stepped wall clock, FAULTS N3).
    pub fn set(&self, t: WallTime) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = t;
    }

    /// Moves the time forward by `d`, saturating far in the future.
    pub fn advance(&self, d: Duration) {
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
        let nanos = t.nanos + d.subsec_nanos();
        *t = WallTime::new(t.unix_secs.saturating_add(secs), nanos);
    }

    /// Makes `store` stamp its writes with this clock.
    pub fn install(&self, store: &crate::MemoryStore) {
        let clock = self.clone();
        store.set_wall_clock(move || clock.now());
    }
}
