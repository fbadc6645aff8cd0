//! [`Driven`]: one elector on a virtual clock, its output collected and checked.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::time::Duration;

use crate::action::{Action, OpId};
use crate::config::{Config, ConfigError};
use crate::elector::Elector;
use crate::event::{Event, Term};
use crate::input::Input;
use crate::lock::{LockError, WatchEvent};
use crate::record::Observation;
use crate::time::Instant;

use super::Pairing;

/// One elector, fed by hand on a virtual clock: the base every in-process test
/// driver builds on. Each input, timeout and command is handed to the elector
/// at [`now`](Driven::now); what it produces is then collected at once, and
/// checked:
///
/// - every event against the pairing rule ([`Pairing`]): a broken rule panics
///   (the test fails) with the event that broke it, unless the host reports it
///   itself ([`reporting_pairing`](Driven::reporting_pairing));
/// - the calls: at most one outstanding (the elector waits for each answer).
///
/// The calls wait in [`next_action`](Driven::next_action) for whoever plays the
/// lock (the test itself, a [`ScriptedLock`](super::ScriptedLock), a shared
/// [`Register`](super::Register)); the events in
/// [`take_events`](Driven::take_events), and for good in [`log`](Driven::log).
///
/// ```
/// use election_core::testing::Driven;
/// use election_core::{Action, Config, Instant, LockError};
///
/// let mut d = Driven::start(Config::fast("me"), Instant::ZERO).unwrap();
/// let Some(Action::Get { op }) = d.next_action() else { panic!("a read first") };
/// d.answer(op, Err(LockError::NotFound));
/// assert!(matches!(d.next_action(), Some(Action::Create { .. })));
/// ```
#[derive(Debug)]
pub struct Driven {
    /// The elector.
    pub elector: Elector,
    /// The virtual clock: the time of the last input, timeout or command.
    pub now: Instant,
    /// Every event the elector emitted, with the instant it was collected at.
    pub log: Vec<(Instant, Event)>,
    actions: VecDeque<Action>,
    unread: VecDeque<(Instant, Event)>,
    pairing: Pairing,
    /// A broken pairing rule panics (the default).
    strict: bool,
}

impl Driven {
    /// Starts an elector with `config` at `now`.
    pub fn start(config: Config, now: Instant) -> Result<Self, ConfigError> {
        let mut d = Driven {
            elector: Elector::new(config, now)?,
            now,
            log: Vec::new(),
            actions: VecDeque::new(),
            unread: VecDeque::new(),
            pairing: Pairing::new(),
            strict: true,
        };
        d.collect();
        Ok(d)
    }

    /// Leaves a broken pairing rule to the host, which reads the events and
    /// reports it in its own terms (the simulator: as a violation, with the seed
    /// that replays it), instead of panicking.
    pub fn reporting_pairing(mut self) -> Self {
        self.strict = false;
        self
    }

    /// Hands the elector `input` at the current time.
    pub fn handle(&mut self, input: Input) {
        self.elector.handle(input, self.now);
        self.collect();
    }

    /// Hands the elector the answer to call `op`.
    pub fn answer(&mut self, op: impl Into<OpId>, result: Result<Observation, LockError>) {
        self.handle(op.into().answer(result));
    }

    /// Hands the elector a watch event.
    pub fn watch(&mut self, event: WatchEvent) {
        self.handle(Input::Watch(event));
    }

    /// Tells the elector whether a watch is delivering changes.
    pub fn watch_active(&mut self, active: bool) {
        self.handle(Input::WatchActive(active));
    }

    /// Moves the clock to `at` without handling a timeout.
    pub fn set_clock(&mut self, at: Instant) {
        self.now = at;
    }

    /// Moves the clock forward by `d` and handles the timeout.
    pub fn advance(&mut self, d: Duration) {
        self.advance_to(self.now + d);
    }

    /// Moves the clock to `at` and handles the timeout.
    pub fn advance_to(&mut self, at: Instant) {
        self.now = at;
        self.elector.handle_timeout(at);
        self.collect();
    }

    /// Asks the elector to step down at the current time.
    pub fn step_down(&mut self) {
        self.elector.step_down(self.now);
        self.collect();
    }

    /// Asks the elector to shut down at the current time.
    pub fn shutdown(&mut self) {
        self.elector.shutdown(self.now);
        self.collect();
    }

    /// Tells the elector that the leader work ended.
    pub fn work_stopped(&mut self) {
        self.elector.work_stopped(self.now);
        self.collect();
    }

    /// Whether the elector leads now.
    pub fn is_leader(&self) -> bool {
        self.elector.is_leader(self.now)
    }

    /// The instants at which something happens by itself: the elector's next
    /// timeout, and the deadline at which its leadership ends (a driver that
    /// checks leadership must look at both).
    pub fn wakes(&self) -> impl Iterator<Item = Instant> + use<> {
        [self.elector.poll_timeout(), self.elector.deadline()]
            .into_iter()
            .flatten()
    }

    /// The next call the elector made that nobody has taken yet.
    pub fn next_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// Whether a call is waiting, without taking it.
    pub fn has_action(&self) -> bool {
        !self.actions.is_empty()
    }

    /// The calls waiting, oldest first, without taking them.
    pub fn actions(&self) -> impl Iterator<Item = &Action> {
        self.actions.iter()
    }

    /// Takes the events not taken yet, each with the instant it came at.
    pub fn take_events(&mut self) -> Vec<(Instant, Event)> {
        self.unread.drain(..).collect()
    }

    /// The term started and not yet stopped, per the events.
    pub fn started(&self) -> Option<&Term> {
        self.pairing.started()
    }

    /// Collects what the elector produced, checking it.
    fn collect(&mut self) {
        while let Some(a) = self.elector.poll_action() {
            self.actions.push_back(a);
        }
        while let Some(ev) = self.elector.poll_event() {
            if let Err(e) = self.pairing.check(&ev)
                && self.strict
            {
                panic!("the pairing rule broken at {:?}: {e}", self.now);
            }
            self.log.push((self.now, ev.clone()));
            self.unread.push_back((self.now, ev));
        }
        assert!(
            self.actions.len() <= 1,
            "more than one call outstanding: {:?}",
            self.actions
        );
    }
}
