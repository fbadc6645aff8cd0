//! The [`Elector`]: one candidate's view of the election, as a state machine.

mod acquire;
mod backoff;
mod calls;
mod coordinated;
mod holder;
mod lock_delay;
mod observe;
mod own_writes;
mod priority;
mod release;
mod renew;

use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::time::Duration;

use crate::action::{Action, OpId};
use crate::config::{Config, ConfigError};
use crate::event::{Event, StopReason, Term, Warning};
use crate::input::Input;
use crate::lock::WatchEvent;
use crate::record::{Observation, Version};
use crate::rng::Rng;
use crate::time::Instant;
use crate::timer::{Timer, TimerTable};

use backoff::WriteHold;
use calls::{InFlight, Purpose, ReadDue};
use coordinated::OthersUntil;
use holder::News;
use own_writes::OwnWrites;

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
///
/// An elector is `Clone`: a copy is an independent candidate in the same state
/// (the model checker in `testing/election-check` branches on copies).
#[derive(Clone, Debug)]
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
    /// The largest transition count seen (a re-created lock continues from it);
    /// `None` until the lock is first seen.
    max_transitions: Option<u32>,
    /// The holder last reported through [`Event::LeaderChanged`].
    reported_leader: Option<Arc<str>>,
    /// How this node learns of changes: a watch, or reads.
    follow: Follow,
    /// What this node knows of its own writes.
    own: OwnWrites,
    /// A read this node owes before anything else, and why.
    read_due: Option<ReadDue>,
    /// We hold the lock (our write is the current version, as far as we know).
    holding: Option<Holding>,
    /// Do not lead before this instant (the strict lock delay after the lock was
    /// found absent).
    lead_not_before: Instant,
    /// Until when another node may lead, as far as this node's observations
    /// tell; a coordinated claim leads no earlier (`coordinated.rs`).
    others_until: OthersUntil,
    /// The longest lease seen from any holder (never less than this node's
    /// own): what a wait must cover where a holder may hide behind what this
    /// node did not see (`lock_delay.rs`).
    longest_lease: Duration,
    /// Until when a holder behind a gap in the versions seen may still lead
    /// (classic mode, strict lock delay; `lock_delay.rs`).
    hidden_until: Instant,
    /// A watch event a holder could not judge while a write of its own was in
    /// flight (it may be that write's echo): judged once the answer came.
    watch_ahead: Option<Observation>,
    /// The version last seen came from a watch that has not broken since: the
    /// watch's next version directly follows it (a watch yields every change).
    contiguous: bool,
    /// Whether and when this node may take the lock once it does not hold it.
    campaign: Campaign,
    /// The hold a failed write puts on the next ones (see [`WriteHold`]).
    write_hold: WriteHold,
    /// Consecutive failed calls, for backoff.
    failures: u32,
    phase: Phase,
    stats: Stats,
}

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
    /// How long this version's holder may lead after it was first seen
    /// ([`Elector::effective_duration`]).
    lease: Duration,
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
}

impl Holding {
    /// Whether this holder is already giving the lock up.
    fn giving_up(&self) -> bool {
        match &self.state {
            Lead::Delayed { then_release } => then_release.is_some(),
            Lead::Leading => false,
            Lead::Draining(_) | Lead::Releasing => true,
        }
    }
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

/// Whether and when a node that does not hold the lock may take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Campaign {
    /// Takes the lock when the rules let it.
    Active,
    /// A step-down is under way: once this node lets the lock go, it pauses for
    /// one lease duration so that another can take over.
    SteppingDown,
    /// Takes no lock before this instant (after a step-down, or after a release
    /// the API refused).
    Paused { until: Instant },
    /// Follows and times the lock, but never writes to take it
    /// ([`Elector::set_standby`]).
    Standby,
}

