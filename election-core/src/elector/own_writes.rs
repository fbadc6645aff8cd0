//! What this node knows of its own writes, in one place: the versions it wrote
//! (a version that names it but is not among them is another process's, a twin
//! or a restart of its own: docs/faults.md N1, N2), a write whose outcome is
//! unknown (if a read later shows it landed, leadership counts from its send
//! time), and a create whose outcome is unknown (the strict lock delay then
//! counts again: docs/faults.md A4).

use crate::record::Version;
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
    /// such send counts.
    pub(super) fn sent_unknown(&mut self, sent: Instant) {
        self.unknown_sent = Some(self.unknown_sent.map_or(sent, |t| t.min(sent)));
    }
}
