//! The balancing rule, pure: from how many shards there are, how many replicas
//! are alive and which shards this replica holds, what each of its candidates
//! does next.

use std::collections::BTreeSet;

/// The most shards one replica holds once `members` replicas are known:
/// `ceil(shards / members)` (all of them while it knows of no other).
pub fn target(shards: usize, members: usize) -> usize {
    shards.div_ceil(members.max(1))
}

/// The fewest shards a replica should have: `floor(shards / members)`.
pub fn floor(shards: usize, members: usize) -> usize {
    shards / members.max(1)
}

/// What one shard's candidate does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stance {
    /// Campaign: take the shard when it is free or its lease expired.
    Campaign,
    /// Stand by: follow and time the lease, but do not take the shard.
    Standby,
    /// Hand the shard over: stand by and step down (a graceful release).
    HandOver,
}

/// The stance of every shard's candidate, given whether another live replica
/// holds fewer than its [`floor`] (`needy`):
///
/// - over the [`target`] (`ceil`), hand the highest-numbered shards over down to
///   it (a graceful handover, so that a joining replica gets its share at once);
///   while another is needy, hand over down to the floor, to make room;
/// - under the floor, campaign for every shard not held; under the target, too,
///   unless another is needy (the needy go first);
/// - otherwise stand by on the shards not held.
///
/// A held shard is kept (`Campaign`) unless it is handed over. Once no replica is
/// under its floor and none over its target, holdings differ by at most one.
pub fn stances(shards: usize, members: usize, held: &BTreeSet<usize>, needy: bool) -> Vec<Stance> {
    let (lo, hi) = (floor(shards, members), target(shards, members));
    let keep = if needy { lo } else { hi };
    let surplus = held.len().saturating_sub(keep);
    let campaign = held.len() < lo || (held.len() < hi && !needy);
    let handed: BTreeSet<usize> = held.iter().rev().take(surplus).copied().collect();
    (0..shards)
        .map(|s| {
            if handed.contains(&s) {
                Stance::HandOver
            } else if held.contains(&s) || campaign {
                Stance::Campaign
            } else {
                Stance::Standby
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(xs: &[usize]) -> BTreeSet<usize> {
        xs.iter().copied().collect()
    }

    #[test]
    fn target_is_the_ceiling_share() {
        assert_eq!(target(16, 3), 6);
        assert_eq!(target(16, 4), 4);
        assert_eq!(target(16, 5), 4);
        assert_eq!(target(16, 0), 16, "alone until others are known");
        assert_eq!(target(0, 3), 0);
    }

    #[test]
    fn under_target_campaigns_for_every_shard() {
        let s = stances(4, 2, &set(&[1]), false);
        assert_eq!(s, vec![Stance::Campaign; 4]);
    }

    #[test]
    fn at_target_stands_by_on_the_others() {
        use Stance::*;
        assert_eq!(
            stances(4, 2, &set(&[0, 2]), false),
            vec![Campaign, Standby, Campaign, Standby]
        );
    }

    #[test]
    fn over_target_hands_over_its_highest_shards() {
        use Stance::*;
        // 16 shards, a fourth replica joined: 6 held, target 4.
        let s = stances(16, 4, &set(&[0, 3, 5, 8, 11, 14]), false);
        let handed: Vec<usize> = (0..16).filter(|&i| s[i] == HandOver).collect();
        assert_eq!(handed, vec![11, 14]);
        assert_eq!(s[0], Campaign);
        assert_eq!(s[1], Standby);
    }

    /// 16 shards over 5 replicas holding 4, 4, 4, 4 and 0: within the target, but
    /// the fifth is under its floor (3); the others make room down to the floor
    /// and stand by, so that only the needy one campaigns.
    #[test]
    fn a_needy_replica_gets_room_and_goes_first() {
        use Stance::*;
        let s = stances(16, 5, &set(&[0, 1, 2, 3]), true);
        assert_eq!(s[3], HandOver);
        assert_eq!(&s[..3], &[Campaign, Campaign, Campaign]);
        assert!(s[4..].iter().all(|&x| x == Standby));
        // The needy one itself campaigns for everything it does not hold.
        assert!(
            stances(16, 5, &set(&[]), false)
                .iter()
                .all(|&x| x == Campaign)
        );
        // Between floor and target with no one needy: campaign.
        assert!(
            stances(16, 5, &set(&[0, 1, 2]), false)
                .iter()
                .all(|&x| x == Campaign)
        );
    }

    /// Whatever a replica holds, the stances never ask it to keep more than its
    /// target (its floor while another is needy), and one under its floor
    /// campaigns for every shard it does not hold.
    #[test]
    fn stances_keep_every_replica_within_its_share() {
        for shards in 0..12usize {
            for members in 1..5usize {
                for needy in [false, true] {
                    for mask in 0u32..(1 << shards.min(10)) {
                        let held: BTreeSet<usize> = (0..shards.min(10))
                            .filter(|i| mask & (1 << i) != 0)
                            .collect();
                        let s = stances(shards, members, &held, needy);
                        let kept = held.iter().filter(|&&i| s[i] == Stance::Campaign).count();
                        let cap = if needy {
                            floor(shards, members)
                        } else {
                            target(shards, members)
                        };
                        assert!(kept <= cap);
                        if held.len() < floor(shards, members) {
                            assert!(s.iter().all(|&x| x == Stance::Campaign));
                        }
                    }
                }
            }
        }
    }
}
