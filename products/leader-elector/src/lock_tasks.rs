//! The lock's background tasks (its leadership Events), counted so that the
//! sidecar can let them finish before it exits.
//!
//! The driver spawns the task a lock returns from [`Lock::leadership_changed`] and
//! never awaits it: the election must not wait for an Event. But the sidecar
//! exits as soon as its shutdown has released the lease, and the end of the
//! runtime drops every task still running: the `<identity> stopped leading` Event
//! of a SIGTERM, written while the lease is being released, was now and then lost.
//! [`LockTasks`], a [`Layer`] around the lock, counts those tasks; [`LockTasks::settled`]
//! waits until none runs, bounded by the caller (each Event write is itself
//! bounded by the request timeout).

use std::sync::Arc;
use std::time::Duration;

use election_core::{Layer, LeadershipChange, Lock, LockTask};
use tokio::sync::watch;

/// How many of the lock's background tasks still run. Clones share the count.
#[derive(Clone, Debug)]
pub(crate) struct LockTasks(Arc<watch::Sender<usize>>);

/// Ends one task's count when the task ends or is dropped unfinished.
struct Running(Arc<watch::Sender<usize>>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

impl LockTasks {
    pub(crate) fn new() -> Self {
        LockTasks(Arc::new(watch::Sender::new(0)))
    }

    /// `task`, counted from now until it ends (or is dropped).
    fn track(&self, task: LockTask) -> LockTask {
        self.0.send_modify(|n| *n += 1);
        let running = Running(Arc::clone(&self.0));
        Box::pin(async move {
            let _running = running;
            task.await;
        })
    }

    /// Waits until no task runs, at most `within`; whether none does.
    pub(crate) async fn settled(&self, within: Duration) -> bool {
        let mut count = self.0.subscribe();
        tokio::time::timeout(within, count.wait_for(|n| *n == 0))
            .await
            .is_ok()
    }
}

/// Counts the wrapped lock's background tasks: wrapped in [`Layered`] with a
/// [`LockTasks`], a lock's every call is forwarded and each task it returns from
/// [`Lock::leadership_changed`] is counted.
impl<L: Lock> Layer<L> for LockTasks {
    fn leadership_changed(
        &self,
        inner: &L,
        identity: &str,
        change: LeadershipChange,
    ) -> Option<LockTask> {
        inner
            .leadership_changed(identity, change)
            .map(|task| self.track(task))
    }
}

#[cfg(test)]
mod tests {
    use election_core::{Layered, LockError, LockRecord, Observation, Version, WatchStream};

    use super::*;

    /// A lock that only has a background task: one that ends when `release` is
    /// sent.
    struct Slow(watch::Receiver<bool>);

    impl Lock for Slow {
        async fn get(&self) -> Result<Observation, LockError> {
            Err(LockError::NotFound)
        }
        async fn create(&self, _: &LockRecord) -> Result<Observation, LockError> {
            Err(LockError::Conflict)
        }
        async fn update(&self, _: &Version, _: &LockRecord) -> Result<Observation, LockError> {
            Err(LockError::Conflict)
        }
        fn watch(&self, _: Option<&Version>) -> Option<WatchStream> {
            None
        }
        fn describe(&self) -> String {
            "slow".into()
        }
        fn configure(&self, _: &election_core::Config) {}
        fn leadership_changed(&self, _: &str, _: LeadershipChange) -> Option<LockTask> {
            let mut release = self.0.clone();
            Some(Box::pin(async move {
                let _ = release.wait_for(|r| *r).await;
            }))
        }
    }

    /// Every `Lock` method reaches the wrapped lock, `leadership_changed` and its
    /// task included.
    #[tokio::test]
    async fn the_wrapper_forwards_every_lock_method() {
        let tasks = LockTasks::new();
        lock_memory::conformance::check_wrapper(|probe| Layered::new(probe, tasks.clone()))
            .await
            .expect("forwards everything");
        assert!(tasks.settled(Duration::ZERO).await, "the probe's tasks ran");
    }

    #[tokio::test]
    async fn settled_waits_for_the_tasks_of_the_wrapped_lock() {
        let (release, released) = watch::channel(false);
        let tasks = LockTasks::new();
        let lock = Layered::new(Slow(released), tasks.clone());
        assert_eq!(lock.describe(), "slow", "forwarded");
        assert!(tasks.settled(Duration::ZERO).await, "none yet");

        let task = lock
            .leadership_changed("a", LeadershipChange::StoppedLeading)
            .expect("the wrapped lock's task");
        let running = tokio::spawn(task);
        assert!(!tasks.settled(Duration::from_millis(50)).await, "it runs");
        release.send_replace(true);
        assert!(tasks.settled(Duration::from_secs(5)).await, "it ended");
        running.await.expect("the task");

        // A task dropped unrun (a runtime shutting down) counts no more.
        drop(lock.leadership_changed("a", LeadershipChange::BecameLeader));
        assert!(tasks.settled(Duration::ZERO).await);
    }
}
