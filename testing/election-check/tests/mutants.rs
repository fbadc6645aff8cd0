//! It bites: with a safety rule of the core taken out, the checker finds a
//! schedule that breaks a property, within the bound CI runs. Each test names
//! the rule, the smallest setup that needs it, and what breaks.

use std::time::Duration;

use election_check::{Faults, Setup, World, explore};

/// Explores `setup` and returns the violation it must find, printed.
fn counterexample(setup: Setup) -> String {
    let name = setup.name.clone();
    let report = explore(&World::new(setup), 3_000_000);
    println!(
        "{name}: {} states, depth {}, {:.1?}",
        report.states, report.depth, report.elapsed
    );
    let Some(v) = &report.violation else {
        panic!("{name}: no counterexample in {report:?}");
    };
    println!("{v}");
    v.what.clone()
}

const DELETE: Faults = Faults {
    delete: true,
    ..Faults::NONE
};

/// The strict lock delay: a node that creates an absent lock leads only a
/// lease later, since whoever held the deleted lock may still believe. Without
/// it, one deletion is enough for two leaders.
#[test]
fn without_the_strict_lock_delay_a_deletion_makes_two_leaders() {
    let what = counterexample(
        Setup::classic(2, 8, 1)
            .faults(DELETE)
            .without_lock_delay()
            .named("no lock delay"),
    );
    assert!(what.starts_with("two leaders"), "{what}");
}

/// The control: the same bound with the rule in place has no counterexample.
#[test]
fn with_the_strict_lock_delay_a_deletion_makes_no_two_leaders() {
    let report = explore(
        &World::new(Setup::classic(2, 8, 1).faults(DELETE)),
        3_000_000,
    );
    if let Some(v) = &report.violation {
        panic!("{v}");
    }
    assert!(report.complete, "{report:?}");
}

/// A fleet of two lease lengths: n0 leases 4 s (renew deadline 3 s, renewing
/// every 2 s), n1 2 s; every node knows the fleet's longest lease.
fn mixed_leases() -> Setup {
    let mut s = Setup::classic(2, 10, 1)
        .lease(0, 4, true)
        .faults(DELETE)
        .named("mixed leases");
    s.nodes[0].config.renew_interval = Some(Duration::from_secs(2));
    s
}

/// The longest-lease wait: a wait for a holder this node cannot see lasts the
/// longest lease any holder wrote. Waiting its own shorter lease instead, n1
/// creates the deleted lock and leads while n0, which renews every 2 s and
/// has not renewed since the deletion, still believes.
#[test]
fn without_the_longest_lease_wait_a_longer_lease_holder_overlaps() {
    let what = counterexample(mixed_leases().each(|c| c.mutants.own_lease_for_unseen = true));
    assert!(what.starts_with("two leaders"), "{what}");
}

#[test]
fn with_the_longest_lease_wait_mixed_leases_do_not_overlap() {
    let report = explore(&World::new(mixed_leases()), 3_000_000);
    if let Some(v) = &report.violation {
        panic!("{v}");
    }
    assert!(report.complete, "{report:?}");
}

/// A release is sent only at a version that still names the releaser (a
/// re-read after a conflict included). Without that check, a leader asked to
/// stop releases at the version it last saw even where that version names
/// another holder, and evicts it.
#[test]
fn without_the_fresh_holder_check_a_release_evicts_a_newer_holder() {
    let what = counterexample(
        Setup::classic(2, 8, 2)
            .faults(Faults {
                stop: true,
                edit: true,
                ..Faults::NONE
            })
            .each(|c| c.mutants.release_without_fresh_holder_check = true)
            .named("no fresh-holder check"),
    );
    assert!(what.contains("a release evicts"), "{what}");
}
