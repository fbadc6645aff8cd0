//! The Lease mapping field for field: golden `LeaseSpec` JSON with the fields,
//! names, values and timestamp formats client-go writes (MicroTime with six
//! fractional digits in UTC, an empty holder present on release, unset fields
//! absent), and tolerant reading of what others write (docs/faults.md R3, R5, R7, R8,
//! docs/design.md §4).
//!
//! The comparisons are of JSON values, not of bytes: the API server decodes a
//! written object and serialises it afresh, so the key order of our request body
//! is never what another client reads.

use election_core::{Handover, LockRecord, MAX_TRANSITIONS, Stamp, WallTime};
use k8s_openapi::api::coordination::v1::Lease;
use lock_lease::record::{
    HANDOVER_PRIORITY, HANDOVER_TO, PRIORITY, record_from_lease, spec_from_record, write_record,
};

/// 2026-08-07T23:11:09.123456789Z
const T: WallTime = WallTime {
    unix_secs: 1_786_144_269,
    nanos: 123_456_789,
};

/// `spec` as a JSON value, to compare with a golden document.
fn value(spec: &impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(spec).expect("JSON")
}

/// A golden JSON document.
fn golden(json: &str) -> serde_json::Value {
    serde_json::from_str(json).expect("golden JSON")
}

fn lease(json: &str) -> Lease {
    serde_json::from_str(json).expect("a Lease")
}

#[test]
fn golden_acquired_record_is_client_gos_lease_spec() {
    let record = LockRecord {
        holder: "node-a_5f2c".into(),
        lease_duration_secs: Some(15),
        acquire_time: Stamp::Now,
        renew_time: Stamp::Now,
        transitions: 4,
        ..LockRecord::default()
    };
    assert_eq!(
        value(&spec_from_record(&record, T)),
        golden(
            r#"{"acquireTime":"2026-08-07T23:11:09.123456Z","holderIdentity":"node-a_5f2c","leaseDurationSeconds":15,"leaseTransitions":4,"renewTime":"2026-08-07T23:11:09.123456Z"}"#
        )
    );
}

#[test]
fn golden_released_record_writes_an_empty_holder_and_one_second() {
    let record = LockRecord {
        holder: "".into(),
        lease_duration_secs: Some(1),
        acquire_time: Stamp::At(WallTime::new(1_786_144_000, 500_000_000)),
        renew_time: Stamp::Now,
        transitions: 4,
        ..LockRecord::default()
    };
    assert_eq!(
        value(&spec_from_record(&record, T)),
        golden(
            r#"{"acquireTime":"2026-08-07T23:06:40.500000Z","holderIdentity":"","leaseDurationSeconds":1,"leaseTransitions":4,"renewTime":"2026-08-07T23:11:09.123456Z"}"#
        )
    );
}

#[test]
fn unset_stamps_write_no_timestamp() {
    let record = LockRecord {
        holder: "a".into(),
        lease_duration_secs: Some(10),
        ..LockRecord::default()
    };
    let spec = spec_from_record(&record, T);
    assert_eq!(spec.acquire_time, None);
    assert_eq!(spec.renew_time, None);
}

#[test]
fn golden_client_go_lease_reads_back() {
    // As `kubectl get lease -o json` shows one written by client-go.
    let l = lease(
        r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"ctl","namespace":"kube-system","resourceVersion":"812"},
            "spec":{"acquireTime":"2026-08-07T23:06:40.500000Z","holderIdentity":"node-b","leaseDurationSeconds":15,"leaseTransitions":7,"renewTime":"2026-08-07T23:11:09.123456Z"}}"#,
    );
    let r = record_from_lease(&l);
    assert_eq!(r.holder.as_ref(), "node-b");
    assert_eq!(r.lease_duration_secs, Some(15));
    assert_eq!(r.transitions, 7);
    assert_eq!(
        r.acquire_time,
        Stamp::At(WallTime::new(1_786_144_000, 500_000_000))
    );
    assert_eq!(
        r.renew_time,
        Stamp::At(WallTime::new(1_786_144_269, 123_456_000))
    );
    // Written back unchanged, field for field.
    let again = serde_json::to_value(spec_from_record(&r, WallTime::new(0, 0))).unwrap();
    assert_eq!(again, serde_json::to_value(l.spec.unwrap()).unwrap());
}

#[test]
fn r7_missing_and_null_fields_read_as_defaults() {
    for json in [
        r#"{"metadata":{"name":"x"}}"#,
        r#"{"metadata":{"name":"x"},"spec":{}}"#,
        r#"{"metadata":{"name":"x"},"spec":{"holderIdentity":null,"leaseDurationSeconds":null}}"#,
    ] {
        let r = record_from_lease(&lease(json));
        assert_eq!(r, LockRecord::default(), "{json}");
        assert!(!r.is_held());
    }
    let only_holder = record_from_lease(&lease(
        r#"{"metadata":{"name":"x"},"spec":{"holderIdentity":"a"}}"#,
    ));
    assert_eq!(only_holder.holder.as_ref(), "a");
    assert_eq!(
        only_holder.lease_duration_secs, None,
        "R3: the configured duration applies"
    );
    assert_eq!(only_holder.transitions, 0);
}

