//! [`election_driver::Runtime`] for smol.

use std::time::Duration;

use election_core::Instant;
use election_driver::{BootClock, BoxFuture, Runtime};

/// smol as the driver sees it: `async-io` timers, `smol::spawn` (the global
/// executor) and the suspend-aware [`BootClock`].
#[derive(Clone, Copy, Debug, Default)]
pub struct SmolRuntime {
    clock: BootClock,
}

impl SmolRuntime {
    /// A runtime whose clock's epoch is now.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Runtime for SmolRuntime {
    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<()> {
        let timer = async_io::Timer::after(duration);
        Box::pin(async move {
            timer.await;
        })
    }

    fn spawn(&self, future: BoxFuture<()>) {
        smol::spawn(future).detach();
    }
}
