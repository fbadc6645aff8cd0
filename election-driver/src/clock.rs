//! The driver's clock: monotonic, and counting while the machine sleeps.
//!
//! Rust's `std::time::Instant` is `CLOCK_MONOTONIC` on Linux, which stops while the
//! machine is suspended or the VM frozen: a leader resumed after an hour would
//! believe only a moment passed and keep leading on a lease that expired long ago
//! (docs/faults.md N4). [`BootClock`] reads `CLOCK_BOOTTIME` instead, which keeps counting.
//!
//! It reads it through the C library's `clock_gettime` (rustix's libc backend),
//! like `Instant` and the runtimes' timers, not through the vDSO directly: a
//! clock faker preloaded into the process (faketime's `LD_PRELOAD`) then moves
//! the election's clock and the timers together, which is how a test runs a
//! whole candidate on a fast or slow clock (docs/faults.md N12). glibc's
//! `clock_gettime` is itself a vDSO call, so the read costs the same.

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

/// The clock [`BootClock`] reads on Linux and Android: `CLOCK_BOOTTIME`, which
/// keeps counting while the machine is suspended (`CLOCK_MONOTONIC` stops:
/// docs/faults.md N4). The one place that names it; the tests check it is this one.
#[cfg(any(target_os = "linux", target_os = "android"))]
const CLOCK: rustix::time::ClockId = rustix::time::ClockId::Boottime;

#[cfg(any(target_os = "linux", target_os = "android"))]
#[derive(Clone, Copy, Debug)]
struct Raw(u64);

#[cfg(any(target_os = "linux", target_os = "android"))]
impl Raw {
    fn now() -> Self {
        Raw::read(CLOCK)
    }

    /// The clock `id` now, in nanoseconds.
    fn read(id: rustix::time::ClockId) -> Self {
        let ts = rustix::time::clock_gettime(id);
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
    use rustix::time::ClockId;

    /// docs/faults.md N4: the clock read is `CLOCK_BOOTTIME`, which keeps counting while
    /// the machine is suspended, not `CLOCK_MONOTONIC`, which stops. (The two
    /// differ only by the time this machine spent suspended, often none, so
    /// comparing readings alone could not tell them apart: this is the guard that
    /// holds everywhere.)
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn n4_the_clock_read_is_clock_boottime() {
        assert_eq!(CLOCK, ClockId::Boottime);
    }

    /// docs/faults.md N4: readings fall between two `CLOCK_BOOTTIME` readings; where this
    /// machine has been suspended (boot time ahead of monotonic time by more than
    /// the reading takes), they also fall outside the `CLOCK_MONOTONIC` ones.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn n4_readings_are_clock_boottime_readings() {
        let mono_before = Raw::read(ClockId::Monotonic).0;
        let before = Raw::read(ClockId::Boottime).0;
        let raw = Raw::now().0;
        let after = Raw::read(ClockId::Boottime).0;
        let mono_after = Raw::read(ClockId::Monotonic).0;
        assert!(
            before <= raw && raw <= after,
            "{before} <= {raw} <= {after}"
        );
        // CLOCK_BOOTTIME = CLOCK_MONOTONIC + time suspended: never behind.
        assert!(raw >= mono_before);
        if before > mono_after + 1_000_000 {
            assert!(raw > mono_after, "{raw} is a monotonic reading");
        }
    }

    /// The environment variable that makes
    /// [`n4_the_clock_counts_time_the_machine_was_suspended`] the child side.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const SUSPENDED_CHILD: &str = "ELECTION_DRIVER_N4_SUSPENDED_CHILD";

    /// How long the child's machine "was suspended": its time namespace's
    /// `CLOCK_BOOTTIME` offset.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const SUSPENDED_SECS: u64 = 3_600;

