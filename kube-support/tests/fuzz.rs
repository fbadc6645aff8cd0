//! Fuzzing of the timestamp code both Kubernetes locks read records with
//! (docs/design.md §8, docs/faults.md R8): any string parses or is ignored, any wall
//! time formats, and within Kubernetes' range what we write reads back as written.

use election_core::WallTime;
use kube_support::time::{format_micro, format_rfc3339_secs, parse_timestamp};
use proptest::prelude::*;

/// Years 1..=9999, the range RFC 3339 and Go's time formatting cover.
const MIN_SECS: i64 = -62_135_596_800;
const MAX_SECS: i64 = 253_402_300_799;

proptest! {
    #[test]
    fn any_string_parses_or_is_ignored(s in any::<String>()) {
        let _ = parse_timestamp(&s);
    }

    #[test]
    fn timestamp_like_strings_parse_or_are_ignored(
        s in r"[0-9]{1,5}-[0-9]{1,2}-[0-9]{1,2}[T ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]{0,12})?(Z|[+-][0-9]{2}:[0-9]{2})?"
    ) {
        if let Some(t) = parse_timestamp(&s) {
            prop_assert!(t.nanos < 1_000_000_000);
        }
    }

    #[test]
    fn any_wall_time_formats(secs in any::<i64>(), nanos in any::<u32>()) {
        let t = WallTime::new(secs, nanos);
        let micro = format_micro(t);
        prop_assert!(micro.ends_with('Z'));
        let secs_only = format_rfc3339_secs(t);
        prop_assert!(secs_only.ends_with('Z'));
    }

    /// What we write (MicroTime, six digits, UTC; RFC 3339 seconds) reads back as
    /// the same instant, truncated to the format's precision.
    #[test]
    fn written_timestamps_read_back(secs in MIN_SECS..=MAX_SECS, nanos in 0u32..1_000_000_000) {
        let t = WallTime::new(secs, nanos);
        prop_assert_eq!(
            parse_timestamp(&format_micro(t)),
            Some(WallTime::new(secs, nanos / 1_000 * 1_000))
        );
        prop_assert_eq!(parse_timestamp(&format_rfc3339_secs(t)), Some(WallTime::new(secs, 0)));
    }
}
