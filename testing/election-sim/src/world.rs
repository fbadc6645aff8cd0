//! The simulated cluster: electors, a store, a network of delayed messages, and a
//! virtual real-time clock that jumps to the next thing that happens.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use election_core::testing::Driven;
use election_core::{
    Action, Config, Event, Input, Instant, LockError, LockRecord, Observation, OpId, Version,
    WallTime, WatchEvent,
};

mod coordinator;

use crate::checker::{Checker, Violation};
use crate::plan::{
    COORDINATED_STREAM, Cut, Fault, LEASE_FAULT_STREAM, MessageFaults, SimOptions, WATCH_STREAM,
    WatchUse, draw_faults, draw_lease_faults, draw_watch_faults,
};
use crate::rng::SimRng;
use crate::store::{AppliedWrite, Store};
use coordinator::Coordinator;

/// Something that happens at a real instant.
#[derive(Debug)]
enum Happening {
    /// A node's timer may be due.
    Wake { node: usize },
    /// A node's request reaches the store.
    Arrive {
        node: usize,
        life: u32,
        action: Action,
    },
    /// An answer reaches a node.
    Answer {
        node: usize,
        life: u32,
        op: OpId,
        result: Result<Observation, LockError>,
    },
    /// A watch delivers to a node.
    Watch {
        node: usize,
        life: u32,
        input: Input,
    },
    /// A node's leader work finished draining.
    Drained { node: usize, life: u32 },
    /// A scheduled fault.
    Fault(Fault),
    /// The coordinator's step (coordinated runs).
    Coordinate,
}

struct Queued {
    at: u64,
    seq: u64,
    what: Happening,
}

impl PartialEq for Queued {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Queued {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// More steps than any sane run needs: a livelock (calls or wake-ups without end).
const MAX_STEPS: u64 = 2_000_000;

/// One candidate process.
struct Node {
    id: Arc<str>,
    /// The running elector, fed on the node's local clock (the core's test
    /// driver; a broken pairing of its events is the checker's to report, with
    /// the seed that replays it).
    elector: Option<Driven>,
    /// Incarnation: messages for an earlier life are dropped.
    life: u32,
    /// Local nanoseconds per real nanosecond.
    rate: f64,
    /// Local clock at real time zero.
    offset: u64,
    paused_until: u64,
    partitioned: Option<Cut>,
    watches: bool,
    /// Real time of the pending wake-up.
    wake: Option<u64>,
    /// Real time of the last watch delivery (watches deliver in order).
    last_watch: u64,
    /// Until this real time the watch delivers nothing (it stays active).
    watch_silent_until: u64,
    priority: Option<i64>,
    /// The version of the candidate's binary (coordinated runs: the oldest is
    /// preferred; a restart in the fault window may upgrade it).
    version: u32,
    down_gracefully: bool,
    /// A restart came while the node was still shutting down: it starts again as
    /// soon as the shutdown ends (a process supervisor's restart).
    restart_when_down: bool,
}

impl Node {
    fn local(&self, real: u64) -> Instant {
        Instant::from_nanos(self.offset + (real as f64 * self.rate) as u64)
    }

