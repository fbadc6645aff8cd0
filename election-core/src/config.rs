//! Election timings and options, with validation that implies the safety promise.

use alloc::sync::Arc;
use core::time::Duration;

/// What a higher-priority candidate does when a lower one leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Preemption {
    /// Ask the leader to hand over (a request stored in the record); the leader
    /// drains and releases on its next renew, naming the asker, and for one lease
    /// duration only the asker may take the lock. Never overlaps.
    #[default]
    Handover,
    /// Istio's behaviour: take an unexpired lease at once by compare-and-swap. The
    /// old leader learns of it at its next renew or watch event, so two nodes may
    /// both believe they lead for up to one renew interval (bounded by its deadline).
    Steal,
}

/// How leadership is decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Mode {
    /// Candidates race for the lock: create it, take a release or an expired
    /// lease, ask for a handover (client-go's classic leader election).
    #[default]
    Classic,
    /// Kubernetes' coordinated leader election (KEP-4355): a coordinator (the
    /// API server's leader-election controller) writes the holder. This node
    /// never creates the lock, never takes one it was not given, and never asks
    /// for a handover; it leads once the coordinator names it, by renewing that
    /// record, and gives the lock back (drain, then release) when the record
    /// names a `preferredHolder`. It publishes its candidacy elsewhere (a
    /// `LeaseCandidate`, see the Kubernetes locks).
    Coordinated,
}

/// What a node does when it finds the lock absent after having seen it held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LockDelay {
    /// Create the lock, then wait one lease duration before leading: whoever held
    /// the deleted lock may still believe it leads. The default.
    #[default]
    Strict,
    /// Create and lead at once, as client-go does.
    Immediate,
}

/// The election's timings and options.
///
/// Build one from a preset ([`Config::client_go`], [`Config::openshift`],
/// [`Config::fast`]) and adjust fields; [`Config::validate`] (also run by
/// `Elector::new`) checks the rules of DESIGN §3.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// This candidate's identity; unique among candidates.
    pub identity: Arc<str>,
    /// How long a lease lasts after its last observed change. Whole seconds, at least 1.
    pub lease_duration: Duration,
    /// How long a leader may go without a successful renew, measured from when the
    /// renew was sent, before it stops leading.
    pub renew_deadline: Duration,
    /// The interval between a polling candidate's attempts, and between a leader's
    /// retries of a failed renew.
    pub retry_period: Duration,
    /// The interval between a leader's successful renews, counted from the last
    /// one's send time; `None` (the presets' default): `retry_period`, as
    /// client-go. A longer one ([`Config::renew_interval`]) means fewer writes at
    /// the same failover time, while a failed renew is still retried every
    /// `retry_period`. [`Config::renew_every`] gives the interval in effect.
    pub renew_interval: Option<Duration>,
    /// Candidates retry every `retry_period × [1, 1 + jitter)` (client-go: 1.2).
    pub jitter: f64,
    /// How long one lock call may take before it counts as failed with an unknown
    /// outcome (client-go: `max(renew_deadline / 2, 1 s)`).
    pub request_timeout: Duration,
    /// Release the lock (empty holder) on shutdown and step-down.
    pub release_on_shutdown: bool,
    /// This candidate's priority; higher wins. `None` never preempts and is
    /// preempted by any candidate with a priority.
    pub priority: Option<i64>,
    /// How a higher priority takes over.
    pub preemption: Preemption,
    /// What to do about an absent lock that was seen held.
    pub lock_delay: LockDelay,
    /// Whether candidates race for the lock or a coordinator assigns it.
    pub mode: Mode,
    /// The largest lease duration honoured from a record; longer ones are capped
    /// and reported.
    pub max_lease_duration: Duration,
    /// The longest lease duration any candidate of this lock may use, where the
    /// fleet mixes lease lengths (a rollout that changes the lease duration, a
    /// fleet shared with programs of other timings); `None` (the presets'
    /// default): this node's own. Every wait for a holder this node cannot see
    /// (after a gap in the versions it saw, or the lock found absent) lasts the
    /// longest lease it has seen from any holder and at least this. Without it, a
    /// node that never saw the longest-lease holder in its life (it started, or
    /// was paused, while that holder led) cannot know to wait for it
    /// ([`Config::fleet_lease_duration`](Config#method.fleet_lease_duration),
    /// docs/faults.md R14).
    pub fleet_lease_duration: Option<Duration>,
    /// Seed of the retry jitter. `None` (the presets' default) derives one per
    /// elector from the identity and, with the `std` feature, from entropy unique
    /// to the process, so that replicas never poll in lockstep. Set one
    /// ([`Config::seed`]) to replay a run exactly.
    pub seed: Option<u64>,
    /// Safety rules taken out, for a model checker to show that it finds what
    /// each prevents (feature `mutants`; never in a build that elects for real).
    #[cfg(feature = "mutants")]
    #[doc(hidden)]
    pub mutants: Mutants,
}

