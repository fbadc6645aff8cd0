//! Polling for what a benchmark waits on: who leads now, and when the next
//! candidate started leading (an entry a hook appends to a log).
//!
//! ```no_run
//! # async fn demo(nodes: Vec<election_driver::Handle>) {
//! use std::time::Duration;
//! use test_kit::poll::Poll;
//!
//! let leader = Poll::within(Duration::from_secs(6)).leader(&nodes, |h| h.is_leader()).await;
//! # }
//! ```

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long to poll, and how often: every millisecond unless [`Poll::every`]
/// says otherwise. Sleeps on tokio's timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Poll {
    /// How long to poll before giving up.
    pub within: Duration,
    /// The pause between two looks.
    pub every: Duration,
}

impl Poll {
    /// Polls for at most `within`, every millisecond.
    pub const fn within(within: Duration) -> Poll {
        Poll {
            within,
            every: Duration::from_millis(1),
        }
    }

    /// The same, looking every `every`.
    pub const fn every(self, every: Duration) -> Poll {
        Poll { every, ..self }
    }

    /// Looks with `probe` until it answers `Some`; `None` once `within` has
    /// passed without.
    pub async fn until_some<T>(self, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
        let end = Instant::now() + self.within;
        loop {
            if let Some(found) = probe() {
                return Some(found);
            }
            if Instant::now() >= end {
                return None;
            }
            tokio::time::sleep(self.every).await;
        }
    }

    /// Waits until `ok` holds; panics, saying `what` timed out, once `within`
    /// has passed without.
    pub async fn until(self, what: &str, mut ok: impl FnMut() -> bool) {
        let held = self.until_some(|| ok().then_some(())).await;
        assert!(held.is_some(), "timed out: {what}");
    }

    /// Who leads now: the index of the first of `candidates` for which
    /// `is_leader` holds, as soon as one does; `None` if none did within time.
    pub async fn leader<T>(
        self,
        candidates: &[T],
        is_leader: impl Fn(&T) -> bool,
    ) -> Option<usize> {
        self.until_some(|| candidates.iter().position(&is_leader))
            .await
    }

    /// When the next one started leading: entry `n` of `log` (counting from 0)
    /// once something (a candidate's state hook) has appended it; `None` if
    /// nothing did within time.
    pub async fn entry<T: Clone>(self, log: &Mutex<Vec<T>>, n: usize) -> Option<T> {
        self.until_some(|| log.lock().expect("the log's lock").get(n).cloned())
            .await
    }
}
