//! The [`Elector`]: one candidate's view of the election, as a state machine.

mod acquire;
mod backoff;
mod lock_delay;
mod observe;
mod priority;
mod release;
mod renew;

use alloc::collections::VecDeque;
use alloc::sync::Arc;

use crate::action::{Action, OpId, OpKind, ReadId, WriteId};
use crate::config::{Config, ConfigError};
use crate::event::{BrokenAnswer, Event, StopReason, Term, Warning};
use crate::input::Input;
use crate::lock::{LockError, WatchEvent};
use crate::record::{LockRecord, Observation, Version};
use crate::rng::Rng;
use crate::time::Instant;
use crate::timer::{Timer, TimerTable};

use backoff::WriteHold;

/// One candidate in a leader election, as a sans-IO state machine.
///
/// The elector never reads a clock, sleeps or does I/O. Its host (a driver, a test,
/// a simulator) feeds it and drains it:
///
/// - **handlers**: [`handle`](Self::handle) for the answers to its lock calls and
///   for changes a watch pushes; [`handle_timeout`](Self::handle_timeout) when
///   [`poll_timeout`](Self::poll_timeout) has passed (idempotent, safe to call early);
/// - **commands**: [`step_down`](Self::step_down), [`shutdown`](Self::shutdown), and
///   [`work_stopped`](Self::work_stopped) once the leader work ended after
///   [`Event::Draining`];
/// - **polls**, after every handler or command: [`poll_action`](Self::poll_action)
///   until `None` (start each call, at most one is ever outstanding),
///   [`poll_event`](Self::poll_event) until `None` (deliver each), then
///   [`poll_timeout`](Self::poll_timeout) (wake up then);
/// - **getters**: [`role`](Self::role), [`leader`](Self::leader),
///   [`is_leader`](Self::is_leader), [`deadline`](Self::deadline),
///   [`term`](Self::term).
///
/// Every call that needs time takes `now` from one monotonic clock; an instant
/// earlier than one already seen is clamped to it.
///
/// The guarantee: [`is_leader`](Self::is_leader) is true only between
/// [`Event::StartedLeading`] and the leadership deadline, which is the send time of
/// the last successful write plus the renew deadline; it turns false by itself
/// then, even if the host stops feeding the elector. With clock rates within
/// [`Config::tolerated_clock_ratio`] and compare-and-swap writes, no two electors
/// report leadership at the same real instant.
#[derive(Debug)]
pub struct Elector {
    config: Config,
    /// The latest `now` seen.
    now: Instant,
    rng: Rng,
    timers: TimerTable,
    next_op: u64,
    in_flight: Option<InFlight>,
    actions: VecDeque<Action>,
    events: VecDeque<Event>,
    /// What this node knows of the lock: not read yet, present, or absent.
    lock: LockView,
    /// The lock was seen held at some point (strict lock delay applies to a create).
    seen_held: bool,
    /// The largest transition count seen (a re-created lock continues from it).
    max_transitions: u32,
    /// The holder last reported through [`Event::LeaderChanged`].
    reported_leader: Option<Arc<str>>,
    /// A watch is delivering changes.
    watching: bool,
    /// The last versions this elector wrote, newest at `written_at`.
    written: [Option<Version>; WRITTEN],
    written_at: usize,
    /// The send time of the earliest write whose outcome is unknown since the last
    /// known version: if a read later shows it landed, leadership counts from it.
    unknown_write_sent: Option<Instant>,
    /// A create's outcome is unknown: it may land later, after a deletion that no
    /// read of ours saw, so the strict lock delay counts again from the answer that
    /// makes this node the holder of a record that create may have made. Holds the
    /// largest transition count such a create wrote.
    create_unknown: Option<u32>,
    /// A read this node owes before anything else, and why.
    read_due: Option<ReadDue>,
    /// Versions seen naming us that we did not write; a second one proves a twin.
    foreign_self_versions: u32,
    /// We hold the lock (our write is the current version, as far as we know).
    holding: Option<Holding>,
    /// Do not lead before this instant (the strict lock delay after the lock was
    /// found absent).
    lead_not_before: Instant,
    /// A polling follower's next read.
    next_poll: Instant,
    /// Do not try to acquire before this instant (after a step-down).
    no_acquire_until: Instant,
    /// Follow the lock without writing to take it ([`Elector::set_standby`]).
    standby: bool,
    /// The hold a failed write puts on the next ones (see [`WriteHold`]).
    write_hold: WriteHold,
    /// Consecutive failed calls, for backoff.
    failures: u32,
    phase: Phase,
    stats: Stats,
}

