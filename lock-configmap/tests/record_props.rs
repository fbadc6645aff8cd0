//! Property tests of the ConfigMap lock's record mapping
//! (`lock_configmap::record`), the stable counterpart of the fuzz target
//! `configmap_record` (fuzz/README.md): any annotation value (arbitrary bytes
//! as text, JSON of any shape) reads as the record `lock-json` decodes, or as
//! held by the malformed holder with no duration (docs/faults.md R6), never a
//! panic; malformed priority annotations read as none; and every record
//! written reads back as written, up to what client-go's form keeps (whole
//! seconds, a duration of at least 1 s), its priority fields in the
//! annotations beside it.

use std::collections::BTreeMap;

use election_core::strategies::lock_record;
use election_core::{LockRecord, MAX_TRANSITIONS, Stamp, WallTime};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use lock_configmap::record::{
    ANNOTATION, HANDOVER_PRIORITY, HANDOVER_TO, MALFORMED_HOLDER, PRIORITY, decode_record,
    encode_record, record_from_config_map, write_record,
};
use proptest::prelude::*;

fn config_map(annotations: impl IntoIterator<Item = (&'static str, String)>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some("lock".into()),
            namespace: Some("default".into()),
            annotations: Some(
                annotations
                    .into_iter()
                    .map(|(k, v)| (k.to_owned(), v))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

/// JSON objects with the record's field names and values of any type.
fn record_like_json() -> impl Strategy<Value = String> {
    let key = prop::sample::select(
        &[
            "holderIdentity",
            "leaseDurationSeconds",
            "leaseDuration",
            "acquireTime",
            "renewTime",
            "leaderTransitions",
            "leaseTransitions",
            "preferredHolder",
            "strategy",
        ][..],
    );
    let value = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| serde_json::to_string(&f).unwrap()),
        ".{0,10}".prop_map(|s| serde_json::to_string(&s).unwrap()),
        "-?P(T)?-?[0-9.e]{0,22}[DHMS]".prop_map(|s| format!("{s:?}")),
        Just("[]".to_owned()),
        Just("{}".to_owned()),
    ];
    prop::collection::vec((key, value), 0..6).prop_map(|fields| {
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k:?}:{v}")).collect();
        format!("{{{}}}", body.join(","))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any annotation value: the record `decode_record` reads (the priority
    /// from the annotations, none here), or the malformed holder.
    #[test]
    fn any_annotation_reads_as_a_record_or_the_malformed_holder(
        text in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..200).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
            record_like_json(),
        ]
    ) {
        let read = record_from_config_map(&config_map([(ANNOTATION, text.clone())]));
        match decode_record(&text) {
            Ok(record) => prop_assert_eq!(read, LockRecord { priority: None, ..record }),
            Err(_) => {
                prop_assert_eq!(&*read.holder, MALFORMED_HOLDER);
                prop_assert_eq!(read.lease_duration_secs, None);
            }
        }
    }

    /// Priority annotations that are not integers read as none.
    #[test]
    fn malformed_priority_annotations_read_as_none(priority in ".{0,8}", to in ".{0,6}", to_priority in ".{0,8}") {
        let cm = config_map([
            (ANNOTATION, "{}".to_owned()),
            (PRIORITY, priority.clone()),
            (HANDOVER_TO, to.clone()),
            (HANDOVER_PRIORITY, to_priority.clone()),
        ]);
        let r = record_from_config_map(&cm);
        prop_assert_eq!(r.priority, priority.trim().parse::<i64>().ok());
        match r.handover {
            Some(h) => {
                prop_assert_eq!(&*h.to, to.as_str());
                prop_assert_eq!(h.priority, to_priority.trim().parse::<i64>().ok());
            }
            None => prop_assert!(to.is_empty()),
        }
    }

    /// Every record written reads back as client-go's form and the
    /// annotations keep it; the annotation alone holds client-go's fields.
    #[test]
    fn written_records_read_back(record in lock_record(), now in 0i64..4_000_000_000) {
        let now = WallTime::new(now, 0);
        let at = |s: Stamp| match s {
            Stamp::Unset => Stamp::Unset,
            Stamp::Now => Stamp::At(now),
            Stamp::At(t) => Stamp::At(WallTime::new(t.unix_secs, 0)),
        };
        let kept = LockRecord {
            lease_duration_secs: record.lease_duration_secs.map(|d| d.max(1)),
            acquire_time: at(record.acquire_time),
            renew_time: at(record.renew_time),
            transitions: record.transitions.min(MAX_TRANSITIONS),
            ..record.clone()
        };
        let mut cm = config_map([("note", "kept".to_owned())]);
        write_record(&mut cm, &record, now);
        prop_assert_eq!(record_from_config_map(&cm), kept.clone());
        let annotations = cm.metadata.annotations.as_ref().unwrap();
        prop_assert_eq!(annotations.get("note").map(String::as_str), Some("kept"));
        let json_only = decode_record(&encode_record(&record, now));
        prop_assert_eq!(json_only, Ok(LockRecord {
            priority: None,
            handover: kept.handover.clone().filter(|h| h.priority.is_none()),
            ..kept
        }));
    }
}
