//! One election, gathered: the Lease, its holder's Pod, its LeaseCandidates
//! and its fence; and the JSON document every output is made from.

use std::collections::BTreeSet;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::coordination::v1beta1::LeaseCandidate;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

use crate::client::{forbidden, not_served};
use crate::error::Error;
use crate::format;

/// The namespace of the nodes' heartbeats: not elections.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The label of the API servers' identity Leases: not elections.
pub const APISERVER_IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";

/// Which namespaces.
#[derive(Clone, Debug)]
pub enum Scope {
    /// One.
    Namespace(String),
    /// Every one (`-A`).
    All,
}

/// What a lookup the caller may not be allowed to make found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen<T> {
    /// Read.
    Known(T),
    /// Refused (403): shown as `?`.
    Forbidden,
}

/// Whether the Lease is held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// A holder whose last renewal is within the lease duration (or whose
    /// times are missing).
    Held,
    /// A holder whose last renewal is older than the lease duration, by this
    /// machine's clock.
    Expired,
    /// No holder.
    Released,
}

impl State {
    /// As shown.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Held => "held",
            State::Expired => "expired",
            State::Released => "released",
        }
    }
}

/// The holder's Pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HolderPod {
    /// No holder.
    NoHolder,
    /// Found: its name and phase (`Running`, `Pending`, …, `Terminating`).
    Found {
        /// The Pod's name.
        name: String,
        /// Its phase.
        phase: String,
    },
    /// No Pod of the holder's name (nor of its hostname part).
    Missing,
    /// Pods may not be read.
    Forbidden,
}

impl HolderPod {
    /// The `POD` cell.
    pub fn cell(&self) -> String {
        match self {
            HolderPod::NoHolder => "-".to_owned(),
            HolderPod::Found { phase, .. } => phase.clone(),
            HolderPod::Missing => "missing".to_owned(),
            HolderPod::Forbidden => "?".to_owned(),
        }
    }
}

/// A LeaseCandidate of the election.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Its name (the candidate's identity).
    pub name: String,
    /// `spec.binaryVersion`.
    pub binary_version: String,
    /// `spec.emulationVersion`.
    pub emulation_version: Option<String>,
    /// `spec.strategy`.
    pub strategy: String,
    /// `spec.renewTime`.
    pub renew_time: Option<Timestamp>,
}

/// A ValidatingAdmissionPolicyBinding whose parameter is the Lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    /// The binding's name.
    pub binding: String,
    /// Its policy's name.
    pub policy: String,
    /// Its `validationActions` (`Deny`; `Warn`, `Audit`).
    pub actions: Vec<String>,
}

/// One election: a Lease and what goes with it.
#[derive(Clone, Debug)]
pub struct Election {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// `spec.holderIdentity`; `None` when absent or empty.
    pub holder: Option<String>,
    /// `spec.leaseTransitions` (0 when absent).
    pub term: i64,
    /// `spec.leaseDurationSeconds`.
    pub lease_duration_secs: Option<i64>,
    /// `spec.renewTime`.
    pub renew_time: Option<Timestamp>,
    /// `spec.acquireTime`.
    pub acquire_time: Option<Timestamp>,
    /// `spec.strategy` (coordinated election).
    pub strategy: Option<String>,
    /// `spec.preferredHolder` (coordinated election).
    pub preferred_holder: Option<String>,
    /// The holder's Pod.
    pub pod: HolderPod,
    /// The LeaseCandidates whose `spec.leaseName` is the Lease.
    pub candidates: Seen<Vec<Candidate>>,
    /// The fence bindings whose parameter is the Lease.
    pub fences: Seen<Vec<Fence>>,
}

impl Election {
    /// Milliseconds from the last renewal to `now` (negative: in the future).
    pub fn renewed_ago_millis(&self, now: Timestamp) -> Option<i64> {
        self.renew_time.map(|t| millis_between(t, now))
    }

    /// Milliseconds from the acquisition to `now`.
    pub fn acquired_ago_millis(&self, now: Timestamp) -> Option<i64> {
        self.acquire_time.map(|t| millis_between(t, now))
    }

