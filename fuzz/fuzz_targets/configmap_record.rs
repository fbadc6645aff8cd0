//! Bytes as the annotation `control-plane.alpha.kubernetes.io/leader` of a
//! ConfigMap (client-go's JSON record, or fabric8's, or the Python client's,
//! or anything a human wrote), read by the ConfigMap lock's codec.
//!
//! Invariants: no panic; `record_from_config_map` reads what `decode_record`
//! reads, or the malformed holder with no duration when that fails; a record
//! decoded is written back (`write_record`) and reads back as the same record,
//! except for what client-go's form keeps (whole seconds, a duration at least
//! 1 s); encode → decode gives the same as that.
#![no_main]

use std::collections::BTreeMap;

use election_core::{LockRecord, Stamp, WallTime};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use libfuzzer_sys::fuzz_target;
use lock_configmap::record::{
    ANNOTATION, MALFORMED_HOLDER, decode_record, encode_record, record_from_config_map,
    write_record,
};

fn seconds(s: Stamp) -> Stamp {
    match s {
        Stamp::At(t) => Stamp::At(WallTime::new(t.unix_secs, 0)),
        other => other,
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("lock".into()),
            namespace: Some("default".into()),
            annotations: Some(BTreeMap::from([(ANNOTATION.to_owned(), text.to_string())])),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let read = record_from_config_map(&cm);
    let decoded = decode_record(&text);
    match &decoded {
        // The priority is the ConfigMap's annotation (none here), not the JSON's.
        Ok(record) => assert_eq!(
            read,
            LockRecord {
                priority: None,
                ..record.clone()
            }
        ),
        Err(_) => {
            assert_eq!(&*read.holder, MALFORMED_HOLDER);
            assert_eq!(read.lease_duration_secs, None);
        }
    }

    let now = WallTime::new(1_700_000_000, 0);
    let record = read;
    let expected = LockRecord {
        lease_duration_secs: record.lease_duration_secs.map(|d| d.max(1)),
        acquire_time: seconds(record.acquire_time),
        renew_time: seconds(record.renew_time),
        ..record.clone()
    };
    // encode → decode: client-go's form, the priority fields left to the annotations.
    let json = encode_record(&record, now);
    let back = decode_record(&json).expect("what the codec writes reads back");
    assert_eq!(
        back,
        LockRecord {
            priority: None,
            handover: expected.handover.clone().filter(|h| h.priority.is_none()),
            ..expected.clone()
        },
        "{json}"
    );
    // The whole ConfigMap: the priority fields in the annotations beside it.
    let mut written = cm.clone();
    write_record(&mut written, &record, now);
    assert_eq!(record_from_config_map(&written), expected);
});
