//! The coordinator's task, spawned on the emulator's runtime when a
//! [`Coordinator`] is given: it looks at every Lease that non-expired
//! LeaseCandidates name, takes one [`election::step`] for each, carries the
//! step out through the store path clients' writes take
//! ([`crate::server::internal_write`]), and sleeps until the next change to
//! the store, the earliest deadline a step named (a ping timing out, a Lease
//! expiring, the requeue interval), or the emulator's end.
//!
//! A write that fails (a conflict with a client's write, an admission policy
//! that refuses it) is not retried as such: the next look starts again from
//! the state as it is then.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::Coordinator;
use super::candidate::Candidate;
use super::election::{self, Step};
use crate::faults::lock;
use crate::resource::{Resource, Verb};
use crate::server::{Shared, internal_write, stopped};
use crate::time::Timestamp;
use crate::validation::str_at;

/// A little past a deadline, so that the look after it finds it passed (the
/// rules compare with "before", and the timer may fire a hair early).
const PAST: Duration = Duration::from_millis(1);

/// Runs the coordinator until the emulator stops.
pub(crate) async fn run(shared: Arc<Shared>, timings: Coordinator) {
    let mut changes = shared.rv_tx.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        // Seen before looking: a change made during the look wakes the next.
        changes.borrow_and_update();
        let wake = look(&shared, &timings);
        let sleep = wake.since(Timestamp::now()) + PAST;
        tokio::select! {
            _ = stopped(&mut shutdown) => return,
            changed = changes.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(sleep) => {}
        }
    }
}

/// The election of one Lease, as read from the store.
struct Election {
    namespace: String,
    name: String,
    lease: Option<serde_json::Value>,
    candidates: Vec<Candidate>,
}

/// Reads every election under the store lock.
fn elections(shared: &Shared, now: Timestamp, timings: &Coordinator) -> Vec<Election> {
    let store = lock(&shared.store);
    let mut by_lease: BTreeMap<(String, String), Vec<Candidate>> = BTreeMap::new();
    for object in store.objects_of(Resource::LeaseCandidate) {
        let candidate = Candidate::read(object);
        if candidate.lease_name.is_empty() || candidate.expired(now, timings.candidate_validity()) {
            continue;
        }
        let namespace = str_at(object, "/metadata/namespace").to_owned();
        by_lease
            .entry((namespace, candidate.lease_name.clone()))
            .or_default()
            .push(candidate);
    }
    by_lease
        .into_iter()
        .map(|((namespace, name), candidates)| Election {
            lease: store
                .get_object(Resource::Lease, &namespace, &name)
                .cloned(),
            namespace,
            name,
            candidates,
        })
        .collect()
}

/// One look at every election: the steps taken, and when to look again at
/// the latest (a write's own change wakes the coordinator sooner).
fn look(shared: &Shared, timings: &Coordinator) -> Timestamp {
    let now = Timestamp::now();
    let requeue = now.plus(timings.requeue_interval());
    let mut wake = requeue;
    for e in elections(shared, now, timings) {
        let step = election::step(
            &e.namespace,
            &e.name,
            e.lease.as_ref(),
            &e.candidates,
            now,
            timings,
        );
        let next = match step {
            Step::Settled { recheck } | Step::NoneElectable { recheck } => recheck,
            Step::AwaitingAcks { until } => until,
            Step::Ping(candidates) => {
                for candidate in &candidates {
                    write(
                        shared,
                        &e,
                        Verb::Update,
                        Resource::LeaseCandidate,
                        candidate,
                    );
                }
                requeue
            }
            Step::Create(lease) => {
                write(shared, &e, Verb::Create, Resource::Lease, &lease);
                requeue
            }
            Step::Update(lease) => {
                write(shared, &e, Verb::Update, Resource::Lease, &lease);
                requeue
            }
        };
        wake = wake.min(next);
    }
    wake
}

fn write(
    shared: &Shared,
    e: &Election,
    verb: Verb,
    resource: Resource,
    object: &serde_json::Value,
) {
    let result = internal_write(
        shared,
        Coordinator::CLIENT,
        verb,
        resource,
        &e.namespace,
        object,
    );
    let (namespace, lease) = (&e.namespace, &e.name);
    match result {
        Ok(_) if resource == Resource::Lease => tracing::debug!(
            %namespace, %lease,
            holder = str_at(object, "/spec/holderIdentity"),
            preferred = str_at(object, "/spec/preferredHolder"),
            "coordinator wrote the lease"
        ),
        Ok(_) => tracing::debug!(
            %namespace, %lease,
            candidate = str_at(object, "/metadata/name"),
            "coordinator pinged a candidate"
        ),
        Err(err) => tracing::debug!(
            %namespace, %lease, code = err.code, message = %err.message,
            "coordinator write refused; the next look starts again"
        ),
    }
}