/// Safety rules a test may take out (feature `mutants`): each `true` removes
/// one. The strict lock delay has its own setting ([`LockDelay::Immediate`]).
#[cfg(feature = "mutants")]
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mutants {
    /// Every wait for a holder this node cannot see lasts this node's own lease
    /// duration, not the longest lease seen from any holder.
    pub own_lease_for_unseen: bool,
    /// A release is sent at the version last seen even when that record names
    /// another holder, a re-read after the release's conflict included.
    pub release_without_fresh_holder_check: bool,
}

/// A configuration rule that a [`Config`] breaks.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The identity is empty.
    #[error("identity must not be empty")]
    EmptyIdentity,
    /// A duration is zero.
    #[error("{0} must be positive")]
    NotPositive(&'static str),
    /// `lease_duration` is not a whole number of seconds, or is under 1 s (the
    /// record stores integer seconds; client-go silently truncates).
    #[error("lease_duration must be a whole number of seconds, at least 1 s (got {0:?})")]
    LeaseNotWholeSeconds(Duration),
    /// `lease_duration <= renew_deadline`.
    #[error("lease_duration ({lease:?}) must be greater than renew_deadline ({renew:?})")]
    LeaseNotAboveRenewDeadline {
        /// The lease duration.
        lease: Duration,
        /// The renew deadline.
        renew: Duration,
    },
    /// `renew_deadline <= retry_period × max(jitter, 1)`.
    #[error("renew_deadline ({renew:?}) must be greater than retry_period × jitter ({jittered:?})")]
    RenewDeadlineNotAboveJitteredRetry {
        /// The renew deadline.
        renew: Duration,
        /// `retry_period × max(jitter, 1)`.
        jittered: Duration,
    },
    /// `retry_period + request_timeout >= renew_deadline`: a healthy leader whose
    /// one request hangs could not renew in time.
    #[error(
        "retry_period + request_timeout ({sum:?}) must be less than renew_deadline ({renew:?})"
    )]
    RetryPlusTimeoutNotBelowRenewDeadline {
        /// `retry_period + request_timeout`.
        sum: Duration,
        /// The renew deadline.
        renew: Duration,
    },
    /// `renew_interval < retry_period`: a leader would renew more often than it
    /// retries.
    #[error("renew_interval ({interval:?}) must be at least retry_period ({retry:?})")]
    RenewIntervalBelowRetryPeriod {
        /// The renew interval.
        interval: Duration,
        /// The retry period.
        retry: Duration,
    },
    /// `renew_interval + request_timeout >= renew_deadline`: a healthy leader
    /// whose one renew hangs could not retry before its deadline.
    #[error(
        "renew_interval + request_timeout ({sum:?}) must be less than renew_deadline ({renew:?})"
    )]
    RenewIntervalPlusTimeoutNotBelowRenewDeadline {
        /// `renew_interval + request_timeout`.
        sum: Duration,
        /// The renew deadline.
        renew: Duration,
    },
    /// `jitter` is negative, NaN or infinite.
    #[error("jitter must be a finite number >= 0 (got {0})")]
    InvalidJitter(f64),
    /// `fleet_lease_duration` is zero or above `max_lease_duration`.
    #[error("fleet_lease_duration must be positive and at most max_lease_duration (got {0:?})")]
    FleetLeaseOutOfRange(Duration),
    /// `max_lease_duration < lease_duration`.
    #[error("max_lease_duration must be at least lease_duration")]
    MaxLeaseBelowLease,
    /// [`Mode::Coordinated`] with a priority or [`Preemption::Steal`]: the
    /// coordinator picks the leader, so neither would have any effect.
    #[error(
        "a priority or Preemption::Steal has no effect in coordinated mode: the coordinator picks the leader"
    )]
    PreemptionInCoordinatedMode,
    /// `lease_duration` does not fit the record's `leaseDurationSeconds`, an
    /// `int32` (at most 2147483647 s): the API would refuse every write.
    #[error("lease_duration must be at most {max} s (leaseDurationSeconds is an int32; got {0:?})", max = i32::MAX)]
    LeaseTooLong(Duration),
}

