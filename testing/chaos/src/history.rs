//! The server's committed writes of the Lease, on the harness's monotonic
//! clock.
//!
//! The server stamps each write with the wall clock once the store has
//! committed it (the emulator before the answer leaves; kube-apiserver's audit
//! log when the answer is done). The harness maps those stamps onto
//! its monotonic clock through one pair of readings taken together at the
//! start; [`History::drift`] reports how far the two clocks have moved apart
//! since (a stepped wall clock would show there).

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant, SystemTime};

use kube_emulator::Verb;

use crate::server::Server;

/// One committed write of the Lease.
#[derive(Debug, Clone)]
pub struct LeaseWrite {
    /// The commit, on the harness's clock.
    pub at: Instant,
    /// The writer: a candidate's token, else a user agent (kubectl sends no
    /// token over plain HTTP).
    pub client: String,
    /// Create, update, patch or delete.
    pub verb: Verb,
    /// The holder written (`""` for none); `None` for a deletion.
    pub holder: Option<String>,
    /// `spec.leaseDurationSeconds` as written.
    pub duration: Option<i64>,
    /// The version it committed (a deletion's too).
    pub version: Option<u64>,
}

/// A write of the Lease that the store refused (a conflict, a stale version).
#[derive(Debug, Clone)]
pub struct RefusedWrite {
    /// When the server handled it, on the harness's clock.
    pub at: Instant,
    /// The writer, as in [`LeaseWrite::client`].
    pub client: String,
    /// Create, update, patch or delete.
    pub verb: Verb,
    /// The HTTP code the store answered.
    pub code: u16,
}

/// The Lease's committed writes so far, and the writes the store refused.
#[derive(Debug)]
pub struct History {
    lease: String,
    wall0: SystemTime,
    mono0: Instant,
    seen: HashSet<(Option<u64>, SystemTime, String)>,
    writes: BTreeMap<(Instant, u64), LeaseWrite>,
    refused: Vec<RefusedWrite>,
    next: u64,
}

impl History {
    /// An empty history of the Lease `lease`, its clocks paired now.
    pub fn new(lease: &str) -> History {
        History {
            lease: lease.to_owned(),
            wall0: SystemTime::now(),
            mono0: Instant::now(),
            seen: HashSet::new(),
            writes: BTreeMap::new(),
            refused: Vec::new(),
            next: 0,
        }
    }

    /// A wall-clock instant on the harness's monotonic clock.
    pub fn mono(&self, wall: SystemTime) -> Instant {
        match wall.duration_since(self.wall0) {
            Ok(d) => self.mono0 + d,
            Err(e) => self.mono0.checked_sub(e.duration()).unwrap_or(self.mono0),
        }
    }

    /// How far the wall clock has moved from the monotonic one since the start.
    pub fn drift(&self) -> Duration {
        let wall = SystemTime::now()
            .duration_since(self.wall0)
            .unwrap_or_default();
        let mono = self.mono0.elapsed();
        wall.abs_diff(mono)
    }

    /// Takes the server's new writes of the Lease.
    pub fn collect(&mut self, server: &Server) {
        for w in server.lease_writes(&self.lease) {
            if !self.seen.insert((w.version, w.at, w.client.clone())) {
                continue;
            }
            if !w.committed {
                self.refused.push(RefusedWrite {
                    at: self.mono(w.at),
                    client: w.client,
                    verb: w.verb,
                    code: w.code,
                });
                continue;
            }
            let write = LeaseWrite {
                at: self.mono(w.at),
                client: w.client,
                verb: w.verb,
                holder: w.holder,
                duration: w.duration,
                version: w.version,
            };
            self.next += 1;
            self.writes.insert((write.at, self.next), write);
        }
    }

    /// The holder the last write named (`None` after a deletion, or when
    /// nobody is named).
    pub fn holder(&self) -> Option<&str> {
        self.writes
            .values()
            .next_back()
            .and_then(|w| w.holder.as_deref())
            .filter(|h| !h.is_empty())
    }

    /// Every write, in commit order (by the server's stamps).
    pub fn writes(&self) -> impl Iterator<Item = &LeaseWrite> {
        self.writes.values()
    }

    /// The last write committed at or before `at`.
    pub fn last_before(&self, at: Instant) -> Option<&LeaseWrite> {
        self.writes
            .range(..=(at, u64::MAX))
            .next_back()
            .map(|(_, w)| w)
    }

    /// The last write by `client` committed before `to`.
    pub fn last_by(&self, client: &str, to: Instant) -> Option<&LeaseWrite> {
        self.writes
            .range(..(to, 0))
            .rev()
            .map(|(_, w)| w)
            .find(|w| w.client == client)
    }

    /// The writes refused in `[from, to]`.
    pub fn refused_between(
        &self,
        from: Instant,
        to: Instant,
    ) -> impl Iterator<Item = &RefusedWrite> {
        self.refused
            .iter()
            .filter(move |w| w.at >= from && w.at <= to)
    }

    /// The writes committed in `[from, to]`.
    pub fn between(&self, from: Instant, to: Instant) -> impl Iterator<Item = &LeaseWrite> {
        self.writes
            .range((from, 0)..=(to, u64::MAX))
            .map(|(_, w)| w)
    }
}

#[cfg(test)]
impl History {
    /// Adds a committed write (tests).
    pub fn push(&mut self, write: LeaseWrite) {
        self.next += 1;
        self.writes.insert((write.at, self.next), write);
    }
}
