//! Property tests of the sidecar's command line, the stable counterpart of
//! the fuzz target `sidecar_args` (fuzz/README.md): any argument list made of
//! its flags (`fuzzing::words`, taken from its parser) and arbitrary values is
//! parsed and checked as far as `main` goes before it needs a cluster, never a
//! panic, a refusal with a reason; the
//! Go-style duration parser reads any text as a duration or a typed
//! `DurationError` (an overflow for values beyond `Duration::MAX`, fractions
//! included), and every duration it reads is written back as text it reads as
//! the same duration.

use std::time::Duration;

use leader_elector::duration::{DurationError, format_duration, parse_duration};
use leader_elector::fuzzing::{command_line, words};
use proptest::prelude::*;

const UNITS: &[&str] = &["ns", "us", "µs", "ms", "s", "m", "h", "", "x"];

/// Go-style duration text, valid or nearly so, up to absurd sizes.
fn duration_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop_oneof![any::<u64>().prop_map(|n| n.to_string()), "[0-9]{0,45}"],
            prop::option::of("[0-9]{0,12}"),
            prop::sample::select(UNITS),
        ),
        1..4,
    )
    .prop_map(|parts| {
        parts
            .iter()
            .map(|(whole, frac, unit)| match frac {
                Some(f) => format!("{whole}.{f}{unit}"),
                None => format!("{whole}{unit}"),
            })
            .collect()
    })
}

fn arg() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(words()),
        2 => duration_text(),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => prop::sample::select(&["lock", "127.0.0.1:0", "v1/configmaps", "apps/v1/deployments", "pod-name", "any", "json", "1.34.0"][..]).prop_map(str::to_owned),
        1 => ".{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any text: a duration, or a typed error; what is read writes back.
    #[test]
    fn any_text_reads_as_a_duration_or_a_typed_error(text in prop_oneof![duration_text(), ".{0,24}"]) {
        match parse_duration(&text) {
            Ok(d) => {
                let written = format_duration(d);
                prop_assert_eq!(parse_duration(&written), Ok(d), "{} -> {}", text, written);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    /// Whole parts at the edge of `u128` nanoseconds, with fractions: an
    /// overflow error, never an arithmetic panic.
    #[test]
    fn huge_values_with_fractions_overflow_as_errors(
        unit in prop::sample::select(&[("h", 3_600_000_000_000u128), ("m", 60_000_000_000), ("s", 1_000_000_000), ("ms", 1_000_000)][..]),
        below in 0u128..3,
        frac in "[1-9][0-9]{0,11}",
    ) {
        let (unit, per) = unit;
        let whole = u128::MAX / per - below;
        let text = format!("{whole}.{frac}{unit}");
        prop_assert_eq!(parse_duration(&text), Err(DurationError::Overflow(text.clone())));
    }

    /// Every duration is written as text that reads back as it.
    #[test]
    fn durations_round_trip(secs in any::<u64>(), nanos in 0u32..1_000_000_000) {
        let d = Duration::new(secs, nanos);
        prop_assert_eq!(parse_duration(&format_duration(d)), Ok(d));
    }

    /// Any argument list: parsed and checked, or refused with a reason.
    #[test]
    fn any_command_line_is_parsed_or_refused_with_a_reason(args in prop::collection::vec(arg(), 0..10)) {
        if let Err(reason) = command_line(&args) {
            prop_assert!(!reason.trim().is_empty(), "{args:?}");
        }
    }
}

/// A command line that is valid: `serve` at client-go's timings starts.
#[test]
fn a_valid_command_line_passes() {
    let args = ["serve", "--lease", "lock", "--lease-duration", "15s"].map(str::to_owned);
    assert!(command_line(&args).is_ok(), "{:?}", command_line(&args));
    let args = [
        "serve",
        "--lease",
        "lock",
        "--lease-duration",
        "1.5h",
        "--renew-deadline",
        "99999999999999999999999999999999999.5h",
    ]
    .map(str::to_owned);
    assert!(command_line(&args).unwrap_err().contains("too large"));
}
