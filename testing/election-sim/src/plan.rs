//! What a run simulates: the cluster, its clocks, and the faults drawn from the seed.

use core::time::Duration;

use election_core::{Config, Mode};

use crate::rng::SimRng;
use crate::store::WriteMode;

/// How a run is set up.
#[derive(Clone, Debug)]
pub struct SimOptions {
    /// Number of candidates.
    pub nodes: usize,
    /// The configuration every candidate uses (identity and seed are set per
    /// node), its lease scaled per node by [`SimOptions::lease_factors`]
    /// ([`SimOptions::node_config`]).
    pub config: Config,
    /// Each node's lease multiplier (one per node): node `i` runs with
    /// `lease_duration × k` and `renew_deadline × k`, the ratio of the two (and so
    /// the tolerated clock ratio) unchanged. All 1 in most runs; mixed in some
    /// (FAULTS R14: a rollout that changes `--lease-duration`, a fleet mixed with
    /// client-go), drawn from a stream of their own.
    pub lease_factors: Vec<u32>,
    /// Every node is told the fleet's longest lease
    /// (`Config::fleet_lease_duration`), as the operator of a fleet with mixed
    /// lease lengths must: without it, a node that never saw the longest-lease
    /// holder cannot know to wait for it (a negative control turns it off).
    pub fleet_lease: bool,
    /// Faults are injected during `[0, fault_window)`; then everything heals.
    pub fault_window: Duration,
    /// Inject faults at all. A fault-free run must elect one leader and keep it.
    pub faults: bool,
    /// The spread of clock rates, fastest over slowest. Safety is promised below
    /// [`Config::tolerated_clock_ratio`].
    pub clock_ratio: f64,
    /// Compare-and-swap or blind writes.
    pub write_mode: WriteMode,
    /// Which nodes use a watch (else they poll).
    pub watch: WatchUse,
    /// Give nodes distinct priorities (handover mode).
    pub priorities: bool,
    /// Coordinated leader election: a coordinator (the API server's controller,
    /// one of the run's actors) assigns the lock; the candidates run
    /// [`election_core::Mode::Coordinated`].
    pub coordinated: bool,
    /// Keep a trace of every step, for replays.
    pub trace: bool,
}

/// Which nodes watch the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchUse {
    /// Everybody polls (client-go).
    None,
    /// Everybody watches.
    All,
    /// Even nodes watch, odd ones poll.
    Mixed,
}

impl SimOptions {
    /// The scenario a seed stands for: its configuration, size, watch use and
    /// whether it has faults, all drawn from the seed.
    pub fn for_seed(seed: u64) -> Self {
        let mut rng = SimRng::new(seed.wrapping_mul(31).wrapping_add(7));
        let config = match rng.range(0, 3) {
            0 => Config::client_go("x"),
            _ => Config::fast("x"),
        };
        let ratio = config.tolerated_clock_ratio();
        let watch = match rng.range(0, 3) {
            0 => WatchUse::None,
            1 => WatchUse::All,
            _ => WatchUse::Mixed,
        };
        let window = config.lease_duration * 6;
        let nodes = rng.range(2, 6) as usize;
        let mut opts = SimOptions {
            nodes,
            lease_factors: vec![1; nodes],
            fleet_lease: true,
            fault_window: window,
            faults: !rng.chance(0.1),
            // Anywhere from equal rates to 95 % of what the configuration tolerates.
            clock_ratio: 1.0 + (ratio - 1.0) * 0.95 * rng.unit(),
            write_mode: WriteMode::CompareAndSwap,
            watch,
            priorities: rng.chance(0.25),
            coordinated: false,
            trace: false,
            config,
        };
        // Drawn last, so that the draws above stand for each seed as they did.
        // client-go's jitter, a narrower and a wider one (each within the rule
        // `renew_deadline > retry_period × jitter` for both presets).
        opts.config.jitter = [1.2, 0.5, 2.0][rng.range(0, 3) as usize];
        opts.config.release_on_shutdown = !rng.chance(0.2);
        // A leader that renews less often than it retries, on a shorter request
        // timeout: any interval the rule `renew_interval + request_timeout <
        // renew_deadline` accepts.
        if rng.chance(0.4) {
            let c = &mut opts.config;
            c.request_timeout = c.request_timeout.mul_f64(0.5 + 0.5 * rng.unit());
            let room = c.renew_deadline - c.request_timeout - c.retry_period;
            c.renew_interval = Some(c.retry_period + room.mul_f64(0.99 * rng.unit()));
        }
        // From a stream of its own, so that every classic seed stays what it was.
        if SimRng::new(seed ^ COORDINATED_STREAM).chance(0.3) {
            opts.set_coordinated(true);
        }
        // Mixed lease lengths in 30 % of the runs, from a stream of their own too.
        if SimRng::new(seed ^ LEASE_STREAM).chance(0.3) {
            opts.mix_leases(seed);
        }
        opts
    }

