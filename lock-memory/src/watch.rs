//! Watches: a stream per watcher over the store's change history.
//!
//! A watch keeps a cursor, the last version it delivered. Each poll yields the
//! oldest retained change after the cursor; when changes after the cursor were
//! already dropped from the history (the cursor is too old), it yields the
//! current state instead and jumps to the latest version. With nothing new, it
//! parks its waker in the store, and every write wakes it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use election_core::{LockError, Stream, Version, WatchEvent};

use crate::faults::PartitionMode;
use crate::store::{Shared, State};

/// Where a watch stands.
#[derive(Debug)]
enum Phase {
    /// Delivering changes.
    Open,
    /// Started while the client was refused: yields this error, then ends.
    Failing(LockError),
    /// Cut off by a black-hole partition: silent for good (until broken).
    Hung,
    /// Broken or failed: yields nothing more.
    Ended,
}

/// One watch of one client.
pub(crate) struct MemoryWatch {
    shared: Arc<Shared>,
    client: Arc<str>,
    id: u64,
    /// The last version delivered (or the version resumed from).
    cursor: u64,
    /// The client's watch generation at the start; a change ends the watch.
    generation: u64,
    /// The current state, owed first by a watch that starts without a usable version.
    owed: Option<WatchEvent>,
    phase: Phase,
}

impl MemoryWatch {
    /// Starts a watch for `client`, from `from` (see [`election_core::Lock::watch`]).
    pub(crate) fn start(shared: Arc<Shared>, client: Arc<str>, from: Option<&Version>) -> Self {
        let (id, cursor, generation, owed, phase) = shared.with_state(|st| {
            let id = st.new_watch_id();
            let counter = st.counter;
            let current = st.current_event();
            let c = st.client(&client);
            c.calls.watch += 1;
            let phase = match c.partition {
                None => Phase::Open,
                Some(PartitionMode::Refused) => {
                    Phase::Failing(LockError::transient("connection refused (partitioned)"))
                }
                Some(PartitionMode::Hang) => Phase::Hung,
            };
            let resume = from
                .and_then(|v| v.as_str().parse::<u64>().ok())
                .filter(|&v| v <= counter);
            let (cursor, owed) = match resume {
                Some(v) => (v, None),
                // No version, or one this store never issued: the current state first.
                None => (counter, Some(current)),
            };
            (id, cursor, c.watch_generation, owed, phase)
        });
        MemoryWatch {
            shared,
            client,
            id,
            cursor,
            generation,
            owed,
            phase,
        }
    }

    fn poll_state(
        &mut self,
        st: &mut State,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<WatchEvent, LockError>>> {
        let c = st.client(&self.client);
        if c.watch_generation != self.generation {
            self.phase = Phase::Ended;
        } else if c.partition == Some(PartitionMode::Hang) {
            self.phase = Phase::Hung;
        }
        match std::mem::replace(&mut self.phase, Phase::Open) {
            Phase::Open => {}
            Phase::Failing(e) => {
                self.phase = Phase::Ended;
                return Poll::Ready(Some(Err(e)));
            }
            Phase::Ended => {
                self.phase = Phase::Ended;
                return Poll::Ready(None);
            }
            Phase::Hung => {
                self.phase = Phase::Hung;
                st.park_watch(self.id, cx.waker());
                return Poll::Pending;
            }
        }
        let event = if let Some(owed) = self.owed.take() {
            owed
        } else if self.cursor < st.floor {
            self.cursor = st.counter;
            st.current_event()
        } else if let Some((v, ev)) = st
            .history
            .get(st.history.partition_point(|(v, _)| *v <= self.cursor))
        {
            // The history is ordered by version: the first entry after the cursor.
            self.cursor = *v;
            ev.clone()
        } else {
            st.park_watch(self.id, cx.waker());
            return Poll::Pending;
        };
        if st.client(&self.client).watch_breaks() {
            self.phase = Phase::Ended;
            return Poll::Ready(None);
        }
        Poll::Ready(Some(Ok(event)))
    }
}

impl Stream for MemoryWatch {
    type Item = Result<WatchEvent, LockError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if matches!(this.phase, Phase::Ended) {
            return Poll::Ready(None);
        }
        let shared = this.shared.clone();
        shared.with_state(|st| this.poll_state(st, cx))
    }
}

impl Drop for MemoryWatch {
    fn drop(&mut self) {
        self.shared.with_state(|st| st.unpark_watch(self.id));
    }
}
