//! The lock record in a `coordination.k8s.io/v1` Lease, exactly as client-go maps
//! its `LeaderElectionRecord` to a `LeaseSpec`, plus this library's priority
//! handover in annotations.
//!
//! | record | Lease |
//! |---|---|
//! | `holder` | `spec.holderIdentity`, written present (`""` on release); absent or null reads `""` |
//! | `lease_duration_secs` | `spec.leaseDurationSeconds`, integer seconds, written at least 1; absent reads `None` |
//! | `acquire_time`, `renew_time` | `spec.acquireTime`, `spec.renewTime` as `MicroTime` (`2006-01-02T15:04:05.000000Z`, UTC); [`Stamp::Unset`] writes null |
//! | `transitions` | `spec.leaseTransitions`; absent or negative reads 0 |
//! | `strategy` | `spec.strategy` |
//! | `handover` without a priority, with a `strategy` | `spec.preferredHolder` (Kubernetes' coordinated election; the API allows it only with a strategy) |
//! | any other `handover` | annotations [`HANDOVER_TO`] and [`HANDOVER_PRIORITY`] (absent when it has none) |
//! | `priority` | annotation [`PRIORITY`] |

use std::collections::BTreeMap;

use election_core::{Handover, LockRecord, MAX_TRANSITIONS, Stamp, WallTime};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use lock_kube::Codec;
use lock_kube::time::{from_timestamp, to_timestamp};

pub use lock_kube::annotations::{HANDOVER_PRIORITY, HANDOVER_TO, PRIORITY};
use lock_kube::annotations::{annotation, int_annotation, set_annotations};

/// Reads the record from a Lease, tolerantly (docs/design.md §4 "Tolerant reading").
pub fn record_from_lease(lease: &Lease) -> LockRecord {
    let spec = lease.spec.clone().unwrap_or_default();
    let meta = &lease.metadata;
    let int = |k: &str| int_annotation(meta, k);
    let handover = match annotation(meta, HANDOVER_TO) {
        Some(to) if !to.is_empty() => Some(Handover {
            to: to.into(),
            priority: int(HANDOVER_PRIORITY),
        }),
        _ => spec
            .preferred_holder
            .as_deref()
            .filter(|p| !p.is_empty())
            .map(|p| Handover {
                to: p.into(),
                priority: None,
            }),
    };
    LockRecord {
        holder: spec.holder_identity.unwrap_or_default().into(),
        lease_duration_secs: spec.lease_duration_seconds.map(i64::from),
        acquire_time: stamp(spec.acquire_time.as_ref()),
        renew_time: stamp(spec.renew_time.as_ref()),
        transitions: spec
            .lease_transitions
            .map(|t| u32::try_from(t).unwrap_or(0))
            .unwrap_or(0),
        priority: int(PRIORITY),
        handover,
        strategy: spec.strategy.filter(|s| !s.is_empty()).map(Into::into),
    }
}

fn stamp(t: Option<&MicroTime>) -> Stamp {
    t.map_or(Stamp::Unset, |t| Stamp::At(from_timestamp(t.0)))
}

fn micro(stamp: Stamp, now: WallTime) -> Option<MicroTime> {
    lock_kube::Clock::resolve(stamp, now).map(|t| MicroTime(to_timestamp(t)))
}

/// The `LeaseSpec` client-go writes for `record`, with [`Stamp::Now`] stamped `now`.
pub fn spec_from_record(record: &LockRecord, now: WallTime) -> LeaseSpec {
    let duration = record
        .lease_duration_secs
        .map(|s| i32::try_from(s.clamp(1, i64::from(i32::MAX))).unwrap_or(i32::MAX));
    let transitions = i32::try_from(record.transitions.min(MAX_TRANSITIONS)).unwrap_or(i32::MAX);
    LeaseSpec {
        holder_identity: Some(record.holder.to_string()),
        lease_duration_seconds: duration,
        acquire_time: micro(record.acquire_time, now),
        renew_time: micro(record.renew_time, now),
        lease_transitions: Some(transitions),
        strategy: record.strategy.as_ref().map(|s| s.to_string()),
        preferred_holder: preferred_holder(record).map(|h| h.to.to_string()),
    }
}

/// The handover written as `spec.preferredHolder`: one without a priority, when a
/// `strategy` is set (the API rejects a preferred holder without one). Any other
/// handover goes into the annotations.
fn preferred_holder(record: &LockRecord) -> Option<&Handover> {
    record
        .handover
        .as_ref()
        .filter(|h| h.priority.is_none() && record.strategy.is_some())
}

/// Writes `record` into `lease`: the whole spec, our annotations set or removed;
/// every label, other annotation and owner reference kept.
pub fn write_record(lease: &mut Lease, record: &LockRecord, now: WallTime) {
    lease.spec = Some(spec_from_record(record, now));
    let meta = &mut lease.metadata;
    let ours: [(&str, Option<String>); 3] = [
        (PRIORITY, record.priority.map(|p| p.to_string())),
        (
            HANDOVER_TO,
            record
                .handover
                .as_ref()
                .filter(|_| preferred_holder(record).is_none())
                .map(|h| h.to.to_string()),
        ),
        (
            HANDOVER_PRIORITY,
            record
                .handover
                .as_ref()
                .and_then(|h| h.priority)
                .map(|p| p.to_string()),
        ),
    ];
    set_annotations(meta, ours);
    if meta.annotations.as_ref().is_some_and(BTreeMap::is_empty) {
        meta.annotations = None;
    }
}

/// The [`Codec`] of the Lease lock: [`record_from_lease`] and [`write_record`].
/// `lock_lease::LeaseLock` is `lock_kube::ObjectLock<LeaseCodec>`.
#[derive(Clone, Copy, Debug, Default)]
pub struct LeaseCodec;

impl Codec for LeaseCodec {
    type Object = Lease;

    const RESOURCE: &'static str = "leases.coordination.k8s.io";

    fn decode(&self, obj: &Lease) -> LockRecord {
        record_from_lease(obj)
    }

    fn encode(&self, obj: &mut Lease, record: &LockRecord, now: WallTime) {
        write_record(obj, record, now);
    }
}
