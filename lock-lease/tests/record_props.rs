//! Property tests of the Lease lock's record mapping (`lock_lease::record`),
//! the stable counterpart of the fuzz target `lease_record` (fuzz/README.md):
//! arbitrary bytes as a Lease never panic (they parse as a Lease or not); a
//! Lease whose spec and annotations hold any values (negative and huge
//! integers, malformed priority annotations, empty names) reads tolerantly, as
//! docs/design.md §4 "Tolerant reading" says; and every record written reads
//! back as written, also through the Lease's JSON, up to what a Lease keeps
//! (a duration of 1 s to `i32::MAX` s, times at the microsecond).

use std::collections::BTreeMap;

use election_core::strategies::{lock_record, wall_time};
use election_core::{LockRecord, MAX_TRANSITIONS, Stamp, WallTime};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use lock_lease::record::{
    HANDOVER_PRIORITY, HANDOVER_TO, PRIORITY, record_from_lease, write_record,
};
use proptest::prelude::*;

/// A wall time (within Go's range) as a `MicroTime`, exactly.
fn micro(t: WallTime) -> MicroTime {
    let nanos = i32::try_from(t.nanos).unwrap();
    MicroTime(k8s_openapi::jiff::Timestamp::new(t.unix_secs, nanos).unwrap())
}

/// A Lease as anyone may have written it: any spec values, annotations that
/// may not be numbers.
fn foreign_lease() -> impl Strategy<Value = Lease> {
    let annotation = prop_oneof![
        Just(None),
        "-?[0-9]{1,25}".prop_map(Some),
        ".{0,6}".prop_map(Some)
    ];
    (
        (
            prop::option::of(".{0,8}"),
            prop::option::of(any::<i32>()),
            prop::option::of(wall_time()),
            prop::option::of(wall_time()),
            prop::option::of(any::<i32>()),
        ),
        (
            prop::option::of(".{0,8}"),
            prop::option::of(".{0,8}"),
            annotation.clone(),
            prop::option::of(".{0,8}"),
            annotation,
        ),
    )
        .prop_map(
            |(
                (holder, duration, acquire, renew, transitions),
                (strategy, preferred, priority, to, to_priority),
            )| {
                let annotations: BTreeMap<String, String> = [
                    (PRIORITY, priority),
                    (HANDOVER_TO, to),
                    (HANDOVER_PRIORITY, to_priority),
                ]
                .into_iter()
                .filter_map(|(k, v)| Some((k.to_owned(), v?)))
                .collect();
                Lease {
                    metadata: ObjectMeta {
                        name: Some("lock".into()),
                        annotations: Some(annotations),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: holder,
                        lease_duration_seconds: duration,
                        acquire_time: acquire.map(micro),
                        renew_time: renew.map(micro),
                        lease_transitions: transitions,
                        strategy,
                        preferred_holder: preferred,
                    }),
                }
            },
        )
}

/// What a Lease keeps of `record` written at `now`.
fn kept(record: &LockRecord, now: WallTime) -> LockRecord {
    let at = |s: Stamp| match s {
        Stamp::Now => Stamp::At(now),
        other => other,
    };
    LockRecord {
        lease_duration_secs: record
            .lease_duration_secs
            .map(|d| d.clamp(1, i64::from(i32::MAX))),
        acquire_time: at(record.acquire_time),
        renew_time: at(record.renew_time),
        transitions: record.transitions.min(MAX_TRANSITIONS),
        ..record.clone()
    }
}

fn to_micros(s: Stamp) -> Stamp {
    match s {
        Stamp::At(t) => Stamp::At(WallTime::new(t.unix_secs, t.nanos / 1_000 * 1_000)),
        other => other,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any bytes: a Lease or not, and a Lease reads as a record, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(lease) = serde_json::from_slice::<Lease>(&bytes) {
            let _ = record_from_lease(&lease);
        }
    }

    /// Spec-shaped JSON with values of the wrong type or range: a parse error
    /// from serde, or a record read tolerantly.
    #[test]
    fn lease_json_with_any_values_never_panics(
        duration in prop_oneof![Just("1e99".to_owned()), any::<i64>().prop_map(|n| n.to_string()), Just("\"15\"".to_owned())],
        transitions in prop_oneof![Just("-1".to_owned()), any::<i64>().prop_map(|n| n.to_string()), Just("null".to_owned())],
        time in prop_oneof![Just("\"yesterday\"".to_owned()), "\"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{8,15}Z\"", Just("0".to_owned())],
    ) {
        let json = format!(
            r#"{{"metadata":{{"name":"lock"}},"spec":{{"holderIdentity":"a","leaseDurationSeconds":{duration},"leaseTransitions":{transitions},"renewTime":{time}}}}}"#
        );
        if let Ok(lease) = serde_json::from_str::<Lease>(&json) {
            let r = record_from_lease(&lease);
            prop_assert!(r.transitions <= MAX_TRANSITIONS);
        }
    }

    /// A Lease anyone wrote reads tolerantly: negative transitions as 0,
    /// malformed priorities as none, an empty handover as none.
    #[test]
    fn foreign_leases_read_tolerantly(lease in foreign_lease()) {
        let r = record_from_lease(&lease);
        let spec = lease.spec.as_ref().unwrap();
        let annotation = |k: &str| lease.metadata.annotations.as_ref().and_then(|a| a.get(k));
        prop_assert_eq!(&*r.holder, spec.holder_identity.as_deref().unwrap_or(""));
        prop_assert_eq!(r.lease_duration_secs, spec.lease_duration_seconds.map(i64::from));
        prop_assert_eq!(r.transitions, spec.lease_transitions.map_or(0, |t| u32::try_from(t).unwrap_or(0)));
        prop_assert_eq!(r.priority, annotation(PRIORITY).and_then(|p| p.trim().parse().ok()));
        prop_assert!(r.handover.as_ref().is_none_or(|h| !h.to.is_empty()));
        prop_assert!(r.strategy.as_ref().is_none_or(|s| !s.is_empty()));
    }

    /// Every record written reads back as the Lease keeps it; through the
    /// Lease's JSON, with its times at the microsecond.
    #[test]
    fn written_records_read_back(record in lock_record(), now in wall_time(), start in foreign_lease()) {
        let mut lease = start;
        write_record(&mut lease, &record, now);
        let expected = kept(&record, now);
        prop_assert_eq!(record_from_lease(&lease), expected.clone());
        let json = serde_json::to_vec(&lease).unwrap();
        let stored: Lease = serde_json::from_slice(&json).unwrap();
        let expected = LockRecord {
            acquire_time: to_micros(expected.acquire_time),
            renew_time: to_micros(expected.renew_time),
            ..expected
        };
        prop_assert_eq!(record_from_lease(&stored), expected);
    }
}
