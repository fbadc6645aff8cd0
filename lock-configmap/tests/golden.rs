//! The ConfigMap record byte for byte: golden annotation JSON as client-go writes
//! it, the fabric8 and Python variants (docs/faults.md R11), malformed records (R6),
//! missing fields (R3, R7), extremes (R4, R5) and odd timestamps (R8).

use election_core::{Handover, LockRecord, MAX_TRANSITIONS, Stamp, WallTime};
use k8s_openapi::api::core::v1::ConfigMap;
use lock_configmap::record::{
    ANNOTATION, HANDOVER_PRIORITY, HANDOVER_TO, MALFORMED_HOLDER, RecordError, decode_record,
    encode_record, record_from_config_map, write_record,
};

/// 2026-08-07T23:11:09.123456789Z
const T: WallTime = WallTime {
    unix_secs: 1_786_144_269,
    nanos: 123_456_789,
};

fn cm(annotation: &str) -> ConfigMap {
    let mut c = ConfigMap::default();
    c.metadata.name = Some("ctl".into());
    c.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(ANNOTATION.into(), annotation.into());
    c
}

#[test]
fn golden_acquired_record_is_client_gos_annotation() {
    let record = LockRecord {
        holder: "node-a_5f2c".into(),
        lease_duration_secs: Some(15),
        acquire_time: Stamp::Now,
        renew_time: Stamp::Now,
        transitions: 4,
        ..LockRecord::default()
    };
    assert_eq!(
        encode_record(&record, T),
        r#"{"holderIdentity":"node-a_5f2c","leaseDurationSeconds":15,"acquireTime":"2026-08-07T23:11:09Z","renewTime":"2026-08-07T23:11:09Z","leaderTransitions":4}"#
    );
}

