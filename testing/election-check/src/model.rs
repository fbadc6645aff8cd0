//! The [`World`] as a [`Model`]: its fingerprint, with the symmetry of
//! interchangeable nodes.
//!
//! A state's fingerprint hashes everything that decides what happens next:
//! each elector as its `Debug` shows it (every field), each node's life,
//! watch and guard, the lock, the network as a multiset (the order of
//! messages in flight is not state: any of them may be delivered next), the
//! time and the faults left. With symmetry, nodes of one configuration and
//! clock rate are interchangeable: the fingerprint is the least over every
//! permutation of them, their names swapped in every record and message.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use crate::explore::Model;
use crate::world::{State, Step, World};

impl Model for World {
    type State = State;
    type Step = Step;

    fn init(&self) -> State {
        self.initial()
    }

    fn steps(&self, state: &State, out: &mut Vec<Step>) {
        World::steps(self, state, out, true);
    }

    fn next(&self, state: &State, step: &Step) -> State {
        World::next(self, state, step)
    }

    fn check(&self, state: &State) -> Result<(), String> {
        World::check(self, state)
    }

    fn eventually(&self, state: &State) -> Result<(), String> {
        self.settle(state)
    }

    fn fingerprint(&self, state: &State) -> u64 {
        let perms = self.permutations();
        if perms.len() <= 1 {
            return hash(&render(state, None));
        }
        perms
            .iter()
            .map(|p| hash(&render(state, Some(p))))
            .min()
            .unwrap_or_default()
    }

    fn describe(&self, state: &State) -> String {
        World::describe(self, state)
    }
}

impl World {
    /// The permutations of the nodes that map each onto one of the same
    /// configuration and clock rate (the identity alone, without symmetry).
    pub fn permutations(&self) -> &[Vec<usize>] {
        &self.perms
    }
}

/// [`World::permutations`], computed from the setup once.
pub(crate) fn permutations(setup: &crate::setup::Setup) -> Vec<Vec<usize>> {
    let n = setup.nodes.len();
    let identity: Vec<usize> = (0..n).collect();
    if !setup.symmetry {
        return vec![identity];
    }
    let alike = |a: usize, b: usize| {
        let (x, y) = (&setup.nodes[a], &setup.nodes[b]);
        x.rate == y.rate && x.config.clone().identity("") == y.config.clone().identity("")
    };
    let mut all = Vec::new();
    permute(&mut identity.clone(), 0, &mut all);
    all.retain(|p: &Vec<usize>| p.iter().enumerate().all(|(i, &j)| alike(i, j)));
    all
}

fn permute(items: &mut Vec<usize>, k: usize, out: &mut Vec<Vec<usize>>) {
    if k == items.len() {
        out.push(items.clone());
        return;
    }
    for i in k..items.len() {
        items.swap(k, i);
        permute(items, k + 1, out);
        items.swap(k, i);
    }
}

fn hash(parts: &[String]) -> u64 {
    let mut h = DefaultHasher::new();
    parts.hash(&mut h);
    h.finish()
}

/// The state as text, node `i` renamed and moved to `perm[i]` when permuted;
/// the network's messages sorted.
fn render(s: &State, perm: Option<&[usize]>) -> Vec<String> {
    let rename = |text: String| -> String {
        let Some(p) = perm else { return text };
        let mut text = text;
        for (i, _) in p.iter().enumerate() {
            text = text.replace(&format!("\"n{i}\""), &format!("\"\u{1}{i}\""));
        }
        for (i, &j) in p.iter().enumerate() {
            text = text.replace(&format!("\"\u{1}{i}\""), &format!("\"n{j}\""));
        }
        text
    };
    let at = |i: usize| perm.map_or(i, |p| p[i]);
    let mut nodes = vec![String::new(); s.nodes.len()];
    for (i, n) in s.nodes.iter().enumerate() {
        // Every field of the node (a field left out would merge states that
        // differ in it).
        let mut text = format!("{n:?}");
        strip_stats(&mut text);
        nodes[at(i)] = rename(text);
    }
    let mut net: Vec<String> = s
        .net
        .iter()
        .map(|m| {
            rename(format!(
                "{}|{}|{}|{:?}",
                at(usize::from(m.node)),
                m.life,
                m.late,
                m.body
            ))
        })
        .collect();
    net.sort_unstable();
    let mut parts = nodes;
    parts.push(rename(format!(
        "{:?}|{}|{}|{}|{:?}|{:?}|{}",
        s.lock.current(),
        s.lock.last_version(),
        s.t,
        s.faults_left,
        s.max_term,
        s.violation,
        s.coordinated
    )));
    parts.extend(net);
    parts
}

/// Drops the elector's counters (`Stats`) from its text: the elector only
/// counts them, never reads them, so states that differ in them alone behave
/// alike.
fn strip_stats(text: &mut String) {
    if let Some(start) = text.find("stats: Stats {")
        && let Some(len) = text[start..].find('}')
    {
        text.replace_range(start..=start + len, "");
    }
}
