//! The system explored: real [`Elector`]s over one [`Register`], a network
//! that holds every call and answer until a step delivers, loses or
//! duplicates it, a watch queue per node, clocks at per-node rates, and a
//! budget of faults.

use std::collections::VecDeque;
use std::fmt::Write as _;

use election_core::testing::{Pairing, Register, coordinator_write};
use election_core::{
    Action, Elector, Event, Input, Instant, LockError, LockRecord, Observation, Stamp, Term,
    WallTime, WatchEvent,
};

use crate::setup::Setup;

/// A state of the whole system.
#[derive(Clone, Debug)]
pub struct State {
    /// Real time, in ticks.
    pub t: u32,
    /// The candidates.
    pub nodes: Vec<Node>,
    /// The lock.
    pub lock: Register,
    /// Calls on their way to the lock, answers on their way back.
    pub net: Vec<Msg>,
    /// Faults this schedule may still draw.
    pub faults_left: u8,
    /// The latest term started since the lock was last deleted.
    pub max_term: Option<Term>,
    /// Steps taken since real time last advanced.
    pub since_tick: u16,
    /// The coordinator stepped in this tick.
    pub coordinated: bool,
    /// A property a step broke (the step's own checks: terms, releases,
    /// pairing, timers).
    pub violation: Option<String>,
}

/// One candidate.
#[derive(Clone, Debug)]
pub struct Node {
    /// The elector; `None` while crashed.
    pub elector: Option<Elector>,
    /// Incremented at each crash: a call of an earlier life may still land,
    /// its answer is dropped.
    pub life: u8,
    /// [`Event::Draining`] came and the host has not yet called `work_stopped`.
    pub draining: bool,
    /// The node's watch, if it watches and runs.
    pub watch: Option<WatchQueue>,
    /// Local send time of the last committed write of this life that names
    /// this node.
    pub last_commit: Option<Instant>,
    /// The pairing rule, checked on every event.
    pub pairing: Pairing,
    /// Cut off from the lock.
    pub cut: bool,
    /// Its process stalled.
    pub paused: bool,
}

impl Node {
    /// Whether what reaches this node now can be handed to it.
    fn reachable(&self) -> bool {
        !self.cut && !self.paused
    }
}

/// What a node's watch has yet to deliver.
#[derive(Clone, Debug, Default)]
pub struct WatchQueue {
    /// The watch broke (the node was told); a resume restarts it.
    pub broken: bool,
    /// Inputs not yet delivered, oldest first.
    pub queue: VecDeque<Input>,
    /// The queue was already late at a tick (its delay counted once).
    pub late: bool,
}

/// A call or an answer in the network.
#[derive(Clone, Debug)]
pub struct Msg {
    /// The node that sent the call, or that the answer goes to.
    pub node: u8,
    /// That node's life when it sent the call.
    pub life: u8,
    /// Already late at a tick (its delay counted once).
    pub late: bool,
    /// The call or the answer.
    pub body: Body,
}

/// What a message carries.
#[derive(Clone, Debug)]
pub enum Body {
    /// A call on its way to the lock, sent at this local instant.
    Call {
        /// The call.
        action: Action,
        /// The sender's local time at sending.
        sent: Instant,
    },
    /// An answer on its way back.
    Answer(Input),
}

/// One step of a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Real time advances one tick.
    Tick,
    /// A node's due timer fires.
    Fire(u8),
    /// The call at this index of the network reaches the lock.
    Serve(u8),
    /// The answer at this index reaches its node.
    Deliver(u8),
    /// A node's watch delivers its next event.
    Watch(u8),
    /// A node's broken watch starts again (the lock's current state first).
    Resume(u8),
    /// A node's host ends the drained leader work.
    WorkStopped(u8),
    /// A crashed node starts again.
    Restart(u8),
    /// The coordinator's step (first in a tick, at most once): assign the
    /// lock to the best live candidate, or name it as the preferred holder.
    Coordinate,
    /// Fault: the message at this index is lost.
    Lose(u8),
    /// Fault: the answer at this index is delivered twice.
    Duplicate(u8),
    /// Fault: the call at this index is refused (503) before the lock.
    Refuse(u8),
    /// Fault: a node crashes.
    Crash(u8),
    /// Fault: a node shuts down gracefully.
    Shutdown(u8),
    /// Fault: a leader steps down.
    StepDown(u8),
    /// Fault: a node's watch breaks.
    BreakWatch(u8),
    /// Fault: a node is cut off from the lock.
    Cut(u8),
    /// A cut-off node reaches the lock again.
    Heal(u8),
    /// Fault: a node's process stalls.
    Pause(u8),
    /// A stalled process runs again.
    Wake(u8),
    /// Fault: an operator's edit.
    Edit(Edit),
}

