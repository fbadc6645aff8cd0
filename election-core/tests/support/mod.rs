//! The scenario tests' layers on the core's test drivers (`election_core::testing`).
//!
//! A [`Node`] is one [`Driven`] elector: the test answers every [`Action`]
//! explicitly, moves the virtual clock, pushes watch events, and checks the exact
//! actions, events and timeouts. Every event is checked against the pairing rule
//! of DESIGN §4 by [`Driven`], so each scenario checks it for free.
//!
//! [`Cluster`] runs several [`Node`]s over one [`Register`] (the core's
//! compare-and-swap store for tests) on one real clock, each node reaching it
//! through a [`Link`] that comes down to a [`Reply`] per call.

#![allow(dead_code)] // each test file uses a part of the harness

use std::time::Duration;

#[allow(unused_imports)] // each test file uses a part of the names
pub use election_core::testing::{Driven, Register, Reply};
#[allow(unused_imports)]
pub use election_core::{
    Action, BrokenAnswer, Config, Elector, Event, Handover, Input, Instant, LockDelay, LockError,
    LockRecord, MAX_TRANSITIONS, Observation, OpId, OpKind, Preemption, ReadId, Role, Stamp,
    StopReason, Term, Version, WallTime, Warning, WatchEvent, WriteId,
};

/// `n` milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The instant `n` milliseconds after the epoch.
pub fn t(n: u64) -> Instant {
    Instant::from_millis(n)
}

/// The fast profile (2 s lease, 1.5 s deadline, 250 ms retry, 500 ms request
/// timeout, jitter 1.2) with a fixed seed.
pub fn fast(id: &str) -> Config {
    Config::fast(id).seed(7)
}

/// The fast profile without jitter: retries come exactly every `retry_period`.
pub fn fast_nojitter(id: &str) -> Config {
    let mut c = fast(id);
    c.jitter = 0.0;
    c
}

/// A record as another implementation (or another node) would store it: held by
/// `holder` for `secs` seconds, with wall-clock stamps that the core must ignore.
pub fn held(holder: &str, secs: i64, transitions: u32) -> LockRecord {
    LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(secs),
        acquire_time: Stamp::At(WallTime::new(1_700_000_000, 0)),
        renew_time: Stamp::At(WallTime::new(1_700_000_000, 0)),
        transitions,
        ..LockRecord::default()
    }
}

/// What an elector with this configuration writes when it acquires with
/// `transitions`: its identity, its duration, both times stamped by the backend.
pub fn acquiring(config: &Config, transitions: u32) -> LockRecord {
    LockRecord {
        holder: config.identity.clone(),
        lease_duration_secs: Some(config.lease_duration.as_secs() as i64),
        acquire_time: Stamp::Now,
        renew_time: Stamp::Now,
        transitions,
        priority: config.priority,
        handover: None,
        strategy: None,
    }
}

/// The record a backend stores for a write: `Stamp::Now` replaced by `wall`.
pub fn stamped(mut record: LockRecord, wall: i64) -> LockRecord {
    for s in [&mut record.acquire_time, &mut record.renew_time] {
        if *s == Stamp::Now {
            *s = Stamp::At(WallTime::new(wall, 0));
        }
    }
    record
}

/// An observation of `record` at `version`.
pub fn obs(version: &str, record: LockRecord) -> Observation {
    Observation::new(version, record)
}

/// The term of a leadership acquired with `transitions` at `version`.
pub fn term(transitions: u32, version: &str) -> Term {
    Term {
        transitions,
        version: Version::new(version),
    }
}

