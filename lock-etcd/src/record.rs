//! The lock record as the etcd key's value: client-go's `LeaderElectionRecord` as
//! JSON, plus this library's priority fields.
//!
//! We write client-go's field names, as its historic ConfigMap and Endpoints
//! locks stored the record:
//!
//! ```json
//! {"holderIdentity":"node-a","leaseDurationSeconds":15,"acquireTime":"2026-08-07T23:11:09Z","renewTime":"2026-08-07T23:11:09Z","leaderTransitions":3}
//! ```
//!
//! Timestamps are RFC 3339 in UTC with whole seconds (an unset one is `null`);
//! `leaseDurationSeconds` is left out when the record has none; `strategy` and
//! `preferredHolder` (a handover request without a priority, Kubernetes' own)
//! follow only when set. The priority and a prioritised handover request are
//! extra fields named as the Kubernetes locks' annotations ([`PRIORITY`],
//! [`HANDOVER_TO`], [`HANDOVER_PRIORITY`]); a client-go reader ignores them.
//!
//! Reading is tolerant (docs/faults.md R7): any field may be absent or `null`; a
//! numeric string counts as its number; `leaseTransitions` is read where
//! `leaderTransitions` is missing; a timestamp that does not parse reads as unset.
//! A value that is not a JSON object, or a field of a type no client writes, is a
//! [`RecordError`]; the lock then reads the record as held by
//! [`MALFORMED_HOLDER`] with no duration (docs/faults.md R6), which the elector
//! takes over after a lease.
//!
//! ```
//! use election_core::{LockRecord, Stamp, WallTime};
//! use lock_etcd::record::{decode_record, encode_record};
//!
//! let record = LockRecord {
//!     holder: "node-a".into(),
//!     lease_duration_secs: Some(15),
//!     renew_time: Stamp::Now,
//!     transitions: 3,
//!     ..LockRecord::default()
//! };
//! let json = encode_record(&record, WallTime::new(1_700_000_000, 0));
//! assert_eq!(
//!     json,
//!     r#"{"holderIdentity":"node-a","leaseDurationSeconds":15,"acquireTime":null,"renewTime":"2023-11-14T22:13:20Z","leaderTransitions":3}"#
//! );
//! let back = decode_record(json.as_bytes()).unwrap();
//! assert_eq!(back.renew_time, Stamp::At(WallTime::new(1_700_000_000, 0)));
//! ```

use election_core::{Handover, LockRecord, MAX_TRANSITIONS, Stamp, WallTime};
use serde::Serialize;
use serde_json::{Map, Value};

/// The field holding the holder's priority (an integer), as the Kubernetes locks'
/// annotation is named.
pub const PRIORITY: &str = "election.rs/priority";
/// The field naming the candidate a prioritised handover request asks for.
pub const HANDOVER_TO: &str = "election.rs/handover-to";
/// The field holding the asking candidate's priority.
pub const HANDOVER_PRIORITY: &str = "election.rs/handover-priority";
/// The holder a malformed record is read as (the core's convention).
pub use election_core::MALFORMED_HOLDER;

/// Why a key's value could not be read as a record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// Not JSON (or not UTF-8).
    #[error("the lock record is not JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("the lock record is not a JSON object")]
    NotAnObject,
    /// A field has a type no known client writes.
    #[error("field {field:?} of the lock record has the wrong type: {value}")]
    WrongType {
        /// The field.
        field: &'static str,
        /// Its value, as JSON.
        value: String,
    },
}

/// client-go's field order, then ours.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
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
    #[serde(
        rename = "election.rs/priority",
        skip_serializing_if = "Option::is_none"
    )]
    priority: Option<i64>,
    #[serde(
        rename = "election.rs/handover-to",
        skip_serializing_if = "Option::is_none"
    )]
    handover_to: Option<&'a str>,
    #[serde(
        rename = "election.rs/handover-priority",
        skip_serializing_if = "Option::is_none"
    )]
    handover_priority: Option<i64>,
}

/// Formats a wall time as RFC 3339 in UTC with whole seconds (client-go's
/// `metav1.Time`); out of range (beyond year 9999) it is clamped.
pub fn format_time(t: WallTime) -> String {
    let ts = jiff::Timestamp::from_second(t.unix_secs).unwrap_or(if t.unix_secs < 0 {
        jiff::Timestamp::MIN
    } else {
        jiff::Timestamp::MAX
    });
    // Whole seconds: the minimum and maximum carry no fraction to drop here.
    let whole = jiff::Timestamp::from_second(ts.as_second()).unwrap_or(ts);
    whole.to_string()
}