/// An operator's change to the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edit {
    /// `holderIdentity` emptied, the duration kept (not a release's shape).
    EmptyHolder,
    /// `leaseDurationSeconds` set to 1 on a held record.
    ShortDuration,
    /// The record names this node.
    Name(u8),
    /// The lock deleted.
    Delete,
}

/// The model of one [`Setup`].
#[derive(Debug)]
pub struct World {
    /// What is explored.
    pub setup: Setup,
    tick_nanos: u64,
    /// The node permutations symmetry allows (`model.rs`), computed once.
    pub(crate) perms: Vec<Vec<usize>>,
}

impl World {
    /// The model of `setup`.
    pub fn new(setup: Setup) -> World {
        let tick_nanos = u64::try_from(setup.tick.as_nanos()).unwrap_or(u64::MAX);
        let perms = crate::model::permutations(&setup);
        World {
            setup,
            tick_nanos,
            perms,
        }
    }

    /// Node `i`'s local clock at real tick `t`.
    pub fn local(&self, i: usize, t: u32) -> Instant {
        let (num, den) = self.setup.nodes[i].rate;
        Instant::from_nanos(u64::from(t) * self.tick_nanos * num / den)
    }

    /// The lock's wall clock at real tick `t` (the stamps of what it stores).
    fn wall(&self, t: u32) -> WallTime {
        let nanos = u64::from(t) * self.tick_nanos;
        WallTime::new(
            1_700_000_000 + (nanos / 1_000_000_000) as i64,
            (nanos % 1_000_000_000) as u32,
        )
    }

    fn id(&self, i: usize) -> &str {
        &self.setup.nodes[i].config.identity
    }

    /// Every node started at 0, the lock absent.
    pub fn initial(&self) -> State {
        let mut s = State {
            t: 0,
            nodes: Vec::new(),
            lock: Register::new(),
            net: Vec::new(),
            faults_left: self.setup.budget,
            max_term: None,
            since_tick: 0,
            coordinated: false,
            violation: None,
        };
        for _ in &self.setup.nodes {
            s.nodes.push(Node {
                elector: None,
                life: 0,
                draining: false,
                watch: None,
                last_commit: None,
                pairing: Pairing::new(),
                cut: false,
                paused: false,
            });
        }
        if let Some(holder) = &self.setup.held_by {
            let record = LockRecord {
                holder: holder.as_str().into(),
                lease_duration_secs: Some(self.setup.nodes[0].config.lease_duration_secs()),
                acquire_time: Stamp::Now,
                renew_time: Stamp::Now,
                transitions: 0,
                ..LockRecord::default()
            };
            s.lock.put(record, self.wall(0));
        }
        for i in 0..s.nodes.len() {
            self.start(&mut s, i);
        }
        s
    }

    /// Starts node `i`'s elector (and its watch) now.
    fn start(&self, s: &mut State, i: usize) {
        let now = self.local(i, s.t);
        let elector = Elector::new(self.setup.nodes[i].config.clone(), now)
            .expect("the setups' configurations are valid");
        s.nodes[i].elector = Some(elector);
        if self.setup.watch {
            s.nodes[i].watch = Some(WatchQueue::default());
            self.open_watch(s, i);
        }
        self.pump(s, i);
    }

    /// A (re)started watch: active, and the lock's current state first.
    fn open_watch(&self, s: &mut State, i: usize) {
        let current = match s.lock.current() {
            Some(obs) => WatchEvent::Changed(obs.clone()),
            None => WatchEvent::Deleted(None),
        };
        if let Some(w) = &mut s.nodes[i].watch {
            w.broken = false;
            w.late = false;
            w.queue = VecDeque::from([Input::WatchActive(true), Input::Watch(current)]);
        }
    }