    /// Held, expired (by this machine's clock) or released, at `now`.
    pub fn state(&self, now: Timestamp) -> State {
        if self.holder.is_none() {
            return State::Released;
        }
        match (self.renewed_ago_millis(now), self.lease_duration_secs) {
            (Some(ago), Some(secs)) if ago > secs.saturating_mul(1000) => State::Expired,
            _ => State::Held,
        }
    }

    /// The `CANDIDATES` cell: `name@binaryVersion,…`; `<none>`, or `?`.
    pub fn candidates_cell(&self) -> String {
        match &self.candidates {
            Seen::Forbidden => "?".to_owned(),
            Seen::Known(c) if c.is_empty() => "<none>".to_owned(),
            Seen::Known(c) => c
                .iter()
                .map(|c| format!("{}@{}", c.name, c.binary_version))
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// The `FENCE` cell: the binding names; `-`, or `?`.
    pub fn fence_cell(&self) -> String {
        match &self.fences {
            Seen::Forbidden => "?".to_owned(),
            Seen::Known(f) if f.is_empty() => "-".to_owned(),
            Seen::Known(f) => f
                .iter()
                .map(|f| f.binding.as_str())
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// Every field, for `-o json` and `-o yaml`: times in RFC 3339, durations
    /// and ages in seconds (numbers); `null` for what is absent, and for the
    /// candidates and fences the caller may not read.
    pub fn to_json(&self, now: Timestamp) -> Value {
        let time = |t: &Option<Timestamp>| t.map(|t| t.to_string());
        let seconds = |ms: Option<i64>| ms.map(|ms| ms as f64 / 1000.0);
        let pod = match &self.pod {
            HolderPod::NoHolder => Value::Null,
            HolderPod::Found { name, phase } => {
                json!({ "lookup": "found", "name": name, "phase": phase })
            }
            HolderPod::Missing => json!({ "lookup": "missing", "name": null, "phase": null }),
            HolderPod::Forbidden => {
                json!({ "lookup": "forbidden", "name": null, "phase": null })
            }
        };
        let candidates = match &self.candidates {
            Seen::Forbidden => Value::Null,
            Seen::Known(c) => c
                .iter()
                .map(|c| {
                    json!({
                        "name": c.name,
                        "binaryVersion": c.binary_version,
                        "emulationVersion": c.emulation_version,
                        "strategy": c.strategy,
                        "renewTime": time(&c.renew_time),
                    })
                })
                .collect(),
        };
        let fences = match &self.fences {
            Seen::Forbidden => Value::Null,
            Seen::Known(f) => f
                .iter()
                .map(|f| json!({ "binding": f.binding, "policy": f.policy, "validationActions": f.actions }))
                .collect(),
        };
        json!({
            "namespace": self.namespace,
            "name": self.name,
            "holder": self.holder,
            "term": self.term,
            "leaseDurationSeconds": self.lease_duration_secs,
            "renewTime": time(&self.renew_time),
            "renewedAgoSeconds": seconds(self.renewed_ago_millis(now)),
            "acquireTime": time(&self.acquire_time),
            "acquiredAgoSeconds": seconds(self.acquired_ago_millis(now)),
            "state": self.state(now).as_str(),
            "pod": pod,
            "strategy": self.strategy,
            "preferredHolder": self.preferred_holder,
            "candidates": candidates,
            "fence": fences,
        })
    }
}

/// The whole list, as `-o json` prints it.
pub fn list_json(elections: &[Election], now: Timestamp) -> Value {
    json!({
        "apiVersion": "kube-elector.dev/v1",
        "kind": "ElectionList",
        "items": elections.iter().map(|e| e.to_json(now)).collect::<Vec<_>>(),
    })
}

fn millis_between(earlier: Timestamp, later: Timestamp) -> i64 {
    later
        .as_millisecond()
        .saturating_sub(earlier.as_millisecond())
}

/// Whether a Lease is an election: not a node's heartbeat, not an API
/// server's identity.
pub fn is_election(lease: &Lease) -> bool {
    let heartbeat = lease.metadata.namespace.as_deref() == Some(NODE_LEASE_NAMESPACE);
    let identity = lease
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(APISERVER_IDENTITY_LABEL));
    !heartbeat && !identity
}

/// Reads Leases and what goes with them, noting once each kind of object it
/// may not read.
pub struct Gatherer {
    client: kube::Client,
    notes: Vec<String>,
    noted: BTreeSet<&'static str>,
}

impl Gatherer {
    /// Reads with `client`.
    pub fn new(client: kube::Client) -> Self {
        Gatherer {
            client,
            notes: Vec::new(),
            noted: BTreeSet::new(),
        }
    }

    /// What could not be read, one line per kind, for stderr.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    fn note(&mut self, kind: &'static str, message: String) {
        if self.noted.insert(kind) {
            self.notes.push(message);
        }
    }

    /// The Leases of `scope`, sorted by namespace and name; without the
    /// node heartbeats and API server identities unless `all_leases`.
    pub async fn leases(&self, scope: &Scope, all_leases: bool) -> Result<Vec<Lease>, Error> {
        let (api, what): (Api<Lease>, String) = match scope {
            Scope::Namespace(ns) => (
                Api::namespaced(self.client.clone(), ns),
                format!("listing Leases in namespace {ns:?}"),
            ),
            Scope::All => (
                Api::all(self.client.clone()),
                "listing Leases in all namespaces".to_owned(),
            ),
        };
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|source| Error::Api { what, source })?;
        let mut leases: Vec<Lease> = list
            .items
            .into_iter()
            .filter(|l| all_leases || is_election(l))
            .collect();
        leases.sort_by(|a, b| {
            (&a.metadata.namespace, &a.metadata.name)
                .cmp(&(&b.metadata.namespace, &b.metadata.name))
        });
        Ok(leases)
    }

    /// The Lease `name` in `namespace`; [`Error::NotFound`] naming it.
    pub async fn lease(&self, namespace: &str, name: &str) -> Result<Lease, Error> {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), namespace);
        match api.get_opt(name).await {
            Ok(Some(lease)) => Ok(lease),
            Ok(None) => Err(Error::NotFound {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            }),
            Err(source) => Err(Error::Api {
                what: format!("reading Lease {namespace}/{name}"),
                source,
            }),
        }
    }

    /// Each of `leases` with its Pod, candidates and fences; the candidates
    /// are listed in `scope`.
    pub async fn elections(
        &mut self,
        leases: Vec<Lease>,
        scope: &Scope,
    ) -> Result<Vec<Election>, Error> {
        if leases.is_empty() {
            return Ok(Vec::new());
        }
        let candidates = self.candidates(scope).await?;
        let fences = self.fence_bindings().await?;
        let mut out = Vec::with_capacity(leases.len());
        for lease in leases {
            let namespace = lease.metadata.namespace.clone().unwrap_or_default();
            let name = lease.metadata.name.clone().unwrap_or_default();
            let spec = lease.spec.unwrap_or_default();
            let holder = spec.holder_identity.filter(|h| !h.is_empty());
            let pod = match &holder {
                None => HolderPod::NoHolder,
                Some(h) => self.holder_pod(&namespace, h).await?,
            };
            let candidates = match &candidates {
                Seen::Forbidden => Seen::Forbidden,
                Seen::Known(all) => Seen::Known(
                    all.iter()
                        .filter(|(ns, c)| *ns == namespace && c.spec.lease_name == name)
                        .map(|(_, c)| Candidate {
                            name: c.metadata.name.clone().unwrap_or_default(),
                            binary_version: c.spec.binary_version.clone(),
                            emulation_version: c.spec.emulation_version.clone(),
                            strategy: c.spec.strategy.clone(),
                            renew_time: c.spec.renew_time.as_ref().map(|t| t.0),
                        })
                        .collect(),
                ),
            };
            let fences = match &fences {
                Seen::Forbidden => Seen::Forbidden,
                Seen::Known((bindings, policies)) => {
                    Seen::Known(fences_of(bindings, policies, &namespace, &name))
                }
            };
            out.push(Election {
                holder,
                term: i64::from(spec.lease_transitions.unwrap_or(0)),
                lease_duration_secs: spec.lease_duration_seconds.map(i64::from),
                renew_time: spec.renew_time.map(|t| t.0),
                acquire_time: spec.acquire_time.map(|t| t.0),
                strategy: spec.strategy.filter(|s| !s.is_empty()),
                preferred_holder: spec.preferred_holder.filter(|s| !s.is_empty()),
                pod,
                candidates,
                fences,
                namespace,
                name,
            });
        }
        Ok(out)
    }

    /// The Pod of `holder` in `namespace`: its name, else its hostname part.
    async fn holder_pod(&mut self, namespace: &str, holder: &str) -> Result<HolderPod, Error> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        for name in format::pod_names(holder) {
            match api.get_opt(name).await {
                Ok(Some(pod)) => {
                    let phase = if pod.metadata.deletion_timestamp.is_some() {
                        "Terminating".to_owned()
                    } else {
                        pod.status
                            .and_then(|s| s.phase)
                            .unwrap_or_else(|| "Unknown".to_owned())
                    };
                    return Ok(HolderPod::Found {
                        name: name.to_owned(),
                        phase,
                    });
                }
                Ok(None) => {}
                Err(e) if forbidden(&e) => {
                    self.note(
                        "pods",
                        format!(
                            "warning: not allowed to read Pods in namespace {namespace:?}: POD shows ?"
                        ),
                    );
                    return Ok(HolderPod::Forbidden);
                }
                Err(source) => {
                    return Err(Error::Api {
                        what: format!("reading Pod {namespace}/{name}"),
                        source,
                    });
                }
            }
        }
        Ok(HolderPod::Missing)
    }

    /// The LeaseCandidates of `scope` with their namespaces; none where the
    /// API is not served.
    async fn candidates(
        &mut self,
        scope: &Scope,
    ) -> Result<Seen<Vec<(String, LeaseCandidate)>>, Error> {
        let api: Api<LeaseCandidate> = match scope {
            Scope::Namespace(ns) => Api::namespaced(self.client.clone(), ns),
            Scope::All => Api::all(self.client.clone()),
        };
        match api.list(&ListParams::default()).await {
            Ok(list) => Ok(Seen::Known(
                list.items
                    .into_iter()
                    .map(|c| (c.metadata.namespace.clone().unwrap_or_default(), c))
                    .collect(),
            )),
            Err(e) if not_served(&e) => Ok(Seen::Known(Vec::new())),
            Err(e) if forbidden(&e) => {
                self.note(
                    "leasecandidates",
                    "warning: not allowed to list LeaseCandidates (coordination.k8s.io/v1beta1): CANDIDATES shows ?"
                        .to_owned(),
                );
                Ok(Seen::Forbidden)
            }
            Err(source) => Err(Error::Api {
                what: "listing LeaseCandidates".to_owned(),
                source,
            }),
        }
    }

    /// Every ValidatingAdmissionPolicyBinding and ValidatingAdmissionPolicy.
    async fn fence_bindings(
        &mut self,
    ) -> Result<
        Seen<(
            Vec<ValidatingAdmissionPolicyBinding>,
            Vec<ValidatingAdmissionPolicy>,
        )>,
        Error,
    > {
        let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(self.client.clone());
        let policies: Api<ValidatingAdmissionPolicy> = Api::all(self.client.clone());
        let lp = ListParams::default();
        let read = async {
            let b = bindings.list(&lp).await?;
            let p = policies.list(&lp).await?;
            Ok::<_, kube::Error>((b.items, p.items))
        };
        match read.await {
            Ok(both) => Ok(Seen::Known(both)),
            Err(e) if not_served(&e) => Ok(Seen::Known((Vec::new(), Vec::new()))),
            Err(e) if forbidden(&e) => {
                self.note(
                    "fences",
                    "warning: not allowed to list ValidatingAdmissionPolicies and their bindings: FENCE shows ?"
                        .to_owned(),
                );
                Ok(Seen::Forbidden)
            }
            Err(source) => Err(Error::Api {
                what: "listing ValidatingAdmissionPolicyBindings".to_owned(),
                source,
            }),
        }
    }
}

