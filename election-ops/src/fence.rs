//! Server-side fencing: a ValidatingAdmissionPolicy that makes the API server
//! itself refuse the writes of a replica that no longer holds the Lease.
//!
//! The write guard ([`crate::guard`]) refuses to send once this replica is not
//! sure it leads, but a write sent just before the deadline can still reach the
//! server after another replica took over (a paused process, a slow network, a
//! retry). The policy closes that window on the server: it takes the election's
//! Lease as its parameter and admits a write to a protected resource only if it
//! brings the stamp of the Lease's current term, as
//! [`TermAnnotationLayer`](crate::stamp::TermAnnotationLayer) writes it on every
//! verb, and (by default) only from the holder itself:
//!
//! - `kube-elector.dev/holder` equal to the Lease's `holderIdentity` (a Lease with no
//!   holder refuses every protected write);
//! - `kube-elector.dev/term`, `<transitions>@<version>`, whose transitions equal the
//!   Lease's `leaseTransitions` (the version moves with every renewal, so the
//!   policy does not compare it);
//! - a delete carries no object: the object it removes must carry the current
//!   term's stamp, which the stamp layer writes just before the delete;
//! - the writer itself ([`Writer`]): by default the Pod its service-account
//!   token names ([`Writer::PodName`]), equal to the holder.
//!
//! The writer check is what lets the stamp be fixed for a term. The policy
//! judges the object as it will be stored, so a write that leaves the
//! annotations alone (a JSON patch of one field, a merge patch without them)
//! inherits the last writer's stamp; a deposed replica's such write is refused
//! because it does not come from the holder. A write that changes nothing else
//! changes nothing at all, so a level-triggered controller that writes what is
//! already stored settles: the API server stores no new version and sends no
//! watch event.
//!
//! What a no-op write (one that changes nothing but what the stamp layer adds)
//! costs, by mode:
//!
//! | [`Writer`] | the stamp | a no-op write | not fenced |
//! |---|---|---|---|
//! | [`PodName`](Writer::PodName) (default) | holder and term, fixed for the term | nothing within a term; the first write to an object in a new term is real | a process in the holder's Pod |
//! | [`Username`](Writer::Username) | the same | the same | a process with the holder's credentials |
//! | [`Any`](Writer::Any) | and a token of each write ([`TermAnnotationLayer::write_tokens`](crate::stamp::TermAnnotationLayer::write_tokens)) | a real write: a new version and a watch event, every time | a writer that forges the stamp (reads the Lease, writes its holder and transitions with a token it made up): the stamp is a fencing token, not an identity |
//!
//! With [`Writer::Any`] there is no identity to tell writers apart, so each write
//! must bring a token of its own, unlike the stored one
//! (`kube-elector.dev/write`); a delete needs the object marked with a token
//! starting with `delete-` first. A controller under such a fence must compare
//! before it writes. [`Writer::PodName`] needs pod-bound service-account
//! tokens (Kubernetes 1.30+, which the policy needs anyway) and the identity to
//! be the Pod's name; [`Writer::Username`] one user per replica.
//!
//! The other trade-offs: a delete is two requests (the stamp, then the delete).
//! Writers that do not stamp (kubectl by hand, other controllers) are
//! refused on protected resources unless exempt: the control plane's
//! controllers are by default ([`DEFAULT_EXEMPT_USERS`], [`DEFAULT_EXEMPT_GROUPS`]),
//! others with [`FencePolicy::exempt_user`] and [`FencePolicy::exempt_group`].
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
//! Subresources: protecting a resource protects its subresources too
//! (`deployments/status`, `deployments/scale`, `pods/eviction`), judged on the
//! object the API server hands the policy. Where that object keeps the written
//! metadata (a Deployment's or a StatefulSet's status write, a create such as an
//! Eviction) the stamp travels and the write is judged as any other. Where the
//! API server puts the stored metadata back (the status of Pods and of custom
//! resources) or the object has none (`scale`), no write can bring a stamp of its
//! own: with a writer check ([`Writer::PodName`], the default, or
//! [`Writer::Username`]) the holder's is admitted on the writer check alone, and
//! without one every such write is refused, saying so. Naming a subresource (`deployments/status`)
//! protects that subresource alone.
//!
//! What it cannot do: the API server reads the parameter from its cache, so the
//! policy may see a takeover a few milliseconds late; CEL has no clock, so a lease
//! that expired but that nobody took yet still admits its holder's writes; a
//! write to a subresource that cannot carry the stamp is fenced by the writer
//! check alone, so by the holder's identity and not its term; and it
//! needs Kubernetes 1.30 or later (ValidatingAdmissionPolicy is GA there). With
//! the Lease absent (`parameterNotFoundAction: Deny`) every protected write is
//! refused, in the API server's words for a binding it cannot configure rather
//! than the policy's message: `422 Invalid`, "configmaps \"x\" is forbidden:
//! ValidatingAdmissionPolicy 'fence-…' with binding 'fence-…' denied request:
//! failed to configure binding: no params found for policy binding with `Deny`
//! parameterNotFoundAction".

