//! Following an election for operators: `tracing` spans and events carrying the
//! lock name, identity and term; the last renew and the last error for the status;
//! and (feature `metrics`) the Prometheus metrics.
//!
//! A [`Monitor`] learns from two sources:
//! - the driver's state stream ([`Monitor::follow`] or [`Monitor::observe`]):
//!   started/stopped leading, holder changes, problems;
//! - the lock calls, through [`Monitor::lock`], which wraps any [`Lock`] in an
//!   [`ObservedLock`] that times each call and classifies its errors. The driver's
//!   handle reports neither renewals nor their latency, so this is where they come
//!   from.
//!
//! Nothing secret is ever logged: the fields are the lock's description
//! (`leases/<ns>/<name>`), the identity, the term, the operation and the error's
//! message. Tokens and kubeconfig contents never reach this crate.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use election_core::{Event, Layer, Layered, Lock, LockError, LockRecord, Observation, Version};
use election_driver::{Change, LeadershipState, StateStream};
use futures::StreamExt;
use tracing::Instrument;

/// What the monitor remembers for the status.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Wall-clock time of the last successful renew (an update while leading).
    pub last_renew: Option<SystemTime>,
    /// How long that renew took.
    pub last_renew_latency: Option<Duration>,
    /// The last error reported (lock call or driver problem), as its message.
    pub last_error: Option<String>,
    /// When that error happened.
    pub last_error_at: Option<SystemTime>,
    /// The term of the current or last leadership (`<transitions>@<version>`).
    pub term: Option<String>,
    /// Why the last leadership ended.
    pub last_stop: Option<String>,
    /// The last term whose leader work ended by itself (not cancelled).
    pub work_ended_term: Option<String>,
}

/// Follows one election (see the [module docs](self)). Share it in an `Arc`.
pub struct Monitor {
    lock_name: Arc<str>,
    name: Arc<str>,
    identity: Arc<str>,
    leading: AtomicBool,
    /// "election started" was logged.
    announced_start: AtomicBool,
    snapshot: Mutex<Snapshot>,
    /// The last term this node started leading in, and when.
    term_started: Mutex<Option<(String, std::time::Instant)>>,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: crate::metrics::Metrics,
}

/// Builds a [`Monitor`]: [`Monitor::builder`].
#[derive(Debug)]
#[must_use]
pub struct MonitorBuilder {
    lock_name: Arc<str>,
    identity: Arc<str>,
    name: Option<Arc<str>>,
    #[cfg(feature = "metrics")]
    metrics: Option<crate::metrics::Metrics>,
}