    /// Collects what node `i`'s elector produced: its calls into the network,
    /// its events checked.
    fn pump(&self, s: &mut State, i: usize) {
        let now = self.local(i, s.t);
        let life = s.nodes[i].life;
        let Some(e) = s.nodes[i].elector.as_mut() else {
            return;
        };
        let mut calls = Vec::new();
        while let Some(action) = e.poll_action() {
            calls.push(action);
        }
        let mut events = Vec::new();
        while let Some(event) = e.poll_event() {
            events.push(event);
        }
        for action in calls {
            s.net.push(Msg {
                node: i as u8,
                life,
                late: false,
                body: Body::Call { action, sent: now },
            });
        }
        for event in events {
            if let Err(broken) = s.nodes[i].pairing.check(&event) {
                s.violation
                    .get_or_insert_with(|| format!("n{i}: pairing rule broken: {broken:?}"));
            }
            match event {
                Event::StartedLeading { term } => {
                    if let Some(max) = &s.max_term
                        && term <= *max
                    {
                        s.violation.get_or_insert_with(|| {
                            format!("n{i}: started term {term}, not after term {max}")
                        });
                    }
                    s.max_term = Some(term);
                }
                Event::Draining { .. } => s.nodes[i].draining = true,
                _ => {}
            }
        }
    }

    /// Hands node `i`'s elector `input` now.
    fn feed(&self, s: &mut State, i: usize, input: Input) {
        let now = self.local(i, s.t);
        if let Some(e) = s.nodes[i].elector.as_mut() {
            e.handle(input, now);
            self.pump(s, i);
        }
    }

    /// A change of the lock, told to every running watch.
    fn broadcast(&self, s: &mut State, event: &WatchEvent) {
        for n in &mut s.nodes {
            if let Some(w) = &mut n.watch
                && !w.broken
            {
                w.queue.push_back(Input::Watch(event.clone()));
            }
        }
    }

    /// Whether node `i`'s timer is due at tick `t`.
    fn due(&self, s: &State, i: usize) -> bool {
        let now = self.local(i, s.t);
        !s.nodes[i].paused
            && s.nodes[i]
                .elector
                .as_ref()
                .and_then(Elector::poll_timeout)
                .is_some_and(|at| at <= now)
    }

    /// What a tick costs now: every message, watch queue and due timer it
    /// makes late that was not late already.
    fn tick_cost(&self, s: &State) -> u32 {
        let msgs = s
            .net
            .iter()
            .filter(|m| !m.late && self.movable(s, m))
            .count();
        let watches = s
            .nodes
            .iter()
            .filter(|n| n.reachable())
            .filter_map(|n| n.watch.as_ref())
            .filter(|w| !w.late && !w.queue.is_empty())
            .count();
        let timers = (0..s.nodes.len()).filter(|&i| self.due(s, i)).count();
        (msgs + watches + timers) as u32
    }

    /// Whether `m` can move now: a call unless its sender is cut off, an
    /// answer unless its node is cut off or stalled.
    fn movable(&self, s: &State, m: &Msg) -> bool {
        let node = &s.nodes[usize::from(m.node)];
        match m.body {
            Body::Call { .. } => !node.cut,
            Body::Answer(_) => node.reachable(),
        }
    }

