//! The builder that ties a warm cache to an election: a fresh kube-runtime
//! controller for each term, drained within the term's budget on give-up.

use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use adapter_tokio::TokioRuntime;
use election_core::{Lock, Term};
use election_driver::{Builder, CancelSignal, DriverError, Handle, LeaderWork, Runtime, WorkRun};
use futures::future::{self, Either};
use futures::{FutureExt, Stream, StreamExt};
use kube_runtime::Controller;
use kube_runtime::controller::{Action, Error as ControllerRunError};
use kube_runtime::reflector::ObjectRef;
use kube_runtime::watcher;

use crate::term::{ClientRecipe, HandleSlot, TermContext, TermView};
use crate::warm::{Cached, Warm};

/// What a term's controller yields: kube-runtime's `Controller::run` stream.
pub type RunResult<K, E> = Result<(ObjectRef<K>, Action), ControllerRunError<E, watcher::Error>>;

/// A configuration the controller refuses, or an election that did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControllerError {
    /// The kube configuration gives no client (its TLS or auth settings).
    #[error("no kube client from this configuration: {0}")]
    Client(#[source] kube::Error),
    /// The drain timeout leaves no time to release within the release budget.
    #[error(
        "drain timeout {drain:?} is longer than the renew deadline minus the request timeout ({budget:?}): the lease would be left to expire instead of released"
    )]
    DrainTooLong {
        /// The drain timeout asked for.
        drain: Duration,
        /// The longest one that leaves time for the release.
        budget: Duration,
    },
    /// The election did not start (an invalid configuration, no tokio runtime).
    #[error(transparent)]
    Driver(#[from] DriverError),
}

/// A kube-runtime controller that reconciles only while this replica leads,
/// from a cache ([`Warm`]) kept warm on every replica.
///
/// On each `StartedLeading` it builds a controller fed by the warm cache (no
/// LIST: every cached object is queued at once) and a client guarded for the
/// term ([`TermContext`]), and hands both to your closure, which adds what it
/// needs (`owns`, config) and calls `run`. On a graceful give-up (step-down,
/// shutdown, a preemption) the controller stops taking new reconciles and lets
/// running ones finish (kube-runtime's `graceful_shutdown_on`), for at most the
/// drain timeout, after which the rest are aborted; then the election releases.
/// On a loss the same happens, and the guard has already closed the term's
/// client. The caches stay warm between terms; by default the replica
/// campaigns again after a loss (`Builder::on_loss(OnLoss::Exit)` ends the
/// election instead, as client-go's `RunOrDie`).
#[must_use = "a builder does nothing until spawned"]
pub struct ElectedController<K: Cached> {
    warm: Warm<K>,
    config: kube::Config,
    margin: Option<Duration>,
    annotate: bool,
    write_tokens: bool,
    drain: Option<Duration>,
}

impl<K: Cached> ElectedController<K> {
    /// A controller over `warm`, whose terms' clients are built from
    /// `kube_config` (the configuration the election's own client came from).
    pub fn new(warm: Warm<K>, kube_config: kube::Config) -> Self {
        ElectedController {
            warm,
            config: kube_config,
            margin: None,
            annotate: true,
            write_tokens: false,
            drain: None,
        }
    }

    /// A term's client writes only with this much time left before the
    /// leadership deadline (default: the election's request timeout, so that a
    /// write that passes can finish in time).
    pub fn guard_margin(mut self, margin: Duration) -> Self {
        self.margin = Some(margin);
        self
    }

    /// Whether a term's client stamps what it writes with the term
    /// (`election_ops::stamp`, default: on), so that the fence of
    /// `election_ops::fence`, or a reader downstream, can refuse an older term's
    /// work. Off, the fence refuses every write of the term's client. The stamp
    /// is fixed for the term: a reconcile that writes what is already stored
    /// changes nothing (no new version, no watch event), so a level-triggered
    /// controller settles; only its first write to each object in a new term
    /// is a real one.
    pub fn term_annotation(mut self, on: bool) -> Self {
        self.annotate = on;
        self
    }

    /// Whether each write of a term's client also carries a token of its own
    /// (`TermAnnotationLayer::write_tokens`, default: off), as a fence with no
    /// writer check (`Writer::Any`) requires. On, every write is a real one: a
    /// reconcile that writes what is already stored stores a new version and
    /// sends a watch event, and a controller that watches what it writes
    /// reconciles again, for ever; compare before writing. The default fence
    /// (`Writer::PodName`) needs no token.
    pub fn write_tokens(mut self, on: bool) -> Self {
        self.write_tokens = on;
        self
    }

