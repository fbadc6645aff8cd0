//! A LeaseCandidate as the coordinator reads it, and how candidates are
//! ranked (`election.go` of the API server's leader-election controller):
//!
//! - the strategy of a Lease is that of its candidate with the highest
//!   `binaryVersion`; two candidates at the same binary version with
//!   different strategies are a conflict, and nothing is elected;
//! - under `OldestEmulationVersion` the best candidate has the lowest
//!   `emulationVersion`, then the lowest `binaryVersion`, then the oldest
//!   `creationTimestamp`; a candidate whose versions do not read (tolerantly:
//!   `v1.33` is `1.33.0`) is never elected.

use std::cmp::Ordering;
use std::time::Duration;

use serde_json::Value;

use crate::semver::Version;
use crate::time::{Timestamp, parse_rfc3339};
use crate::validation::str_at;

/// One LeaseCandidate, with the fields the coordinator reads.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// `metadata.name`: what the Lease's `holderIdentity` is set to.
    pub(crate) name: String,
    /// `spec.leaseName`.
    pub(crate) lease_name: String,
    /// `spec.pingTime`: when the coordinator last asked it to ack.
    pub(crate) ping_time: Option<Timestamp>,
    /// `spec.renewTime`: when it last renewed (an ack, when after the ping).
    pub(crate) renew_time: Option<Timestamp>,
    binary_version: String,
    emulation_version: String,
    strategy: String,
    created: Option<Timestamp>,
    /// The object as stored, which a ping writes back with its
    /// `resourceVersion` (compare-and-swap).
    pub(crate) object: Value,
}

fn time_at(obj: &Value, pointer: &str) -> Option<Timestamp> {
    parse_rfc3339(str_at(obj, pointer))
}

impl Candidate {
    /// Reads a stored LeaseCandidate.
    pub(crate) fn read(obj: &Value) -> Candidate {
        Candidate {
            name: str_at(obj, "/metadata/name").to_owned(),
            lease_name: str_at(obj, "/spec/leaseName").to_owned(),
            ping_time: time_at(obj, "/spec/pingTime"),
            renew_time: time_at(obj, "/spec/renewTime"),
            binary_version: str_at(obj, "/spec/binaryVersion").to_owned(),
            emulation_version: str_at(obj, "/spec/emulationVersion").to_owned(),
            strategy: str_at(obj, "/spec/strategy").to_owned(),
            created: time_at(obj, "/metadata/creationTimestamp"),
            object: obj.clone(),
        }
    }

    /// Whether it no longer counts (`isLeaseCandidateExpired`): it never
    /// renewed, or not within `validity`.
    pub(crate) fn expired(&self, now: Timestamp, validity: Duration) -> bool {
        self.renew_time.is_none_or(|r| r.plus(validity) < now)
    }

    fn binary(&self) -> Version {
        Version::tolerant_or_zero(&self.binary_version)
    }

    fn emulation(&self) -> Version {
        Version::tolerant_or_zero(&self.emulation_version)
    }

    /// Whether `OldestEmulationVersion` may elect it: both versions read.
    fn electable(&self) -> bool {
        Version::parse_tolerant(&self.emulation_version).is_some()
            && Version::parse_tolerant(&self.binary_version).is_some()
    }

    /// `Less` when `self` is the better leader under `OldestEmulationVersion`.
    /// Of two candidates created at the same instant, `self` is the better.
    fn rank(&self, other: &Candidate) -> Ordering {
        self.emulation()
            .cmp(&other.emulation())
            .then_with(|| self.binary().cmp(&other.binary()))
            .then_with(|| match (self.created, other.created) {
                (Some(mine), Some(theirs)) if mine > theirs => Ordering::Greater,
                _ => Ordering::Less,
            })
    }
}

/// The strategy of the candidates (`pickBestStrategy`): that of the one with
/// the highest binary version; `None` when there is none, or when two at that
/// version disagree.
pub(crate) fn strategy<'c>(candidates: &[&'c Candidate]) -> Option<&'c str> {
    let (first, rest) = candidates.split_first()?;
    let mut chosen = *first;
    for c in rest {
        match chosen.binary().cmp(&c.binary()) {
            Ordering::Less => chosen = c,
            Ordering::Equal if c.strategy != chosen.strategy => return None,
            _ => {}
        }
    }
    Some(&chosen.strategy)
}

/// The best leader under `OldestEmulationVersion`
/// (`pickBestLeaderOldestEmulationVersion`), among the electable candidates.
pub(crate) fn best<'c>(candidates: &[&'c Candidate]) -> Option<&'c Candidate> {
    let mut electee: Option<&Candidate> = None;
    for c in candidates.iter().copied().filter(|c| c.electable()) {
        if electee.is_none_or(|e| e.rank(c) == Ordering::Greater) {
            electee = Some(c);
        }
    }
    electee
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::json;

    use super::*;

    /// A candidate for `lease` created at second `created`, renewed at `renew`.
    pub(crate) fn candidate(
        name: &str,
        emulation: &str,
        binary: &str,
        created: i64,
        renew: Option<Timestamp>,
    ) -> Candidate {
        let mut spec = json!({"leaseName": "lock", "binaryVersion": binary,
            "emulationVersion": emulation, "strategy": "OldestEmulationVersion"});
        if let Some(r) = renew {
            spec["renewTime"] = json!(crate::time::format_micro_time(r));
        }
        let created = crate::time::format_time(Timestamp {
            secs: created,
            nanos: 0,
        });
        Candidate::read(&json!({
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": created, "resourceVersion": "1"},
            "spec": spec,
        }))
    }

    #[test]
    fn the_oldest_emulation_version_wins_then_binary_then_age() {
        let a = candidate("a", "1.33.0", "1.34.0", 10, None);
        let b = candidate("b", "1.32.0", "1.34.0", 20, None);
        let c = candidate("c", "1.32.0", "1.33.0", 30, None);
        let d = candidate("d", "1.32.0", "1.33.0", 5, None);
        assert_eq!(best(&[&a, &b]).map(|c| c.name.as_str()), Some("b"));
        assert_eq!(best(&[&a, &b, &c]).map(|c| c.name.as_str()), Some("c"));
        assert_eq!(best(&[&a, &b, &c, &d]).map(|c| c.name.as_str()), Some("d"));
        let unreadable = candidate("u", "banana", "1.30.0", 1, None);
        assert_eq!(best(&[&unreadable, &a]).map(|c| c.name.as_str()), Some("a"));
        assert!(best(&[&unreadable]).is_none());
        let tolerant = candidate("t", "v1.31", "1.31.0", 99, None);
        assert_eq!(best(&[&a, &tolerant]).map(|c| c.name.as_str()), Some("t"));
    }

    #[test]
    fn the_newest_binary_decides_the_strategy() {
        let old = candidate("old", "1.32.0", "1.32.0", 1, None);
        let mut new = candidate("new", "1.32.0", "1.34.0", 1, None);
        new.strategy = "example.com/Other".into();
        assert_eq!(strategy(&[&old, &new]), Some("example.com/Other"));
        let mut twin = candidate("twin", "1.32.0", "1.34.0", 1, None);
        twin.strategy = "OldestEmulationVersion".into();
        assert_eq!(strategy(&[&old, &new, &twin]), None, "a conflict");
        assert_eq!(strategy(&[]), None);
    }
}