    fn real(&self, local: Instant) -> u64 {
        let l = local.as_nanos().saturating_sub(self.offset) as f64;
        (l / self.rate).ceil() as u64
    }
}

/// What a finished run reports.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Leaderships started.
    pub starts: usize,
    /// Real nanoseconds from the end of the faults to the first leader after it.
    pub recovery: Option<u64>,
    /// Steps simulated.
    pub steps: u64,
    /// The liveness bound that applied (real nanoseconds after the heal), see
    /// [`SimOptions::liveness_bound`].
    pub bound: u64,
    /// Deletions of the lock while the node it named still believed it led, cut
    /// off or paused, and another node ran with a shorter lease (FAULTS R14,
    /// classic: a create's lock delay must cover that holder).
    pub hidden_deletions: usize,
    /// Coordinator's assignments over a record whose holder still believed it
    /// led, to a node with a shorter lease than that holder's (FAULTS R14,
    /// coordinated: the claim must wait that holder out).
    pub hidden_assignments: usize,
}

/// The simulated cluster.
pub struct World {
    opts: SimOptions,
    rng: SimRng,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<Queued>>,
    nodes: Vec<Node>,
    store: Store,
    msg: MessageFaults,
    /// The watch faults' own random stream ([`draw_watch_faults`]).
    watch_rng: SimRng,
    /// The chance that a watching node misses a change.
    lose_watch_event: f64,
    /// The coordinator, in a coordinated run.
    coordinator: Option<Coordinator>,
    latency: Option<(Duration, u64)>,
    /// Real time from which the lock exists without a break (`None`: absent now).
    present_since: Option<u64>,
    /// See [`Report::hidden_deletions`].
    hidden_deletions: usize,
    /// See [`Report::hidden_assignments`].
    hidden_assignments: usize,
    checker: Checker,
    trace: Option<String>,
    steps: u64,
}

impl World {
    /// A cluster for `opts`, with faults and clocks drawn from `seed`.
    pub fn new(seed: u64, opts: SimOptions) -> Self {
        let mut rng = SimRng::new(seed);
        let (faults, msg) = draw_faults(&opts, &mut rng);
        let mut watch_rng = SimRng::new(seed ^ WATCH_STREAM);
        let (watch_faults, lose_watch_event) = draw_watch_faults(&opts, &mut watch_rng);
        let mut lease_rng = SimRng::new(seed ^ LEASE_FAULT_STREAM);
        let lease_faults = draw_lease_faults(&opts, &mut lease_rng);
        let (lo, hi) = (1.0 / opts.clock_ratio.sqrt(), opts.clock_ratio.sqrt());
        let nodes = (0..opts.nodes)
            .map(|i| Node {
                id: format!("n{i}").into(),
                elector: None,
                life: 0,
                rate: if opts.nodes == 1 {
                    1.0
                } else {
                    lo + (hi - lo) * (i as f64 / (opts.nodes - 1) as f64)
                },
                offset: rng.range(0, 1_000_000_000_000),
                paused_until: 0,
                partitioned: None,
                watches: match opts.watch {
                    WatchUse::None => false,
                    WatchUse::All => true,
                    WatchUse::Mixed => i % 2 == 0,
                },
                wake: None,
                last_watch: 0,
                watch_silent_until: 0,
                priority: opts.priorities.then_some(i as i64),
                version: 0,
                down_gracefully: false,
                restart_when_down: false,
            })
            .collect();
        let coordinator = opts.coordinated.then(|| {
            let mut rng = SimRng::new(seed ^ COORDINATED_STREAM);
            // Off by up to the longest lease in the fleet (FAULTS R14: ahead by
            // more than a short lease, it gives a long one away early).
            let lease = opts.longest_lease().as_nanos() as u64;
            let mut skew = rng.range(0, lease + lease / 2) as i64 - (lease / 2) as i64;
            // With mixed leases, half the runs ahead by more than half the
            // longest lease (from the stream of the lease faults): a long
            // lease given away before its holder's deadline, which the claim's
            // wait after a gap must cover.
            if opts.mixed_leases() && opts.faults && lease_rng.chance(0.5) {
                skew = lease_rng.range(lease / 2, lease + 1) as i64;
            }
            Coordinator {
                skew,
                tick: opts.config.retry_period.as_nanos() as u64,
            }
        });
        // A watch yields every change (the `Lock` contract); the coordinated
        // mode relies on it, and so does the classic mode's wait after a gap,
        // which matters only with mixed lease lengths: those runs lose no event
        // while a watch goes on. (A lock whose watch can skip must end the
        // stream instead, which the watch faults above do.)
        let lose_watch_event = if opts.coordinated || opts.mixed_leases() {
            0.0
        } else {
            lose_watch_event
        };
        let mut w = World {
            store: Store::new(opts.write_mode),
            trace: opts.trace.then(String::new),
            checker: Checker::new(opts.nodes),
            opts,
            rng,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            nodes,
            msg,
            watch_rng,
            lose_watch_event,
            coordinator,
            latency: None,
            present_since: None,
            hidden_deletions: 0,
            hidden_assignments: 0,
            steps: 0,
        };
        if w.opts.mixed_leases() {
            let factors = w.opts.lease_factors.clone();
            w.log(|| format!("lease factors {factors:?}"));
        }
        for (at, f) in faults.into_iter().chain(watch_faults).chain(lease_faults) {
            w.push(at, Happening::Fault(f));
        }
        for i in 0..w.nodes.len() {
            // Candidates start a little apart.
            let at = w.rng.range(0, 50_000_000);
            w.push(at, Happening::Fault(Fault::Restart { node: i }));
        }
        if w.coordinator.is_some() {
            // Its first step once every candidate has started.
            w.push(100_000_000, Happening::Coordinate);
        }
        w
    }