/// How a leader's confirming read may end without telling it anything, as the
/// chaos runs saw them: answered 429 with a `Retry-After`, 500, timed out, or
/// never answered. [`Node::end_read`] plays one out.
pub fn read_failures() -> [(&'static str, Option<Result<Observation, LockError>>); 4] {
    [
        (
            "429",
            Some(Err(LockError::Transient {
                message: "429 Too Many Requests".into(),
                retry_after: Some(ms(1_000)),
            })),
        ),
        ("500", Some(Err(LockError::unknown("500")))),
        ("timeout", None),
        ("never", None),
    ]
}

/// One elector driven by the test: the core's [`Driven`] (the elector, the
/// virtual clock, the event log, the pairing check), with the steps of the
/// scenarios ([`Scenario`]).
pub type Node = Driven;

/// The steps of the scenarios on a [`Node`]: they panic (the test fails) when
/// the elector did not do what the scenario expects.
pub trait Scenario: Sized {
    /// An elector created at time zero.
    fn new(config: Config) -> Self;
    /// An elector created at `now`.
    fn new_at(config: Config, now: Instant) -> Self;
    /// A node that started at time zero, found the lock absent, created it and
    /// leads with term `(0, version)`. Its events so far are consumed.
    ///
    /// The fixture uses `LockDelay::Immediate` so that it leads at once whatever
    /// the strict delay's scope (it only matters for creates, which
    /// `lock_delay.rs` and `acquire.rs` test with the default).
    fn leader(config: Config, version: &str) -> Self;
    /// A node that started at time zero and read `observation`. Its events so far
    /// are consumed.
    fn follower(config: Config, observation: Observation) -> Self;
    /// Ends the read `op` as the case of [`read_failures`] says: its answer, the
    /// request timeout passing ("timeout"), or nothing at all ("never").
    fn end_read(&mut self, op: ReadId, case: &str, answer: Option<Result<Observation, LockError>>);
    /// Moves the clock to the elector's next timeout and handles it; returns that
    /// instant. Panics if there is no timeout.
    fn fire(&mut self) -> Instant;
    /// Fires timeouts until an action appears (at most `limit` timeouts).
    fn fire_until_action(&mut self, limit: usize) -> Action;
    /// The next timeout the elector asks for.
    fn timeout(&self) -> Option<Instant>;
    /// The next action; panics if there is none.
    fn action(&mut self) -> Action;
    /// The next action, which must be a read.
    fn get(&mut self) -> ReadId;
    /// The next action, which must be a create.
    fn create(&mut self) -> (WriteId, LockRecord);
    /// The next action, which must be an update.
    fn update(&mut self) -> (WriteId, Version, LockRecord);
    /// Asserts that no action is waiting.
    fn no_action(&mut self);
    /// Takes every event not yet looked at.
    fn events(&mut self) -> Vec<Event>;
    /// Asserts that no event is waiting.
    fn no_events(&mut self);
    /// Takes the events and drops warnings (for scenarios about something else).
    fn events_no_warnings(&mut self) -> Vec<Event>;
    /// Renews once the renew timer fires, answering with `version`; returns the
    /// send time of the renew.
    fn renew_ok(&mut self, version: &str) -> Instant;
    /// Campaigns against a lock whose every read is answered by `lock(now)`, firing
    /// timeouts as they come, until the elector writes. Returns the instant of the
    /// write and the write (unanswered).
    fn campaign(
        &mut self,
        lock: impl FnMut(Instant) -> Result<Observation, LockError>,
        limit: usize,
    ) -> (Instant, Action);
}

impl Scenario for Node {
    fn new(config: Config) -> Node {
        Node::new_at(config, Instant::ZERO)
    }

    fn new_at(config: Config, now: Instant) -> Node {
        Driven::start(config, now).expect("valid configuration")
    }

    fn leader(mut config: Config, version: &str) -> Node {
        config.lock_delay = LockDelay::Immediate;
        let mut n = Node::new(config);
        let op = n.get();
        n.answer(op, Err(LockError::NotFound));
        let (op, record) = n.create();
        n.answer(op, Ok(obs(version, stamped(record, 1))));
        assert!(n.is_leader(), "the node leads after creating the lock");
        n.events();
        n
    }

    fn follower(config: Config, observation: Observation) -> Node {
        let mut n = Node::new(config);
        let op = n.get();
        n.answer(op, Ok(observation));
        n.events();
        n
    }

    fn end_read(&mut self, op: ReadId, case: &str, answer: Option<Result<Observation, LockError>>) {
        match (case, answer) {
            (_, Some(result)) => self.answer(op, result),
            ("timeout", None) => self.advance(self.elector.config().request_timeout),
            _ => {} // never answered
        }
    }

    fn fire(&mut self) -> Instant {
        let at = self.elector.poll_timeout().expect("a timeout is set");
        assert!(
            at >= self.now,
            "timeout {at:?} in the past (now {:?})",
            self.now
        );
        self.advance_to(at);
        at
    }

    fn fire_until_action(&mut self, limit: usize) -> Action {
        for _ in 0..limit {
            if let Some(a) = self.next_action() {
                return a;
            }
            self.fire();
        }
        self.next_action()
            .unwrap_or_else(|| panic!("no action after {limit} timeouts (now {:?})", self.now))
    }

    fn timeout(&self) -> Option<Instant> {
        self.elector.poll_timeout()
    }

    fn action(&mut self) -> Action {
        self.next_action()
            .unwrap_or_else(|| panic!("expected an action at {:?}, got none", self.now))
    }

    fn get(&mut self) -> ReadId {
        match self.action() {
            Action::Get { op } => op,
            other => panic!("expected a read at {:?}, got {other:?}", self.now),
        }
    }

    fn create(&mut self) -> (WriteId, LockRecord) {
        match self.action() {
            Action::Create { op, record } => (op, record),
            other => panic!("expected a create at {:?}, got {other:?}", self.now),
        }
    }

    fn update(&mut self) -> (WriteId, Version, LockRecord) {
        match self.action() {
            Action::Update {
                op,
                expected,
                record,
            } => (op, expected, record),
            other => panic!("expected an update at {:?}, got {other:?}", self.now),
        }
    }

    fn no_action(&mut self) {
        let waiting: Vec<&Action> = self.actions().collect();
        assert!(
            waiting.is_empty(),
            "expected no action at {:?}, got {waiting:?}",
            self.now,
        );
    }

    fn events(&mut self) -> Vec<Event> {
        self.take_events().into_iter().map(|(_, e)| e).collect()
    }

    fn no_events(&mut self) {
        let evs = self.events();
        assert!(
            evs.is_empty(),
            "expected no event at {:?}, got {evs:?}",
            self.now
        );
    }

    fn events_no_warnings(&mut self) -> Vec<Event> {
        self.events()
            .into_iter()
            .filter(|e| !matches!(e, Event::Warning(_)))
            .collect()
    }

    fn renew_ok(&mut self, version: &str) -> Instant {
        let (op, _, record) = match self.fire_until_action(4) {
            Action::Update {
                op,
                expected,
                record,
            } => (op, expected, record),
            other => panic!("expected a renew, got {other:?}"),
        };
        let sent = self.now;
        self.answer(op, Ok(obs(version, stamped(record, 2))));
        sent
    }

    fn campaign(
        &mut self,
        mut lock: impl FnMut(Instant) -> Result<Observation, LockError>,
        limit: usize,
    ) -> (Instant, Action) {
        for _ in 0..limit {
            match self.fire_until_action(10_000) {
                Action::Get { op } => {
                    let r = lock(self.now);
                    self.answer(op, r);
                }
                write => return (self.now, write),
            }
        }
        panic!("no write after {limit} reads");
    }
}

/// Takes an [`Action`] apart, panicking (the test fails) if it is not the kind
/// the scenario expects.
pub trait ActionExt {
    /// The parts of a create.
    fn into_create(self) -> (WriteId, LockRecord);
    /// The parts of an update.
    fn into_update(self) -> (WriteId, Version, LockRecord);
}

impl ActionExt for Action {
    fn into_create(self) -> (WriteId, LockRecord) {
        match self {
            Action::Create { op, record } => (op, record),
            other => panic!("expected a create, got {other:?}"),
        }
    }

    fn into_update(self) -> (WriteId, Version, LockRecord) {
        match self {
            Action::Update {
                op,
                expected,
                record,
            } => (op, expected, record),
            other => panic!("expected an update, got {other:?}"),
        }
    }
}

/// How the lock answers one node of a [`Cluster`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// Calls are applied and answered at once.
    Up,
    /// Calls fail at once without happening (connection refused).
    Refused,
    /// Calls never arrive and are never answered (the request timeout fires).
    Hang,
    /// Calls are applied, but their answers are lost.
    AnswerLost,
    /// Reads are answered; writes are refused with 403.
    ReadOnly,
    /// The process is frozen: no timer fires, no call is made.
    Paused,
}