    /// Gives the nodes the mixed lease lengths `seed` draws (FAULTS R14): a
    /// multiplier in {1, 2, 3} per node, at least two of them distinct. The
    /// fault window grows with the longest lease. `draw_lease_faults` then
    /// adds the faults that hide a longer-lease holder from the others.
    pub fn mix_leases(&mut self, seed: u64) {
        let mut rng = SimRng::new(seed ^ LEASE_STREAM);
        let _ = rng.chance(0.3); // the draw of whether the seed mixes them
        let mut factors: Vec<u32> = (0..self.nodes).map(|_| rng.range(1, 4) as u32).collect();
        if factors.iter().all(|&k| k == factors[0]) {
            let i = rng.range(0, self.nodes as u64) as usize;
            factors[i] = if factors[i] == 1 { 3 } else { 1 };
        }
        self.set_lease_factors(factors);
    }

    /// Sets each node's lease multiplier (one per node, each at least 1), the
    /// fault window six of the longest leases.
    pub fn set_lease_factors(&mut self, factors: Vec<u32>) {
        assert_eq!(factors.len(), self.nodes, "one lease factor per node");
        assert!(
            factors.iter().all(|&k| k >= 1),
            "lease factors are at least 1"
        );
        self.lease_factors = factors;
        self.fault_window = self.longest_lease() * 6;
    }

    /// Whether the nodes run with different lease lengths.
    pub fn mixed_leases(&self) -> bool {
        self.lease_factors
            .iter()
            .any(|&k| k != self.lease_factors[0])
    }

    /// Node `node`'s lease multiplier (1 for a node beyond the factors given).
    pub fn lease_factor(&self, node: usize) -> u32 {
        self.lease_factors.get(node).copied().unwrap_or(1)
    }

    /// The configuration node `node` runs with (before its identity, seed and
    /// priority are set): [`SimOptions::config`] with the lease and the renew
    /// deadline multiplied by its factor. Every rule of `Config::validate` that
    /// holds for the base holds for it: the lease stays whole seconds, the ratio
    /// of lease to renew deadline is kept, and the renew deadline only grows
    /// against the retry period, the renew interval and the request timeout.
    pub fn node_config(&self, node: usize) -> Config {
        let k = self.lease_factor(node);
        let mut c = self.config.clone();
        c.lease_duration *= k;
        c.renew_deadline *= k;
        if self.fleet_lease && self.mixed_leases() {
            c.fleet_lease_duration = Some(self.longest_lease());
        }
        c
    }

    /// The longest lease in the fleet: what liveness bounds, fault spans and
    /// windows are counted in.
    pub fn longest_lease(&self) -> Duration {
        let k = self.lease_factors.iter().copied().max().unwrap_or(1);
        self.config.lease_duration * k
    }

    /// Switches coordinated leader election on or off (priorities do not apply
    /// to it).
    pub fn set_coordinated(&mut self, on: bool) {
        self.coordinated = on;
        self.config.mode = if on { Mode::Coordinated } else { Mode::Classic };
        if on {
            self.priorities = false;
        }
    }