    /// The store's wall clock now (real time since the run's start, from an
    /// arbitrary epoch).
    fn wall(&self) -> WallTime {
        WallTime::new(
            (self.now / 1_000_000_000) as i64 + 1_700_000_000,
            (self.now % 1_000_000_000) as u32,
        )
    }

    /// The trace of the run so far (when tracing).
    pub fn trace(&self) -> Option<&str> {
        self.trace.as_deref()
    }

    fn push(&mut self, at: u64, what: Happening) {
        self.seq += 1;
        self.queue.push(Reverse(Queued {
            at,
            seq: self.seq,
            what,
        }));
    }

    fn log(&mut self, line: impl FnOnce() -> String) {
        if let Some(t) = &mut self.trace {
            let _ = writeln!(t, "{:>9.3}ms {}", self.now as f64 / 1e6, line());
        }
    }

    fn delay(&mut self) -> u64 {
        let mut max = self.msg.max_delay;
        if let Some((spike, until)) = self.latency
            && self.now < until
        {
            max = max.max(spike);
        }
        self.rng.range(0, max.as_nanos() as u64 + 1)
    }

    /// Runs until the faults have healed and a liveness bound has passed.
    pub fn run(mut self) -> Result<(Report, Option<String>), (Violation, Option<String>)> {
        let heal = self.opts.fault_window.as_nanos() as u64;
        let longest = self.opts.liveness_bound(true).as_nanos() as u64;
        let end = heal + longest + self.opts.longest_lease().as_nanos() as u64;
        // Everything faulty ends at `heal`.
        self.push(heal, Happening::Fault(Fault::HealNetwork));
        for i in 0..self.nodes.len() {
            self.push(heal, Happening::Fault(Fault::Heal { node: i }));
            self.push(heal, Happening::Fault(Fault::Restart { node: i }));
        }
        let mut recovery = None;
        // Whether the lock was absent within a lease (the longest, real, slowest
        // clock) of the heal, or after it: a create's strict lock delay may then
        // run past the heal.
        let stretch = self.opts.clock_ratio.sqrt() * 1.01;
        let lease_real = self.opts.longest_lease().mul_f64(stretch).as_nanos() as u64;
        let mut absent_near_heal = false;
        while let Some(Reverse(q)) = self.queue.pop() {
            if q.at > end {
                break;
            }
            self.now = self.now.max(q.at);
            self.steps += 1;
            if self.steps > MAX_STEPS {
                return Err((Violation::Stuck { at: self.now }, self.trace));
            }
            if let Err(v) = self.step(q) {
                return Err((v, self.trace));
            }
            absent_near_heal |= self.present_since.is_none_or(|t| t + lease_real >= heal);
            let leaders = self.leaders();
            if let Err(v) = self.checker.check_overlap(self.now, &leaders) {
                return Err((v, self.trace));
            }
            if recovery.is_none() && self.now >= heal && !leaders.is_empty() {
                recovery = Some(self.now - heal);
            }
        }
        let bound = self.opts.liveness_bound(absent_near_heal).as_nanos() as u64;
        let report = Report {
            starts: self.checker.starts(),
            recovery,
            steps: self.steps,
            bound,
            hidden_deletions: self.hidden_deletions,
            hidden_assignments: self.hidden_assignments,
        };
        match recovery {
            Some(r) if r <= bound => {}
            _ => {
                let v = Violation::NoLeader {
                    after_heal_ms: bound / 1_000_000,
                };
                return Err((v, self.trace));
            }
        }
        let top = self.nodes.len() - 1; // the highest priority, when there are priorities
        let settled = if self.opts.priorities {
            self.checker.leading() == Some(top)
        } else {
            self.checker.starts() == 1
        };
        if !self.opts.faults && !settled {
            return Err((
                Violation::LeaderChangedWithoutFaults {
                    starts: self.checker.starts(),
                },
                self.trace,
            ));
        }
        Ok((report, self.trace))
    }

