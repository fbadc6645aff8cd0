//! The driver's side of the lock's watch: one state, each with the data it
//! needs, and the rules that move between them. The driver does the effects
//! (starting the lock's watch, telling the elector, logging); this file decides.
//!
//! - **Untried**: started at the first turn, from no version.
//! - **Unsupported**: the lock has no watch; the elector polls.
//! - **Active**: delivering. Restarted from the last version observed when it
//!   has said nothing for the idle limit (docs/faults.md W1: silence never
//!   means "unchanged"), or when a read answers a newer version than it
//!   delivered (it fell behind).
//! - **Broken**: it ended or failed; resumed after a backoff (from the retry
//!   period, doubling per failure in a row, up to a lease duration). From the
//!   last version observed, except after two failures in a row or when a
//!   resumed watch failed before delivering anything (its version may be gone,
//!   410 Gone: docs/faults.md W2): then afresh.

use std::time::Duration;

use election_core::{Config, Instant, Version, WatchEvent, WatchStream};

/// Where the next watch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StartFrom {
    /// From no version: the current state first.
    Fresh,
    /// From the last version the elector observed.
    LastObserved,
}

/// The watch and how long it may stay silent.
pub(crate) struct Watch {
    state: State,
    /// How long an active watch may be silent before it is restarted.
    idle: Duration,
}

enum State {
    Untried,
    Unsupported,
    Active(Active),
    Broken {
        /// When to start the next one.
        at: Instant,
        /// Failures in a row, for the backoff.
        failures: u32,
        /// A resumed watch failed before delivering anything: start afresh.
        fresh_next: bool,
    },
}

struct Active {
    stream: WatchStream,
    /// The last version delivered, or resumed from.
    seen: Option<Version>,
    /// When it started or last delivered.
    heard: Instant,
    /// It resumed from a version and has delivered nothing yet.
    unproven: bool,
    /// Failures in a row before it, reset when it delivers.
    failures: u32,
}

impl Watch {
    /// A watch not yet started, restarted after `idle` of silence.
    pub(crate) fn new(idle: Duration) -> Self {
        Watch {
            state: State::Untried,
            idle,
        }
    }

    /// Where a watch should start now, if one is due: the first, or the next
    /// after a break once its backoff has passed.
    pub(crate) fn due(&self, now: Instant) -> Option<StartFrom> {
        match &self.state {
            State::Untried => Some(StartFrom::Fresh),
            State::Broken {
                at,
                failures,
                fresh_next,
            } if *at <= now => Some(if *failures >= 2 || *fresh_next {
                StartFrom::Fresh // resuming from our version keeps failing
            } else {
                StartFrom::LastObserved
            }),
            _ => None,
        }
    }

    /// Whether the active watch has said nothing for the idle limit.
    pub(crate) fn silent_too_long(&self, now: Instant) -> bool {
        matches!(&self.state, State::Active(a) if now.saturating_duration_since(a.heard) >= self.idle)
    }

    /// The lock's answer to a watch started from `from` at `now`: its stream,
    /// or `None` for a lock that cannot watch. Whether a watch is active.
    pub(crate) fn started(
        &mut self,
        stream: Option<WatchStream>,
        from: Option<Version>,
        now: Instant,
    ) -> bool {
        let failures = match &self.state {
            State::Active(a) => a.failures,
            State::Broken { failures, .. } => *failures,
            State::Untried | State::Unsupported => 0,
        };
        self.state = match stream {
            None => State::Unsupported,
            Some(stream) => State::Active(Active {
                stream,
                unproven: from.is_some(),
                seen: from,
                heard: now,
                failures,
            }),
        };
        matches!(self.state, State::Active(_))
    }

    /// The active watch delivered `event` at `now`.
    pub(crate) fn delivered(&mut self, event: &WatchEvent, now: Instant) {
        if let State::Active(a) = &mut self.state {
            a.failures = 0;
            a.heard = now;
            a.unproven = false;
            if let WatchEvent::Changed(obs) = event {
                a.seen = Some(obs.version.clone());
            }
        }
    }

    /// The watch ended (`failed`: with an error) at `now`; returns the backoff
    /// before the next one.
    pub(crate) fn broke(&mut self, failed: bool, now: Instant, config: &Config) -> Duration {
        let (failures, unproven) = match &self.state {
            State::Active(a) => (a.failures, a.unproven),
            State::Broken { failures, .. } => (*failures, false),
            State::Untried | State::Unsupported => (0, false),
        };
        let failures = failures.saturating_add(1);
        let backoff = config
            .retry_period
            .saturating_mul(1 << failures.saturating_sub(1).min(6))
            .min(config.lease_duration);
        self.state = State::Broken {
            at: now + backoff,
            failures,
            // A resumed watch that fails before delivering anything: its version
            // may be gone (410 Gone, which some backends report as another
            // error), so the next one starts afresh (docs/faults.md W2).
            fresh_next: unproven && failed,
        };
        backoff
    }

    /// Whether a read answering `version` shows the active watch behind: it
    /// delivered (or resumed from) an older version, and a healthy watch would
    /// have delivered this one by the time a read returns it (give or take a race).
    pub(crate) fn is_behind(&self, version: &Version) -> bool {
        match &self.state {
            State::Active(a) => a
                .seen
                .as_ref()
                .is_some_and(|seen| version.is_newer_than(seen)),
            _ => false,
        }
    }

    /// When the driver must look at the watch again (a restart due, or the
    /// idle limit), if ever; never before `soonest`.
    pub(crate) fn wake_at(&self, soonest: Instant) -> Option<Instant> {
        match &self.state {
            State::Broken { at, .. } => Some(*at),
            State::Active(a) => Some((a.heard + self.idle).max(soonest)),
            State::Untried | State::Unsupported => None,
        }
    }

    /// The active watch's stream, to poll.
    pub(crate) fn stream(&mut self) -> Option<&mut WatchStream> {
        match &mut self.state {
            State::Active(a) => Some(&mut a.stream),
            _ => None,
        }
    }
}
