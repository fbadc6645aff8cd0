//! Giving the lock up: drain, report, then release by compare-and-swap.
//!
//! The order is the point (Pinniped's): first the leader work is cancelled and has
//! ended ([`Event::Draining`], then the host's `work_stopped`), renewals going on
//! meanwhile; then the node reports [`Event::StoppedLeading`] (and `is_leader`
//! turns false); then one compare-and-swap writes an empty holder with
//! `leaseDurationSeconds: 1`, transitions kept. On a conflict it re-reads, and
//! releases only if the fresh record still names it, so a release never evicts a
//! newer holder.

use super::{Campaign, Elector, InFlight, Lead, Phase, Purpose};
use crate::config::LockDelay;
use crate::event::{Event, StopReason, Warning};
use crate::lock::LockError;
use crate::record::Observation;
use crate::time::Instant;
use crate::timer::Timer;

impl Elector {
    /// Starts giving up the lock for `reason`.
    pub(super) fn begin_giving_up(&mut self, reason: StopReason, now: Instant) {
        let Some(h) = &mut self.holding else { return };
        // The budget starts when the release may start: after any lock delay.
        let start = now.max(self.lead_not_before);
        self.timers
            .set(Timer::ReleaseBudget, start + self.config.renew_deadline);
        match &mut h.state {
            Lead::Delayed { then_release } => {
                // Never started leading: nothing to drain or report; release
                // once the lock delay is over.
                then_release.get_or_insert(reason);
            }
            Lead::Leading => {
                h.state = Lead::Draining(reason.clone());
                self.emit(Event::Draining { reason });
            }
            Lead::Draining(_) | Lead::Releasing => {}
        }
    }

    /// The host's leader work ended.
    pub(super) fn on_work_stopped(&mut self, now: Instant) {
        let Some(h) = &mut self.holding else { return };
        let Lead::Draining(reason) = &h.state else {
            return;
        };
        let reason = reason.clone();
        h.state = Lead::Releasing;
        let term = h.term.clone();
        self.emit(Event::StoppedLeading {
            term,
            reason: self.drained_reason(&reason),
        });
        self.after_stop(&reason, now);
    }

    /// The reason reported for a stop that ends a drain begun for `reason`: a
    /// stop the user asked for is a shutdown, whatever else came meanwhile. A
    /// drain begun for a preemption (the coordinator's `preferredHolder`, which
    /// withdrawing the candidacy before the shutdown can bring first) or a
    /// step-down, and ended once [`shutdown`](Elector::shutdown) was asked, is
    /// reported as [`StopReason::ShutDown`]. Only the report changes: the release
    /// follows the reason the drain began for (a preemption or a step-down always
    /// releases). A loss ([`lose`](Elector::lose): another holder, the lock
    /// deleted, the deadline) is not a drain's end: it stops at once and is
    /// reported as what it is, shutting down or not.
    fn drained_reason(&self, reason: &StopReason) -> StopReason {
        match self.phase {
            Phase::Running => reason.clone(),
            Phase::ShuttingDown | Phase::Terminated => StopReason::ShutDown,
        }
    }

    /// After leadership stopped for `reason`: release if due, else let go.
    pub(super) fn after_stop(&mut self, reason: &StopReason, now: Instant) {
        let release = match reason {
            StopReason::ShutDown => self.config.release_on_shutdown,
            _ => true,
        };
        if release {
            self.timers.set(Timer::Attempt, now);
        } else {
            self.holding = None;
            self.timers.stop(Timer::Deadline);
        }
    }

    /// Sends the release write, at the version last seen naming us.
    pub(super) fn send_release(&mut self, now: Instant) {
        let Some(seen) = self.lock.present() else {
            self.let_go(now);
            return;
        };
        #[cfg(feature = "mutants")]
        let check = !self.config.mutants.release_without_fresh_holder_check;
        #[cfg(not(feature = "mutants"))]
        let check = true;
        if check && seen.obs.record.holder != *self.identity() {
            self.let_go(now); // another holds it: no write (FAULTS H4)
            return;
        }
        let expected = seen.obs.version.clone();
        // An empty holder, `leaseDurationSeconds: 1`, transitions and a pending
        // handover kept ([`LockRecord::released`](crate::LockRecord::released)).
        let record = seen.obs.record.released();
        self.send_update(Purpose::Release, expected, record, now);
    }