impl Config {
    /// client-go's and controller-runtime's defaults: 15 s / 10 s / 2 s, jitter 1.2,
    /// request timeout 5 s.
    pub fn client_go(identity: impl Into<Arc<str>>) -> Self {
        Self::with_timings(identity, 15_000, 10_000, 2_000)
    }

    /// OpenShift's (and Pinniped's) 137 s / 107 s / 26 s: tolerates about a minute
    /// of API downtime.
    pub fn openshift(identity: impl Into<Arc<str>>) -> Self {
        Self::with_timings(identity, 137_000, 107_000, 26_000)
    }

    /// A fast profile for tests and demos: 2 s / 1.5 s / 250 ms, request timeout 500 ms.
    pub fn fast(identity: impl Into<Arc<str>>) -> Self {
        let mut c = Self::with_timings(identity, 2_000, 1_500, 250);
        c.request_timeout = Duration::from_millis(500);
        c
    }

    /// Timings in milliseconds; the request timeout by client-go's rule
    /// ([`Config::client_go_request_timeout`]).
    fn with_timings(identity: impl Into<Arc<str>>, lease: u64, renew: u64, retry: u64) -> Self {
        let renew = Duration::from_millis(renew);
        Config {
            identity: identity.into(),
            lease_duration: Duration::from_millis(lease),
            renew_deadline: renew,
            retry_period: Duration::from_millis(retry),
            renew_interval: None,
            jitter: 1.2,
            request_timeout: Self::client_go_request_timeout(renew),
            release_on_shutdown: true,
            priority: None,
            preemption: Preemption::Handover,
            lock_delay: LockDelay::Strict,
            mode: Mode::Classic,
            max_lease_duration: Duration::from_secs(3_600),
            fleet_lease_duration: None,
            seed: None,
            #[cfg(feature = "mutants")]
            mutants: Mutants::default(),
        }
    }

    /// client-go's request timeout for one lock call: `max(renew_deadline / 2, 1 s)`.
    /// The presets use it (but [`Config::fast`], which takes 500 ms), and so does
    /// [`Config::timings`]; a lock backend takes its timeout from the `Config`.
    pub fn client_go_request_timeout(renew_deadline: Duration) -> Duration {
        (renew_deadline / 2).max(Duration::from_secs(1))
    }

    /// Sets the three timings; [`Config::validate`] then checks them. A request
    /// timeout that follows client-go's rule ([`Config::client_go_request_timeout`]
    /// of the old renew deadline, as the presets' do) follows it to the new one;
    /// one set apart from the rule (the field, or [`Config::fast`]'s 500 ms) is
    /// kept as set.
    #[must_use]
    pub fn timings(mut self, lease: Duration, renew_deadline: Duration, retry: Duration) -> Self {
        if self.request_timeout == Self::client_go_request_timeout(self.renew_deadline) {
            self.request_timeout = Self::client_go_request_timeout(renew_deadline);
        }
        self.lease_duration = lease;
        self.renew_deadline = renew_deadline;
        self.retry_period = retry;
        self
    }

    /// How long the leader work may take to drain on a graceful give-up (a
    /// shutdown, a step-down) with the release still written: the elector gives
    /// the drain and the release write one renew deadline together, and the
    /// write may take one request timeout, so `renew_deadline - request_timeout`.
    /// The sidecar waits this long for its child, the controller for its
    /// reconciles; work that takes longer is given up on without a release
    /// (the lease then expires on its own).
    pub fn drain_budget(&self) -> Duration {
        self.renew_deadline.saturating_sub(self.request_timeout)
    }

    /// Sets how often a leader renews ([`Config::renew_interval`](Config#structfield.renew_interval)):
    /// at least `retry_period`, and with `request_timeout` below `renew_deadline`
    /// ([`Config::validate`]). At client-go's timings a third of the lease (5 s)
    /// needs a request timeout under 5 s.
    #[must_use]
    pub fn renew_interval(mut self, interval: Duration) -> Self {
        self.renew_interval = Some(interval);
        self
    }

