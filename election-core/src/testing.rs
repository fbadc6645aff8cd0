//! A scripted lock and a virtual clock, for tests that drive an [`Elector`] by
//! hand: a custom driver's unit tests, or a check of how an application reacts to
//! the elector's events, with no runtime and no real lock.
//!
//! [`Harness`] runs one elector against a [`ScriptedLock`]: every call the elector
//! makes is answered by the lock at once, as a compare-and-swap store would,
//! unless the test scripted another [`Reply`] for it; timers fire on a virtual
//! clock; a drain ends at once (the harness calls
//! [`work_stopped`](Elector::work_stopped) on [`Event::Draining`]).
//!
//! ```
//! use core::time::Duration;
//! use election_core::testing::{Harness, Reply};
//! use election_core::{Config, Event, LockError, StopReason};
//!
//! let mut h = Harness::new(Config::fast("me")).unwrap();
//! // The lock is absent: the elector creates it, waits out the strict lock delay, leads.
//! assert!(h.run_until(Duration::from_secs(5), |h| h.is_leader()));
//!
//! // Every renew from now on is refused: leadership ends at the renew deadline.
//! h.lock.script_always(Reply::Fail(LockError::transient("connection refused")));
//! h.run_for(Duration::from_secs(3));
//! assert!(h.events().iter().any(|(_, e)| matches!(e,
//!     Event::StoppedLeading { reason: StopReason::DeadlineExceeded, .. })));
//! ```

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::time::Duration;

use crate::action::Action;
use crate::config::{Config, ConfigError};
use crate::elector::Elector;
use crate::event::Event;
use crate::input::Input;
use crate::lock::{LockError, WatchEvent};
use crate::record::{LockRecord, Observation, Stamp, Version};
use crate::time::{Instant, WallTime};

/// How the [`ScriptedLock`] answers one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// Applied and answered as a compare-and-swap store would.
    Serve,
    /// Not applied; answered with this error (a refused connection, a 403, a 429).
    Fail(LockError),
    /// Never answered and never applied: the request hangs until the elector's
    /// request timeout.
    Hang,
    /// Applied, but the answer is lost: the elector learns nothing (its request
    /// timeout fires), while the write stands.
    AnswerLost,
}

/// A lock record in memory that applies an elector's calls as a compare-and-swap
/// store does: a read answers the record or `NotFound`, a create fails with
/// `AlreadyExists` over a present lock, an update with `Conflict` unless it names
/// the current version; a write's `Stamp::Now` takes the wall time it is served
/// at. Versions are decimal and grow by one per change, a deletion included, as
/// in Kubernetes. The one store under [`ScriptedLock`], the core's scenario tests
/// and the simulator.
#[derive(Clone, Debug, Default)]
pub struct Register {
    current: Option<Observation>,
    counter: u64,
    /// Every change, oldest first: the record written, or `None` for a deletion.
    pub history: Vec<(Version, Option<LockRecord>)>,
}

impl Register {
    /// An absent lock, no version handed out yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The lock as it is now.
    pub fn current(&self) -> Option<&Observation> {
        self.current.as_ref()
    }

    /// The last version handed out (0: none yet).
    pub fn last_version(&self) -> u64 {
        self.counter
    }

    /// The records written, oldest first (deletions left out).
    pub fn records(&self) -> impl Iterator<Item = &LockRecord> {
        self.history.iter().filter_map(|(_, r)| r.as_ref())
    }

    /// Applies `action` at wall time `wall`: its answer.
    pub fn apply(&mut self, action: &Action, wall: WallTime) -> Result<Observation, LockError> {
        match (action, &self.current) {
            (Action::Get { .. }, current) => current.clone().ok_or(LockError::NotFound),
            (Action::Create { .. }, Some(_)) => Err(LockError::AlreadyExists),
            (Action::Create { record, .. }, None) => Ok(self.put(record.clone(), wall)),
            (Action::Update { .. }, None) => Err(LockError::NotFound),
            (Action::Update { expected, .. }, Some(c)) if c.version != *expected => {
                Err(LockError::Conflict)
            }
            (Action::Update { record, .. }, Some(_)) => Ok(self.put(record.clone(), wall)),
        }
    }

    /// Writes `record` whatever the lock holds (a write from outside the
    /// election: a human, another tool), stamped at `wall`.
    pub fn put(&mut self, mut record: LockRecord, wall: WallTime) -> Observation {
        for stamp in [&mut record.acquire_time, &mut record.renew_time] {
            if *stamp == Stamp::Now {
                *stamp = Stamp::At(wall);
            }
        }
        let obs = Observation::new(self.next_version(), record);
        self.history
            .push((obs.version.clone(), Some(obs.record.clone())));
        self.current = Some(obs.clone());
        obs
    }

    /// Deletes the lock; the deletion's version.
    pub fn delete(&mut self) -> Version {
        self.current = None;
        let version = self.next_version();
        self.history.push((version.clone(), None));
        version
    }

    fn next_version(&mut self) -> Version {
        self.counter += 1;
        Version::new(alloc::format!("{}", self.counter))
    }
}

