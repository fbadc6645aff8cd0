//! Health (feature `health`): liveness with client-go's healthz meaning, readiness
//! per role, and a JSON status.
//!
//! **Liveness** fails only when this node believes it leads (its last published
//! state says Leader or Draining) but the clock is past its leadership deadline
//! plus a tolerance: the driver should have stepped down by then, so it is wedged
//! (a hung call it cannot time out, a blocked thread). The deadline is the send
//! time of the last successful renew plus the renew deadline, so this fails after
//! `renew_deadline + tolerance` without a renew, a little earlier than client-go's
//! `lease_duration + timeout` and for the same reason. A standby is never
//! unhealthy, and neither is a node that cannot reach the API server (restarting
//! it would not help). It also fails when the leader work stops beating its
//! [`Heartbeat`] for longer than the stall limit (docs/faults.md H6), if one is set: only
//! while the leader work of the current term runs (the node leads and is not
//! draining, and the work has not ended by itself), and measured from the later of
//! the last beat and the start of the term (as this health first saw it), so that a
//! beat from an earlier term never counts, nor does a stall in a term where the
//! work was not running. Attach the [`Monitor`] ([`Health::monitor`]) so that work
//! that ended by itself is known even after later states.
//!
//! **Readiness** is the user's choice per role ([`ReadyWhen`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use election_core::Event;
use election_core::{Instant, Role, Term};
use election_driver::Change;
use serde::Serialize;

use crate::monitor::Monitor;
use crate::view::LeadershipView;

/// The default tolerance past the deadline before liveness fails.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(20);

/// Why liveness fails.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unhealthy {
    /// This node believes it leads but is `overdue` past its deadline plus the
    /// tolerance: the driver is wedged. Restart the process.
    #[error("leader has not renewed: {overdue:?} past its deadline plus tolerance")]
    NotRenewed {
        /// How far past deadline plus tolerance.
        overdue: Duration,
    },
    /// The leader work has not beaten its heartbeat for `silent` (more than the
    /// stall limit) while this node leads. Restart the process.
    #[error("leader work stalled: no heartbeat for {silent:?}")]
    WorkStalled {
        /// Time since the last heartbeat.
        silent: Duration,
    },
}

/// Why readiness fails.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NotReady {
    /// The role does not match what readiness asks for.
    #[error("not ready: this node is {0}")]
    Role(&'static str),
    /// The election has ended.
    #[error("not ready: the election has ended")]
    Ended,
}

/// When a node is ready.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadyWhen {
    /// Whatever the role, while the election runs (active–active serving).
    #[default]
    Running,
    /// Only while leading now (a Service that should route to the leader only).
    Leader,
    /// Only while not leading (standbys serve reads, the leader does work).
    Standby,
}

/// A heartbeat for the leader work: call [`Heartbeat::beat`] at the start of each
/// term and then regularly; with [`Health::heartbeat`], liveness fails if it stays
/// silent longer than the stall limit while this node leads.
#[derive(Clone)]
pub struct Heartbeat {
    last: Arc<AtomicU64>,
    clock: Arc<dyn Fn() -> Instant + Send + Sync>,
}

impl core::fmt::Debug for Heartbeat {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Heartbeat")
            .field("last", &self.last.load(Ordering::Relaxed))
            .finish()
    }
}

impl Default for Heartbeat {
    fn default() -> Self {
        Self::new()
    }
}

