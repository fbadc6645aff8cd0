//! Fault injection, per client and reproducible from the store's seed.
//!
//! Each client of a [`crate::MemoryStore`] has its own fault plan ([`Faults`]: rates
//! and latencies), a queue of one-shot [`Fault`]s that hit its next calls, an
//! optional partition ([`PartitionMode`]) and a pseudo-random generator seeded from
//! the store's seed and the client's name. The same seed and the same sequence of
//! calls per client give the same faults.
//!
//! A call goes through these steps; a fault can strike at each:
//! 1. partition check: refused ([`PartitionMode::Refused`]) or hung ([`PartitionMode::Hang`]);
//! 2. the request delay ([`Faults::request_delay`]), through the store's sleeper;
//! 3. partition check again, then the drawn fate: hang (not applied), error
//!    answer (not applied), or go on;
//! 4. the call is applied to the store, atomically (a stale read is served from
//!    the previous version instead);
//! 5. the response delay ([`Faults::response_delay`]);
//! 6. the answer: lost (applied, yet the caller gets [`LockError::Unknown`]), hung
//!    after applying, lost because the client was partitioned meanwhile, or delivered.
//!
//! Watches have their own faults: they end when broken ([`FaultHandle::break_watches`],
//! [`Faults::watch_break_probability`]) or when the client is refused, and fall
//! silent in a black-hole partition. Their events are delivered without latency.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use election_core::{LockError, OpKind};

use crate::store::Shared;

/// A latency range: each call waits a duration drawn uniformly from `min..=max`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delay {
    /// The shortest wait.
    pub min: Duration,
    /// The longest wait.
    pub max: Duration,
}

impl Delay {
    /// No wait.
    pub const NONE: Delay = Delay {
        min: Duration::ZERO,
        max: Duration::ZERO,
    };

    /// Always `d`.
    pub const fn fixed(d: Duration) -> Self {
        Delay { min: d, max: d }
    }

    /// Uniform between `min` and `max` (checked when the plan is set).
    pub const fn between(min: Duration, max: Duration) -> Self {
        Delay { min, max }
    }
}

/// A client's fault plan: latencies and the probability of each fault, per call.
///
/// Probabilities are checked when the plan is set ([`FaultHandle::set`]): each
/// must be within `0.0..=1.0`. They are drawn in this order: hang, error, lost
/// answer; a call suffers at most one of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Faults {
    /// Waited before the call reaches the store.
    pub request_delay: Delay,
    /// Waited after the call was applied, before the answer (FAULTS A16).
    pub response_delay: Delay,
    /// The probability that a call never answers and is not applied (FAULTS A14).
    pub hang_probability: f64,
    /// The probability that a call is answered with one of [`Faults::errors`] and
    /// is not applied.
    pub error_probability: f64,
    /// The errors to pick from, uniformly. Empty means [`Faults::default_errors`].
    pub errors: Vec<LockError>,
    /// The probability that a call is applied but its answer is lost: the caller
    /// gets [`LockError::Unknown`] (FAULTS A10, A13, N8).
    pub lost_answer_probability: f64,
    /// The probability that a read is served from the previous version of the
    /// lock, as a lagging cache or API server would (FAULTS W3). Writes are not
    /// affected.
    pub stale_read_probability: f64,
    /// The probability, per change about to be delivered, that a watch breaks
    /// instead (the stream ends; FAULTS W1).
    pub watch_break_probability: f64,
    /// The kinds of call the delays and probabilities apply to; empty means all.
    /// `[Create, Update]` with errors gives a client that can read but not write
    /// (FAULTS N9).
    pub only: Vec<OpKind>,
}

impl Faults {
    /// No faults at all.
    pub fn none() -> Self {
        Faults::default()
    }

    /// Sets both delays.
    #[must_use]
    pub fn latency(mut self, request: Delay, response: Delay) -> Self {
        self.request_delay = request;
        self.response_delay = response;
        self
    }

