//! [`election_driver::Runtime`] for tokio.

use std::time::Duration;

use election_core::Instant;
use election_driver::{BootClock, BoxFuture, DriverError, Runtime};

/// The tokio runtime, as the driver sees it: `tokio::time::sleep`, a spawn on the
/// runtime it was created in, and a clock.
#[derive(Clone, Debug)]
pub struct TokioRuntime {
    handle: tokio::runtime::Handle,
    clock: Clock,
}

#[derive(Clone, Copy, Debug)]
enum Clock {
    /// `CLOCK_BOOTTIME`: keeps counting during suspend.
    Boot(BootClock),
    /// tokio's clock from this epoch: virtual (and auto-advancing) when paused.
    Tokio(tokio::time::Instant),
}

impl TokioRuntime {
    /// The runtime the caller runs in, with the suspend-aware [`BootClock`], or
    /// with tokio's own clock when that clock is paused (a test on
    /// `#[tokio::test(start_paused = true)]`, or after `tokio::time::pause()`):
    /// paused time moves tokio's timers, not the machine's clock, and a driver
    /// that slept on one and read the other would see its leases crawl while its
    /// timers raced ahead. So a paused-time test needs no clock option; in
    /// production tokio's clock is never paused and the boot clock is used.
    ///
    /// # Errors
    /// [`DriverError::Spawn`] outside a tokio runtime, and in a runtime built
    /// without its time driver (`enable_time`/`enable_all`), whose timers the
    /// driver cannot do without (tokio would panic on the driver's task instead).
    pub fn current() -> Result<Self, DriverError> {
        let handle = tokio::runtime::Handle::try_current()
            .map_err(|e| DriverError::Spawn(format!("not inside a tokio runtime: {e}")))?;
        if !has_timers(&handle) {
            return Err(DriverError::Spawn(
                "the tokio runtime has no time driver: build it with `enable_time()` or `enable_all()`"
                    .to_owned(),
            ));
        }
        let runtime = TokioRuntime {
            handle,
            clock: Clock::Boot(BootClock::new()),
        };
        Ok(if tokio_clock_is_paused() {
            runtime.with_tokio_clock()
        } else {
            runtime
        })
    }

    /// Whether this runtime reads tokio's clock ([`TokioRuntime::with_tokio_clock`],
    /// or a paused clock found by [`TokioRuntime::current`]) rather than the boot
    /// clock.
    pub fn uses_tokio_clock(&self) -> bool {
        matches!(self.clock, Clock::Tokio(_))
    }

    /// Uses tokio's clock instead, so that tests can run on paused, virtual time
    /// (`#[tokio::test(start_paused = true)]`; [`TokioRuntime::current`] does this
    /// by itself when it finds the clock paused). tokio's clock is
    /// `CLOCK_MONOTONIC`, which stops during suspend: do not use it in production.
    #[must_use]
    pub fn with_tokio_clock(mut self) -> Self {
        self.clock = Clock::Tokio(tokio::time::Instant::now());
        self
    }
}

/// Whether tokio's clock is paused in the current context: it stands still while
/// real time passes. tokio offers no query for it: unpaused, its `Instant::now`
/// is the machine's monotonic clock; paused, it moves only when the runtime
/// advances it (never during this busy wait of a fifth of a millisecond, which
/// holds the thread).
fn tokio_clock_is_paused() -> bool {
    let (tokio_then, real_then) = (tokio::time::Instant::now(), std::time::Instant::now());
    while real_then.elapsed() < Duration::from_micros(200) {
        std::hint::spin_loop();
    }
    tokio::time::Instant::now() == tokio_then
}

/// Whether `handle`'s runtime has its time driver. tokio offers no query for it:
/// creating a timer without one panics at once (before any poll), so this creates
/// one and catches that panic (the panic hook still prints its message).
fn has_timers(handle: &tokio::runtime::Handle) -> bool {
    let _entered = handle.enter();
    std::panic::catch_unwind(|| drop(tokio::time::sleep(Duration::ZERO))).is_ok()
}

impl Runtime for TokioRuntime {
    fn now(&self) -> Instant {
        match self.clock {
            Clock::Boot(c) => c.now(),
            Clock::Tokio(epoch) => {
                let d = tokio::time::Instant::now().saturating_duration_since(epoch);
                Instant::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            }
        }
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<()> {
        Box::pin(tokio::time::sleep(duration))
    }

    fn spawn(&self, future: BoxFuture<()>) {
        drop(self.handle.spawn(future));
    }
}
