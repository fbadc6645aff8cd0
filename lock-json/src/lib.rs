//! client-go's `LeaderElectionRecord` as JSON, written once for every lock that
//! stores the record as one value: the ConfigMap lock (in an annotation, as
//! client-go's historic `ConfigMapLock`), the etcd lock (as the key's value),
//! and a lock of your own on any store that holds a string.
//!
//! We write client-go's form, field order and all:
//!
//! ```json
//! {"holderIdentity":"node-a","leaseDurationSeconds":15,"acquireTime":"2026-08-07T23:11:09Z","renewTime":"2026-08-07T23:11:09Z","leaderTransitions":3}
//! ```
//!
//! Timestamps are RFC 3339 in UTC with whole seconds (an unset one is `null`);
//! `leaseDurationSeconds` is at least 1 (a 0 reads as expired elsewhere) and left
//! out when the record has none (as kubert's release leaves it); `strategy` and
//! `preferredHolder` (a handover request without a priority, Kubernetes' own)
//! follow only when set. With [`Encoding::WithPriority`], the priority and a
//! prioritised handover request follow as fields named like the Kubernetes
//! locks' annotations ([`PRIORITY`], [`HANDOVER_TO`], [`HANDOVER_PRIORITY`]); a
//! client-go reader ignores them.
//!
//! Reading is tolerant (docs/faults.md R7, R11): any field may be absent or
//! `null`; a number may be a numeric string (the Python client writes `"15"`)
//! or a fraction (rounded up, saturating); fabric8's `leaseDuration` (a Java
//! `Duration` such as `"PT15S"`, or seconds) stands for `leaseDurationSeconds`,
//! and `leaseTransitions` for a missing `leaderTransitions`; timestamps may
//! carry any offset and fraction, or none (the Python client's naive
//! `2026-08-17 23:11:09.123456`, read as UTC), and one that does not parse reads
//! as unset (R8: timestamps are never used for expiry). A value that is not a
//! JSON object, or a field of a type no client writes, is a [`RecordError`];
//! [`record_or_malformed`] then reads the record as held by [`MALFORMED_HOLDER`]
//! with no duration (R6), which the elector takes over after a lease.
//!
//! ```
//! use election_core::{LockRecord, Stamp, WallTime};
//! use lock_json::{Encoding, decode_record, encode_record};
//!
//! let record = LockRecord {
//!     holder: "node-a".into(),
//!     lease_duration_secs: Some(15),
//!     renew_time: Stamp::Now,
//!     transitions: 3,
//!     ..LockRecord::default()
//! };
//! let json = encode_record(&record, WallTime::new(1_700_000_000, 0), Encoding::ClientGo);
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

/// The holder a malformed record is read as (the core's convention).
pub use election_core::MALFORMED_HOLDER;

/// The field (and, on Kubernetes objects, the annotation) holding the holder's
/// priority, an integer.
pub const PRIORITY: &str = "kube-elector.dev/priority";
/// The field (annotation) naming the candidate a prioritised handover request
/// asks for.
pub const HANDOVER_TO: &str = "kube-elector.dev/handover-to";
/// The field (annotation) holding the asking candidate's priority.
pub const HANDOVER_PRIORITY: &str = "kube-elector.dev/handover-priority";

/// Why a value could not be read as a record.
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

/// Which fields [`encode_record`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// client-go's fields alone: the priority and a prioritised handover request
    /// are the caller's to store (the ConfigMap lock keeps them in annotations
    /// beside the JSON, as the Lease lock does).
    ClientGo,
    /// client-go's fields, then the priority and a prioritised handover request
    /// as the fields [`PRIORITY`], [`HANDOVER_TO`] and [`HANDOVER_PRIORITY`] (a
    /// store that holds only this value, such as an etcd key).
    WithPriority,
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
        rename = "kube-elector.dev/priority",
        skip_serializing_if = "Option::is_none"
    )]
    priority: Option<i64>,
    #[serde(
        rename = "kube-elector.dev/handover-to",
        skip_serializing_if = "Option::is_none"
    )]
    handover_to: Option<&'a str>,
    #[serde(
        rename = "kube-elector.dev/handover-priority",
        skip_serializing_if = "Option::is_none"
    )]
    handover_priority: Option<i64>,
}