    /// The answer to the release write `call`.
    pub(super) fn on_release_answer(
        &mut self,
        result: Result<Observation, LockError>,
        call: &InFlight,
        now: Instant,
    ) {
        match result {
            Ok(obs) => {
                self.own.remember(&obs.version);
                self.observe(obs, true, now);
                self.let_go(now);
            }
            Err(LockError::Conflict | LockError::Unknown { .. }) => {
                // Re-read: release again only if the fresh record still names us.
                self.want_read(true);
            }
            Err(LockError::NotFound) if self.absence_overtaken(call) => {
                // The lock was deleted under the release and the watch has
                // shown a newer version since (a coordinator's re-created
                // assignment): keep that view.
                self.let_go(now);
            }
            Err(LockError::NotFound) => {
                self.note_absent(None, now);
                self.let_go(now);
            }
            Err(LockError::Invalid { .. }) => {
                // The API refuses this payload, and a release has no other one to
                // offer (FAULTS A8: never re-sent as it was). The cause is already
                // reported; the stop was reported before the release. Give the
                // release up: the lease expires by itself. Do not take the lock
                // back for one lease duration, so that the release's intent (let
                // another lead) is kept.
                self.let_go(now);
                self.pause_campaign(now);
            }
            Err(_) => self
                .timers
                .set(Timer::Attempt, now + self.config.retry_period),
        }
    }

    /// No longer holding: follow again (after a step-down, not before one lease
    /// duration), or finish a shutdown.
    pub(super) fn let_go(&mut self, now: Instant) {
        self.holding = None;
        self.watch_ahead = None;
        self.timers.stop(Timer::Deadline);
        self.timers.stop(Timer::LockDelay);
        if self.phase == Phase::Running {
            if self.campaign == Campaign::SteppingDown {
                self.pause_campaign(now);
            }
            self.timers.stop(Timer::ReleaseBudget);
            self.timers.set(Timer::Attempt, now);
        }
    }

    /// Shutting down without holding, a read shows the lock still names us at a
    /// version we wrote (or one whose write's outcome we never learned): release it.
    pub(super) fn hold_for_release(&mut self, now: Instant) {
        let Some(seen) = self.lock.present() else {
            return;
        };
        let ours = self.may_be_own(&seen.obs.version, &seen.obs.record);
        self.own.settle_unknown();
        if !ours || !self.config.release_on_shutdown {
            return;
        }
        if self.config.lock_delay == LockDelay::Strict
            && (self.own.create_unknown.is_some() || now < self.lead_not_before)
        {
            // The record may be the one a create of ours made (its outcome unknown),
            // or one taken while the strict lock delay runs: whoever led the lock
            // deleted before that create may still believe, and an empty holder is
            // acquirable at once. Leave it to expire (others time it for a lease
            // from seeing it) rather than release it.
            self.warn(Warning::LeftToExpire);
            return;
        }
        let term = crate::event::Term {
            transitions: seen.obs.record.transitions,
            version: seen.obs.version.clone(),
        };
        self.holding = Some(super::Holding {
            term,
            deadline: now,
            renewed_sent: now,
            state: Lead::Releasing,
        });
        self.timers.set(Timer::Attempt, now);
    }

    /// The release budget (one renew deadline from the start of giving up) is
    /// spent: stop leading if the work never drained, and stop trying to release
    /// (the lease then expires by itself).
    pub(super) fn on_release_budget_spent(&mut self, now: Instant) {
        if let Some(h) = self.holding.take() {
            self.timers.stop(Timer::Deadline);
            if let Lead::Draining(reason) = &h.state {
                let reason = self.drained_reason(reason);
                self.emit(Event::StoppedLeading {
                    term: h.term,
                    reason,
                });
            }
        }
        match self.phase {
            Phase::ShuttingDown => self.terminate(),
            Phase::Running if self.campaign == Campaign::SteppingDown => {
                self.pause_campaign(now);
                self.timers.set(Timer::Attempt, now);
            }
            Phase::Running | Phase::Terminated => {}
        }
    }

    /// Takes no lock for one lease duration from `now`, so that another can take
    /// over (a node on standby takes none anyway).
    fn pause_campaign(&mut self, now: Instant) {
        let until = now + self.config.lease_duration;
        self.campaign = match self.campaign {
            Campaign::Standby => Campaign::Standby,
            Campaign::Paused { until: before } => Campaign::Paused {
                until: before.max(until),
            },
            Campaign::Active | Campaign::SteppingDown => Campaign::Paused { until },
        };
    }
}