    /// How long running reconciles may take to finish once leadership is given
    /// up (default and maximum: the renew deadline minus the request timeout,
    /// which leaves the release its request within the release budget).
    pub fn drain_timeout(mut self, drain: Duration) -> Self {
        self.drain = Some(drain);
        self
    }

    /// Starts the election `election` on the current tokio runtime, with `run`
    /// as its leader work: called on each term with the term's controller and
    /// context, it returns the stream of `Controller::run` (the crate docs
    /// show one).
    pub fn spawn<L, F, S, E>(self, election: Builder<L>, run: F) -> Result<Handle, ControllerError>
    where
        L: Lock,
        F: FnMut(Controller<K>, TermContext) -> S + Send + 'static,
        S: Stream<Item = RunResult<K, E>> + Send + 'static,
        E: std::error::Error + Send + 'static,
    {
        let config = election.config();
        let budget = config.drain_budget();
        let drain = match self.drain {
            Some(drain) if drain > budget => {
                return Err(ControllerError::DrainTooLong { drain, budget });
            }
            Some(drain) => drain,
            None => budget,
        };
        let recipe = ClientRecipe {
            margin: self.margin.unwrap_or(config.request_timeout),
            annotate: self.annotate,
            write_tokens: self.write_tokens,
            config: self.config,
        };
        // First the runtime (kube's client wants one), then fail here, not at
        // the first term, on a configuration that gives no client.
        let rt = TokioRuntime::current()?;
        kube::client::ClientBuilder::try_from(recipe.config.clone())
            .map_err(ControllerError::Client)?;
        let slot = HandleSlot::default();
        let work = TermWork {
            warm: self.warm,
            recipe,
            drain,
            slot: Arc::clone(&slot),
            run,
        };
        let (driver, handle) = election.custom_leader_work(work).build(rt.clone())?;
        let _ = slot.set(handle.observer());
        rt.spawn(Box::pin(driver.run()));
        Ok(handle)
    }
}

/// The leader work: one controller per term.
struct TermWork<K: Cached, F> {
    warm: Warm<K>,
    recipe: ClientRecipe,
    drain: Duration,
    slot: HandleSlot,
    run: F,
}

impl<K, F, S, E> LeaderWork for TermWork<K, F>
where
    K: Cached,
    F: FnMut(Controller<K>, TermContext) -> S + Send + 'static,
    S: Stream<Item = RunResult<K, E>> + Send + 'static,
    E: std::error::Error + Send + 'static,
{
    fn start(&mut self, term: Term) -> WorkRun {
        let signal = CancelSignal::new();
        let view = TermView {
            handle: Arc::clone(&self.slot),
            term: term.clone(),
        };
        let future = match self.recipe.build(view) {
            Ok(client) => {
                let controller = self
                    .warm
                    .controller()
                    .graceful_shutdown_on(signal.cancelled());
                let context = TermContext {
                    term,
                    client,
                    cancel: signal.clone(),
                };
                let stream = (self.run)(controller, context);
                drive(stream, signal.clone(), self.drain).boxed()
            }
            Err(error) => {
                // Deterministic from the configuration, which `spawn` checked.
                tracing::error!(%error, "no client for this term: no controller runs in it");
                future::ready(()).boxed()
            }
        };
        WorkRun {
            future,
            cancel: Box::new(move || signal.cancel()),
        }
    }
}

/// Drives a term's controller until it ends: by itself once drained after
/// `cancel`, or dropped (its running reconciles aborted) `drain` after it.
async fn drive<S, T, E>(stream: S, cancel: CancelSignal, drain: Duration)
where
    S: Stream<Item = Result<T, E>> + Send,
    E: Display,
{
    let run = stream.for_each(|result| {
        if let Err(error) = result {
            tracing::warn!(%error, "reconcile failed");
        }
        future::ready(())
    });
    let timeout = async {
        cancel.cancelled().await;
        tokio::time::sleep(drain).await;
    };
    match future::select(Box::pin(run), Box::pin(timeout)).await {
        Either::Left(_) if cancel.is_cancelled() => tracing::info!("controller drained"),
        Either::Left(_) => tracing::warn!("controller ended while leading: its watch stopped"),
        Either::Right(_) => {
            tracing::warn!(?drain, "drain timeout: the running reconciles are aborted");
        }
    }
}
