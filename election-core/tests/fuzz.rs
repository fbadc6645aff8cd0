//! Fuzzing of the core's input handling (DESIGN §8): arbitrary sequences of
//! answers (right, stale and unknown operation ids; every error class; records
//! with absurd values), watch events, timeouts, commands and clocks that jump
//! or go backwards. No sequence may panic, and after every step the elector keeps
//! the promises a host relies on:
//!
//! - at most one lock call outstanding;
//! - `is_leader(now)` only while leading (or draining) and before the deadline;
//! - `StartedLeading` and `StoppedLeading` strictly paired, with the same term;
//! - nothing after `Terminated`.
//!
//! `PROPTEST_CASES` sets the number of sequences (default 256 here).

use std::time::Duration;

use election_core::testing::Pairing;
use election_core::{
    Action, Config, Elector, Event, Handover, Input, Instant, LockDelay, LockError, LockRecord,
    Observation, OpId, Preemption, ReadId, Role, Stamp, WallTime, WatchEvent, WriteId,
};
use proptest::prelude::*;

/// One thing that happens to the elector.
#[derive(Clone, Debug)]
enum Stimulus {
    /// The clock moves by this many milliseconds (negative: backwards) and the
    /// host handles the timeout.
    Tick(i64),
    /// The clock moves to the elector's next timeout, which is handled.
    Fire,
    /// The outstanding call (if any) is answered.
    Answer(Result<Observation, LockError>),
    /// The outstanding call (if any) is answered as a working lock would: a write
    /// with the record it asked for at a new version, a read with this observation.
    AnswerAsLock(Observation),
    /// An answer to an operation id the elector never issued or no longer waits for.
    StaleAnswer(u64, Result<Observation, LockError>),
    /// A watch event.
    Watch(WatchEvent),
    /// The watch starts or stops delivering.
    WatchActive(bool),
    StepDown,
    Shutdown,
    /// The host reports that the leader work ended.
    WorkStopped,
}

fn holder() -> impl Strategy<Value = &'static str> {
    prop_oneof![Just(""), Just("me"), Just("other"), Just("third")]
}

fn stamp() -> impl Strategy<Value = Stamp> {
    prop_oneof![
        Just(Stamp::Unset),
        Just(Stamp::Now),
        (any::<i64>(), any::<u32>()).prop_map(|(s, n)| Stamp::At(WallTime::new(s, n))),
    ]
}

fn record() -> impl Strategy<Value = LockRecord> {
    (
        holder(),
        prop_oneof![
            Just(None),
            Just(Some(0)),
            Just(Some(-1)),
            Just(Some(1)),
            Just(Some(15)),
            Just(Some(i64::MAX)),
            Just(Some(i64::MIN)),
            any::<i64>().prop_map(Some),
        ],
        stamp(),
        stamp(),
        prop_oneof![
            Just(0u32),
            Just(1),
            Just(i32::MAX as u32),
            Just(u32::MAX),
            any::<u32>()
        ],
        prop_oneof![Just(None), any::<i64>().prop_map(Some)],
        prop_oneof![
            Just(None),
            (
                holder(),
                prop_oneof![Just(None), any::<i64>().prop_map(Some)]
            )
                .prop_map(|(to, priority)| Some(Handover {
                    to: to.into(),
                    priority
                })),
        ],
    )
        .prop_map(
            |(
                holder,
                lease_duration_secs,
                acquire_time,
                renew_time,
                transitions,
                priority,
                handover,
            )| {
                LockRecord {
                    holder: holder.into(),
                    lease_duration_secs,
                    acquire_time,
                    renew_time,
                    transitions,
                    priority,
                    handover,
                    strategy: None,
                }
            },
        )
}

/// Versions come from a small set so that repeats (identical rewrites, a version
/// seen again after others) happen often.
fn observation() -> impl Strategy<Value = Observation> {
    (0u8..12, record()).prop_map(|(v, r)| Observation::new(v.to_string(), r))
}

