//! The handle a user holds on a running driver.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use election_core::{Instant, Term};
use futures::FutureExt;
use futures::channel::{mpsc, oneshot};

use crate::shared::{Shared, StateStream};
use crate::signal::CancelSignal;
use crate::state::LeadershipState;

/// A command from the handle to the driver loop.
pub(crate) enum Command {
    StepDown(oneshot::Sender<()>),
    Standby(bool),
    Shutdown(oneshot::Sender<()>),
    Abort,
}

/// A running [`Builder::companion`](crate::Builder::companion): the signal that
/// stops it, and the one that fires when it has ended.
#[derive(Clone)]
pub(crate) struct Companion {
    pub(crate) stop: CancelSignal,
    pub(crate) ended: CancelSignal,
}

/// A read-only view of a running election: whether this node leads, its
/// deadline, term and state. Cheap to clone, and unlike the [`Handle`] it does
/// not keep the driver running: for helpers that must read leadership from
/// inside the leader work (a write guard bound to one term), which exists
/// before the handle does.
#[derive(Clone)]
pub struct Observer {
    shared: Arc<Shared>,
    identity: Arc<str>,
}

impl Observer {
    /// This node's identity.
    pub fn identity(&self) -> &Arc<str> {
        &self.identity
    }

    /// Whether this node leads now: it started leading and its leadership deadline,
    /// as the driver last published it, has not passed on the driver's clock. Turns
    /// false at the deadline by itself, even if the driver is wedged.
    pub fn is_leader(&self) -> bool {
        self.shared.is_leader()
    }

    /// The leadership deadline while this node leads (the send time of the last
    /// successful write plus the renew deadline).
    pub fn deadline(&self) -> Option<Instant> {
        self.shared.deadline()
    }

    /// The driver's clock, as [`Observer::is_leader`] reads it.
    pub fn now(&self) -> Instant {
        self.shared.now()
    }

    /// The holder of the lock as this node last saw it.
    pub fn leader(&self) -> Option<Arc<str>> {
        self.shared.state().leader
    }

    /// Who leads by this node's knowledge at this instant: this node while it
    /// leads ([`Observer::is_leader`]; not while it holds the lock in the
    /// strict lock delay, nor once its deadline passed); another holder until
    /// its lease, timed on this node's clock from the first sight of the
    /// version it last renewed, ends (past it, that holder may be gone);
    /// otherwise `None`. A holder still in its own lock delay is named by its
    /// lease alone.
    pub fn leader_now(&self) -> Option<Arc<str>> {
        let state = self.shared.state();
        let holder = state.leader?;
        let leads = if *holder == *self.identity {
            self.is_leader()
        } else {
            self.shared
                .holder_until()
                .is_some_and(|until| self.now() < until)
        };
        leads.then_some(holder)
    }

    /// The current term (fencing token) while this node leads now.
    pub fn term(&self) -> Option<Term> {
        if self.is_leader() {
            self.shared.state().term
        } else {
            None
        }
    }

    /// The last published state.
    pub fn state(&self) -> LeadershipState {
        self.shared.state()
    }

    /// A stream of states: the current one, then each change.
    pub fn states(&self) -> StateStream {
        StateStream::new(&self.shared)
    }
}

impl core::fmt::Debug for Observer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Observer")
            .field("identity", &self.identity)
            .field("is_leader", &self.is_leader())
            .finish()
    }
}

/// A running election: ask whether this node leads, follow its state, step down,
/// shut down.
///
/// Dropping the handle without [`Handle::shutdown`] shuts the driver down in the
/// background: it drains the leader work and releases the lock (best effort, within
/// one renew deadline), then ends.
pub struct Handle {
    observer: Observer,
    commands: mpsc::UnboundedSender<Command>,
    companion: Option<Companion>,
}

impl Handle {
    pub(crate) fn new(
        shared: Arc<Shared>,
        commands: mpsc::UnboundedSender<Command>,
        identity: Arc<str>,
        companion: Option<Companion>,
    ) -> Self {
        Handle {
            observer: Observer { shared, identity },
            commands,
            companion,
        }
    }

    /// A read-only view that does not keep the driver running ([`Observer`]).
    pub fn observer(&self) -> Observer {
        self.observer.clone()
    }

    /// This node's identity.
    pub fn identity(&self) -> &Arc<str> {
        self.observer.identity()
    }

    /// Whether this node leads now ([`Observer::is_leader`]): false from the
    /// published deadline on, even if the driver is wedged.
    pub fn is_leader(&self) -> bool {
        self.observer.is_leader()
    }

    /// The leadership deadline while this node leads ([`Observer::deadline`]).
    pub fn deadline(&self) -> Option<Instant> {
        self.observer.deadline()
    }

    /// The driver's clock, as [`Handle::is_leader`] reads it.
    pub fn now(&self) -> Instant {
        self.observer.now()
    }

    /// The holder of the lock as this node last saw it.
    pub fn leader(&self) -> Option<Arc<str>> {
        self.observer.leader()
    }