    /// Calls hang with probability `p`.
    #[must_use]
    pub fn hangs(mut self, p: f64) -> Self {
        self.hang_probability = p;
        self
    }

    /// Calls fail with probability `p`, with one of `errors` (all classes if empty).
    #[must_use]
    pub fn errors(mut self, p: f64, errors: Vec<LockError>) -> Self {
        self.error_probability = p;
        self.errors = errors;
        self
    }

    /// Answers of applied calls are lost with probability `p`.
    #[must_use]
    pub fn lost_answers(mut self, p: f64) -> Self {
        self.lost_answer_probability = p;
        self
    }

    /// Reads are served stale with probability `p`.
    #[must_use]
    pub fn stale_reads(mut self, p: f64) -> Self {
        self.stale_read_probability = p;
        self
    }

    /// Watches break with probability `p` per change.
    #[must_use]
    pub fn watch_breaks(mut self, p: f64) -> Self {
        self.watch_break_probability = p;
        self
    }

    /// Applies the delays and probabilities to calls of these kinds only.
    #[must_use]
    pub fn only(mut self, kinds: &[OpKind]) -> Self {
        self.only = kinds.to_vec();
        self
    }

    /// One error of each class a call can fail with without being applied:
    /// transient (with and without `Retry-After`), forbidden, invalid, and unknown
    /// outcome.
    pub fn default_errors() -> Vec<LockError> {
        vec![
            LockError::transient("injected: connection refused"),
            LockError::Transient {
                message: "injected: 429 too many requests".into(),
                retry_after: Some(Duration::from_secs(1)),
            },
            LockError::Forbidden {
                message: "injected: update leases.coordination.k8s.io is forbidden".into(),
            },
            LockError::Invalid {
                message: "injected: 422 invalid".into(),
            },
            LockError::unknown("injected: 504 gateway timeout"),
        ]
    }

    fn validate(&self) -> Result<(), FaultError> {
        for (name, p) in [
            ("hang_probability", self.hang_probability),
            ("error_probability", self.error_probability),
            ("lost_answer_probability", self.lost_answer_probability),
            ("stale_read_probability", self.stale_read_probability),
            ("watch_break_probability", self.watch_break_probability),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(FaultError::Probability { name, value: p });
            }
        }
        for (name, d) in [
            ("request_delay", self.request_delay),
            ("response_delay", self.response_delay),
        ] {
            if d.min > d.max {
                return Err(FaultError::Delay {
                    name,
                    min: d.min,
                    max: d.max,
                });
            }
        }
        Ok(())
    }
}

/// A fault plan that cannot be applied.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FaultError {
    /// A probability outside `0.0..=1.0` (or NaN).
    #[error("failed to set faults: {name} = {value} is not a probability in 0..=1")]
    Probability {
        /// The field.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A delay whose minimum exceeds its maximum.
    #[error("failed to set faults: {name} has min {min:?} > max {max:?}")]
    Delay {
        /// The field.
        name: &'static str,
        /// The minimum given.
        min: Duration,
        /// The maximum given.
        max: Duration,
    },
}

/// A fault for one call, queued with [`FaultHandle::inject`]. Queued faults are
/// used before the random plan is consulted; they still go through the plan's
/// delays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The call is answered with this error and not applied.
    Error(LockError),
    /// The call is applied, and the caller gets [`LockError::Unknown`].
    AnswerLost,
    /// The call never answers and is not applied.
    Hang,
    /// The call is applied and then never answers (a response held forever).
    HangAfterCommit,
    /// A read is answered with the lock's previous version (the one before the
    /// current), or the current one if the store no longer keeps it; a write
    /// passes this fault by (FAULTS W3).
    StaleRead,
    /// The call waits this long before reaching the store (added to the plan's
    /// request delay).
    Delay(Duration),
}

/// How a partitioned client fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PartitionMode {
    /// Every call fails at once with [`LockError::Transient`] ("connection
    /// refused"); watches end. An answer in flight when the partition starts is
    /// lost ([`LockError::Unknown`]).
    #[default]
    Refused,
    /// Every call hangs (a black hole: packets dropped); watches fall silent for
    /// good, and calls in flight never answer.
    Hang,
}