    /// Every step enabled in `s`, in a fixed order; with `faults`, the faults
    /// the budget allows too.
    pub fn steps(&self, s: &State, out: &mut Vec<Step>, faults: bool) {
        if s.violation.is_some() {
            return;
        }
        // The coordinator steps first in a tick, or not in that tick (it
        // runs on its own period; its order against the nodes' steps of one
        // instant is left to them, which keeps the space small).
        if self.setup.coordinator.is_some() && !s.coordinated && s.since_tick == 0 {
            out.push(Step::Coordinate);
        }
        let n = s.nodes.len();
        for i in 0..n {
            if self.due(s, i) {
                out.push(Step::Fire(i as u8));
            }
        }
        for (k, m) in s.net.iter().enumerate() {
            if self.movable(s, m) {
                out.push(match m.body {
                    Body::Call { .. } => Step::Serve(k as u8),
                    Body::Answer(_) => Step::Deliver(k as u8),
                });
            }
        }
        for (i, node) in s.nodes.iter().enumerate() {
            let i = i as u8;
            if node.cut {
                out.push(Step::Heal(i));
            }
            if node.paused {
                out.push(Step::Wake(i));
            }
            if !node.reachable() {
                continue;
            }
            if let Some(w) = &node.watch {
                if w.broken {
                    out.push(Step::Resume(i));
                } else if !w.queue.is_empty() {
                    out.push(Step::Watch(i));
                }
            }
            if node.draining {
                out.push(Step::WorkStopped(i));
            }
            if node.elector.is_none() {
                out.push(Step::Restart(i));
            }
        }
        let f = &self.setup.faults;
        let budget = if faults { u32::from(s.faults_left) } else { 0 };
        if s.t < self.setup.ticks {
            let cost = self.tick_cost(s);
            if cost == 0 || (f.late && cost <= budget) {
                out.push(Step::Tick);
            }
        }
        if budget == 0 {
            return;
        }
        for (k, m) in s.net.iter().enumerate() {
            if !self.movable(s, m) {
                continue;
            }
            if f.lose {
                out.push(Step::Lose(k as u8));
            }
            match m.body {
                Body::Answer(_) if f.duplicate => out.push(Step::Duplicate(k as u8)),
                Body::Call { .. } if f.refuse => out.push(Step::Refuse(k as u8)),
                _ => {}
            }
        }
        for (i, node) in s.nodes.iter().enumerate() {
            if f.partition && !node.cut {
                out.push(Step::Cut(i as u8));
            }
            if f.pause && !node.paused {
                out.push(Step::Pause(i as u8));
            }
            if !node.reachable() {
                continue;
            }
            let Some(e) = &node.elector else { continue };
            if f.crash {
                out.push(Step::Crash(i as u8));
            }
            if f.stop && !e.is_shutting_down() {
                out.push(Step::Shutdown(i as u8));
                if e.is_leader(self.local(i, s.t)) {
                    out.push(Step::StepDown(i as u8));
                }
            }
            if f.watch_break && node.watch.as_ref().is_some_and(|w| !w.broken) {
                out.push(Step::BreakWatch(i as u8));
            }
        }
        if let Some(current) = s.lock.current() {
            let rec = &current.record;
            if f.edit {
                let mut emptied = rec.clone();
                emptied.holder = "".into();
                if rec.is_held() && !emptied.is_released() {
                    out.push(Step::Edit(Edit::EmptyHolder));
                }
                if rec.is_held() && rec.lease_duration_secs.is_some_and(|d| d > 1) {
                    out.push(Step::Edit(Edit::ShortDuration));
                }
                for j in 0..n {
                    if *rec.holder != *self.id(j) {
                        out.push(Step::Edit(Edit::Name(j as u8)));
                    }
                }
            }
            if f.delete {
                out.push(Step::Edit(Edit::Delete));
            }
        }
    }

