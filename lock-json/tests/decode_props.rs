//! Property tests of the JSON record's decoding and encoding (docs/faults.md
//! R6, R7, R11), the stable counterpart of the fuzz target `json_record`
//! (fuzz/README.md): arbitrary bytes, JSON that is not an object, and objects
//! with the record's fields holding values of any type never panic and give a
//! typed [`RecordError`] naming the field at fault; fabric8's Java durations,
//! however large or signed, read as saturated seconds; and every record
//! written reads back as written, in both encodings, up to what the encoding
//! keeps (whole seconds, a duration of at least 1 s, no priority fields in
//! client-go's form).

use election_core::strategies::lock_record;
use election_core::{LockRecord, MAX_TRANSITIONS, Stamp, WallTime};
use lock_json::{
    Encoding, HANDOVER_PRIORITY, HANDOVER_TO, MALFORMED_HOLDER, PRIORITY, RecordError,
    decode_record, encode_record, record_or_malformed,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// The fields a record is read from.
const FIELDS: &[&str] = &[
    "holderIdentity",
    "leaseDurationSeconds",
    "leaseDuration",
    "acquireTime",
    "renewTime",
    "leaderTransitions",
    "leaseTransitions",
    "strategy",
    "preferredHolder",
    PRIORITY,
    HANDOVER_TO,
    HANDOVER_PRIORITY,
];

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        "-?P?T?-?[0-9.eE]{0,24}[DHMS]?".prop_map(Value::String),
        "[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]{8,16}(Z|[+-][0-9]{2}:[0-9]{2})?"
            .prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(".{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An object with some of the record's fields, each holding any JSON value.
fn record_like() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(prop::sample::select(FIELDS), json_value(), 0..6)
        .prop_map(|m| m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// What an encoding keeps of `record` written at `now`.
fn kept(record: &LockRecord, now: WallTime, encoding: Encoding) -> LockRecord {
    let at = |s: Stamp| match s {
        Stamp::Unset => Stamp::Unset,
        Stamp::Now => Stamp::At(WallTime::new(now.unix_secs, 0)),
        Stamp::At(t) => Stamp::At(WallTime::new(t.unix_secs, 0)),
    };
    let ours = encoding == Encoding::WithPriority;
    LockRecord {
        lease_duration_secs: record.lease_duration_secs.map(|d| d.max(1)),
        acquire_time: at(record.acquire_time),
        renew_time: at(record.renew_time),
        transitions: record.transitions.min(MAX_TRANSITIONS),
        priority: record.priority.filter(|_| ours),
        handover: record
            .handover
            .clone()
            .filter(|h| ours || h.priority.is_none()),
        ..record.clone()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any bytes: a record or a typed error, never a panic; the lenient
    /// reading agrees.
    #[test]
    fn arbitrary_bytes_decode_or_give_a_typed_error(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let lenient = record_or_malformed("test", &bytes);
        match decode_record(&bytes) {
            Ok(record) => prop_assert_eq!(lenient, record),
            Err(e) => {
                prop_assert!(
                    matches!(e, RecordError::NotJson(_) | RecordError::NotAnObject | RecordError::WrongType { .. }),
                    "{:?}",
                    e
                );
                prop_assert_eq!(&*lenient.holder, MALFORMED_HOLDER);
                prop_assert_eq!(lenient.lease_duration_secs, None);
            }
        }
    }

    /// JSON that is not an object is `NotAnObject`.
    #[test]
    fn json_that_is_not_an_object_is_refused(value in json_value()) {
        prop_assume!(!value.is_object());
        let bytes = serde_json::to_vec(&value).unwrap();
        prop_assert_eq!(decode_record(&bytes), Err(RecordError::NotAnObject));
    }

    /// The record's fields holding values of any type: a record, or
    /// `WrongType` naming a field the object has, whose value is not null.
    #[test]
    fn fields_of_any_type_give_a_record_or_name_the_wrong_field(fields in record_like()) {
        let bytes = serde_json::to_vec(&Value::Object(fields)).unwrap();
        // As the decoder sees them (a float's text may not read back to the same bits).
        let fields: Map<String, Value> = serde_json::from_slice(&bytes).unwrap();
        match decode_record(&bytes) {
            Ok(record) => {
                prop_assert!(record.transitions <= MAX_TRANSITIONS);
                prop_assert!(record.handover.as_ref().is_none_or(|h| !h.to.is_empty()));
                prop_assert!(record.strategy.as_ref().is_none_or(|s| !s.is_empty()));
            }
            Err(RecordError::WrongType { field, value }) => {
                let held = fields.get(field);
                prop_assert!(held.is_some_and(|v| !v.is_null()), "{} is not in {:?}", field, fields);
                prop_assert_eq!(held.map(Value::to_string), Some(value));
            }
            Err(e) => prop_assert!(false, "{e:?} for an object"),
        }
    }

    /// fabric8's Java durations, signed twice and far beyond `i64`, read as
    /// saturated seconds or a wrong type, never an overflow.
    #[test]
    fn java_durations_of_any_size_and_sign_saturate(
        neg in any::<bool>(),
        days in prop::option::of("-?[0-9]{1,30}(\\.[0-9]{1,5})?(e[0-9]{1,3})?"),
        time in prop::collection::vec(("-?[0-9]{1,25}(\\.[0-9]{1,5})?", prop::sample::select(&["H", "M", "S"][..])), 0..3),
    ) {
        let mut text = String::from(if neg { "-P" } else { "P" });
        if let Some(days) = &days {
            text.push_str(days);
            text.push('D');
        }
        if !time.is_empty() {
            text.push('T');
            for (n, unit) in &time {
                text.push_str(n);
                text.push_str(unit);
            }
        }
        let bytes = serde_json::to_vec(&json!({ "leaseDuration": text })).unwrap();
        match decode_record(&bytes) {
            Ok(r) => prop_assert!(r.lease_duration_secs.is_some(), "{text}"),
            Err(e) => prop_assert!(matches!(e, RecordError::WrongType { field: "leaseDuration", .. }), "{text}: {e:?}"),
        }
    }

    /// Every record written reads back as the encoding keeps it.
    #[test]
    fn written_records_read_back(record in lock_record(), now in 0i64..4_000_000_000) {
        let now = WallTime::new(now, 0);
        for encoding in [Encoding::WithPriority, Encoding::ClientGo] {
            let json = encode_record(&record, now, encoding);
            let back = decode_record(json.as_bytes());
            prop_assert_eq!(back, Ok(kept(&record, now, encoding)), "{}", json);
        }
    }
}

/// The case the fuzz target `json_record` is about (found while writing it):
/// a doubly negative Java duration beyond `i64` overflowed on negation.
#[test]
fn a_doubly_negative_java_duration_beyond_i64_saturates() {
    let r = decode_record(br#"{"leaseDuration":"-P-1e20D"}"#).unwrap();
    assert_eq!(r.lease_duration_secs, Some(i64::MAX));
}
