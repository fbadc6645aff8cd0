//! The election's state machine (`election_core::Elector`) driven through its
//! public API by an arbitrary sequence of inputs: answers to the pending call
//! (a read's or a write's observation of an arbitrary record, or each
//! `LockError`), answers to calls it no longer waits for, watch events with
//! arbitrary records and versions, timeouts, the clock moving by arbitrary
//! amounts (backwards too), step-down, shutdown, standby, the end of the
//! leader work; on presets (`fast`, `client_go`, `openshift`, coordinated) with
//! small variations, which may make the configuration invalid.
//!
//! Invariants: no panic; an invalid configuration is a `ConfigError` (and
//! `Config::validate` says so too); after every step at most one new lock call,
//! `is_leader(now)` only while leading or draining, after `StartedLeading` and
//! before `deadline()`; `StartedLeading` and `StoppedLeading` alternate, with
//! the same term; after `Terminated`, no call and no event, and the role stays
//! `Terminated`.
#![no_main]

use std::time::Duration;

use arbitrary::Arbitrary;
use election_core::{
    Action, Config, Elector, Event, Handover, Input, Instant, LockDelay, LockError, LockRecord,
    Observation, OpId, Preemption, ReadId, Role, Stamp, Term, WallTime, WatchEvent, WriteId,
};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Who {
    Nobody,
    Me,
    Other,
    Third,
    Malformed,
}

