//! The state a driver shares with its handle and its subscribers.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

use election_core::Instant;
use futures::Stream;

use crate::state::LeadershipState;

/// A hook called with every published state (the tokio adapter feeds a
/// `tokio::sync::watch` from it).
pub type StateHook = Box<dyn Fn(&LeadershipState) + Send + Sync>;

/// No deadline: not leading.
const NOT_LEADING: u64 = 0;

/// How many states a stream buffers for a slow reader before dropping the oldest.
pub const STREAM_BUFFER: usize = 256;

/// Shared between the driver task (writer) and handles and streams (readers).
pub(crate) struct Shared {
    /// The leadership deadline in nanoseconds on the driver's clock while leading,
    /// else [`NOT_LEADING`]. Read lock-free by `is_leader`.
    deadline: AtomicU64,
    /// Until when the lock's holder, another node, may lead by this node's
    /// knowledge (`Elector::holder_lease_end`), in nanoseconds on the driver's
    /// clock, else [`NOT_LEADING`].
    holder_until: AtomicU64,
    inner: Mutex<Inner>,
    hook: Option<StateHook>,
    now: Box<dyn Fn() -> Instant + Send + Sync>,
}

struct Inner {
    state: LeadershipState,
    subscribers: Vec<Weak<Subscriber>>,
}

/// One stream's queue of states not yet read.
struct Subscriber {
    queue: Mutex<Queue>,
}

struct Queue {
    states: VecDeque<LeadershipState>,
    waker: Option<Waker>,
}

/// `instant` in `cell` (`None` as [`NOT_LEADING`]).
fn store(cell: &AtomicU64, instant: Option<Instant>) {
    let nanos = instant.map_or(NOT_LEADING, |d| d.as_nanos().max(1));
    cell.store(nanos, Ordering::Release);
}

/// The instant in `cell`, if any.
fn instant(cell: &AtomicU64) -> Option<Instant> {
    match cell.load(Ordering::Acquire) {
        NOT_LEADING => None,
        n => Some(Instant::from_nanos(n)),
    }
}

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding these locks cannot leave them half-written (plain
    // assignments and queue pushes), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub(crate) fn new(
        initial: LeadershipState,
        hook: Option<StateHook>,
        now: Box<dyn Fn() -> Instant + Send + Sync>,
    ) -> Arc<Self> {
        Arc::new(Shared {
            deadline: AtomicU64::new(NOT_LEADING),
            holder_until: AtomicU64::new(NOT_LEADING),
            inner: Mutex::new(Inner {
                state: initial,
                subscribers: Vec::new(),
            }),
            hook,
            now,
        })
    }

    /// The driver's clock.
    pub(crate) fn now(&self) -> Instant {
        (self.now)()
    }

    /// Leading with this deadline (`None`: not leading).
    pub(crate) fn set_deadline(&self, deadline: Option<Instant>) {
        store(&self.deadline, deadline);
    }

    pub(crate) fn deadline(&self) -> Option<Instant> {
        instant(&self.deadline)
    }

    /// Another holder may lead until this instant (`None`: this node holds the
    /// lock, or nobody does).
    pub(crate) fn set_holder_until(&self, until: Option<Instant>) {
        store(&self.holder_until, until);
    }

    pub(crate) fn holder_until(&self) -> Option<Instant> {
        instant(&self.holder_until)
    }

    /// Leading and before the deadline, on the driver's clock read now.
    pub(crate) fn is_leader(&self) -> bool {
        self.deadline().is_some_and(|d| self.now() < d)
    }

    pub(crate) fn state(&self) -> LeadershipState {
        relock(&self.inner).state.clone()
    }

    /// Publishes a new state: queues it on every stream, wakes them, calls the hook.
    pub(crate) fn publish(&self, state: LeadershipState) {
        let mut wakers = Vec::new();
        {
            let mut inner = relock(&self.inner);
            inner.state = state.clone();
            inner.subscribers.retain(|w| {
                let Some(sub) = w.upgrade() else { return false };
                let mut q = relock(&sub.queue);
                if q.states.len() >= STREAM_BUFFER {
                    q.states.pop_front();
                }
                q.states.push_back(state.clone());
                wakers.extend(q.waker.take());
                true
            });
        }
        for w in wakers {
            w.wake();
        }
        if let Some(hook) = &self.hook {
            hook(&state);
        }
    }

    /// A new stream, starting with the current state.
    fn subscribe(&self) -> Arc<Subscriber> {
        let mut inner = relock(&self.inner);
        let sub = Arc::new(Subscriber {
            queue: Mutex::new(Queue {
                states: VecDeque::from([inner.state.clone()]),
                waker: None,
            }),
        });
        inner.subscribers.push(Arc::downgrade(&sub));
        sub
    }
}

/// A stream of leadership states: the current one first, then every new one in
/// order, each with the [`crate::Change`] that produced it. A reader more than
/// [`STREAM_BUFFER`] states behind loses the oldest. The stream ends after the
/// driver's final state ([`crate::Change::Elector`]`(Event::Terminated)` or [`crate::Change::Aborted`]).
pub struct StateStream {
    sub: Arc<Subscriber>,
    done: bool,
}

impl StateStream {
    pub(crate) fn new(shared: &Shared) -> Self {
        StateStream {
            sub: shared.subscribe(),
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
        let mut q = relock(&self.sub.queue);
        let Some(state) = q.states.pop_front() else {
            q.waker = Some(cx.waker().clone());
            return Poll::Pending;
        };
        drop(q);
        if matches!(
            state.change,
            crate::Change::Elector(election_core::Event::Terminated) | crate::Change::Aborted
        ) {
            self.done = true;
        }
        Poll::Ready(Some(state))
    }
}

impl core::fmt::Debug for StateStream {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StateStream")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}