impl MonitorBuilder {
    /// The election's name, the metrics' `name` label (client-go's election name).
    /// Default: the lock's object name, the last `/`-separated part of the lock's
    /// description (`my-controller` for `leases/default/my-controller`).
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Reports to `metrics`, shared with other monitors (feature `metrics`).
    /// Default: a set of this monitor's own.
    #[cfg(feature = "metrics")]
    pub fn metrics(mut self, metrics: &crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// The monitor.
    pub fn build(self) -> Arc<Monitor> {
        let name = self.name.unwrap_or_else(|| object_name(&self.lock_name));
        #[cfg(feature = "metrics")]
        let metrics = self.metrics.unwrap_or_default();
        #[cfg(feature = "metrics")]
        metrics.add(&name);
        Arc::new(Monitor {
            #[cfg(feature = "metrics")]
            metrics,
            lock_name: self.lock_name,
            name,
            identity: self.identity,
            leading: AtomicBool::new(false),
            announced_start: AtomicBool::new(false),
            snapshot: Mutex::new(Snapshot::default()),
            term_started: Mutex::new(None),
        })
    }
}

/// The object's name in a lock description (`leases/<ns>/<name>` → `<name>`).
fn object_name(lock_name: &Arc<str>) -> Arc<str> {
    match lock_name.rsplit_once('/') {
        Some((_, name)) if !name.is_empty() => name.into(),
        _ => Arc::clone(lock_name),
    }
}

impl core::fmt::Debug for Monitor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Monitor")
            .field("lock", &self.lock_name)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

fn relock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain field assignments only: a poisoned lock holds consistent data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Monitor {
    /// A monitor for the lock described as `lock_name` (e.g. `Lock::describe()`)
    /// and this node's `identity`.
    /// Its election name (the metrics' `name` label) is the lock's object name;
    /// [`Monitor::builder`] to choose it or to share metrics.
    pub fn new(lock_name: impl Into<Arc<str>>, identity: impl Into<Arc<str>>) -> Arc<Self> {
        Self::builder(lock_name, identity).build()
    }

    /// A builder for a monitor of the lock described as `lock_name` and this
    /// node's `identity`.
    pub fn builder(
        lock_name: impl Into<Arc<str>>,
        identity: impl Into<Arc<str>>,
    ) -> MonitorBuilder {
        MonitorBuilder {
            lock_name: lock_name.into(),
            identity: identity.into(),
            name: None,
            #[cfg(feature = "metrics")]
            metrics: None,
        }
    }

    /// The lock's name as given.
    pub fn lock_name(&self) -> &Arc<str> {
        &self.lock_name
    }

    /// The election's name: the metrics' `name` label.
    pub fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// This node's identity.
    pub fn identity(&self) -> &Arc<str> {
        &self.identity
    }

    /// What the monitor remembers now.
    pub fn snapshot(&self) -> Snapshot {
        relock(&self.snapshot).clone()
    }

    /// Wraps `lock` so that its calls are traced, timed and counted. Give the
    /// wrapped lock to the driver's builder.
    pub fn lock<L: Lock>(self: &Arc<Self>, lock: L) -> ObservedLock<L> {
        Layered::new(lock, Observed(Arc::clone(self)))
    }

    /// Follows a state stream to its end (spawn this on your runtime).
    pub async fn follow(self: Arc<Self>, mut states: StateStream) {
        while let Some(state) = states.next().await {
            self.observe(&state);
        }
    }

    /// Takes one published state into account (what [`Monitor::follow`] does
    /// for each).
    pub fn observe(&self, state: &LeadershipState) {
        let lock = &*self.lock_name;
        let identity = &*self.identity;
        // Once, on the first state seen, whatever its change: a stream that
        // subscribed before the driver's first turn starts with the initial state
        // and then gets the driver's own `Started`; one that subscribed later
        // starts with whatever the driver published last.
        if !self.announced_start.swap(true, Ordering::AcqRel) {
            tracing::info!(lock, identity, "election started");
        }
        match &state.change {
            Change::Elector(Event::StartedLeading { term }) => {
                self.leading.store(true, Ordering::Release);
                relock(&self.snapshot).term = Some(term.to_string());
                *relock(&self.term_started) = Some((term.to_string(), std::time::Instant::now()));
                tracing::info!(lock, identity, %term, "started leading");
                #[cfg(feature = "metrics")]
                self.metrics.started_leading(&self.name);
            }
            Change::Elector(Event::Draining { reason }) => {
                // The term as `0@5`, as on the other lines (left out if none).
                let term = state.term.as_ref().map(tracing::field::display);
                tracing::info!(lock, identity, term, %reason, "draining leader work");
            }
            Change::Elector(Event::StoppedLeading { term, reason }) => {
                self.leading.store(false, Ordering::Release);
                relock(&self.snapshot).last_stop = Some(reason.to_string());
                // Giving leadership up on purpose (shut down, stepped down) is
                // routine; losing it (deadline, another holder, a deleted lock, a
                // twin, a preemption) is worth a warning.
                if reason.is_graceful() {
                    tracing::info!(lock, identity, %term, %reason, "stopped leading");
                } else {
                    tracing::warn!(lock, identity, %term, %reason, "stopped leading");
                }
                #[cfg(feature = "metrics")]
                self.metrics.stopped_leading(&self.name, reason.class());
            }
            Change::Elector(Event::LeaderChanged { leader }) => {
                tracing::info!(
                    lock,
                    identity,
                    leader = leader.as_deref().unwrap_or(""),
                    "leader changed"
                );
            }
            Change::WorkEnded { term } => {
                relock(&self.snapshot).work_ended_term = Some(term.to_string());
                tracing::info!(lock, identity, %term, "leader work ended");
            }
            Change::Elector(Event::Warning(warning)) => {
                self.record_error(warning.to_string());
                tracing::warn!(lock, identity, error = %warning, "election problem");
                #[cfg(feature = "metrics")]
                if let election_core::Warning::RequestTimedOut { .. } = warning {
                    self.metrics.lock_error(&self.name, "timeout");
                }
            }
            Change::Problem(problem) => {
                self.record_error(problem.to_string());
                tracing::warn!(lock, identity, error = %problem, "election problem");
            }
            Change::Started => {} // announced above, on the first state seen
            Change::Elector(Event::Terminated) => {
                self.leading.store(false, Ordering::Release);
                tracing::info!(lock, identity, "election ended");
            }
            Change::Aborted => {
                self.leading.store(false, Ordering::Release);
                tracing::warn!(lock, identity, "election aborted");
            }
            _ => tracing::debug!(lock, identity, change = ?state.change, "state"),
        }
        // A stream starts with the current state, whatever its change: take the
        // role and term from every state too.
        self.leading.store(state.leading(), Ordering::Release);
        if let Some(term) = &state.term {
            relock(&self.snapshot).term = Some(term.to_string());
        }
        #[cfg(feature = "metrics")]
        self.metrics.set_master(&self.name, state.leading());
    }

    /// When this node started leading in `term` (as the monitor saw it), if that
    /// is the last term it started.
    #[cfg_attr(not(feature = "health"), allow(dead_code))]
    pub(crate) fn term_started(&self, term: &str) -> Option<std::time::Instant> {
        relock(&self.term_started)
            .as_ref()
            .filter(|(t, _)| t == term)
            .map(|(_, at)| *at)
    }

    fn record_error(&self, message: String) {
        let mut r = relock(&self.snapshot);
        r.last_error = Some(message);
        r.last_error_at = Some(SystemTime::now());
    }

    fn leading(&self) -> bool {
        self.leading.load(Ordering::Acquire)
    }

    fn finish_call(
        &self,
        op: &'static str,
        started: std::time::Instant,
        result: &Result<Observation, LockError>,
    ) {
        let took = started.elapsed();
        let leading = self.leading();
        match result {
            Ok(_) => {
                tracing::debug!(
                    op,
                    took_ms = took.as_secs_f64() * 1e3,
                    "lock call succeeded"
                );
                if op == "update" && leading {
                    let mut r = relock(&self.snapshot);
                    r.last_renew = Some(SystemTime::now());
                    r.last_renew_latency = Some(took);
                    drop(r);
                    #[cfg(feature = "metrics")]
                    self.metrics.renewed(&self.name, took);
                }
            }
            Err(e) => {
                let class = e.class();
                // NotFound on a read and AlreadyExists/Conflict are election
                // answers, not faults: log them quietly.
                if matches!(
                    e,
                    LockError::NotFound | LockError::AlreadyExists | LockError::Conflict
                ) {
                    tracing::debug!(op, class, error = %e, "lock call answered");
                } else {
                    tracing::warn!(op, class, error = %e, "lock call failed");
                    self.record_error(format!("lock {op} failed: {e}"));
                }
                // A read that finds no lock is how an election starts, not a fault.
                #[cfg(feature = "metrics")]
                if !(op == "get" && matches!(e, LockError::NotFound)) {
                    self.metrics.lock_error(&self.name, class);
                }
            }
        }
        // client-go's slow path: a renew whose fast path (an update from the
        // cached record) failed, so that it had to read the lock. Here the
        // leader reads only then (after a conflict or an update of unknown
        // outcome): every read while leading is one.
        #[cfg(feature = "metrics")]
        if op == "get" && leading {
            self.metrics.slowpath(&self.name);
        }
    }

    fn span(&self, op: &'static str) -> tracing::Span {
        let term = relock(&self.snapshot)
            .term
            .clone()
            .filter(|_| self.leading());
        tracing::info_span!(
            "lock_call",
            lock = &*self.lock_name,
            identity = &*self.identity,
            term = term.as_deref().unwrap_or(""),
            op
        )
    }
}

/// A [`Lock`] whose calls are traced, timed and counted by a [`Monitor`]
/// ([`Monitor::lock`]); every other call (the watch, the wrapped lock's Events
/// and configuration) is the wrapped lock's own.
pub type ObservedLock<L> = Layered<L, Observed>;

/// The [`Layer`] of an [`ObservedLock`]: reads and writes traced, timed and
/// counted by the monitor.
#[derive(Debug, Clone)]
pub struct Observed(Arc<Monitor>);

impl Observed {
    /// Times `call`, the lock call `op`, in the monitor's span, and counts it.
    async fn call(
        &self,
        op: &'static str,
        call: impl Future<Output = Result<Observation, LockError>>,
    ) -> Result<Observation, LockError> {
        let started = std::time::Instant::now();
        let r = call.instrument(self.0.span(op)).await;
        self.0.finish_call(op, started, &r);
        r
    }
}

impl<L: Lock> Layer<L> for Observed {
    async fn get(&self, inner: &L) -> Result<Observation, LockError> {
        self.call("get", inner.get()).await
    }

