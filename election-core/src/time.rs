//! The core's own monotonic time.
//!
//! The core never reads a clock. Every handler takes `now`, an [`Instant`] measured
//! in nanoseconds since an epoch that the caller (the driver) owns: the process
//! start, the boot, or zero in a simulation. Durations are [`core::time::Duration`].

use core::fmt;
use core::ops::{Add, Sub};
use core::time::Duration;

/// A point on the local monotonic clock, in nanoseconds since the driver's epoch.
///
/// The clock must not go backwards; if a caller hands the core an earlier instant
/// than one it already saw, the core clamps it to the latest one. The clock should
/// keep counting while the machine is suspended (Linux `CLOCK_BOOTTIME`), or a
/// resumed leader believes it led for less time than really passed.
///
/// Arithmetic saturates: adding a huge duration yields [`Instant::MAX`], never a
/// wrap or a panic.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The epoch of the caller's clock.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant (about 584 years after the epoch).
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// An instant `millis` milliseconds after the epoch.
    pub const fn from_millis(millis: u64) -> Self {
        Instant(millis.saturating_mul(1_000_000))
    }

    /// An instant `secs` seconds after the epoch.
    pub const fn from_secs(secs: u64) -> Self {
        Instant(secs.saturating_mul(1_000_000_000))
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The time since the epoch as a duration.
    pub const fn since_epoch(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    pub fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(duration_nanos(d)))
    }

    /// `self - d`, saturating at [`Instant::ZERO`].
    pub fn saturating_sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(duration_nanos(d)))
    }

    /// The time from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

/// A duration in nanoseconds, saturating at `u64::MAX` (584 years).
pub(crate) fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        self.saturating_sub(d)
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:09}s",
            self.0 / 1_000_000_000,
            self.0 % 1_000_000_000
        )
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{:03}s",
            self.0 / 1_000_000_000,
            (self.0 % 1_000_000_000) / 1_000_000
        )
    }
}

/// A wall-clock time as a backend read it from a record: seconds and nanoseconds since
/// the Unix epoch, UTC.
///
/// The core never compares it with any clock (remote timestamps are untrustworthy);
/// it only carries it so that a write can keep a timestamp unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WallTime {
    /// Whole seconds since 1970-01-01T00:00:00Z (negative before it).
    pub unix_secs: i64,
    /// Nanoseconds within the second, `0..1_000_000_000`.
    pub nanos: u32,
}

impl WallTime {
    /// A wall time from seconds and nanoseconds since the Unix epoch; nanoseconds
    /// beyond one second carry into the seconds.
    pub fn new(unix_secs: i64, nanos: u32) -> Self {
        WallTime {
            unix_secs: unix_secs.saturating_add(i64::from(nanos / 1_000_000_000)),
            nanos: nanos % 1_000_000_000,
        }
    }
}

#[cfg(feature = "std")]
impl WallTime {
    /// Converts a `std::time::SystemTime`, saturating far outside the representable range.
    pub fn from_system_time(t: std::time::SystemTime) -> Self {
        match t.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => WallTime::new(
                i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                d.subsec_nanos(),
            ),
            Err(e) => {
                let d = e.duration();
                let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                if d.subsec_nanos() == 0 {
                    WallTime::new(-secs, 0)
                } else {
                    WallTime::new(-secs - 1, 1_000_000_000 - d.subsec_nanos())
                }
            }
        }
    }

    /// The current wall-clock time. Only backends call this, to stamp records.
    pub fn now() -> Self {
        Self::from_system_time(std::time::SystemTime::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_wrapping() {
        assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
        assert_eq!(Instant::ZERO - Duration::from_secs(1), Instant::ZERO);
        assert_eq!(
            Instant::from_secs(1) - Instant::from_secs(2),
            Duration::ZERO
        );
        assert_eq!(Instant::ZERO + Duration::MAX, Instant::MAX);
        assert_eq!(Instant::from_millis(1500).as_nanos(), 1_500_000_000);
    }

    #[test]
    fn wall_time_normalises_nanos() {
        assert_eq!(
            WallTime::new(1, 1_500_000_000),
            WallTime {
                unix_secs: 2,
                nanos: 500_000_000
            }
        );
    }
}