/// What a client's next call goes through, decided when it starts.
#[derive(Clone, Debug)]
pub(crate) struct CallPlan {
    pub(crate) request_delay: Duration,
    pub(crate) response_delay: Duration,
    pub(crate) fate: Fate,
}

/// The fate drawn for one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    Answer,
    Error(LockError),
    AnswerLost,
    Hang,
    HangAfterCommit,
    StaleRead,
}

/// What a partition does to a call at one of its checkpoints.
pub(crate) enum Gate {
    Open,
    Refused,
    Hung,
}

/// Per-call counters of one client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallStats {
    /// Reads started.
    pub get: u64,
    /// Creates started.
    pub create: u64,
    /// Updates started.
    pub update: u64,
    /// Watches started.
    pub watch: u64,
}

impl CallStats {
    /// Reads, creates and updates together (watches not counted).
    pub fn requests(&self) -> u64 {
        self.get + self.create + self.update
    }
}

/// One client's fault state inside the store.
#[derive(Debug)]
pub(crate) struct ClientFaults {
    pub(crate) plan: Faults,
    queue: VecDeque<(Option<OpKind>, Fault)>,
    rng: Rng,
    pub(crate) partition: Option<PartitionMode>,
    /// Bumped to end this client's open watches.
    pub(crate) watch_generation: u64,
    pub(crate) calls: CallStats,
}

impl ClientFaults {
    pub(crate) fn new(store_seed: u64, client: &str) -> Self {
        ClientFaults {
            plan: Faults::none(),
            queue: VecDeque::new(),
            rng: Rng::new(store_seed ^ fnv1a(client.as_bytes())),
            partition: None,
            watch_generation: 0,
            calls: CallStats::default(),
        }
    }

    pub(crate) fn gate(&self) -> Gate {
        match self.partition {
            None => Gate::Open,
            Some(PartitionMode::Refused) => Gate::Refused,
            Some(PartitionMode::Hang) => Gate::Hung,
        }
    }

    /// Counts a call, whether or not it gets through.
    pub(crate) fn count(&mut self, kind: OpKind) {
        match kind {
            OpKind::Get => self.calls.get += 1,
            OpKind::Create => self.calls.create += 1,
            OpKind::Update => self.calls.update += 1,
        }
    }

    /// Draws the fate and delays of a call: the first queued fault for its kind,
    /// else the plan, if the plan covers the kind.
    pub(crate) fn plan_call(&mut self, kind: OpKind) -> CallPlan {
        let queued = self
            .queue
            .iter()
            .position(|(only, _)| only.is_none_or(|k| k == kind))
            .and_then(|i| self.queue.remove(i))
            .map(|(_, f)| f);
        let covered = self.plan.only.is_empty() || self.plan.only.contains(&kind);
        let (mut request_delay, response_delay) = if covered {
            (
                self.rng.delay(self.plan.request_delay),
                self.rng.delay(self.plan.response_delay),
            )
        } else {
            (Duration::ZERO, Duration::ZERO)
        };
        let fate = match queued {
            Some(Fault::Error(e)) => Fate::Error(e),
            Some(Fault::AnswerLost) => Fate::AnswerLost,
            Some(Fault::Hang) => Fate::Hang,
            Some(Fault::HangAfterCommit) => Fate::HangAfterCommit,
            Some(Fault::StaleRead) => Fate::StaleRead,
            Some(Fault::Delay(d)) => {
                request_delay = request_delay.saturating_add(d);
                Fate::Answer
            }
            None if covered => self.draw_fate(kind),
            None => Fate::Answer,
        };
        CallPlan {
            request_delay,
            response_delay,
            fate,
        }
    }