    /// The state after `step`.
    pub fn next(&self, s: &State, step: &Step) -> State {
        let mut s = s.clone();
        s.since_tick = s.since_tick.saturating_add(1);
        match *step {
            Step::Tick => self.tick(&mut s),
            Step::Coordinate => {
                s.coordinated = true;
                self.coordinate(&mut s);
            }
            Step::Fire(i) => {
                let i = usize::from(i);
                let now = self.local(i, s.t);
                if let Some(e) = s.nodes[i].elector.as_mut() {
                    e.handle_timeout(now);
                }
                self.pump(&mut s, i);
                if self.due(&s, i) {
                    s.violation
                        .get_or_insert_with(|| format!("n{i}: a timer stays due after it fired"));
                }
            }
            Step::Serve(k) => {
                let m = s.net.remove(usize::from(k));
                self.serve(&mut s, m);
            }
            Step::Deliver(k) => {
                let m = s.net.remove(usize::from(k));
                if let Body::Answer(input) = m.body {
                    self.feed(&mut s, usize::from(m.node), input);
                }
            }
            Step::Watch(i) => {
                let i = usize::from(i);
                let input = s.nodes[i].watch.as_mut().and_then(|w| {
                    let input = w.queue.pop_front();
                    w.late &= !w.queue.is_empty();
                    input
                });
                if let Some(input) = input {
                    self.feed(&mut s, i, input);
                }
            }
            Step::Resume(i) => self.open_watch(&mut s, usize::from(i)),
            Step::WorkStopped(i) => {
                let i = usize::from(i);
                let now = self.local(i, s.t);
                s.nodes[i].draining = false;
                if let Some(e) = s.nodes[i].elector.as_mut() {
                    e.work_stopped(now);
                }
                self.pump(&mut s, i);
            }
            Step::Restart(i) => self.start(&mut s, usize::from(i)),
            Step::Lose(k) => {
                s.faults_left -= 1;
                s.net.remove(usize::from(k));
            }
            Step::Duplicate(k) => {
                s.faults_left -= 1;
                let copy = s.net[usize::from(k)].clone();
                s.net.push(copy);
            }
            Step::Refuse(k) => {
                s.faults_left -= 1;
                let m = s.net.remove(usize::from(k));
                if let Body::Call { action, .. } = m.body {
                    self.answer(
                        &mut s,
                        m.node,
                        m.life,
                        &action,
                        Err(LockError::transient("503")),
                    );
                }
            }
            Step::Crash(i) => {
                s.faults_left -= 1;
                let node = &mut s.nodes[usize::from(i)];
                node.elector = None;
                node.life = node.life.wrapping_add(1);
                node.draining = false;
                node.watch = None;
                node.last_commit = None;
                node.pairing = Pairing::new();
                s.net
                    .retain(|m| m.node != i || matches!(m.body, Body::Call { .. }));
            }
            Step::Shutdown(i) | Step::StepDown(i) => {
                s.faults_left -= 1;
                let i = usize::from(i);
                let now = self.local(i, s.t);
                if let Some(e) = s.nodes[i].elector.as_mut() {
                    if matches!(step, Step::Shutdown(_)) {
                        e.shutdown(now);
                    } else {
                        e.step_down(now);
                    }
                }
                self.pump(&mut s, i);
            }
            Step::BreakWatch(i) => {
                s.faults_left -= 1;
                let i = usize::from(i);
                if let Some(w) = &mut s.nodes[i].watch {
                    w.broken = true;
                    w.late = false;
                    w.queue.clear();
                }
                self.feed(&mut s, i, Input::WatchActive(false));
            }
            Step::Cut(i) | Step::Pause(i) => {
                s.faults_left -= 1;
                let node = &mut s.nodes[usize::from(i)];
                if matches!(step, Step::Cut(_)) {
                    node.cut = true;
                } else {
                    node.paused = true;
                }
            }
            Step::Heal(i) => s.nodes[usize::from(i)].cut = false,
            Step::Wake(i) => s.nodes[usize::from(i)].paused = false,
            Step::Edit(edit) => {
                s.faults_left -= 1;
                self.edit(&mut s, edit);
            }
        }
        s
    }

    /// Real time advances one tick: what is still in flight is late now
    /// (charged to the budget), the coordinator may step again.
    fn tick(&self, s: &mut State) {
        let cost = self.tick_cost(s);
        s.faults_left = s.faults_left.saturating_sub(cost as u8);
        for m in &mut s.net {
            m.late = true;
        }
        for w in s.nodes.iter_mut().filter_map(|n| n.watch.as_mut()) {
            w.late = !w.queue.is_empty();
        }
        s.t += 1;
        s.since_tick = 0;
        s.coordinated = false;
    }

    /// A call reaches the lock: applied, its answer sent back (to the life
    /// that sent it: a crashed node's answers are dropped).
    fn serve(&self, s: &mut State, m: Msg) {
        let Body::Call { action, sent } = m.body else {
            return;
        };
        let i = usize::from(m.node);
        let before = s.lock.current().cloned();
        if let Action::Update {
            expected, record, ..
        } = &action
            && !record.is_held()
            && let Some(cur) = &before
            && cur.version == *expected
            && cur.record.is_held()
            && *cur.record.holder != *self.id(i)
        {
            s.violation.get_or_insert_with(|| {
                format!(
                    "n{i}: a release evicts holder {:?} (version {})",
                    cur.record.holder,
                    cur.version.as_str()
                )
            });
        }
        let result = s.lock.apply(&action, self.wall(s.t));
        if let (Ok(obs), Action::Create { .. } | Action::Update { .. }) = (&result, &action) {
            if *obs.record.holder == *self.id(i) && m.life == s.nodes[i].life {
                let c = &mut s.nodes[i].last_commit;
                *c = Some(c.map_or(sent, |c| c.max(sent)));
            }
            self.broadcast(s, &WatchEvent::Changed(obs.clone()));
        }
        self.answer(s, m.node, m.life, &action, result);
    }