use serde_json::{Value, json};

pub use crate::stamp::{DELETE_MARK, HOLDER_ANNOTATION, TERM_ANNOTATION, WRITE_ANNOTATION};

/// The userInfo extra a pod-bound service-account token carries: the Pod's name.
pub const POD_NAME_EXTRA: &str = "authentication.kubernetes.io/pod-name";

/// The users exempt from the policy by default: kube-controller-manager when it
/// runs with one identity for all its controllers (the deployment controller
/// updates a Deployment's annotations and status, the garbage collector removes
/// owner references and deletes dependents, the namespace controller deletes a
/// namespace's objects), and kube-scheduler (a Pod's `binding` and its status).
pub const DEFAULT_EXEMPT_USERS: [&str; 2] =
    ["system:kube-controller-manager", "system:kube-scheduler"];

/// The groups exempt from the policy by default: the service accounts of
/// `kube-system`, as which kube-controller-manager's controllers write with
/// `--use-service-account-credentials` (kubeadm's default), and the kubelets
/// (`system:nodes`: a Pod's status, its final delete). The first is not applied
/// when a fenced namespace is `kube-system`: the election's own writers would be
/// in it.
pub const DEFAULT_EXEMPT_GROUPS: [&str; 2] = ["system:serviceaccounts:kube-system", "system:nodes"];

/// One kind of object the policy fences: its API group (`""` for the core group),
/// version and plural resource (`deployments`, with its subresources), or one
/// subresource alone (`deployments/status`).
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
    /// Anyone whose write brings the current term's stamp of its own, with a
    /// token of that write (a delete: whoever deletes an object marked for
    /// deletion in this term). The stamp layer must make write tokens
    /// ([`TermAnnotationLayer::write_tokens`](crate::stamp::TermAnnotationLayer::write_tokens)),
    /// so every write is a real one, a no-op included. A writer that forges the
    /// stamp is not fenced, and no status write of a custom resource passes.
    Any,
    /// Only the holder's Pod (the default): the writer's pod-bound
    /// service-account token names a Pod ([`POD_NAME_EXTRA`]) whose name is the
    /// holder (the identity taken from `metadata.name`, as
    /// `deploy/quickstart.yaml` does). The stamp is fixed for a term, so a write
    /// that changes nothing else is a no-op.
    PodName,
    /// Only the user whose name is the holder's identity.
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
    /// subdomain (as `lock_kube::names` checks them for the locks).
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

