//! Coordinated leader election ([`Mode::Coordinated`], Kubernetes' KEP-4355): a
//! coordinator writes the holder, and a candidate only ever claims what it was
//! given.
//!
//! - a follower never creates the lock, never takes a release or an expired lease
//!   of another, and never asks for a handover: it follows and times the lock;
//! - an *assignment* is a version naming this node that another wrote with no
//!   acquire time (the coordinator clears it; every holder of this library stamps
//!   one): the node claims it at once by compare-and-swap, as a new term;
//! - it leads only once nobody else can: not before [`OthersUntil::until`], one
//!   lease (the holder's, or its own if longer) after the last version it saw
//!   held by another, and the longest lease seen from any holder after any
//!   version that may not directly follow the one seen before it (a version it
//!   missed may hide a holder, with any lease it was seen to use). The
//!   coordinator judges expiry by wall clocks; this rule
//!   keeps the promise on local time, as the classic mode does;
//! - a version naming this node with an acquire time that it did not write (a
//!   twin, or its own previous life) is timed like another's lease and taken
//!   back once expired;
//! - a holder gives the lock back (drain, then release) when the record names a
//!   `preferredHolder` ([`crate::Handover`] with no priority), and on shutdown: a
//!   released lock is reassigned by the coordinator at once, where a lease left
//!   to expire costs a whole lease. An assignment (or a claim of it) already so
//!   marked is released without leading, the mark kept.

use alloc::sync::Arc;

use super::acquire::Move;
use super::{Elector, Follow, LockView, Purpose};
use crate::record::{LockRecord, Stamp};
use crate::time::Instant;

impl Elector {
    /// A coordinated follower's next step with the lock as it knows it.
    pub(super) fn coordinated_move(&self, now: Instant) -> Move {
        let seen = match &self.lock {
            LockView::Unread => return Move::Read,
            LockView::Absent { .. } => return self.follow_move(None, now),
            LockView::Present(seen) => seen,
        };
        let rec = &seen.obs.record;
        if rec.holder != *self.identity() {
            return self.follow_move(None, now);
        }
        let ours = self.may_be_own(&seen.obs.version, rec);
        if (ours || self.is_assignment(rec)) && self.honoured_handover(rec) {
            // The coordinator marked it for the end of term before this node
            // claimed it (it found a better candidate): never claimed, never
            // led on, the mark never erased. Given back at once by a release
            // that keeps the mark, so the coordinator moves on without waiting
            // for the lease to run out.
            let record = rec.released();
            return Move::Write(Purpose::Release, seen.obs.version.clone(), record);
        }
        if ours || self.is_assignment(rec) {
            // One more than any count seen: the coordinator keeps the count of
            // the record it overwrites, and starts a re-created lock at none.
            let record = self.leading_record(Some(rec), self.create_transitions());
            return Move::Write(Purpose::Acquire, seen.obs.version.clone(), record);
        }
        let expiry = self.expiry();
        self.take_when_expired(seen, expiry, now)
            .unwrap_or_else(|| self.follow_move(Some(expiry), now))
    }

    /// Whether `rec` is the coordinator's assignment of the lock to this node: it
    /// names this node and carries no acquire time.
    pub(super) fn is_assignment(&self, rec: &LockRecord) -> bool {
        rec.holder == *self.identity() && rec.acquire_time == Stamp::Unset
    }

    /// Waits for a change: a watching node for its events (and `wake`), a polling
    /// one reads on its schedule.
    fn follow_move(&self, wake: Option<Instant>, now: Instant) -> Move {
        match (self.follow, wake) {
            (Follow::Watch, Some(at)) => Move::WaitUntil(at),
            (Follow::Watch, None) => Move::Idle,
            (Follow::Poll { next }, _) if now >= next => Move::Read,
            (Follow::Poll { next }, wake) => Move::WaitUntil(wake.map_or(next, |w| w.min(next))),
        }
    }

    /// Bookkeeping after a new version was taken in (`adjacent`: it is known to
    /// directly follow the version seen before it): see [`OthersUntil`].
    pub(super) fn note_others(&mut self, adjacent: bool, now: Instant) {
        let Some(seen) = self.lock.present() else {
            return;
        };
        let rec = &seen.obs.record;
        if adjacent && rec.is_released() {
            // The holder of the version before released it, and it released only
            // once it had stopped.
            self.others_until.released(now);
            return;
        }
        // A record naming us while a write of ours is in flight (or of unknown
        // outcome) may be that write's watch echo, come before its answer. A
        // twin's write instead makes ours fail, and is then timed as any record
        // naming us that we did not write.
        let maybe_ours = rec.holder == *self.identity() && self.own_write_pending();
        let others = rec.is_held()
            && !self.own.wrote(&seen.obs.version)
            && !self.is_assignment(rec)
            && !maybe_ours;
        // A holder's own duration where it is seen (never shorter than ours);
        // for versions missed, the longest lease seen from any holder, since
        // any of them may hide there (a coordinator's default says nothing of
        // them).
        let lease = if others {
            self.effective_duration()
        } else {
            self.config.lease_duration
        };
        if !adjacent {
            self.others_until.gap(now + self.longest_lease());
        }
        if others {
            self.others_until.held(&rec.holder, now + lease);
        }
    }
}

/// Until when another node may lead, as far as this node's observations tell
/// (a coordinated claim leads no earlier): one lease after the last version seen
/// held by each holder, and one lease after any version that may not directly
/// follow the one seen before it (versions missed may hide a holder's renewals).
///
/// The current holder's run is kept apart from what came before it: a release
/// that directly follows its versions ends that holder's part (it stopped before
/// writing it), but not the part of holders before it, whose leases the
/// releaser may not have waited out (a client-go candidate leads at once on an
/// assignment).
#[derive(Clone, Debug, Default)]
pub(super) struct OthersUntil {
    /// The bound from versions before the current holder's run, and from gaps.
    before: Instant,
    /// The holder of the latest held versions seen, and the bound from them.
    holder: Option<(Arc<str>, Instant)>,
}

impl OthersUntil {
    /// The instant before which another node may still lead.
    pub(super) fn until(&self) -> Instant {
        self.holder
            .as_ref()
            .map_or(self.before, |(_, t)| self.before.max(*t))
    }

    /// A version held by `holder` was seen: it may lead until `until`.
    fn held(&mut self, holder: &Arc<str>, until: Instant) {
        match &mut self.holder {
            Some((h, t)) if h == holder => *t = (*t).max(until),
            current => {
                if let Some((_, t)) = current.take() {
                    self.before = self.before.max(t);
                }
                *current = Some((holder.clone(), until));
            }
        }
    }

    /// Versions may have been missed before this one: someone may lead until
    /// `until`.
    fn gap(&mut self, until: Instant) {
        self.before = self.before.max(until);
    }

    /// The current holder released directly after its versions seen: its part
    /// ends `now`.
    fn released(&mut self, now: Instant) {
        if let Some((_, t)) = &mut self.holder {
            *t = (*t).min(now);
        }
    }
}