const WRITTEN: usize = 8;

/// What this node knows of the lock.
#[derive(Clone, Debug)]
enum LockView {
    /// Not read yet.
    Unread,
    /// The lock exists, as last seen.
    Present(Seen),
    /// The last read, write or watch event found no lock.
    Absent {
        /// The version at which the lock was deleted, where the lock said it:
        /// news older than the deletion is not news.
        deleted_at: Option<Version>,
        /// The lock as seen before it went (the basis of a create's write hold).
        last: Option<Seen>,
    },
}

impl LockView {
    /// The record last seen, whether or not the lock still exists.
    fn last(&self) -> Option<&Seen> {
        match self {
            LockView::Unread => None,
            LockView::Present(seen) => Some(seen),
            LockView::Absent { last, .. } => last.as_ref(),
        }
    }

    /// The lock as seen, if it exists.
    fn present(&self) -> Option<&Seen> {
        match self {
            LockView::Present(seen) => Some(seen),
            _ => None,
        }
    }

    /// Whether `version` was written before a deletion this node saw.
    fn predates_deletion(&self, version: &Version) -> bool {
        matches!(self, LockView::Absent { deleted_at: Some(d), .. }
            if version.order(d) == Some(core::cmp::Ordering::Less))
    }
}

/// The lock as this node saw it.
#[derive(Clone, Debug)]
struct Seen {
    obs: Observation,
    /// Local instant at which this version was first seen.
    at: Instant,
    /// Local instant of the last read answer (not a watch event) showing this version.
    read_at: Option<Instant>,
}

#[derive(Clone, Debug)]
struct InFlight {
    op: OpId,
    purpose: Purpose,
    sent_at: Instant,
    /// A compare-and-swap's expected version: its answer must carry another.
    expected: Option<Version>,
    /// The holder a write asked for: its answer must name it.
    holder: Option<Arc<str>>,
    /// The transition count a write asked for (0 for a read).
    transitions: u32,
}

/// A read owed before the rules choose a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadDue {
    /// As soon as no call is in flight: at the start, after a write that lost its
    /// compare-and-swap (`after_conflict`) or whose outcome is unknown, after a
    /// watch event a holder did not write.
    Now { after_conflict: bool },
    /// At the next attempt, before any write: the API refused a campaign's write
    /// as invalid (422, FAULTS A8), so the same payload is never re-sent without
    /// a fresh look.
    BeforeWrite,
}

/// Why a call was made, which decides what its answer means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Purpose {
    /// A read; `after_conflict` when it follows a lost compare-and-swap (a
    /// holder then reports another holder as the winner of that conflict).
    Read {
        after_conflict: bool,
    },
    Create,
    /// Acquire a record that names us or no one: it may be the record a create of
    /// ours with an unknown outcome made.
    Acquire,
    /// Acquire a record held by another identity (expired, or stolen).
    TakeOver,
    AskHandover,
    Renew,
    Release,
}

impl Purpose {
    fn is_write(self) -> bool {
        !matches!(self, Purpose::Read { .. })
    }

    /// The kind of lock call this purpose makes, for reports.
    fn op_kind(self) -> OpKind {
        match self {
            Purpose::Read { .. } => OpKind::Get,
            Purpose::Create => OpKind::Create,
            _ => OpKind::Update,
        }
    }
}