    /// The interval between a leader's successful renews: `renew_interval`, else
    /// `retry_period`.
    pub fn renew_every(&self) -> Duration {
        self.renew_interval.unwrap_or(self.retry_period)
    }

    /// Sets the identity.
    #[must_use]
    pub fn identity(mut self, identity: impl Into<Arc<str>>) -> Self {
        self.identity = identity.into();
        self
    }

    /// Sets the jitter seed, for runs that replay exactly (tests, simulations).
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Coordinated leader election ([`Mode::Coordinated`]): the coordinator
    /// assigns the lock; this node never races for it.
    #[must_use]
    pub fn coordinated(mut self) -> Self {
        self.mode = Mode::Coordinated;
        self
    }

    /// Sets the longest lease duration any candidate of this lock may use
    /// ([`Config::fleet_lease_duration`](Config#structfield.fleet_lease_duration)):
    /// for a fleet that mixes lease lengths, such as a rollout from a 30 s lease
    /// to a 10 s one (set 30 s on every new replica until the last old one is
    /// gone).
    #[must_use]
    pub fn fleet_lease_duration(mut self, longest: Duration) -> Self {
        self.fleet_lease_duration = Some(longest);
        self
    }

    /// The shortest wait for a holder this node cannot see: the longer of its own
    /// lease duration and [`Config::fleet_lease_duration`](Config#structfield.fleet_lease_duration),
    /// capped at `max_lease_duration`.
    pub fn unseen_holder_lease(&self) -> Duration {
        self.fleet_lease_duration
            .map_or(self.lease_duration, |f| f.max(self.lease_duration))
            .min(self.max_lease_duration)
    }

    /// Sets the priority.
    #[must_use]
    pub fn priority(mut self, priority: i64) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Checks the rules of DESIGN §3, returning the first one broken.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.identity.is_empty() {
            return Err(ConfigError::EmptyIdentity);
        }
        for (name, d) in [
            ("lease_duration", self.lease_duration),
            ("renew_deadline", self.renew_deadline),
            ("retry_period", self.retry_period),
            ("request_timeout", self.request_timeout),
        ] {
            if d.is_zero() {
                return Err(ConfigError::NotPositive(name));
            }
        }
        if !self.jitter.is_finite() || self.jitter < 0.0 {
            return Err(ConfigError::InvalidJitter(self.jitter));
        }
        if self.lease_duration.subsec_nanos() != 0 {
            return Err(ConfigError::LeaseNotWholeSeconds(self.lease_duration));
        }
        if self.lease_duration.as_secs() > i32::MAX as u64 {
            return Err(ConfigError::LeaseTooLong(self.lease_duration));
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::LeaseNotAboveRenewDeadline {
                lease: self.lease_duration,
                renew: self.renew_deadline,
            });
        }
        let jittered = saturating_mul_f64(self.retry_period, self.jitter.max(1.0));
        if self.renew_deadline <= jittered {
            return Err(ConfigError::RenewDeadlineNotAboveJitteredRetry {
                renew: self.renew_deadline,
                jittered,
            });
        }
        let sum = self.retry_period.saturating_add(self.request_timeout);
        if sum >= self.renew_deadline {
            return Err(ConfigError::RetryPlusTimeoutNotBelowRenewDeadline {
                sum,
                renew: self.renew_deadline,
            });
        }
        if let Some(interval) = self.renew_interval {
            if interval < self.retry_period {
                return Err(ConfigError::RenewIntervalBelowRetryPeriod {
                    interval,
                    retry: self.retry_period,
                });
            }
            let sum = interval.saturating_add(self.request_timeout);
            if sum >= self.renew_deadline {
                return Err(ConfigError::RenewIntervalPlusTimeoutNotBelowRenewDeadline {
                    sum,
                    renew: self.renew_deadline,
                });
            }
        }
        if self.mode == Mode::Coordinated
            && (self.priority.is_some() || self.preemption == Preemption::Steal)
        {
            return Err(ConfigError::PreemptionInCoordinatedMode);
        }
        if self.max_lease_duration < self.lease_duration {
            return Err(ConfigError::MaxLeaseBelowLease);
        }
        if let Some(f) = self.fleet_lease_duration
            && (f.is_zero() || f > self.max_lease_duration)
        {
            return Err(ConfigError::FleetLeaseOutOfRange(f));
        }
        Ok(())
    }

    /// The clock-rate ratio this configuration tolerates: safety holds while the
    /// fastest candidate's clock runs faster than the slowest's by less than
    /// `lease_duration / renew_deadline` (1.5 for client-go's timings).
    pub fn tolerated_clock_ratio(&self) -> f64 {
        self.lease_duration.as_secs_f64() / self.renew_deadline.as_secs_f64()
    }

    /// The lease duration written into records, in whole seconds (validation
    /// guarantees `1..=i32::MAX`, what the record's `int32` holds).
    pub fn lease_duration_secs(&self) -> i64 {
        i64::try_from(self.lease_duration.as_secs())
            .unwrap_or(i64::MAX)
            .clamp(1, i64::from(i32::MAX))
    }

    /// `retry_period × (1 + jitter)`: the longest interval between a polling
    /// candidate's attempts.
    pub fn max_retry_interval(&self) -> Duration {
        saturating_mul_f64(self.retry_period, 1.0 + self.jitter)
    }
}