fn error() -> impl Strategy<Value = LockError> {
    prop_oneof![
        Just(LockError::NotFound),
        Just(LockError::AlreadyExists),
        Just(LockError::Conflict),
        prop_oneof![
            Just(None),
            Just(Some(Duration::ZERO)),
            Just(Some(Duration::MAX)),
            (0u64..100_000).prop_map(|ms| Some(Duration::from_millis(ms))),
        ]
        .prop_map(|retry_after| LockError::Transient {
            message: "503".into(),
            retry_after
        }),
        Just(LockError::Forbidden {
            message: "403".into()
        }),
        Just(LockError::Invalid {
            message: "422".into()
        }),
        Just(LockError::unknown("500 after commit")),
    ]
}

fn result() -> impl Strategy<Value = Result<Observation, LockError>> {
    prop_oneof![3 => observation().prop_map(Ok), 2 => error().prop_map(Err)]
}

fn step() -> impl Strategy<Value = Stimulus> {
    prop_oneof![
        4 => prop_oneof![
            9 => 0i64..3_000,
            1 => -5_000i64..0,
            1 => Just(i64::MAX / 2),
        ]
        .prop_map(Stimulus::Tick),
        4 => Just(Stimulus::Fire),
        4 => result().prop_map(Stimulus::Answer),
        2 => observation().prop_map(Stimulus::AnswerAsLock),
        1 => (any::<u64>(), result()).prop_map(|(op, r)| Stimulus::StaleAnswer(op, r)),
        2 => prop_oneof![
            observation().prop_map(WatchEvent::Changed),
            Just(WatchEvent::Deleted(None)),
            (0u8..12).prop_map(|v| WatchEvent::Deleted(Some(v.to_string().into()))),
        ]
        .prop_map(Stimulus::Watch),
        1 => any::<bool>().prop_map(Stimulus::WatchActive),
        1 => Just(Stimulus::StepDown),
        1 => Just(Stimulus::Shutdown),
        2 => Just(Stimulus::WorkStopped),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (
        any::<bool>(),
        any::<bool>(),
        prop_oneof![Just(None), any::<i64>().prop_map(Some)],
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(client_go, strict, priority, steal, seed)| {
            let mut c = if client_go {
                Config::client_go("me")
            } else {
                Config::fast("me")
            };
            c.lock_delay = if strict {
                LockDelay::Strict
            } else {
                LockDelay::Immediate
            };
            c.priority = priority;
            c.preemption = if steal {
                Preemption::Steal
            } else {
                Preemption::Handover
            };
            c.seed(seed)
        })
}

/// Durations from zero to absurd, mostly of the sizes configurations use.
fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        4 => (0u64..200_000).prop_map(Duration::from_millis),
        1 => any::<u64>().prop_map(Duration::from_nanos),
        1 => any::<u64>().prop_map(Duration::from_secs),
        1 => Just(Duration::MAX),
    ]
}

/// The host's side: the clock, the outstanding call, the started term.
struct Host {
    e: Elector,
    now: Instant,
    outstanding: Option<Action>,
    /// Versions handed out by `AnswerAsLock` writes (above the generators' 0..12).
    next_version: u64,
    pairing: Pairing,
    terminated: bool,
    /// How many times leadership started (to check the fuzzing reaches it).
    starts: usize,
}

impl Host {
    /// Drains actions and events, checking the promises.
    fn drain(&mut self) -> Result<(), TestCaseError> {
        while let Some(action) = self.e.poll_action() {
            prop_assert!(!self.terminated, "an action after Terminated: {action:?}");
            // A new call replaces one that the elector gave up on (its request
            // timeout); two new calls in one drain would be two outstanding.
            self.outstanding = Some(action.clone());
            prop_assert!(
                self.e.poll_action().is_none(),
                "two calls outstanding after {action:?}"
            );
        }
        while let Some(ev) = self.e.poll_event() {
            prop_assert!(!self.terminated, "an event after Terminated: {ev:?}");
            if let Err(e) = self.pairing.check(&ev) {
                return Err(TestCaseError::fail(e.to_string()));
            }
            match ev {
                Event::StartedLeading { .. } => self.starts += 1,
                Event::Terminated => self.terminated = true,
                _ => {}
            }
        }
        if self.e.is_leader(self.now) {
            prop_assert!(matches!(self.e.role(), Role::Leader | Role::Draining));
            prop_assert!(
                self.pairing.started().is_some(),
                "leader without StartedLeading"
            );
            let deadline = self.e.deadline();
            prop_assert!(
                deadline.is_some_and(|d| self.now < d),
                "leader at {:?} past its deadline {deadline:?}",
                self.now
            );
        }
        if self.terminated {
            prop_assert_eq!(self.e.role(), Role::Terminated);
        }
        Ok(())
    }

