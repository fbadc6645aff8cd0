//! A small, runtime-independent cancellation signal for leader work.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// Tells leader work to stop. Clones share the signal; [`CancelSignal::cancel`]
/// wakes every [`CancelSignal::cancelled`] future. Works on any executor.
#[derive(Clone, Default)]
pub struct CancelSignal {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

impl CancelSignal {
    /// A signal not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: every waiter wakes, [`is_cancelled`](Self::is_cancelled) turns true.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::Release);
        let wakers = core::mem::take(&mut *self.wakers());
        for w in wakers {
            w.wake();
        }
    }

    /// Whether [`cancel`](Self::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// Completes once the signal is cancelled (at once if it already is).
    pub fn cancelled(&self) -> Cancelled {
        Cancelled {
            signal: self.clone(),
        }
    }

    fn wakers(&self) -> std::sync::MutexGuard<'_, Vec<Waker>> {
        self.inner.wakers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl core::fmt::Debug for CancelSignal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("CancelSignal")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// The future of [`CancelSignal::cancelled`].
#[derive(Debug)]
#[must_use = "a future does nothing unless awaited"]
pub struct Cancelled {
    signal: CancelSignal,
}

impl Future for Cancelled {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.signal.is_cancelled() {
            return Poll::Ready(());
        }
        let mut wakers = self.signal.wakers();
        // Check again under the lock: `cancel` sets the flag before taking it.
        if self.signal.is_cancelled() {
            return Poll::Ready(());
        }
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    #[test]
    fn cancel_wakes_a_waiter_and_later_waiters_complete_at_once() {
        let s = CancelSignal::new();
        let mut fut = s.cancelled();
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(fut.poll_unpin(&mut cx).is_pending());
        assert!(!s.is_cancelled());
        s.clone().cancel();
        assert!(s.is_cancelled());
        assert!(fut.poll_unpin(&mut cx).is_ready());
        assert!(s.cancelled().poll_unpin(&mut cx).is_ready());
    }
}