/// A wall time as a `jiff` timestamp (the type k8s-openapi's times wrap),
/// clamped outside jiff's range (years -9999..=9999).
pub fn to_timestamp(t: WallTime) -> jiff::Timestamp {
    let nanos = i32::try_from(t.nanos).unwrap_or(0);
    match jiff::Timestamp::new(t.unix_secs, nanos) {
        Ok(ts) => ts,
        Err(_) if t.unix_secs < 0 => jiff::Timestamp::MIN,
        Err(_) => jiff::Timestamp::MAX,
    }
}

/// A `jiff` timestamp as a wall time.
pub fn from_timestamp(ts: jiff::Timestamp) -> WallTime {
    let (secs, nanos) = (ts.as_second(), ts.subsec_nanosecond());
    if nanos < 0 {
        // jiff gives negative sub-second parts before the epoch.
        WallTime::new(secs - 1, (1_000_000_000 + nanos).unsigned_abs())
    } else {
        WallTime::new(secs, nanos.unsigned_abs())
    }
}

/// Formats a wall time as RFC 3339 in UTC with whole seconds (client-go's
/// `metav1.Time`), truncating sub-seconds; out of range (beyond year 9999) it is
/// clamped.
pub fn format_time(t: WallTime) -> String {
    let ts = to_timestamp(WallTime::new(t.unix_secs, 0));
    // Whole seconds: the minimum and maximum carry no fraction to drop here.
    let whole = jiff::Timestamp::from_second(ts.as_second()).unwrap_or(ts);
    whole.to_string()
}

/// Parses a timestamp as other clients write them: RFC 3339 with any offset and
/// any number of fractional digits, or a naive date-time (with a space, as the
/// Python client writes, or a `T`), read as UTC. [`Stamp::Unset`] when it does not
/// parse (timestamps are never used for expiry).
pub fn parse_time(s: &str) -> Stamp {
    let s = s.trim();
    let ts = s.parse::<jiff::Timestamp>().ok().or_else(|| {
        let naive = s.parse::<jiff::civil::DateTime>().ok()?;
        jiff::tz::TimeZone::UTC.to_timestamp(naive).ok()
    });
    ts.map_or(Stamp::Unset, |ts| Stamp::At(from_timestamp(ts)))
}

/// The JSON stored for `record`, with [`Stamp::Now`] stamped `now`.
pub fn encode_record(record: &LockRecord, now: WallTime, encoding: Encoding) -> String {
    let resolve = |s: Stamp| match s {
        Stamp::Unset => None,
        Stamp::At(t) => Some(format_time(t)),
        Stamp::Now => Some(format_time(now)),
    };
    let (preferred, prioritised) = match &record.handover {
        Some(h) if h.priority.is_none() => (Some(&*h.to), None),
        Some(h) => (None, Some(h)),
        None => (None, None),
    };
    let ours = encoding == Encoding::WithPriority;
    let prioritised = prioritised.filter(|_| ours);
    let wire = Wire {
        holder_identity: &record.holder,
        lease_duration_seconds: record.lease_duration_secs.map(|s| s.max(1)),
        acquire_time: resolve(record.acquire_time),
        renew_time: resolve(record.renew_time),
        leader_transitions: record.transitions.min(MAX_TRANSITIONS),
        strategy: record.strategy.as_deref(),
        preferred_holder: preferred,
        priority: record.priority.filter(|_| ours),
        handover_to: prioritised.map(|h| &*h.to),
        handover_priority: prioritised.and_then(|h| h.priority),
    };
    serde_json::to_string(&wire)
        .unwrap_or_else(|e| unreachable!("a struct of strings and integers serialises: {e}"))
}