/// The bindings whose parameter is the Lease `namespace/lease` and whose
/// policy takes a `coordination.k8s.io/v1` Lease as its parameter, sorted by
/// name.
pub fn fences_of(
    bindings: &[ValidatingAdmissionPolicyBinding],
    policies: &[ValidatingAdmissionPolicy],
    namespace: &str,
    lease: &str,
) -> Vec<Fence> {
    let takes_a_lease = |policy: &str| {
        policies.iter().any(|p| {
            p.metadata.name.as_deref() == Some(policy)
                && p.spec
                    .as_ref()
                    .and_then(|s| s.param_kind.as_ref())
                    .is_some_and(|k| {
                        k.api_version.as_deref() == Some("coordination.k8s.io/v1")
                            && k.kind.as_deref() == Some("Lease")
                    })
        })
    };
    let mut fences: Vec<Fence> = bindings
        .iter()
        .filter_map(|b| {
            let spec = &b.spec;
            let param = spec.param_ref.as_ref()?;
            let ours = param.name.as_deref() == Some(lease)
                && param.namespace.as_deref() == Some(namespace)
                && takes_a_lease(&spec.policy_name);
            ours.then(|| Fence {
                binding: b.metadata.name.clone().unwrap_or_default(),
                policy: spec.policy_name.clone(),
                actions: spec.validation_actions.clone(),
            })
        })
        .collect();
    fences.sort_by(|a, b| a.binding.cmp(&b.binding));
    fences
}