/// Why [`FencePolicy::apply`] did not write the policy and its binding.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// The policy cannot be rendered.
    #[error(transparent)]
    Fence(#[from] FenceError),
    /// The API server refused a write (or could not be reached); the objects
    /// written before it stay.
    #[error("writing the {kind} {name:?}: {source}")]
    Api {
        /// `ValidatingAdmissionPolicy` or `ValidatingAdmissionPolicyBinding`.
        kind: String,
        /// Its name.
        name: String,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
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
    exempt_users: Vec<String>,
    exempt_groups: Vec<String>,
    default_exemptions: bool,
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
            writer: Writer::PodName,
            enforcement: Enforcement::Deny,
            term_key: TERM_ANNOTATION.to_owned(),
            exempt_users: Vec::new(),
            exempt_groups: Vec::new(),
            default_exemptions: true,
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

    /// Whose writes are admitted ([`Writer::PodName`] by default).
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

    /// Admits the writes of the user `name` without a stamp (the policy does not
    /// apply to them), besides the default exemptions ([`DEFAULT_EXEMPT_USERS`],
    /// [`DEFAULT_EXEMPT_GROUPS`]).
    #[must_use]
    pub fn exempt_user(mut self, name: &str) -> Self {
        self.exempt_users.push(name.to_owned());
        self
    }

    /// Admits the writes of members of the group `name` without a stamp, besides
    /// the default exemptions.
    #[must_use]
    pub fn exempt_group(mut self, name: &str) -> Self {
        self.exempt_groups.push(name.to_owned());
        self
    }

    /// Whether the default exemptions apply (on by default): the control plane's
    /// controllers ([`DEFAULT_EXEMPT_USERS`], and [`DEFAULT_EXEMPT_GROUPS`] unless
    /// a fenced namespace is `kube-system`).
    #[must_use]
    pub fn default_exemptions(mut self, on: bool) -> Self {
        self.default_exemptions = on;
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
        use lock_kube::names::{validate_name, validate_namespace};
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

    /// The users and groups the policy does not apply to.
    fn exemptions(&self) -> (Vec<&str>, Vec<&str>) {
        let mut users: Vec<&str> = self.exempt_users.iter().map(String::as_str).collect();
        let mut groups: Vec<&str> = self.exempt_groups.iter().map(String::as_str).collect();
        if self.default_exemptions {
            users.extend(DEFAULT_EXEMPT_USERS);
            let kube_system = std::iter::once(&self.namespace)
                .chain(&self.namespaces)
                .any(|ns| ns == "kube-system");
            groups.extend(
                DEFAULT_EXEMPT_GROUPS
                    .into_iter()
                    .filter(|g| !kube_system || !g.starts_with("system:serviceaccounts:")),
            );
        }
        (users, groups)
    }

    /// The match conditions: not the Lease itself, not an exempt writer.
    fn match_conditions(&self) -> Vec<Value> {
        let (ns, lease) = (&self.namespace, &self.lease);
        let mut conditions = vec![json!({
            "name": "not-the-lease",
            "expression": format!(
                "!(request.resource.group == 'coordination.k8s.io' && \
                 request.resource.resource == 'leases' && \
                 request.namespace == '{ns}' && request.name == '{lease}')"
            ),
        })];
        let (users, groups) = self.exemptions();
        let list = |items: &[&str]| {
            let quoted: Vec<String> = items.iter().map(|i| cel_string(i)).collect();
            format!("[{}]", quoted.join(", "))
        };
        let mut exempt = Vec::new();
        if !users.is_empty() {
            exempt.push(format!("request.userInfo.username in {}", list(&users)));
        }
        if !groups.is_empty() {
            exempt.push(format!(
                "(has(request.userInfo.groups) && request.userInfo.groups.exists(g, g in {}))",
                list(&groups)
            ));
        }
        if !exempt.is_empty() {
            conditions.push(json!({
                "name": "not-exempt",
                "expression": format!("!({})", exempt.join(" || ")),
            }));
        }
        conditions
    }

    /// The ValidatingAdmissionPolicy, as the JSON object the API takes.
    ///
    /// A protected write is admitted when the object it leaves (for a delete,
    /// the object it removes) carries the stamp of the Lease's current term and
    /// a write token of its own:
    ///
    /// - create: the stamp, and a token;
    /// - update (any verb and patch type): the stamp, and a token unlike the one
    ///   stored before, so that a write that leaves the annotations alone, and so
    ///   inherits the last writer's stamp, is refused;
    /// - delete: the stored object's stamp is this term's and its token is a
    ///   deletion mark (`delete-…`), written just before by the stamp layer;
    /// - an update of a subresource whose object brings no token of its own (the
    ///   API server kept the stored metadata, or the object has none): with a
    ///   writer check, that check alone; without one, refused.
    pub fn policy(&self) -> Result<Value, FenceError> {
        self.check()?;
        let name = self.policy_name();
        let (ns, lease) = (&self.namespace, &self.lease);
        let rules: Vec<Value> = self
            .protected
            .iter()
            .map(|p| {
                // A resource with its subresources, or a subresource alone.
                let resources = if p.resource.contains('/') {
                    json!([p.resource])
                } else {
                    json!([p.resource, format!("{}/*", p.resource)])
                };
                json!({
                    "apiGroups": [p.group],
                    "apiVersions": [p.version],
                    "resources": resources,
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                })
            })
            .collect();
        // The annotation `key` of the object the write leaves, or of the one a
        // delete removes ('' when absent).
        let stamped = |key: &str| {
            let of = |obj: &str| {
                format!(
                    "(has({obj}.metadata.annotations) && '{key}' in {obj}.metadata.annotations ? \
                     {obj}.metadata.annotations['{key}'] : '')"
                )
            };
            format!(
                "request.operation == 'DELETE' ? {} : {}",
                of("oldObject"),
                of("object")
            )
        };
        // The annotation `key` of the stored object on an update ('' otherwise).
        let prior = |key: &str| {
            format!(
                "request.operation == 'UPDATE' && has(oldObject.metadata.annotations) && \
                 '{key}' in oldObject.metadata.annotations ? \
                 oldObject.metadata.annotations['{key}'] : ''"
            )
        };
        let writer_check = match self.writer {
            Writer::Any => None,
            Writer::PodName => Some((
                format!(
                    "has(request.userInfo.extra) && '{POD_NAME_EXTRA}' in request.userInfo.extra && \
                     request.userInfo.extra['{POD_NAME_EXTRA}'].exists(p, p == variables.holder)"
                ),
                "the writer is not the holder Pod (with --writer pod-name the identity must be the Pod name)",
            )),
            Writer::Username => Some((
                "request.userInfo.username == variables.holder".to_owned(),
                "the writer is not the holder",
            )),
        };
        let subresource_update = "has(request.subResource) && request.subResource != '' && \
                                  request.operation == 'UPDATE'";
        let mut variables = vec![
            json!({
                "name": "holder",
                "expression": "has(params.spec.holderIdentity) ? params.spec.holderIdentity : ''",
            }),
            json!({
                "name": "transitions",
                "expression": "has(params.spec.leaseTransitions) ? params.spec.leaseTransitions : 0",
            }),
            json!({ "name": "writtenHolder", "expression": stamped(HOLDER_ANNOTATION) }),
            json!({ "name": "writtenTerm", "expression": stamped(&self.term_key) }),
        ];
        // The stamp is the Lease's holder and term, unless `unless` holds.
        let term_check = |unless: &str| {
            json!({
                "expression": format!(
                    "{unless}(variables.writtenHolder == variables.holder && \
                     variables.writtenTerm.startsWith(string(variables.transitions) + '@'))"
                ),
                "messageExpression": format!(
                    "'fenced by {name}: the ' + (request.operation == 'DELETE' ? 'deleted object' : 'write') + \
                     ' is stamped for holder \"' + \
                     variables.writtenHolder + '\" term \"' + variables.writtenTerm + \
                     '\", the Lease {ns}/{lease} is held by \"' + variables.holder + \
                     '\" at transitions ' + string(variables.transitions)"
                ),
                "reason": "Forbidden",
            })
        };
        let has_holder = json!({
            "expression": "variables.holder != ''",
            "messageExpression": format!(
                "'fenced by {name}: the Lease {ns}/{lease} has no holder'"
            ),
            "reason": "Forbidden",
        });
        let validations = match writer_check {
            // No writer check: the stamp must be the write's own (a token of
            // each write), or a patch that leaves it alone would pass as the
            // last writer's.
            None => {
                variables.extend([
                    json!({ "name": "writeToken", "expression": stamped(WRITE_ANNOTATION) }),
                    json!({ "name": "priorToken", "expression": prior(WRITE_ANNOTATION) }),
                    json!({
                        "name": "unstampable",
                        "expression": format!(
                            "{subresource_update} && \
                             (variables.writeToken == '' || variables.writeToken == variables.priorToken)"
                        ),
                    }),
                ]);
                vec![
                    has_holder,
                    json!({
                        "expression": "!variables.unstampable",
                        "messageExpression": format!(
                            "'fenced by {name}: the write to the ' + request.subResource + ' subresource \
                             brings no stamp of its own (unstamped, or the API server keeps the stored \
                             metadata there): only a fence with a writer check admits it, for the holder'"
                        ),
                        "reason": "Forbidden",
                    }),
                    term_check(""),
                    json!({
                        "expression": format!(
                            "request.operation == 'DELETE' ? variables.writeToken.startsWith('{DELETE_MARK}') : \
                             (variables.writeToken != '' && variables.writeToken != variables.priorToken)"
                        ),
                        "messageExpression": format!(
                            "'fenced by {name}: ' + (request.operation == 'DELETE' ? \
                             'the object was not marked for deletion in this term (delete through the stamp layer)' : \
                             variables.writeToken == '' ? 'the write carries no {WRITE_ANNOTATION} token' : \
                             'the write brings no stamp of its own (its {WRITE_ANNOTATION} is the stored one)') + \
                             ' (with --writer any every write needs a token of its own: TermAnnotationLayer::write_tokens)'"
                        ),
                        "reason": "Forbidden",
                    }),
                ]
            }
            // A writer check tells writers apart: the stamp fixed for the term
            // is enough, so a write that changes nothing else is a no-op. A
            // subresource write whose object keeps the stored stamp (the API
            // server put the stored metadata back, or there is none) is judged
            // by the writer check alone.
            Some((expression, why)) => {
                variables.extend([
                    json!({ "name": "priorHolder", "expression": prior(HOLDER_ANNOTATION) }),
                    json!({ "name": "priorTerm", "expression": prior(&self.term_key) }),
                    json!({
                        "name": "unstampable",
                        "expression": format!(
                            "{subresource_update} && variables.writtenHolder == variables.priorHolder && \
                             variables.writtenTerm == variables.priorTerm"
                        ),
                    }),
                ]);
                vec![
                    has_holder,
                    term_check("variables.unstampable || "),
                    json!({
                        "expression": expression,
                        "messageExpression": format!(
                            "'fenced by {name}: {why} (the Lease {ns}/{lease} is held by \"' + \
                             variables.holder + '\")'"
                        ),
                        "reason": "Forbidden",
                    }),
                ]
            }
        };
        Ok(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": { "name": name },
            "spec": {
                "failurePolicy": "Fail",
                "paramKind": { "apiVersion": "coordination.k8s.io/v1", "kind": "Lease" },
                "matchConstraints": { "resourceRules": rules },
                "matchConditions": self.match_conditions(),
                "variables": variables,
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

    /// Writes the policy and its binding to the cluster `client` talks to:
    /// created, or replaced where they exist (as `kubectl apply -f` of
    /// [`FencePolicy::to_yaml`] would).
    pub async fn apply(&self, client: kube::Client) -> Result<(), ApplyError> {
        use kube::api::{Api, ApiResource, DynamicObject, PostParams};
        let name = self.policy_name();
        for (doc, plural) in [
            (self.policy()?, "validatingadmissionpolicies"),
            (self.binding()?, "validatingadmissionpolicybindings"),
        ] {
            let kind = doc["kind"].as_str().unwrap_or_default().to_owned();
            let resource = ApiResource {
                group: "admissionregistration.k8s.io".into(),
                version: "v1".into(),
                api_version: "admissionregistration.k8s.io/v1".into(),
                kind: kind.clone(),
                plural: plural.into(),
            };
            let failed = |source| ApplyError::Api {
                kind: kind.clone(),
                name: name.clone(),
                source,
            };
            let mut object: DynamicObject =
                serde_json::from_value(doc).map_err(|e| failed(kube::Error::SerdeError(e)))?;
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            let written = match api.get_opt(&name).await.map_err(failed)? {
                Some(current) => {
                    object.metadata.resource_version = current.metadata.resource_version;
                    api.replace(&name, &PostParams::default(), &object).await
                }
                None => api.create(&PostParams::default(), &object).await,
            };
            written.map_err(failed)?;
        }
        Ok(())
    }

    /// The policy and its binding as two YAML documents, for `kubectl apply -f`.
    pub fn to_yaml(&self) -> Result<String, FenceError> {
        let mut out = String::new();
        for doc in [self.policy()?, self.binding()?] {
            out.push_str("---\n");
            out.push_str(&crate::yaml::to_yaml(&doc));
        }
        Ok(out)
    }
}

/// `s` as a CEL string literal, in single quotes.
fn cel_string(s: &str) -> String {
    let escaped = s
        .replace('\\', "\\\\")
        .replace('\'', "\\'")
        .replace('\n', "\\n");
    format!("'{escaped}'")
}