    fn leaders(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| {
                let n = &self.nodes[i];
                n.elector
                    .as_ref()
                    .is_some_and(|d| d.elector.is_leader(n.local(self.now)))
            })
            .collect()
    }

    fn step(&mut self, q: Queued) -> Result<(), Violation> {
        // A paused process handles nothing until it resumes.
        let node_of = match &q.what {
            Happening::Wake { node }
            | Happening::Answer { node, .. }
            | Happening::Watch { node, .. }
            | Happening::Drained { node, .. } => Some(*node),
            _ => None,
        };
        if let Some(n) = node_of
            && self.nodes[n].paused_until > self.now
        {
            let at = self.nodes[n].paused_until;
            if let Happening::Wake { .. } = q.what {
                if self.nodes[n].wake != Some(q.at) {
                    return Ok(()); // superseded
                }
                self.nodes[n].wake = Some(at);
            }
            self.push(at, q.what);
            return Ok(());
        }
        match q.what {
            Happening::Wake { node } => {
                if self.nodes[node].wake != Some(q.at) {
                    return Ok(()); // superseded
                }
                self.nodes[node].wake = None;
                let local = self.nodes[node].local(self.now);
                if let Some(d) = &mut self.nodes[node].elector {
                    d.advance_to(local);
                }
                self.pump(node)
            }
            Happening::Arrive { node, life, action } => self.arrive(node, life, action),
            Happening::Answer {
                node,
                life,
                op,
                result,
            } => {
                if life != self.nodes[node].life || self.nodes[node].partitioned.is_some() {
                    return Ok(());
                }
                let id = self.nodes[node].id.clone();
                self.log(|| format!("{id} <- {op:?} {}", brief_result(&result)));
                if let Some(d) = self.at_now(node) {
                    d.answer(op, result);
                }
                self.pump(node)
            }
            Happening::Watch { node, life, input } => {
                if life != self.nodes[node].life {
                    return Ok(());
                }
                let id = self.nodes[node].id.clone();
                self.log(|| format!("{id} <- watch {}", brief_input(&input)));
                if let Some(d) = self.at_now(node) {
                    d.handle(input);
                }
                self.pump(node)
            }
            Happening::Drained { node, life } => {
                if life != self.nodes[node].life {
                    return Ok(());
                }
                if let Some(d) = self.at_now(node) {
                    d.work_stopped();
                }
                self.pump(node)
            }
            Happening::Fault(f) => self.fault(f),
            Happening::Coordinate => self.coordinate(),
        }
    }

    /// Drains a node's actions and events, checks them, schedules its wake-up.
    fn pump(&mut self, node: usize) -> Result<(), Violation> {
        let local = self.nodes[node].local(self.now);
        let life = self.nodes[node].life;
        let Some(d) = &mut self.nodes[node].elector else {
            return Ok(());
        };
        let actions: Vec<Action> = std::iter::from_fn(|| d.next_action()).collect();
        let events = d.take_events().into_iter().map(|(_, ev)| ev);
        let leading = d.elector.is_leader(local);
        let timeout = d.elector.poll_timeout();
        let id = self.nodes[node].id.clone();
        for ev in events {
            self.log(|| format!("{id} event {ev:?}"));
            self.checker.on_event(node, &ev, self.now)?;
            match ev {
                Event::Draining { .. } => {
                    let drain = if self.rng.chance(0.05) {
                        self.opts.node_config(node).renew_deadline.as_nanos() as u64 * 2
                    } else {
                        self.rng.range(0, 300_000_000)
                    };
                    self.push(self.now + drain, Happening::Drained { node, life });
                }
                Event::Terminated => {
                    self.nodes[node].elector = None;
                    self.nodes[node].life += 1;
                    self.nodes[node].down_gracefully = true;
                    if std::mem::take(&mut self.nodes[node].restart_when_down) {
                        self.push(self.now, Happening::Fault(Fault::Restart { node }));
                    }
                    return Ok(());
                }
                _ => {}
            }
        }
        for a in actions {
            if let Action::Update { record, .. } = &a
                && !record.is_held()
            {
                self.checker.on_release_sent(node, leading, self.now)?;
            }
            self.log(|| format!("{id} -> {}", brief_action(&a)));
            self.send(node, a);
        }
        if let Some(t) = timeout {
            let mut real = self.nodes[node].real(t).max(self.now);
            // Float rounding must not wake the node a hair before its timer.
            while self.nodes[node].local(real) < t {
                real += 1;
            }
            if self.nodes[node]
                .wake
                .is_none_or(|w| real < w || w < self.now)
            {
                self.nodes[node].wake = Some(real);
                self.push(real, Happening::Wake { node });
            }
        }
        Ok(())
    }