    async fn create(&self, inner: &L, record: &LockRecord) -> Result<Observation, LockError> {
        self.call("create", inner.create(record)).await
    }

    async fn update(
        &self,
        inner: &L,
        expected: &Version,
        record: &LockRecord,
    ) -> Result<Observation, LockError> {
        self.call("update", inner.update(expected, record)).await
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;
    use std::sync::atomic::AtomicU64;

    use election_core::{Instant, Role, StopReason, Term};
    use tracing::field::{Field, Visit};

    use super::*;

    /// Writes each event as `LEVEL message key=value…`, values as they were
    /// recorded (a `%` field through Display, a `?` field through Debug).
    struct Capture {
        out: Arc<Mutex<Vec<String>>>,
        next: AtomicU64,
    }

    struct Fields<'a>(&'a mut String);

    impl Visit for Fields<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    impl tracing::Subscriber for Capture {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed))
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let mut line = event.metadata().level().to_string();
            event.record(&mut Fields(&mut line));
            relock(&self.out).push(line);
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    /// What a fresh monitor logs while observing `states`, one line per event.
    fn logged(states: &[LeadershipState]) -> Vec<String> {
        let out = Arc::new(Mutex::new(Vec::new()));
        let capture = Capture {
            out: Arc::clone(&out),
            next: AtomicU64::new(1),
        };
        let monitor = Monitor::new("leases/default/m", "node-a");
        tracing::subscriber::with_default(capture, || {
            for state in states {
                monitor.observe(state);
            }
        });
        relock(&out).clone()
    }

