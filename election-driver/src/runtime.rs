//! The small runtime trait the driver is generic over (after quinn's runtime layer):
//! a clock, a timer and a spawn.

use core::future::Future;
use core::pin::Pin;
use core::time::Duration;

use election_core::Instant;

/// A boxed, `Send` future: what the driver hands to and gets from a runtime.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What the driver needs from an async runtime.
///
/// Implementations are a few lines per runtime (`adapter-tokio`, `adapter-smol`).
/// The clock is part of the trait so that tests can run the driver on a runtime's
/// virtual time (tokio's paused clock) while production uses a clock that keeps
/// counting during suspend ([`crate::BootClock`]).
pub trait Runtime: Clone + Send + Sync + 'static {
    /// The current instant on the driver's monotonic clock. Never goes backwards.
    fn now(&self) -> Instant;

    /// A future that completes after `duration` has passed on this runtime's timer.
    ///
    /// The driver recomputes its deadlines from [`Runtime::now`] after every
    /// wake-up, so a timer that fires early or late (a suspended machine) is
    /// harmless; it also never sleeps longer than [`crate::MAX_SLEEP`] at a time.
    fn sleep(&self, duration: Duration) -> BoxFuture<()>;

    /// Runs `future` to completion in the background.
    fn spawn(&self, future: BoxFuture<()>);
}