    /// How long after the faults heal a leader must exist (real time).
    ///
    /// DESIGN §1's bound, `lease_duration + retry_period × (1 + jitter)` plus one
    /// request (its timeout), with one more `lease_duration` when `lock_absent`:
    /// the lock was absent (deleted, or not created yet) at some instant within a
    /// lease of the heal or later, so that a create's strict lock delay may still
    /// run after the heal. Local durations are stretched by the slowest clock
    /// (`√clock_ratio` real nanoseconds per local one), plus 1 % for rounding and
    /// the simulated network's delays.
    ///
    /// With mixed lease lengths every lease in it is the longest in the fleet
    /// ([`SimOptions::longest_lease`]): a follower times a held record with the
    /// longer of the record's duration and its own, a create's lock delay and a
    /// coordinated claim's wait after a gap last the longest lease the node has
    /// seen (FAULTS R14), and the coordinator judges expiry on each record's own
    /// duration. The retry period and the request timeout are the same on every
    /// node.
    pub fn liveness_bound(&self, lock_absent: bool) -> Duration {
        let c = &self.config;
        let lease = self.longest_lease();
        let mut local = lease + c.max_retry_interval() + c.request_timeout;
        if lock_absent {
            local += lease;
        }
        if self.coordinated {
            // The coordinator's own wait for the last record to expire (its clock
            // may run behind by a lease), its tick, and the assignee's wait of a
            // lease after a version it may have missed before the assignment.
            local += lease * 2 + c.retry_period + lease;
        }
        local.mul_f64(self.clock_ratio.sqrt() * 1.01)
    }
}

/// A fault, scheduled at a real time. `node` is a node's index; times are real
/// nanoseconds.
#[derive(Clone, Debug)]
#[allow(missing_docs)] // the fields are named by the variant's doc
pub enum Fault {
    /// The node's process freezes until the given real time (nanoseconds).
    Pause { node: usize, until: u64 },
    /// The node crashes: its state is gone, its pending answers too.
    Crash { node: usize },
    /// The node starts again, with a fresh elector and the same identity.
    Restart { node: usize },
    /// The node shuts down gracefully (and restarts later).
    Shutdown { node: usize },
    /// The node asks to step down.
    StepDown { node: usize },
    /// The node is cut off from the lock, as `cut` says.
    Partition { node: usize, cut: Cut },
    /// The partition heals.
    Heal { node: usize },
    /// The node the lock names (if any, when the fault comes) is cut off from
    /// the lock, as `cut` says, until the given real time (FAULTS R14: a holder
    /// hidden from the others).
    PartitionHolder { cut: Cut, until: u64 },
    /// The node's watch falls silent until the given real time: it stays active
    /// as far as the node knows, but delivers nothing (a dead connection, a
    /// shared watch whose hub stalled); then it restarts fresh.
    WatchSilent { node: usize, until: u64 },
    /// The node's watch ends and a fresh one starts, the current state first (a
    /// `410 Gone` on a resume, a shared watch that lists afresh).
    WatchRestart { node: usize },
    /// Someone deletes the lock.
    DeleteLock,
    /// Someone patches the holder by hand (`""`: emptied, as `kubectl patch`
    /// with `holderIdentity: null` leaves it), the rest of the record as stored.
    HumanEdit { holder: &'static str },
    /// Someone patches the holder by hand to a candidate's identity (a forced
    /// handover by `kubectl patch`; the chaos soak's seed 12), the rest of the
    /// record as stored.
    HumanEditNaming { node: usize },
    /// Someone patches `leaseDurationSeconds` of a held record by hand (FAULTS
    /// R13), the rest of the record as stored.
    DurationEdit { secs: i64 },
    /// Someone edits only the lock's metadata (a label or annotation added): a
    /// new version of the same record, stamps included (FAULTS R12).
    MetadataEdit,
    /// The global heal at the end of the fault window: message faults (loss,
    /// duplication, unknown outcomes, transient errors) and latency spikes end.
    HealNetwork,
    /// Messages take up to this long, until the given real time.
    Latency { max: Duration, until: u64 },
}

/// How a partitioned node's calls fail (the fault vocabulary of `docs/design.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Each request is either refused at once (`Transient`) or never arrives and
    /// never answers (`Hang`); none is applied. Watches fall silent.
    RefusedOrHang,
    /// Requests are applied but their answers are lost. Watches fall silent.
    AnswerLost,
}

/// Per-message fault rates.
#[derive(Clone, Debug, Default)]
pub struct MessageFaults {
    /// A request vanishes before reaching the lock.
    pub lose_request: f64,
    /// An answer vanishes (the write happened).
    pub lose_answer: f64,
    /// An answer is delivered twice.
    pub duplicate: f64,
    /// A write is applied but answered "outcome unknown" (500 after commit).
    pub unknown_after_commit: f64,
    /// A call fails without happening (503, 429 with Retry-After).
    pub transient: f64,
    /// Base delay of each message, up to this.
    pub max_delay: Duration,
}