    /// Who leads by this node's knowledge at this instant
    /// ([`Observer::leader_now`]).
    pub fn leader_now(&self) -> Option<Arc<str>> {
        self.observer.leader_now()
    }

    /// The current term (fencing token) while this node leads now.
    pub fn term(&self) -> Option<Term> {
        self.observer.term()
    }

    /// The last published state.
    pub fn state(&self) -> LeadershipState {
        self.observer.state()
    }

    /// A stream of states: the current one, then each change.
    ///
    /// Every state the driver publishes before it answers [`Handle::step_down`]
    /// or [`Handle::shutdown`] is ready in the stream when that answer resolves,
    /// and `StoppedLeading` is ready before the release is written. A task that
    /// polls the stream before the answer (a biased `select`) reads every such
    /// state before the answer resolves, even when the driver published them and
    /// answered between its two polls: the answer resolves one poll after it
    /// arrived. No state is coalesced: the stream holds every state in order
    /// unless its reader falls [`crate::STREAM_BUFFER`] states behind. A reader on
    /// another task still runs when its executor schedules it, which on a loaded
    /// machine can be after the release: work that must stop before the release
    /// runs as leader work ([`crate::Builder::leader_work`]), which the release
    /// awaits.
    pub fn states(&self) -> StateStream {
        self.observer.states()
    }

    /// Gives leadership up gracefully: the leader work is cancelled and awaited,
    /// then the lock is released, and this node stays a follower for one lease
    /// duration. Resolves once this node no longer holds the lock (at once if it
    /// does not), or when the driver has ended, one poll after the driver's
    /// answer: the states published before it are read first by a task polling
    /// a stream before this future ([`Handle::states`]).
    pub async fn step_down(&self) {
        let (tx, rx) = oneshot::channel();
        let sent = self.commands.unbounded_send(Command::StepDown(tx)).is_ok();
        Answer::new(sent.then_some(rx)).await;
    }

    /// Stands by (`true`) or campaigns again (`false`): on standby this node
    /// follows the lock and times its lease but never writes to take it; back
    /// from standby it takes a lease it timed past its expiry at once
    /// ([`election_core::Elector::set_standby`]). A leader stays leader (step down
    /// to end it). For helpers that decide who may campaign, such as sharding.
    pub fn set_standby(&self, standby: bool) {
        let _ = self.commands.unbounded_send(Command::Standby(standby));
    }

    /// Shuts down: stops the [companion](crate::Builder::companion) and awaits
    /// its end, then drains and releases if leading (unless the configuration
    /// says not to release), then ends the driver. Resolves when the driver has
    /// ended, one poll after its answer, as [`Handle::step_down`] does.
    ///
    /// Takes `&self` so that a handle shared behind an `Arc` (with a write guard or
    /// a health endpoint) can be shut down without first collecting every clone.
    /// Afterwards the handle reports "not leader" and its commands do nothing.
    pub async fn shutdown(&self) {
        if let Some(companion) = &self.companion {
            companion.stop.cancel();
            companion.ended.cancelled().await;
        }
        let (tx, rx) = oneshot::channel();
        let sent = self.commands.unbounded_send(Command::Shutdown(tx)).is_ok();
        Answer::new(sent.then_some(rx)).await;
    }

    /// Stops the driver at once, without draining or releasing: what a crash does
    /// to the election. The lease stays held until it expires. The leader work is
    /// told to stop but not awaited (a real crash would kill it). Meant for tests
    /// and demos.
    pub fn abort(&self) {
        let _ = self.commands.unbounded_send(Command::Abort);
    }
}

/// The driver's answer to [`Handle::step_down`] or [`Handle::shutdown`], taken
/// one poll after it arrived (docs/faults.md H10).
///
/// The driver answers only after it has published the states that led to the
/// answer, so they are queued in every stream by then. But a task that polls a
/// stream and then the answer (a biased `select`, a loop reading states until
/// the answer) may find the stream empty, be descheduled, and find the answer
/// there at its next poll: the driver, on another thread, published the states
/// and answered in between. Ending on that answer, it would never read them.
/// So the answer, when first seen, wakes its task and stays pending for that
/// poll: the next round polls the stream again, now after the answer was
/// seen, so after the states were queued, and reads them before the answer
/// resolves. A driver that has ended (the command could not be sent, or was
/// dropped unanswered) counts as an answer: its states were all published
/// before it ended.
struct Answer {
    /// `None` once the answer arrived, or when the command was not sent.
    rx: Option<oneshot::Receiver<()>>,
    /// The answer was seen at an earlier poll: resolve now.
    seen: bool,
}

impl Answer {
    fn new(rx: Option<oneshot::Receiver<()>>) -> Self {
        Answer { rx, seen: false }
    }
}

impl Future for Answer {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.seen {
            return Poll::Ready(());
        }
        if let Some(rx) = &mut self.rx {
            // Answered, or the driver ended without answering: the same to us.
            let _ = futures::ready!(rx.poll_unpin(cx));
            self.rx = None;
        }
        self.seen = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl core::fmt::Debug for Handle {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Handle")
            .field("identity", self.identity())
            .field("is_leader", &self.is_leader())
            .finish()
    }
}
