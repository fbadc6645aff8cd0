//! The driver loop, written once for every runtime.
//!
//! Each turn: read the clock; if the elector's deadline (`poll_timeout`) has
//! passed, handle the timeout at once; drain actions (start the one lock call;
//! the elector bounds it by the request timeout, and the driver drops a call
//! the elector no longer awaits) and events (deliver them: state, leader work);
//! publish the state; then wait for the first of the timer, the lock's answer, a
//! watch observation, a command, or the end of the leader work.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use election_core::{
    Action, Config, Elector, Event, Input, Instant, Lock, LockError, Observation, OpId, OpKind,
    Role, Term, Version, WatchEvent,
};
use futures::channel::{mpsc, oneshot};
use futures::{FutureExt, StreamExt};
use tracing::{debug, info, warn};

use crate::handle::{Command, Companion, Handle};
use crate::runtime::{BoxFuture, Runtime};
use crate::shared::{Shared, StateHook};
use crate::signal::{CancelSignal, Cancelled};
use crate::state::{Change, DriverError, LeadershipState};
use crate::watch::{StartFrom, Watch};
use crate::work::{LeaderWork, SignalWork, WorkEnd, WorkRunner};

/// The longest the driver sleeps at a time. Its clock keeps counting during
/// suspend but runtime timers may not, so after a resume the driver looks at the
/// clock within this long (and a resumed leader is already past its deadline).
pub const MAX_SLEEP: Duration = Duration::from_secs(1);

/// How long the loop waits before looking again when the elector reports a
/// timeout that is already due right after handling it (see `arm_timer`).
const SPIN_GUARD: Duration = Duration::from_millis(1);

/// How many lease durations a watch may stay silent before the driver restarts
/// it (docs/faults.md W1: silence never means "unchanged"). A healthy watch delivers every
/// renewal of whoever leads, so a long silence means a quiet lock or a hung watch.
pub const WATCH_IDLE_LEASES: u32 = 3;

/// What the driver does when leadership is lost (not given up on request).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OnLoss {
    /// Campaign again, as Pinniped does. The default.
    #[default]
    Campaign,
    /// End the driver, as client-go's `RunOrDie` does: the state stream ends with
    /// [`Change::Elector`]`(`[`Event::Terminated`]`)`.
    Exit,
}

/// Builds a driver from a lock and a configuration.
#[must_use = "a builder does nothing until spawned"]
pub struct Builder<L> {
    lock: L,
    config: Config,
    work: Option<Box<dyn LeaderWork>>,
    on_loss: OnLoss,
    hooks: Vec<StateHook>,
    watch_idle: Option<Duration>,
    standby: bool,
    companion: Option<CompanionStart>,
}

/// What starts a [`Builder::companion`]: its future, given its stop signal.
type CompanionStart = Box<dyn FnOnce(CancelSignal) -> BoxFuture<()> + Send>;

impl<L: Lock> Builder<L> {
    /// A driver for `lock` with `config`.
    pub fn new(lock: L, config: Config) -> Self {
        Builder {
            lock,
            config,
            work: None,
            on_loss: OnLoss::Campaign,
            hooks: Vec::new(),
            watch_idle: None,
            standby: false,
            companion: None,
        }
    }

