//! The smol builder and handle.

use std::future::Future;

use election_core::{Config, Lock, Term};
use election_driver::{CancelSignal, DriverError, Handle, OnLoss};

use crate::runtime::SmolRuntime;

/// Builds an election on smol from a lock and a configuration.
#[must_use = "a builder does nothing until spawned"]
pub struct Builder<L> {
    inner: election_driver::Builder<L>,
    runtime: SmolRuntime,
}

impl<L: Lock> Builder<L> {
    /// An election for `lock` with `config`.
    pub fn new(lock: L, config: Config) -> Self {
        Builder {
            inner: election_driver::Builder::new(lock, config),
            runtime: SmolRuntime::new(),
        }
    }

    /// Work to run while leading: called on each `StartedLeading` with the term
    /// (fencing token) and a signal cancelled when leadership is given up or lost.
    /// On a graceful give-up the release waits until the work has returned
    /// (bounded by the leadership deadline), so return promptly once cancelled.
    pub fn leader_work<F, Fut>(mut self, work: F) -> Self
    where
        F: FnMut(Term, CancelSignal) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.inner = self.inner.leader_work(work);
        self
    }

    /// What to do after losing leadership (default: campaign again; `Exit` ends the
    /// election as client-go's `RunOrDie` does).
    pub fn on_loss(mut self, on_loss: OnLoss) -> Self {
        self.inner = self.inner.on_loss(on_loss);
        self
    }

    /// Starts the election on smol's global executor. Fails on an invalid
    /// configuration.
    pub fn spawn(self) -> Result<Handle, DriverError> {
        self.inner.spawn(self.runtime)
    }
}
