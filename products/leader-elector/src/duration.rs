//! Go-style durations for the command line (`15s`, `1m30s`, `1.5s`, `250ms`), as
//! the classic `election` sidecar and client-go's flags take them (Go's
//! `time.ParseDuration`), written here in a few lines rather than pulled in.
//!
//! Accepted: one or more `<number><unit>` pairs, the number a decimal with an
//! optional fraction (`1.5`, `.5`, `2.`), the unit one of `ns`, `us` (or `µs`),
//! `ms`, `s`, `m`, `h`; and a bare `0`. Refused, each with a typed
//! [`DurationError`]: an empty value, a sign (a negative duration means nothing
//! here; a leading `+` is refused too, for one spelling), a number without a unit,
//! an unknown unit, and a value beyond [`Duration::MAX`]. Fractions are exact to
//! the nanosecond (digits beyond it are dropped, as Go does).

use std::time::Duration;

/// Why a duration could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// The value is empty.
    #[error("empty duration (e.g. 15s, 1m30s, 250ms)")]
    Empty,
    /// The value starts with a sign.
    #[error("duration {0:?} has a sign; durations are positive (e.g. 15s)")]
    Signed(String),
    /// A number is missing where one was expected (`s`, `1s.5m`).
    #[error("expected a number in duration {0:?} (e.g. 15s, 1m30s, 1.5s)")]
    ExpectedNumber(String),
    /// A number has no unit after it (`15`).
    #[error("missing unit in duration {0:?} (e.g. 15s; units: ns, us, ms, s, m, h)")]
    MissingUnit(String),
    /// A unit is not one of `ns`, `us`, `µs`, `ms`, `s`, `m`, `h`.
    #[error("unknown unit {unit:?} in duration {value:?} (units: ns, us, ms, s, m, h)")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole value.
        value: String,
    },
    /// The value is larger than a `Duration` can hold.
    #[error("duration {0:?} is too large")]
    Overflow(String),
}

/// Nanoseconds per unit.
fn unit_nanos(unit: &str) -> Option<u128> {
    Some(match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// Reads a Go-style duration: `15s`, `1m30s`, `1.5s`, `250ms`, `2h`, `0`.
///
/// ```
/// use std::time::Duration;
/// use leader_elector::duration::parse_duration;
///
/// assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
/// assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1_500)));
/// assert!(parse_duration("15").is_err()); // a unit is required
/// ```
pub fn parse_duration(value: &str) -> Result<Duration, DurationError> {
    let owned = || value.to_owned();
    if value.is_empty() {
        return Err(DurationError::Empty);
    }
    if value.starts_with(['-', '+']) {
        return Err(DurationError::Signed(owned()));
    }
    if value == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total: u128 = 0;
    let mut rest = value;
    while !rest.is_empty() {
        // The number: digits, optionally a '.' and more digits; at least one digit.
        let int_len = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (int_digits, after_int) = rest.split_at(int_len);
        let (frac_digits, after_number) = match after_int.strip_prefix('.') {
            Some(after_dot) => {
                let len = after_dot
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(after_dot.len());
                after_dot.split_at(len)
            }
            None => ("", after_int),
        };
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err(DurationError::ExpectedNumber(owned()));
        }
        // The unit: everything up to the next digit or '.'.
        let unit_len = after_number
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after_number.len());
        let (unit, next) = after_number.split_at(unit_len);
        if unit.is_empty() {
            return Err(DurationError::MissingUnit(owned()));
        }
        let per_unit = unit_nanos(unit).ok_or_else(|| DurationError::UnknownUnit {
            unit: unit.to_owned(),
            value: owned(),
        })?;
        let overflow = || DurationError::Overflow(owned());
        // The whole part, exactly; the fraction, exact to the nanosecond.
        let whole: u128 = if int_digits.is_empty() {
            0
        } else {
            int_digits.parse().map_err(|_| overflow())?
        };
        let mut nanos = whole.checked_mul(per_unit).ok_or_else(overflow)?;
        let mut scale = per_unit;
        for digit in frac_digits.bytes() {
            scale /= 10;
            if scale == 0 {
                break;
            }
            // A whole part just below the limit leaves no room for the fraction.
            nanos = nanos
                .checked_add(u128::from(digit - b'0') * scale)
                .ok_or_else(overflow)?;
        }
        total = total.checked_add(nanos).ok_or_else(overflow)?;
        rest = next;
    }
    let secs =
        u64::try_from(total / 1_000_000_000).map_err(|_| DurationError::Overflow(owned()))?;
    // The remainder is below 10^9: it fits.
    let subsec =
        u32::try_from(total % 1_000_000_000).map_err(|_| DurationError::Overflow(owned()))?;
    Ok(Duration::new(secs, subsec))
}