    /// The configuration the election will run with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Work to run while leading: called on each `StartedLeading` with the term
    /// (the fencing token) and a [`CancelSignal`] that fires when leadership is
    /// given up or lost. The work runs on a task of its own, so renewals go on
    /// while it runs; on a graceful give-up the release waits until it has
    /// returned (bounded by the leadership deadline), so return promptly once
    /// `cancel.cancelled()` completes. A panic in it is reported
    /// ([`DriverError::WorkPanicked`]), never fatal.
    ///
    /// Replaces any work set before. For work that needs its own cancellation type
    /// (a tokio `CancellationToken`), see [`Builder::custom_leader_work`].
    pub fn leader_work<F, Fut>(self, work: F) -> Self
    where
        F: FnMut(Term, CancelSignal) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.custom_leader_work(SignalWork(work))
    }

    /// Leader work made by a [`LeaderWork`] of your own: it decides how the work
    /// is told to stop. Replaces any work set before.
    pub fn custom_leader_work(mut self, work: impl LeaderWork) -> Self {
        self.work = Some(Box::new(work));
        self
    }

    /// What to do when leadership is lost (default: campaign again).
    pub fn on_loss(mut self, on_loss: OnLoss) -> Self {
        self.on_loss = on_loss;
        self
    }

    /// A hook called with every published state, on the driver's task, right
    /// after the state is queued on the [`Handle::states`] streams and before the
    /// driver does anything else (a reader on another thread may see the state
    /// first). Keep it short: the election waits for it.
    /// Each call adds a hook; they run in the order they were added.
    pub fn on_state(mut self, hook: impl Fn(&LeadershipState) + Send + Sync + 'static) -> Self {
        self.hooks.push(Box::new(hook));
        self
    }

    /// How long the lock's watch may deliver nothing before it is restarted
    /// (default: [`WATCH_IDLE_LEASES`] lease durations). A zero limit is taken as
    /// one lease duration.
    pub fn watch_idle_limit(mut self, limit: Duration) -> Self {
        self.watch_idle = Some(limit);
        self
    }

    /// Starts on standby ([`Handle::set_standby`]): following the lock without
    /// taking it until told to campaign. Off by default.
    pub fn standby(mut self, standby: bool) -> Self {
        self.standby = standby;
        self
    }

    /// A task that runs beside the election for its whole life, started on the
    /// driver's runtime when the driver is built ([`Builder::spawn`] or
    /// [`Builder::build`]), and stopped first: [`Handle::shutdown`] (or the
    /// driver, when every handle is dropped) fires its [`CancelSignal`] and
    /// awaits its end before the election drains and releases. When the driver
    /// ends otherwise (an abort, a loss with [`OnLoss::Exit`]) the signal fires
    /// too, unawaited.
    ///
    /// For coordinated election's candidacy (`LeaseCandidate::run`), which must be
    /// withdrawn before the release, or the coordinator hands the released Lease
    /// straight back: `.companion(move |stop| async move { candidate.run(stop.cancelled()).await })`.
    /// Return promptly once the signal fires: the shutdown waits for it.
    /// Replaces any companion set before.
    pub fn companion<F, Fut>(mut self, start: F) -> Self
    where
        F: FnOnce(CancelSignal) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.companion = Some(Box::new(move |stop| Box::pin(start(stop))));
        self
    }

    /// Starts the driver on `rt`. Fails only on an invalid configuration.
    pub fn spawn<R: Runtime>(self, rt: R) -> Result<Handle, DriverError> {
        let (driver, handle) = self.build(rt.clone())?;
        rt.spawn(Box::pin(driver.run()));
        Ok(handle)
    }

    /// The driver and its handle, without spawning: run [`Driver::run`] on a task
    /// of your choice.
    pub fn build<R: Runtime>(self, rt: R) -> Result<(Driver<L, R>, Handle), DriverError> {
        let now = rt.now();
        let identity = self.config.identity.clone();
        let lease = self.config.lease_duration;
        let watch_idle = match self.watch_idle {
            Some(limit) if !limit.is_zero() => limit,
            Some(_) => lease,
            None => lease.saturating_mul(WATCH_IDLE_LEASES),
        };
        let mut elector = Elector::new(self.config, now)?;
        if self.standby {
            elector.set_standby(true, now);
        }
        // Timeouts are set once, in the configuration: the lock takes the bound
        // of its own waiting from it (each call is bounded here, in `start_call`).
        self.lock.configure(elector.config());
        let clock = rt.clone();
        let mut hooks = self.hooks;
        let hook: Option<StateHook> = match hooks.len() {
            0 => None,
            1 => hooks.pop(),
            _ => Some(Box::new(move |s: &LeadershipState| {
                for hook in &hooks {
                    hook(s);
                }
            })),
        };
        let shared = Shared::new(
            LeadershipState::initial(identity.clone()),
            hook,
            Box::new(move || clock.now()),
        );
        let (tx, rx) = mpsc::unbounded();
        let companion = self.companion.map(|start| {
            let (stop, ended) = (CancelSignal::new(), CancelSignal::new());
            let (task, done) = (start(stop.clone()), ended.clone());
            rt.spawn(Box::pin(async move {
                task.await;
                done.cancel();
            }));
            Companion { stop, ended }
        });
        let companion_stop = companion
            .as_ref()
            .map(|c| (StopOnDrop(c.stop.clone()), c.ended.clone()));
        let handle = Handle::new(shared.clone(), tx, identity, companion);
        let driver = Driver {
            lock: Arc::new(self.lock),
            rt,
            elector,
            shared,
            commands: Some(rx),
            call: None,
            watch: Watch::new(watch_idle),
            timer: None,
            work: WorkRunner::new(self.work),
            on_loss: self.on_loss,
            step_down_waiters: Vec::new(),
            shutdown_waiters: Vec::new(),
            companion: companion_stop,
            companion_ending: None,
        };
        Ok((driver, handle))
    }
}