impl Heartbeat {
    /// A heartbeat on the process's monotonic clock, beaten now. Clones share it:
    /// give one to the leader work and one to [`Health::heartbeat`].
    pub fn new() -> Self {
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let epoch = *EPOCH.get_or_init(std::time::Instant::now);
        Self::with_clock(move || {
            Instant::from_nanos(u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
        })
    }

    /// A heartbeat on the given clock (a test's virtual clock), beaten now.
    pub fn with_clock(clock: impl Fn() -> Instant + Send + Sync + 'static) -> Self {
        let clock: Arc<dyn Fn() -> Instant + Send + Sync> = Arc::new(clock);
        Heartbeat {
            last: Arc::new(AtomicU64::new(clock().as_nanos())),
            clock,
        }
    }

    /// Records that the leader work made progress now.
    pub fn beat(&self) {
        self.last
            .store((self.clock)().as_nanos(), Ordering::Release);
    }

    /// Time since the last beat.
    pub fn silent(&self) -> Duration {
        (self.clock)()
            .saturating_duration_since(Instant::from_nanos(self.last.load(Ordering::Acquire)))
    }
}

/// The health of one node (see the [module docs](self)).
pub struct Health<V> {
    view: V,
    monitor: Option<Arc<Monitor>>,
    tolerance: Duration,
    ready_when: ReadyWhen,
    heartbeat: Option<(Heartbeat, Duration)>,
    /// The current term and when (on the heartbeat's clock) it was first seen.
    term_seen: Mutex<Option<(Term, u64)>>,
}

impl<V> core::fmt::Debug for Health<V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Health")
            .field("tolerance", &self.tolerance)
            .field("ready_when", &self.ready_when)
            .finish_non_exhaustive()
    }
}

/// The JSON status served at `/status`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Status {
    /// This node's identity.
    pub identity: String,
    /// The role, as the last published state says (`Leader`, `Follower`, …).
    pub role: String,
    /// Whether this node leads now (time-bounded).
    pub is_leader: bool,
    /// The holder as this node last saw it.
    pub holder: Option<String>,
    /// The term while leading (`<transitions>@<version>`).
    pub term: Option<String>,
    /// Seconds left before the leadership deadline (negative once past), while
    /// the driver says this node leads.
    pub deadline_in_secs: Option<f64>,
    /// Unix time (seconds) of the last successful renew, if a monitor is attached.
    pub last_renew_unix_secs: Option<f64>,
    /// The last error reported, if a monitor is attached.
    pub last_error: Option<String>,
    /// Why the last leadership ended.
    pub last_stop: Option<String>,
    /// The liveness verdict.
    pub healthy: bool,
    /// Why unhealthy.
    pub unhealthy_reason: Option<String>,
}

fn unix_secs(t: SystemTime) -> Option<f64> {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs_f64())
}

impl<V: LeadershipView + Clone> Health<V> {
    /// Health of the node seen through `view`, with [`DEFAULT_TOLERANCE`].
    pub fn new(view: V) -> Self {
        Health {
            view,
            monitor: None,
            tolerance: DEFAULT_TOLERANCE,
            ready_when: ReadyWhen::default(),
            heartbeat: None,
            term_seen: Mutex::new(None),
        }
    }

    /// How long past the deadline a believed leader may be before liveness fails.
    #[must_use]
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// When readiness holds.
    #[must_use]
    pub fn ready_when(mut self, when: ReadyWhen) -> Self {
        self.ready_when = when;
        self
    }

    /// A monitor to take the last renew and last error from, for the status.
    #[must_use]
    pub fn monitor(mut self, monitor: Arc<Monitor>) -> Self {
        self.monitor = Some(monitor);
        self
    }

    /// Watches the leader work's `heartbeat`: liveness fails when it is silent
    /// longer than `stall` while the leader work of the current term runs
    /// (measured from the later of the last beat and the term's start). The work
    /// should beat more often than `stall`.
    #[must_use]
    pub fn heartbeat(mut self, heartbeat: Heartbeat, stall: Duration) -> Self {
        self.heartbeat = Some((heartbeat, stall));
        self
    }

    /// The view this health reads.
    pub fn view(&self) -> &V {
        &self.view
    }

    /// Liveness (see the [module docs](self)).
    pub fn liveness(&self) -> Result<(), Unhealthy> {
        if !self.view.believes_leading() {
            return Ok(());
        }
        let now = self.view.now();
        if let Some(deadline) = self.view.deadline() {
            let limit = deadline.saturating_add(self.tolerance);
            if now > limit {
                return Err(Unhealthy::NotRenewed {
                    overdue: now.saturating_duration_since(limit),
                });
            }
        }
        if let Some((heartbeat, stall)) = &self.heartbeat
            && let Some(silent) = self.work_silence(heartbeat)
            && silent > *stall
        {
            return Err(Unhealthy::WorkStalled { silent });
        }
        Ok(())
    }