impl Link {
    /// How the lock answers `action` over this link (never called while
    /// [`Link::Paused`]: a paused node makes no call).
    pub fn reply(self, action: &Action) -> Reply {
        match self {
            Link::Up | Link::Paused => Reply::Serve,
            Link::Refused => Reply::Fail(LockError::transient("connection refused")),
            Link::ReadOnly if !matches!(action, Action::Get { .. }) => {
                Reply::Fail(LockError::Forbidden {
                    message: "update leases is forbidden".into(),
                })
            }
            Link::ReadOnly => Reply::Serve,
            Link::Hang => Reply::Hang,
            Link::AnswerLost => Reply::AnswerLost,
        }
    }
}

/// Several electors over one [`Register`], on one real clock, each node seeing it
/// through its own clock rate. After every step it checks the safety promise: at no
/// instant do two nodes report `is_leader`.
pub struct Cluster {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// How each node reaches the lock.
    pub links: Vec<Link>,
    /// Each node's clock rate (local seconds per real second).
    pub rates: Vec<f64>,
    /// The lock.
    pub store: Register,
    /// Real time, in nanoseconds.
    pub real: u64,
    /// Call `work_stopped` as soon as a node drains (leader work that stops at once).
    pub auto_drain: bool,
    /// Real instants (ms) at which each node started and stopped leading.
    pub spans: Vec<Vec<(u64, Option<u64>)>>,
    /// Fail at once when two nodes lead at the same instant (off for steal mode,
    /// whose overlap is measured instead).
    pub check_safety: bool,
}