    fn apply(&mut self, stimulus: Stimulus) -> Result<(), TestCaseError> {
        match stimulus {
            Stimulus::Tick(ms) => {
                let nanos = ms.unsigned_abs().saturating_mul(1_000_000);
                self.now = if ms >= 0 {
                    Instant::from_nanos(self.now.as_nanos().saturating_add(nanos))
                } else {
                    // Backwards: the elector clamps it.
                    Instant::from_nanos(self.now.as_nanos().saturating_sub(nanos))
                };
                self.e.handle_timeout(self.now);
            }
            Stimulus::Fire => {
                if let Some(at) = self.e.poll_timeout() {
                    self.now = self.now.max(at);
                    self.e.handle_timeout(self.now);
                }
            }
            Stimulus::Answer(result) => {
                if let Some(action) = self.outstanding.take() {
                    self.e.handle(action.op().answer(result), self.now);
                }
            }
            Stimulus::AnswerAsLock(read) => {
                if let Some(action) = self.outstanding.take() {
                    let op = action.op();
                    let result = match action {
                        Action::Get { .. } => read,
                        Action::Create { record, .. } | Action::Update { record, .. } => {
                            self.next_version += 1;
                            Observation::new(self.next_version.to_string(), record)
                        }
                    };
                    self.e.handle(op.answer(Ok(result)), self.now);
                }
            }
            Stimulus::StaleAnswer(op, result) => {
                // Either kind, so that a right number of the wrong kind comes too.
                let op = if op % 2 == 0 {
                    OpId::Read(ReadId(op / 2))
                } else {
                    OpId::Write(WriteId(op / 2))
                };
                if Some(op) != self.outstanding.as_ref().map(Action::op) {
                    self.e.handle(op.answer(result), self.now);
                }
            }
            Stimulus::Watch(event) => self.e.handle(Input::Watch(event), self.now),
            Stimulus::WatchActive(active) => self.e.handle(Input::WatchActive(active), self.now),
            Stimulus::StepDown => self.e.step_down(self.now),
            Stimulus::Shutdown => self.e.shutdown(self.now),
            Stimulus::WorkStopped => self.e.work_stopped(self.now),
        }
        self.drain()
    }
}

/// Runs one sequence; returns how many times leadership started.
fn run(config: Config, start: u64, steps: Vec<Stimulus>) -> Result<usize, TestCaseError> {
    let now = Instant::from_nanos(start);
    let e = Elector::new(config, now).expect("presets are valid");
    let mut host = Host {
        e,
        now,
        outstanding: None,
        next_version: 100,
        pairing: Pairing::new(),
        terminated: false,
        starts: 0,
    };
    host.drain()?;
    for s in steps {
        host.apply(s)?;
    }
    Ok(host.starts)
}

