//! Priority (DESIGN §4 "Priority", FAULTS H7): higher wins, equal never
//! preempts. In the default handover mode a higher candidate writes a request into
//! the holder's record; the holder drains and releases naming it, and for one
//! lease only the named candidate may take the lock. In steal mode it takes the
//! lock at once (see `acquire.rs`).

use alloc::sync::Arc;

use super::Elector;
use crate::record::{Handover, LockRecord, Observation};

/// Whether priority `a` outranks `b`: higher wins, equal never preempts, and no
/// priority is outranked by any priority.
pub(super) fn outranks(a: Option<i64>, b: Option<i64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a > b,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

impl Elector {
    /// Whether to write a handover request into `rec`: none is pending for us, and
    /// any pending one is from a lower priority (an external one is never overridden).
    pub(super) fn should_ask(&self, rec: &LockRecord) -> bool {
        match &rec.handover {
            None => true,
            Some(h) if h.to == *self.identity() => false,
            Some(h) => h.priority.is_some() && outranks(self.config.priority, h.priority),
        }
    }

    /// A handover request for this node written into the holder's record `rec`:
    /// the holder's fields kept (its stamps mark the request as a foreign edit,
    /// not a twin), but what this node writes is valid by construction: a duration
    /// the API refuses (0, negative, over an int32) is written as the one this
    /// node times the lease by.
    pub(super) fn handover_request(&self, rec: &LockRecord) -> LockRecord {
        let mut record = rec.clone();
        record.handover = Some(Handover {
            to: self.identity().clone(),
            priority: self.config.priority,
        });
        if !record
            .lease_duration_secs
            .is_none_or(|s| (1..=i64::from(i32::MAX)).contains(&s))
        {
            let secs = self.effective_duration().as_secs();
            record.lease_duration_secs = Some(
                i64::try_from(secs)
                    .unwrap_or(i64::MAX)
                    .clamp(1, i32::MAX.into()),
            );
        }
        record
    }

    /// Whether the record's handover request is one this holder gives way to.
    pub(super) fn honoured_handover(&self, rec: &crate::record::LockRecord) -> bool {
        rec.handover.as_ref().is_some_and(|h| {
            h.to != *self.identity()
                && (h.priority.is_none() || outranks(h.priority, self.config.priority))
        })
    }

    pub(super) fn honoured_handover_seen(&self) -> bool {
        self.lock
            .present()
            .is_some_and(|s| self.honoured_handover(&s.obs.record))
    }

    /// A handover request is our last record with only `handover` changed (the
    /// asker keeps every other field, timestamps included); a twin's renew would
    /// have stamped a new renew time.
    pub(super) fn is_handover_request(&self, obs: &Observation) -> bool {
        let Some(seen) = self.lock.present() else {
            return false;
        };
        let (old, new) = (&seen.obs.record, &obs.record);
        new.handover.is_some()
            && new.handover != old.handover
            && self.only_foreign_fields_changed(obs)
    }

    /// The identity of a pending handover target, if the record seen names one.
    pub(super) fn handover_target(&self) -> Option<Arc<str>> {
        self.lock
            .present()
            .and_then(|s| s.obs.record.handover.as_ref())
            .map(|h| h.to.clone())
    }
}