    /// Sends the answer to `action` back to node `i`'s life `life`.
    fn answer(
        &self,
        s: &mut State,
        i: u8,
        life: u8,
        action: &Action,
        result: Result<Observation, LockError>,
    ) {
        if s.nodes[usize::from(i)].life != life {
            return;
        }
        s.net.push(Msg {
            node: i,
            life,
            late: false,
            body: Body::Answer(action.op().answer(result)),
        });
    }

    /// An operator's edit of the lock, as `kubectl` makes it: the stored
    /// record changed, its stamps kept, at a new version.
    fn edit(&self, s: &mut State, edit: Edit) {
        let wall = self.wall(s.t);
        if edit == Edit::Delete {
            let version = s.lock.delete();
            s.max_term = None;
            self.broadcast(s, &WatchEvent::Deleted(Some(version)));
            return;
        }
        let Some(current) = s.lock.current() else {
            return;
        };
        let mut rec = current.record.clone();
        match edit {
            Edit::EmptyHolder => rec.holder = "".into(),
            Edit::ShortDuration => rec.lease_duration_secs = Some(1),
            Edit::Name(j) => rec.holder = self.id(usize::from(j)).into(),
            Edit::Delete => unreachable!("handled above"),
        }
        let obs = s.lock.put(rec, wall);
        self.broadcast(s, &WatchEvent::Changed(obs));
    }

    /// The coordinator's step, as kube-apiserver's leader-election
    /// controller takes it (KEP-4355): the best live candidate (one that
    /// runs, reachable, not shutting down; the lowest index, standing for the
    /// oldest version) is given an absent, emptied or expired lock (expiry
    /// judged on the record's renew time and duration against the
    /// coordinator's wall clock), with the default duration, no acquire time
    /// and the transitions kept; while another's lease is valid, it is named
    /// as the preferred holder.
    fn coordinate(&self, s: &mut State) {
        let Some(best) = (0..s.nodes.len()).find(|&i| {
            let n = &s.nodes[i];
            n.reachable() && n.elector.as_ref().is_some_and(|e| !e.is_shutting_down())
        }) else {
            return;
        };
        let best_id: std::sync::Arc<str> = self.id(best).into();
        let lease_secs = self.setup.nodes[best].config.lease_duration_secs();
        // The coordinator's wall clock: the lock's, `skew` off.
        let now = i128::from(s.t) * i128::from(self.tick_nanos)
            + i128::from(self.setup.coordinator.unwrap_or(0)) * 1_000_000;
        let wall = WallTime::new(
            1_700_000_000 + now.div_euclid(1_000_000_000) as i64,
            now.rem_euclid(1_000_000_000) as u32,
        );
        let current = s.lock.current().map(|c| &c.record);
        let Some(record) = coordinator_write(current, &best_id, lease_secs, wall) else {
            return;
        };
        let obs = s.lock.put(record, self.wall(s.t));
        self.broadcast(s, &WatchEvent::Changed(obs));
    }

    /// The properties that hold in every state: at most one leader, and every
    /// leader within its guard (a committed write of its own sent less than a
    /// renew deadline ago); and the step's own checks.
    pub fn check(&self, s: &State) -> Result<(), String> {
        if let Some(v) = &s.violation {
            return Err(v.clone());
        }
        let leaders: Vec<usize> = (0..s.nodes.len())
            .filter(|&i| self.is_leader(s, i))
            .collect();
        if leaders.len() > 1 {
            return Err(format!("two leaders at one instant: {leaders:?}"));
        }
        for &i in &leaders {
            let now = self.local(i, s.t);
            let deadline = s.nodes[i]
                .last_commit
                .map(|c| c + self.setup.nodes[i].config.renew_deadline);
            if deadline.is_none_or(|d| now >= d) {
                return Err(format!(
                    "n{i} leads at {now:?} past its guard: last committed write's deadline {deadline:?}"
                ));
            }
        }
        if s.since_tick > 64 {
            return Err("more than 64 steps at one instant: a busy loop".into());
        }
        Ok(())
    }