/// Mixed into a run's seed for the draw of [`SimOptions::coordinated`].
pub(crate) const COORDINATED_STREAM: u64 = 0x434f_4f52_4449_4e41;

/// Mixed into a run's seed for the draw of [`SimOptions::lease_factors`].
pub(crate) const LEASE_STREAM: u64 = 0x4c45_4153_454c_454e;

/// Mixed into a run's seed for the random stream of `draw_lease_faults`.
pub(crate) const LEASE_FAULT_STREAM: u64 = 0x4c45_4153_4546_4c54;

/// Mixed into a run's seed for the random stream of [`draw_watch_faults`].
pub(crate) const WATCH_STREAM: u64 = 0x5741_5443_4846_4c54;

/// Faults of the watches alone (a shared watch's ways to fail: silence, a
/// restart after 410, events lost to a subscriber that fell behind), drawn from a
/// stream of their own so that the schedule and run of [`draw_faults`] stay what
/// they were for every seed: the watch faults, and the chance that a watching
/// node misses a change (its watch goes on).
pub fn draw_watch_faults(opts: &SimOptions, rng: &mut SimRng) -> (Vec<(u64, Fault)>, f64) {
    if !opts.faults || opts.watch == WatchUse::None || !rng.chance(0.5) {
        return (Vec::new(), 0.0);
    }
    let window = opts.fault_window.as_nanos() as u64;
    let lease = opts.longest_lease().as_nanos() as u64;
    let mut faults = Vec::new();
    for _ in 0..rng.range(1, 4) {
        let at = rng.range(0, window);
        let node = rng.range(0, opts.nodes as u64) as usize;
        if rng.chance(0.5) {
            let until = (at + rng.range(lease / 10, lease * 3)).min(window);
            faults.push((at, Fault::WatchSilent { node, until }));
            faults.push((until, Fault::WatchRestart { node }));
        } else {
            faults.push((at, Fault::WatchRestart { node }));
        }
    }
    (faults, 0.2 * rng.unit())
}

/// The faults that hide a holder from the others in a run with mixed lease
/// lengths (FAULTS R14), drawn from a stream of their own so that every other
/// draw stays what it was: the lock's holder cut off (while it may still
/// believe, up to its own renew deadline, longer than another node's lease);
/// then, in a classic run, the lock deleted under it (a create's lock delay must
/// cover it), and in either mode a follower paused or its watch broken (a gap in
/// the versions it saw, which a coordinated claim's wait must cover). None for
/// a run without faults or with equal leases.
pub fn draw_lease_faults(opts: &SimOptions, rng: &mut SimRng) -> Vec<(u64, Fault)> {
    if !opts.faults || !opts.mixed_leases() {
        return Vec::new();
    }
    let window = opts.fault_window.as_nanos() as u64;
    let lease = opts.longest_lease().as_nanos() as u64;
    let mut faults = Vec::new();
    for _ in 0..rng.range(1, 3) {
        // After the first election (a create's lock delay), within the window.
        let at = rng.range(lease.min(window / 2), window);
        let until = (at + rng.range(lease / 2, lease * 2)).min(window);
        let cut = if rng.chance(0.3) {
            Cut::AnswerLost
        } else {
            Cut::RefusedOrHang
        };
        faults.push((at, Fault::PartitionHolder { cut, until }));
        // Soon enough that the cut-off holder may still believe.
        let after = at + rng.range(0, lease / 2);
        if !opts.coordinated && rng.chance(0.8) {
            faults.push((after, Fault::DeleteLock));
        }
        // A follower that misses the holder's last renewals: paused, or its
        // watch silent (every watch, so that the node the coordinator picks is
        // among them) and then restarted with the current state.
        let from = at.saturating_sub(rng.range(lease / 4, lease));
        let resume = (after + rng.range(0, lease / 4)).min(window);
        match rng.range(0, 3) {
            0 => {
                let node = rng.range(0, opts.nodes as u64) as usize;
                faults.push((
                    from,
                    Fault::Pause {
                        node,
                        until: resume,
                    },
                ));
            }
            _ if opts.watch != WatchUse::None => {
                for node in 0..opts.nodes {
                    faults.push((
                        from,
                        Fault::WatchSilent {
                            node,
                            until: resume,
                        },
                    ));
                    faults.push((resume, Fault::WatchRestart { node }));
                }
            }
            _ => {}
        }
    }
    faults.sort_by_key(|(t, _)| *t);
    faults
}