/// Fires its signal when dropped.
struct StopOnDrop(CancelSignal);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// One lock call in flight. Its request timeout is the elector's
/// (`Timer::Request`): the driver keeps no timer of its own for it.
struct Call {
    op: OpId,
    kind: OpKind,
    future: BoxFuture<Result<Observation, LockError>>,
}

/// What woke the loop.
enum Wake {
    Command(Option<Command>),
    Answer(OpId, Result<Observation, LockError>),
    Watch(Option<Result<WatchEvent, LockError>>),
    WorkEnded(election_core::Term, WorkEnd),
    /// The companion ended after every handle was dropped.
    CompanionEnded,
    Timer,
}

/// The state of a driver: an elector, its lock, its runtime, and the loop's I/O.
pub struct Driver<L, R> {
    lock: Arc<L>,
    rt: R,
    elector: Elector,
    shared: Arc<Shared>,
    commands: Option<mpsc::UnboundedReceiver<Command>>,
    call: Option<Call>,
    watch: Watch,
    timer: Option<(Instant, BoxFuture<()>)>,
    work: WorkRunner,
    on_loss: OnLoss,
    step_down_waiters: Vec<oneshot::Sender<()>>,
    shutdown_waiters: Vec<oneshot::Sender<()>>,
    /// Stops the [`Builder::companion`] when the driver ends, however it ends;
    /// and the signal that it has ended.
    companion: Option<(StopOnDrop, CancelSignal)>,
    /// Every handle dropped: the companion's end, awaited before the shutdown
    /// (as [`Handle::shutdown`] awaits it), so that it ends before the release.
    companion_ending: Option<Cancelled>,
}

impl<L: Lock, R: Runtime> Driver<L, R> {
    /// Runs the election until shutdown (or, with [`OnLoss::Exit`], until a loss).
    pub async fn run(mut self) {
        let span = tracing::info_span!(
            "election",
            identity = %self.elector.config().identity,
            lock = %self.lock.describe(),
        );
        // The span is entered per turn, never across an await.
        self.publish(Change::Started, self.rt.now());
        loop {
            let now = self.rt.now();
            let step = span.in_scope(|| self.turn(now));
            if step.is_break() {
                break;
            }
            let wake = futures::future::poll_fn(|cx| self.poll_wake(cx)).await;
            let now = self.rt.now();
            if span.in_scope(|| self.on_wake(wake, now)).is_break() {
                return; // aborted
            }
        }
        span.in_scope(|| self.finish());
    }

    /// One turn: timeouts, actions, events, state. Breaks when the elector ended.
    fn turn(&mut self, now: Instant) -> core::ops::ControlFlow<()> {
        match self.watch.due(now) {
            Some(StartFrom::Fresh) => self.start_watch(None, now),
            Some(StartFrom::LastObserved) => self.start_watch(self.last_observed(), now),
            None if self.watch.silent_too_long(now) => {
                self.restart_lagging_watch("silent for too long", now);
            }
            None => {}
        }
        if self.elector.poll_timeout().is_some_and(|t| t <= now) {
            self.elector.handle_timeout(now);
        }
        self.flush(now);
        if self.elector.is_terminated() {
            return core::ops::ControlFlow::Break(());
        }
        self.arm_timer(now);
        core::ops::ControlFlow::Continue(())
    }