/// Parses an RFC 3339 timestamp (any offset, any fraction); `Unset` when it
/// does not parse (timestamps are never used for expiry).
pub fn parse_time(s: &str) -> Stamp {
    match s.trim().parse::<jiff::Timestamp>() {
        Ok(ts) => {
            let nanos = ts.subsec_nanosecond();
            let (secs, nanos) = if nanos < 0 {
                (ts.as_second() - 1, nanos + 1_000_000_000)
            } else {
                (ts.as_second(), nanos)
            };
            Stamp::At(WallTime::new(secs, u32::try_from(nanos).unwrap_or(0)))
        }
        Err(_) => Stamp::Unset,
    }
}

/// The JSON stored for `record`, with [`Stamp::Now`] stamped `now`.
pub fn encode_record(record: &LockRecord, now: WallTime) -> String {
    let resolve = |s: Stamp| match s {
        Stamp::Unset => None,
        Stamp::At(t) => Some(format_time(t)),
        Stamp::Now => Some(format_time(now)),
    };
    let (preferred, handover) = match &record.handover {
        Some(h) if h.priority.is_none() => (Some(&*h.to), None),
        Some(h) => (None, Some(h)),
        None => (None, None),
    };
    let wire = Wire {
        holder_identity: &record.holder,
        lease_duration_seconds: record.lease_duration_secs,
        acquire_time: resolve(record.acquire_time),
        renew_time: resolve(record.renew_time),
        leader_transitions: record.transitions.min(MAX_TRANSITIONS),
        strategy: record.strategy.as_deref(),
        preferred_holder: preferred,
        priority: record.priority,
        handover_to: handover.map(|h| &*h.to),
        handover_priority: handover.and_then(|h| h.priority),
    };
    serde_json::to_string(&wire)
        .unwrap_or_else(|e| unreachable!("a struct of strings and integers serialises: {e}"))
}

/// Parses a key's value.
pub fn decode_record(bytes: &[u8]) -> Result<LockRecord, RecordError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| RecordError::NotJson(e.to_string()))?;
    let obj = value.as_object().ok_or(RecordError::NotAnObject)?;
    let f = Fields(obj);
    let holder = f.text("holderIdentity")?.unwrap_or_default();
    let lease_duration_secs = f.int("leaseDurationSeconds")?;
    let transitions = match f.int("leaderTransitions")? {
        Some(n) => Some(n),
        None => f.int("leaseTransitions")?,
    }
    .map_or(0, |n| {
        u32::try_from(n.clamp(0, i64::from(MAX_TRANSITIONS))).unwrap_or(MAX_TRANSITIONS)
    });
    let time = |field: &'static str| -> Result<Stamp, RecordError> {
        Ok(f.text(field)?.map_or(Stamp::Unset, |s| parse_time(&s)))
    };
    let handover = match (f.text(HANDOVER_TO)?, f.text("preferredHolder")?) {
        (Some(to), _) if !to.is_empty() => Some(Handover {
            to: to.into(),
            priority: f.int(HANDOVER_PRIORITY)?,
        }),
        (_, Some(to)) if !to.is_empty() => Some(Handover {
            to: to.into(),
            priority: None,
        }),
        _ => None,
    };
    Ok(LockRecord {
        holder: holder.into(),
        lease_duration_secs,
        acquire_time: time("acquireTime")?,
        renew_time: time("renewTime")?,
        transitions,
        priority: f.int(PRIORITY)?,
        handover,
        strategy: f
            .text("strategy")?
            .filter(|s| !s.is_empty())
            .map(Into::into),
    })
}

/// Reads a value as a record; a malformed one is held by [`MALFORMED_HOLDER`]
/// and reported (a `tracing` warning naming `key`).
pub fn record_or_malformed(key: &str, bytes: &[u8]) -> LockRecord {
    decode_record(bytes).unwrap_or_else(|e| {
        tracing::warn!(
            key,
            error = %e,
            "malformed leader record; treating it as held by an unknown holder until it expires"
        );
        LockRecord {
            holder: MALFORMED_HOLDER.into(),
            ..LockRecord::default()
        }
    })
}

