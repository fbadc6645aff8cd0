//! Negative controls: the checker must be able to fail. Configurations outside
//! the promise (clock rates beyond the tolerated ratio, writes without
//! compare-and-swap) must be caught as overlaps on some seeds.

use election_sim::{SimOptions, Violation, WriteMode, run_seed};

fn overlaps(edit: impl Fn(&mut SimOptions)) -> (usize, usize) {
    let mut found = 0;
    let runs = 2_000;
    for seed in 0..runs as u64 {
        let mut opts = SimOptions::for_seed(seed);
        opts.faults = true;
        edit(&mut opts);
        if let Err(f) = run_seed(seed, opts) {
            if matches!(f.violation, Violation::Overlap { .. }) {
                found += 1;
            }
        }
    }
    (found, runs)
}

#[test]
fn clocks_beyond_the_tolerated_ratio_are_caught_as_overlaps() {
    // The fastest clock runs 3× the slowest: a paused or partitioned leader on a
    // slow clock outlives its lease as the fast nodes measure it.
    let (found, runs) = overlaps(|o| o.clock_ratio = 3.0);
    println!("clock ratio 3.0: {found} of {runs} seeds overlapped");
    assert!(
        found > 0,
        "the checker never caught an overlap with clocks 3x apart"
    );
}

#[test]
fn blind_writes_without_compare_and_swap_are_caught_as_overlaps() {
    let (found, runs) = overlaps(|o| o.write_mode = WriteMode::Blind);
    println!("blind writes: {found} of {runs} seeds overlapped");
    assert!(
        found > 0,
        "the checker never caught an overlap with blind writes"
    );
}