/// Writes `d` as [`parse_duration`] reads it, the shortest exact way Go's
/// `Duration.String` would (`15s`, `1.5s`, `250ms`, `1m30s`).
pub fn format_duration(d: Duration) -> String {
    if d.is_zero() {
        return "0s".to_owned();
    }
    let nanos = d.as_nanos();
    if nanos < 1_000_000_000 {
        // Below a second: the largest unit that keeps it whole-ish.
        let (unit, per) = if nanos.is_multiple_of(1_000_000) {
            ("ms", 1_000_000)
        } else if nanos.is_multiple_of(1_000) {
            ("us", 1_000)
        } else {
            ("ns", 1)
        };
        return format!("{}{unit}", nanos / per);
    }
    let hours = nanos / 3_600_000_000_000;
    let minutes = (nanos / 60_000_000_000) % 60;
    let sec_nanos = nanos % 60_000_000_000;
    let mut out = String::new();
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    let whole = sec_nanos / 1_000_000_000;
    let frac = sec_nanos % 1_000_000_000;
    if frac == 0 {
        out.push_str(&format!("{whole}s"));
    } else {
        let digits = format!("{frac:09}");
        out.push_str(&format!("{whole}.{}s", digits.trim_end_matches('0')));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn go_style_durations_are_read() {
        for (input, want) in [
            ("0", Duration::ZERO),
            ("0s", Duration::ZERO),
            ("15s", ms(15_000)),
            ("10s", ms(10_000)),
            ("2s", ms(2_000)),
            ("250ms", ms(250)),
            ("1.5s", ms(1_500)),
            (".5s", ms(500)),
            ("2.s", ms(2_000)),
            ("1m30s", ms(90_000)),
            ("1h2m3s4ms", ms(3_723_004)),
            ("2h", ms(7_200_000)),
            ("1.5h", ms(5_400_000)),
            ("100us", Duration::from_micros(100)),
            ("100µs", Duration::from_micros(100)),
            ("7ns", Duration::from_nanos(7)),
            ("1.0000000019s", Duration::from_nanos(1_000_000_001)),
            ("0.1m", ms(6_000)),
            ("1s1s", ms(2_000)),
        ] {
            assert_eq!(parse_duration(input), Ok(want), "{input}");
        }
    }

    #[test]
    fn bad_durations_are_typed_errors() {
        assert_eq!(parse_duration(""), Err(DurationError::Empty));
        assert_eq!(
            parse_duration("-15s"),
            Err(DurationError::Signed("-15s".into()))
        );
        assert_eq!(
            parse_duration("+15s"),
            Err(DurationError::Signed("+15s".into()))
        );
        assert_eq!(
            parse_duration("15"),
            Err(DurationError::MissingUnit("15".into()))
        );
        assert_eq!(
            parse_duration("1m30"),
            Err(DurationError::MissingUnit("1m30".into()))
        );
        assert_eq!(
            parse_duration("s"),
            Err(DurationError::ExpectedNumber("s".into()))
        );
        assert_eq!(
            parse_duration("."),
            Err(DurationError::ExpectedNumber(".".into()))
        );
        assert_eq!(
            parse_duration("1s."),
            Err(DurationError::ExpectedNumber("1s.".into()))
        );
        assert_eq!(
            parse_duration("1.5.5s"),
            Err(DurationError::MissingUnit("1.5.5s".into()))
        );
        assert_eq!(
            parse_duration("15x"),
            Err(DurationError::UnknownUnit {
                unit: "x".into(),
                value: "15x".into()
            })
        );
        assert_eq!(
            parse_duration("15 s"),
            Err(DurationError::UnknownUnit {
                unit: " s".into(),
                value: "15 s".into()
            })
        );
        assert_eq!(
            parse_duration("15sec"),
            Err(DurationError::UnknownUnit {
                unit: "sec".into(),
                value: "15sec".into()
            })
        );
        let huge = format!("{}h", u64::MAX);
        assert_eq!(parse_duration(&huge), Err(DurationError::Overflow(huge)));
        let digits = "9".repeat(60) + "s";
        assert_eq!(
            parse_duration(&digits),
            Err(DurationError::Overflow(digits))
        );
        // The message says what was wrong and what would do.
        let message = parse_duration("15").unwrap_err().to_string();
        assert!(
            message.contains("missing unit") && message.contains("15s"),
            "{message}"
        );
    }

    /// Found while writing the fuzz target `sidecar_args`: a whole part whose
    /// nanoseconds fit a `u128` with no room left for its fraction overflowed
    /// the addition of the fraction (a panic with overflow checks).
    #[test]
    fn a_fraction_beyond_the_largest_whole_part_is_an_overflow_error() {
        let whole = u128::MAX / 3_600_000_000_000;
        let value = format!("{whole}.9h");
        assert_eq!(
            parse_duration(&value),
            Err(DurationError::Overflow(value.clone()))
        );
    }

    #[test]
    fn formatted_durations_read_back() {
        for (d, want) in [
            (Duration::ZERO, "0s"),
            (ms(250), "250ms"),
            (ms(1_500), "1.5s"),
            (ms(15_000), "15s"),
            (ms(90_000), "1m30s"),
            (ms(3_600_000), "1h0m0s"),
            (Duration::from_micros(1_500), "1500us"),
            (Duration::from_nanos(7), "7ns"),
        ] {
            assert_eq!(format_duration(d), want);
            assert_eq!(parse_duration(want), Ok(d), "{want}");
        }
    }
}
