//! The leader-work runner: start the work on each term, cancel it on drain or loss,
//! and know when it has ended.
//!
//! The driver spawns the work (it never awaits it inline), so renewals go on while
//! it drains; a panic in the work is caught and reported, whether it comes from the
//! future or from the [`LeaderWork::start`] call that makes it. The order of a graceful
//! give-up is the point: on [`election_core::Event::Draining`] the work is
//! cancelled, and only once it has ended does the driver call
//! [`election_core::Elector::work_stopped`], which reports the stop and then writes
//! the release.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use election_core::Term;
use futures::FutureExt;
use futures::channel::oneshot;

use crate::runtime::{BoxFuture, Runtime};
use crate::signal::CancelSignal;

/// One run of the leader work: its future and how to tell it to stop.
pub struct WorkRun {
    /// The work; it should end soon after `cancel` is called.
    pub future: BoxFuture<()>,
    /// Tells the work to stop (cancels its token or signal). Called at most once.
    pub cancel: Box<dyn FnOnce() + Send>,
}

/// Makes the leader work for each term, with its own way of being told to stop.
/// [`crate::Builder::leader_work`] takes a closure with a [`CancelSignal`]
/// instead; implement this for another cancellation type (`adapter-tokio`'s
/// `token_work` does, for tokio's `CancellationToken`) and pass it to
/// [`crate::Builder::custom_leader_work`].
pub trait LeaderWork: Send + 'static {
    /// The work for `term`, which has just started.
    fn start(&mut self, term: Term) -> WorkRun;
}

/// A closure taking a [`CancelSignal`], as [`crate::Builder::leader_work`] takes it.
pub(crate) struct SignalWork<F>(pub(crate) F);

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

/// How a run of the work ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum WorkEnd {
    /// It returned.
    Returned,
    /// It panicked, with this message.
    Panicked(String),
}

struct Running {
    term: Term,
    cancel: Option<Box<dyn FnOnce() + Send>>,
    done: oneshot::Receiver<WorkEnd>,
}

/// The runner: at most one run at a time; a term that starts while the previous
/// run still drains begins when it has ended.
pub(crate) struct WorkRunner {
    factory: Option<Box<dyn LeaderWork>>,
    running: Option<Running>,
    pending: Option<Term>,
}

impl WorkRunner {
    pub(crate) fn new(factory: Option<Box<dyn LeaderWork>>) -> Self {
        WorkRunner {
            factory,
            running: None,
            pending: None,
        }
    }

    /// Whether a run is under way (started and not yet ended).
    pub(crate) fn is_running(&self) -> bool {
        self.running.is_some()
    }

    /// A term started: start its work now, or once the previous run has ended.
    pub(crate) fn start<R: Runtime>(&mut self, rt: &R, term: Term) {
        if self.running.is_some() {
            self.pending = Some(term);
            return;
        }
        let Some(factory) = &mut self.factory else {
            return;
        };
        let (tx, done) = oneshot::channel();
        // The factory is user code called on the driver's task: a panic in it
        // must not end the driver. It is reported as a panicking run that has
        // already ended (nothing was spawned, there is nothing to cancel).
        let run = match std::panic::catch_unwind(AssertUnwindSafe(|| factory.start(term.clone()))) {
            Ok(run) => run,
            Err(panic) => {
                let _ = tx.send(WorkEnd::Panicked(panic_message(panic.as_ref())));
                self.running = Some(Running {
                    term,
                    cancel: None,
                    done,
                });
                return;
            }
        };
        let future = run.future;
        rt.spawn(Box::pin(async move {
            let end = match AssertUnwindSafe(future).catch_unwind().await {
                Ok(()) => WorkEnd::Returned,
                Err(panic) => WorkEnd::Panicked(panic_message(panic.as_ref())),
            };
            let _ = tx.send(end);
        }));
        self.running = Some(Running {
            term,
            cancel: Some(run.cancel),
            done,
        });
    }

    /// Tells the running work to stop and forgets a pending start.
    pub(crate) fn cancel(&mut self) {
        self.pending = None;
        if let Some(r) = &mut self.running
            && let Some(cancel) = r.cancel.take()
        {
            cancel();
        }
    }

    /// Polls for the end of the running work: its term and how it ended.
    pub(crate) fn poll_end(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<(Term, WorkEnd)> {
        let Some(r) = &mut self.running else {
            return std::task::Poll::Pending;
        };
        let end = futures::ready!(r.done.poll_unpin(cx)).unwrap_or(WorkEnd::Returned);
        let term = r.term.clone();
        self.running = None;
        std::task::Poll::Ready((term, end))
    }

    /// The term waiting for the previous run to end, taken.
    pub(crate) fn take_pending(&mut self) -> Option<Term> {
        self.pending.take()
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
