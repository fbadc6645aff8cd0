//! Who is in the group: every replica holds a member Lease of its own
//! (`<group>-member-<identity>`, one candidate, renewed as any election), and
//! counts the member Leases its shared watch shows held and seen changing within
//! one lease duration, by its own monotonic clock (a crashed replica's Lease stops
//! changing; a replica that leaves releases its Lease, which empties its holder).
//! A Lease only listed, not yet seen changing, is not counted: a replica that
//! starts counts the others from their next renew, so that a dead one's Lease is
//! never taken for a live one (which would leave shards to nobody).
//! The count decides fairness only, never safety: every shard is still an
//! election of its own.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use lock_kube::Seen;

/// The label on every Lease of a group (shards and members): the shared watch
/// selects by it.
pub const GROUP_LABEL: &str = "kube-elector.dev/shard-group";

/// The member Lease of `identity` in `group`.
pub fn member_lease(group: &str, identity: &str) -> String {
    format!("{group}-member-{identity}")
}

fn holder(lease: &Lease) -> &str {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .unwrap_or("")
}

/// A live member of the group, as one replica sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    /// Its identity (the holder of its member Lease).
    pub identity: &'a str,
    /// How long until it is counted out if its Lease stays unchanged (a
    /// millisecond past its lease).
    pub counted_out_in: Duration,
}

/// The members of `group` alive in `snapshot`: member Leases held and seen
/// changing within `lease`.
pub fn live_members<'a>(
    snapshot: &'a [Seen<Lease>],
    group: &str,
    lease: Duration,
) -> Vec<Member<'a>> {
    let prefix = format!("{group}-member-");
    snapshot
        .iter()
        .filter(|s| {
            s.object
                .metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .filter_map(|s| {
            let unchanged = s.unchanged_for.filter(|d| *d < lease)?;
            let identity = holder(&s.object);
            (!identity.is_empty()).then_some(Member {
                identity,
                counted_out_in: lease - unchanged + Duration::from_millis(1),
            })
        })
        .collect()
}

/// How many of the shards `<group>-0` … `<group>-{shards - 1}` each holder holds
/// in `snapshot`, by the Leases' holder.
pub fn holdings<'a>(
    snapshot: &'a [Seen<Lease>],
    group: &str,
    shards: usize,
) -> BTreeMap<&'a str, usize> {
    let mut out = BTreeMap::new();
    for s in snapshot {
        let Some(name) = s.object.metadata.name.as_deref() else {
            continue;
        };
        let is_shard = name
            .strip_prefix(group)
            .and_then(|rest| rest.strip_prefix('-'))
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|n| n < shards);
        let h = holder(&s.object);
        if is_shard && !h.is_empty() {
            *out.entry(h).or_default() += 1;
        }
    }
    out
}

/// Whether `identity`'s own member Lease is seen held by it in `snapshot`.
pub fn registered(snapshot: &[Seen<Lease>], group: &str, identity: &str) -> bool {
    let name = member_lease(group, identity);
    snapshot.iter().any(|s| {
        s.object.metadata.name.as_deref() == Some(name.as_str()) && holder(&s.object) == identity
    })
}