/// Typed, tolerant access to a record's fields.
struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn wrong(field: &'static str, v: &Value) -> RecordError {
        RecordError::WrongType {
            field,
            value: v.to_string(),
        }
    }

    /// A string field; absent or `null` is `None`.
    fn text(&self, field: &'static str) -> Result<Option<String>, RecordError> {
        match self.0.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(Self::wrong(field, v)),
        }
    }

    /// An integer field: a number (a fraction rounded up, saturating) or a
    /// numeric string; absent or `null` is `None`.
    fn int(&self, field: &'static str) -> Result<Option<i64>, RecordError> {
        let v = match self.0.get(field) {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => v,
        };
        let n = match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_u64().map(|_| i64::MAX))
                // `as` saturates for floats out of range; NaN is not JSON.
                .or_else(|| n.as_f64().map(|f| f.ceil() as i64)),
            Value::String(s) => s.trim().parse::<i64>().ok(),
            _ => None,
        };
        n.map(Some).ok_or_else(|| Self::wrong(field, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn every_field_round_trips() {
        let t = WallTime::new(1_600_000_000, 0);
        for handover in [
            None,
            Some(Handover {
                to: Arc::from("b"),
                priority: Some(9),
            }),
            Some(Handover {
                to: Arc::from("c"),
                priority: None,
            }),
        ] {
            let record = LockRecord {
                holder: "a".into(),
                lease_duration_secs: Some(-5),
                acquire_time: Stamp::At(t),
                renew_time: Stamp::Unset,
                transitions: MAX_TRANSITIONS,
                priority: Some(-3),
                handover,
                strategy: Some("OldestEmulationVersion".into()),
            };
            let json = encode_record(&record, t);
            assert_eq!(decode_record(json.as_bytes()), Ok(record), "{json}");
        }
    }

    #[test]
    fn r7_sparse_and_foreign_records_read_tolerantly() {
        let r = decode_record(b"{}").unwrap();
        assert_eq!(r, LockRecord::default());
        let r = decode_record(
            br#"{"holderIdentity":null,"leaseDurationSeconds":"15","leaseTransitions":4,"renewTime":"not a time","acquireTime":"2026-08-07T23:11:09.5+02:00"}"#,
        )
        .unwrap();
        assert_eq!(r.holder.as_ref(), "");
        assert_eq!(r.lease_duration_secs, Some(15));
        assert_eq!(r.transitions, 4);
        assert_eq!(r.renew_time, Stamp::Unset);
        assert_eq!(
            r.acquire_time,
            Stamp::At(WallTime::new(1_786_137_069, 500_000_000))
        );
        let r = decode_record(br#"{"leaderTransitions":-3,"leaseDurationSeconds":1.5}"#).unwrap();
        assert_eq!((r.transitions, r.lease_duration_secs), (0, Some(2)));
    }

    #[test]
    fn r6_malformed_values_are_typed_errors_and_read_as_an_unknown_holder() {
        assert!(matches!(
            decode_record(b"not json"),
            Err(RecordError::NotJson(_))
        ));
        assert!(matches!(
            decode_record(&[0xff, 0xfe]),
            Err(RecordError::NotJson(_))
        ));
        assert_eq!(decode_record(b"[1]"), Err(RecordError::NotAnObject));
        assert!(matches!(
            decode_record(br#"{"holderIdentity":7}"#),
            Err(RecordError::WrongType {
                field: "holderIdentity",
                ..
            })
        ));
        assert!(matches!(
            decode_record(br#"{"leaseDurationSeconds":"fifteen"}"#),
            Err(RecordError::WrongType { .. })
        ));
        let r = record_or_malformed("/k", b"{");
        assert_eq!(r.holder.as_ref(), MALFORMED_HOLDER);
        assert_eq!(r.lease_duration_secs, None);
    }

    #[test]
    fn times_outside_the_range_are_clamped_not_panics() {
        assert!(format_time(WallTime::new(i64::MAX, 0)).starts_with("9999-"));
        assert!(format_time(WallTime::new(i64::MIN, 0)).starts_with("-009999-"));
        assert_eq!(
            format_time(WallTime::new(1_700_000_000, 999_999_999)),
            "2023-11-14T22:13:20Z"
        );
    }
}