impl Cluster {
    /// Nodes with these configurations, all created at real time zero, rate 1.
    pub fn new(configs: Vec<Config>) -> Cluster {
        let n = configs.len();
        Cluster {
            nodes: configs.into_iter().map(Node::new).collect(),
            links: vec![Link::Up; n],
            rates: vec![1.0; n],
            store: Register::new(),
            real: 0,
            auto_drain: true,
            spans: vec![Vec::new(); n],
            check_safety: true,
        }
    }

    /// Nodes as in [`Cluster::new`] over a lock that exists, released (empty holder,
    /// version 1, transitions 0): the first leader takes it by compare-and-swap,
    /// so no lock delay is involved in the setup.
    pub fn over_released_lock(configs: Vec<Config>) -> Cluster {
        let mut c = Cluster::new(configs);
        c.store.put(held("", 1, 0), c.wall());
        c
    }

    /// Real time as wall time (seconds since the epoch).
    pub fn wall(&self) -> WallTime {
        WallTime::new(
            (self.real / 1_000_000_000) as i64,
            (self.real % 1_000_000_000) as u32,
        )
    }

    /// The holder of the lock (`None` if absent).
    pub fn holder(&self) -> Option<&str> {
        self.store.current().map(|o| &*o.record.holder)
    }

    /// Real time in milliseconds.
    pub fn real_ms(&self) -> u64 {
        self.real / 1_000_000
    }

    fn local(&self, i: usize) -> Instant {
        Instant::from_nanos((self.real as f64 * self.rates[i]) as u64)
    }