/// `d × factor`, saturating at `Duration::MAX` (and zero for a factor that is not a
/// positive number) where `Duration::mul_f64` would panic: configurations are
/// user input, and checking one must never panic.
pub(crate) fn saturating_mul_f64(d: Duration, factor: f64) -> Duration {
    if factor.is_nan() || factor <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(Duration::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn presets_are_valid_and_report_their_tolerance() {
        for c in [
            Config::client_go("a"),
            Config::openshift("a"),
            Config::fast("a"),
        ] {
            assert_eq!(c.validate(), Ok(()), "{c:?}");
        }
        assert_eq!(Config::client_go("a").tolerated_clock_ratio(), 1.5);
        assert_eq!(Config::client_go("a").request_timeout, ms(5_000));
        assert_eq!(Config::openshift("a").request_timeout, ms(53_500));
        assert_eq!(Config::client_go_request_timeout(ms(1_500)), ms(1_000));
        let c = Config::client_go("a").timings(ms(2_000), ms(1_500), ms(250));
        assert_eq!(c.request_timeout, ms(1_000), "follows client-go's rule");
        assert_eq!(c.renew_every(), c.retry_period);
        assert_eq!(c.drain_budget(), ms(500));
    }

    /// A request timeout set apart from client-go's rule survives new timings
    /// (it was reset silently before); one that follows the rule follows it.
    #[test]
    fn timings_keep_a_request_timeout_that_was_set() {
        let c = Config::fast("a").timings(ms(15_000), ms(10_000), ms(2_000));
        assert_eq!(c.request_timeout, ms(500), "fast's own");
        let mut c = Config::client_go("a");
        c.request_timeout = ms(3_000);
        let c = c.timings(ms(20_000), ms(12_000), ms(2_000));
        assert_eq!(c.request_timeout, ms(3_000));
        assert_eq!(c.drain_budget(), ms(9_000));
        let c = Config::openshift("a").timings(ms(15_000), ms(10_000), ms(2_000));
        assert_eq!(c.request_timeout, ms(5_000));
    }

    /// A renew every third of the lease at client-go's timings is accepted once
    /// the request timeout leaves room for a retry before the deadline.
    #[test]
    fn a_renew_interval_of_a_third_of_the_lease() {
        let mut c = Config::client_go("a").renew_interval(ms(5_000));
        assert!(matches!(
            c.validate(),
            Err(ConfigError::RenewIntervalPlusTimeoutNotBelowRenewDeadline { .. })
        ));
        c.request_timeout = ms(4_000);
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(c.renew_every(), ms(5_000));
    }

    /// Each broken rule is its own error, named.
    #[test]
    fn each_rule_has_its_error() {
        let base = Config::client_go("a");
        type Case = (fn(&mut Config), ConfigError);
        let cases: &[Case] = &[
            (|c| c.identity = "".into(), ConfigError::EmptyIdentity),
            (
                |c| c.retry_period = Duration::ZERO,
                ConfigError::NotPositive("retry_period"),
            ),
            (
                |c| c.request_timeout = Duration::ZERO,
                ConfigError::NotPositive("request_timeout"),
            ),
            (
                |c| c.lease_duration = ms(15_500),
                ConfigError::LeaseNotWholeSeconds(ms(15_500)),
            ),
            (
                |c| c.lease_duration = ms(500),
                ConfigError::LeaseNotWholeSeconds(ms(500)),
            ),
            (
                |c| c.lease_duration = ms(10_000),
                ConfigError::LeaseNotAboveRenewDeadline {
                    lease: ms(10_000),
                    renew: ms(10_000),
                },
            ),
            (
                |c| c.renew_deadline = ms(2_400),
                ConfigError::RenewDeadlineNotAboveJitteredRetry {
                    renew: ms(2_400),
                    jittered: ms(2_400),
                },
            ),
            (
                |c| c.request_timeout = ms(8_000),
                ConfigError::RetryPlusTimeoutNotBelowRenewDeadline {
                    sum: ms(10_000),
                    renew: ms(10_000),
                },
            ),
            (
                |c| c.renew_interval = Some(ms(1_999)),
                ConfigError::RenewIntervalBelowRetryPeriod {
                    interval: ms(1_999),
                    retry: ms(2_000),
                },
            ),
            (
                |c| c.renew_interval = Some(ms(5_000)),
                ConfigError::RenewIntervalPlusTimeoutNotBelowRenewDeadline {
                    sum: ms(10_000),
                    renew: ms(10_000),
                },
            ),
            (
                |c| c.jitter = f64::NAN,
                ConfigError::InvalidJitter(f64::NAN),
            ),
            (
                |c| c.max_lease_duration = ms(1_000),
                ConfigError::MaxLeaseBelowLease,
            ),
            (
                |c| c.fleet_lease_duration = Some(ms(7_200_000)),
                ConfigError::FleetLeaseOutOfRange(ms(7_200_000)),
            ),
            (
                |c| c.fleet_lease_duration = Some(Duration::ZERO),
                ConfigError::FleetLeaseOutOfRange(Duration::ZERO),
            ),
            (
                |c| {
                    c.lease_duration = Duration::from_secs(i32::MAX as u64 + 1);
                    c.max_lease_duration = Duration::MAX;
                },
                ConfigError::LeaseTooLong(Duration::from_secs(i32::MAX as u64 + 1)),
            ),
        ];
        for (edit, want) in cases {
            let mut c = base.clone();
            edit(&mut c);
            match (c.validate(), want) {
                (Err(ConfigError::InvalidJitter(j)), ConfigError::InvalidJitter(_)) => {
                    assert!(j.is_nan())
                }
                (got, want) => assert_eq!(got, Err(want.clone())),
            }
        }
    }

    /// Found by fuzzing: `Duration::mul_f64` panicked on a huge jitter or retry
    /// period. Validation now answers with the rule instead.
    #[test]
    fn absurd_jitter_or_retry_is_an_error_not_a_panic() {
        let mut c = Config::client_go("a");
        c.jitter = 1e300;
        assert!(matches!(
            c.validate(),
            Err(ConfigError::RenewDeadlineNotAboveJitteredRetry { jittered, .. }) if jittered == Duration::MAX
        ));
        let mut c = Config::client_go("a");
        c.retry_period = Duration::MAX;
        assert!(c.validate().is_err());
        assert_eq!(c.max_retry_interval(), Duration::MAX);
    }

    /// FAULTS H8: configurations at the edge are rejected with the rule named, or
    /// accepted with the (small) clock tolerance they really have.
    #[test]
    fn h8_edge_configurations() {
        // lease = renew + ε: accepted, but it tolerates almost no clock-rate difference.
        let mut c = Config::client_go("a");
        c.lease_duration = ms(11_000);
        c.renew_deadline = ms(10_999);
        assert_eq!(c.validate(), Ok(()));
        assert!(c.tolerated_clock_ratio() < 1.001);
        // renew = 1.2 × retry exactly: rejected, as client-go does.
        let mut c = Config::client_go("a");
        c.renew_deadline = ms(2_400);
        c.request_timeout = ms(100);
        assert!(matches!(
            c.validate(),
            Err(ConfigError::RenewDeadlineNotAboveJitteredRetry { .. })
        ));
        // renew just above 1.2 × retry, but a request timeout that cannot fit: rejected.
        c.renew_deadline = ms(2_401);
        c.request_timeout = ms(1_000);
        assert!(matches!(
            c.validate(),
            Err(ConfigError::RetryPlusTimeoutNotBelowRenewDeadline { .. })
        ));
        c.request_timeout = ms(400);
        assert_eq!(c.validate(), Ok(()));
    }
}
