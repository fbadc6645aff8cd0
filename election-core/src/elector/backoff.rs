//! Backing off: how long a candidate waits between attempts, and the hold a
//! failed write puts on the next ones, so that no answer makes a busy loop.

use core::time::Duration;

use super::{Elector, InFlight, Purpose};
use crate::lock::LockError;
use crate::record::Version;
use crate::time::Instant;
use crate::timer::Timer;

/// After a failed write (any error, a timeout or a broken answer included), the
/// next write waits until `until`: a lock that keeps failing the same write at once
/// (a spurious 409, a reset, a create answered 404) would otherwise make a busy
/// loop. A read that finds out what happened goes at once, and once a read shows
/// that the lock moved on past the version the failed write was based on (another
/// writer's write: progress, not a loop), the next write goes at once too, as
/// DESIGN §4 has it (a renew by compare-and-swap after a conflict, a release
/// re-sent, an acquisition after a lost race to a holder that released since).
#[derive(Clone, Debug, Default)]
pub(super) struct WriteHold {
    pub(super) until: Instant,
    /// The version the failed write was based on: the one a compare-and-swap
    /// expected, or the one seen last before a create (`None`: none seen).
    pub(super) expected: Option<Version>,
    /// The last read since showed a newer version (a later read of an older one
    /// takes it back).
    pub(super) moved_on: bool,
}

impl WriteHold {
    /// A read showed `version`.
    pub(super) fn saw(&mut self, version: &Version) {
        self.moved_on = self
            .expected
            .as_ref()
            .is_none_or(|e| version.is_newer_than(e));
    }
}

impl Elector {
    /// A write `call` failed with `e` at `now`: hold the next writes back. A
    /// holder waits one retry period (a server's `Retry-After` if it said one); a
    /// candidate one jittered retry period, doubling while real failures repeat
    /// (refused, forbidden, invalid, a create that finds no place), since the
    /// answers of a working lock (a lost compare-and-swap, already exists, an
    /// unknown outcome) say nothing about its health. An update that finds the
    /// lock gone is no hold: the lock moved on, and a create follows.
    pub(super) fn hold_writes(&mut self, call: &InFlight, e: &LockError, now: Instant) {
        let wait = match e {
            LockError::NotFound if call.purpose != Purpose::Create => return,
            _ if self.holding.is_some() => match e {
                LockError::Transient {
                    retry_after: Some(after),
                    ..
                } => (*after).min(self.config.lease_duration),
                _ => self.config.retry_period,
            },
            LockError::Conflict | LockError::AlreadyExists | LockError::Unknown { .. } => {
                self.jittered_period()
            }
            _ => self.follower_backoff(e),
        };
        let expected = call
            .expected
            .clone()
            .or_else(|| self.lock.last().map(|s| s.obs.version.clone()));
        self.write_hold = WriteHold {
            until: now + wait,
            expected,
            moved_on: false,
        };
    }

    /// Whether a failed write holds the next write back at `self.now` (see
    /// [`WriteHold`]); if so, the next attempt is planned for when it may go.
    pub(super) fn write_held_back(&mut self) -> bool {
        let hold = &self.write_hold;
        if self.now >= hold.until || hold.moved_on {
            return false;
        }
        self.timers.set(Timer::Attempt, hold.until);
        true
    }

    /// A call succeeded: failures no longer count. A poll planned under their
    /// backoff (up to a lease away) comes a plain jittered retry period from
    /// now instead: a poller back from an outage would otherwise follow the
    /// lock blind for that long, and miss a handover meant for it.
    pub(super) fn end_backoff(&mut self, now: Instant) {
        let backed_off = self.failures > 1;
        self.failures = 0;
        if backed_off && let super::Follow::Poll { next } = self.follow {
            let plain = now + self.jittered_period();
            if plain < next {
                self.follow = super::Follow::Poll { next: plain };
            }
        }
    }

    /// `retry_period × [1, 1 + jitter)`, drawn afresh.
    pub(super) fn jittered_period(&mut self) -> Duration {
        // Saturating, so that no configuration can make it panic.
        let factor = 1.0 + self.config.jitter * self.rng.unit();
        crate::config::saturating_mul_f64(self.config.retry_period, factor)
    }

    /// A jittered retry interval ([`Elector::jittered_period`]), longer after
    /// repeated failures (doubling, up to one lease duration).
    pub(super) fn jittered_retry(&mut self) -> Duration {
        let base = self.jittered_period();
        let backoff = 1u32 << self.failures.saturating_sub(1).min(5);
        if self.failures > 1 {
            base.saturating_mul(backoff)
                .min(self.config.lease_duration.max(base))
        } else {
            base
        }
    }

    /// How long a follower waits after a failed call: the jittered retry period,
    /// doubled on repeated failures, and not less than a server's `Retry-After`
    /// (capped at one lease duration).
    pub(super) fn follower_backoff(&mut self, e: &LockError) -> Duration {
        let jittered = self.jittered_retry();
        match e {
            LockError::Transient {
                retry_after: Some(after),
                ..
            } => jittered.max((*after).min(self.config.lease_duration)),
            _ => jittered,
        }
    }
}