    /// How long ago (ns) `term` started: from the state that started it, else from
    /// the monitor, else 0 (first seen now, which only makes the check later).
    fn term_age(&self, state: &election_driver::LeadershipState, term: &Term) -> u64 {
        let age = if matches!(&state.change, Change::Elector(Event::StartedLeading { term: t }) if t == term)
        {
            Some(self.view.now().saturating_duration_since(state.at))
        } else {
            self.monitor
                .as_ref()
                .and_then(|m| m.term_started(&term.to_string()))
                .map(|at| at.elapsed())
        };
        age.map_or(0, |a| u64::try_from(a.as_nanos()).unwrap_or(u64::MAX))
    }

    /// How long the leader work of the current term has been silent, while it
    /// runs; `None` when it does not (not leading, draining, or ended by itself).
    fn work_silence(&self, heartbeat: &Heartbeat) -> Option<Duration> {
        let state = self.view.state();
        let (Role::Leader, Some(term)) = (state.role, &state.term) else {
            return None;
        };
        let ended = matches!(&state.change, Change::WorkEnded { term: t } if t == term)
            || self.monitor.as_ref().is_some_and(|m| {
                m.snapshot().work_ended_term.as_deref() == Some(term.to_string().as_str())
            });
        if ended {
            return None;
        }
        let now = (heartbeat.clock)().as_nanos();
        let start = {
            let mut seen = self.term_seen.lock().unwrap_or_else(|e| e.into_inner());
            match &*seen {
                Some((t, at)) if t == term => *at,
                _ => {
                    let at = now.saturating_sub(self.term_age(&state, term));
                    *seen = Some((term.clone(), at));
                    at
                }
            }
        };
        let last = heartbeat.last.load(Ordering::Acquire).max(start);
        Some(Duration::from_nanos(now.saturating_sub(last)))
    }

    /// Readiness for the configured role.
    pub fn readiness(&self) -> Result<(), NotReady> {
        let state = self.view.state();
        if matches!(state.role, election_core::Role::Terminated) {
            return Err(NotReady::Ended);
        }
        let leads = self.view.leads_with_margin(Duration::ZERO);
        match self.ready_when {
            ReadyWhen::Running => Ok(()),
            ReadyWhen::Leader if leads => Ok(()),
            ReadyWhen::Leader => Err(NotReady::Role("not the leader")),
            ReadyWhen::Standby if !leads => Ok(()),
            ReadyWhen::Standby => Err(NotReady::Role("the leader")),
        }
    }

    /// The status, for humans and dashboards.
    pub fn status(&self) -> Status {
        let state = self.view.state();
        let now = self.view.now();
        let deadline_in_secs = self.view.deadline().map(|d| {
            if d >= now {
                d.saturating_duration_since(now).as_secs_f64()
            } else {
                -now.saturating_duration_since(d).as_secs_f64()
            }
        });
        let snap = self
            .monitor
            .as_ref()
            .map(|m| m.snapshot())
            .unwrap_or_default();
        let live = self.liveness();
        Status {
            identity: state.identity.to_string(),
            role: format!("{:?}", state.role),
            is_leader: self.view.leads_with_margin(Duration::ZERO),
            holder: state.leader.as_deref().map(str::to_owned),
            term: state.term.as_ref().map(ToString::to_string),
            deadline_in_secs,
            last_renew_unix_secs: snap.last_renew.and_then(unix_secs),
            last_error: snap.last_error,
            last_stop: snap.last_stop,
            healthy: live.is_ok(),
            unhealthy_reason: live.err().map(|e| e.to_string()),
        }
    }

    /// The status as JSON.
    pub fn status_json(&self) -> String {
        serde_json::to_string(&self.status())
            .unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
    }
}