/// Parses a stored value, in any of the variants above.
pub fn decode_record(bytes: &[u8]) -> Result<LockRecord, RecordError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| RecordError::NotJson(e.to_string()))?;
    let obj = value.as_object().ok_or(RecordError::NotAnObject)?;
    let f = Fields(obj);
    let holder = f.text("holderIdentity")?.unwrap_or_default();
    let lease_duration_secs = match f.int("leaseDurationSeconds")? {
        Some(secs) => Some(secs),
        None => f.java_duration("leaseDuration")?,
    };
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
/// with no duration, and reported (a `tracing` warning naming `what`, the
/// value's place: `etcd key /elections/a`, `configmaps/ns/name`).
pub fn record_or_malformed(what: &str, bytes: &[u8]) -> LockRecord {
    decode_record(bytes).unwrap_or_else(|e| {
        tracing::warn!(
            lock = what,
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

    fn get(&self, field: &str) -> Option<&Value> {
        self.0.get(field).filter(|v| !v.is_null())
    }

    /// A string field; absent or `null` is `None`.
    fn text(&self, field: &'static str) -> Result<Option<String>, RecordError> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(Self::wrong(field, v)),
        }
    }

    /// An integer field: a number or a numeric string; absent or `null` is `None`.
    fn int(&self, field: &'static str) -> Result<Option<i64>, RecordError> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => seconds(v).map(Some).ok_or_else(|| Self::wrong(field, v)),
        }
    }

    /// fabric8's duration: a Java `Duration` string or a number of seconds.
    fn java_duration(&self, field: &'static str) -> Result<Option<i64>, RecordError> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => java_duration(v)
                .or_else(|| seconds(v))
                .map(Some)
                .ok_or_else(|| Self::wrong(field, v)),
        }
    }
}