/// How a node learns of changes to the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Follow {
    /// A watch delivers them.
    Watch,
    /// It reads the lock, next at this instant (a jittered retry period after
    /// its last read).
    Poll { next: Instant },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Campaigning, holding, or giving up.
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
        let longest_lease = config.unseen_holder_lease();
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
            max_transitions: None,
            reported_leader: None,
            follow: Follow::Poll {
                next: Instant::ZERO,
            },
            own: OwnWrites::default(),
            read_due: Some(ReadDue::Now {
                after_conflict: false,
            }),
            holding: None,
            lead_not_before: Instant::ZERO,
            others_until: OthersUntil::default(),
            longest_lease,
            hidden_until: Instant::ZERO,
            watch_ahead: None,
            contiguous: false,
            campaign: Campaign::Active,
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
        let now = self.enter(now);
        if self.phase == Phase::Terminated {
            return;
        }
        match input {
            Input::Read { op, result } => self.on_call_answered(OpId::Read(op), result, now),
            Input::Written { op, result } => self.on_call_answered(OpId::Write(op), result, now),
            Input::Watch(WatchEvent::Changed(obs)) => self.on_watch(obs, now),
            Input::Watch(WatchEvent::Deleted(version)) => self.on_watch_deleted(version, now),
            Input::WatchActive(active) => {
                // Polling resumes at once when the watch breaks (it may have missed
                // a change); with a watch the next attempt is at expiry.
                if !active {
                    self.contiguous = false;
                }
                self.follow = match (active, self.follow) {
                    (true, _) => Follow::Watch,
                    (false, Follow::Watch) => Follow::Poll { next: now },
                    (false, poll) => poll,
                };
                if self.holding.is_none() {
                    self.timers.set(Timer::Attempt, now);
                }
            }
        }
        self.drive(now);
    }

    /// Fires the timers that expired at `now`. Idempotent; safe to call early.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.enter(now);
        for timer in Timer::ALL {
            if !self.timers.take_if_expired(timer, now) {
                continue;
            }
            match timer {
                // It only wakes the host: `enter` ended leadership if it passed.
                Timer::Deadline => {}
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
        let now = self.enter(now);
        if self.phase == Phase::Running
            && let Some(h) = &self.holding
        {
            if !h.giving_up() {
                self.begin_giving_up(StopReason::SteppedDown, now);
            }
            if self.campaign != Campaign::Standby {
                self.campaign = Campaign::SteppingDown;
            }
        }
        self.drive(now);
    }

    /// Begins shutting down: a leader drains as for [`step_down`](Self::step_down)
    /// ([`Event::Draining`], then the host's [`work_stopped`](Self::work_stopped))
    /// and releases (when [`Config::release_on_shutdown`]); then the elector emits
    /// [`Event::Terminated`]. Without leadership and without a write in flight it
    /// terminates at once. A leader already draining for another reason (a
    /// preemption, a step-down) goes on with that drain and its release, and its
    /// [`Event::StoppedLeading`] then says [`StopReason::ShutDown`]: a stop the
    /// host asked for is a shutdown. A loss meanwhile still stops at once and is
    /// reported as that loss.
    pub fn shutdown(&mut self, now: Instant) {
        let now = self.enter(now);
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
        let now = self.enter(now);
        if self.is_standby() != standby {
            self.campaign = if standby {
                Campaign::Standby
            } else {
                Campaign::Active
            };
            if self.holding.is_none() {
                self.timers.set(Timer::Attempt, now);
            }
        }
        self.drive(now);
    }

    /// Whether this node stands by ([`Elector::set_standby`]).
    pub fn is_standby(&self) -> bool {
        self.campaign == Campaign::Standby
    }

    /// Tells the elector that the leader work has ended after [`Event::Draining`]:
    /// it reports [`Event::StoppedLeading`] and releases the lock.
    pub fn work_stopped(&mut self, now: Instant) {
        let now = self.enter(now);
        self.on_work_stopped(now);
        self.drive(now);
    }

    // ---- polls ----

    /// The next lock call to start. At most one is outstanding at any time.
    #[must_use]
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// The next event to deliver.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When to call [`handle_timeout`](Self::handle_timeout) next (`None`: only
    /// after an input or a command).
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next_timeout()
    }

    // ---- getters ----

    /// The lock call whose answer the elector waits for: the last action it
    /// emitted, until it is answered or its request timeout passes (then the
    /// call is over for the elector: a driver may drop it).
    pub fn awaiting(&self) -> Option<OpId> {
        self.in_flight.as_ref().map(|c| c.op)
    }

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

    /// Until when the lock's holder, another node, may lead by this node's
    /// knowledge: the local instant its current version was first seen plus
    /// the lease that version gives it (the longest seen, as expiry is judged).
    /// Its deadline runs from a renewal sent before this node saw it, and is
    /// shorter than its lease, so it leads no longer. `None` while this node
    /// holds the lock, and when nobody holds it (a released or deleted
    /// record, none read yet).
    pub fn holder_lease_end(&self) -> Option<Instant> {
        if self.holding.is_some() {
            return None;
        }
        let seen = self.lock.present()?;
        let record = &seen.obs.record;
        if record.holder.is_empty() || record.is_released() {
            return None;
        }
        Some(seen.at + seen.lease)
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

    /// Where every handler and command begins: `now`, clamped to the latest
    /// instant seen (returned), and leadership ended if its deadline passed
    /// (the holder's decision on time alone, [`holder::decide`]).
    fn enter(&mut self, now: Instant) -> Instant {
        self.now = self.now.max(now);
        let now = self.now;
        self.as_holder(News::Time, None, now);
        now
    }

    fn emit(&mut self, event: Event) {
        self.events.push_back(event);
    }

    fn warn(&mut self, warning: Warning) {
        self.events.push_back(Event::Warning(warning));
    }

    fn identity(&self) -> &Arc<str> {
        &self.config.identity
    }

    /// Whether a write of ours is in flight or of unknown outcome: a version
    /// naming us that we did not write may be that write.
    fn own_write_pending(&self) -> bool {
        self.write_in_flight() || self.own.unknown_sent.is_some()
    }

    /// A write of this node is in flight.
    fn write_in_flight(&self) -> bool {
        self.in_flight
            .as_ref()
            .is_some_and(|c| c.purpose.is_write())
    }
}
