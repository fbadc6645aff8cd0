//! The kube-runtime driver: runs [`step`](crate::step) per Node and does its
//! writes.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use election_core::{Instant, WallTime};
use election_driver::BootClock;
use futures::StreamExt;
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube_runtime::controller::{Action, Controller};
use kube_runtime::reflector::{self, ObjectRef};
use kube_runtime::{WatchStreamExt, watcher};
use lock_kube::time::{Clock, from_timestamp, to_timestamp};
use serde_json::json;

use crate::error::DriverError;
use crate::names::{REASON_ANNOTATION, STATUS_ANNOTATION, Status, WINDOW_ANNOTATION};
use crate::step::{Input, LeaseView, LeaseWrite, Now, OwnWrite, WindowConfig, Write, step};

/// Drains a Node: the user's part. Both calls must return promptly (a drain
/// goes on in the background; a reconcile never blocks on it) and be safe to
/// repeat. The driver starts a drain once per window and cancels it when the
/// window ends or the Node is deleted.
pub trait Drainer: Send + Sync + 'static {
    /// Starts draining `node`.
    fn start<'a>(
        &'a self,
        node: &'a str,
    ) -> BoxFuture<'a, Result<(), Box<dyn StdError + Send + Sync>>>;
    /// Stops draining `node` (the window is over or was cancelled).
    fn cancel<'a>(
        &'a self,
        node: &'a str,
    ) -> BoxFuture<'a, Result<(), Box<dyn StdError + Send + Sync>>>;
}

/// A drainer that does nothing: the window only cordons.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDrain;

impl Drainer for NoDrain {
    fn start<'a>(
        &'a self,
        _node: &'a str,
    ) -> BoxFuture<'a, Result<(), Box<dyn StdError + Send + Sync>>> {
        Box::pin(async { Ok(()) })
    }
    fn cancel<'a>(
        &'a self,
        _node: &'a str,
    ) -> BoxFuture<'a, Result<(), Box<dyn StdError + Send + Sync>>> {
        Box::pin(async { Ok(()) })
    }
}

/// A change of the status one controller reports for one Node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The Node.
    pub node: String,
    /// The controller's identity.
    pub identity: String,
    /// The new status.
    pub status: Status,
}

type TransitionHook = Arc<dyn Fn(&Transition) + Send + Sync>;

/// The maintenance-window controller: watches Nodes (and the window Leases)
/// and runs the decision step for each Node on every change and at the times
/// the step asks for.
///
/// The window Leases live in one namespace ([`namespace`](Self::namespace),
/// `default` unless set), each named after its Node. Not `kube-node-lease`:
/// the kubelet's heartbeat Leases have the Nodes' names there.
pub struct WindowController {
    client: kube::Client,
    config: WindowConfig,
    namespace: String,
    drainer: Arc<dyn Drainer>,
    wall: Clock,
    on_transition: Option<TransitionHook>,
}

impl fmt::Debug for WindowController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WindowController")
            .field("config", &self.config)
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

impl WindowController {
    /// A controller with `config`, the system wall clock, no drainer.
    pub fn new(client: kube::Client, config: WindowConfig) -> WindowController {
        WindowController {
            client,
            config,
            namespace: "default".to_owned(),
            drainer: Arc::new(NoDrain),
            wall: Clock::system(),
            on_transition: None,
        }
    }

    /// The namespace of the window Leases.
    pub fn namespace(mut self, namespace: impl Into<String>) -> WindowController {
        self.namespace = namespace.into();
        self
    }

    /// The drainer.
    pub fn drainer(mut self, drainer: impl Drainer) -> WindowController {
        self.drainer = Arc::new(drainer);
        self
    }

    /// The wall clock (stamps `acquireTime`, judges others' windows); tests
    /// make it run slow or fast. The window held is judged on the monotonic
    /// clock whatever this says.
    pub fn wall_clock(mut self, clock: Clock) -> WindowController {
        self.wall = clock;
        self
    }