/// While this node holds the lock.
#[derive(Clone, Debug)]
struct Holding {
    term: Term,
    /// Send time of the last successful write + renew deadline.
    deadline: Instant,
    /// Send time of the last successful write.
    renewed_sent: Instant,
    state: Lead,
    /// Giving up by `step_down`: once let go, stay a follower for one lease
    /// duration so that another can take over.
    stepping_down: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Lead {
    /// Holding, but not leading yet: the strict lock delay runs. A holder asked
    /// to give up meanwhile releases only once the delay is over, since whoever
    /// believed in the deleted lock may still lead until then.
    Delayed {
        /// Release (for this reason) instead of leading when the delay ends.
        then_release: Option<StopReason>,
    },
    /// Leading: [`Event::StartedLeading`] was emitted.
    Leading,
    /// Leading, giving up gracefully: [`Event::Draining`] was emitted and the host
    /// has not yet called `work_stopped`.
    Draining(StopReason),
    /// Not leading any more ([`Event::StoppedLeading`] emitted, or never started):
    /// the release write is due.
    Releasing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Campaigning, holding, or giving up after `step_down` (see
    /// [`Holding::stepping_down`]).
    Running,
    /// Shutting down: release if due, then terminate.
    ShuttingDown,
    Terminated,
}

/// The elector's role, as [`Elector::role`] reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Role {
    /// Another node holds the lock, or nobody; this node campaigns.
    Follower,
    /// This node holds the lock but waits out the strict lock delay before leading.
    Acquiring,
    /// This node leads.
    Leader,
    /// This node leads, and is giving up: the leader work is being drained.
    Draining,
    /// This node stopped leading and is releasing the lock.
    Releasing,
    /// Shut down.
    Terminated,
}

/// Counters, for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Successful renews.
    pub renews: u64,
    /// Successful acquisitions (creates included).
    pub acquisitions: u64,
    /// Renews that fell back to a read (client-go's `slowpath`).
    pub slow_path: u64,
    /// Failed lock calls (timeouts included).
    pub lock_errors: u64,
}

