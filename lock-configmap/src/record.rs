//! The lock record in a ConfigMap annotation, as client-go's historic
//! `ConfigMapLock` stores it, read leniently in the variants other clients write.
//!
//! The annotation [`ANNOTATION`] holds JSON. We write client-go's form:
//!
//! ```json
//! {"holderIdentity":"node-a","leaseDurationSeconds":15,"acquireTime":"2026-08-07T23:11:09Z","renewTime":"2026-08-07T23:11:09Z","leaderTransitions":3}
//! ```
//!
//! (RFC 3339 with whole seconds in UTC; an unset time is `null`; `strategy` and
//! `preferredHolder` follow only when set.) We read, besides that:
//! - fabric8's form: `leaseDuration` as a Java `Duration` (`"PT15S"`) or a number of
//!   seconds, timestamps with six fractional digits;
//! - the Python client's form: `leaseDurationSeconds` as a string (`"15"`), naive
//!   timestamps (`2026-08-17 23:11:09.123456`, read as UTC), no `leaderTransitions`.
//!
//! A record that is not JSON, or has a field of the wrong type (a holder that is
//! not a string, a duration that is neither a number nor a numeric string), reads
//! as held by [`MALFORMED_HOLDER`] with no duration (docs/faults.md R6): the elector times
//! it like any version and takes it over by compare-and-swap after a lease. It is
//! reported as a `tracing` warning, never a permanent error. Timestamps that do not
//! parse are ignored (docs/faults.md R8): they are never used for expiry.
//!
//! Priority and handover requests live in the same annotations as on a Lease
//! ([`PRIORITY`], [`HANDOVER_TO`], [`HANDOVER_PRIORITY`]), outside the JSON, so the
//! JSON stays what client-go reads.

use std::collections::BTreeMap;

use election_core::{Handover, LockRecord, MAX_TRANSITIONS, Stamp, WallTime};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_support::time::{format_rfc3339_secs, stamp_from};
use kube_support::{Clock, Codec};
use serde::Serialize;
use serde_json::Value;

/// The annotation holding the record.
pub const ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";
/// The holder a malformed record is read as (the core's convention).
pub use election_core::MALFORMED_HOLDER;
pub use kube_support::annotations::{HANDOVER_PRIORITY, HANDOVER_TO, PRIORITY};
use kube_support::annotations::{int_annotation, set_annotations};

/// Why an annotation could not be read as a record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// Not JSON.
    #[error("the leader annotation is not JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("the leader annotation is not a JSON object")]
    NotAnObject,
    /// A field has a type no known client writes.
    #[error("field {field:?} of the leader annotation has the wrong type: {value}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// Its value, as JSON.
        value: String,
    },
}

/// client-go's `LeaderElectionRecord`, field order and all.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GoRecord<'a> {
    holder_identity: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_duration_seconds: Option<i64>,
    acquire_time: Option<String>,
    renew_time: Option<String>,
    leader_transitions: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    strategy: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    preferred_holder: Option<&'a str>,
}

/// The annotation value client-go writes for `record`, with [`Stamp::Now`] stamped
/// `now`. `leaseDurationSeconds` is at least 1 (a 0 reads as expired elsewhere),
/// and left out when the record has none (as kubert's release leaves it: read
/// back as none, not as a duration nobody wrote).
pub fn encode_record(record: &LockRecord, now: WallTime) -> String {
    let go = GoRecord {
        holder_identity: &record.holder,
        lease_duration_seconds: record.lease_duration_secs.map(|s| s.max(1)),
        acquire_time: Clock::resolve(record.acquire_time, now).map(format_rfc3339_secs),
        renew_time: Clock::resolve(record.renew_time, now).map(format_rfc3339_secs),
        leader_transitions: record.transitions.min(MAX_TRANSITIONS),
        strategy: record.strategy.as_deref(),
        preferred_holder: record
            .handover
            .as_ref()
            .filter(|h| h.priority.is_none())
            .map(|h| &*h.to),
    };
    serde_json::to_string(&go)
        .unwrap_or_else(|e| unreachable!("a struct of strings and integers serialises: {e}"))
}