/// Draws the fault schedule of a run.
pub fn draw_faults(opts: &SimOptions, rng: &mut SimRng) -> (Vec<(u64, Fault)>, MessageFaults) {
    let window = opts.fault_window.as_nanos() as u64;
    let lease = opts.longest_lease().as_nanos() as u64;
    let rd = opts.config.renew_deadline;
    if !opts.faults {
        let msg = MessageFaults {
            max_delay: Duration::from_millis(5),
            ..Default::default()
        };
        return (Vec::new(), msg);
    }
    let msg = MessageFaults {
        lose_request: 0.02 * rng.unit(),
        lose_answer: 0.02 * rng.unit(),
        duplicate: 0.05 * rng.unit(),
        unknown_after_commit: 0.03 * rng.unit(),
        transient: 0.05 * rng.unit(),
        max_delay: Duration::from_millis(rng.range(1, 40)),
    };
    let mut faults = Vec::new();
    let count = rng.range(1, 8);
    for _ in 0..count {
        let at = rng.range(0, window);
        let node = rng.range(0, opts.nodes as u64) as usize;
        let span = rng.range(lease / 10, lease * 2);
        let end = (at + span).min(window);
        match rng.range(0, 9) {
            0 => faults.push((at, Fault::Pause { node, until: end })),
            1 => {
                faults.push((at, Fault::Crash { node }));
                faults.push((end, Fault::Restart { node }));
            }
            2 => {
                faults.push((at, Fault::Shutdown { node }));
                faults.push((end, Fault::Restart { node }));
            }
            3 => faults.push((at, Fault::StepDown { node })),
            4 => {
                faults.push((
                    at,
                    Fault::Partition {
                        node,
                        cut: if rng.chance(0.3) {
                            Cut::AnswerLost
                        } else {
                            Cut::RefusedOrHang
                        },
                    },
                ));
                faults.push((end, Fault::Heal { node }));
            }
            5 => faults.push((at, Fault::DeleteLock)),
            6 => {
                let edit = match rng.range(0, 5) {
                    0 => Fault::HumanEdit { holder: "" },
                    1 => Fault::HumanEdit { holder: "mallory" },
                    2 => Fault::MetadataEdit,
                    3 => Fault::HumanEditNaming {
                        node: rng.range(0, opts.nodes as u64) as usize,
                    },
                    // The shortest a Lease allows.
                    _ => Fault::DurationEdit { secs: 1 },
                };
                faults.push((at, edit));
            }
            7 => {
                let max = rd.mul_f64(0.2 + 1.6 * rng.unit());
                faults.push((at, Fault::Latency { max, until: end }));
            }
            _ => {
                // Everyone paused at once (a frozen control plane host) is a
                // partition of all nodes.
                for n in 0..opts.nodes {
                    faults.push((
                        at,
                        Fault::Partition {
                            node: n,
                            cut: Cut::RefusedOrHang,
                        },
                    ));
                    faults.push((end, Fault::Heal { node: n }));
                }
            }
        }
    }
    faults.sort_by_key(|(t, _)| *t);
    (faults, msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The watch faults reach a good share of the seeds whose nodes watch, and
    /// none of those whose nodes poll.
    #[test]
    fn watch_faults_are_drawn_for_watching_seeds() {
        let (mut drawn, mut watching) = (0, 0);
        for seed in 0..1_000u64 {
            let opts = SimOptions::for_seed(seed);
            let mut rng = SimRng::new(seed ^ WATCH_STREAM);
            let (faults, lose) = draw_watch_faults(&opts, &mut rng);
            if opts.watch == WatchUse::None {
                assert!(faults.is_empty() && lose == 0.0);
                continue;
            }
            watching += 1;
            if !faults.is_empty() {
                drawn += 1;
                assert!(
                    faults
                        .iter()
                        .any(|(_, f)| matches!(f, Fault::WatchRestart { .. }))
                );
            }
        }
        assert!(drawn * 3 > watching, "{drawn} of {watching} watching seeds");
    }
}