impl Who {
    fn name(self) -> &'static str {
        match self {
            Who::Nobody => "",
            Who::Me => "me",
            Who::Other => "other",
            Who::Third => "third",
            Who::Malformed => election_core::MALFORMED_HOLDER,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum AStamp {
    Unset,
    Now,
    At(i64, u32),
}

impl From<AStamp> for Stamp {
    fn from(s: AStamp) -> Stamp {
        match s {
            AStamp::Unset => Stamp::Unset,
            AStamp::Now => Stamp::Now,
            AStamp::At(secs, nanos) => Stamp::At(WallTime::new(secs, nanos)),
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
struct ARecord {
    holder: Who,
    duration: Option<i64>,
    acquire: AStamp,
    renew: AStamp,
    transitions: u32,
    priority: Option<i64>,
    handover: Option<(Who, Option<i64>)>,
    strategy: bool,
}

impl ARecord {
    fn record(&self) -> LockRecord {
        LockRecord {
            holder: self.holder.name().into(),
            lease_duration_secs: self.duration,
            acquire_time: self.acquire.into(),
            renew_time: self.renew.into(),
            transitions: self.transitions,
            priority: self.priority,
            handover: self.handover.map(|(to, priority)| Handover {
                to: to.name().into(),
                priority,
            }),
            strategy: self.strategy.then(|| "OldestEmulationVersion".into()),
        }
    }
}

/// A version from a small set, so repeats happen.
#[derive(Arbitrary, Debug, Clone)]
struct Seen(u8, ARecord);

impl Seen {
    fn observation(&self) -> Observation {
        Observation::new((self.0 % 16).to_string(), self.1.record())
    }
}

#[derive(Arbitrary, Debug, Clone)]
enum AError {
    NotFound,
    AlreadyExists,
    Conflict,
    Transient(Option<u32>),
    Forbidden,
    Invalid,
    Unknown,
}

impl AError {
    fn error(&self) -> LockError {
        match self {
            AError::NotFound => LockError::NotFound,
            AError::AlreadyExists => LockError::AlreadyExists,
            AError::Conflict => LockError::Conflict,
            AError::Transient(ms) => LockError::Transient {
                message: "503".into(),
                retry_after: ms.map(|ms| Duration::from_millis(u64::from(ms))),
            },
            AError::Forbidden => LockError::Forbidden {
                message: "403".into(),
            },
            AError::Invalid => LockError::Invalid {
                message: "422".into(),
            },
            AError::Unknown => LockError::unknown("500 after commit"),
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
enum Answer {
    Ok(Seen),
    Err(AError),
}

impl Answer {
    fn result(&self) -> Result<Observation, LockError> {
        match self {
            Answer::Ok(seen) => Ok(seen.observation()),
            Answer::Err(e) => Err(e.error()),
        }
    }
}

#[derive(Arbitrary, Debug, Clone)]
enum Step {
    /// The pending call answered.
    Answer(Answer),
    /// The pending call answered as a working lock would: a write with the
    /// record it asked for at a new version, a read with this observation.
    AnswerAsLock(Seen),
    /// An answer to a call the elector never made or no longer waits for.
    Stale(u16, bool, Answer),
    Changed(Seen),
    Deleted(Option<u8>),
    WatchActive(bool),
    /// The clock moves on by this many milliseconds; the timeout is handled.
    Advance(u16),
    /// The clock jumps by this many nanoseconds (any size).
    Jump(u64),
    /// The clock goes back by this many milliseconds (the elector clamps it).
    Back(u16),
    /// The clock moves to the elector's next timeout, which is handled.
    Fire,
    StepDown,
    Shutdown,
    Standby(bool),
    WorkStopped,
}

#[derive(Arbitrary, Debug)]
enum Preset {
    Fast,
    ClientGo,
    OpenShift,
}

#[derive(Arbitrary, Debug)]
struct AConfig {
    preset: Preset,
    coordinated: bool,
    priority: Option<i64>,
    steal: bool,
    immediate: bool,
    keep_on_shutdown: bool,
    seed: u64,
    /// Small variations of the timings, in milliseconds (may break the rules).
    renew_interval: Option<u16>,
    request_timeout: Option<u16>,
    lease_secs: Option<u8>,
    jitter_tenths: Option<u8>,
}

impl AConfig {
    fn config(&self) -> Config {
        let mut c = match self.preset {
            Preset::Fast => Config::fast("me"),
            Preset::ClientGo => Config::client_go("me"),
            Preset::OpenShift => Config::openshift("me"),
        };
        if self.coordinated {
            c = c.coordinated();
        }
        c.priority = self.priority;
        if self.steal {
            c.preemption = Preemption::Steal;
        }
        if self.immediate {
            c.lock_delay = LockDelay::Immediate;
        }
        c.release_on_shutdown = !self.keep_on_shutdown;
        if let Some(ms) = self.renew_interval {
            c.renew_interval = Some(Duration::from_millis(u64::from(ms)));
        }
        if let Some(ms) = self.request_timeout {
            c.request_timeout = Duration::from_millis(u64::from(ms));
        }
        if let Some(secs) = self.lease_secs {
            c.lease_duration = Duration::from_secs(u64::from(secs));
        }
        if let Some(tenths) = self.jitter_tenths {
            c.jitter = f64::from(tenths) / 10.0;
        }
        c.seed(self.seed)
    }
}

#[derive(Arbitrary, Debug)]
struct Run {
    config: AConfig,
    start_ms: u32,
    steps: Vec<Step>,
}

struct Host {
    e: Elector,
    now: Instant,
    pending: Option<Action>,
    next_version: u64,
    started: Option<Term>,
    terminated: bool,
}

impl Host {
    fn check(&mut self) {
        let mut calls = 0;
        while let Some(action) = self.e.poll_action() {
            assert!(!self.terminated, "a call after Terminated: {action:?}");
            calls += 1;
            assert!(calls <= 1, "two calls in one step: {action:?}");
            self.pending = Some(action);
        }
        while let Some(event) = self.e.poll_event() {
            assert!(!self.terminated, "an event after Terminated: {event:?}");
            match event {
                Event::StartedLeading { term } => {
                    assert!(self.started.is_none(), "started {term} while leading");
                    self.started = Some(term);
                }
                Event::StoppedLeading { term, .. } => {
                    assert_eq!(self.started.take(), Some(term), "a stop without its start");
                }
                Event::Terminated => self.terminated = true,
                _ => {}
            }
        }
        if self.e.is_leader(self.now) {
            assert!(matches!(self.e.role(), Role::Leader | Role::Draining));
            assert!(self.started.is_some(), "a leader without StartedLeading");
            let deadline = self.e.deadline();
            assert!(
                deadline.is_some_and(|d| self.now < d),
                "a leader at {:?} past its deadline {deadline:?}",
                self.now
            );
        }
        if self.terminated {
            assert_eq!(self.e.role(), Role::Terminated);
            assert!(!self.e.is_leader(self.now));
        }
    }

    fn step(&mut self, step: &Step) {
        let now = self.now;
        match step {
            Step::Answer(answer) => {
                if let Some(action) = self.pending.take() {
                    self.e.handle(action.op().answer(answer.result()), now);
                }
            }
            Step::AnswerAsLock(seen) => {
                if let Some(action) = self.pending.take() {
                    let op = action.op();
                    let observation = match action {
                        Action::Get { .. } => seen.observation(),
                        Action::Create { record, .. } | Action::Update { record, .. } => {
                            self.next_version += 1;
                            Observation::new(self.next_version.to_string(), record)
                        }
                    };
                    self.e.handle(op.answer(Ok(observation)), now);
                }
            }
            Step::Stale(id, write, answer) => {
                let id = u64::from(*id);
                let op = if *write {
                    OpId::Write(WriteId(id))
                } else {
                    OpId::Read(ReadId(id))
                };
                if Some(op) != self.pending.as_ref().map(Action::op) {
                    self.e.handle(op.answer(answer.result()), now);
                }
            }
            Step::Changed(seen) => self
                .e
                .handle(Input::Watch(WatchEvent::Changed(seen.observation())), now),
            Step::Deleted(v) => {
                let v = v.map(|v| (v % 16).to_string().into());
                self.e.handle(Input::Watch(WatchEvent::Deleted(v)), now);
            }
            Step::WatchActive(active) => self.e.handle(Input::WatchActive(*active), now),
            Step::Advance(ms) => {
                self.now = now.saturating_add(Duration::from_millis(u64::from(*ms)));
                self.e.handle_timeout(self.now);
            }
            Step::Jump(nanos) => {
                self.now = now.saturating_add(Duration::from_nanos(*nanos));
                self.e.handle_timeout(self.now);
            }
            Step::Back(ms) => {
                self.now = now.saturating_sub(Duration::from_millis(u64::from(*ms)));
                self.e.handle_timeout(self.now);
            }
            Step::Fire => {
                if let Some(at) = self.e.poll_timeout() {
                    self.now = now.max(at);
                    self.e.handle_timeout(self.now);
                }
            }
            Step::StepDown => self.e.step_down(now),
            Step::Shutdown => self.e.shutdown(now),
            Step::Standby(on) => self.e.set_standby(*on, now),
            Step::WorkStopped => self.e.work_stopped(now),
        }
        self.check();
    }
}

fuzz_target!(|run: Run| {
    let config = run.config.config();
    let now = Instant::from_millis(u64::from(run.start_ms));
    let e = match Elector::new(config.clone(), now) {
        Ok(e) => e,
        Err(err) => {
            assert_eq!(
                config.validate(),
                Err(err),
                "Elector::new refuses what validate refuses"
            );
            return;
        }
    };
    assert!(config.validate().is_ok());
    let mut host = Host {
        e,
        now,
        pending: None,
        next_version: 100,
        started: None,
        terminated: false,
    };
    host.check();
    for step in run.steps.iter().take(400) {
        host.step(step);
    }
});
