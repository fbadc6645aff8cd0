//! Wall-clock formatting and parsing in the two shapes the API server uses:
//! `Time` (RFC 3339, whole seconds, `2006-01-02T15:04:05Z`) and `MicroTime`
//! (six fractional digits, always UTC, `2006-01-02T15:04:05.000000Z`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds and nanoseconds since the Unix epoch (negative for a date before it).
/// Ordered in time (by `secs`, then `nanos`, which is below a second).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Timestamp {
    pub(crate) secs: i64,
    pub(crate) nanos: u32,
}

impl Timestamp {
    /// The wall clock, which is the emulator's clock: it stamps writes and
    /// decides whether a Lease has expired.
    pub(crate) fn now() -> Self {
        let d = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp {
            secs: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            nanos: d.subsec_nanos(),
        }
    }

    /// `d` later (saturating far in the future).
    pub(crate) fn plus(self, d: Duration) -> Self {
        let nanos = u64::from(self.nanos) + u64::from(d.subsec_nanos());
        let secs = self
            .secs
            .saturating_add(i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
            .saturating_add(i64::try_from(nanos / 1_000_000_000).unwrap_or(0));
        Timestamp {
            secs,
            nanos: (nanos % 1_000_000_000) as u32,
        }
    }

    /// How long after `earlier` this is; zero when it is not after it.
    pub(crate) fn since(self, earlier: Timestamp) -> Duration {
        let nanos = |t: Timestamp| i128::from(t.secs) * 1_000_000_000 + i128::from(t.nanos);
        let apart = (nanos(self) - nanos(earlier)).max(0);
        Duration::new(
            u64::try_from(apart / 1_000_000_000).unwrap_or(u64::MAX),
            (apart % 1_000_000_000) as u32,
        )
    }

    /// The same instant at the microsecond a `MicroTime` keeps.
    pub(crate) fn to_micros(self) -> Self {
        Timestamp {
            secs: self.secs,
            nanos: self.nanos / 1000 * 1000,
        }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn split(ts: Timestamp) -> (i64, u32, u32, i64, i64, i64) {
    let days = ts.secs.div_euclid(86_400);
    let rem = ts.secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    (y, m, d, rem / 3600, (rem / 60) % 60, rem % 60)
}

/// `2006-01-02T15:04:05Z`: metav1.Time as the API server writes it.
pub(crate) fn format_time(ts: Timestamp) -> String {
    let (y, mo, d, h, mi, s) = split(ts);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// `2006-01-02T15:04:05.000000Z`: metav1.MicroTime as the API server writes it.
pub(crate) fn format_micro_time(ts: Timestamp) -> String {
    let (y, mo, d, h, mi, s) = split(ts);
    let micros = ts.nanos / 1000;
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{micros:06}Z")
}

/// Parses RFC 3339 (`Z` or a `±hh:mm` offset, any number of fractional digits).
/// Returns `None` when the text is not RFC 3339.
pub(crate) fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    let b = text.as_bytes();
    if b.len() < 20 {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<u32> {
        let s = text.get(range)?;
        if !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let year = num(0..4)?;
    if b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b't') {
        return None;
    }
    let month = num(5..7)?;
    let day = num(8..10)?;
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let hour = num(11..13)?;
    let minute = num(14..16)?;
    let second = num(17..19)?;
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut nanos: u32 = 0;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return None;
        }
        let digits = &text[start..i];
        // Nanoseconds: the first nine digits, padded with zeros.
        nanos = format!("{:0<9}", &digits[..digits.len().min(9)])
            .parse()
            .ok()?;
    }
    let offset_secs: i64 = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if i + 6 == b.len() && b[i + 3] == b':' => {
            let oh = i64::from(num(i + 1..i + 3)?);
            let om = i64::from(num(i + 4..i + 6)?);
            let v = oh * 3600 + om * 60;
            if *sign == b'+' { v } else { -v }
        }
        _ => return None,
    };
    let days = days_from_civil(i64::from(year), month, day);
    let secs = days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second)
        - offset_secs;
    Some(Timestamp { secs, nanos })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_micro_time_and_normalises_offsets() {
        let ts = parse_rfc3339("2026-08-17T23:11:09.123456789+02:00").expect("valid");
        assert_eq!(format_micro_time(ts), "2026-08-17T21:11:09.123456Z");
        assert_eq!(format_time(ts), "2026-08-17T21:11:09Z");
        let epoch = parse_rfc3339("1970-01-01T00:00:00Z").expect("valid");
        assert_eq!(epoch, Timestamp { secs: 0, nanos: 0 });
        let leap = parse_rfc3339("2024-02-29T12:00:00.5Z").expect("valid");
        assert_eq!(format_micro_time(leap), "2024-02-29T12:00:00.500000Z");
    }

    #[test]
    fn arithmetic_carries_nanoseconds() {
        let t = Timestamp {
            secs: 10,
            nanos: 900_000_000,
        };
        let later = t.plus(Duration::from_millis(250));
        assert_eq!(
            later,
            Timestamp {
                secs: 11,
                nanos: 150_000_000
            }
        );
        assert_eq!(later.since(t), Duration::from_millis(250));
        assert_eq!(t.since(later), Duration::ZERO);
        assert!(t < later);
        assert_eq!(
            later.to_micros(),
            Timestamp {
                secs: 11,
                nanos: 150_000_000
            }
        );
    }

    #[test]
    fn rejects_what_is_not_rfc3339() {
        for bad in [
            "",
            "2026-08-17 23:11:09",
            "2026-13-01T00:00:00Z",
            "2026-08-17T23:11:09",
            "x026-08-17T23:11:09Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }
}
