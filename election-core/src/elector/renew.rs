//! Renewing: the elector's side of the holder's decision (`holder.rs`). It
//! gathers what the holder knows ([`Knows`]), classifies what an answer showed
//! ([`RenewAnswer`], [`ReadShowed`]), asks [`holder::decide`], and carries the
//! [`Decision`] out:
//!
//! - renew every renew interval (by default the retry period) from the cached
//!   record, with no read first (client-go's fast path), by compare-and-swap on
//!   the version we wrote;
//! - a conflict is followed by a read (the slow path): another holder ends
//!   leadership at once, our own identity at a version we did not write is a
//!   handover request, our unknown-outcome write landing, or a twin;
//! - leadership ends at its deadline, whatever is in flight: the send time of the
//!   last successful write plus the renew deadline (checked where every handler
//!   begins, `Elector::enter`).

use super::holder::{self, Decision, Knows, Loss, News, ReadShowed, RenewAnswer};
use super::observe::Novelty;
use super::{Elector, Lead, Phase, Purpose};
use crate::config::Mode;
use crate::event::{StopReason, Warning};
use crate::lock::LockError;
use crate::record::{LockRecord, Observation, Stamp};
use crate::time::Instant;
use crate::timer::Timer;

impl Elector {
    /// What the holder knows at `now` with `news` (`None`: it holds nothing).
    fn holder_knows(&self, news: News, now: Instant) -> Option<Knows> {
        let h = self.holding.as_ref()?;
        Some(Knows {
            now,
            deadline: h.deadline,
            releasing: h.state == Lead::Releasing,
            in_flight: self.in_flight.is_some(),
            lock_seen: self.lock.present().is_some(),
            hold_until: self.write_hold.until,
            hold_moved_on: self.write_hold.moved_on,
            renew_every: self.config.renew_every(),
            retry_period: self.config.retry_period,
            news,
        })
    }

    /// A holder decides on `news` ([`holder::decide`]) and carries the decision
    /// out; `obs` is what the answer showed, if it showed a record. Does nothing
    /// unless this node holds the lock.
    pub(super) fn as_holder(&mut self, news: News, obs: Option<Observation>, now: Instant) {
        let Some(knows) = self.holder_knows(news, now) else {
            return;
        };
        let decision = holder::decide(&knows);
        let from_read = !matches!(news, News::Watch(_));
        self.carry_out(decision, obs, from_read, now);
    }

    /// Carries a holder's decision out; `obs` came from a read or a write's
    /// answer (`from_read`), or from the watch.
    fn carry_out(
        &mut self,
        decision: Decision,
        obs: Option<Observation>,
        from_read: bool,
        now: Instant,
    ) {
        #[cfg(feature = "mutants")]
        if let (Decision::StopLeading(Loss::OtherHolder { .. }), Some(obs)) = (&decision, &obs)
            && self.config.mutants.release_without_fresh_holder_check
            && self
                .holding
                .as_ref()
                .is_some_and(|h| h.state == Lead::Releasing)
        {
            // The mutant: release at the version that names another holder.
            self.observe(obs.clone(), from_read, now);
            return self.send_release(now);
        }
        match decision {
            Decision::StopLeading(loss) => self.stop_leading(loss, obs, from_read, now),
            Decision::Idle => {}
            Decision::Renew => self.send_renew(now),
            Decision::Release => self.send_release(now),
            Decision::Hold { until } => self.timers.set(Timer::Attempt, until),
            Decision::Confirm {
                after_conflict,
                slow_path,
            } => {
                if slow_path {
                    self.stats.slow_path += 1;
                }
                self.want_read(after_conflict);
            }
            Decision::Renewed { sent, next } => {
                if let Some(obs) = obs {
                    self.own.remember(&obs.version);
                    self.observe(obs, true, now);
                }
                self.own.settle_unknown();
                self.stats.renews += 1;
                self.extend(sent);
                self.timers.set(Timer::Attempt, next);
            }
            Decision::NotCounted { next } => {
                // Followers saw no change and keep timing the old version, so
                // it must not extend the deadline.
                self.warn(Warning::RenewWithoutNewVersion);
                self.timers.set(Timer::Attempt, next);
            }
            Decision::Landed { sent, next } => {
                // It wrote this transition count; the duration may have been
                // edited since (R13), and the renew that follows writes ours back.
                self.own.settle_unknown();
                if let Some(obs) = obs {
                    self.own.remember(&obs.version);
                    self.observe(obs, true, now);
                }
                self.extend(sent);
                self.timers.set(Timer::Attempt, next);
            }
            Decision::Keep => {
                if let Some(obs) = obs {
                    self.observe(obs, true, now);
                }
                self.timers.set(Timer::Attempt, now);
            }
            Decision::Adopt => {
                if let Some(obs) = obs {
                    self.adopt(obs, now);
                }
                self.timers.set(Timer::Attempt, now);
            }
            Decision::Defer => self.watch_ahead = obs,
        }
    }

