//! Server-side fencing: a ValidatingAdmissionPolicy that makes the API server
//! itself refuse the writes of a replica that no longer holds the Lease.
//!
//! The write guard ([`crate::guard`]) refuses to send once this replica is not
//! sure it leads, but a write sent just before the deadline can still reach the
//! server after another replica took over (a paused process, a slow network). The
//! policy closes that window on the server: it takes the election's Lease as its
//! parameter and admits a protected write only if the object carries the stamp of
//! the Lease's current term, as [`TermAnnotationLayer`](crate::guard::TermAnnotationLayer)
//! writes it:
//!
//! - `election.rs/holder`: the holder the write was made for, equal to the Lease's
//!   `holderIdentity` (a Lease with no holder refuses every protected write);
//! - `election.rs/term`: `<transitions>@<version>`, whose transitions equal the
//!   Lease's `leaseTransitions` (the version moves with every renewal, so the
//!   policy does not compare it);
//! - optionally the writer itself ([`Writer`]): the Pod its service-account token
//!   names, or its username, equal to the holder. That check also fences deletes,
//!   which carry no object to stamp; without it deletes are not fenced.
//!
//! ```
//! use election_ops::fence::{FencePolicy, Protected, Writer};
//!
//! let policy = FencePolicy::new("default", "my-controller")
//!     .protect(Protected::new("apps", "v1", "deployments"))
//!     .writer(Writer::PodName);
//! let yaml = policy.to_yaml().unwrap();
//! assert!(yaml.contains("kind: ValidatingAdmissionPolicy\n"));
//! assert!(yaml.contains("kind: ValidatingAdmissionPolicyBinding\n"));
//! ```
//!
//! What it cannot do: the API server reads the parameter from its cache, so the
//! policy may see a takeover a few milliseconds late; CEL has no clock, so a lease
//! that expired but that nobody took yet still admits its holder's writes; and
//! it needs Kubernetes 1.30 or later (ValidatingAdmissionPolicy is GA there).

use serde_json::{Value, json};

pub use crate::guard::{HOLDER_ANNOTATION, TERM_ANNOTATION};

/// The userInfo extra a pod-bound service-account token carries: the Pod's name.
pub const POD_NAME_EXTRA: &str = "authentication.kubernetes.io/pod-name";

/// One kind of object the policy fences: its API group (`""` for the core group),
/// version and plural resource (`deployments`, or a subresource such as
/// `deployments/status`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protected {
    group: String,
    version: String,
    resource: String,
}

impl Protected {
    /// Objects of `resource` in `group`/`version`.
    pub fn new(group: &str, version: &str, resource: &str) -> Self {
        Protected {
            group: group.to_owned(),
            version: version.to_owned(),
            resource: resource.to_owned(),
        }
    }

    /// Parses `group/version/resource`, or `version/resource` for the core group
    /// (`apps/v1/deployments`, `v1/configmaps`).
    pub fn parse(s: &str) -> Result<Self, FenceError> {
        let parts: Vec<&str> = s.split('/').collect();
        let bad = || FenceError::Protected(s.to_owned());
        let p = match parts.as_slice() {
            [version, resource] => Protected::new("", version, resource),
            [version, resource, sub] if is_version(version) => {
                Protected::new("", version, &format!("{resource}/{sub}"))
            }
            [group, version, resource] => Protected::new(group, version, resource),
            [group, version, resource, sub] => {
                Protected::new(group, version, &format!("{resource}/{sub}"))
            }
            _ => return Err(bad()),
        };
        let fine = |part: &str| !part.is_empty() && !part.contains(char::is_whitespace);
        if is_version(&p.version) && p.resource.split('/').all(fine) {
            Ok(p)
        } else {
            Err(bad())
        }
    }
}