#[cfg(test)]
mod tests {
    use super::*;

    fn election(
        holder: Option<&str>,
        renewed_secs_ago: Option<i64>,
        lease: Option<i64>,
    ) -> Election {
        let now = Timestamp::from_second(1_000_000).expect("a time");
        Election {
            namespace: "ns".into(),
            name: "l".into(),
            holder: holder.map(str::to_owned),
            term: 2,
            lease_duration_secs: lease,
            renew_time: renewed_secs_ago
                .map(|s| Timestamp::from_second(now.as_second() - s).expect("a time")),
            acquire_time: None,
            strategy: None,
            preferred_holder: None,
            pod: HolderPod::Missing,
            candidates: Seen::Known(Vec::new()),
            fences: Seen::Forbidden,
        }
    }

    #[test]
    fn state_is_held_expired_or_released() {
        let now = Timestamp::from_second(1_000_000).expect("a time");
        assert_eq!(
            election(Some("a"), Some(3), Some(15)).state(now),
            State::Held
        );
        assert_eq!(
            election(Some("a"), Some(15), Some(15)).state(now),
            State::Held
        );
        assert_eq!(
            election(Some("a"), Some(16), Some(15)).state(now),
            State::Expired
        );
        assert_eq!(election(Some("a"), None, Some(15)).state(now), State::Held);
        assert_eq!(election(None, Some(1), Some(1)).state(now), State::Released);
        let e = election(Some("a"), Some(3), Some(15));
        assert_eq!(e.candidates_cell(), "<none>");
        assert_eq!(e.fence_cell(), "?");
        let json = e.to_json(now);
        assert_eq!(json["renewedAgoSeconds"], 3.0);
        assert_eq!(json["candidates"], json!([]));
        assert_eq!(json["fence"], Value::Null);
        assert_eq!(json["pod"]["lookup"], "missing");
    }