/// Parses an annotation value in any of the known variants.
pub fn decode_record(json: &str) -> Result<LockRecord, RecordError> {
    let value: Value =
        serde_json::from_str(json).map_err(|e| RecordError::NotJson(e.to_string()))?;
    let obj = value.as_object().ok_or(RecordError::NotAnObject)?;
    let wrong = |field: &'static str, v: &Value| RecordError::WrongType {
        field,
        value: v.to_string(),
    };
    let holder = match obj.get("holderIdentity") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => return Err(wrong("holderIdentity", v)),
    };
    let lease_duration_secs = match (obj.get("leaseDurationSeconds"), obj.get("leaseDuration")) {
        (Some(v), _) if !v.is_null() => {
            Some(seconds(v).ok_or_else(|| wrong("leaseDurationSeconds", v))?)
        }
        (_, Some(v)) if !v.is_null() => Some(
            java_duration(v)
                .or_else(|| seconds(v))
                .ok_or_else(|| wrong("leaseDuration", v))?,
        ),
        _ => None,
    };
    let time = |field: &'static str| match obj.get(field) {
        None | Some(Value::Null) => Ok(Stamp::Unset),
        Some(Value::String(s)) => Ok(stamp_from(Some(s))),
        Some(v) => Err(wrong(field, v)),
    };
    let acquire_time = time("acquireTime")?;
    let renew_time = time("renewTime")?;
    let transitions = match obj.get("leaderTransitions") {
        None | Some(Value::Null) => 0,
        Some(v) => {
            let n = seconds(v).ok_or_else(|| wrong("leaderTransitions", v))?;
            u32::try_from(n.clamp(0, i64::from(MAX_TRANSITIONS))).unwrap_or(MAX_TRANSITIONS)
        }
    };
    let text = |field: &'static str| match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(wrong(field, v)),
    };
    let strategy = text("strategy")?;
    let preferred = text("preferredHolder")?;
    Ok(LockRecord {
        holder: holder.into(),
        lease_duration_secs,
        acquire_time,
        renew_time,
        transitions,
        priority: None,
        handover: preferred.map(|p| Handover {
            to: p.into(),
            priority: None,
        }),
        strategy: strategy.map(Into::into),
    })
}

/// An integer from a JSON number (fractions rounded up, saturating) or a numeric
/// string (the Python client writes `"15"`).
fn seconds(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().map(|_| i64::MAX))
            .or_else(|| {
                let f = n.as_f64()?;
                // `as` saturates for floats out of range; NaN is not JSON.
                Some(f.ceil() as i64)
            }),
        Value::String(s) => {
            let s = s.trim();
            s.parse::<i64>().ok().or_else(|| {
                s.parse::<f64>()
                    .ok()
                    .filter(|f| f.is_finite())
                    .map(|f| f.ceil() as i64)
            })
        }
        _ => None,
    }
}

/// A Java `Duration` string, `PT15S`, `PT1M30S`, `PT0.5S`, `PT2H`, `P1D` (rounded
/// up to whole seconds, saturating).
fn java_duration(v: &Value) -> Option<i64> {
    let s = v.as_str()?.trim().to_ascii_uppercase();
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest.to_owned()),
        None => (false, s),
    };
    let rest = s.strip_prefix('P')?;
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) => (d, t),
        None => (rest, ""),
    };
    let mut total = 0f64;
    if !days.is_empty() {
        total += days.strip_suffix('D')?.parse::<f64>().ok()? * 86_400.0;
    }
    let mut num = String::new();
    for c in time.chars() {
        match c {
            '0'..='9' | '.' | '-' => num.push(c),
            'H' | 'M' | 'S' => {
                let n = num.parse::<f64>().ok()?;
                num.clear();
                total += n * match c {
                    'H' => 3_600.0,
                    'M' => 60.0,
                    _ => 1.0,
                };
            }
            _ => return None,
        }
    }
    if !num.is_empty() || !total.is_finite() {
        return None;
    }
    let secs = total.ceil() as i64;
    Some(if neg { -secs } else { secs })
}

/// Reads the record of a ConfigMap: no annotation is an empty record (nobody
/// holds it, as client-go reads it); a malformed one is held by
/// [`MALFORMED_HOLDER`] and reported.
pub fn record_from_config_map(cm: &ConfigMap) -> LockRecord {
    let annotations = cm.metadata.annotations.as_ref();
    let annotation = |k: &str| annotations.and_then(|a| a.get(k)).map(String::as_str);
    let mut record = match annotation(ANNOTATION) {
        None => LockRecord::default(),
        Some(json) => decode_record(json).unwrap_or_else(|e| {
            tracing::warn!(
                configmap = cm.metadata.name.as_deref().unwrap_or(""),
                namespace = cm.metadata.namespace.as_deref().unwrap_or(""),
                error = %e,
                "malformed leader record; treating it as held by an unknown holder until it expires"
            );
            LockRecord {
                holder: MALFORMED_HOLDER.into(),
                ..LockRecord::default()
            }
        }),
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
/// `kube_support::ObjectLock<ConfigMapCodec>`.
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