/// Whether `s` reads as an API version: `v1`, `v2`, `v1beta1`, `v1alpha2`.
fn is_version(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('v') else {
        return false;
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let (major, tail) = rest.split_at(digits);
    let level = ["alpha", "beta"]
        .iter()
        .find_map(|l| tail.strip_prefix(l))
        .map(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    !major.is_empty() && (tail.is_empty() || level == Some(true))
}

/// Whose writes the policy admits, besides the stamp.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Writer {
    /// Anyone whose write carries the current term's stamp; deletes are not
    /// fenced.
    Any,
    /// Only the holder's Pod: the writer's pod-bound service-account token names a
    /// Pod ([`POD_NAME_EXTRA`]) whose name is the holder (the identity taken from
    /// `metadata.name`, as `deploy/quickstart.yaml` does). Deletes are fenced too.
    PodName,
    /// Only the user whose name is the holder's identity. Deletes are fenced too.
    Username,
}

/// What the binding does with a refused write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enforcement {
    /// Refuse it (`validationActions: [Deny]`).
    Deny,
    /// Admit it, with a warning to the client and an audit annotation
    /// (`[Warn, Audit]`): the way to roll the policy out before `Deny`.
    WarnAndAudit,
}

/// An input the policy cannot be rendered from.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FenceError {
    /// A namespace that is not a DNS-1123 label, or a name that is not a DNS-1123
    /// subdomain (as `kube_support::names` checks them for the locks).
    #[error(
        "invalid {what} {value:?}: a Kubernetes name is lower-case letters, digits, '-' and '.'"
    )]
    Name {
        /// Which name.
        what: &'static str,
        /// As given.
        value: String,
    },
    /// A protected resource that does not read as `[group/]version/resource`.
    #[error(
        "invalid resource {0:?}: expected group/version/resource (apps/v1/deployments) or version/resource (v1/configmaps)"
    )]
    Protected(String),
    /// Nothing to protect.
    #[error("no resource to protect: name at least one")]
    NothingProtected,
}

/// The ValidatingAdmissionPolicy and its binding for one election (see the
/// [module](self) docs).
#[derive(Clone, Debug)]
pub struct FencePolicy {
    namespace: String,
    lease: String,
    /// Where protected writes are fenced; empty: the Lease's namespace.
    namespaces: Vec<String>,
    name: Option<String>,
    protected: Vec<Protected>,
    writer: Writer,
    enforcement: Enforcement,
    term_key: String,
}

impl FencePolicy {
    /// Fences writes in `namespace` with the Lease `lease` there (its name also
    /// names the policy: `fence-<lease>`). Protect at least one resource.
    pub fn new(namespace: &str, lease: &str) -> Self {
        FencePolicy {
            namespace: namespace.to_owned(),
            lease: lease.to_owned(),
            namespaces: Vec::new(),
            name: None,
            protected: Vec::new(),
            writer: Writer::Any,
            enforcement: Enforcement::Deny,
            term_key: TERM_ANNOTATION.to_owned(),
        }
    }

    /// Also fences writes of `resource`.
    #[must_use]
    pub fn protect(mut self, resource: Protected) -> Self {
        self.protected.push(resource);
        self
    }

    /// Fences the protected writes in these namespaces (the Lease's own or not)
    /// instead of the Lease's namespace alone.
    #[must_use]
    pub fn namespaces<S: Into<String>>(mut self, namespaces: impl IntoIterator<Item = S>) -> Self {
        self.namespaces = namespaces.into_iter().map(Into::into).collect();
        self
    }

    /// Whose writes are admitted ([`Writer::Any`] by default).
    #[must_use]
    pub fn writer(mut self, writer: Writer) -> Self {
        self.writer = writer;
        self
    }

    /// What a refusal does ([`Enforcement::Deny`] by default).
    #[must_use]
    pub fn enforcement(mut self, enforcement: Enforcement) -> Self {
        self.enforcement = enforcement;
        self
    }

