//! Renewing: how a holder keeps the lock, and when it stops.
//!
//! - renew every renew interval (by default the retry period) from the cached
//!   record, with no read first
//!   (client-go's fast path), by compare-and-swap on the version we wrote;
//! - a conflict is followed by a read (the slow path): another holder ends
//!   leadership at once, our own identity at a version we did not write is a
//!   handover request, our unknown-outcome write landing, or a twin;
//! - leadership ends at its deadline, whatever is in flight: the send time of the
//!   last successful write plus the renew deadline.

use super::observe::Novelty;
use super::{Elector, Lead, Phase, Purpose};
use crate::config::Mode;
use crate::event::{StopReason, Warning};
use crate::lock::LockError;
use crate::record::{LockRecord, Observation, Stamp};
use crate::time::Instant;
use crate::timer::Timer;
use core::time::Duration;

impl Elector {
    /// Sends a renew from the cached record.
    pub(super) fn renew(&mut self, now: Instant) {
        let Some(h) = &self.holding else { return };
        if h.state == Lead::Releasing {
            self.send_release(now);
            return;
        }
        let Some(seen) = self.lock.present() else {
            return;
        };
        let expected = seen.obs.version.clone();
        let mut record = seen.obs.record.clone();
        record.renew_time = Stamp::Now;
        record.lease_duration_secs = Some(self.config.lease_duration_secs());
        record.priority = self.config.priority;
        if !self.honoured_handover(&record) {
            record.handover = None;
        }
        self.send_update(Purpose::Renew, expected, record, now);
    }

    /// The answer to a renew.
    pub(super) fn on_renew_answer(
        &mut self,
        call: super::InFlight,
        result: Result<Observation, LockError>,
        now: Instant,
    ) {
        if self.holding.is_none() {
            // Leadership ended (deadline) while the renew was in flight; a late
            // success never revives the term: it is only an observation of our write.
            match result {
                Ok(obs) => {
                    self.own.remember(&obs.version);
                    self.observe(obs, true, now);
                    self.timers.set(Timer::Attempt, now);
                }
                Err(_) => self.want_read(false),
            }
            return;
        }
        match result {
            Ok(obs)
                if self
                    .lock
                    .present()
                    .is_some_and(|s| s.obs.version == obs.version) =>
            {
                // The write made no new version (a server that skips identical
                // writes): followers saw no change and keep timing the old one, so
                // it must not extend the deadline. Renew again at the next period.
                self.warn(Warning::RenewWithoutNewVersion);
                self.schedule_renew(call.sent_at, self.config.retry_period, now);
            }
            Ok(obs) => {
                self.own.remember(&obs.version);
                self.observe(obs, true, now);
                self.own.settle_unknown();
                self.stats.renews += 1;
                self.extend(call.sent_at);
                self.schedule_renew(call.sent_at, self.config.renew_every(), now);
            }
            Err(LockError::Conflict) => {
                self.stats.slow_path += 1;
                self.want_read(true);
            }
            Err(LockError::NotFound) => {
                self.lose(StopReason::LockDeleted, now);
                self.note_absent(None, now);
                self.timers.set(Timer::Attempt, now);
            }
            Err(LockError::Unknown { .. }) => {
                // The write may have landed: find out (leadership is not extended).
                self.stats.slow_path += 1;
                self.want_read(false);
            }
            Err(_) => self.retry_within_deadline(self.write_hold.until),
        }
    }

    /// Schedules the next renew attempt, no later than the deadline allows.
    fn retry_within_deadline(&mut self, at: Instant) {
        let cap = self.holding.as_ref().map_or(at, |h| h.deadline);
        self.timers.set(Timer::Attempt, at.min(cap));
    }

    /// The next renew: `after` the last one was sent (the renew interval after a
    /// success, the retry period after a renew that did not count). A holder
    /// whose work stopped while the renew was in flight releases at once.
    fn schedule_renew(&mut self, sent: Instant, after: Duration, now: Instant) {
        let releasing = self
            .holding
            .as_ref()
            .is_some_and(|h| h.state == Lead::Releasing);
        let at = if releasing {
            now
        } else {
            (sent + after).max(now)
        };
        self.timers.set(Timer::Attempt, at);
    }

    /// A successful write sent at `sent` moves the deadline.
    fn extend(&mut self, sent: Instant) {
        let Some(h) = &mut self.holding else { return };
        let deadline = sent + self.config.renew_deadline;
        if deadline > h.deadline {
            h.deadline = deadline;
            h.renewed_sent = sent;
        }
        let deadline = h.deadline;
        self.timers.set(Timer::Deadline, deadline);
    }

