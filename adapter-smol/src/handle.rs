//! The smol builder and handle.

use std::future::Future;
use std::sync::Arc;

use election_core::{Config, Instant, Lock, Term};
use election_driver::{
    CancelSignal, DriverError, LeaderWork, LeadershipState, OnLoss, StateStream, WorkRun,
};

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
        self.inner = self.inner.leader_work(SignalWork(work));
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
        let inner = self.inner.spawn(self.runtime)?;
        Ok(Handle { inner })
    }
}

struct SignalWork<F>(F);

impl<F, Fut> LeaderWork for SignalWork<F>
where
    F: FnMut(Term, CancelSignal) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    fn start(&mut self, term: Term) -> WorkRun {
        let signal = CancelSignal::new();
        let future = (self.0)(term, signal.clone());
        WorkRun {
            future: Box::pin(future),
            cancel: Box::new(move || signal.cancel()),
        }
    }
}

/// A running election on smol. Dropping it shuts the election down in the
/// background (drain, best-effort release).
#[derive(Debug)]
pub struct Handle {
    inner: election_driver::Handle,
}

impl Handle {
    /// Whether this node leads now (false from its deadline on, by itself).
    pub fn is_leader(&self) -> bool {
        self.inner.is_leader()
    }

    /// The holder of the lock as this node last saw it.
    pub fn leader(&self) -> Option<Arc<str>> {
        self.inner.leader()
    }

    /// The current term (fencing token) while this node leads.
    pub fn term(&self) -> Option<Term> {
        self.inner.term()
    }

    /// The leadership deadline while leading, on [`Handle::now`]'s clock.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline()
    }

    /// The driver's clock.
    pub fn now(&self) -> Instant {
        self.inner.now()
    }

    /// This node's identity.
    pub fn identity(&self) -> &Arc<str> {
        self.inner.identity()
    }

    /// The last published state.
    pub fn state(&self) -> LeadershipState {
        self.inner.state()
    }

    /// A stream of leadership states (the current one, then each change, with the
    /// change that produced it); ends after the final state.
    pub fn states(&self) -> StateStream {
        self.inner.states()
    }

    /// Gives leadership up gracefully (drain, release, stay a follower for one
    /// lease). Resolves once the lock is no longer held by this node.
    pub async fn step_down(&self) {
        self.inner.step_down().await
    }

    /// Shuts down (drain and release if leading); resolves when the driver ended.
    pub async fn shutdown(self) {
        self.inner.shutdown().await
    }

    /// Stops at once without release, as a crash would (tests and demos).
    pub fn abort(self) {
        self.inner.abort()
    }
}
