//! Campaigning: when a follower creates, takes, or asks for the lock.
//!
//! - absent lock: create it (transitions 0, or one more than the largest count seen
//!   if it was seen before); with the strict lock delay, the creator waits one
//!   lease duration from its create's answer before it leads (the lock may have
//!   been deleted under a live leader just before the create was served);
//! - released (empty holder, duration 1 s or none): take it at once, by
//!   compare-and-swap on the version seen, unless a handover names another
//!   candidate and one lease has not passed; a holder emptied otherwise (by hand)
//!   is timed like a held lease;
//! - held by another: take it once expired by local observation, after a read at
//!   or past the expiry shows the same version (re-read before any takeover);
//! - a higher priority: ask for a handover (default) or steal;
//! - on standby ([`Elector::set_standby`]): none of these; follow and time only.

use super::priority::outranks;
use super::{Campaign, Elector, Follow, Holding, Lead, LockView, Phase, Purpose, ReadDue, Seen};
use crate::action::{Action, WriteId};
use crate::config::{LockDelay, Mode, Preemption};
use crate::event::{Event, Term, Warning};
use crate::lock::LockError;
use crate::record::{LockRecord, MAX_TRANSITIONS, Observation, Stamp, Version};
use crate::time::Instant;
use crate::timer::Timer;

/// A campaigning follower's next step.
pub(super) enum Move {
    /// Create the absent lock.
    Create,
    /// Write this record over the version seen, for this purpose.
    Write(Purpose, Version, LockRecord),
    /// Read the lock.
    Read,
    /// Nothing to do before this instant.
    WaitUntil(Instant),
    /// Nothing to do before an input (a watch event) comes.
    Idle,
}

impl Elector {
    /// A follower's attempt: read, create, acquire, ask, or wait.
    pub(super) fn campaign(&mut self, now: Instant) {
        match self.campaign {
            Campaign::Standby => return self.stand_by(now),
            Campaign::Paused { until } if now < until => {
                return self.timers.set(Timer::Attempt, until);
            }
            Campaign::Active | Campaign::SteppingDown | Campaign::Paused { .. } => {}
        }
        if self.read_due.is_some() {
            self.send_read(now);
            return;
        }
        if self.write_held_back() {
            return;
        }
        match self.next_move(now) {
            Move::Create => {
                let record = self.leading_record(None, self.create_transitions());
                self.send(
                    Purpose::Create,
                    |n| Action::Create {
                        op: WriteId(n),
                        record,
                    },
                    now,
                );
            }
            Move::Write(purpose, version, record) => {
                self.send_update(purpose, version, record, now);
            }
            Move::Read => self.send_read(now),
            Move::WaitUntil(at) => self.timers.set(Timer::Attempt, at),
            Move::Idle => {}
        }
    }

    /// What a campaigning follower does next with the lock as it knows it.
    fn next_move(&self, now: Instant) -> Move {
        if self.config.mode == Mode::Coordinated {
            return self.coordinated_move(now);
        }
        if matches!(self.lock, LockView::Absent { .. }) {
            return Move::Create;
        }
        let Some(seen) = self.lock.present() else {
            return Move::Read;
        };
        let rec = &seen.obs.record;
        let me = self.identity();
        let expiry = self.expiry();

        if self.may_be_own(&seen.obs.version, rec) {
            // Our own record (a late write of ours, or one whose outcome we did not
            // learn): take it back by compare-and-swap, as a new term.
            return self.take(Purpose::Acquire, seen);
        }
        if rec.is_released() && now >= expiry {
            return self.take(Purpose::Acquire, seen);
        }
        if rec.is_held() && rec.holder != *me && outranks(self.config.priority, rec.priority) {
            match self.config.preemption {
                Preemption::Steal => return self.take(Purpose::Steal, seen),
                Preemption::Handover if self.should_ask(rec) => {
                    let record = self.handover_request(rec);
                    return Move::Write(Purpose::AskHandover, seen.obs.version.clone(), record);
                }
                Preemption::Handover => {}
            }
        }
        if let Some(take) = self.take_when_expired(seen, expiry, now) {
            return take;
        }
        // Not acquirable yet. With a watch, changes come by themselves: wake at
        // expiry. Without one, poll every jittered retry period (client-go).
        match self.follow {
            Follow::Watch => Move::WaitUntil(expiry),
            Follow::Poll { next } if now >= next => Move::Read,
            Follow::Poll { next } => Move::WaitUntil(expiry.min(next)),
        }
    }