    /// Whether node `i` leads now.
    pub fn is_leader(&self, s: &State, i: usize) -> bool {
        let now = self.local(i, s.t);
        s.nodes[i]
            .elector
            .as_ref()
            .is_some_and(|e| e.is_leader(now))
    }

    /// The fair continuation of `s`: crashed nodes restarted, then every
    /// call, answer, event and timer delivered in order, no fault, time
    /// advancing only when nothing is pending; `Ok` once a leader exists (or
    /// no candidate is left), `Err` if none within the setup's settle time.
    pub fn settle(&self, s: &State) -> Result<(), String> {
        let mut s = s.clone();
        for i in 0..s.nodes.len() {
            if s.nodes[i].elector.is_none() {
                s = self.next(&s, &Step::Restart(i as u8));
            }
        }
        let limit = s.t
            + u32::try_from(self.setup.settle.as_nanos() / u128::from(self.tick_nanos))
                .unwrap_or(u32::MAX);
        let mut steps = Vec::new();
        loop {
            self.check(&s)?;
            if (0..s.nodes.len()).any(|i| self.is_leader(&s, i)) {
                return Ok(());
            }
            let candidates = s
                .nodes
                .iter()
                .filter_map(|n| n.elector.as_ref())
                .any(|e| !e.is_shutting_down() && !e.is_terminated());
            if !candidates {
                return Ok(());
            }
            steps.clear();
            self.steps(&s, &mut steps, false);
            let step = match steps.iter().find(|s| **s != Step::Tick) {
                Some(step) => step.clone(),
                None if s.t < limit => {
                    self.tick(&mut s);
                    continue;
                }
                None => {
                    return Err(format!(
                        "no leader within {:?} of fair continuation",
                        self.setup.settle
                    ));
                }
            };
            s = self.next(&s, &step);
        }
    }

    /// One line on `s`.
    pub fn describe(&self, s: &State) -> String {
        let mut line = format!("t={}ms", u64::from(s.t) * self.tick_nanos / 1_000_000);
        match s.lock.current() {
            Some(o) => write!(
                line,
                " lock v{} holder={:?} n={} d={:?}",
                o.version.as_str(),
                o.record.holder,
                o.record.transitions,
                o.record.lease_duration_secs
            ),
            None => write!(line, " lock absent"),
        }
        .ok();
        for (i, n) in s.nodes.iter().enumerate() {
            let now = self.local(i, s.t);
            match &n.elector {
                None => write!(line, " | n{i} down"),
                Some(e) => write!(
                    line,
                    " | n{i} {:?}{} deadline={:?}",
                    e.role(),
                    if e.is_leader(now) { " LEADS" } else { "" },
                    e.deadline()
                ),
            }
            .ok();
        }
        for m in &s.net {
            match &m.body {
                Body::Call { action, .. } => write!(line, " | n{}->{}", m.node, brief(action)),
                Body::Answer(input) => write!(line, " | n{}<-{}", m.node, brief_input(input)),
            }
            .ok();
        }
        write!(line, " | faults left {}", s.faults_left).ok();
        line
    }
}

fn brief(a: &Action) -> String {
    match a {
        Action::Get { op } => format!("{op:?} get"),
        Action::Create { op, record } => format!("{op:?} create {:?}", record.holder),
        Action::Update {
            op,
            expected,
            record,
        } => format!(
            "{op:?} update@{} {:?} n={}",
            expected.as_str(),
            record.holder,
            record.transitions
        ),
    }
}

fn brief_input(i: &Input) -> String {
    let res = |r: &Result<Observation, LockError>| match r {
        Ok(o) => format!("ok v{} {:?}", o.version.as_str(), o.record.holder),
        Err(e) => format!("err {}", e.class()),
    };
    match i {
        Input::Read { op, result } => format!("{op:?} {}", res(result)),
        Input::Written { op, result } => format!("{op:?} {}", res(result)),
        other => format!("{other:?}"),
    }
}
