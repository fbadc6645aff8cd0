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
    opts.set_coordinated(true);
    opts.set_lease_factors(vec![3, 1]); // seed 3 has two nodes
    assert_eq!(
        replay_args(3, &opts),
        "--seed 3 --faults false --clock-ratio 3.0 --write-mode blind --coordinated true \
         --lease-factors 3,1 --fleet-lease true"
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

/// FAULTS R14's limit, and why `Config::fleet_lease_duration` exists: with mixed
/// lease lengths and the nodes not told the fleet's longest lease, a node that
/// never saw the longest-lease holder in its life (it was paused, or restarted,
/// while that holder led) waits only the longest lease it saw after a gap or
/// an absence, and leads while that holder still believes. The same seeds with
/// the fleet's lease given never overlap (`r14_mixed_lease_lengths_never_overlap`).
#[test]
fn r14_without_the_fleets_longest_lease_a_node_that_never_saw_it_can_overlap() {
    let mut found = 0;
    for seed in 0..1_500u64 {
        for coordinated in [false, true] {
            let mut opts = SimOptions::for_seed(seed);
            opts.faults = true;
            opts.set_coordinated(coordinated);
            opts.mix_leases(seed);
            opts.fleet_lease = false;
            if let Err(f) = run_seed(seed, opts)
                && matches!(f.violation, Violation::Overlap { .. })
            {
                found += 1;
            }
        }
    }
    println!("without the fleet's lease: {found} of 3000 mixed runs overlapped");
    assert!(
        found > 0,
        "no overlap without the fleet's longest lease: the check cannot fail"
    );
}