/// An integer from a JSON number (a fraction rounded up, saturating) or a
/// numeric string.
fn seconds(v: &Value) -> Option<i64> {
    // `as` saturates for floats out of range; NaN is not JSON.
    let ceil = |f: f64| f.ceil() as i64;
    match v {
        Value::Number(n) => n
            .as_i64()
            .or_else(|| n.as_u64().map(|_| i64::MAX))
            .or_else(|| n.as_f64().map(ceil)),
        Value::String(s) => {
            let s = s.trim();
            s.parse::<i64>()
                .ok()
                .or_else(|| s.parse::<f64>().ok().filter(|f| f.is_finite()).map(ceil))
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
    // `-P-1e20D`: the saturated `i64::MIN` has no negation; saturate again.
    Some(if neg { secs.saturating_neg() } else { secs })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn every_field_round_trips_with_priority() {
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
                lease_duration_secs: Some(7),
                acquire_time: Stamp::At(t),
                renew_time: Stamp::Unset,
                transitions: MAX_TRANSITIONS,
                priority: Some(-3),
                handover,
                strategy: Some("OldestEmulationVersion".into()),
            };
            let json = encode_record(&record, t, Encoding::WithPriority);
            assert_eq!(decode_record(json.as_bytes()), Ok(record), "{json}");
        }
    }

    #[test]
    fn client_go_encoding_leaves_the_priority_out_and_keeps_preferred_holder() {
        let record = LockRecord {
            holder: "a".into(),
            lease_duration_secs: Some(0),
            priority: Some(5),
            handover: Some(Handover {
                to: Arc::from("b"),
                priority: Some(9),
            }),
            ..LockRecord::default()
        };
        let json = encode_record(&record, WallTime::new(0, 0), Encoding::ClientGo);
        assert_eq!(
            json,
            r#"{"holderIdentity":"a","leaseDurationSeconds":1,"acquireTime":null,"renewTime":null,"leaderTransitions":0}"#
        );
        let preferred = LockRecord {
            handover: Some(Handover {
                to: Arc::from("b"),
                priority: None,
            }),
            ..record
        };
        let json = encode_record(&preferred, WallTime::new(0, 0), Encoding::ClientGo);
        assert!(json.ends_with(r#""preferredHolder":"b"}"#), "{json}");
    }

    #[test]
    fn r7_r11_sparse_and_foreign_records_read_tolerantly() {
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
        // fabric8 and the Python client.
        for (json, secs) in [
            (r#"{"leaseDuration":"PT15S"}"#, 15),
            (r#"{"leaseDuration":"PT1M30.5S"}"#, 91),
            (r#"{"leaseDuration":"P1D"}"#, 86_400),
            (r#"{"leaseDuration":20}"#, 20),
        ] {
            let r = decode_record(json.as_bytes()).unwrap();
            assert_eq!(r.lease_duration_secs, Some(secs), "{json}");
        }
        let r = decode_record(br#"{"renewTime":"2026-08-17 23:11:09.123456"}"#).unwrap();
        assert_eq!(
            r.renew_time,
            Stamp::At(WallTime::new(1_787_008_269, 123_456_000))
        );
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
        for (json, field) in [
            (r#"{"holderIdentity":7}"#, "holderIdentity"),
            (
                r#"{"leaseDurationSeconds":"fifteen"}"#,
                "leaseDurationSeconds",
            ),
            (r#"{"leaseDuration":"PT15X"}"#, "leaseDuration"),
            (r#"{"renewTime":5}"#, "renewTime"),
            (r#"{"leaderTransitions":[]}"#, "leaderTransitions"),
        ] {
            match decode_record(json.as_bytes()) {
                Err(RecordError::WrongType { field: f, .. }) => assert_eq!(f, field, "{json}"),
                other => panic!("{json}: {other:?}"),
            }
        }
        let r = record_or_malformed("etcd key /k", b"{");
        assert_eq!(r.holder.as_ref(), MALFORMED_HOLDER);
        assert_eq!(r.lease_duration_secs, None);
    }

    /// Found while writing the fuzz target `json_record`: a negated Java
    /// duration whose number is itself negative and beyond `i64` saturated to
    /// `i64::MIN`, whose negation overflowed (a panic with overflow checks).
    #[test]
    fn a_doubly_negative_huge_java_duration_saturates_instead_of_overflowing() {
        let r = decode_record(br#"{"leaseDuration":"-P-1e20D"}"#).unwrap();
        assert_eq!(r.lease_duration_secs, Some(i64::MAX));
        let r = decode_record(br#"{"leaseDuration":"-PT-99999999999999999999S"}"#).unwrap();
        assert_eq!(r.lease_duration_secs, Some(i64::MAX));
        let r = decode_record(br#"{"leaseDuration":"P-1e20D"}"#).unwrap();
        assert_eq!(r.lease_duration_secs, Some(i64::MIN));
    }

    #[test]
    fn r8_timestamps_in_other_formats_parse_or_are_ignored() {
        let t = WallTime::new(1_786_144_269, 123_456_789); // 2026-08-07T23:11:09Z
        let secs = Stamp::At(WallTime::new(t.unix_secs, 0));
        assert_eq!(parse_time("2026-08-07T23:11:09Z"), secs);
        assert_eq!(parse_time("2026-08-07T23:11:09.123456789Z"), Stamp::At(t));
        assert_eq!(parse_time("2026-08-08T01:11:09+02:00"), secs);
        assert_eq!(
            parse_time("2026-08-07 23:11:09.123456"),
            Stamp::At(WallTime::new(t.unix_secs, 123_456_000))
        );
        assert_eq!(parse_time("2026-08-07T23:11:09"), secs);
        assert_eq!(parse_time("yesterday"), Stamp::Unset);
        assert_eq!(parse_time(""), Stamp::Unset);
        assert_eq!(format_time(t), "2026-08-07T23:11:09Z", "truncated");
    }

    #[test]
    fn wall_times_round_trip_through_jiff_before_the_epoch_too() {
        let t = WallTime::new(-2, 500_000_000);
        assert_eq!(from_timestamp(to_timestamp(t)), t);
        assert_eq!(
            to_timestamp(WallTime::new(i64::MAX, 0)),
            jiff::Timestamp::MAX
        );
        assert_eq!(
            to_timestamp(WallTime::new(i64::MIN, 0)),
            jiff::Timestamp::MIN
        );
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