    /// Drains actions and events until both are empty (delivering an event may
    /// call back into the elector), then publishes the deadline.
    fn flush(&mut self, now: Instant) {
        // A call the elector timed out (or otherwise stopped waiting for) is
        // dropped: its answer would be ignored, and a hung one holds a request.
        if let Some(call) = &self.call
            && self.elector.awaiting() != Some(call.op)
        {
            debug!(op = ?call.op, "dropping a lock call the elector no longer awaits");
            self.call = None;
        }
        loop {
            let mut progressed = false;
            while let Some(action) = self.elector.poll_action() {
                self.start_call(action);
                progressed = true;
            }
            while let Some(event) = self.elector.poll_event() {
                self.deliver(event, now);
                progressed = true;
            }
            if !progressed {
                break;
            }
        }
        self.publish_deadline(now);
        if matches!(self.elector.role(), Role::Follower | Role::Terminated) {
            for w in self.step_down_waiters.drain(..) {
                let _ = w.send(());
            }
        }
    }

    /// Publishes the leadership deadline (none unless leading now), and until
    /// when another holder may lead.
    fn publish_deadline(&self, now: Instant) {
        let deadline = if self.elector.is_leader(now) {
            self.elector.deadline()
        } else {
            None
        };
        self.shared.set_deadline(deadline);
        self.shared
            .set_holder_until(self.elector.holder_lease_end());
    }

    /// Starts the one lock call, replacing any call the elector gave up on.
    fn start_call(&mut self, action: Action) {
        let lock = self.lock.clone();
        let op = action.op();
        let kind = action.kind();
        debug!(?op, %kind, "lock call");
        let future: BoxFuture<Result<Observation, LockError>> = match action {
            Action::Get { .. } => Box::pin(async move { lock.get().await }),
            Action::Create { record, .. } => Box::pin(async move { lock.create(&record).await }),
            Action::Update {
                expected, record, ..
            } => Box::pin(async move { lock.update(&expected, &record).await }),
        };
        self.call = Some(Call { op, kind, future });
    }

    /// Delivers one event: tracing, leader work, the lock's news, then the state.
    fn deliver(&mut self, event: Event, now: Instant) {
        let mut then_work_stopped = false;
        let mut then_exit = false;
        match &event {
            Event::StartedLeading { term } => {
                info!(%term, "started leading");
                self.work.start(&self.rt, term.clone());
                self.tell_lock(election_core::LeadershipChange::BecameLeader);
            }
            Event::Draining { reason } => {
                info!(%reason, "draining leader work");
                self.work.cancel();
                then_work_stopped = !self.work.is_running();
            }
            Event::StoppedLeading { term, reason } => {
                info!(%term, %reason, "stopped leading");
                self.work.cancel();
                self.tell_lock(election_core::LeadershipChange::StoppedLeading);
                then_exit = !reason.is_graceful() && self.on_loss == OnLoss::Exit;
            }
            Event::LeaderChanged { leader } => debug!(?leader, "leader changed"),
            Event::Warning(w) => warn!(warning = %w, "election problem"),
            // The driver's last state says it, once the driver has ended.
            Event::Terminated => return debug!("elector terminated"),
            other => return debug!(event = ?other, "event not acted on"),
        }
        self.publish(Change::Elector(event), now);
        if then_work_stopped {
            self.elector.work_stopped(now);
        }
        if then_exit {
            self.elector.shutdown(now);
        }
    }

    /// Tells the lock about a change of our leadership; its best-effort task (an
    /// Event) runs in the background, never awaited by the election.
    fn tell_lock(&self, change: election_core::LeadershipChange) {
        let identity = &self.elector.config().identity;
        if let Some(task) = self.lock.leadership_changed(identity, change) {
            self.rt.spawn(task);
        }
    }