    /// The nodes that report leadership now.
    pub fn leaders(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].elector.is_leader(self.local(i)))
            .collect()
    }

    /// Serves calls and events of every node at the current real time.
    fn settle(&mut self) {
        for _ in 0..64 {
            let mut busy = false;
            for i in 0..self.nodes.len() {
                let link = self.links[i];
                if link == Link::Paused {
                    continue;
                }
                let now = self.local(i);
                let wall = self.wall();
                let node = &mut self.nodes[i];
                node.now = node.now.max(now);
                if let Some(a) = node.next_action() {
                    busy = true;
                    if let Some(input) = link.reply(&a).answer(&mut self.store, &a, wall) {
                        node.handle(input);
                    }
                }
                if self.auto_drain && matches!(node.elector.role(), Role::Draining) {
                    node.work_stopped();
                }
            }
            self.record_spans();
            if !busy {
                return;
            }
        }
        panic!("calls keep coming at one instant: a tight loop");
    }

    fn record_spans(&mut self) {
        let ms = self.real_ms();
        for i in 0..self.nodes.len() {
            let leading =
                self.nodes[i].started().is_some() && self.nodes[i].elector.is_leader(self.local(i));
            let spans = &mut self.spans[i];
            let open = spans.last().is_some_and(|s| s.1.is_none());
            if leading && !open {
                spans.push((ms, None));
            } else if !leading && open {
                spans.last_mut().expect("open span").1 = Some(ms);
            }
        }
        let leaders = self.leaders();
        assert!(
            !self.check_safety || leaders.len() <= 1,
            "safety: nodes {leaders:?} lead at once at real {} ms",
            ms
        );
    }

    /// Runs until real time `until_ms`, step by step.
    pub fn run_until(&mut self, until_ms: u64) {
        let until = until_ms.saturating_mul(1_000_000);
        self.settle();
        loop {
            // The next real instant at which some node wants to wake up, and the
            // deadlines at which leadership ends by itself (so that the safety
            // check sees every instant where the set of leaders changes).
            let mut next = u64::MAX;
            for i in 0..self.nodes.len() {
                if self.links[i] == Link::Paused {
                    continue;
                }
                let n = &self.nodes[i];
                for at in n.wakes() {
                    let real = (at.as_nanos() as f64 / self.rates[i]).ceil() as u64;
                    next = next.min(real.max(self.real + 1));
                }
            }
            if next > until {
                self.real = self.real.max(until);
                self.settle();
                return;
            }
            self.real = next;
            for i in 0..self.nodes.len() {
                if self.links[i] == Link::Paused {
                    continue;
                }
                let now = self.local(i);
                let node = &mut self.nodes[i];
                if node.elector.poll_timeout().is_some_and(|t| t <= now) {
                    node.advance_to(now.max(node.now));
                }
            }
            self.settle();
        }
    }

    /// Real milliseconds during which nodes `a` and `b` both led.
    pub fn overlap_ms(&self, a: usize, b: usize) -> u64 {
        let end = self.real_ms();
        let mut total = 0;
        for &(s1, e1) in &self.spans[a] {
            for &(s2, e2) in &self.spans[b] {
                let (lo, hi) = (s1.max(s2), e1.unwrap_or(end).min(e2.unwrap_or(end)));
                total += hi.saturating_sub(lo);
            }
        }
        total
    }

    /// How many times each node started leading.
    pub fn starts(&self, i: usize) -> usize {
        self.nodes[i]
            .log
            .iter()
            .filter(|(_, e)| matches!(e, Event::StartedLeading { .. }))
            .count()
    }
}

/// Runs a scenario on its own thread and fails if it takes longer than 20 s, so
/// that an elector that spins (a handler that never returns) fails the test instead
/// of stalling the suite. Panics inside the scenario are re-raised.
pub fn within_time_limit(scenario: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        scenario();
        let _ = tx.send(());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(20)) {
        Ok(()) => {}
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the scenario did not finish within 20 s: a handler spins")
        }
    }
}
