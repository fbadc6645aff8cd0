//! Every schedule within CI's bounds: the real electors keep every property
//! (no two leaders at one instant, every leader within its guard, terms only
//! grow, no release evicts another holder, the pairing rule) and a fair
//! continuation of every schedule elects a leader. Each run must be complete:
//! every reachable state visited. Larger bounds: `cargo run --release -p
//! election-check -- --help`, and BENCHMARKS.md "Model checking".

use std::time::Duration;

use election_check::{Faults, Report, Setup, World, explore};

/// Explores `setup` completely and fails on any violation; the report.
fn every_schedule(setup: Setup) -> Report {
    let name = setup.name.clone();
    let report = explore(&World::new(setup), 5_000_000);
    println!(
        "{name}: {} states, {} transitions, depth {}, {} leaves, {:.1?}",
        report.states, report.transitions, report.depth, report.leaves, report.elapsed
    );
    if let Some(v) = &report.violation {
        panic!("{name}: {v}");
    }
    assert!(report.complete, "{name}: cut short: {report:?}");
    assert!(report.leaves > 0, "{name}: no schedule ran to its end");
    report
}

/// Two candidates, no fault, 8 s of real time: every interleaving of their
/// calls, answers and timers, polling and watching.
#[test]
fn two_candidates_without_faults_every_interleaving() {
    every_schedule(Setup::classic(2, 16, 0).faults(Faults::NONE));
    every_schedule(Setup::classic(2, 16, 0).faults(Faults::NONE).watching());
}

/// Two polling candidates, 3 s, one fault of any kind anywhere: a call or an
/// answer late, lost, duplicated or refused, a crash, a partition, a stalled
/// process, a graceful stop or step-down, an operator's edit or deletion.
#[test]
fn two_candidates_one_fault_of_any_kind() {
    every_schedule(Setup::classic(2, 6, 1));
}

/// Two watching candidates, 1.5 s (the race to create, the lock delay, the
/// first renews), one late delivery anywhere (a call, an answer, a watch
/// event held over ticks). Longer: BENCHMARKS.md "Model checking".
#[test]
fn two_watching_candidates_one_late_delivery() {
    every_schedule(Setup::classic(2, 3, 1).watching().faults(Faults {
        late: true,
        ..Faults::NONE
    }));
}

/// Clocks 15 % fast and 15 % slow (a ratio of 1.32, inside the 1.33 the
/// timings tolerate), in 250 ms ticks over 4 s, with one partition or stall.
#[test]
fn clocks_within_the_tolerated_ratio_one_partition_or_stall() {
    let mut setup = Setup::classic(2, 16, 1)
        .rate(0, 23, 20)
        .rate(1, 20, 23)
        .faults(Faults {
            partition: true,
            pause: true,
            ..Faults::NONE
        });
    setup.tick = Duration::from_millis(250);
    every_schedule(setup);
}

/// The negative control of the clocks: 30 % fast and 30 % slow (a ratio of
/// 1.69, outside the promise) with one stall is caught. The slow node, stalled
/// within its lock delay, wakes with its deadline not yet passed on its clock
/// and leads its older term after the fast one took the lock over.
#[test]
fn clocks_beyond_the_tolerated_ratio_are_caught() {
    let mut setup = Setup::classic(2, 16, 1)
        .rate(0, 13, 10)
        .rate(1, 10, 13)
        .faults(Faults {
            pause: true,
            ..Faults::NONE
        });
    setup.tick = Duration::from_millis(250);
    let report = explore(&World::new(setup), 5_000_000);
    let v = report
        .violation
        .expect("a stall with clocks 1.69 apart breaks safety");
    println!("{v}");
    assert!(
        v.what.contains("not after term") || v.what.starts_with("two leaders"),
        "{}",
        v.what
    );
}

/// docs/faults.md R15, the model checker's first find: the lock held by a
/// candidate gone; both take it over on the same base, n0 wins, n1's takeover
/// is lost; an operator names n1 on n0's record before n1 sees any version of
/// n0's. Two faults of those kinds, every schedule over 3.5 s.
#[test]
fn r15_a_lost_takeover_and_an_edit_naming_its_sender_never_overlap() {
    every_schedule(Setup::classic(2, 7, 2).held_by("x").faults(Faults {
        lose: true,
        edit: true,
        ..Faults::NONE
    }));
}

/// Three interchangeable candidates, no fault, 4 s, states that differ only
/// by the names explored once.
#[test]
fn three_candidates_without_faults_with_symmetry() {
    let symmetric = every_schedule(Setup::classic(3, 8, 0).faults(Faults::NONE).symmetric());
    let plain = explore(
        &World::new(Setup::classic(3, 8, 0).faults(Faults::NONE)),
        5_000_000,
    );
    assert!(plain.complete && plain.violation.is_none());
    assert!(
        symmetric.states * 3 < plain.states,
        "symmetry: {} states against {}",
        symmetric.states,
        plain.states
    );
}

/// Coordinated mode, the coordinator as kube-apiserver's controller behaves
/// (first in a tick, or not in that tick): its clock 1.5 s ahead (it gives
/// the lock away early, which the candidates' own wait must make safe) and 1 s
/// behind, no fault over 6 s; one fault of any kind over 2 s (the deletion
/// under a claim that was a busy loop: docs/faults.md C2).
#[test]
fn coordinated_candidates_every_schedule() {
    every_schedule(
        Setup::classic(2, 12, 0)
            .faults(Faults::NONE)
            .coordinated(1_500),
    );
    every_schedule(
        Setup::classic(2, 12, 0)
            .faults(Faults::NONE)
            .coordinated(-1_000),
    );
    every_schedule(Setup::classic(2, 4, 1).coordinated(1_500));
}
