//! The explorer: breadth-first search over every state a [`Model`] can reach,
//! each state visited once (by fingerprint), with the shortest trace to the
//! first violation.
//!
//! Breadth-first, so the first violation found is at the smallest depth: its
//! trace is a shortest one (no schedule of fewer steps breaks the property).
//! The visited set keeps, per fingerprint, its parent and the index of the step
//! taken there; a trace is rebuilt by replaying those steps from the initial
//! state, so the set costs a few words per state, not a state.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::fmt::Debug;
use std::time::{Duration, Instant};

/// A system to explore: its states, its steps, its properties.
pub trait Model {
    /// A state of the whole system.
    type State: Clone;
    /// One step: an input delivered, a fault, time advancing.
    type Step: Clone + Debug;

    /// The initial state.
    fn init(&self) -> Self::State;
    /// Every step enabled in `state`, in a fixed order (a trace names a step by
    /// its index).
    fn steps(&self, state: &Self::State, out: &mut Vec<Self::Step>);
    /// The state after `step`.
    fn next(&self, state: &Self::State, step: &Self::Step) -> Self::State;
    /// The safety properties: `Err` names the one `state` breaks.
    fn check(&self, state: &Self::State) -> Result<(), String>;
    /// The liveness property, checked on states with no step left (the
    /// bound reached): `Err` names what never happened.
    fn eventually(&self, state: &Self::State) -> Result<(), String>;
    /// Identifies `state` up to what does not matter (symmetric nodes).
    fn fingerprint(&self, state: &Self::State) -> u64;
    /// One line on `state`, for a trace.
    fn describe(&self, state: &Self::State) -> String;
}

/// A property broken, with the shortest schedule that breaks it.
#[derive(Debug)]
pub struct Counterexample {
    /// What broke.
    pub what: String,
    /// The steps from the initial state, each with the state after it.
    pub trace: Vec<(String, String)>,
}

impl std::fmt::Display for Counterexample {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} (after {} steps)", self.what, self.trace.len())?;
        for (i, (step, after)) in self.trace.iter().enumerate() {
            writeln!(f, "{:>4}. {step}\n        {after}", i + 1)?;
        }
        Ok(())
    }
}

/// What a search saw.
#[derive(Debug)]
pub struct Report {
    /// Distinct states visited.
    pub states: u64,
    /// Steps taken (to visited and already-visited states).
    pub transitions: u64,
    /// The largest depth reached.
    pub depth: u32,
    /// States with no step left, where the liveness property was checked.
    pub leaves: u64,
    /// Whether every reachable state was visited (`false`: the state cap cut
    /// the search short).
    pub complete: bool,
    /// Wall time of the search.
    pub elapsed: Duration,
    /// The first property broken, if any.
    pub violation: Option<Counterexample>,
}

/// Explores every state of `model` reachable from its initial state, up to
/// `max_states` distinct states; stops at the first violation.
pub fn explore<M: Model>(model: &M, max_states: u64) -> Report {
    let started = Instant::now();
    let init = model.init();
    let root = model.fingerprint(&init);
    // fingerprint → (parent's fingerprint, index of the step taken there)
    let mut seen: HashMap<u64, (u64, u32)> = HashMap::new();
    seen.insert(root, (root, u32::MAX));
    let mut queue = VecDeque::from([(init, root, 0u32)]);
    let mut report = Report {
        states: 1,
        transitions: 0,
        depth: 0,
        leaves: 0,
        complete: true,
        elapsed: Duration::ZERO,
        violation: None,
    };
    let mut steps = Vec::new();
    let fail = |what: String, at: u64, seen: &HashMap<u64, (u64, u32)>| Counterexample {
        what,
        trace: replay(model, seen, at),
    };
    if let Err(what) = model.check(&queue[0].0) {
        report.violation = Some(fail(what, root, &seen));
    }
    while report.violation.is_none()
        && let Some((state, fp, depth)) = queue.pop_front()
    {
        report.depth = report.depth.max(depth);
        steps.clear();
        model.steps(&state, &mut steps);
        if steps.is_empty() {
            report.leaves += 1;
            if let Err(what) = model.eventually(&state) {
                report.violation = Some(fail(what, fp, &seen));
            }
            continue;
        }
        for (i, step) in steps.iter().enumerate() {
            let next = model.next(&state, step);
            report.transitions += 1;
            let nfp = model.fingerprint(&next);
            let Entry::Vacant(slot) = seen.entry(nfp) else {
                continue;
            };
            slot.insert((fp, i as u32));
            report.states += 1;
            if let Err(what) = model.check(&next) {
                report.violation = Some(fail(what, nfp, &seen));
                break;
            }
            if report.states >= max_states {
                report.complete = false;
                break;
            }
            queue.push_back((next, nfp, depth + 1));
        }
        if !report.complete {
            break;
        }
    }
    report.elapsed = started.elapsed();
    report
}