    /// Publishes the current state with what changed it.
    fn publish(&mut self, change: Change, now: Instant) {
        // The deadline first, so that a reader woken by this state sees
        // `is_leader` agree with it.
        self.publish_deadline(now);
        let state = LeadershipState {
            identity: self.elector.config().identity.clone(),
            role: self.elector.role(),
            leader: self.elector.leader().cloned(),
            term: self.elector.term().cloned(),
            change,
            at: now,
        };
        self.shared.publish(state);
    }

    /// The version the elector last observed, to resume a watch from.
    fn last_observed(&self) -> Option<Version> {
        self.elector.observed().map(|o| o.version.clone())
    }

    /// Starts the lock's watch from `from`; tells the elector it is active.
    fn start_watch(&mut self, from: Option<Version>, now: Instant) {
        let stream = self.lock.watch(from.as_ref());
        debug!(?from, supported = stream.is_some(), "watch started");
        if self.watch.started(stream, from, now) {
            self.elector.handle(Input::WatchActive(true), now);
        }
    }

    /// The watch broke (`error`) or ended: tell the elector (it polls meanwhile)
    /// and resume later, backing off (`watch.rs`).
    fn watch_broke(&mut self, error: Option<LockError>, now: Instant) {
        let backoff = self
            .watch
            .broke(error.is_some(), now, self.elector.config());
        match error {
            Some(e) => {
                warn!(error = %e, ?backoff, "lock watch failed; polling until it resumes");
                self.publish(Change::Problem(DriverError::Watch(e)), now);
            }
            None => debug!(?backoff, "lock watch ended; polling until it resumes"),
        }
        self.elector.handle(Input::WatchActive(false), now);
    }

    /// Replaces the active watch with one resumed from the version last observed:
    /// it fell silent (a black-holed connection never ends or errs by itself).
    fn restart_lagging_watch(&mut self, why: &str, now: Instant) {
        info!(why, "restarting the lock watch");
        self.start_watch(self.last_observed(), now);
    }

    /// Arms the timer for the next deadline: the elector's, a watch restart, or
    /// [`MAX_SLEEP`] from now. Kept when the deadline did not change.
    fn arm_timer(&mut self, now: Instant) {
        let mut at = now + MAX_SLEEP;
        match self.elector.poll_timeout() {
            // Still due right after `handle_timeout(now)` (it is idempotent): look
            // again shortly rather than spin on a zero timer.
            Some(t) if t <= now => at = now + SPIN_GUARD,
            Some(t) => at = at.min(t),
            None => {}
        }
        // An idle restart never in the past (it is due now): no zero timer to spin on.
        if let Some(w) = self.watch.wake_at(now + SPIN_GUARD) {
            at = at.min(w);
        }
        if self.timer.as_ref().is_some_and(|(t, _)| *t == at) {
            return;
        }
        self.timer = Some((at, self.rt.sleep(at - now)));
    }

    /// Waits for the first thing that needs the loop.
    fn poll_wake(&mut self, cx: &mut Context<'_>) -> Poll<Wake> {
        if let Some(commands) = &mut self.commands
            && let Poll::Ready(c) = commands.poll_next_unpin(cx)
        {
            return Poll::Ready(Wake::Command(c));
        }
        if let Some(call) = &mut self.call
            && let Poll::Ready(result) = call.future.poll_unpin(cx)
        {
            return Poll::Ready(Wake::Answer(call.op, result));
        }
        if let Some(stream) = self.watch.stream()
            && let Poll::Ready(item) = stream.poll_next_unpin(cx)
        {
            return Poll::Ready(Wake::Watch(item));
        }
        if let Poll::Ready((term, end)) = self.work.poll_end(cx) {
            return Poll::Ready(Wake::WorkEnded(term, end));
        }
        if let Some(ending) = &mut self.companion_ending
            && ending.poll_unpin(cx).is_ready()
        {
            self.companion_ending = None;
            return Poll::Ready(Wake::CompanionEnded);
        }
        if let Some((_, timer)) = &mut self.timer
            && timer.poll_unpin(cx).is_ready()
        {
            self.timer = None;
            return Poll::Ready(Wake::Timer);
        }
        Poll::Pending
    }