    /// Taking the lock held in `seen` once it expired at `expiry`: a read first
    /// unless one at or past the expiry showed this version, then the write.
    /// `None` before the expiry.
    pub(super) fn take_when_expired(
        &self,
        seen: &Seen,
        expiry: Instant,
        now: Instant,
    ) -> Option<Move> {
        if now < expiry {
            return None;
        }
        if seen.read_at.is_none_or(|r| r < expiry) {
            return Some(Move::Read); // re-read at or past the expiry before any takeover
        }
        // An emptied holder (not a release) is taken like any record that
        // names no one: it may be what a create of ours made.
        let rec = &seen.obs.record;
        let purpose = if rec.holder == *self.identity() || !rec.is_held() {
            Purpose::Acquire
        } else {
            Purpose::TakeOver
        };
        Some(self.take(purpose, seen))
    }

    /// A write that takes the lock seen, as a new term, by compare-and-swap on
    /// its version.
    pub(super) fn take(&self, purpose: Purpose, seen: &Seen) -> Move {
        let rec = &seen.obs.record;
        let record = self.leading_record(Some(rec), rec.transitions.saturating_add(1));
        Move::Write(purpose, seen.obs.version.clone(), record)
    }

    /// On standby: follow the lock without writing. A watching node waits for
    /// its events (leaving standby wakes it); a polling one reads on its schedule.
    fn stand_by(&mut self, now: Instant) {
        match self.follow {
            Follow::Watch => {}
            Follow::Poll { next } if now >= next => self.send_read(now),
            Follow::Poll { next } => self.timers.set(Timer::Attempt, next),
        }
    }

    /// The transition count of a create: 0 for a lock never seen, else one more
    /// than the largest count seen, so that terms keep growing.
    pub(super) fn create_transitions(&self) -> u32 {
        self.max_transitions
            .map_or(0, |t| t.saturating_add(1).min(MAX_TRANSITIONS))
    }

    /// The record of a leader: our identity, our duration, both times stamped now.
    pub(super) fn leading_record(&self, base: Option<&LockRecord>, transitions: u32) -> LockRecord {
        LockRecord {
            holder: self.identity().clone(),
            lease_duration_secs: Some(self.config.lease_duration_secs()),
            acquire_time: Stamp::Now,
            renew_time: Stamp::Now,
            transitions: transitions.min(MAX_TRANSITIONS),
            priority: self.config.priority,
            handover: None,
            strategy: base.and_then(|b| b.strategy.clone()),
        }
    }

