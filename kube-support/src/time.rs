//! Wall-clock time for lock records: the injectable clock that stamps writes, and
//! the timestamp formats Kubernetes clients write and read.
//!
//! Remote timestamps are never used for expiry (the core times versions on its own
//! monotonic clock), so parsing is lenient: a field that cannot be parsed reads as
//! [`Stamp::Unset`], never as an error.

use std::fmt;
use std::sync::Arc;

use election_core::{Stamp, WallTime};
use k8s_openapi::jiff::{Timestamp, civil, tz::TimeZone};

/// The wall clock a lock stamps [`Stamp::Now`] with. Cheap to clone.
///
/// [`Clock::system`] reads `SystemTime`; tests inject a fixed or stepping clock with
/// [`Clock::from_fn`].
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> WallTime + Send + Sync>);

impl Clock {
    /// The system's wall clock.
    pub fn system() -> Self {
        Clock(Arc::new(WallTime::now))
    }

    /// A clock that reads `f`.
    pub fn from_fn(f: impl Fn() -> WallTime + Send + Sync + 'static) -> Self {
        Clock(Arc::new(f))
    }

    /// A clock stopped at `t`.
    pub fn fixed(t: WallTime) -> Self {
        Clock(Arc::new(move || t))
    }

    /// The current wall time by this clock.
    pub fn now(&self) -> WallTime {
        (self.0)()
    }

    /// Resolves a stamp of a write: [`Stamp::Now`] becomes `now`, the rest is kept.
    pub fn resolve(stamp: Stamp, now: WallTime) -> Option<WallTime> {
        match stamp {
            Stamp::Unset => None,
            Stamp::At(t) => Some(t),
            Stamp::Now => Some(now),
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock")
    }
}

/// Converts a wall time to a `jiff` timestamp, clamping outside jiff's range
/// (years -9999..=9999).
pub fn to_timestamp(t: WallTime) -> Timestamp {
    let nanos = i32::try_from(t.nanos).unwrap_or(0);
    match Timestamp::new(t.unix_secs, nanos) {
        Ok(ts) => ts,
        Err(_) if t.unix_secs < 0 => Timestamp::MIN,
        Err(_) => Timestamp::MAX,
    }
}

/// Converts a `jiff` timestamp to a wall time.
pub fn from_timestamp(ts: Timestamp) -> WallTime {
    let secs = ts.as_second();
    let nanos = ts.subsec_nanosecond();
    if nanos < 0 {
        // jiff gives negative sub-second parts before the epoch.
        WallTime::new(secs - 1, (1_000_000_000 + nanos).unsigned_abs())
    } else {
        WallTime::new(secs, nanos.unsigned_abs())
    }
}

/// Formats `t` as Kubernetes' `MicroTime`: `2006-01-02T15:04:05.000000Z`, six
/// fractional digits (truncated, as Go does), UTC.
pub fn format_micro(t: WallTime) -> String {
    let ts = to_timestamp(t);
    let dt = TimeZone::UTC.to_datetime(ts);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.subsec_nanosecond() / 1_000
    )
}

/// Formats `t` as RFC 3339 with whole seconds in UTC, `2006-01-02T15:04:05Z` (Go's
/// `metav1.Time` and client-go's ConfigMap record), truncating sub-seconds.
pub fn format_rfc3339_secs(t: WallTime) -> String {
    let ts = to_timestamp(t);
    let dt = TimeZone::UTC.to_datetime(ts);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )
}

/// Parses a timestamp as other clients write them, leniently: RFC 3339 with any
/// number of fractional digits and any offset (`Z`, `+02:00`), and naive date-times
/// (`2026-08-17 23:11:09.123456` from the Python client, or with a `T`), which are
/// read as UTC. `None` for anything else.
pub fn parse_timestamp(s: &str) -> Option<WallTime> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(ts) = s.parse::<Timestamp>() {
        return Some(from_timestamp(ts));
    }
    let dt = s.parse::<civil::DateTime>().ok()?;
    let ts = TimeZone::UTC.to_timestamp(dt).ok()?;
    Some(from_timestamp(ts))
}

/// Reads an optional timestamp field as a [`Stamp`]: absent or unparseable is
/// [`Stamp::Unset`].
pub fn stamp_from(s: Option<&str>) -> Stamp {
    match s.and_then(parse_timestamp) {
        Some(t) => Stamp::At(t),
        None => Stamp::Unset,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: WallTime = WallTime {
        unix_secs: 1_786_144_269, // 2026-08-07T23:11:09Z
        nanos: 123_456_789,
    };

    #[test]
    fn micro_time_has_six_digits_in_utc() {
        assert_eq!(format_micro(T), "2026-08-07T23:11:09.123456Z");
        assert_eq!(
            format_micro(WallTime::new(0, 0)),
            "1970-01-01T00:00:00.000000Z"
        );
    }

    #[test]
    fn micro_time_matches_k8s_openapi() {
        let ours = format_micro(T);
        let theirs = serde_json::to_value(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(to_timestamp(T)),
        )
        .unwrap();
        assert_eq!(theirs, serde_json::Value::String(ours));
    }

    #[test]
    fn rfc3339_seconds_truncates() {
        assert_eq!(format_rfc3339_secs(T), "2026-08-07T23:11:09Z");
    }

    #[test]
    fn r8_timestamps_in_other_formats_parse_or_are_ignored() {
        let secs = WallTime::new(T.unix_secs, 0);
        assert_eq!(parse_timestamp("2026-08-07T23:11:09Z"), Some(secs));
        assert_eq!(parse_timestamp("2026-08-07T23:11:09.123456789Z"), Some(T));
        assert_eq!(parse_timestamp("2026-08-08T01:11:09+02:00"), Some(secs));
        assert_eq!(
            parse_timestamp("2026-08-07 23:11:09.123456"),
            Some(WallTime::new(T.unix_secs, 123_456_000))
        );
        assert_eq!(parse_timestamp("2026-08-07T23:11:09"), Some(secs));
        assert_eq!(parse_timestamp("yesterday"), None);
        assert_eq!(parse_timestamp(""), None);
        assert_eq!(stamp_from(Some("garbage")), Stamp::Unset);
        assert_eq!(stamp_from(None), Stamp::Unset);
    }

    #[test]
    fn round_trips_before_the_epoch_and_clamps_far_out() {
        let t = WallTime::new(-2, 500_000_000);
        assert_eq!(from_timestamp(to_timestamp(t)), t);
        assert_eq!(to_timestamp(WallTime::new(i64::MAX, 0)), Timestamp::MAX);
        assert_eq!(to_timestamp(WallTime::new(i64::MIN, 0)), Timestamp::MIN);
    }

    #[test]
    fn clock_resolves_stamps() {
        let c = Clock::fixed(T);
        assert_eq!(Clock::resolve(Stamp::Now, c.now()), Some(T));
        assert_eq!(Clock::resolve(Stamp::At(secs()), c.now()), Some(secs()));
        assert_eq!(Clock::resolve(Stamp::Unset, c.now()), None);
    }

    fn secs() -> WallTime {
        WallTime::new(5, 0)
    }
}
