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
    /// The configuration every candidate uses (identity and seed are set per node).
    pub config: Config,
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
        let mut opts = SimOptions {
            nodes: rng.range(2, 6) as usize,
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
        opts
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
    pub fn liveness_bound(&self, lock_absent: bool) -> Duration {
        let c = &self.config;
        let mut local = c.lease_duration + c.max_retry_interval() + c.request_timeout;
        if lock_absent {
            local += c.lease_duration;
        }
        if self.coordinated {
            // The coordinator's own wait for the last record to expire (its clock
            // may run behind by a lease), its tick, and the assignee's wait of a
            // lease after a version it may have missed before the assignment.
            local += c.lease_duration * 2 + c.retry_period + c.lease_duration;
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
    let lease = opts.config.lease_duration.as_nanos() as u64;
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

/// Draws the fault schedule of a run.
pub fn draw_faults(opts: &SimOptions, rng: &mut SimRng) -> (Vec<(u64, Fault)>, MessageFaults) {
    let window = opts.fault_window.as_nanos() as u64;
    let lease = opts.config.lease_duration.as_nanos() as u64;
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