/// The steps from the initial state to the state `at`, replayed.
fn replay<M: Model>(model: &M, seen: &HashMap<u64, (u64, u32)>, at: u64) -> Vec<(String, String)> {
    let mut indices = Vec::new();
    let mut fp = at;
    while let Some(&(parent, i)) = seen.get(&fp) {
        if i == u32::MAX {
            break;
        }
        indices.push(i);
        fp = parent;
    }
    indices.reverse();
    let mut state = model.init();
    let mut trace = Vec::with_capacity(indices.len());
    let mut steps = Vec::new();
    for i in indices {
        steps.clear();
        model.steps(&state, &mut steps);
        let step = steps[i as usize].clone();
        state = model.next(&state, &step);
        trace.push((format!("{step:?}"), model.describe(&state)));
    }
    trace
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two counters, each stepped up to 3; broken when both are 2.
    struct Pair;
    impl Model for Pair {
        type State = (u8, u8);
        type Step = u8;
        fn init(&self) -> (u8, u8) {
            (0, 0)
        }
        fn steps(&self, s: &(u8, u8), out: &mut Vec<u8>) {
            if s.0 < 3 {
                out.push(0);
            }
            if s.1 < 3 {
                out.push(1);
            }
        }
        fn next(&self, s: &(u8, u8), step: &u8) -> (u8, u8) {
            if *step == 0 {
                (s.0 + 1, s.1)
            } else {
                (s.0, s.1 + 1)
            }
        }
        fn check(&self, s: &(u8, u8)) -> Result<(), String> {
            if *s == (2, 2) {
                Err("both at 2".into())
            } else {
                Ok(())
            }
        }
        fn eventually(&self, _: &(u8, u8)) -> Result<(), String> {
            Ok(())
        }
        fn fingerprint(&self, s: &(u8, u8)) -> u64 {
            u64::from(s.0) << 8 | u64::from(s.1)
        }
        fn describe(&self, s: &(u8, u8)) -> String {
            format!("{s:?}")
        }
    }

    #[test]
    fn finds_the_shortest_trace_to_a_violation() {
        let r = explore(&Pair, 1_000);
        let v = r.violation.expect("(2, 2) is reachable");
        assert_eq!(v.what, "both at 2");
        assert_eq!(v.trace.len(), 4, "{v}");
        assert_eq!(v.trace.last().unwrap().1, "(2, 2)");
    }

    #[test]
    fn visits_each_state_once_and_reports_leaves() {
        struct Free;
        impl Model for Free {
            type State = (u8, u8);
            type Step = u8;
            fn init(&self) -> (u8, u8) {
                (0, 0)
            }
            fn steps(&self, s: &(u8, u8), out: &mut Vec<u8>) {
                Pair.steps(s, out)
            }
            fn next(&self, s: &(u8, u8), step: &u8) -> (u8, u8) {
                Pair.next(s, step)
            }
            fn check(&self, _: &(u8, u8)) -> Result<(), String> {
                Ok(())
            }
            fn eventually(&self, s: &(u8, u8)) -> Result<(), String> {
                if *s == (3, 3) {
                    Ok(())
                } else {
                    Err("not at the end".into())
                }
            }
            fn fingerprint(&self, s: &(u8, u8)) -> u64 {
                Pair.fingerprint(s)
            }
            fn describe(&self, s: &(u8, u8)) -> String {
                Pair.describe(s)
            }
        }
        let r = explore(&Free, 1_000);
        assert!(r.violation.is_none() && r.complete);
        assert_eq!((r.states, r.leaves, r.depth, r.transitions), (16, 1, 6, 24));
        let capped = explore(&Free, 5);
        assert!(!capped.complete && capped.states == 5);
    }
}
