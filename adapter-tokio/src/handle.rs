//! The tokio builder and handle.

use std::future::Future;
use std::sync::Arc;

use election_core::{Config, Instant, Lock, Term};
use election_driver::{DriverError, LeaderWork, LeadershipState, OnLoss, StateStream, WorkRun};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::runtime::TokioRuntime;

/// Builds an election on tokio from a lock and a configuration.
#[must_use = "a builder does nothing until spawned"]
pub struct Builder<L> {
    inner: election_driver::Builder<L>,
    identity: Arc<str>,
    runtime: Option<TokioRuntime>,
}

impl<L: Lock> Builder<L> {
    /// An election for `lock` with `config`.
    pub fn new(lock: L, config: Config) -> Self {
        Builder {
            identity: config.identity.clone(),
            inner: election_driver::Builder::new(lock, config),
            runtime: None,
        }
    }

    /// Work to run while leading: called on each `StartedLeading` with the term
    /// (fencing token) and a token that is cancelled when leadership is given up or
    /// lost. On a graceful give-up the release waits until the work has returned
    /// (bounded by the leadership deadline), so return promptly once cancelled.
    pub fn leader_work<F, Fut>(mut self, work: F) -> Self
    where
        F: FnMut(Term, CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.inner = self.inner.custom_leader_work(TokenWork(work));
        self
    }

    /// What to do after losing leadership (default: campaign again; `Exit` ends the
    /// election as client-go's `RunOrDie` does).
    pub fn on_loss(mut self, on_loss: OnLoss) -> Self {
        self.inner = self.inner.on_loss(on_loss);
        self
    }

    /// The runtime to use (default: [`TokioRuntime::current`] at spawn).
    pub fn runtime(mut self, runtime: TokioRuntime) -> Self {
        self.runtime = Some(runtime);
        self
    }

    /// Starts the election on a tokio task. Fails on an invalid configuration or
    /// outside a tokio runtime.
    pub fn spawn(self) -> Result<Handle, DriverError> {
        let runtime = match self.runtime {
            Some(rt) => rt,
            None => TokioRuntime::current()?,
        };
        let (tx, rx) = watch::channel(LeadershipState::initial(self.identity));
        let inner = self
            .inner
            .on_state(move |s| {
                tx.send_replace(s.clone());
            })
            .spawn(runtime)?;
        Ok(Handle { inner, states: rx })
    }
}

struct TokenWork<F>(F);

impl<F, Fut> LeaderWork for TokenWork<F>
where
    F: FnMut(Term, CancellationToken) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    fn start(&mut self, term: Term) -> WorkRun {
        let token = CancellationToken::new();
        let future = (self.0)(term, token.clone());
        WorkRun {
            future: Box::pin(future),
            cancel: Box::new(move || token.cancel()),
        }
    }
}

/// A running election on tokio. Dropping it shuts the election down in the
/// background (drain, best-effort release).
#[derive(Debug)]
pub struct Handle {
    inner: election_driver::Handle,
    states: watch::Receiver<LeadershipState>,
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

    /// A watch of leadership states (each with the change that produced it).
    pub fn watch(&self) -> watch::Receiver<LeadershipState> {
        self.states.clone()
    }

    /// Every state in order as a `Stream` (the watch keeps only the latest); ends
    /// after the final state.
    pub fn states(&self) -> StateStream {
        self.inner.states()
    }

    /// Gives leadership up gracefully (drain, release, stay a follower for one
    /// lease). Resolves once the lock is no longer held by this node.
    pub async fn step_down(&self) {
        self.inner.step_down().await
    }

    /// Shuts down (drain and release if leading); resolves when the driver ended.
    /// Callable through a shared `Arc<Handle>`; afterwards the handle reports
    /// "not leader".
    pub async fn shutdown(&self) {
        self.inner.shutdown().await
    }

    /// Stops at once without release, as a crash would (tests and demos).
    pub fn abort(self) {
        self.inner.abort()
    }
}