/// The fuzzing is worth something only if it reaches leadership: with the same
/// generators, a fixed seed, many sequences lead at least once.
#[test]
fn fuzzed_sequences_reach_leadership() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (
        config(),
        0u64..u64::MAX / 4,
        proptest::collection::vec(step(), 1..200),
    );
    let mut led = 0;
    for _ in 0..200 {
        let (config, start, steps) = strategy.new_tree(&mut runner).expect("a case").current();
        if run(config, start, steps).expect("promises kept") > 0 {
            led += 1;
        }
    }
    eprintln!("{led} of 200 fuzzed sequences led");
    assert!(led >= 20, "only {led} of 200 fuzzed sequences led");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_inputs_never_panic_and_keep_the_host_promises(
        config in config(),
        start in 0u64..u64::MAX / 4,
        steps in proptest::collection::vec(step(), 1..200),
    ) {
        run(config, start, steps)?;
    }

    /// Any durations, jitter and timeouts: validation answers with a typed error
    /// or accepts, never panics, and what it accepts keeps client-go's rules and
    /// ours (DESIGN §3); an elector then starts.
    #[test]
    fn arbitrary_configurations_are_validated_without_panic(
        lease in prop_oneof![
            3 => (0u64..100_000).prop_map(Duration::from_secs),
            1 => any::<u64>().prop_map(Duration::from_secs),
            1 => any::<u64>().prop_map(Duration::from_nanos),
        ],
        renew in duration(),
        retry in duration(),
        timeout in duration(),
        interval in prop_oneof![1 => Just(None), 1 => duration().prop_map(Some)],
        jitter in prop_oneof![
            3 => 0.0f64..3.0,
            1 => any::<f64>(),
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(f64::MAX),
        ],
        max_lease in prop_oneof![
            2 => Just(Config::client_go("me").max_lease_duration),
            1 => Just(Duration::MAX),
            1 => duration(),
        ],
    ) {
        let mut c = Config::client_go("me");
        c.lease_duration = lease;
        c.renew_deadline = renew;
        c.retry_period = retry;
        c.request_timeout = timeout;
        c.renew_interval = interval;
        c.jitter = jitter;
        c.max_lease_duration = max_lease;
        if c.validate().is_ok() {
            prop_assert!(c.renew_every() >= c.retry_period);
            prop_assert!(c.renew_every() + c.request_timeout < c.renew_deadline);
            prop_assert!(c.lease_duration > c.renew_deadline);
            let jittered = c.retry_period.as_secs_f64() * c.jitter.max(1.0);
            prop_assert!(c.renew_deadline.as_secs_f64() >= jittered);
            prop_assert!(c.retry_period + c.request_timeout < c.renew_deadline);
            prop_assert_eq!(c.lease_duration.subsec_nanos(), 0);
            prop_assert!(c.lease_duration.as_secs() <= i32::MAX as u64);
            prop_assert!(c.tolerated_clock_ratio() > 1.0);
            prop_assert!(c.max_lease_duration >= c.lease_duration);
            prop_assert!(Elector::new(c, Instant::ZERO).is_ok());
        } else {
            prop_assert!(Elector::new(c, Instant::ZERO).is_err());
        }
    }

    /// Valid configurations at the edge: lease durations up to the record's
    /// `int32` seconds (with a `max_lease_duration` to match), a renew deadline
    /// just below, the largest jitter the rules allow. The elector starts and
    /// runs arbitrary inputs without an overflow panic (`Duration::mul_f64` in the
    /// jittered retry once panicked here).
    #[test]
    fn huge_valid_configurations_run_without_panic(
        lease_secs in prop_oneof![
            1 => i32::MAX as u64 / 2..=i32::MAX as u64,
            1 => 1u64..1_000_000,
        ],
        renew_frac in 0.5f64..0.999_999,
        retry_frac in 0.000_001f64..0.5,
        jitter_frac in 0.0f64..1.0,
        max_lease in prop_oneof![Just(Duration::MAX), Just(Duration::ZERO)],
        seed in any::<u64>(),
        steps in proptest::collection::vec(step(), 1..40),
    ) {
        let lease = Duration::from_secs(lease_secs);
        let renew = Duration::from_secs_f64(lease.as_secs_f64() * renew_frac);
        let retry = Duration::from_secs_f64(renew.as_secs_f64() * retry_frac);
        let mut c = Config::client_go("me").seed(seed);
        c.lease_duration = lease;
        c.renew_deadline = renew;
        c.retry_period = retry;
        c.request_timeout = retry;
        // Up to the largest jitter the rules accept: retry × jitter < renew.
        c.jitter = (renew.as_secs_f64() / retry.as_secs_f64()) * jitter_frac;
        c.max_lease_duration = max_lease.max(lease);
        prop_assume!(c.validate().is_ok(), "invalid: {:?}", c.validate());
        run(c, 0, steps)?;
    }
}
