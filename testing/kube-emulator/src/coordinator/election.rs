//! One step of the election of a Lease (`reconcileElectionStep` of the API
//! server's leader-election controller): a pure function of the Lease as
//! stored, its candidates and `now`, whose answer is a [`Step`] the
//! [`super::controller`] carries out. Each step is taken afresh from the
//! state; nothing is remembered between steps.
//!
//! An election is needed when the Lease is absent, has expired (its
//! `renewTime` plus `leaseDurationSeconds` is past, or either is missing), has
//! no holder, when a candidate has not renewed for half its validity, or when
//! the best candidate is not the holder. Then, in order:
//!
//! 1. candidates that have not renewed within the election duration are
//!    pinged (`pingTime = now`), unless they left an earlier ping unanswered
//!    (they are not asked twice); while a ping within the election duration is
//!    unanswered, the step waits for it;
//! 2. the candidates that renewed within the election duration are the acked
//!    ones; their strategy must be `OldestEmulationVersion` for a holder to be
//!    chosen (under another strategy the Lease is created without one, and its
//!    holder is left alone);
//! 3. an absent Lease is created for the best acked candidate; an existing
//!    one gets the strategy; if it has no holder, or has expired and the best
//!    is someone else, the best becomes the holder (`renewTime` now, the
//!    coordinator's duration, `acquireTime` and `preferredHolder` cleared);
//!    if it is valid and held by another, only `preferredHolder` is set: the
//!    holder is asked, not forced, to step down.

use serde_json::{Value, json};

use super::Coordinator;
use super::candidate::{self, Candidate};
use crate::resource::Resource;
use crate::time::{Timestamp, format_micro_time, parse_rfc3339};
use crate::validation::{OLDEST_EMULATION_VERSION, str_at};

/// What one step decides for a Lease. Writes carry the objects to write; an
/// update carries the `resourceVersion` that was read, so it applies only to
/// the state the step saw.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// No election is needed, or the Lease is already as it should be: look
    /// again at `recheck` (the requeue interval, or sooner when the Lease
    /// expires before), or at the next change.
    Settled {
        /// When to look again.
        recheck: Timestamp,
    },
    /// Pings are out and unanswered: look again when the first of them times
    /// out at `until`, or at the next change (an ack).
    AwaitingAcks {
        /// When the earliest unanswered ping times out.
        until: Timestamp,
    },
    /// An election is needed and nobody can be elected (no acked candidate,
    /// or candidates that disagree on the strategy): look again at `recheck`.
    NoneElectable {
        /// When to look again.
        recheck: Timestamp,
    },
    /// Ask these candidates to ack: each is the stored object with
    /// `spec.pingTime` set to now.
    Ping(Vec<Value>),
    /// Create the Lease.
    Create(Value),
    /// Update the Lease.
    Update(Value),
}

/// A Lease as the coordinator reads it.
struct Lease<'a> {
    object: &'a Value,
    holder: &'a str,
    renew_time: Option<Timestamp>,
    duration_seconds: Option<i64>,
}

