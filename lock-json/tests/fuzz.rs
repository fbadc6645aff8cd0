//! Fuzzing of the timestamp code the JSON record is read and written with
//! (docs/design.md §8, docs/faults.md R8): any string parses or is ignored, any wall
//! time formats, and within Go's range what we write reads back as written. The
//! Lease lock's MicroTime goes through k8s-openapi, with the conversions here.

use election_core::{Stamp, WallTime};
use lock_json::{format_time, from_timestamp, parse_time, to_timestamp};
use proptest::prelude::*;

/// Years 1..=9999, the range RFC 3339 and Go's time formatting cover.
const MIN_SECS: i64 = -62_135_596_800;
const MAX_SECS: i64 = 253_402_300_799;

proptest! {
    #[test]
    fn any_string_parses_or_is_ignored(s in any::<String>()) {
        let _ = parse_time(&s);
    }

    #[test]
    fn timestamp_like_strings_parse_or_are_ignored(
        s in r"[0-9]{1,5}-[0-9]{1,2}-[0-9]{1,2}[T ][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]{0,12})?(Z|[+-][0-9]{2}:[0-9]{2})?"
    ) {
        if let Stamp::At(t) = parse_time(&s) {
            prop_assert!(t.nanos < 1_000_000_000);
        }
    }

    #[test]
    fn any_wall_time_formats(secs in any::<i64>(), nanos in any::<u32>()) {
        let t = WallTime::new(secs, nanos);
        prop_assert!(format_time(t).ends_with('Z'));
        let _ = to_timestamp(t);
    }

    /// What we write (RFC 3339 seconds, UTC) reads back as the same instant,
    /// truncated to whole seconds; a wall time survives the trip through jiff.
    #[test]
    fn written_timestamps_read_back(secs in MIN_SECS..=MAX_SECS, nanos in 0u32..1_000_000_000) {
        let t = WallTime::new(secs, nanos);
        prop_assert_eq!(parse_time(&format_time(t)), Stamp::At(WallTime::new(secs, 0)));
        prop_assert_eq!(from_timestamp(to_timestamp(t)), t);
    }
}