#[test]
fn golden_released_and_unset_records() {
    let released = LockRecord {
        holder: "".into(),
        lease_duration_secs: Some(1),
        acquire_time: Stamp::Unset,
        renew_time: Stamp::Now,
        transitions: 4,
        ..LockRecord::default()
    };
    assert_eq!(
        encode_record(&released, T),
        r#"{"holderIdentity":"","leaseDurationSeconds":1,"acquireTime":null,"renewTime":"2026-08-07T23:11:09Z","leaderTransitions":4}"#
    );
    // A duration of 0 is never written (A8): other clients read it as expired.
    let zero = LockRecord {
        lease_duration_secs: Some(0),
        ..released
    };
    assert!(encode_record(&zero, T).contains(r#""leaseDurationSeconds":1,"#));
    // No duration (kubert's release, a foreign record kept as read) is left out,
    // and reads back as none: not a duration nobody wrote.
    let none = LockRecord {
        lease_duration_secs: None,
        ..zero
    };
    let json = encode_record(&none, T);
    assert!(!json.contains("leaseDurationSeconds"), "{json}");
    assert_eq!(decode_record(&json).unwrap().lease_duration_secs, None);
}

#[test]
fn golden_client_go_record_reads_back_byte_for_byte() {
    let go = r#"{"holderIdentity":"node-b","leaseDurationSeconds":15,"acquireTime":"2026-08-07T23:06:40Z","renewTime":"2026-08-07T23:11:09Z","leaderTransitions":7}"#;
    let r = decode_record(go).unwrap();
    assert_eq!(r.holder.as_ref(), "node-b");
    assert_eq!(r.lease_duration_secs, Some(15));
    assert_eq!(r.transitions, 7);
    assert_eq!(r.acquire_time, Stamp::At(WallTime::new(1_786_144_000, 0)));
    assert_eq!(encode_record(&r, WallTime::new(0, 0)), go);
}

#[test]
fn r11_fabric8_record_is_read() {
    let r = decode_record(
        r#"{"holderIdentity":"java-pod","leaseDuration":"PT15S","acquireTime":"2026-08-07T23:11:09.123456Z","renewTime":"2026-08-07T23:11:09.123456Z","leaderTransitions":2}"#,
    )
    .unwrap();
    assert_eq!(r.holder.as_ref(), "java-pod");
    assert_eq!(r.lease_duration_secs, Some(15));
    assert_eq!(r.transitions, 2);
    assert_eq!(
        r.renew_time,
        Stamp::At(WallTime::new(1_786_144_269, 123_456_000))
    );
    for (d, secs) in [
        (r#""PT1M30S""#, 90),
        (r#""PT0.5S""#, 1),
        (r#""PT2H""#, 7_200),
        (r#""P1D""#, 86_400),
        ("15.000000000", 15),
        ("15", 15),
    ] {
        let r = decode_record(&format!(r#"{{"holderIdentity":"j","leaseDuration":{d}}}"#)).unwrap();
        assert_eq!(r.lease_duration_secs, Some(secs), "{d}");
    }
}

#[test]
fn r11_python_record_is_read() {
    let r = decode_record(
        r#"{"holderIdentity":"py-pod","leaseDurationSeconds":"15","acquireTime":"2026-08-17 23:11:09.123456","renewTime":"2026-08-17 23:11:10.5"}"#,
    )
    .unwrap();
    assert_eq!(r.holder.as_ref(), "py-pod");
    assert_eq!(r.lease_duration_secs, Some(15));
    assert_eq!(r.transitions, 0, "no leaderTransitions in Python's record");
    assert!(matches!(r.acquire_time, Stamp::At(_)));
    assert!(matches!(r.renew_time, Stamp::At(_)));
}

#[test]
fn r6_malformed_records_are_held_by_an_unknown_holder() {
    for bad in [
        "not json",
        "[1,2]",
        r#"{"holderIdentity":5}"#,
        r#"{"holderIdentity":"a","leaseDurationSeconds":"fifteen"}"#,
        r#"{"holderIdentity":"a","leaseDurationSeconds":true}"#,
        r#"{"holderIdentity":"a","leaderTransitions":"many"}"#,
        r#"{"holderIdentity":"a","renewTime":12}"#,
    ] {
        assert!(decode_record(bad).is_err(), "{bad}");
        let r = record_from_config_map(&cm(bad));
        assert_eq!(r.holder.as_ref(), MALFORMED_HOLDER, "{bad}");
        assert_eq!(
            r.lease_duration_secs, None,
            "timed with the configured duration"
        );
        assert!(r.is_held());
    }
    assert!(matches!(decode_record("{"), Err(RecordError::NotJson(_))));
    assert_eq!(decode_record("3"), Err(RecordError::NotAnObject));
}

#[test]
fn r3_r7_missing_fields_read_as_defaults() {
    assert_eq!(decode_record("{}").unwrap(), LockRecord::default());
    let only = decode_record(r#"{"holderIdentity":"a"}"#).unwrap();
    assert_eq!(only.holder.as_ref(), "a");
    assert_eq!(only.lease_duration_secs, None);
    let null =
        decode_record(r#"{"holderIdentity":null,"leaseDurationSeconds":null,"acquireTime":null}"#)
            .unwrap();
    assert_eq!(null, LockRecord::default());
    // A ConfigMap without the annotation: nobody holds it.
    assert_eq!(
        record_from_config_map(&ConfigMap::default()),
        LockRecord::default()
    );
    for d in ["0", "-5"] {
        let r = decode_record(&format!(
            r#"{{"holderIdentity":"a","leaseDurationSeconds":{d}}}"#
        ))
        .unwrap();
        assert_eq!(r.lease_duration(), None, "{d}");
    }
}

#[test]
fn r4_r5_extremes_saturate() {
    let r = decode_record(
        r#"{"holderIdentity":"a","leaseDurationSeconds":10000000000,"leaderTransitions":99999999999}"#,
    )
    .unwrap();
    assert_eq!(r.lease_duration_secs, Some(10_000_000_000));
    assert_eq!(r.transitions, MAX_TRANSITIONS);
    let r = decode_record(
        r#"{"holderIdentity":"a","leaseDurationSeconds":1e300,"leaderTransitions":-4}"#,
    )
    .unwrap();
    assert_eq!(r.lease_duration_secs, Some(i64::MAX));
    assert_eq!(r.transitions, 0);
}

#[test]
fn r8_unparseable_timestamps_are_ignored() {
    let r = decode_record(r#"{"holderIdentity":"a","renewTime":"last tuesday","acquireTime":"2026-08-08T01:11:09+02:00"}"#)
        .unwrap();
    assert_eq!(r.renew_time, Stamp::Unset);
    assert_eq!(r.acquire_time, Stamp::At(WallTime::new(1_786_144_269, 0)));
}

#[test]
fn other_annotations_and_data_are_untouched_and_handover_is_outside_the_json() {
    let mut c = cm("garbage");
    c.metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert("note".into(), "keep".into());
    c.data = Some([("config.yaml".to_owned(), "x: 1".to_owned())].into());
    let record = LockRecord {
        holder: "a".into(),
        lease_duration_secs: Some(15),
        priority: Some(2),
        handover: Some(Handover {
            to: "b".into(),
            priority: Some(8),
        }),
        ..LockRecord::default()
    };
    write_record(&mut c, &record, T);
    let a = c.metadata.annotations.clone().unwrap();
    assert_eq!(a["note"], "keep");
    assert_eq!(a[HANDOVER_TO], "b");
    assert_eq!(a[HANDOVER_PRIORITY], "8");
    assert!(
        !a[ANNOTATION].contains("election.rs"),
        "the JSON stays client-go's"
    );
    assert_eq!(c.data.as_ref().unwrap()["config.yaml"], "x: 1");
    assert_eq!(record_from_config_map(&c), record);
}