    /// The lines logged for `states` by a monitor that first saw the election
    /// start (that announcement is checked and left out).
    fn logged_after_start(states: &[LeadershipState]) -> Vec<String> {
        let mut all = vec![LeadershipState::initial("node-a".into())];
        all.extend_from_slice(states);
        let mut lines = logged(&all);
        assert!(
            lines
                .first()
                .is_some_and(|l| l.contains("message=election started")),
            "{lines:?}"
        );
        lines.remove(0);
        lines
    }

    fn term() -> Term {
        Term {
            transitions: 0,
            version: "5".into(),
        }
    }

    fn state(role: Role, change: Change) -> LeadershipState {
        LeadershipState {
            role,
            term: matches!(role, Role::Leader | Role::Draining).then(term),
            change,
            at: Instant::from_nanos(1),
            ..LeadershipState::initial("node-a".into())
        }
    }

    fn stopped(reason: StopReason) -> LeadershipState {
        state(
            Role::Follower,
            Change::Elector(Event::StoppedLeading {
                term: term(),
                reason,
            }),
        )
    }

    #[test]
    fn a_graceful_stop_is_info_and_a_loss_a_warning() {
        for reason in [StopReason::ShutDown, StopReason::SteppedDown] {
            let lines = logged_after_start(&[stopped(reason.clone())]);
            assert_eq!(lines.len(), 1, "{reason}: {lines:?}");
            assert!(
                lines[0].starts_with("INFO message=stopped leading"),
                "{lines:?}"
            );
            assert!(lines[0].contains(&format!("reason={reason}")), "{lines:?}");
        }
        let holder: Arc<str> = "node-b".into();
        for reason in [
            StopReason::DeadlineExceeded,
            StopReason::LostConflict {
                holder: Arc::clone(&holder),
            },
            StopReason::ObservedOtherHolder {
                holder: Arc::clone(&holder),
            },
            StopReason::LockDeleted,
            StopReason::IdentityCollision,
        ] {
            let lines = logged_after_start(&[stopped(reason.clone())]);
            assert_eq!(lines.len(), 1, "{reason}: {lines:?}");
            assert!(
                lines[0].starts_with("WARN message=stopped leading"),
                "{lines:?}"
            );
            assert!(lines[0].contains(" term=0@5 "), "{lines:?}");
        }
    }

    #[test]
    fn draining_names_the_term_as_the_other_lines_do() {
        let lines = logged_after_start(&[state(
            Role::Draining,
            Change::Elector(Event::Draining {
                reason: StopReason::ShutDown,
            }),
        )]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("INFO message=draining leader work"),
            "{lines:?}"
        );
        assert!(
            lines[0].contains(" term=0@5 "),
            "not Some(\"0@5\"): {lines:?}"
        );
    }

    /// A stream that subscribed before the driver's first turn replays the
    /// initial state (change `Started`), then brings the driver's own `Started`:
    /// the sidecar logged "election started" twice.
    #[test]
    fn the_election_start_is_logged_once() {
        let lines = logged(&[
            LeadershipState::initial("node-a".into()),
            state(Role::Follower, Change::Started),
        ]);
        let started: Vec<_> = lines
            .iter()
            .filter(|l| l.contains("message=election started"))
            .collect();
        assert_eq!(started.len(), 1, "{lines:?}");
    }

    /// A monitor that subscribed after the driver's first turn never sees a
    /// `Started` change; it announces the election on the first state it sees.
    #[test]
    fn a_late_subscriber_announces_the_election_once() {
        let lines = logged(&[
            state(
                Role::Follower,
                Change::Elector(Event::LeaderChanged { leader: None }),
            ),
            state(
                Role::Follower,
                Change::Elector(Event::LeaderChanged { leader: None }),
            ),
        ]);
        let started = lines
            .iter()
            .filter(|l| l.contains("message=election started"))
            .count();
        assert_eq!(started, 1, "{lines:?}");
    }
}