    /// Called on every change of the status this controller reports for a
    /// Node (including [`Status::Waiting`], which is never written).
    pub fn on_transition(
        mut self,
        hook: impl Fn(&Transition) + Send + Sync + 'static,
    ) -> WindowController {
        self.on_transition = Some(Arc::new(hook));
        self
    }

    /// Runs until the future is dropped.
    pub async fn run(self) {
        let inner = Arc::new(Inner {
            nodes: Api::all(self.client.clone()),
            leases: Api::namespaced(self.client, &self.namespace),
            config: self.config,
            drainer: self.drainer,
            wall: self.wall,
            mono: BootClock::new(),
            on_transition: self.on_transition,
            state: Mutex::new(HashMap::new()),
        });
        // The Nodes' watch is this driver's own, not the controller's: a Node
        // deleted mid-window never reaches a reconcile (kube-runtime drops an
        // object that left its cache), so its drain is cancelled here, from
        // the delete (or, after a relist, from its absence).
        let (reader, writer) = reflector::store();
        let store = reader.clone();
        let watcher_inner = Arc::clone(&inner);
        let nodes = watcher(inner.nodes.clone(), watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .then(move |event| {
                let (inner, store) = (Arc::clone(&watcher_inner), store.clone());
                async move {
                    match &event {
                        Ok(watcher::Event::Delete(node)) => inner.forget(&node.name_any()).await,
                        Ok(watcher::Event::InitDone) => {
                            for name in inner.known() {
                                if store.get(&ObjectRef::new(&name)).is_none() {
                                    inner.forget(&name).await;
                                }
                            }
                        }
                        Ok(_) => {}
                        Err(e) => tracing::warn!(error = %e, "maintenance window: the Node watch failed; retrying"),
                    }
                    event
                }
            })
            .applied_objects()
            .filter_map(|node| async move { node.ok().map(Arc::new) });
        Controller::for_shared_stream(nodes, reader)
            .watches(
                inner.leases.clone(),
                watcher::Config::default(),
                |lease: Lease| {
                    let owned_by_node = lease
                        .owner_references()
                        .iter()
                        .any(|o| o.kind == "Node" && o.api_version == "v1");
                    owned_by_node.then(|| ObjectRef::<Node>::new(&lease.name_any()))
                },
            )
            .run(reconcile, error_policy, inner)
            .for_each(|_| async {})
            .await;
    }
}

/// What the driver remembers per Node.
#[derive(Debug, Clone, Default)]
struct NodeState {
    own: Option<OwnWrite>,
    draining: bool,
    reported: Option<Status>,
}

struct Inner {
    nodes: Api<Node>,
    leases: Api<Lease>,
    config: WindowConfig,
    drainer: Arc<dyn Drainer>,
    wall: Clock,
    mono: BootClock,
    on_transition: Option<TransitionHook>,
    state: Mutex<HashMap<String, NodeState>>,
}

async fn reconcile(node: Arc<Node>, inner: Arc<Inner>) -> Result<Action, DriverError> {
    inner.reconcile(&node.name_any()).await
}

fn error_policy(node: Arc<Node>, err: &DriverError, inner: Arc<Inner>) -> Action {
    tracing::warn!(node = %node.name_any(), identity = inner.config.identity(), error = %err, "maintenance window: retrying");
    Action::requeue(inner.config.retry())
}

/// Reads the fields of a Lease the step looks at.
fn lease_view(lease: &Lease) -> LeaseView {
    let spec = lease.spec.clone().unwrap_or_default();
    LeaseView {
        version: lease.metadata.resource_version.clone().unwrap_or_default(),
        holder: spec.holder_identity,
        acquire_time: spec.acquire_time.map(|t| from_timestamp(t.0)),
        duration_seconds: spec.lease_duration_seconds,
        transitions: spec.lease_transitions,
    }
}

fn micro(t: WallTime) -> MicroTime {
    MicroTime(to_timestamp(t))
}

fn node_owner(node: &Node) -> OwnerReference {
    OwnerReference {
        api_version: "v1".to_owned(),
        kind: "Node".to_owned(),
        name: node.name_any(),
        uid: node.metadata.uid.clone().unwrap_or_default(),
        ..OwnerReference::default()
    }
}

impl Inner {
    fn state(&self, node: &str) -> NodeState {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(node)
            .cloned()
            .unwrap_or_default()
    }