    /// docs/faults.md N4 on a machine that was suspended for an hour: this test runs
    /// itself again in a new time namespace whose `CLOCK_BOOTTIME` is an hour
    /// ahead of its `CLOCK_MONOTONIC` (`unshare --time --boottime 3600`, Linux
    /// 5.6+, needs `CAP_SYS_ADMIN`), where the clock must read an hour ahead of
    /// monotonic time. Where no such namespace can be made it says so and
    /// passes: [`n4_the_clock_read_is_clock_boottime`] still holds the line.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn n4_the_clock_counts_time_the_machine_was_suspended() {
        if std::env::var_os(SUSPENDED_CHILD).is_some() {
            let mono = Raw::read(ClockId::Monotonic).0;
            let raw = Raw::now().0;
            let ahead = raw.saturating_sub(mono);
            assert!(
                ahead >= SUSPENDED_SECS * 1_000_000_000,
                "in a namespace suspended {SUSPENDED_SECS} s the clock is only {ahead} ns ahead of CLOCK_MONOTONIC"
            );
            println!("n4 child: {ahead} ns ahead of CLOCK_MONOTONIC");
            return;
        }
        let exe = std::env::current_exe().expect("the test binary");
        let out = std::process::Command::new("unshare")
            .args(["--time", "--boottime", &SUSPENDED_SECS.to_string(), "--"])
            .arg(exe)
            .args([
                "clock::tests::n4_the_clock_counts_time_the_machine_was_suspended",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(SUSPENDED_CHILD, "1")
            .output();
        let out = match out {
            Ok(out) => out,
            Err(e) => {
                eprintln!("no suspended-machine check: cannot run unshare: {e}");
                return;
            }
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stdout.contains("running 1 test") {
            eprintln!(
                "no suspended-machine check: unshare could not make a time namespace: {stderr}"
            );
            return;
        }
        assert!(
            out.status.success() && stdout.contains("n4 child: "),
            "the child in the suspended namespace failed:\n{stdout}\n{stderr}"
        );
    }

    /// The environment variable that makes
    /// [`n12_a_preloaded_clock_faker_moves_the_clock`] the child side.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const FAKED_CHILD: &str = "ELECTION_DRIVER_N12_FAKED_CHILD";

    /// Seconds since boot by the kernel's `/proc/uptime`, which no clock
    /// faker reaches (it is a file, not a clock call).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn uptime() -> f64 {
        let text = std::fs::read_to_string("/proc/uptime").expect("/proc/uptime");
        let first = text.split_whitespace().next().expect("a reading");
        first.parse().expect("seconds")
    }

    /// Debian's libfaketime, for the dynamic loader to expand (`$LIB` is the
    /// multiarch library directory, as the `faketime` wrapper itself uses).
    /// Preloaded directly: the wrapper keeps a semaphore named after its pid,
    /// and one left behind by a killed wrapper makes a later wrapper given the
    /// same pid exit with `sem_open: File exists`.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    const LIBFAKETIME: &str = "/usr/$LIB/faketime/libfaketime.so.1";

    /// docs/faults.md N12 (clock rates): the clock follows a clock faker
    /// preloaded into the process, as `Instant` and the timers do. This test
    /// runs itself again with libfaketime preloaded at `FAKETIME="+0 x2"` and
    /// checks the clock advanced about twice as far as the kernel's uptime in
    /// the child. Ignored in the workspace run because it needs libfaketime
    /// (Debian's `faketime`, `bash .ci/install faketime`); CI runs it with
    /// `--ignored`, and it fails when libfaketime is missing.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    #[ignore = "needs faketime (bash .ci/install faketime); CI runs it"]
    fn n12_a_preloaded_clock_faker_moves_the_clock() {
        if std::env::var_os(FAKED_CHILD).is_some() {
            let clock = BootClock::new();
            let start = uptime();
            // Busy, not asleep: the faker scales sleeps too.
            while uptime() - start < 0.5 {
                std::hint::spin_loop();
            }
            let real = uptime() - start;
            let seen = clock.now().as_nanos() as f64 / 1e9;
            println!("n12 child: the clock saw {seen:.3} s in {real:.3} s of uptime");
            return;
        }
        let exe = std::env::current_exe().expect("the test binary");
        let out = std::process::Command::new(exe)
            .args([
                "clock::tests::n12_a_preloaded_clock_faker_moves_the_clock",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(FAKED_CHILD, "1")
            .env("LD_PRELOAD", LIBFAKETIME)
            .env("FAKETIME", "+0 x2")
            .output()
            .expect("the test binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // The loader says so, and runs the child without it, when it is missing.
        assert!(
            !stderr.contains("cannot be preloaded"),
            "libfaketime is missing: install it with `bash .ci/install faketime`\n{stderr}"
        );
        assert!(
            out.status.success(),
            "the child failed:\n{stdout}\n{stderr}"
        );
        let line = stdout
            .lines()
            // libtest may print the test's name on the same line first.
            .find_map(|l| {
                l.split_once("n12 child: the clock saw ")
                    .map(|(_, rest)| rest)
            })
            .unwrap_or_else(|| panic!("no reading from the child:\n{stdout}\n{stderr}"));
        let mut words = line.split_whitespace();
        let seen: f64 = words.next().and_then(|w| w.parse().ok()).expect("seen");
        let real: f64 = words.nth(2).and_then(|w| w.parse().ok()).expect("real");
        // x2 gives 2; the uptime's 10 ms steps and the reads' delays keep it near.
        let ratio = seen / real;
        assert!(
            (1.7..2.3).contains(&ratio),
            "under libfaketime x2 the clock ran {ratio:.2} times the uptime ({line})"
        );
    }
}
