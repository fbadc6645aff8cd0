//! Wall-clock time for lock records: the injectable clock that stamps writes. The
//! timestamp formats (and the conversions to and from k8s-openapi's `jiff` times)
//! live in `lock-json`, beside the record codec that reads them.

use std::fmt;
use std::sync::Arc;

use election_core::{Stamp, WallTime};
pub use lock_json::{from_timestamp, to_timestamp};

/// The wall clock a lock stamps [`Stamp::Now`] with. Cheap to clone.
///
/// [`Clock::system`] reads `SystemTime`; tests inject a fixed or stepping clock with
/// [`Clock::from_fn`].
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> WallTime + Send + Sync>);

impl Clock {
    /// The system's wall clock.
    pub fn system() -> Self {
        Clock(Arc::new(WallTime::now))
    }

    /// A clock that reads `f`.
    pub fn from_fn(f: impl Fn() -> WallTime + Send + Sync + 'static) -> Self {
        Clock(Arc::new(f))
    }

    /// A clock stopped at `t`.
    pub fn fixed(t: WallTime) -> Self {
        Clock(Arc::new(move || t))
    }

    /// The current wall time by this clock.
    pub fn now(&self) -> WallTime {
        (self.0)()
    }

    /// Resolves a stamp of a write: [`Stamp::Now`] becomes `now`, the rest is kept.
    pub fn resolve(stamp: Stamp, now: WallTime) -> Option<WallTime> {
        match stamp {
            Stamp::Unset => None,
            Stamp::At(t) => Some(t),
            Stamp::Now => Some(now),
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: WallTime = WallTime {
        unix_secs: 1_786_144_269,
        nanos: 123_456_789,
    };

    #[test]
    fn clock_resolves_stamps() {
        let c = Clock::fixed(T);
        assert_eq!(Clock::resolve(Stamp::Now, c.now()), Some(T));
        assert_eq!(Clock::resolve(Stamp::At(secs()), c.now()), Some(secs()));
        assert_eq!(Clock::resolve(Stamp::Unset, c.now()), None);
    }

    fn secs() -> WallTime {
        WallTime::new(5, 0)
    }
}