    /// Stops leading at once for `loss`, taking in the record that showed it.
    fn stop_leading(
        &mut self,
        loss: Loss,
        obs: Option<Observation>,
        from_read: bool,
        now: Instant,
    ) {
        let holder = || {
            obs.as_ref()
                .map(|o| o.record.holder.clone())
                .unwrap_or_default()
        };
        match loss {
            Loss::DeadlineExceeded => return self.lose(StopReason::DeadlineExceeded, now),
            Loss::LockDeleted => {
                self.lose(StopReason::LockDeleted, now);
                self.note_absent(None, now);
            }
            Loss::OtherHolder { after_conflict } => {
                let holder = holder();
                let reason = if after_conflict {
                    StopReason::LostConflict { holder }
                } else {
                    StopReason::ObservedOtherHolder { holder }
                };
                self.lose(reason, now);
            }
            Loss::Reassigned => {
                // A renew of unknown outcome can no longer land: it was a
                // compare-and-swap on a version before this one.
                self.own.settle_unknown();
                self.lose(StopReason::Reassigned, now);
            }
            Loss::IdentityCollision => {
                let id = self.identity().clone();
                self.warn(Warning::IdentityCollision(id));
                self.lose(StopReason::IdentityCollision, now);
            }
        }
        if let Some(obs) = obs {
            self.observe(obs, from_read, now);
        }
        if loss == Loss::IdentityCollision {
            self.own.foreign_self_versions = self.own.foreign_self_versions.saturating_add(1);
        }
        self.timers.set(Timer::Attempt, now);
    }

    /// Sends a renew from the cached record.
    fn send_renew(&mut self, now: Instant) {
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
        let (answer, obs) = match result {
            Ok(obs)
                if self
                    .lock
                    .present()
                    .is_some_and(|s| s.obs.version == obs.version) =>
            {
                (RenewAnswer::SameVersion, None)
            }
            Ok(obs) => (RenewAnswer::NewVersion, Some(obs)),
            Err(LockError::Conflict) => (RenewAnswer::Conflict, None),
            Err(LockError::NotFound) => (RenewAnswer::NotFound, None),
            Err(LockError::Unknown { .. }) => (RenewAnswer::Unknown, None),
            Err(_) => (RenewAnswer::Failed, None),
        };
        let sent = call.sent_at;
        self.as_holder(News::Renew { sent, answer }, obs, now);
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
        let showed = self.read_showed(&obs, after_conflict);
        self.as_holder(News::Read(showed), Some(obs), now);
        if self.phase == Phase::Terminated {
            self.timers.stop(Timer::Attempt);
        }
    }

    /// What a holder's read shows, against what it holds.
    fn read_showed(&self, obs: &Observation, after_conflict: bool) -> ReadShowed {
        let ours_now = self
            .lock
            .present()
            .is_some_and(|s| s.obs.version == obs.version);
        if ours_now {
            return ReadShowed::VersionHeld;
        }
        if obs.record.holder != *self.identity() {
            return ReadShowed::OtherHolder { after_conflict };
        }
        // Our identity, at a version we did not write (or an older echo of ours).
        if self.own.wrote(&obs.version) {
            // A stale read of an older write of ours: the lock moved on since.
            ReadShowed::OlderOwnWrite
        } else if self.only_foreign_fields_changed(obs) {
            // Someone else rewrote the record without touching what a holder
            // stamps (a label or annotation added, a handover request, a field we
            // do not own edited): our last write is still the last one of a
            // holder, so the term goes on. A twin cannot look like this: it
            // stamps its own renew time, and it could not share our acquire time
            // and transitions (every acquisition stamps a new acquire time and
            // counts one more transition).
            ReadShowed::ForeignEdit
        } else if self.config.mode == Mode::Coordinated && self.is_assignment(&obs.record) {
            // The coordinator's new assignment, not a twin's write nor one of
            // ours of unknown outcome (a holder stamps an acquire time, and our
            // renews keep ours): our term is over, the assignment is claimed as
            // a new one.
            ReadShowed::Assignment
        } else if self.own.may_have_written(&obs.version, &obs.record, None)
            && let Some(sent) = self.own.unknown_sent
        {
            // A write of ours whose outcome we did not learn landed: it counts
            // from the earliest such send time.
            ReadShowed::UnknownWriteLanded { sent }
        } else {
            ReadShowed::Twin
        }
    }

    /// Adopts a third party's edit of our record (`ReadShowed::ForeignEdit`):
    /// its version is taken as ours, and the renew that follows is a
    /// compare-and-swap on it; the deadline moves only when that write
    /// succeeds. A handover request this holder gives way to begins giving up.
    fn adopt(&mut self, obs: Observation, now: Instant) {
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
