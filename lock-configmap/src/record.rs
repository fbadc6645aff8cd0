//! The lock record in a ConfigMap annotation, as client-go's historic
//! `ConfigMapLock` stores it: client-go's JSON record, written and read by
//! [`lock_json`] (the codec the etcd lock shares), which also reads the fabric8
//! and Python variants.
//!
//! The annotation [`ANNOTATION`] holds client-go's form:
//!
//! ```json
//! {"holderIdentity":"node-a","leaseDurationSeconds":15,"acquireTime":"2026-08-07T23:11:09Z","renewTime":"2026-08-07T23:11:09Z","leaderTransitions":3}
//! ```
//!
//! A record that is not JSON, or has a field of the wrong type, reads as held by
//! [`MALFORMED_HOLDER`] with no duration (docs/faults.md R6): the elector times
//! it like any version and takes it over by compare-and-swap after a lease. It is
//! reported as a `tracing` warning, never a permanent error. Timestamps that do not
//! parse are ignored (docs/faults.md R8): they are never used for expiry.
//!
//! Priority and handover requests live in the same annotations as on a Lease
//! ([`PRIORITY`], [`HANDOVER_TO`], [`HANDOVER_PRIORITY`]), outside the JSON, so the
//! JSON stays what client-go reads.

use std::collections::BTreeMap;

use election_core::{Handover, LockRecord, WallTime};
use k8s_openapi::api::core::v1::ConfigMap;
use lock_json::Encoding;
use lock_kube::Codec;

/// The annotation holding the record.
pub const ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";
/// The holder a malformed record is read as, and why a record is malformed.
pub use lock_json::{MALFORMED_HOLDER, RecordError};
pub use lock_kube::annotations::{HANDOVER_PRIORITY, HANDOVER_TO, PRIORITY};
use lock_kube::annotations::{int_annotation, set_annotations};

/// The annotation value client-go writes for `record`, with `Stamp::Now`
/// stamped `now` ([`Encoding::ClientGo`]: the priority stays in annotations).
pub fn encode_record(record: &LockRecord, now: WallTime) -> String {
    lock_json::encode_record(record, now, Encoding::ClientGo)
}

/// Parses an annotation value in any of the variants [`lock_json`] reads.
pub fn decode_record(json: &str) -> Result<LockRecord, RecordError> {
    lock_json::decode_record(json.as_bytes())
}

/// Reads the record of a ConfigMap: no annotation is an empty record (nobody
/// holds it, as client-go reads it); a malformed one is held by
/// [`MALFORMED_HOLDER`] and reported.
pub fn record_from_config_map(cm: &ConfigMap) -> LockRecord {
    let annotations = cm.metadata.annotations.as_ref();
    let annotation = |k: &str| annotations.and_then(|a| a.get(k)).map(String::as_str);
    let mut record = match annotation(ANNOTATION) {
        None => LockRecord::default(),
        Some(json) => {
            let what = format!(
                "configmaps/{}/{}",
                cm.metadata.namespace.as_deref().unwrap_or(""),
                cm.metadata.name.as_deref().unwrap_or("")
            );
            lock_json::record_or_malformed(&what, json.as_bytes())
        }
    };
    let int = |k: &str| int_annotation(&cm.metadata, k);
    record.priority = int(PRIORITY);
    if let Some(to) = annotation(HANDOVER_TO).filter(|t| !t.is_empty()) {
        record.handover = Some(Handover {
            to: to.into(),
            priority: int(HANDOVER_PRIORITY),
        });
    }
    record
}

/// Writes `record` into the ConfigMap's annotations; its data, labels and other
/// annotations are kept.
pub fn write_record(cm: &mut ConfigMap, record: &LockRecord, now: WallTime) {
    let annotations = cm.metadata.annotations.get_or_insert_with(BTreeMap::new);
    annotations.insert(ANNOTATION.to_owned(), encode_record(record, now));
    let handover = record.handover.as_ref().filter(|h| h.priority.is_some());
    let ours = [
        (PRIORITY, record.priority.map(|p| p.to_string())),
        (HANDOVER_TO, handover.map(|h| h.to.to_string())),
        (
            HANDOVER_PRIORITY,
            handover.and_then(|h| h.priority).map(|p| p.to_string()),
        ),
    ];
    set_annotations(&mut cm.metadata, ours);
}

/// The [`Codec`] of the ConfigMap lock: [`record_from_config_map`] and
/// [`write_record`]. `lock_configmap::ConfigMapLock` is
/// `lock_kube::ObjectLock<ConfigMapCodec>`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConfigMapCodec;

impl Codec for ConfigMapCodec {
    type Object = ConfigMap;

    const RESOURCE: &'static str = "configmaps";

    fn decode(&self, obj: &ConfigMap) -> LockRecord {
        record_from_config_map(obj)
    }

    fn encode(&self, obj: &mut ConfigMap, record: &LockRecord, now: WallTime) {
        write_record(obj, record, now);
    }
}
