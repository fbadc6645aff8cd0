//! The leader-elector sidecar's command line: arbitrary argument lists made of
//! its flags and subcommands (`fuzzing::words`, taken from its parser) and
//! values (durations, numbers, names, anything), parsed and checked as far as
//! `main` goes before it needs a cluster; and its Go-style duration parser on
//! every value.
//!
//! Invariants: no panic; a duration that parses is written back by
//! `format_duration` as text that parses to the same duration; a refused
//! command line gives a reason.
#![no_main]

use std::sync::LazyLock;

use arbitrary::Arbitrary;
use leader_elector::duration::{format_duration, parse_duration};
use leader_elector::fuzzing::{command_line, words};
use libfuzzer_sys::fuzz_target;

/// The sidecar's subcommands and flags, as its parser has them.
static WORDS: LazyLock<Vec<String>> = LazyLock::new(words);

const UNITS: &[&str] = &["ns", "us", "µs", "μs", "ms", "s", "m", "h", "", "x", "sec"];

/// The whole part of a duration: the sizes flags take, and sizes beyond
/// `Duration::MAX` up to `u128` nanoseconds and past them.
#[derive(Arbitrary, Debug)]
enum Whole {
    Small(u16),
    Large(u64),
    Huge(u128),
}

impl std::fmt::Display for Whole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Whole::Small(n) => write!(f, "{n}"),
            Whole::Large(n) => write!(f, "{n}"),
            Whole::Huge(n) => write!(f, "{n}"),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Arg {
    Flag(u8),
    /// `--flag=value`.
    FlagValue(u8, Box<Arg>),
    /// A Go-style duration, built from parts.
    Duration(Vec<(Whole, Option<u32>, u8)>),
    Number(u64),
    Text(String),
}

impl Arg {
    fn text(&self) -> String {
        match self {
            Arg::Flag(i) => WORDS[usize::from(*i) % WORDS.len()].clone(),
            Arg::FlagValue(i, value) => {
                format!("{}={}", WORDS[usize::from(*i) % WORDS.len()], value.text())
            }
            Arg::Duration(parts) => parts
                .iter()
                .map(|(whole, frac, unit)| {
                    let frac = frac.map(|f| format!(".{f}")).unwrap_or_default();
                    format!("{whole}{frac}{}", UNITS[usize::from(*unit) % UNITS.len()])
                })
                .collect(),
            Arg::Number(n) => n.to_string(),
            Arg::Text(s) => s.clone(),
        }
    }
}

fuzz_target!(|args: Vec<Arg>| {
    let args: Vec<String> = args.iter().take(24).map(Arg::text).collect();
    for value in &args {
        let value = value.split_once('=').map_or(value.as_str(), |(_, v)| v);
        if let Ok(d) = parse_duration(value) {
            let text = format_duration(d);
            assert_eq!(parse_duration(&text), Ok(d), "{value:?} -> {text:?}");
        }
    }
    if let Err(reason) = command_line(&args) {
        assert!(
            !reason.trim().is_empty(),
            "a refusal without a reason: {args:?}"
        );
    }
});
