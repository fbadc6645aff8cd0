//! The elector's named timers: deadlines, not ticks.

use crate::time::Instant;

/// A timer of the elector. `poll_timeout` is the earliest set one;
/// `handle_timeout` fires the expired ones in this order (safety first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// The leadership deadline: last successful write's send time + renew deadline.
    Deadline,
    /// The in-flight lock call's request timeout.
    Request,
    /// The end of the strict lock delay, when a node that created the lock may lead.
    LockDelay,
    /// The end of the release budget during a shutdown or step-down.
    ReleaseBudget,
    /// The next lock call: a renew, a poll, an acquisition at expiry, a retry.
    Attempt,
}

impl Timer {
    pub(crate) const ALL: [Timer; 5] = [
        Timer::Deadline,
        Timer::Request,
        Timer::LockDelay,
        Timer::ReleaseBudget,
        Timer::Attempt,
    ];
}

/// When each [`Timer`] fires, if set.
#[derive(Clone, Debug, Default)]
pub(crate) struct TimerTable {
    at: [Option<Instant>; Timer::ALL.len()],
}

impl TimerTable {
    pub(crate) fn set(&mut self, timer: Timer, at: Instant) {
        self.at[timer as usize] = Some(at);
    }

    pub(crate) fn stop(&mut self, timer: Timer) {
        self.at[timer as usize] = None;
    }

    pub(crate) fn get(&self, timer: Timer) -> Option<Instant> {
        self.at[timer as usize]
    }

    /// The earliest set timer.
    pub(crate) fn next_timeout(&self) -> Option<Instant> {
        self.at.iter().flatten().min().copied()
    }

    /// Clears `timer` and says whether it had expired at `now`. `handle_timeout`
    /// asks once per timer, in firing order, so a timer re-set by its own handler
    /// fires on the next call, never in a loop.
    pub(crate) fn take_if_expired(&mut self, timer: Timer, now: Instant) -> bool {
        let due = self.get(timer).is_some_and(|at| at <= now);
        if due {
            self.stop(timer);
        }
        due
    }
}