    fn save(&self, node: &str, state: NodeState) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(node.to_owned(), state);
    }

    /// The Nodes the driver remembers.
    fn known(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// The Node is gone (and its window Lease with it): forgets it, and stops
    /// a drain of it that still runs (once; a failed cancel is logged, there is
    /// no Node left to retry it on).
    async fn forget(&self, name: &str) {
        let gone = self
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        if !gone.is_some_and(|s| s.draining) {
            return;
        }
        if let Err(error) = self.cancel_drain(name, None).await {
            tracing::warn!(node = name, identity = self.config.identity(), %error, "maintenance window: cancelling the drain of a deleted Node failed");
        }
    }

    /// Cancels the drain of `name` through the user's drainer, bounded as
    /// [`Inner::bounded`] bounds a call.
    async fn cancel_drain(&self, name: &str, deadline: Option<Instant>) -> Result<(), DriverError> {
        self.bounded(|| name.to_owned(), deadline, async {
            self.drainer.cancel(name).await.map_err(CallError::drain)
        })
        .await
    }

    /// Runs `call` bounded by the request timeout and by `deadline`.
    async fn bounded<T, E>(
        &self,
        what: impl Fn() -> String,
        deadline: Option<Instant>,
        call: impl Future<Output = Result<T, E>>,
    ) -> Result<T, DriverError>
    where
        E: Into<CallError>,
    {
        let mut limit = self.config.request_timeout();
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(self.mono.now());
            if left.is_zero() {
                return Err(DriverError::OutOfTime { what: what() });
            }
            limit = limit.min(left);
        }
        match tokio::time::timeout(limit, call).await {
            Err(_) => Err(DriverError::Timeout {
                what: what(),
                after: limit,
            }),
            Ok(Err(e)) => Err(match e.into() {
                CallError::Kube(source) => DriverError::Api {
                    what: what(),
                    source,
                },
                CallError::Drain(message) => DriverError::Drain {
                    node: what(),
                    message,
                },
            }),
            Ok(Ok(v)) => Ok(v),
        }
    }

