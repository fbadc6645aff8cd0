//! Negative controls: the checker must be able to fail. Configurations outside
//! the promise (clock rates beyond the tolerated ratio, writes without
//! compare-and-swap) must be caught as overlaps on some seeds.

use election_sim::{SimOptions, Violation, WriteMode, replay_args, run_seed};

fn overlaps(edit: impl Fn(&mut SimOptions)) -> (usize, usize) {
    let mut found = 0;
    let runs = 2_000;
    for seed in 0..runs as u64 {
        let mut opts = SimOptions::for_seed(seed);
        opts.faults = true;
        edit(&mut opts);
        if let Err(f) = run_seed(seed, opts.clone()) {
            if matches!(f.violation, Violation::Overlap { .. }) {
                found += 1;
            }
            // The printed replay names the options the test changed, not just the
            // seed (which alone would replay the seed's own options).
            let printed = f.to_string();
            assert!(
                printed.contains(&format!(
                    "cargo run -p election-sim -- {} --trace",
                    replay_args(seed, &opts)
                )),
                "{printed}"
            );
        }
    }
    (found, runs)
}

/// The replay flags carry the options a test changed.
#[test]
fn replay_command_names_the_changed_options() {
    let mut opts = SimOptions::for_seed(3);
    opts.faults = false;
    opts.clock_ratio = 3.0;
    opts.write_mode = WriteMode::Blind;
    assert_eq!(
        replay_args(3, &opts),
        "--seed 3 --faults false --clock-ratio 3.0 --write-mode blind"
    );
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