    #[test]
    fn a_fence_is_a_binding_of_a_lease_policy_with_the_lease_as_parameter() {
        let binding = |name: &str, policy: &str, ns: &str, lease: &str| {
            serde_json::from_value::<ValidatingAdmissionPolicyBinding>(json!({
                "metadata": { "name": name },
                "spec": {
                    "policyName": policy,
                    "paramRef": { "name": lease, "namespace": ns, "parameterNotFoundAction": "Deny" },
                    "validationActions": ["Deny"],
                },
            }))
            .expect("a binding")
        };
        let policy = |name: &str, kind: &str| {
            serde_json::from_value::<ValidatingAdmissionPolicy>(json!({
                "metadata": { "name": name },
                "spec": { "paramKind": { "apiVersion": "coordination.k8s.io/v1", "kind": kind } },
            }))
            .expect("a policy")
        };
        let bindings = [
            binding("fence-l", "fence-l", "ns", "l"),
            binding("other-ns", "fence-l", "elsewhere", "l"),
            binding("other-lease", "fence-l", "ns", "m"),
            binding("configmap-param", "cm", "ns", "l"),
            binding("no-policy", "absent", "ns", "l"),
        ];
        let policies = [policy("fence-l", "Lease"), policy("cm", "ConfigMap")];
        let fences = fences_of(&bindings, &policies, "ns", "l");
        assert_eq!(
            fences,
            [Fence {
                binding: "fence-l".into(),
                policy: "fence-l".into(),
                actions: vec!["Deny".into()],
            }]
        );
    }
}
