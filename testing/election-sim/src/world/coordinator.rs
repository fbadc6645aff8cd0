//! The coordinator of a coordinated run: the API server's leader-election
//! controller (KEP-4355) as one of the run's actors.
//!
//! Every tick it picks the best live candidate (the oldest version, then the
//! lowest index: Kubernetes' `OldestEmulationVersion`, with the index standing
//! for the oldest candidate) and, like the real controller, creates the lock
//! naming it, gives an expired or emptied lock to it (its default duration, no
//! acquire time, no preferred holder, the transitions kept), or, while the lease
//! is valid, names it as the preferred holder. Expiry is judged on the record's
//! wall-clock renew time against the coordinator's own wall clock, which runs
//! off the store's by a skew drawn per run: ahead by up to a lease (it gives the
//! lock away early, which the candidates' local rule must make safe) or behind
//! by up to half a lease (it gives it away late). A live candidate is one whose
//! process runs, is not paused, is not partitioned and is not shutting down:
//! one that would answer the coordinator's ping. Its skew is counted in the
//! longest lease of the fleet, and it judges each record's expiry on that
//! record's own `leaseDurationSeconds` (its default duration, the base
//! configuration's lease, goes only into its assignments).

use election_core::testing::coordinator_write;
use election_core::{Action, WallTime, WriteId};

use super::{Happening, World};

/// The coordinator's state.
#[derive(Debug)]
pub(super) struct Coordinator {
    /// Nanoseconds the coordinator's wall clock is ahead of the store's (negative:
    /// behind).
    pub(super) skew: i64,
    /// Real nanoseconds between its steps.
    pub(super) tick: u64,
}

impl World {
    /// One step of the coordinator, then the next one scheduled.
    pub(super) fn coordinate(&mut self) -> Result<(), crate::checker::Violation> {
        let Some(c) = &self.coordinator else {
            return Ok(());
        };
        let (skew, tick) = (c.skew, c.tick);
        self.push(self.now + tick, Happening::Coordinate);
        let Some(best) = self.best_candidate() else {
            return Ok(());
        };
        let best_id = self.nodes[best].id.clone();
        let lease_secs = self.opts.config.lease_duration_secs();
        // The coordinator's wall clock: the store's, `skew` off.
        let now = self.now as i128 + skew as i128;
        let wall = WallTime::new(
            1_700_000_000 + now.div_euclid(1_000_000_000) as i64,
            now.rem_euclid(1_000_000_000) as u32,
        );
        let current = self.store.current().cloned();
        let Some(record) = coordinator_write(
            current.as_ref().map(|c| &c.record),
            &best_id,
            lease_secs,
            wall,
        ) else {
            return Ok(());
        };
        if let Some(cur) = &current
            && cur.record.is_held()
            && cur.record.holder != record.holder
            && let Some(h) = self.node_named(&cur.record.holder)
            && self.hidden_believer(h, Some(best))
        {
            self.hidden_assignments += 1;
        }
        let action = match current {
            None => Action::Create {
                op: WriteId(0),
                record,
            },
            Some(cur) => Action::Update {
                op: WriteId(0),
                expected: cur.version.clone(),
                record,
            },
        };
        self.log(|| format!("coordinator -> {}", super::brief_action(&action)));
        let (_, write) = self.store.apply(&action, "coordinator", self.wall());
        if let Some(w) = write {
            if self.present_since.is_none() {
                self.present_since = Some(self.now);
            }
            self.checker.on_write(&w, "coordinator", self.now)?;
            self.broadcast(&w, None);
        }
        Ok(())
    }

    /// The live candidate the coordinator prefers: the oldest version, then the
    /// lowest index.
    fn best_candidate(&self) -> Option<usize> {
        (0..self.nodes.len())
            .filter(|&i| {
                let n = &self.nodes[i];
                n.partitioned.is_none()
                    && n.paused_until <= self.now
                    && n.elector
                        .as_ref()
                        .is_some_and(|d| !d.elector.is_shutting_down())
            })
            .min_by_key(|&i| (self.nodes[i].version, i))
    }
}