    /// The policy's (and binding's) name instead of `fence-<lease>`.
    #[must_use]
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_owned());
        self
    }

    /// The term annotation's key, where [`TermAnnotationLayer::key`](crate::guard::TermAnnotationLayer::key)
    /// set another.
    #[must_use]
    pub fn term_key(mut self, key: &str) -> Self {
        self.term_key = key.to_owned();
        self
    }

    fn policy_name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("fence-{}", self.lease))
    }

    fn check(&self) -> Result<(), FenceError> {
        use kube_support::names::{validate_name, validate_namespace};
        let bad = |what, value: &str| FenceError::Name {
            what,
            value: value.to_owned(),
        };
        for ns in std::iter::once(&self.namespace).chain(&self.namespaces) {
            validate_namespace(ns).map_err(|_| bad("namespace", ns))?;
        }
        validate_name(&self.lease).map_err(|_| bad("Lease name", &self.lease))?;
        let policy = self.policy_name();
        validate_name(&policy).map_err(|_| bad("policy name", &policy))?;
        if self.protected.is_empty() {
            return Err(FenceError::NothingProtected);
        }
        Ok(())
    }

    /// The ValidatingAdmissionPolicy, as the JSON object the API takes.
    pub fn policy(&self) -> Result<Value, FenceError> {
        self.check()?;
        let name = self.policy_name();
        let (ns, lease) = (&self.namespace, &self.lease);
        let mut operations = vec!["CREATE", "UPDATE"];
        if self.writer != Writer::Any {
            operations.push("DELETE");
        }
        let rules: Vec<Value> = self
            .protected
            .iter()
            .map(|p| {
                json!({
                    "apiGroups": [p.group],
                    "apiVersions": [p.version],
                    "resources": [p.resource],
                    "operations": operations,
                })
            })
            .collect();
        let annotation = |key: &str| {
            format!(
                "request.operation != 'DELETE' && has(object.metadata.annotations) && \
                 '{key}' in object.metadata.annotations ? \
                 object.metadata.annotations['{key}'] : ''"
            )
        };
        let mut validations = vec![
            json!({
                "expression": "variables.holder != ''",
                "messageExpression": format!(
                    "'fenced by {name}: the Lease {ns}/{lease} has no holder'"
                ),
                "reason": "Forbidden",
            }),
            json!({
                "expression": "request.operation == 'DELETE' || \
                    (variables.writtenHolder == variables.holder && \
                    variables.writtenTerm.startsWith(string(variables.transitions) + '@'))",
                "messageExpression": format!(
                    "'fenced by {name}: the write is stamped for holder \"' + \
                     variables.writtenHolder + '\" term \"' + variables.writtenTerm + \
                     '\", the Lease {ns}/{lease} is held by \"' + variables.holder + \
                     '\" at transitions ' + string(variables.transitions)"
                ),
                "reason": "Forbidden",
            }),
        ];
        let writer_check = match self.writer {
            Writer::Any => None,
            Writer::PodName => Some((
                format!(
                    "has(request.userInfo.extra) && '{POD_NAME_EXTRA}' in request.userInfo.extra && \
                     request.userInfo.extra['{POD_NAME_EXTRA}'].exists(p, p == variables.holder)"
                ),
                "the writer is not the holder Pod",
            )),
            Writer::Username => Some((
                "request.userInfo.username == variables.holder".to_owned(),
                "the writer is not the holder",
            )),
        };
        if let Some((expression, why)) = writer_check {
            validations.push(json!({
                "expression": expression,
                "messageExpression": format!(
                    "'fenced by {name}: {why} (the Lease {ns}/{lease} is held by \"' + \
                     variables.holder + '\")'"
                ),
                "reason": "Forbidden",
            }));
        }
        Ok(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": { "name": name },
            "spec": {
                "failurePolicy": "Fail",
                "paramKind": { "apiVersion": "coordination.k8s.io/v1", "kind": "Lease" },
                "matchConstraints": { "resourceRules": rules },
                "matchConditions": [{
                    "name": "not-the-lease",
                    "expression": format!(
                        "!(request.resource.group == 'coordination.k8s.io' && \
                         request.resource.resource == 'leases' && \
                         request.namespace == '{ns}' && request.name == '{lease}')"
                    ),
                }],
                "variables": [
                    {
                        "name": "holder",
                        "expression": "has(params.spec.holderIdentity) ? params.spec.holderIdentity : ''",
                    },
                    {
                        "name": "transitions",
                        "expression": "has(params.spec.leaseTransitions) ? params.spec.leaseTransitions : 0",
                    },
                    { "name": "writtenHolder", "expression": annotation(HOLDER_ANNOTATION) },
                    { "name": "writtenTerm", "expression": annotation(&self.term_key) },
                ],
                "validations": validations,
            },
        }))
    }

    /// The ValidatingAdmissionPolicyBinding: the policy, with the Lease as its
    /// parameter (refusing everything when the Lease does not exist), on objects
    /// in the Lease's namespace (or those of [`FencePolicy::namespaces`]).
    pub fn binding(&self) -> Result<Value, FenceError> {
        self.check()?;
        let actions = match self.enforcement {
            Enforcement::Deny => json!(["Deny"]),
            Enforcement::WarnAndAudit => json!(["Warn", "Audit"]),
        };
        Ok(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": { "name": self.policy_name() },
            "spec": {
                "policyName": self.policy_name(),
                "paramRef": {
                    "name": self.lease,
                    "namespace": self.namespace,
                    "parameterNotFoundAction": "Deny",
                },
                "matchResources": { "namespaceSelector": self.namespace_selector() },
                "validationActions": actions,
            },
        }))
    }

    /// The namespaces fenced, by the label every namespace carries.
    fn namespace_selector(&self) -> Value {
        const KEY: &str = "kubernetes.io/metadata.name";
        match self.namespaces.as_slice() {
            [] => json!({ "matchLabels": { KEY: self.namespace } }),
            [one] => json!({ "matchLabels": { KEY: one } }),
            many => json!({
                "matchExpressions": [{ "key": KEY, "operator": "In", "values": many }],
            }),
        }
    }

    /// The policy and its binding as two YAML documents, for `kubectl apply -f`.
    pub fn to_yaml(&self) -> Result<String, FenceError> {
        let mut out = String::new();
        for doc in [self.policy()?, self.binding()?] {
            out.push_str("---\n");
            yaml(&doc, 0, &mut out);
        }
        Ok(out)
    }
}

