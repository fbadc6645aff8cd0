//! The driver's clock: monotonic, and counting while the machine sleeps.
//!
//! Rust's `std::time::Instant` is `CLOCK_MONOTONIC` on Linux, which stops while the
//! machine is suspended or the VM frozen: a leader resumed after an hour would
//! believe only a moment passed and keep leading on a lease that expired long ago
//! (FAULTS N4). [`BootClock`] reads `CLOCK_BOOTTIME` instead, which keeps counting.

use election_core::Instant;

/// A monotonic clock that keeps counting during suspend, mapped to
/// [`election_core::Instant`] with its epoch at the clock's creation.
///
/// On Linux and Android it reads `CLOCK_BOOTTIME`; elsewhere it falls back to
/// `std::time::Instant` (on macOS that is `mach_continuous_time`-based in recent
/// std releases; on others it may stop during suspend).
#[derive(Clone, Copy, Debug)]
pub struct BootClock {
    epoch: Raw,
}

impl BootClock {
    /// A clock whose epoch ([`Instant::ZERO`]) is now.
    pub fn new() -> Self {
        BootClock { epoch: Raw::now() }
    }

    /// Nanoseconds since the epoch, as an [`Instant`].
    pub fn now(&self) -> Instant {
        Instant::from_nanos(Raw::now().nanos_since(&self.epoch))
    }
}

impl Default for BootClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[derive(Clone, Copy, Debug)]
struct Raw(u64);

#[cfg(any(target_os = "linux", target_os = "android"))]
impl Raw {
    fn now() -> Self {
        let ts = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
        let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
        let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
        Raw(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
    }

    fn nanos_since(&self, epoch: &Raw) -> u64 {
        self.0.saturating_sub(epoch.0)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
#[derive(Clone, Copy, Debug)]
struct Raw(std::time::Instant);

#[cfg(not(any(target_os = "linux", target_os = "android")))]
impl Raw {
    fn now() -> Self {
        Raw(std::time::Instant::now())
    }

    fn nanos_since(&self, epoch: &Raw) -> u64 {
        u64::try_from(self.0.saturating_duration_since(epoch.0).as_nanos()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_clock_starts_near_zero_and_never_goes_back() {
        let c = BootClock::new();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
        // Created a moment ago: well under a second since the epoch.
        assert!(a.as_nanos() < 1_000_000_000, "{a:?}");
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(c.now() - a >= std::time::Duration::from_millis(5));
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn boot_clock_is_at_least_the_monotonic_clock() {
        // CLOCK_BOOTTIME = CLOCK_MONOTONIC + time suspended, so it is never behind.
        let mono = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        let boot = Raw::now();
        let mono = u64::try_from(mono.tv_sec).unwrap() * 1_000_000_000
            + u64::try_from(mono.tv_nsec).unwrap();
        assert!(boot.0 >= mono);
    }

    /// FAULTS N4: the clock is `CLOCK_BOOTTIME` (which keeps counting while the
    /// machine is suspended), not `CLOCK_MONOTONIC` (which stops): its readings
    /// fall between two `CLOCK_BOOTTIME` readings, and boot time is never behind
    /// monotonic time (checked by the test above).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn n4_the_clock_keeps_counting_during_suspend() {
        use rustix::time::{ClockId, clock_gettime};
        let nanos = |id| {
            let ts = clock_gettime(id);
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let before = nanos(ClockId::Boottime);
        let raw = Raw::now().0;
        let after = nanos(ClockId::Boottime);
        assert!(
            before <= raw && raw <= after,
            "{before} <= {raw} <= {after}"
        );
    }
}