    /// An answer reaches `node` after a network delay.
    fn answer_later(
        &mut self,
        node: usize,
        life: u32,
        op: OpId,
        result: Result<Observation, LockError>,
    ) {
        let at = self.now + self.delay();
        self.push(
            at,
            Happening::Answer {
                node,
                life,
                op,
                result,
            },
        );
    }

    fn send(&mut self, node: usize, action: Action) {
        let life = self.nodes[node].life;
        let op = action.op();
        if self.nodes[node].partitioned == Some(Cut::RefusedOrHang) {
            // Refused at once, or never arrives.
            if self.rng.chance(0.5) {
                let result = Err(LockError::transient("connection refused"));
                self.answer_later(node, life, op, result);
            }
            return;
        }
        if self.rng.chance(self.msg.lose_request) {
            return;
        }
        let at = self.now + self.delay();
        self.push(at, Happening::Arrive { node, life, action });
    }

    fn arrive(&mut self, node: usize, life: u32, action: Action) -> Result<(), Violation> {
        let op = action.op();
        if self.rng.chance(self.msg.transient) {
            let retry_after = self
                .rng
                .chance(0.3)
                .then(|| Duration::from_millis(self.rng.range(100, 3_000)));
            let result = Err(LockError::Transient {
                message: "503".into(),
                retry_after,
            });
            self.answer_later(node, life, op, result);
            return Ok(());
        }
        let id = self.nodes[node].id.clone();
        let (mut result, write) = self.store.apply(&action, &id, self.wall());
        if let Some(w) = write {
            if self.opts.coordinated {
                self.checker.on_coordinated_write(&w, &id)?;
            }
            if self.present_since.is_none() {
                self.present_since = Some(self.now);
            }
            self.checker.on_write(&w, &id, self.now)?;
            self.broadcast(&w, None);
            if self.rng.chance(self.msg.unknown_after_commit) {
                result = Err(LockError::unknown("500 after commit"));
            }
        }
        if self.rng.chance(self.msg.lose_answer) {
            return Ok(());
        }
        let dup = self.rng.chance(self.msg.duplicate);
        self.answer_later(node, life, op, result.clone());
        if dup {
            self.answer_later(node, life, op, result);
        }
        Ok(())
    }

    /// Delivers a change to every watching node, in order per node (a deletion
    /// with its version).
    fn broadcast(&mut self, w: &AppliedWrite, deleted_at: Option<Version>) {
        let event = match &w.now {
            Some(obs) => WatchEvent::Changed(obs.clone()),
            None => WatchEvent::Deleted(deleted_at),
        };
        for i in 0..self.nodes.len() {
            let n = &self.nodes[i];
            if !n.watches || n.elector.is_none() || n.partitioned.is_some() {
                continue;
            }
            if self.now < n.watch_silent_until || self.watch_rng.chance(self.lose_watch_event) {
                continue;
            }
            let at = (self.now + self.delay()).max(self.nodes[i].last_watch + 1);
            self.nodes[i].last_watch = at;
            let life = self.nodes[i].life;
            self.push(
                at,
                Happening::Watch {
                    node: i,
                    life,
                    input: Input::Watch(event.clone()),
                },
            );
        }
    }

    /// A (re)started watch: active, and the current state first.
    fn start_watch(&mut self, node: usize) {
        if !self.nodes[node].watches {
            return;
        }
        let life = self.nodes[node].life;
        let at = (self.now + self.delay()).max(self.nodes[node].last_watch + 1);
        self.nodes[node].last_watch = at;
        self.push(
            at,
            Happening::Watch {
                node,
                life,
                input: Input::WatchActive(true),
            },
        );
        // An absent lock at a watch's start, as Kubernetes' lock reports it: a
        // deletion whose version is unknown.
        let event = match self.store.current() {
            Some(obs) => WatchEvent::Changed(obs.clone()),
            None => WatchEvent::Deleted(None),
        };
        self.push(
            at,
            Happening::Watch {
                node,
                life,
                input: Input::Watch(event),
            },
        );
    }