    async fn patch_node(
        &self,
        name: &str,
        what: &str,
        deadline: Option<Instant>,
        patch: serde_json::Value,
    ) -> Result<(), DriverError> {
        self.bounded(
            || format!("{what} node {name}"),
            deadline,
            self.nodes
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await
        .map(|_| ())
    }

    /// Removes the request annotation if it still holds `seen`, by a JSON
    /// patch that tests the value first; `false` when it no longer does (the
    /// test fails with 422), so a teardown decided on an old request never
    /// removes the asker's new one.
    async fn remove_request(
        &self,
        name: &str,
        seen: &str,
        deadline: Option<Instant>,
    ) -> Result<bool, DriverError> {
        let path = format!(
            "/metadata/annotations/{}",
            WINDOW_ANNOTATION.replace('~', "~0").replace('/', "~1")
        );
        let patch: json_patch::Patch = serde_json::from_value(json!([
            {"op": "test", "path": path, "value": seen},
            {"op": "remove", "path": path},
        ]))
        .map_err(|e| DriverError::Api {
            what: format!("remove the request from node {name}"),
            source: kube::Error::SerdeError(e),
        })?;
        let sent = self
            .bounded(
                || format!("remove the request from node {name}"),
                deadline,
                self.nodes
                    .patch(name, &PatchParams::default(), &Patch::Json::<()>(patch)),
            )
            .await;
        match sent {
            Ok(_) => Ok(true),
            Err(DriverError::Api {
                source: kube::Error::Api(status),
                ..
            }) if status.code == 422 => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn reconcile(&self, name: &str) -> Result<Action, DriverError> {
        // The Lease first, then the Node: a Lease gone with its Node (owner
        // garbage collection) is then never judged "absent" beside a Node read
        // before the deletion, which would create a window for a deleted Node.
        let lease = self
            .bounded(
                || format!("get lease {name}"),
                None,
                self.leases.get_opt(name),
            )
            .await?;
        let node = self
            .bounded(
                || format!("get node {name}"),
                None,
                self.nodes.get_opt(name),
            )
            .await?;
        let Some(node) = node else {
            self.forget(name).await;
            return Ok(Action::await_change());
        };
        let view = lease.as_ref().map(lease_view);
        let mut state = self.state(name);
        let annotations = node.metadata.annotations.clone().unwrap_or_default();
        let unschedulable = node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false);
        let now = Now {
            mono: self.mono.now(),
            wall: self.wall.now(),
        };
        let decision = step(
            &self.config,
            &Input {
                annotations: &annotations,
                unschedulable,
                lease: view.as_ref(),
                own: state.own.as_ref(),
                now,
            },
        );
        for warning in &decision.warnings {
            tracing::warn!(node = name, identity = self.config.identity(), "{warning}");
        }
        if decision.status.is_some() && decision.status != state.reported {
            if let (Some(hook), Some(status)) = (&self.on_transition, decision.status) {
                hook(&Transition {
                    node: name.to_owned(),
                    identity: self.config.identity().to_owned(),
                    status,
                });
            }
            state.reported = decision.status;
            self.save(name, state.clone());
        }
        // Whether anything was written (a drain already running is not restarted).
        let mut wrote = false;
        let mut deadline = decision.deadline;
        for write in decision.writes {
            if !write.takes_window()
                && let Some(d) = deadline
                && self.mono.now() >= d
            {
                return Err(DriverError::OutOfTime {
                    what: format!("{write:?} on node {name}"),
                });
            }
            wrote |= match &write {
                Write::StartDrain => !state.draining,
                Write::CancelDrain => state.draining,
                _ => true,
            };
            match write {
                Write::Lease(lw) => {
                    self.write_lease(name, &node, lease.as_ref(), lw, &mut deadline, &mut state)
                        .await?;
                    self.save(name, state.clone());
                }
                Write::Status(status) => {
                    let reason = status.reason().map(|r| r.as_str());
                    self.patch_node(
                        name,
                        "set status on",
                        deadline,
                        json!({"metadata": {"annotations": {
                            STATUS_ANNOTATION: status.as_str(),
                            REASON_ANNOTATION: reason,
                        }}}),
                    )
                    .await?;
                }
                Write::RemoveRequest { seen } => {
                    if !self.remove_request(name, &seen, deadline).await? {
                        // Changed since the step read it: decide again on it.
                        return Ok(Action::requeue(std::time::Duration::ZERO));
                    }
                }
                Write::Cordon => {
                    self.patch_node(
                        name,
                        "cordon",
                        deadline,
                        json!({"spec": {"unschedulable": true}}),
                    )
                    .await?;
                }
                Write::Uncordon => {
                    self.patch_node(
                        name,
                        "uncordon",
                        deadline,
                        json!({"spec": {"unschedulable": null}}),
                    )
                    .await?;
                }
                Write::StartDrain => {
                    if !state.draining {
                        self.bounded(|| name.to_owned(), deadline, async {
                            self.drainer.start(name).await.map_err(CallError::drain)
                        })
                        .await?;
                        state.draining = true;
                        self.save(name, state.clone());
                    }
                }
                Write::CancelDrain => {
                    if state.draining {
                        self.cancel_drain(name, deadline).await?;
                        state.draining = false;
                        self.save(name, state.clone());
                    }
                }
            }
        }
        let now = self.mono.now();
        Ok(match decision.next_check {
            _ if wrote => Action::requeue(std::time::Duration::ZERO),
            Some(at) => Action::requeue(at.saturating_duration_since(now)),
            None => Action::await_change(),
        })
    }

    async fn write_lease(
        &self,
        name: &str,
        node: &Node,
        observed: Option<&Lease>,
        write: LeaseWrite,
        deadline: &mut Option<Instant>,
        state: &mut NodeState,
    ) -> Result<(), DriverError> {
        let identity = self.config.identity().to_owned();
        let replace = |lease: Lease, what: &'static str| {
            let name = name.to_owned();
            async move {
                self.bounded(
                    || format!("{what} lease {name}"),
                    None,
                    self.leases.replace(&name, &PostParams::default(), &lease),
                )
                .await
            }
        };
        let base = |version: &str| -> Lease {
            let mut lease = observed.cloned().unwrap_or_default();
            lease.metadata.name = Some(name.to_owned());
            lease.metadata.resource_version = Some(version.to_owned());
            let owner = node_owner(node);
            let refs = lease.metadata.owner_references.get_or_insert_with(Vec::new);
            if !refs.iter().any(|r| r.uid == owner.uid) {
                refs.push(owner);
            }
            lease
        };
        match write {
            LeaseWrite::Create {
                acquire_time,
                stamped_at,
                duration_seconds,
            } => {
                let mut lease = Lease::default();
                lease.metadata.name = Some(name.to_owned());
                lease.metadata.owner_references = Some(vec![node_owner(node)]);
                lease.spec = Some(LeaseSpec {
                    holder_identity: Some(identity),
                    acquire_time: Some(micro(acquire_time)),
                    renew_time: Some(micro(acquire_time)),
                    lease_duration_seconds: Some(duration_seconds),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                });
                self.bounded(
                    || format!("create lease {name}"),
                    None,
                    self.leases.create(&PostParams::default(), &lease),
                )
                .await?;
                state.own = Some(OwnWrite {
                    acquire_time,
                    sent_at: stamped_at,
                });
                *deadline = Some(stamped_at + secs(duration_seconds));
            }
            LeaseWrite::Take {
                version,
                acquire_time,
                stamped_at,
                duration_seconds,
                transitions,
            } => {
                let mut lease = base(&version);
                lease.spec = Some(LeaseSpec {
                    holder_identity: Some(identity),
                    acquire_time: Some(micro(acquire_time)),
                    renew_time: Some(micro(acquire_time)),
                    lease_duration_seconds: Some(duration_seconds),
                    lease_transitions: Some(transitions),
                    ..LeaseSpec::default()
                });
                replace(lease, "take").await?;
                state.own = Some(OwnWrite {
                    acquire_time,
                    sent_at: stamped_at,
                });
                *deadline = Some(stamped_at + secs(duration_seconds));
            }
            LeaseWrite::SetDuration {
                version,
                duration_seconds,
            } => {
                let mut lease = base(&version);
                let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
                spec.lease_duration_seconds = Some(duration_seconds);
                spec.renew_time = Some(micro(self.wall.now()));
                replace(lease, "update the duration of").await?;
                if let Some(own) = state.own {
                    *deadline = Some(own.sent_at + secs(duration_seconds));
                }
            }
            LeaseWrite::End { version } => {
                let mut lease = base(&version);
                let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
                spec.holder_identity = None;
                spec.lease_duration_seconds = Some(1);
                spec.renew_time = Some(micro(self.wall.now()));
                replace(lease, "end").await?;
                state.own = None;
            }
        }
        Ok(())
    }
}

fn secs(s: i32) -> std::time::Duration {
    std::time::Duration::from_secs(u64::from(s.max(0).unsigned_abs()))
}

/// The failure of one bounded call.
enum CallError {
    Kube(kube::Error),
    Drain(String),
}

impl CallError {
    fn drain(e: Box<dyn StdError + Send + Sync>) -> CallError {
        CallError::Drain(e.to_string())
    }
}

impl From<kube::Error> for CallError {
    fn from(e: kube::Error) -> CallError {
        CallError::Kube(e)
    }
}