/// `value` as block YAML at `indent`, strings quoted as JSON strings (which YAML
/// reads as double-quoted scalars) unless they are plain words.
fn yaml(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.push_str(&format!("{pad}{k}:"));
                inline_or_block(v, indent + 2, out);
            }
        }
        Value::Array(items) => {
            for v in items {
                out.push_str(&format!("{pad}-"));
                match v {
                    Value::Object(map) if !map.is_empty() => {
                        // The first key on the dash's line, the rest below it.
                        let mut first = String::new();
                        yaml(v, indent + 2, &mut first);
                        out.push(' ');
                        out.push_str(first.trim_start());
                    }
                    _ => inline_or_block(v, indent + 2, out),
                }
            }
        }
        scalar => {
            out.push_str(&pad);
            out.push_str(&yaml_scalar(scalar));
            out.push('\n');
        }
    }
}

fn inline_or_block(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            yaml(v, indent, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            yaml(v, indent, out);
        }
        Value::Object(_) => out.push_str(" {}\n"),
        Value::Array(_) => out.push_str(" []\n"),
        scalar => {
            out.push(' ');
            out.push_str(&yaml_scalar(scalar));
            out.push('\n');
        }
    }
}

fn yaml_scalar(v: &Value) -> String {
    match v {
        Value::String(s) => {
            let plain = !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '/' | '_'))
                && s.starts_with(|c: char| c.is_ascii_alphabetic())
                && !matches!(
                    s.to_ascii_lowercase().as_str(),
                    "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
                );
            if plain { s.clone() } else { v.to_string() }
        }
        other => other.to_string(),
    }
}