    fn fault(&mut self, f: Fault) -> Result<(), Violation> {
        self.log(|| format!("FAULT {f:?}"));
        match f {
            Fault::Pause { node, until } => self.nodes[node].paused_until = until,
            Fault::Crash { node } => {
                if self.nodes[node].elector.take().is_some() {
                    self.nodes[node].life += 1;
                    self.checker.on_crash(node);
                }
            }
            Fault::Restart { node } => {
                if let Some(d) = &self.nodes[node].elector {
                    self.nodes[node].restart_when_down |= d.elector.is_shutting_down();
                    return Ok(());
                }
                self.nodes[node].life += 1;
                self.nodes[node].down_gracefully = false;
                // A rolling upgrade: a restart within the fault window may bring
                // a newer version, which the coordinator prefers less.
                if self.opts.coordinated
                    && self.now < self.opts.fault_window.as_nanos() as u64
                    && self.rng.chance(0.5)
                {
                    self.nodes[node].version += 1;
                }
                let mut config: Config = self
                    .opts
                    .node_config(node)
                    .identity(self.nodes[node].id.clone());
                config.seed = Some(self.rng.next_u64());
                config.priority = self.nodes[node].priority;
                let local = self.nodes[node].local(self.now);
                self.nodes[node].elector = Some(
                    Driven::start(config, local)
                        .expect("simulated configs are valid")
                        .reporting_pairing(),
                );
                self.nodes[node].wake = None;
                // A process started inside a partition cannot open its watch:
                // the heal starts it (as it does for a node cut off while running).
                if self.nodes[node].partitioned.is_none() {
                    self.start_watch(node);
                }
                return self.pump(node);
            }
            Fault::Shutdown { node } => {
                if let Some(d) = self.at_now(node) {
                    d.shutdown();
                    return self.pump(node);
                }
            }
            Fault::StepDown { node } => {
                if let Some(d) = self.at_now(node) {
                    d.step_down();
                    return self.pump(node);
                }
            }
            Fault::Partition { node, cut } => {
                self.nodes[node].partitioned = Some(cut);
                if self.nodes[node].watches
                    && let Some(d) = self.at_now(node)
                {
                    d.watch_active(false);
                    return self.pump(node);
                }
            }
            Fault::PartitionHolder { cut, until } => {
                let holder = self
                    .store
                    .current()
                    .and_then(|o| self.node_named(&o.record.holder));
                if let Some(node) = holder {
                    self.push(until, Happening::Fault(Fault::Heal { node }));
                    return self.fault(Fault::Partition { node, cut });
                }
            }
            Fault::WatchSilent { node, until } => self.nodes[node].watch_silent_until = until,
            Fault::WatchRestart { node } => {
                self.nodes[node].watch_silent_until = 0;
                if self.nodes[node].watches
                    && self.nodes[node].partitioned.is_none()
                    && self.nodes[node].elector.is_some()
                {
                    if let Some(d) = self.at_now(node) {
                        d.watch_active(false);
                    }
                    self.start_watch(node);
                    return self.pump(node);
                }
            }
            Fault::HealNetwork => {
                self.lose_watch_event = 0.0;
                self.latency = None;
                self.msg = MessageFaults {
                    max_delay: self.msg.max_delay,
                    ..MessageFaults::default()
                };
            }
            Fault::Heal { node } => {
                self.nodes[node].paused_until = self.nodes[node].paused_until.min(self.now);
                if self.nodes[node].partitioned.take().is_some()
                    && self.nodes[node].elector.is_some()
                {
                    self.start_watch(node);
                }
            }
            Fault::DeleteLock => {
                if let Some(h) = self
                    .store
                    .current()
                    .and_then(|o| self.node_named(&o.record.holder))
                    && self.hidden_believer(h, None)
                {
                    self.hidden_deletions += 1;
                }
                let (w, version) = self.store.delete();
                self.present_since = None;
                self.checker.on_delete(self.store.last_version());
                self.broadcast(&w, Some(version));
            }
            Fault::HumanEdit { holder } => {
                self.patch_record(|r| r.holder = holder.into());
            }
            Fault::HumanEditNaming { node } => {
                let id = self.nodes[node].id.clone();
                self.patch_record(|r| r.holder = id);
            }
            Fault::DurationEdit { secs } => {
                self.patch_record(|r| r.lease_duration_secs = Some(secs));
            }
            // A label or annotation added: the record as stored, at a new version.
            Fault::MetadataEdit => self.patch_record(|_| {}),
            Fault::Latency { max, until } => self.latency = Some((max, until)),
        }
        Ok(())
    }
}