    fn draw_fate(&mut self, kind: OpKind) -> Fate {
        if self.rng.chance(self.plan.hang_probability) {
            return Fate::Hang;
        }
        if self.rng.chance(self.plan.error_probability) {
            let defaults;
            let errors = if self.plan.errors.is_empty() {
                defaults = Faults::default_errors();
                &defaults
            } else {
                &self.plan.errors
            };
            let i = self.rng.below(errors.len() as u64) as usize;
            if let Some(e) = errors.get(i) {
                return Fate::Error(e.clone());
            }
        }
        if kind == OpKind::Get && self.rng.chance(self.plan.stale_read_probability) {
            return Fate::StaleRead;
        }
        if self.rng.chance(self.plan.lost_answer_probability) {
            return Fate::AnswerLost;
        }
        Fate::Answer
    }

    /// Whether the watch delivering its next change breaks instead.
    pub(crate) fn watch_breaks(&mut self) -> bool {
        self.rng.chance(self.plan.watch_break_probability)
    }
}

/// Sets and clears the faults of one client of a store; get it from
/// [`crate::MemoryStore::faults`]. Changes apply to calls that start afterwards
/// (and partitions also to calls in flight, at their next checkpoint).
///
/// ```
/// use election_core::{Lock, LockError};
/// use lock_memory::{Fault, MemoryStore};
///
/// let store = MemoryStore::new();
/// let a = store.client("a");
/// store.faults("a").inject(Fault::Error(LockError::transient("503")));
/// futures_lite::future::block_on(async {
///     assert!(matches!(a.get().await, Err(LockError::Transient { .. })));
///     assert_eq!(a.get().await, Err(LockError::NotFound)); // the fault was used up
/// });
/// ```
#[derive(Clone)]
pub struct FaultHandle {
    pub(crate) shared: Arc<Shared>,
    pub(crate) client: Arc<str>,
}

impl FaultHandle {
    /// Replaces the client's fault plan; an invalid plan is refused and the old one kept.
    pub fn set(&self, faults: Faults) -> Result<(), FaultError> {
        faults.validate()?;
        self.shared.with_client(&self.client, |c| c.plan = faults);
        Ok(())
    }

    /// The client's fault plan.
    pub fn get(&self) -> Faults {
        self.shared.with_client(&self.client, |c| c.plan.clone())
    }

    /// Removes the fault plan and the queued faults (a partition stays until healed).
    pub fn clear(&self) {
        self.shared.with_client(&self.client, |c| {
            c.plan = Faults::none();
            c.queue.clear();
        });
    }

    /// Queues `fault` for the client's next call of any kind.
    pub fn inject(&self, fault: Fault) {
        self.shared
            .with_client(&self.client, |c| c.queue.push_back((None, fault)));
    }

    /// Queues `fault` for the client's next call of kind `kind`; calls of other
    /// kinds pass it by.
    pub fn inject_for(&self, kind: OpKind, fault: Fault) {
        self.shared
            .with_client(&self.client, |c| c.queue.push_back((Some(kind), fault)));
    }

    /// Cuts the client off the store, failing as `mode` says, until [`FaultHandle::heal`].
    pub fn partition(&self, mode: PartitionMode) {
        self.shared.set_partition(&self.client, Some(mode));
    }

    /// Ends the client's partition. Watches broken by it stay broken: start new ones.
    pub fn heal(&self) {
        self.shared.set_partition(&self.client, None);
    }

    /// Whether the client is partitioned, and how.
    pub fn partitioned(&self) -> Option<PartitionMode> {
        self.shared.with_client(&self.client, |c| c.partition)
    }

    /// Ends every watch the client has open (their streams end; FAULTS W1).
    pub fn break_watches(&self) {
        self.shared.break_watches(&self.client);
    }

    /// How many calls the client started.
    pub fn calls(&self) -> CallStats {
        self.shared.with_client(&self.client, |c| c.calls)
    }
}

