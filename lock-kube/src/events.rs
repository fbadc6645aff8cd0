//! Kubernetes Events about leadership, as client-go's lock records them:
//! `<identity> became leader` / `<identity> stopped leading`, reason
//! `LeaderElection`, type `Normal`, on the lock object.
//!
//! Recording is best-effort (docs/faults.md H9): a failure is returned for the caller to
//! log and never touches the election. [`EventRecorder::record`] is bounded by
//! the request timeout, so a hung API server cannot stall the caller either.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::api::{Api, PostParams};

use crate::call::call_within;
use crate::error::{Target, Verb};
use crate::time::{Clock, to_timestamp};

/// The reason client-go gives leadership events.
pub const REASON: &str = "LeaderElection";

/// A leadership change worth an Event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LeaderEvent {
    /// `<identity> became leader`.
    BecameLeader {
        /// Who leads now.
        identity: String,
    },
    /// `<identity> stopped leading`.
    StoppedLeading {
        /// Who stopped.
        identity: String,
    },
}

impl LeaderEvent {
    /// The Event message, as client-go writes it.
    pub fn message(&self) -> String {
        match self {
            LeaderEvent::BecameLeader { identity } => format!("{identity} became leader"),
            LeaderEvent::StoppedLeading { identity } => format!("{identity} stopped leading"),
        }
    }

    fn identity(&self) -> &str {
        match self {
            LeaderEvent::BecameLeader { identity } | LeaderEvent::StoppedLeading { identity } => {
                identity
            }
        }
    }
}

/// Why an Event could not be recorded. Log it; it has no bearing on leadership.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("failed to record event: {0}")]
pub struct EventError(#[source] pub election_core::LockError);

/// Writes `core/v1` Events about one lock object.
#[derive(Clone)]
pub struct EventRecorder {
    api: Api<Event>,
    namespace: String,
    component: String,
    clock: Clock,
    timeout: Duration,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("namespace", &self.namespace)
            .field("component", &self.component)
            .finish_non_exhaustive()
    }
}

impl EventRecorder {
    /// A recorder writing Events into `namespace` (the lock's), as `component`
    /// (the `source.component` and `reportingComponent`), stamped by `clock`, each
    /// write bounded by `timeout`.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        component: impl Into<String>,
        clock: Clock,
        timeout: Duration,
    ) -> Self {
        EventRecorder {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            component: component.into(),
            clock,
            timeout,
        }
    }

    /// The Event this recorder would write about `object` (exposed for tests and
    /// for callers that batch).
    pub fn build(&self, object: &ObjectReference, event: &LeaderEvent) -> Event {
        let now = self.clock.now();
        let ts = to_timestamp(now);
        let base = object.name.clone().unwrap_or_else(|| "lock".to_owned());
        Event {
            metadata: ObjectMeta {
                generate_name: Some(format!("{base}.")),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            involved_object: object.clone(),
            reason: Some(REASON.to_owned()),
            message: Some(event.message()),
            type_: Some("Normal".to_owned()),
            count: Some(1),
            first_timestamp: Some(Time(ts)),
            last_timestamp: Some(Time(ts)),
            event_time: Some(MicroTime(ts)),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: None,
            }),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(event.identity().to_owned()),
            action: Some(REASON.to_owned()),
            ..Event::default()
        }
    }

    /// Writes the Event about `object`. Best-effort: log a failure and go on.
    pub async fn record(
        &self,
        object: &ObjectReference,
        event: &LeaderEvent,
    ) -> Result<(), EventError> {
        let ev = self.build(object, event);
        let target = Target::new("events", self.namespace.clone(), String::new());
        let api = self.api.clone();
        let pp = PostParams::default();
        call_within(self.timeout, Verb::Create, &target, async move { api.create(&pp, &ev).await })
            .await
            .map(|_| ())
            .map_err(|e| {
                tracing::warn!(error = %e, message = %event.message(), "could not record leader election event");
                EventError(e)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_client_go() {
        let b = LeaderEvent::BecameLeader {
            identity: "node-a_1".into(),
        };
        assert_eq!(b.message(), "node-a_1 became leader");
        let s = LeaderEvent::StoppedLeading {
            identity: "node-a_1".into(),
        };
        assert_eq!(s.message(), "node-a_1 stopped leading");
    }
}