impl Elector {
    /// A candidate with this configuration, campaigning from `now` (its first
    /// action is a read of the lock).
    pub fn new(config: Config, now: Instant) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut e = Elector {
            rng: Rng::new(
                config
                    .seed
                    .unwrap_or_else(|| crate::rng::derived_seed(&config.identity)),
            ),
            config,
            now,
            timers: TimerTable::default(),
            next_op: 0,
            in_flight: None,
            actions: VecDeque::with_capacity(2),
            events: VecDeque::with_capacity(8),
            lock: LockView::Unread,
            seen_held: false,
            max_transitions: 0,
            reported_leader: None,
            watching: false,
            written: Default::default(),
            written_at: 0,
            unknown_write_sent: None,
            create_unknown: None,
            read_due: Some(ReadDue::Now {
                after_conflict: false,
            }),
            foreign_self_versions: 0,
            holding: None,
            lead_not_before: Instant::ZERO,
            next_poll: Instant::ZERO,
            no_acquire_until: Instant::ZERO,
            standby: false,
            write_hold: WriteHold::default(),
            failures: 0,
            phase: Phase::Running,
            stats: Stats::default(),
        };
        e.timers.set(Timer::Attempt, now);
        e.drive(now);
        Ok(e)
    }

    // ---- handlers ----

    /// Feeds an answer to a lock call or a change seen by a watch.
    pub fn handle(&mut self, input: Input, now: Instant) {
        let now = self.clock(now);
        self.check_deadline(now);
        if self.phase == Phase::Terminated {
            return;
        }
        match input {
            Input::Read { op, result } => self.on_call_answered(OpId::Read(op), result, now),
            Input::Written { op, result } => self.on_call_answered(OpId::Write(op), result, now),
            Input::Watch(WatchEvent::Changed(obs)) => self.on_watch(obs, now),
            Input::Watch(WatchEvent::Deleted(version)) => self.on_watch_deleted(version, now),
            Input::WatchActive(active) => {
                self.watching = active;
                if self.holding.is_none() {
                    // Re-plan: polling resumes at once when the watch breaks; with a
                    // watch the next attempt is at expiry.
                    self.timers.set(Timer::Attempt, now);
                }
            }
        }
        self.drive(now);
    }

    /// Fires the timers that expired at `now`. Idempotent; safe to call early.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.clock(now);
        for timer in Timer::ALL {
            if !self.timers.take_if_expired(timer, now) {
                continue;
            }
            match timer {
                Timer::Deadline => self.check_deadline(now),
                Timer::Request => self.on_request_timeout(now),
                Timer::LockDelay => self.on_lock_delay_end(now),
                Timer::ReleaseBudget => self.on_release_budget_spent(now),
                Timer::Attempt => self.read_or_attempt_due(now),
            }
        }
        self.drive(now);
    }

    // ---- commands ----

    /// Begins giving up leadership gracefully; it does not end here. The elector
    /// emits [`Event::Draining`]: the host must stop its leader work and then call
    /// [`work_stopped`](Self::work_stopped). Only then does the elector report
    /// [`Event::StoppedLeading`] and write the release (renewing meanwhile; if the
    /// host never calls it, leadership ends at the release budget, one renew
    /// deadline). Afterwards this node stays a follower for one lease duration so
    /// that another can take over. Does nothing unless this node holds the lock;
    /// a holder still in the strict lock delay releases once the delay is over.
    pub fn step_down(&mut self, now: Instant) {
        let now = self.clock(now);
        self.check_deadline(now);
        if self.phase == Phase::Running
            && let Some(h) = &mut self.holding
            && !h.stepping_down
        {
            h.stepping_down = true;
            self.begin_giving_up(StopReason::SteppedDown, now);
        }
        self.drive(now);
    }

    /// Begins shutting down: a leader drains as for [`step_down`](Self::step_down)
    /// ([`Event::Draining`], then the host's [`work_stopped`](Self::work_stopped))
    /// and releases (when [`Config::release_on_shutdown`]); then the elector emits
    /// [`Event::Terminated`]. Without leadership and without a write in flight it
    /// terminates at once.
    pub fn shutdown(&mut self, now: Instant) {
        let now = self.clock(now);
        self.check_deadline(now);
        if matches!(self.phase, Phase::ShuttingDown | Phase::Terminated) {
            return;
        }
        self.phase = Phase::ShuttingDown;
        self.timers
            .set(Timer::ReleaseBudget, now + self.config.renew_deadline);
        if self.holding.is_some() {
            self.begin_giving_up(StopReason::ShutDown, now);
        }
        self.drive(now);
    }

    /// Stands by (`true`) or campaigns again (`false`). A node on standby follows
    /// the lock as a follower does (a watching node takes its events, a polling
    /// one reads every jittered retry period) and times its lease, but never
    /// writes to take it: no create, no takeover, no handover request. Back from
    /// standby it campaigns at once with what it observed, so a lease it timed
    /// past its expiry is taken after one confirming read, without waiting
    /// another lease; the pause of one lease after a [`step_down`](Self::step_down)
    /// is lifted too (the host decided this node may take the lock again). A
    /// leader stays leader: standby governs what it does once its leadership
    /// ends ([`step_down`](Self::step_down) ends it).
    pub fn set_standby(&mut self, standby: bool, now: Instant) {
        let now = self.clock(now);
        self.check_deadline(now);
        if self.standby != standby {
            self.standby = standby;
            if !standby {
                self.no_acquire_until = Instant::ZERO;
            }
            if self.holding.is_none() {
                self.timers.set(Timer::Attempt, now);
            }
        }
        self.drive(now);
    }

    /// Whether this node stands by ([`Elector::set_standby`]).
    pub fn is_standby(&self) -> bool {
        self.standby
    }

    /// Tells the elector that the leader work has ended after [`Event::Draining`]:
    /// it reports [`Event::StoppedLeading`] and releases the lock.
    pub fn work_stopped(&mut self, now: Instant) {
        let now = self.clock(now);
        self.check_deadline(now);
        self.on_work_stopped(now);
        self.drive(now);
    }

    // ---- polls ----

    /// The next lock call to start. At most one is outstanding at any time.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The next event to deliver.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next (`None`: only
    /// after an input or a command).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next_timeout()
    }

    // ---- getters ----

    /// This node's role.
    pub fn role(&self) -> Role {
        if self.phase == Phase::Terminated {
            return Role::Terminated;
        }
        match self.holding.as_ref().map(|h| &h.state) {
            None => Role::Follower,
            Some(Lead::Delayed { .. }) => Role::Acquiring,
            Some(Lead::Leading) => Role::Leader,
            Some(Lead::Draining(_)) => Role::Draining,
            Some(Lead::Releasing) => Role::Releasing,
        }
    }

    /// The holder of the lock as last seen (`None`: nobody, or not read yet).
    pub fn leader(&self) -> Option<&Arc<str>> {
        self.reported_leader.as_ref()
    }

    /// Whether this node leads at `now`: it started leading and its deadline has
    /// not passed. Turns false by itself at the deadline.
    pub fn is_leader(&self, now: Instant) -> bool {
        self.holding.as_ref().is_some_and(|h| {
            matches!(h.state, Lead::Leading | Lead::Draining(_)) && now < h.deadline
        })
    }

    /// The leadership deadline, while this node leads or holds the lock.
    pub fn deadline(&self) -> Option<Instant> {
        self.holding.as_ref().map(|h| h.deadline)
    }

    /// The current term (fencing token), while this node leads.
    pub fn term(&self) -> Option<&Term> {
        self.holding
            .as_ref()
            .filter(|h| matches!(h.state, Lead::Leading | Lead::Draining(_)))
            .map(|h| &h.term)
    }

    /// The send time of the last successful acquire or renew, while holding.
    pub fn last_renew(&self) -> Option<Instant> {
        self.holding.as_ref().map(|h| h.renewed_sent)
    }

    /// The record last seen, if read (kept once the lock was found deleted).
    pub fn observed(&self) -> Option<&Observation> {
        self.lock.last().map(|s| &s.obs)
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Whether [`shutdown`](Self::shutdown) was called (and may still be in progress).
    pub fn is_shutting_down(&self) -> bool {
        matches!(self.phase, Phase::ShuttingDown | Phase::Terminated)
    }

    /// Whether shutdown finished.
    pub fn is_terminated(&self) -> bool {
        self.phase == Phase::Terminated
    }

    // ---- internals shared by the rule files ----

    fn clock(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        self.now
    }

    /// Starts a lock call; `action` builds it from the next number in the one
    /// sequence of call ids.
    fn send(&mut self, purpose: Purpose, action: impl FnOnce(u64) -> Action, now: Instant) {
        debug_assert!(self.in_flight.is_none(), "one call at a time");
        let action = action(self.next_op);
        self.next_op += 1;
        let op = action.op();
        let (expected, holder, transitions) = match &action {
            Action::Get { .. } => (None, None, 0),
            Action::Create { record, .. } => {
                (None, Some(record.holder.clone()), record.transitions)
            }
            Action::Update {
                expected, record, ..
            } => (
                Some(expected.clone()),
                Some(record.holder.clone()),
                record.transitions,
            ),
        };
        self.actions.push_back(action);
        self.in_flight = Some(InFlight {
            op,
            purpose,
            sent_at: now,
            expected,
            holder,
            transitions,
        });
        self.timers
            .set(Timer::Request, now + self.config.request_timeout);
        self.timers.stop(Timer::Attempt);
    }

    /// Sends a read; a polling follower's next poll is one jittered retry period
    /// after it.
    fn send_read(&mut self, now: Instant) {
        let after_conflict = matches!(
            self.read_due.take(),
            Some(ReadDue::Now {
                after_conflict: true
            })
        );
        self.next_poll = now + self.jittered_retry();
        self.send(
            Purpose::Read { after_conflict },
            |n| Action::Get { op: ReadId(n) },
            now,
        );
    }

    /// Owes a read as soon as no call is in flight (it supersedes a read owed
    /// before a write: it is one).
    fn want_read(&mut self, after_conflict: bool) {
        let after_conflict = after_conflict
            || matches!(
                self.read_due,
                Some(ReadDue::Now {
                    after_conflict: true
                })
            );
        self.read_due = Some(ReadDue::Now { after_conflict });
    }

    fn send_update(
        &mut self,
        purpose: Purpose,
        expected: Version,
        record: LockRecord,
        now: Instant,
    ) {
        self.send(
            purpose,
            |n| Action::Update {
                op: WriteId(n),
                expected,
                record,
            },
            now,
        );
    }

    fn emit(&mut self, event: Event) {
        self.events.push_back(event);
    }

    fn warn(&mut self, warning: Warning) {
        self.events.push_back(Event::Warning(warning));
    }

    fn remember_written(&mut self, v: &Version) {
        self.written_at = (self.written_at + 1) % WRITTEN;
        self.written[self.written_at] = Some(v.clone());
    }

    fn wrote(&self, v: &Version) -> bool {
        self.written.iter().flatten().any(|w| w == v)
    }

    fn last_written(&self) -> Option<&Version> {
        self.written[self.written_at].as_ref()
    }

    fn identity(&self) -> &Arc<str> {
        &self.config.identity
    }

    /// The answer to call `op`, if it is the one in flight.
    fn on_call_answered(&mut self, op: OpId, result: Result<Observation, LockError>, now: Instant) {
        let Some(call) = self.in_flight.take_if(|c| c.op == op) else {
            return; // an answer we no longer wait for
        };
        self.timers.stop(Timer::Request);
        self.on_answer(call, result, now);
    }

    /// Dispatches an answer by the call's purpose.
    fn on_answer(&mut self, call: InFlight, result: Result<Observation, LockError>, now: Instant) {
        let result = match result {
            Ok(obs) => match self.broken_write_answer(&call, &obs) {
                Some(answer) => {
                    // Reported as such, and counted as a write of unknown outcome.
                    let op = call.purpose.op_kind();
                    self.warn(Warning::BrokenWriteAnswer { op, answer });
                    let error = LockError::unknown("write answered with another record");
                    self.note_failure(&call, &error);
                    Err(error)
                }
                None => {
                    self.failures = 0;
                    Ok(obs)
                }
            },
            // Answers about the lock's state, not failures; but a create cannot
            // find the lock missing (its place is: FAULTS A5), so that one is.
            Err(e @ (LockError::Conflict | LockError::AlreadyExists)) => Err(e),
            Err(LockError::NotFound) if call.purpose != Purpose::Create => Err(LockError::NotFound),
            Err(error) => {
                self.note_failure(&call, &error);
                let op = call.purpose.op_kind();
                self.warn(Warning::LockFailed {
                    op,
                    error: error.clone(),
                });
                Err(error)
            }
        };
        self.dispatch(call, result, now);
    }

    /// A successful write's answer must be the record written: a new version (not
    /// the one the compare-and-swap expected) naming the holder the write asked
    /// for. Anything else cannot be this node's write, so the lock is broken:
    /// reported, and taken as a write of unknown outcome (never led on; the next
    /// step is a read). A renew that made no new version is the one exception, with
    /// its own warning ([`Warning::RenewWithoutNewVersion`]): a server may skip an
    /// identical write.
    fn broken_write_answer(&self, call: &InFlight, obs: &Observation) -> Option<BrokenAnswer> {
        let holder = call.holder.as_ref()?; // a read shows whatever is there
        if obs.record.holder != *holder {
            return Some(BrokenAnswer::WrongHolder {
                holder: obs.record.holder.clone(),
            });
        }
        let unchanged = call.expected.as_ref() == Some(&obs.version);
        (unchanged && call.purpose != Purpose::Renew).then_some(BrokenAnswer::VersionUnchanged)
    }

    /// The in-flight call got no answer in time: it failed with an unknown outcome.
    fn on_request_timeout(&mut self, now: Instant) {
        let Some(call) = self.in_flight.take() else {
            return;
        };
        let error = LockError::unknown("request timed out");
        self.note_failure(&call, &error);
        self.warn(Warning::RequestTimedOut {
            op: call.purpose.op_kind(),
            timeout: self.config.request_timeout,
        });
        self.dispatch(call, Err(error), now);
    }

    /// Counts a failed call, and remembers a write whose outcome is unknown: if
    /// a read later shows it landed, it counts from the earliest such send time.
    fn note_failure(&mut self, call: &InFlight, error: &LockError) {
        self.failures = self.failures.saturating_add(1);
        self.stats.lock_errors += 1;
        if call.purpose.is_write() && error.outcome_unknown() {
            let first = self
                .unknown_write_sent
                .map_or(call.sent_at, |t| t.min(call.sent_at));
            self.unknown_write_sent = Some(first);
            if call.purpose == Purpose::Create {
                self.create_unknown = self.create_unknown.max(Some(call.transitions));
            }
        }
    }

    /// Hands an outcome to the rule that made the call; a failed write first
    /// holds the next ones back ([`WriteHold`]).
    fn dispatch(&mut self, call: InFlight, result: Result<Observation, LockError>, now: Instant) {
        if let (true, Err(e)) = (call.purpose.is_write(), &result) {
            self.hold_writes(&call, e, now);
        }
        let read = matches!(call.purpose, Purpose::Read { .. });
        match call.purpose {
            Purpose::Read { after_conflict } => {
                self.on_read_answer(result, after_conflict, call.sent_at, now)
            }
            Purpose::Create | Purpose::Acquire | Purpose::TakeOver | Purpose::AskHandover => {
                self.on_acquire_answer(call, result, now)
            }
            Purpose::Renew => self.on_renew_answer(call, result, now),
            Purpose::Release => self.on_release_answer(result, now),
        }
        if read && let Some(seen) = self.lock.last() {
            // What the read showed, as taken in (an echo of an older write of
            // ours is not news).
            self.write_hold.saw(&seen.obs.version.clone());
        }
    }

    /// After every handler: start the next call if one is due and none is in flight.
    fn drive(&mut self, now: Instant) {
        if self.phase == Phase::Terminated {
            return;
        }
        if self.phase == Phase::ShuttingDown && self.holding.is_none() {
            // Nothing held: end now, unless a write of ours is in flight or its
            // outcome is unknown (it may have taken the lock, which must then be
            // released: never a silently held lease).
            // The read that finds out is retried until the release budget ends.
            let write_in_flight = self
                .in_flight
                .as_ref()
                .is_some_and(|c| c.purpose.is_write());
            if !write_in_flight && self.unknown_write_sent.is_none() {
                self.terminate();
                return;
            }
        }
        if self.in_flight.is_some() {
            return;
        }
        if matches!(self.read_due, Some(ReadDue::Now { .. })) {
            self.send_read(now);
            return;
        }
        if self.timers.get(Timer::Attempt).is_some_and(|t| t <= now) {
            self.timers.stop(Timer::Attempt);
            self.attempt(now);
        }
    }

    /// The attempt timer fired: act now, unless a call is in flight (every answer
    /// plans the next attempt).
    fn read_or_attempt_due(&mut self, now: Instant) {
        if self.in_flight.is_none() {
            self.attempt(now);
        }
    }

    /// The next call, by role: renew while holding, else campaign.
    fn attempt(&mut self, now: Instant) {
        if self.phase == Phase::Terminated || self.in_flight.is_some() {
            return;
        }
        if self.holding.is_some() && self.write_held_back() {
            return; // the deadline timer ends leadership meanwhile if it must
        }
        if self.holding.is_some() {
            self.renew(now);
        } else if self.phase != Phase::ShuttingDown {
            self.campaign(now);
        } else if self.unknown_write_sent.is_some() {
            self.send_read(now); // did our last write take the lock?
        }
    }

    fn terminate(&mut self) {
        self.phase = Phase::Terminated;
        self.timers = TimerTable::default();
        self.actions.clear();
        self.in_flight = None;
        self.emit(Event::Terminated);
    }
}