    /// The answer to a create, an acquisition or a handover request.
    pub(super) fn on_acquire_answer(
        &mut self,
        call: super::InFlight,
        result: Result<Observation, LockError>,
        now: Instant,
    ) {
        match result {
            Ok(obs) if self.lock.predates_deletion(&obs.version) => {
                // Our write landed, but the watch already told of a deletion after
                // it (FAULTS A4): there is nothing to hold. Campaign again.
                self.own.remember(&obs.version);
                self.timers.set(Timer::Attempt, now);
            }
            Ok(obs) => {
                self.own.remember(&obs.version);
                let term = Term {
                    transitions: obs.record.transitions,
                    version: obs.version.clone(),
                };
                let written = obs.record.clone();
                let mut adopted = false;
                if self.observe(obs, true, now) == super::observe::Novelty::Stale {
                    // The watch already showed a newer version: the write landed
                    // and was overwritten. An edit that kept every stamp of it
                    // (a label, the coordinator's end-of-term mark) leaves the
                    // lock ours: adopt it, as a holder adopts such an edit
                    // (`confirm_holding`). Anything else: nothing to hold; act on
                    // what is seen.
                    if !self.adopt_edit_of(&written) {
                        self.timers.set(Timer::Attempt, now);
                        return;
                    }
                    adopted = true;
                }
                if call.purpose == Purpose::AskHandover {
                    self.timers.set(Timer::Attempt, now);
                    return;
                }
                self.stats.acquisitions += 1;
                // The lock delay after a create, or after taking a record that
                // may be the one a create of ours with an unknown outcome made
                // (it names us or no one, and counts no more transitions than
                // that create wrote). A record another identity holds is not, nor
                // one that counts more: another node acquired since that create,
                // by the rules, a lease after seeing it, so whoever believed
                // before that create is past its deadline.
                let taken_from = call.transitions.saturating_sub(1);
                let maybe_our_create = self.own.create_unknown.is_some_and(|t| taken_from <= t);
                if call.purpose == Purpose::Create
                    || (maybe_our_create && call.purpose == Purpose::Acquire)
                {
                    self.note_created(now);
                }
                if self.config.mode == Mode::Coordinated {
                    // The coordinator judged the last holder gone by wall clocks;
                    // lead only once local observation says so too.
                    self.lead_not_before = self.lead_not_before.max(self.others_until.until());
                } else if call.purpose != Purpose::Steal {
                    // A holder hidden behind a gap may still believe (a steal
                    // takes an unexpired lease at once by design).
                    self.lead_not_before = self.lead_not_before.max(self.hidden_until);
                }
                self.own.settle_unknown();
                self.own.foreign_self_versions = 0;
                self.take_holding(term, call.sent_at, now);
                if adopted && self.holding.is_some() {
                    // As after any adopted edit: renew on its version at once.
                    self.timers.set(Timer::Attempt, now);
                }
            }
            Err(LockError::AlreadyExists | LockError::Conflict | LockError::Unknown { .. }) => {
                // Lost a race, or do not know: read the lock, then wait as it says.
                self.want_read(false);
            }
            Err(LockError::NotFound) if self.absence_overtaken(&call) => {
                self.timers.set(Timer::Attempt, now);
            }
            Err(LockError::NotFound) => {
                self.note_absent(None, now);
                self.timers.set(Timer::Attempt, now);
            }
            Err(e) => {
                // FAULTS A8: a payload the API refused as invalid is not re-sent as
                // it was; the next attempt reads first and writes what it shows.
                if matches!(e, LockError::Invalid { .. }) && self.read_due.is_none() {
                    self.read_due = Some(ReadDue::BeforeWrite);
                }
                self.timers
                    .set(Timer::Attempt, self.write_hold.until.max(now));
            }
        }
    }

    /// Whether the version seen is an edit of `written` (the record a write of
    /// ours stored) that keeps every stamp of it (`renew::keeps_stamps`):
    /// if so, it is adopted as this node's (its echo is not news).
    fn adopt_edit_of(&mut self, written: &LockRecord) -> bool {
        let Some(seen) = self.lock.present() else {
            return false;
        };
        let kept = super::renew::keeps_stamps(written, &seen.obs.record);
        if kept {
            let version = seen.obs.version.clone();
            self.own.remember(&version);
        }
        kept
    }

    /// Holds the lock from a write sent at `sent`: lead now, after the lock delay,
    /// or (shutting down, or the record already marked for another) only release
    /// it.
    fn take_holding(&mut self, term: Term, sent: Instant, now: Instant) {
        let deadline = sent + self.config.renew_deadline;
        if now >= deadline && self.phase != Phase::ShuttingDown {
            // The answer came after the deadline it would have given (a pause, a
            // slow network): too late to lead on. Take the lock back as a new term.
            self.timers.set(Timer::Attempt, now);
            return;
        }
        if self.phase == Phase::ShuttingDown
            && self.config.lock_delay == LockDelay::Strict
            && now < self.lead_not_before
        {
            // Shutting down, holding a lock within the strict lock delay: as in
            // `hold_for_release`, leave it to expire rather than release it.
            self.warn(Warning::LeftToExpire);
            return;
        }
        // A record marked for the end of term (an edit adopted, made before
        // this node could lead) is never led on: it is given back at once, the
        // mark kept for its target.
        let releasing = self.phase == Phase::ShuttingDown || self.honoured_handover_seen();
        let state = if releasing {
            Lead::Releasing
        } else if now < self.lead_not_before {
            self.timers.set(Timer::LockDelay, self.lead_not_before);
            Lead::Delayed { then_release: None }
        } else {
            Lead::Leading
        };
        if state == Lead::Leading {
            self.emit(Event::StartedLeading { term: term.clone() });
        }
        self.holding = Some(Holding {
            term,
            deadline,
            renewed_sent: sent,
            state,
        });
        self.timers.set(Timer::Deadline, deadline);
        // A lock taken only to be given back is released at once.
        let next = if releasing {
            now
        } else {
            (sent + self.config.renew_every()).max(now)
        };
        self.timers.set(Timer::Attempt, next);
    }
}
