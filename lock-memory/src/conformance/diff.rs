//! What differs between two records or observations, field by field, so that a
//! failed case names the field a lock lost or changed instead of printing two
//! whole records.

use std::fmt::Debug;

use election_core::{LockRecord, Observation};

/// The fields in which `got` differs from `want`, as `field: <side> <want>,
/// <side> <got>` joined by `; `, `sides` naming the two (such as `("wrote",
/// "answered")`). Empty when they are equal.
pub(super) fn record_diff(want: &LockRecord, got: &LockRecord, sides: (&str, &str)) -> String {
    // Taken apart without `..`: a field added to the record must be added here.
    let LockRecord {
        holder,
        lease_duration_secs,
        acquire_time,
        renew_time,
        transitions,
        priority,
        handover,
        strategy,
    } = want;
    let mut out = Vec::new();
    let mut field = |name: &str, w: &dyn Debug, g: &dyn Debug, same: bool| {
        if !same {
            out.push(format!("{name}: {} {w:?}, {} {g:?}", sides.0, sides.1));
        }
    };
    field("holder", holder, &got.holder, *holder == got.holder);
    field(
        "lease_duration_secs",
        lease_duration_secs,
        &got.lease_duration_secs,
        *lease_duration_secs == got.lease_duration_secs,
    );
    field(
        "acquire_time",
        acquire_time,
        &got.acquire_time,
        *acquire_time == got.acquire_time,
    );
    field(
        "renew_time",
        renew_time,
        &got.renew_time,
        *renew_time == got.renew_time,
    );
    field(
        "transitions",
        transitions,
        &got.transitions,
        *transitions == got.transitions,
    );
    field(
        "priority",
        priority,
        &got.priority,
        *priority == got.priority,
    );
    field(
        "handover",
        handover,
        &got.handover,
        *handover == got.handover,
    );
    field(
        "strategy",
        strategy,
        &got.strategy,
        *strategy == got.strategy,
    );
    out.join("; ")
}

/// As [`record_diff`], with the version first.
pub(super) fn observation_diff(
    want: &Observation,
    got: &Observation,
    sides: (&str, &str),
) -> String {
    let mut parts = Vec::new();
    if want.version != got.version {
        parts.push(format!(
            "version: {} {}, {} {}",
            sides.0, want.version, sides.1, got.version
        ));
    }
    let fields = record_diff(&want.record, &got.record, sides);
    if !fields.is_empty() {
        parts.push(fields);
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use election_core::Handover;

    #[test]
    fn names_only_the_fields_that_differ() {
        let want = LockRecord {
            holder: "a".into(),
            strategy: Some("OldestEmulationVersion".into()),
            ..LockRecord::default()
        };
        let mut got = want.clone();
        assert_eq!(record_diff(&want, &got, ("wrote", "read")), "");
        got.strategy = None;
        got.handover = Some(Handover {
            to: "b".into(),
            priority: None,
        });
        assert_eq!(
            record_diff(&want, &got, ("wrote", "read")),
            "handover: wrote None, read Some(Handover { to: \"b\", priority: None }); \
             strategy: wrote Some(\"OldestEmulationVersion\"), read None"
        );
        let (w, g) = (
            Observation::new("4", want.clone()),
            Observation::new("5", want),
        );
        assert_eq!(
            observation_diff(&w, &g, ("answered", "read")),
            "version: answered 4, read 5"
        );
    }
}
