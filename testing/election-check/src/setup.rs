//! [`Setup`]: what a run explores, the nodes, their clocks, the bound and the
//! faults drawn, and the presets the CLI and the tests name.

use std::time::Duration;

use election_core::{Config, LockDelay};

/// The faults a run draws, each costing one of the run's budget.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Time advances over a call, an answer or a watch event not yet delivered,
    /// or over a timer due and not yet fired (a slow network, a paused process).
    pub late: bool,
    /// A call lost before the lock, or an answer lost after it (the write
    /// committed, its outcome unknown to the caller).
    pub lose: bool,
    /// An answer delivered twice.
    pub duplicate: bool,
    /// A call refused (503) without reaching the lock.
    pub refuse: bool,
    /// A node crashes (and restarts when the schedule says).
    pub crash: bool,
    /// A node is cut off from the lock (its calls hang, its answers and
    /// watch events wait) until the schedule heals it.
    pub partition: bool,
    /// A node's process stalls (no timer fires, nothing is delivered to it)
    /// until the schedule wakes it.
    pub pause: bool,
    /// A node shuts down gracefully, or its leader steps down.
    pub stop: bool,
    /// A watch breaks: its queued events are dropped and the node told.
    pub watch_break: bool,
    /// An operator's edit: the holder emptied (not into a release's shape), the
    /// duration shortened, the holder named another node.
    pub edit: bool,
    /// An operator deletes the lock.
    pub delete: bool,
}

impl Faults {
    /// Every kind.
    pub const ALL: Faults = Faults {
        late: true,
        lose: true,
        duplicate: true,
        refuse: true,
        crash: true,
        partition: true,
        pause: true,
        stop: true,
        watch_break: true,
        edit: true,
        delete: true,
    };
    /// None: the election on a perfect network, every interleaving.
    pub const NONE: Faults = Faults {
        late: false,
        lose: false,
        duplicate: false,
        refuse: false,
        crash: false,
        partition: false,
        pause: false,
        stop: false,
        watch_break: false,
        edit: false,
        delete: false,
    };
}

/// One node: its configuration and its clock rate against real time.
#[derive(Clone, Debug)]
pub struct NodeSetup {
    /// The elector's configuration (identity included).
    pub config: Config,
    /// Local time runs `rate.0 / rate.1` times as fast as real time.
    pub rate: (u64, u64),
}

/// What one run explores.
#[derive(Clone, Debug)]
pub struct Setup {
    /// A name for reports.
    pub name: String,
    /// The candidates.
    pub nodes: Vec<NodeSetup>,
    /// Real time advances in ticks of this length.
    pub tick: Duration,
    /// Real time explored, in ticks.
    pub ticks: u32,
    /// Faults drawn in one schedule, at most.
    pub budget: u8,
    /// The kinds drawn.
    pub faults: Faults,
    /// Whether the nodes watch the lock (else they poll).
    pub watch: bool,
    /// Whether nodes with the same configuration and clock are interchangeable
    /// (states that differ only by their names are explored once).
    pub symmetry: bool,
    /// The holder of the lock at the start, a candidate gone (its lease of
    /// the candidates' duration, just renewed); `None`: the lock is absent.
    pub held_by: Option<String>,
    /// Coordinated mode: the nodes are coordinated candidates, and the
    /// coordinator (as kube-apiserver's leader-election controller behaves)
    /// steps at most once a tick, its wall clock this many milliseconds ahead
    /// of the lock's (negative: behind). `None`: classic mode.
    pub coordinator: Option<i64>,
    /// Once the schedule ends, a fair continuation (every call served and
    /// answered, every timer fired, crashed nodes restarted, no fault) must see
    /// a leader within this much real time.
    pub settle: Duration,
}

/// The timings of every preset: a 2 s lease, a 1.5 s renew deadline, a 500 ms
/// retry period and request timeout, no jitter (retries fall on the ticks; the
/// rate of each clock is what varies).
pub fn config(identity: &str) -> Config {
    let mut c = Config::fast(identity).timings(
        Duration::from_secs(2),
        Duration::from_millis(1_500),
        Duration::from_millis(500),
    );
    c.request_timeout = Duration::from_millis(500);
    c.jitter = 0.0;
    c.seed(1)
}

impl Setup {
    /// `n` candidates of [`config`], the first `fast` of them with a clock
    /// `rate` times as fast as the others, polling, every fault kind, a budget
    /// of `budget`, `ticks` ticks of 500 ms.
    pub fn classic(n: usize, ticks: u32, budget: u8) -> Setup {
        let nodes = (0..n)
            .map(|i| NodeSetup {
                config: config(&format!("n{i}")),
                rate: (1, 1),
            })
            .collect();
        Setup {
            name: format!("classic, {n} nodes, {ticks} ticks, {budget} faults"),
            nodes,
            tick: Duration::from_millis(500),
            ticks,
            budget,
            faults: Faults::ALL,
            watch: false,
            symmetry: false,
            held_by: None,
            coordinator: None,
            settle: Duration::from_secs(12),
        }
    }

    /// Sets node `i`'s clock rate to `num / den`.
    #[must_use]
    pub fn rate(mut self, i: usize, num: u64, den: u64) -> Setup {
        self.nodes[i].rate = (num, den);
        self
    }

    /// Sets node `i`'s lease duration, its renew deadline three quarters of
    /// it (its retry period and request timeout kept), and the fleet's longest
    /// lease on every node when `fleet` (docs/faults.md R14).
    #[must_use]
    pub fn lease(mut self, i: usize, secs: u64, fleet: bool) -> Setup {
        let c = &mut self.nodes[i].config;
        c.lease_duration = Duration::from_secs(secs);
        c.renew_deadline = c.lease_duration * 3 / 4;
        if fleet {
            let longest = self
                .nodes
                .iter()
                .map(|n| n.config.lease_duration)
                .max()
                .unwrap_or_default();
            for n in &mut self.nodes {
                n.config.fleet_lease_duration = Some(longest);
            }
        }
        self
    }

    /// Edits every node's configuration.
    #[must_use]
    pub fn each(mut self, edit: impl Fn(&mut Config)) -> Setup {
        for n in &mut self.nodes {
            edit(&mut n.config);
        }
        self
    }

    /// The nodes watch the lock.
    #[must_use]
    pub fn watching(mut self) -> Setup {
        self.watch = true;
        self
    }

    /// Draws only these fault kinds.
    #[must_use]
    pub fn faults(mut self, faults: Faults) -> Setup {
        self.faults = faults;
        self
    }

    /// Takes out the strict lock delay: every node leads at once on a create.
    #[must_use]
    pub fn without_lock_delay(self) -> Setup {
        self.each(|c| c.lock_delay = LockDelay::Immediate)
    }

    /// Names the run.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Setup {
        self.name = name.into();
        self
    }

    /// Coordinated mode, the coordinator's clock `skew_ms` ahead of the lock's.
    #[must_use]
    pub fn coordinated(mut self, skew_ms: i64) -> Setup {
        self.coordinator = Some(skew_ms);
        self.name = self.name.replacen("classic", "coordinated", 1);
        self.each(|c| c.mode = election_core::Mode::Coordinated)
    }

    /// The lock starts held by `holder`, a candidate gone.
    #[must_use]
    pub fn held_by(mut self, holder: &str) -> Setup {
        self.held_by = Some(holder.into());
        self
    }

    /// Explores states that differ only by the names of interchangeable nodes
    /// once.
    #[must_use]
    pub fn symmetric(mut self) -> Setup {
        self.symmetry = true;
        self
    }
}