/// The fault draws' generator: the core's SplitMix64, seeded per client.
#[derive(Clone, Debug)]
struct Rng(election_core::SplitMix64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(election_core::SplitMix64::new(seed))
    }

    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A uniform float in `0.0..1.0`.
    fn unit(&mut self) -> f64 {
        self.0.unit()
    }

    /// True with probability `p`; draws nothing when `p` is 0 so that a plan
    /// without faults does not disturb the sequence.
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() < p
    }

    /// A uniform integer in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    fn delay(&mut self, d: Delay) -> Duration {
        if d.max <= d.min {
            return d.min;
        }
        let span = u64::try_from((d.max - d.min).as_nanos()).unwrap_or(u64::MAX);
        let offset = self.below(span.saturating_add(1));
        d.min.saturating_add(Duration::from_nanos(offset))
    }
}

/// FNV-1a, to derive a client's seed from its name stably across runs and platforms.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_repeat_for_the_same_seed_and_client() {
        let mut a = ClientFaults::new(7, "a");
        let mut b = ClientFaults::new(7, "a");
        let plan = Faults::none()
            .errors(0.3, vec![])
            .lost_answers(0.3)
            .latency(
                Delay::between(Duration::ZERO, Duration::from_secs(1)),
                Delay::NONE,
            );
        a.plan = plan.clone();
        b.plan = plan;
        for _ in 0..100 {
            let (x, y) = (a.plan_call(OpKind::Update), b.plan_call(OpKind::Update));
            assert_eq!((x.fate, x.request_delay), (y.fate, y.request_delay));
        }
        let mut c = ClientFaults::new(7, "c");
        c.plan = a.plan.clone();
        let fates = |f: &mut ClientFaults| {
            (0..64)
                .map(|_| f.plan_call(OpKind::Get).request_delay)
                .collect::<Vec<_>>()
        };
        assert_ne!(
            fates(&mut a),
            fates(&mut c),
            "another client draws differently"
        );
    }

    #[test]
    fn delays_stay_within_their_range() {
        let mut rng = Rng::new(1);
        let d = Delay::between(Duration::from_millis(10), Duration::from_millis(20));
        for _ in 0..1000 {
            let x = rng.delay(d);
            assert!(x >= d.min && x <= d.max, "{x:?}");
        }
        assert_eq!(
            rng.delay(Delay::fixed(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        let huge = Delay::between(Duration::ZERO, Duration::MAX);
        let _ = rng.delay(huge); // no overflow
    }

    #[test]
    fn invalid_plans_are_typed_errors() {
        let nan = Faults::none().hangs(f64::NAN).validate();
        assert!(matches!(
            nan,
            Err(FaultError::Probability {
                name: "hang_probability",
                ..
            })
        ));
        let big = Faults::none().lost_answers(1.5).validate();
        assert!(matches!(big, Err(FaultError::Probability { .. })));
        let backwards = Faults::none()
            .latency(
                Delay::NONE,
                Delay::between(Duration::from_secs(2), Duration::from_secs(1)),
            )
            .validate();
        assert!(matches!(
            backwards,
            Err(FaultError::Delay {
                name: "response_delay",
                ..
            })
        ));
        assert_eq!(Faults::none().errors(1.0, vec![]).validate(), Ok(()));
    }

    #[test]
    fn queued_faults_match_their_kind() {
        let mut c = ClientFaults::new(0, "a");
        c.queue.push_back((Some(OpKind::Update), Fault::AnswerLost));
        assert_eq!(c.plan_call(OpKind::Get).fate, Fate::Answer);
        assert_eq!(c.plan_call(OpKind::Update).fate, Fate::AnswerLost);
        assert_eq!(c.plan_call(OpKind::Update).fate, Fate::Answer);
    }

    #[test]
    fn plans_can_target_some_kinds_only() {
        let mut c = ClientFaults::new(0, "a");
        c.plan = Faults::none().lost_answers(1.0).only(&[OpKind::Update]);
        assert_eq!(c.plan_call(OpKind::Get).fate, Fate::Answer);
        assert_eq!(c.plan_call(OpKind::Create).fate, Fate::Answer);
        assert_eq!(c.plan_call(OpKind::Update).fate, Fate::AnswerLost);
    }
}