/// A [`Register`] that answers each call as scripted ([`Reply::Serve`] unless
/// told otherwise).
#[derive(Debug, Default)]
pub struct ScriptedLock {
    /// The lock record.
    pub register: Register,
    script: VecDeque<Reply>,
    always: Option<Reply>,
}

impl ScriptedLock {
    /// An absent lock.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next call (after those already scripted) is answered so.
    pub fn script(&mut self, reply: Reply) {
        self.script.push_back(reply);
    }

    /// Every call after the scripted ones is answered so (`Reply::Serve` to undo).
    pub fn script_always(&mut self, reply: Reply) {
        self.always = Some(reply);
    }

    /// A write by someone outside the election (a human, another tool), stamped
    /// at `wall`; the watch event that reports it.
    pub fn put(&mut self, record: LockRecord, wall: WallTime) -> WatchEvent {
        WatchEvent::Changed(self.register.put(record, wall))
    }

    /// Deletes the lock; the watch event that reports it.
    pub fn delete(&mut self) -> WatchEvent {
        WatchEvent::Deleted(Some(self.register.delete()))
    }

    /// Runs `action` at wall time `wall` as scripted: the input that answers it,
    /// or `None` if no answer comes ([`Reply::Hang`], [`Reply::AnswerLost`]).
    pub fn answer(&mut self, action: Action, wall: WallTime) -> Option<Input> {
        let reply = self
            .script
            .pop_front()
            .or_else(|| self.always.clone())
            .unwrap_or(Reply::Serve);
        let op = action.op();
        match reply {
            Reply::Serve => Some(op.answer(self.register.apply(&action, wall))),
            Reply::Fail(e) => Some(op.answer(Err(e))),
            Reply::Hang => None,
            Reply::AnswerLost => {
                let _ = self.register.apply(&action, wall);
                None
            }
        }
    }
}

/// One elector, a [`ScriptedLock`] and a virtual clock starting at zero (wall
/// time: seconds since the Unix epoch equal to the virtual seconds).
#[derive(Debug)]
pub struct Harness {
    /// The elector under test.
    pub elector: Elector,
    /// The lock it runs against.
    pub lock: ScriptedLock,
    now: Instant,
    events: Vec<(Instant, Event)>,
}

impl Harness {
    /// An elector with `config`, starting at time zero against an absent lock.
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        Self::with_lock(config, ScriptedLock::new())
    }

    /// An elector with `config` against `lock` as the test prepared it.
    pub fn with_lock(config: Config, lock: ScriptedLock) -> Result<Self, ConfigError> {
        let mut h = Harness {
            elector: Elector::new(config, Instant::ZERO)?,
            lock,
            now: Instant::ZERO,
            events: Vec::new(),
        };
        h.settle();
        Ok(h)
    }

    /// The virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Whether the elector leads now.
    pub fn is_leader(&self) -> bool {
        self.elector.is_leader(self.now)
    }

    /// Takes the events so far, each with the virtual instant it came at.
    pub fn events(&mut self) -> Vec<(Instant, Event)> {
        core::mem::take(&mut self.events)
    }

    /// Hands the elector a watch event (from [`ScriptedLock::put`] or
    /// [`ScriptedLock::delete`]) at the current time.
    pub fn watch(&mut self, event: WatchEvent) {
        self.elector.handle(Input::Watch(event), self.now);
        self.settle();
    }

    /// Runs for `d` of virtual time, firing every timer on the way.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        self.run_until(d, |h| h.now >= end);
    }

    /// Runs until `done` holds (checked after every step) or `limit` of virtual
    /// time has passed; returns whether `done` held.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&Harness) -> bool) -> bool {
        let end = self.now + limit;
        loop {
            if done(self) {
                return true;
            }
            // Wake at the next timer, or at the deadline where leadership ends
            // by itself, whichever comes first.
            let next = [self.elector.poll_timeout(), self.elector.deadline()]
                .into_iter()
                .flatten()
                .filter(|&t| t > self.now)
                .min();
            match next {
                Some(t) if t <= end => self.now = t,
                _ => {
                    self.now = end;
                    self.elector.handle_timeout(end);
                    self.settle();
                    return done(self);
                }
            }
            self.elector.handle_timeout(self.now);
            self.settle();
        }
    }

    /// Answers calls and takes events until the elector is idle.
    fn settle(&mut self) {
        loop {
            let mut busy = false;
            while let Some(action) = self.elector.poll_action() {
                let since = self.now.since_epoch();
                let secs = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
                let wall = WallTime::new(secs, since.subsec_nanos());
                if let Some(input) = self.lock.answer(action, wall) {
                    self.elector.handle(input, self.now);
                    busy = true;
                }
            }
            while let Some(event) = self.elector.poll_event() {
                if matches!(event, Event::Draining { .. }) {
                    // A drain that ends at once; the release follows.
                    self.elector.work_stopped(self.now);
                    busy = true;
                }
                self.events.push((self.now, event));
            }
            if !busy {
                return;
            }
        }
    }
}