    /// Acts on what woke the loop. Breaks on abort.
    fn on_wake(&mut self, wake: Wake, now: Instant) -> core::ops::ControlFlow<()> {
        match wake {
            Wake::Command(None) => {
                // Every handle is gone: shut down (drain, release best effort),
                // the companion stopped and ended first, as `Handle::shutdown` does.
                self.commands = None;
                match &self.companion {
                    Some((stop, ended)) if !ended.is_cancelled() => {
                        debug!("handle dropped; stopping the companion, then shutting down");
                        stop.0.cancel();
                        self.companion_ending = Some(ended.cancelled());
                    }
                    _ => {
                        debug!("handle dropped; shutting down");
                        self.elector.shutdown(now);
                    }
                }
            }
            Wake::CompanionEnded => self.elector.shutdown(now),
            Wake::Command(Some(Command::StepDown(reply))) => {
                self.step_down_waiters.push(reply);
                self.elector.step_down(now);
            }
            Wake::Command(Some(Command::Standby(standby))) => {
                debug!(standby, "standby");
                self.elector.set_standby(standby, now);
            }
            Wake::Command(Some(Command::Shutdown(reply))) => {
                self.shutdown_waiters.push(reply);
                self.elector.shutdown(now);
            }
            Wake::Command(Some(Command::Abort)) => {
                warn!("driver aborted without release");
                self.work.cancel();
                self.publish(Change::Aborted, now);
                self.shared.set_deadline(None);
                return core::ops::ControlFlow::Break(());
            }
            Wake::Answer(op, result) => {
                match &result {
                    Ok(obs) => debug!(?op, version = %obs.version, "lock call answered"),
                    Err(e) => debug!(?op, error = %e, "lock call failed"),
                }
                let read = self.call.take().is_some_and(|c| c.kind == OpKind::Get);
                let behind = read
                    && result
                        .as_ref()
                        .is_ok_and(|obs| self.watch.is_behind(&obs.version));
                self.elector.handle(op.answer(result), now);
                if behind {
                    self.restart_lagging_watch("a read saw a newer version", now);
                }
            }
            Wake::Watch(Some(Ok(event))) => {
                self.watch.delivered(&event, now);
                self.elector.handle(Input::Watch(event), now);
            }
            Wake::Watch(Some(Err(e))) => self.watch_broke(Some(e), now),
            Wake::Watch(None) => self.watch_broke(None, now),
            Wake::WorkEnded(term, end) => {
                let cancelled_run =
                    self.elector.role() != Role::Leader || self.elector.term() != Some(&term);
                match end {
                    WorkEnd::Panicked(message) => {
                        warn!(%term, %message, "leader work panicked");
                        self.publish(Change::Problem(DriverError::WorkPanicked { message }), now);
                    }
                    WorkEnd::Returned if !cancelled_run => {
                        info!(%term, "leader work ended by itself");
                        self.publish(Change::WorkEnded { term }, now);
                    }
                    WorkEnd::Returned => debug!(%term, "leader work ended"),
                }
                if self.elector.role() == Role::Draining {
                    self.elector.work_stopped(now);
                }
                if let Some(next) = self.work.take_pending()
                    && self.elector.is_leader(now)
                    && self.elector.term() == Some(&next)
                {
                    self.work.start(&self.rt, next);
                }
            }
            Wake::Timer => {}
        }
        core::ops::ControlFlow::Continue(())
    }

    /// The elector ended: cancel any work, publish the last state, answer waiters.
    fn finish(mut self) {
        self.work.cancel();
        let now = self.rt.now();
        info!("election driver ended");
        self.publish(Change::Elector(Event::Terminated), now);
        self.shared.set_deadline(None);
        for w in self
            .step_down_waiters
            .drain(..)
            .chain(self.shutdown_waiters.drain(..))
        {
            let _ = w.send(());
        }
    }
}
