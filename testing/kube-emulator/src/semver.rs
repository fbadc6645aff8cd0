//! Semantic versions as the API server reads a LeaseCandidate's
//! `binaryVersion` and `emulationVersion` (with `github.com/blang/semver/v4`):
//!
//! - [`Version::parse`] is the strict reading validation uses: exactly
//!   `MAJOR.MINOR.PATCH`, numbers without leading zeros, then an optional
//!   `-pre.release` and `+build`; no leading `v` (`1.33.0`, `1.34.0-alpha.1`);
//! - [`Version::parse_tolerant`] is the coordinator's, which compares
//!   candidates: it also takes a leading `v`, surrounding spaces, leading zeros
//!   and a short `1.33` (read `1.33.0`).
//!
//! Both are read by the `semver` crate, which follows the same grammar.
//! Versions are ordered by semver precedence: the numbers, then a version
//! without a pre-release above one with it, pre-release identifiers compared
//! one by one (numbers below words); build metadata is ignored.

use std::cmp::Ordering;

/// A parsed semantic version, ordered by precedence (build metadata takes no
/// part in the order, as in blang's `Compare`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version(semver::Version);

impl Version {
    /// The strict reading (blang's `Parse`): `None` for anything that is not
    /// `MAJOR.MINOR.PATCH[-PRE][+BUILD]`, numbers without leading zeros.
    pub(crate) fn parse(text: &str) -> Option<Version> {
        semver::Version::parse(text).ok().map(Version)
    }

    /// The tolerant reading (blang's `ParseTolerant`): spaces and a leading
    /// `v` trimmed, leading zeros of the three numbers dropped, and a missing
    /// minor or patch read as 0 (a short version may carry no pre-release or
    /// build).
    pub(crate) fn parse_tolerant(text: &str) -> Option<Version> {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let mut parts: Vec<String> = text
            .splitn(3, '.')
            .map(|part| {
                if part.len() > 1 {
                    let trimmed = part.trim_start_matches('0');
                    if trimmed.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
                        return trimmed.to_owned();
                    }
                    return format!("0{trimmed}");
                }
                part.to_owned()
            })
            .collect();
        if parts.len() < 3 {
            if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
                return None;
            }
            parts.resize(3, "0".to_owned());
        }
        Version::parse(&parts.join("."))
    }

    /// The tolerant reading, or `0.0.0` where there is none: how the
    /// coordinator ranks a version it cannot read.
    pub(crate) fn tolerant_or_zero(text: &str) -> Version {
        Version::parse_tolerant(text).unwrap_or(Version(semver::Version::new(0, 0, 0)))
    }

    /// Whether this is `0.0.0` (with no pre-release).
    pub(crate) fn is_zero(&self) -> bool {
        let v = &self.0;
        v.major == 0 && v.minor == 0 && v.patch == 0 && v.pre.is_empty()
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp_precedence(&other.0)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_reading_is_what_validation_accepts() {
        for good in [
            "1.33.0",
            "0.0.0",
            "1.34.0-alpha.1",
            "1.2.3+build.5",
            "10.20.30-rc-1",
        ] {
            assert!(Version::parse(good).is_some(), "{good}");
        }
        for bad in [
            "",
            "v1.33.0",
            "1.33",
            "1",
            "01.2.3",
            "1.02.3",
            "1.2.03",
            "1.2.3-",
            "1.2.3-01",
            "1.2.3+",
            "1.2.3-a..b",
            "1.2.x",
            " 1.2.3",
            "1.2.3.4",
        ] {
            assert!(Version::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn tolerant_reading_takes_what_components_write() {
        let v = |t: &str| Version::parse_tolerant(t).expect(t);
        assert_eq!(v("v1.33"), v("1.33.0"));
        assert_eq!(v(" 1.033.00 "), v("1.33.0"));
        assert_eq!(v("1"), v("1.0.0"));
        assert!(Version::parse_tolerant("1.33-rc").is_none());
        assert!(Version::parse_tolerant("banana").is_none());
        assert!(Version::tolerant_or_zero("banana").is_zero());
    }

    #[test]
    fn precedence_follows_semver() {
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.2.0",
            "1.10.0",
            "2.0.0",
        ];
        for pair in ordered.windows(2) {
            let (a, b) = (Version::parse(pair[0]), Version::parse(pair[1]));
            assert!(a < b, "{} < {}", pair[0], pair[1]);
        }
        assert_eq!(
            Version::parse("1.2.3+a").map(|v| v.cmp(&Version::tolerant_or_zero("1.2.3"))),
            Some(Ordering::Equal)
        );
    }
}