#[test]
fn r3_zero_and_negative_durations_are_read_as_is() {
    for d in [0, -5] {
        let r = record_from_lease(&lease(&format!(
            r#"{{"metadata":{{"name":"x"}},"spec":{{"holderIdentity":"a","leaseDurationSeconds":{d}}}}}"#
        )));
        assert_eq!(r.lease_duration_secs, Some(i64::from(d)));
        assert_eq!(r.lease_duration(), None);
    }
}

#[test]
fn r4_r5_extremes_do_not_overflow() {
    let r = record_from_lease(&lease(
        r#"{"metadata":{"name":"x"},"spec":{"holderIdentity":"a","leaseDurationSeconds":2147483647,"leaseTransitions":2147483647}}"#,
    ));
    assert_eq!(r.lease_duration_secs, Some(2_147_483_647));
    assert_eq!(r.transitions, MAX_TRANSITIONS);
    let negative = record_from_lease(&lease(
        r#"{"metadata":{"name":"x"},"spec":{"leaseTransitions":-3}}"#,
    ));
    assert_eq!(negative.transitions, 0);
    // Writing saturates too.
    let huge = LockRecord {
        holder: "a".into(),
        lease_duration_secs: Some(10_000_000_000),
        transitions: u32::MAX,
        ..LockRecord::default()
    };
    let spec = spec_from_record(&huge, T);
    assert_eq!(spec.lease_duration_seconds, Some(i32::MAX));
    assert_eq!(spec.lease_transitions, Some(i32::MAX));
}

#[test]
fn r8_timestamps_with_other_precisions_and_offsets_are_read() {
    let r = record_from_lease(&lease(
        r#"{"metadata":{"name":"x"},"spec":{"holderIdentity":"a","acquireTime":"2026-08-07T23:11:09Z","renewTime":"2026-08-08T01:11:09.123456789+02:00"}}"#,
    ));
    assert_eq!(r.acquire_time, Stamp::At(WallTime::new(1_786_144_269, 0)));
    assert_eq!(r.renew_time, Stamp::At(T));
    // And we write six digits in UTC.
    let spec = serde_json::to_value(spec_from_record(&r, T)).unwrap();
    assert_eq!(spec["renewTime"], "2026-08-07T23:11:09.123456Z");
}

#[test]
fn priority_and_handover_live_in_documented_annotations() {
    let mut l = lease(r#"{"metadata":{"name":"x","annotations":{"other":"kept"}}}"#);
    let record = LockRecord {
        holder: "a".into(),
        lease_duration_secs: Some(15),
        priority: Some(3),
        handover: Some(Handover {
            to: "b".into(),
            priority: Some(9),
        }),
        ..LockRecord::default()
    };
    write_record(&mut l, &record, T);
    let a = l.metadata.annotations.clone().unwrap();
    assert_eq!(a[PRIORITY], "3");
    assert_eq!(a[HANDOVER_TO], "b");
    assert_eq!(a[HANDOVER_PRIORITY], "9");
    assert_eq!(a["other"], "kept");
    assert_eq!(
        record_from_lease(&l),
        LockRecord {
            acquire_time: Stamp::Unset,
            ..record.clone()
        }
    );
    // Clearing them removes our annotations only.
    let cleared = LockRecord {
        priority: None,
        handover: None,
        ..record
    };
    write_record(&mut l, &cleared, T);
    let a = l.metadata.annotations.clone().unwrap();
    assert_eq!(a.len(), 1);
    assert_eq!(a["other"], "kept");
}

#[test]
fn preferred_holder_and_strategy_are_read_as_a_handover_without_priority() {
    let l = lease(
        r#"{"metadata":{"name":"x"},"spec":{"holderIdentity":"a","strategy":"OldestEmulationVersion","preferredHolder":"b"}}"#,
    );
    let r = record_from_lease(&l);
    assert_eq!(
        r.handover,
        Some(Handover {
            to: "b".into(),
            priority: None
        })
    );
    assert_eq!(r.strategy.as_deref(), Some("OldestEmulationVersion"));
    let spec = spec_from_record(&r, T);
    assert_eq!(spec.preferred_holder.as_deref(), Some("b"));
    assert_eq!(spec.strategy.as_deref(), Some("OldestEmulationVersion"));
}

#[test]
fn malformed_priority_annotations_are_ignored() {
    let l = lease(
        r#"{"metadata":{"name":"x","annotations":{"kube-elector.dev/priority":"high"}},"spec":{"holderIdentity":"a"}}"#,
    );
    assert_eq!(record_from_lease(&l).priority, None);
}

#[test]
fn bad_names_are_typed_errors_not_panics() {
    let client =
        lock_kube::lock_client(kube::Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
    let ns = lock_lease::LeaseLock::new(client.clone(), "Team A", "ctl").unwrap_err();
    assert_eq!(ns, lock_kube::NameError::Namespace("Team A".into()));
    let name = lock_lease::LeaseLock::new(client.clone(), "team-a", "ctl_1").unwrap_err();
    assert_eq!(name, lock_kube::NameError::Name("ctl_1".into()));
    let ok = lock_lease::LeaseLock::new(client, "team-a", "ctl.example.com").unwrap();
    assert_eq!(
        election_core::Lock::describe(&ok),
        "leases/team-a/ctl.example.com"
    );
}
