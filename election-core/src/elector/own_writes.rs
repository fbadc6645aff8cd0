//! What this node knows of its own writes, in one place: the versions it wrote
//! (a version that names it but is not among them is another process's, a twin
//! or a restart of its own: docs/faults.md N1, N2), a write whose outcome is
//! unknown (if a read later shows it landed, leadership counts from its send
//! time), and a create whose outcome is unknown (the strict lock delay then
//! counts again: docs/faults.md A4).

use crate::record::{LockRecord, Version};
use crate::time::Instant;

/// How many of its own versions a node remembers.
const WRITTEN: usize = 8;

/// This node's writes, as far as it knows them.
#[derive(Clone, Debug, Default)]
pub(super) struct OwnWrites {
    /// The last versions written, newest at `newest`.
    written: [Option<Version>; WRITTEN],
    newest: usize,
    /// The send time of the earliest write whose outcome is unknown since the
    /// last known version.
    pub(super) unknown_sent: Option<Instant>,
    /// The newest version a compare-and-swap of unknown outcome was based on.
    unknown_base: Option<Version>,
    /// The least and the largest transition count those writes asked for.
    unknown_transitions: Option<(u32, u32)>,
    /// A create's outcome is unknown: it may land later, after a deletion that
    /// no read of ours saw. Holds the largest transition count such a create
    /// wrote.
    pub(super) create_unknown: Option<u32>,
    /// Versions seen naming us that we did not write; a second one proves a twin.
    pub(super) foreign_self_versions: u32,
}

impl OwnWrites {
    /// `v` is a version this node wrote.
    pub(super) fn remember(&mut self, v: &Version) {
        self.newest = (self.newest + 1) % WRITTEN;
        self.written[self.newest] = Some(v.clone());
    }

    /// Whether this node wrote `v` (among its last writes).
    pub(super) fn wrote(&self, v: &Version) -> bool {
        self.written.iter().flatten().any(|w| w == v)
    }

    /// The last version this node wrote.
    pub(super) fn last(&self) -> Option<&Version> {
        self.written[self.newest].as_ref()
    }

    /// A write was sent at `sent` with an outcome still unknown: the earliest
    /// such send counts. `base`: the version a compare-and-swap expected (none
    /// for a create); `transitions`: the count it asked for.
    pub(super) fn sent_unknown(&mut self, sent: Instant, base: Option<&Version>, transitions: u32) {
        self.unknown_sent = Some(self.unknown_sent.map_or(sent, |t| t.min(sent)));
        self.unknown_transitions = Some(
            self.unknown_transitions
                .map_or((transitions, transitions), |(lo, hi)| {
                    (lo.min(transitions), hi.max(transitions))
                }),
        );
        if let Some(base) = base
            && self
                .unknown_base
                .as_ref()
                .is_none_or(|b| base.is_newer_than(b))
        {
            self.unknown_base = Some(base.clone());
        }
    }

    /// Every write of unknown outcome is accounted for: nothing is pending.
    pub(super) fn settle_unknown(&mut self) {
        self.unknown_sent = None;
        self.unknown_base = None;
        self.unknown_transitions = None;
    }

    /// Whether `record`, seen at `version` and naming this node, may be the
    /// result of one of its writes: one it knows it wrote, or one of unknown
    /// outcome that asked for the record's transition count and, where
    /// `lease_secs` is given, this node's lease duration (a write lands as
    /// written, so a record counting otherwise, or with another duration, is
    /// another process's: an operator's edit naming this node, a restart, a
    /// twin; docs/faults.md R1, N1, N2).
    pub(super) fn may_have_written(
        &self,
        version: &Version,
        record: &LockRecord,
        lease_secs: Option<i64>,
    ) -> bool {
        self.wrote(version)
            || (lease_secs.is_none_or(|s| record.lease_duration_secs == Some(s))
                && self
                    .unknown_transitions
                    .is_some_and(|(lo, hi)| (lo..=hi).contains(&record.transitions)))
    }

    /// A follower saw `v`, a version that does not name it. If `v` is ordered
    /// after the base of every write of unknown outcome, none of them can land
    /// any more (each was a compare-and-swap on an older version, and no create
    /// is among them), so a later record naming this node is not one of them:
    /// it is another process's (docs/faults.md R1, N2).
    pub(super) fn superseded_by(&mut self, v: &Version) {
        let after_every_base = self
            .unknown_base
            .as_ref()
            .is_some_and(|b| v.order(b) == Some(core::cmp::Ordering::Greater));
        if after_every_base && self.create_unknown.is_none() {
            self.settle_unknown();
        }
    }
}

impl super::Elector {
    /// Whether `record`, seen at `version` by a node that does not hold the
    /// lock, names it and may be the result of one of its writes
    /// ([`OwnWrites::may_have_written`]: every write of this node that names it
    /// writes its own lease duration, so an operator's edit that names it over
    /// another's record is not taken for its write, whatever the transitions).
    pub(super) fn may_be_own(&self, version: &Version, record: &LockRecord) -> bool {
        record.holder == *self.identity()
            && self
                .own
                .may_have_written(version, record, Some(self.config.lease_duration_secs()))
    }
}
