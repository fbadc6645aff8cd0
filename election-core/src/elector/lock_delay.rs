//! The strict lock delay (DESIGN §4 "Absent lock while another may believe"): a
//! node cannot tell a lock never created from one deleted under a live leader, so
//! with [`LockDelay::Strict`] every node that creates the lock waits the longest
//! lease it has seen (its own at least), counted from its create's answer,
//! before it leads.

use super::{Elector, Lead, LockView};
use crate::config::{LockDelay, Mode};
use crate::event::Event;
use crate::record::Version;
use crate::time::Instant;

impl Elector {
    /// The lock is absent. Whoever held it before it was deleted may still believe
    /// it leads until its deadline, which passes within its lease duration from
    /// now (the deletion came before this observation): within the longest lease
    /// seen, since that holder may have run with a longer lease than this
    /// node's. With the strict lock delay, do not lead before then, whichever
    /// write wins (a create, or taking over a record whose create's outcome was
    /// unknown). A node cannot tell a lock never created from one deleted under a
    /// live leader, so this holds for a node that never saw the lock held too. `deleted_at`: the deletion's version, where
    /// the lock said it.
    pub(super) fn note_absent(&mut self, deleted_at: Option<Version>, now: Instant) {
        self.lock = match core::mem::replace(&mut self.lock, LockView::Unread) {
            LockView::Unread => LockView::Absent {
                deleted_at,
                last: None,
            },
            LockView::Present(seen) => LockView::Absent {
                deleted_at,
                last: Some(seen),
            },
            LockView::Absent {
                deleted_at: before,
                last,
            } => LockView::Absent {
                deleted_at: deleted_at.or(before),
                last,
            },
        };
        if self.config.lock_delay == LockDelay::Strict {
            self.lead_not_before = self.lead_not_before.max(now + self.longest_lease());
        }
    }

    /// A gap (classic mode, strict lock delay): a version taken in that may not
    /// directly follow the one seen before it (`adjacent` false: a poll, the
    /// first event of a watch that broke or started) may hide what this node
    /// did not see: the lock deleted under a holder, and created again by a
    /// node that never led (it waits out its lock delay, and may crash within
    /// it). That holder may believe for its lease after the deletion, which came
    /// before this observation; a record's expiry says nothing of it. So an
    /// acquisition (but a steal) leads no earlier than the longest lease seen
    /// after the gap. A release ends it: only a holder that led by these rules
    /// releases (never one within its lock delay), and it stopped first. A
    /// record that may be this node's own write (its watch echo included) is no
    /// gap either. In a fleet of one lease duration the bound never outlasts the
    /// expiry of the version that set it; with mixed lease lengths it covers
    /// the longest (R14).
    pub(super) fn note_gap(&mut self, adjacent: bool, now: Instant) {
        if self.config.mode != Mode::Classic || self.config.lock_delay != LockDelay::Strict {
            return;
        }
        let Some(seen) = self.lock.present() else {
            return;
        };
        let rec = &seen.obs.record;
        if rec.is_released() {
            self.hidden_until = Instant::ZERO;
            return;
        }
        // A record naming us that is our write: one we know of, or the
        // watch's echo of the write in flight. One that only may be ours (a
        // write of unknown outcome could have made it) is a gap like any: an
        // operator's edit naming us over a holder's record we never saw looks
        // the same, and that holder may still believe (docs/faults.md R15).
        let ours = self.own.wrote(&seen.obs.version)
            || (rec.holder == *self.identity() && self.write_in_flight());
        if !adjacent && !ours {
            self.hidden_until = self.hidden_until.max(now + self.longest_lease());
        }
    }

    /// A create of ours took the lock (its answer, or the answer of the write that
    /// took back a record our create of unknown outcome made, came at `now`). The
    /// lock was absent when that create was served, which may be later than any
    /// read that found it absent: a leader of a lock deleted in between may believe
    /// until its deadline, within its lease duration of the deletion. With the
    /// strict lock delay, do not lead before the longest lease seen from `now`.
    pub(super) fn note_created(&mut self, now: Instant) {
        self.own.create_unknown = None;
        if self.config.lock_delay == LockDelay::Strict {
            self.lead_not_before = self.lead_not_before.max(now + self.longest_lease());
        }
    }

    /// The strict lock delay ended: lead, if still holding within the deadline.
    pub(super) fn on_lock_delay_end(&mut self, now: Instant) {
        let Some(h) = &mut self.holding else { return };
        let Lead::Delayed { then_release } = &mut h.state else {
            return;
        };
        if let Some(reason) = then_release.take() {
            h.state = Lead::Releasing;
            self.after_stop(&reason, now);
            return;
        }
        if now >= h.deadline {
            return;
        }
        h.state = Lead::Leading;
        let term = h.term.clone();
        self.emit(Event::StartedLeading { term });
    }
}
