//! The state a driver shares with its handle and its subscribers.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use election_core::Instant;
use futures::Stream;

use crate::state::LeadershipState;

/// A hook called with every published state (the tokio adapter feeds a
/// `tokio::sync::watch` from it).
pub type StateHook = Box<dyn Fn(&LeadershipState) + Send + Sync>;

/// No deadline: not leading.
const NOT_LEADING: u64 = 0;

/// Shared between the driver task (writer) and handles and streams (readers).
pub(crate) struct Shared {
    /// The leadership deadline in nanoseconds on the driver's clock while leading,
    /// else [`NOT_LEADING`]. Read lock-free by `is_leader`.
    deadline: AtomicU64,
    inner: Mutex<Inner>,
    hook: Option<StateHook>,
    now: Box<dyn Fn() -> Instant + Send + Sync>,
}

struct Inner {
    seq: u64,
    state: LeadershipState,
    wakers: Vec<Waker>,
}

impl Shared {
    pub(crate) fn new(
        initial: LeadershipState,
        hook: Option<StateHook>,
        now: Box<dyn Fn() -> Instant + Send + Sync>,
    ) -> Arc<Self> {
        Arc::new(Shared {
            deadline: AtomicU64::new(NOT_LEADING),
            inner: Mutex::new(Inner {
                seq: 0,
                state: initial,
                wakers: Vec::new(),
            }),
            hook,
            now,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock cannot leave the state half-written
        // (plain field assignments), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The driver's clock.
    pub(crate) fn now(&self) -> Instant {
        (self.now)()
    }

    /// Leading with this deadline (`None`: not leading).
    pub(crate) fn set_deadline(&self, deadline: Option<Instant>) {
        let nanos = deadline.map_or(NOT_LEADING, |d| d.as_nanos().max(1));
        self.deadline.store(nanos, Ordering::Release);
    }

    pub(crate) fn deadline(&self) -> Option<Instant> {
        match self.deadline.load(Ordering::Acquire) {
            NOT_LEADING => None,
            n => Some(Instant::from_nanos(n)),
        }
    }

    /// Leading and before the deadline, on the driver's clock read now.
    pub(crate) fn is_leader(&self) -> bool {
        self.deadline().is_some_and(|d| self.now() < d)
    }

    pub(crate) fn state(&self) -> LeadershipState {
        self.lock().state.clone()
    }

    /// Publishes a new state: wakes every stream and calls the hook.
    pub(crate) fn publish(&self, state: LeadershipState) {
        let wakers = {
            let mut inner = self.lock();
            inner.seq += 1;
            inner.state = state.clone();
            core::mem::take(&mut inner.wakers)
        };
        for w in wakers {
            w.wake();
        }
        if let Some(hook) = &self.hook {
            hook(&state);
        }
    }
}

/// A stream of leadership states: the current one first, then each new one as it
/// is published. A slow reader skips intermediate states and sees the latest; the
/// stream ends after the driver's final state ([`crate::Change::Terminated`] or
/// [`crate::Change::Aborted`]).
pub struct StateStream {
    shared: Arc<Shared>,
    seen: Option<u64>,
    done: bool,
}

impl StateStream {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        StateStream {
            shared,
            seen: None,
            done: false,
        }
    }
}

impl Stream for StateStream {
    type Item = LeadershipState;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        let mut inner = self.shared.lock();
        if self.seen == Some(inner.seq) {
            if !inner.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                inner.wakers.push(cx.waker().clone());
            }
            return Poll::Pending;
        }
        let state = inner.state.clone();
        let seq = inner.seq;
        drop(inner);
        self.seen = Some(seq);
        if matches!(
            state.change,
            crate::Change::Terminated | crate::Change::Aborted
        ) {
            self.done = true;
        }
        Poll::Ready(Some(state))
    }
}

impl core::fmt::Debug for StateStream {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StateStream")
            .field("seen", &self.seen)
            .finish()
    }
}