impl World {
    /// The elector of `node`, if it runs, its clock set to the node's local
    /// time now: what every input, timeout and command is handed to.
    fn at_now(&mut self, node: usize) -> Option<&mut Driven> {
        let local = self.nodes[node].local(self.now);
        let d = self.nodes[node].elector.as_mut()?;
        d.set_clock(local);
        Some(d)
    }

    /// The node whose identity is `id`.
    fn node_named(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| &*n.id == id)
    }

    /// Whether node `h` believes it leads while the others cannot see it (cut
    /// off or paused), and runs with a longer lease than `than` (any other live
    /// node, when `None`): the holder FAULTS R14 is about.
    fn hidden_believer(&self, h: usize, than: Option<usize>) -> bool {
        let n = &self.nodes[h];
        let believes = n
            .elector
            .as_ref()
            .is_some_and(|d| d.elector.is_leader(n.local(self.now)));
        let hidden = n.partitioned.is_some() || n.paused_until > self.now;
        let k = self.opts.lease_factor(h);
        let shorter = match than {
            Some(o) => self.opts.lease_factor(o) < k,
            None => (0..self.nodes.len()).any(|o| {
                o != h && self.nodes[o].elector.is_some() && self.opts.lease_factor(o) < k
            }),
        };
        believes && hidden && shorter
    }

    /// A human's patch of the record (FAULTS R1, R2, R13): `edit` applied to the
    /// record as stored, at a new version; the holder's stamps are kept, as a
    /// patch keeps them. A patch of a missing lock fails (404), and this operator
    /// never patches a record into a release's shape (empty holder, duration 1 s
    /// or none): that is a release, which anyone may take at once whoever wrote
    /// it (DESIGN §4 "Foreign edits and twins"), so it is an edit a careful
    /// operator does not make while a leader may still believe.
    fn patch_record(&mut self, edit: impl FnOnce(&mut LockRecord)) {
        let Some(current) = self.store.current() else {
            self.log(|| "human patch of a missing lock: 404".to_string());
            return;
        };
        let mut record = current.record.clone();
        let was_released = record.is_released();
        edit(&mut record);
        if record.is_released() && !was_released {
            self.log(|| "human patch into a release's shape: not made".to_string());
            return;
        }
        let wall = WallTime::new((self.now / 1_000_000_000) as i64 + 1_700_000_000, 0);
        let w = self.store.human_edit(record, wall);
        self.broadcast(&w, None);
    }
}

fn brief_action(a: &Action) -> String {
    match a {
        Action::Get { op } => format!("{op:?} get"),
        Action::Create { op, record } => format!(
            "{op:?} create holder={:?} t={}",
            record.holder, record.transitions
        ),
        Action::Update {
            op,
            expected,
            record,
        } => format!(
            "{op:?} update@{expected} holder={:?} t={} handover={:?}",
            record.holder,
            record.transitions,
            record.handover.as_ref().map(|h| &h.to)
        ),
    }
}

fn brief_result(r: &Result<election_core::Observation, LockError>) -> String {
    match r {
        Ok(o) => format!(
            "ok {:?} holder={:?} t={} d={:?}",
            o.version, o.record.holder, o.record.transitions, o.record.lease_duration_secs
        ),
        Err(e) => format!("err {e}"),
    }
}

fn brief_input(i: &Input) -> String {
    match i {
        Input::Watch(WatchEvent::Changed(o)) => format!(
            "{:?} holder={:?} t={} d={:?} acquired={:?}",
            o.version,
            o.record.holder,
            o.record.transitions,
            o.record.lease_duration_secs,
            o.record.acquire_time
        ),
        other => format!("{other:?}"),
    }
}