impl<'a> Lease<'a> {
    fn read(object: &'a Value) -> Lease<'a> {
        Lease {
            object,
            holder: str_at(object, "/spec/holderIdentity"),
            renew_time: parse_rfc3339(str_at(object, "/spec/renewTime")),
            duration_seconds: object
                .pointer("/spec/leaseDurationSeconds")
                .and_then(Value::as_i64),
        }
    }

    /// When it expires: `None` when it lacks a renew time or a duration (it
    /// counts as expired).
    fn expiry(&self) -> Option<Timestamp> {
        let secs = u64::try_from(self.duration_seconds?).unwrap_or(0);
        Some(self.renew_time?.plus(std::time::Duration::from_secs(secs)))
    }

    /// `isLeaseExpired`.
    fn expired(&self, now: Timestamp) -> bool {
        self.expiry().is_none_or(|at| at < now)
    }
}

/// The step to take now for the Lease `namespace/name`, stored as `lease`,
/// whose candidates (the LeaseCandidates of the namespace that name it and
/// have not expired) are `candidates`.
pub(crate) fn step(
    namespace: &str,
    name: &str,
    lease: Option<&Value>,
    candidates: &[Candidate],
    now: Timestamp,
    timings: &Coordinator,
) -> Step {
    let lease = lease.map(Lease::read);
    let all: Vec<&Candidate> = candidates.iter().collect();
    let requeue = now.plus(timings.requeue_interval());
    // The requeue, or the moment the Lease expires if that comes first.
    let recheck = lease
        .as_ref()
        .and_then(Lease::expiry)
        .filter(|at| *at >= now)
        .map_or(requeue, |at| at.min(requeue));
    if !election_needed(lease.as_ref(), &all, now, timings) {
        return Step::Settled { recheck };
    }
    let window = timings.election_duration();
    let mut pings = Vec::new();
    let mut pending: Option<Timestamp> = None;
    for c in &all {
        let renewed_recently = c.renew_time.is_some_and(|r| r.plus(window) > now);
        match c.ping_time {
            // Asked within the window, not answered yet: wait for it.
            Some(p) if p.plus(window) > now && c.renew_time.is_some_and(|r| r < p) => {
                pending = Some(pending.map_or(p.plus(window), |at| at.min(p.plus(window))));
            }
            _ if renewed_recently => {}
            // Never asked, or asked long ago and answered: ask (again).
            None => pings.push(pinged(c, now)),
            Some(p) if p.plus(window) < now && c.renew_time.is_some_and(|r| p < r) => {
                pings.push(pinged(c, now));
            }
            // Asked long ago and never answered: not asked twice.
            Some(_) => {}
        }
    }
    if !pings.is_empty() {
        return Step::Ping(pings);
    }
    if let Some(until) = pending {
        return Step::AwaitingAcks { until };
    }
    // A ping exactly as old as its answer, still within the window.
    for c in &all {
        if let Some(p) = c.ping_time
            && c.renew_time.is_none_or(|r| p >= r)
            && p.plus(window) > now
        {
            return Step::AwaitingAcks {
                until: p.plus(window),
            };
        }
    }
    let acked: Vec<&Candidate> = all
        .iter()
        .copied()
        .filter(|c| c.renew_time.is_some_and(|r| r.plus(window) > now))
        .collect();
    let Some(strategy) = candidate::strategy(&acked) else {
        return Step::NoneElectable { recheck: requeue };
    };
    let electee = if strategy == OLDEST_EMULATION_VERSION {
        match candidate::best(&acked) {
            Some(best) => Some(best.name.as_str()),
            None => return Step::NoneElectable { recheck: requeue },
        }
    } else {
        None
    };
    let renewed = format_micro_time(now.to_micros());
    let duration = timings.lease_duration_seconds();
    let Some(existing) = lease else {
        let mut spec =
            json!({"strategy": strategy, "leaseDurationSeconds": duration, "renewTime": renewed});
        if let Some(holder) = electee {
            spec["holderIdentity"] = json!(holder);
        }
        return Step::Create(json!({
            "apiVersion": Resource::Lease.api_version(),
            "kind": Resource::Lease.kind(),
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }));
    };
    let mut next = existing.object.clone();
    if str_at(existing.object, "/spec/strategy") != strategy {
        next["spec"]["strategy"] = json!(strategy);
    }
    if let Some(holder) = electee {
        let spec = &mut next["spec"];
        if existing.holder.is_empty() || (existing.expired(now) && existing.holder != holder) {
            spec["holderIdentity"] = json!(holder);
            spec["renewTime"] = json!(renewed);
            spec["leaseDurationSeconds"] = json!(duration);
            if let Value::Object(fields) = spec {
                fields.remove("acquireTime");
                fields.remove("preferredHolder");
            }
        } else if existing.holder != holder {
            spec["preferredHolder"] = json!(holder);
        }
    }
    if &next == existing.object {
        return Step::Settled { recheck };
    }
    Step::Update(next)
}

/// `electionNeeded`.
fn election_needed(
    lease: Option<&Lease<'_>>,
    candidates: &[&Candidate],
    now: Timestamp,
    timings: &Coordinator,
) -> bool {
    let Some(lease) = lease else {
        return true;
    };
    if lease.expired(now) || lease.holder.is_empty() {
        return true;
    }
    let half = timings.candidate_validity() / 2;
    if candidates
        .iter()
        .any(|c| c.renew_time.is_some_and(|r| r.plus(half) < now))
    {
        return true;
    }
    if candidate::strategy(candidates) != Some(OLDEST_EMULATION_VERSION) {
        return false;
    }
    candidate::best(candidates).is_some_and(|best| best.name != lease.holder)
}

/// The stored candidate with `spec.pingTime` set to `now`.
fn pinged(c: &Candidate, now: Timestamp) -> Value {
    let mut object = c.object.clone();
    object["spec"]["pingTime"] = json!(format_micro_time(now.to_micros()));
    object
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::candidate::tests::candidate;
    use super::*;

    const NOW: Timestamp = Timestamp {
        secs: 1_800_000_000,
        nanos: 0,
    };

    fn ago(secs: u64) -> Timestamp {
        Timestamp {
            secs: NOW.secs - secs as i64,
            nanos: 0,
        }
    }

    fn pinged_at(mut c: Candidate, at: Timestamp) -> Candidate {
        c.ping_time = Some(at);
        c
    }

    fn lease(holder: &str, renewed: Timestamp, duration: i64) -> Value {
        json!({"metadata": {"name": "lock", "namespace": "default", "resourceVersion": "9"},
            "spec": {"holderIdentity": holder, "renewTime": format_micro_time(renewed),
                "leaseDurationSeconds": duration, "acquireTime": format_micro_time(renewed),
                "strategy": "OldestEmulationVersion"}})
    }

    fn run(lease: Option<&Value>, candidates: &[Candidate]) -> Step {
        step(
            "default",
            "lock",
            lease,
            candidates,
            NOW,
            &Coordinator::default(),
        )
    }

    #[test]
    fn fresh_candidates_and_no_lease_create_it_for_the_oldest_emulation_version() {
        let step = run(
            None,
            &[
                candidate("new", "1.34.0", "1.34.0", 1, Some(ago(1))),
                candidate("old", "1.33.0", "1.34.0", 2, Some(ago(2))),
            ],
        );
        let Step::Create(created) = step else {
            panic!("{step:?}")
        };
        assert_eq!(
            created["metadata"],
            json!({"name": "lock", "namespace": "default"})
        );
        assert_eq!(created["spec"]["holderIdentity"], "old");
        assert_eq!(created["spec"]["strategy"], "OldestEmulationVersion");
        assert_eq!(created["spec"]["leaseDurationSeconds"], 5);
        assert_eq!(created["spec"]["renewTime"], format_micro_time(NOW));
    }

    #[test]
    fn stale_candidates_are_pinged_then_awaited() {
        let stale = candidate("a", "1.33.0", "1.34.0", 1, Some(ago(60)));
        let Step::Ping(pings) = run(None, std::slice::from_ref(&stale)) else {
            panic!("a ping")
        };
        assert_eq!(pings[0]["spec"]["pingTime"], format_micro_time(NOW));
        assert_eq!(
            pings[0]["metadata"]["resourceVersion"], "1",
            "CAS on the version read"
        );
        assert_eq!(
            run(None, &[pinged_at(stale.clone(), ago(2))]),
            Step::AwaitingAcks {
                until: ago(2).plus(Duration::from_secs(5))
            }
        );
    }

    #[test]
    fn a_candidate_that_never_acks_is_not_asked_twice_nor_elected() {
        let silent = pinged_at(
            candidate("silent", "1.30.0", "1.34.0", 1, Some(ago(60))),
            ago(10),
        );
        let acked = pinged_at(
            candidate("acked", "1.33.0", "1.34.0", 2, Some(ago(1))),
            ago(2),
        );
        let Step::Create(created) = run(None, &[silent.clone(), acked]) else {
            panic!("elected")
        };
        assert_eq!(created["spec"]["holderIdentity"], "acked");
        assert_eq!(
            run(None, &[silent]),
            Step::NoneElectable {
                recheck: NOW.plus(Duration::from_secs(5))
            }
        );
    }

    #[test]
    fn a_better_candidate_while_the_lease_is_valid_is_only_preferred() {
        let held = lease("new", ago(1), 5);
        let step = run(
            Some(&held),
            &[
                candidate("new", "1.34.0", "1.34.0", 1, Some(ago(1))),
                candidate("old", "1.33.0", "1.34.0", 2, Some(ago(1))),
            ],
        );
        let Step::Update(next) = step else {
            panic!("{step:?}")
        };
        assert_eq!(next["spec"]["holderIdentity"], "new");
        assert_eq!(next["spec"]["preferredHolder"], "old");
        assert_eq!(next["metadata"]["resourceVersion"], "9");
    }

    #[test]
    fn an_expired_lease_goes_to_the_best_acked_candidate() {
        let expired = lease("gone", ago(30), 5);
        let Step::Update(next) = run(
            Some(&expired),
            &[candidate("b", "1.33.0", "1.34.0", 2, Some(ago(1)))],
        ) else {
            panic!("taken over")
        };
        assert_eq!(next["spec"]["holderIdentity"], "b");
        assert_eq!(next["spec"]["renewTime"], format_micro_time(NOW));
        assert!(next["spec"].get("acquireTime").is_none());
        assert!(next["spec"].get("preferredHolder").is_none());
    }

    #[test]
    fn a_released_lease_is_assigned_and_a_right_one_is_left_alone() {
        let released = lease("", ago(1), 1);
        let b = candidate("b", "1.33.0", "1.34.0", 2, Some(ago(1)));
        let Step::Update(next) = run(Some(&released), std::slice::from_ref(&b)) else {
            panic!("assigned")
        };
        assert_eq!(next["spec"]["holderIdentity"], "b");
        let right = lease("b", ago(1), 5);
        assert_eq!(
            run(Some(&right), &[b]),
            Step::Settled {
                recheck: ago(1).plus(Duration::from_secs(5))
            },
            "looks again when the Lease expires, before the requeue"
        );
    }

    #[test]
    fn another_strategy_creates_the_lease_without_a_holder() {
        let mut c = candidate("a", "1.33.0", "1.34.0", 1, Some(ago(1)));
        c.object["spec"]["strategy"] = json!("example.com/Mine");
        let c = Candidate::read(&c.object);
        let Step::Create(created) = run(None, &[c]) else {
            panic!("created")
        };
        assert_eq!(created["spec"]["strategy"], "example.com/Mine");
        assert!(created["spec"].get("holderIdentity").is_none());
    }
}
