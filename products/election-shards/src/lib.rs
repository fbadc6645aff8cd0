//! Sharded leadership: `S` shard Leases spread fairly over the `R` replicas that
//! campaign for them.
//!
//! Each replica runs an election for every shard (`<group>-0` …), all followed
//! through one shared watch ([`lock_kube::SharedWatch`]), and registers as a
//! member with a Lease of its own (`<group>-member-<identity>`). Its balancer
//! decides when a member Lease changes, when a silent member's lease runs out
//! and at least every retry period: it counts the live members (member Leases
//! held and changed within a lease, [`membership`]) and applies
//! [`balance::stances`]: a replica
//! holds at most `ceil(S / R)` shards; under that it campaigns for every shard it
//! does not hold; at it, the other candidates stand by (they follow and time
//! each lease, so that they take an expired one at once when they campaign
//! again, `Handle::set_standby`); over it (a replica joined), it hands its
//! highest shards over by a graceful step-down. While another live replica holds
//! fewer than `floor(S / R)` (the Leases' holders say how many), the others keep
//! no more than the floor and stand by, so that the needy one takes what they
//! hand over: holdings end up differing by at most one. A replica that leaves releases
//! its member Lease, then its shards; one that crashes stops renewing both, and
//! its shards are taken once their leases expire.
//!
//! Safety is the elections': never two holders of a shard, whatever the counts
//! say. Fairness follows the counts, within a retry period of a change (two
//! replicas under their target may both take a shard at the same instant; the
//! one over its target hands it over at its next decision).
//!
//! ```
//! use std::collections::BTreeSet;
//! use election_shards::balance::{Stance, stances, target};
//!
//! // 16 shards over 4 replicas: at most 4 each. A replica still holding 6 (from
//! // when there were 3) hands its two highest over.
//! assert_eq!(target(16, 4), 4);
//! let held: BTreeSet<usize> = [0, 3, 5, 8, 11, 14].into();
//! let s = stances(16, 4, &held, false);
//! assert_eq!((s[11], s[14]), (Stance::HandOver, Stance::HandOver));
//! assert_eq!((s[0], s[1]), (Stance::Campaign, Stance::Standby));
//! ```
//!
//! Start one with [`Shards::builder`]`(client, namespace, group, shards, config)`
//! `.spawn(runtime)`; RBAC as for the Lease lock plus `list` on Leases (the
//! shared watch lists them).
//!
//! Like every library on k8s-openapi, this crate enables no Kubernetes version
//! feature of its own: the final binary picks one.

// A dependency the library does not use is an error (in CI's clippy too); not in
// the unit tests' build, which also gets the dev-dependencies.
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

pub mod balance;
pub mod membership;
mod shards;

pub use shards::{Shards, ShardsBuilder, ShardsError};
