//! [`coordinator_write`]: what Kubernetes' coordinator of coordinated leader
//! election writes to the lock, decided from the record as it is.

use alloc::sync::Arc;

use crate::record::{Handover, LockRecord, Stamp};
use crate::time::WallTime;

/// The strategy the coordinator writes into the lock.
pub const STRATEGY: &str = "OldestEmulationVersion";

/// What kube-apiserver's leader-election controller (KEP-4355) writes when it
/// prefers the candidate `best`, finding `current` in the lock at its wall
/// time `now` (its clock, which may run off the lock's): `None` when it leaves
/// the lock as it is.
///
/// - An absent, emptied or expired lock (its `renewTime` plus its own
///   `leaseDurationSeconds` before `now`; a record missing either counts as
///   expired) held by another is given to `best`: its default duration
///   `lease_secs`, no acquire time (an assignment), `renewTime` stamped by the
///   lock, no preferred holder, the transitions kept.
/// - While another's lease is valid, `best` is named as its preferred holder,
///   once.
///
/// The simulator's coordinator and the model checker's both step through it.
pub fn coordinator_write(
    current: Option<&LockRecord>,
    best: &Arc<str>,
    lease_secs: i64,
    now: WallTime,
) -> Option<LockRecord> {
    let assign = |prev: Option<&LockRecord>| LockRecord {
        holder: best.clone(),
        lease_duration_secs: Some(lease_secs),
        acquire_time: Stamp::Unset,
        renew_time: Stamp::Now,
        transitions: prev.map_or(0, |p| p.transitions),
        priority: None,
        handover: None,
        strategy: Some(STRATEGY.into()),
    };
    let Some(rec) = current else {
        return Some(assign(None));
    };
    let expired = match (rec.renew_time, rec.lease_duration_secs) {
        (Stamp::At(renewed), Some(d)) => {
            nanos(renewed) + i128::from(d) * 1_000_000_000 < nanos(now)
        }
        _ => true,
    };
    if !rec.is_held() || (expired && rec.holder != *best) {
        Some(assign(Some(rec)))
    } else if rec.holder != *best && rec.handover.as_ref().is_none_or(|h| h.to != *best) {
        let mut record = rec.clone();
        record.handover = Some(Handover {
            to: best.clone(),
            priority: None,
        });
        Some(record)
    } else {
        None
    }
}

/// Nanoseconds since the Unix epoch.
fn nanos(w: WallTime) -> i128 {
    i128::from(w.unix_secs) * 1_000_000_000 + i128::from(w.nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> WallTime {
        WallTime::new(secs, 0)
    }

    #[test]
    fn assigns_an_absent_an_emptied_or_an_expired_lock_and_marks_a_valid_one() {
        let best: Arc<str> = "b".into();
        let created = coordinator_write(None, &best, 15, at(100)).unwrap();
        assert_eq!(
            (&*created.holder, created.acquire_time),
            ("b", Stamp::Unset)
        );
        let held = LockRecord {
            holder: "a".into(),
            lease_duration_secs: Some(10),
            renew_time: Stamp::At(at(100)),
            transitions: 4,
            ..LockRecord::default()
        };
        // Valid until 110: marked once, then left alone.
        let marked = coordinator_write(Some(&held), &best, 15, at(110)).unwrap();
        assert_eq!(
            (&*marked.holder, marked.handover.as_ref().map(|h| &*h.to)),
            ("a", Some("b"))
        );
        assert_eq!(coordinator_write(Some(&marked), &best, 15, at(110)), None);
        // Expired at 110 plus a nanosecond: given to b, the count kept.
        let given = coordinator_write(Some(&held), &best, 15, WallTime::new(110, 1)).unwrap();
        assert_eq!(
            (&*given.holder, given.transitions, given.lease_duration_secs),
            ("b", 4, Some(15))
        );
        let mut emptied = held.clone();
        emptied.holder = "".into();
        assert_eq!(
            &*coordinator_write(Some(&emptied), &best, 15, at(0))
                .unwrap()
                .holder,
            "b"
        );
        // Held by the best candidate already: nothing.
        assert_eq!(coordinator_write(Some(&given), &best, 15, at(500)), None);
    }
}