    /// A read while holding: is the lock still ours?
    pub(super) fn confirm_holding(&mut self, obs: Observation, after_conflict: bool, now: Instant) {
        let ours_now = self
            .lock
            .present()
            .is_some_and(|s| s.obs.version == obs.version);
        if ours_now {
            self.observe(obs, true, now);
            self.timers.set(Timer::Attempt, now);
            return;
        }
        let me = self.identity().clone();
        if obs.record.holder != me {
            let holder = obs.record.holder.clone();
            let reason = if after_conflict {
                StopReason::LostConflict { holder }
            } else {
                StopReason::ObservedOtherHolder { holder }
            };
            self.lose(reason, now);
            self.observe(obs, true, now);
            self.timers.set(Timer::Attempt, now);
            return;
        }
        // Our identity, at a version we did not write (or an older echo of ours).
        if self.own.wrote(&obs.version) {
            // A stale read of an older write of ours: the lock moved on since. Read again.
            self.want_read(false);
            return;
        }
        if self.only_foreign_fields_changed(&obs) {
            // Someone else rewrote the record without touching what a holder
            // stamps (a label or annotation added, a handover request, a field we
            // do not own edited): our last write is still the last one of a
            // holder, so the term goes on. Adopt the version and renew at once by
            // compare-and-swap on it; the deadline moves only when that write
            // succeeds. A twin cannot look like this: it stamps its own renew
            // time, and it could not share our acquire time and transitions (every
            // acquisition stamps a new acquire time and counts one more transition).
            let is_request = self.is_handover_request(&obs);
            // An unknown-outcome write of ours did not land before this version
            // (it would have stamped a new renew time), and cannot land after it
            // (it was a compare-and-swap on an older version).
            self.own.settle_unknown();
            self.own.remember(&obs.version);
            let novelty = self.observe(obs, true, now);
            if is_request && novelty == Novelty::New && self.honoured_handover_seen() {
                let by = self.handover_target().unwrap_or_default();
                self.begin_giving_up(StopReason::Preempted { by }, now);
            }
            self.timers.set(Timer::Attempt, now);
        } else if self.config.mode == Mode::Coordinated && self.is_assignment(&obs.record) {
            // The coordinator's new assignment, not a twin's write nor one of
            // ours of unknown outcome (a holder stamps an acquire time, and our
            // renews keep ours): our term is over, the assignment is claimed as
            // a new one. A renew of unknown outcome can no longer land: it was a
            // compare-and-swap on a version before this one.
            self.own.settle_unknown();
            self.lose(StopReason::Reassigned, now);
            self.observe(obs, true, now);
            self.timers.set(Timer::Attempt, now);
        } else if self.own.may_have_written(&obs.version, &obs.record, None)
            && let Some(sent) = self.own.take_unknown()
        {
            // A write of ours whose outcome we did not learn landed (it wrote
            // this transition count; the duration may have been edited since,
            // R13, and the renew that follows writes ours back): it counts from
            // the earliest such send time.
            self.own.remember(&obs.version);
            self.observe(obs, true, now);
            self.extend(sent);
            self.schedule_renew(sent, self.config.renew_every(), now);
        } else {
            let id = me.clone();
            self.warn(Warning::IdentityCollision(id));
            self.lose(StopReason::IdentityCollision, now);
            self.observe(obs, true, now);
            self.own.foreign_self_versions = self.own.foreign_self_versions.saturating_add(1);
            self.timers.set(Timer::Attempt, now);
        }
        if self.phase == Phase::Terminated {
            self.timers.stop(Timer::Attempt);
        }
    }

    /// Whether `obs` is our last record (as the lock stored it, with the stamps
    /// the backend put) with only fields that a holder does not stamp changed:
    /// same holder, acquire time, renew time and transitions. What changed is then
    /// a third party's edit (labels, annotations and other metadata are not part of
    /// the record, so an edit of those shows as a new version of an identical
    /// record), or a handover request. A twin's renew would have stamped a new
    /// renew time; a twin's acquisition a new acquire time and transition count.
    pub(super) fn only_foreign_fields_changed(&self, obs: &Observation) -> bool {
        self.lock
            .present()
            .is_some_and(|seen| keeps_stamps(&seen.obs.record, &obs.record))
    }

    /// Ends leadership if its deadline passed.
    pub(super) fn check_deadline(&mut self, now: Instant) {
        let Some(h) = &self.holding else { return };
        if now < h.deadline || h.state == Lead::Releasing {
            return;
        }
        self.lose(StopReason::DeadlineExceeded, now);
    }
}

/// Whether `new` keeps every field a holder stamps in `old`: holder, acquire
/// time, renew time and transitions. Only a third party's edit of `old` (or a
/// handover request) looks like this.
pub(super) fn keeps_stamps(old: &LockRecord, new: &LockRecord) -> bool {
    new.holder == old.holder
        && new.renew_time == old.renew_time
        && new.acquire_time == old.acquire_time
        && new.transitions == old.transitions
}
