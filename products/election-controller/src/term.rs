//! One leadership term as the reconcilers see it: its term, and a client whose
//! writes pass only while this node leads in that term.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use election_core::{Instant, Term};
use election_driver::{CancelSignal, Cancelled, LeadershipState, Observer};
use election_ops::LeadershipView;
use election_ops::client::guarded_client;
use election_ops::guard::{TermAnnotationLayer, WriteGuardLayer};

/// The election's observer, set once the election is built (the leader work
/// is made before the election exists).
pub(crate) type HandleSlot = Arc<OnceLock<Observer>>;

/// A [`LeadershipView`] that leads only in one term: a reconcile of an
/// earlier term cannot write, even once this node leads again.
#[derive(Clone)]
pub(crate) struct TermView {
    pub(crate) handle: HandleSlot,
    pub(crate) term: Term,
}

impl LeadershipView for TermView {
    fn now(&self) -> Instant {
        self.handle.get().map_or(Instant::ZERO, Observer::now)
    }

    fn deadline(&self) -> Option<Instant> {
        let handle = self.handle.get()?;
        if handle.state().term.as_ref() == Some(&self.term) {
            handle.deadline()
        } else {
            None
        }
    }

    fn state(&self) -> LeadershipState {
        match self.handle.get() {
            Some(handle) => handle.state(),
            None => LeadershipState::initial(Arc::from("")),
        }
    }
}

/// What a term's controller gets besides the store: the term, a client for its
/// writes, and the signal that the term is being given up.
#[derive(Clone)]
pub struct TermContext {
    /// The term (fencing token) this controller runs in.
    pub term: Term,
    /// A client whose writes pass only while this node leads in
    /// [`TermContext::term`] with the guard's margin left; any other write fails
    /// at once with `election_ops::guard::NotLeader` (see
    /// `election_ops::guard::not_leader`) and is not sent. Every attempt is
    /// judged (kube's retries run above the guard) and each write attempt is
    /// bounded by the margin (`election_ops::client::guarded_client`). Unless turned off, its
    /// writes carry the term's stamp (`election_ops::stamp`: the term and the
    /// holder, fixed for the term, so a write of what is already stored
    /// changes nothing), whatever their verb, as the fence requires.
    pub client: kube::Client,
    pub(crate) cancel: CancelSignal,
}

impl TermContext {
    /// Completes when this term is given up or lost. The controller handed to
    /// the closure already stops on it (`graceful_shutdown_on`); pass it to
    /// anything else the term runs, such as a controller built by hand.
    pub fn given_up(&self) -> Cancelled {
        self.cancel.cancelled()
    }
}

impl std::fmt::Debug for TermContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TermContext")
            .field("term", &self.term)
            .finish_non_exhaustive()
    }
}

/// How a term's client is built.
#[derive(Clone)]
pub(crate) struct ClientRecipe {
    pub(crate) config: kube::Config,
    pub(crate) margin: Duration,
    pub(crate) annotate: bool,
    pub(crate) write_tokens: bool,
}

impl ClientRecipe {
    /// The guarded client for `view`'s term (`election_ops::client`): the stamp
    /// layer outside the guard, so that the guard judges every request the stamp
    /// layer sends (a delete is two: the deletion mark, then the delete), kube's
    /// retries above both (each attempt judged again), and each write attempt
    /// bounded by the margin, the request timeout it reserves.
    pub(crate) fn build(&self, view: TermView) -> Result<kube::Client, kube::Error> {
        let guard = WriteGuardLayer::new(view.clone()).margin(self.margin);
        let stamp = self
            .annotate
            .then(|| TermAnnotationLayer::new(view).write_tokens(self.write_tokens));
        guarded_client(self.config.clone(), &guard, stamp.as_ref())
    }
}
