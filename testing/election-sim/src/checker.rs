//! The invariants, checked after every step of a run.

use std::fmt;

use election_core::testing::Pairing;
use election_core::{Event, Term};

use crate::store::AppliedWrite;

/// A broken promise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Two nodes reported leadership at the same real instant.
    Overlap {
        /// Real time, in nanoseconds.
        at: u64,
        /// The nodes.
        nodes: Vec<usize>,
    },
    /// A leadership started with a term not above every earlier one.
    TermNotGrowing {
        /// The node.
        node: usize,
        /// Its term.
        term: String,
        /// The largest earlier term.
        previous: String,
    },
    /// A start without a stop before it, or a stop without its start.
    Pairing {
        /// The node.
        node: usize,
        /// What happened.
        what: String,
    },
    /// A release was sent before leadership was reported stopped.
    ReleaseWhileLeading {
        /// The node.
        node: usize,
    },
    /// A release replaced a record that did not name the releaser.
    ReleaseEvicted {
        /// The releaser.
        by: String,
        /// The holder it replaced.
        holder: String,
    },
    /// In a coordinated run, a candidate wrote over a record that did not name
    /// it (or created the lock): only the coordinator assigns it.
    WroteUnassigned {
        /// The writer.
        by: String,
        /// The holder of the record it replaced (`None`: it created the lock).
        holder: Option<String>,
    },
    /// No leader within the liveness bound after the faults healed.
    NoLeader {
        /// The bound, in milliseconds.
        after_heal_ms: u64,
    },
    /// The run made no progress in time: a node busy-loops.
    Stuck {
        /// Real time, in nanoseconds.
        at: u64,
    },
    /// A fault-free run changed leaders (without priorities), or did not end with
    /// the highest priority leading (with them).
    LeaderChangedWithoutFaults {
        /// Leaderships started.
        starts: usize,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Overlap { at, nodes } => {
                write!(
                    f,
                    "overlap: nodes {nodes:?} both leaders at {:.3} ms",
                    *at as f64 / 1e6
                )
            }
            Violation::TermNotGrowing {
                node,
                term,
                previous,
            } => {
                write!(
                    f,
                    "term did not grow: n{node} started {term} after {previous}"
                )
            }
            Violation::Pairing { node, what } => {
                write!(f, "start/stop pairing broken at n{node}: {what}")
            }
            Violation::ReleaseWhileLeading { node } => {
                write!(f, "n{node} sent a release while leading")
            }
            Violation::ReleaseEvicted { by, holder } => {
                write!(f, "{by} released a lock held by {holder:?}")
            }
            Violation::WroteUnassigned { by, holder } => match holder {
                Some(h) => write!(
                    f,
                    "{by} wrote over a record held by {h:?}, not assigned to it"
                ),
                None => write!(f, "{by} created the lock in a coordinated run"),
            },
            Violation::NoLeader { after_heal_ms } => {
                write!(
                    f,
                    "no leader within {after_heal_ms} ms after the faults healed"
                )
            }
            Violation::Stuck { at } => {
                write!(f, "livelock: too many steps by {:.3} ms", *at as f64 / 1e6)
            }
            Violation::LeaderChangedWithoutFaults { starts } => {
                write!(f, "fault-free run started {starts} leaderships, expected 1")
            }
        }
    }
}

/// Tracks what the invariants need.
#[derive(Debug)]
pub struct Checker {
    /// Each node's start/stop pairing (a crash starts it afresh).
    pairing: Vec<Pairing>,
    /// The largest term started, per generation of the lock (a deletion starts a
    /// new one: its transition count starts over).
    max_term: Vec<Option<Term>>,
    /// The store's last version at each deletion.
    deletions: Vec<u64>,
    starts: usize,
}

impl Checker {
    /// A checker for `nodes` candidates.
    pub fn new(nodes: usize) -> Self {
        Checker {
            pairing: vec![Pairing::new(); nodes],
            max_term: vec![None],
            deletions: Vec::new(),
            starts: 0,
        }
    }

    /// Leaderships started so far.
    pub fn starts(&self) -> usize {
        self.starts
    }

    /// At most one leader at any real instant.
    pub fn check_overlap(&self, at: u64, leaders: &[usize]) -> Result<(), Violation> {
        if leaders.len() > 1 {
            return Err(Violation::Overlap {
                at,
                nodes: leaders.to_vec(),
            });
        }
        Ok(())
    }

    /// Start/stop pairing and growing terms.
    pub fn on_event(&mut self, node: usize, ev: &Event, _at: u64) -> Result<(), Violation> {
        if let Err(e) = self.pairing[node].check(ev) {
            let what = e.to_string();
            return Err(Violation::Pairing { node, what });
        }
        if let Event::StartedLeading { term } = ev {
            let generation = self.generation(term);
            if let Some(prev) = &self.max_term[generation]
                && term <= prev
            {
                let (term, previous) = (term.to_string(), prev.to_string());
                return Err(Violation::TermNotGrowing {
                    node,
                    term,
                    previous,
                });
            }
            self.max_term[generation] = Some(term.clone());
            self.starts += 1;
        }
        Ok(())
    }

    /// A node sent a release write.
    pub fn on_release_sent(
        &mut self,
        node: usize,
        leading: bool,
        _at: u64,
    ) -> Result<(), Violation> {
        if leading || self.pairing[node].started().is_some() {
            return Err(Violation::ReleaseWhileLeading { node });
        }
        Ok(())
    }

    /// The store applied a write by `by`.
    pub fn on_write(&mut self, w: &AppliedWrite, by: &str, _at: u64) -> Result<(), Violation> {
        let released = w.now.as_ref().is_some_and(|o| !o.record.is_held());
        if released
            && let Some(old) = &w.replaced
            && &*old.holder != by
        {
            return Err(Violation::ReleaseEvicted {
                by: by.into(),
                holder: old.holder.to_string(),
            });
        }
        Ok(())
    }

    /// In a coordinated run, a candidate's write `w`: it must replace a record
    /// naming it (the coordinator's assignment, its own renewal or release).
    pub fn on_coordinated_write(&self, w: &AppliedWrite, by: &str) -> Result<(), Violation> {
        match &w.replaced {
            Some(old) if &*old.holder == by => Ok(()),
            other => Err(Violation::WroteUnassigned {
                by: by.into(),
                holder: other.as_ref().map(|r| r.holder.to_string()),
            }),
        }
    }

    /// The node leading now, if exactly one started and has not stopped.
    pub fn leading(&self) -> Option<usize> {
        let mut it = (0..self.pairing.len()).filter(|&n| self.pairing[n].started().is_some());
        let first = it.next();
        if it.next().is_some() { None } else { first }
    }

    /// A node's process died: whatever it led ended with it.
    pub fn on_crash(&mut self, node: usize) {
        self.pairing[node] = Pairing::new();
    }

    /// The lock was deleted: its transition count starts over, so terms are
    /// compared from here on.
    pub fn on_delete(&mut self, last_version: u64) {
        self.deletions.push(last_version);
        self.max_term.push(None);
    }

    /// Which generation of the lock a term belongs to: how many deletions came
    /// before the version that started it.
    fn generation(&self, term: &Term) -> usize {
        let v: u64 = term.version.as_str().parse().unwrap_or(u64::MAX);
        self.deletions.iter().filter(|&&d| d < v).count()
    }
}
