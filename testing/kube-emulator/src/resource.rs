//! The resource types the emulator serves, with their API coordinates.

use std::fmt;

/// A resource type served by the emulator.
///
/// Non-exhaustive: a kind the elections come to need may be added (a match
/// elsewhere needs a wildcard arm).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Resource {
    /// `coordination.k8s.io/v1` Lease.
    Lease,
    /// `coordination.k8s.io/v1beta1` LeaseCandidate: a component's bid for a
    /// Lease under coordinated leader election, which the emulator's
    /// [`crate::Coordinator`] (when on) answers.
    LeaseCandidate,
    /// Core `v1` ConfigMap.
    ConfigMap,
    /// Core `v1` Event.
    Event,
    /// `events.k8s.io/v1` Event (stored apart from core events).
    EventV1,
    /// Core `v1` Namespace (cluster-scoped).
    Namespace,
    /// Core `v1` Node (cluster-scoped): metadata and `spec` as written (cordon is
    /// `spec.unschedulable`); no kubelet fills its status.
    Node,
    /// `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy
    /// (cluster-scoped): stored and validated.
    ValidatingAdmissionPolicy,
    /// `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicyBinding
    /// (cluster-scoped): stored and validated.
    ValidatingAdmissionPolicyBinding,
}

impl Resource {
    /// Every resource the emulator serves.
    pub const ALL: &'static [Resource] = &[
        Resource::Lease,
        Resource::LeaseCandidate,
        Resource::ConfigMap,
        Resource::Event,
        Resource::EventV1,
        Resource::Namespace,
        Resource::Node,
        Resource::ValidatingAdmissionPolicy,
        Resource::ValidatingAdmissionPolicyBinding,
    ];

    /// API group, `""` for the core group.
    pub fn group(self) -> &'static str {
        match self {
            Resource::Lease | Resource::LeaseCandidate => "coordination.k8s.io",
            Resource::EventV1 => "events.k8s.io",
            Resource::ValidatingAdmissionPolicy | Resource::ValidatingAdmissionPolicyBinding => {
                "admissionregistration.k8s.io"
            }
            Resource::ConfigMap | Resource::Event | Resource::Namespace | Resource::Node => "",
        }
    }

    /// API version within the group.
    pub fn version(self) -> &'static str {
        match self {
            Resource::LeaseCandidate => "v1beta1",
            _ => "v1",
        }
    }

    /// `apiVersion` as written in objects (`v1`, `coordination.k8s.io/v1`).
    pub fn api_version(self) -> &'static str {
        match self {
            Resource::Lease => "coordination.k8s.io/v1",
            Resource::LeaseCandidate => "coordination.k8s.io/v1beta1",
            Resource::EventV1 => "events.k8s.io/v1",
            Resource::ValidatingAdmissionPolicy | Resource::ValidatingAdmissionPolicyBinding => {
                "admissionregistration.k8s.io/v1"
            }
            Resource::ConfigMap | Resource::Event | Resource::Namespace | Resource::Node => "v1",
        }
    }

    /// Plural resource name used in URLs (`leases`).
    pub fn plural(self) -> &'static str {
        match self {
            Resource::Lease => "leases",
            Resource::LeaseCandidate => "leasecandidates",
            Resource::ConfigMap => "configmaps",
            Resource::Event | Resource::EventV1 => "events",
            Resource::Namespace => "namespaces",
            Resource::Node => "nodes",
            Resource::ValidatingAdmissionPolicy => "validatingadmissionpolicies",
            Resource::ValidatingAdmissionPolicyBinding => "validatingadmissionpolicybindings",
        }
    }

    /// Object kind (`Lease`).
    pub fn kind(self) -> &'static str {
        match self {
            Resource::Lease => "Lease",
            Resource::LeaseCandidate => "LeaseCandidate",
            Resource::ConfigMap => "ConfigMap",
            Resource::Event | Resource::EventV1 => "Event",
            Resource::Namespace => "Namespace",
            Resource::Node => "Node",
            Resource::ValidatingAdmissionPolicy => "ValidatingAdmissionPolicy",
            Resource::ValidatingAdmissionPolicyBinding => "ValidatingAdmissionPolicyBinding",
        }
    }

    /// Whether objects live in a namespace.
    pub fn namespaced(self) -> bool {
        !matches!(
            self,
            Resource::Namespace
                | Resource::Node
                | Resource::ValidatingAdmissionPolicy
                | Resource::ValidatingAdmissionPolicyBinding
        )
    }

    /// The group-qualified resource as the API server names it in messages:
    /// `leases.coordination.k8s.io`, `configmaps`.
    pub fn qualified(self) -> String {
        if self.group().is_empty() {
            self.plural().to_owned()
        } else {
            format!("{}.{}", self.plural(), self.group())
        }
    }

    /// Finds the resource whose objects say `apiVersion` and `kind`.
    pub(crate) fn of_kind(api_version: &str, kind: &str) -> Option<Resource> {
        Resource::ALL
            .iter()
            .copied()
            .find(|r| r.api_version() == api_version && r.kind() == kind)
    }

    /// Finds the resource served at `group/version` under `plural`.
    pub(crate) fn lookup(group: &str, version: &str, plural: &str) -> Option<Resource> {
        Resource::ALL
            .iter()
            .copied()
            .find(|r| r.group() == group && r.version() == version && r.plural() == plural)
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.qualified())
    }
}

/// A request verb, as Kubernetes audit logs and RBAC name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE.
    Delete,
}

impl Verb {
    /// Every verb.
    pub const ALL: [Verb; 7] = [
        Verb::Get,
        Verb::List,
        Verb::Watch,
        Verb::Create,
        Verb::Update,
        Verb::Patch,
        Verb::Delete,
    ];

    /// Whether the verb changes state (create, update, patch, delete).
    pub fn is_write(self) -> bool {
        matches!(
            self,
            Verb::Create | Verb::Update | Verb::Patch | Verb::Delete
        )
    }

    /// The lower-case RBAC name (`get`, `update`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
