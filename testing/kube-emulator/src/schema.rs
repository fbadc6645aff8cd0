//! The fields of each served kind, as the Go types of `k8s.io/api` and
//! `k8s.io/apimachinery` declare them: the JSON name, the protobuf field
//! number (from their `generated.proto` files), and how the value is shaped.
//!
//! One table per message serves three readers:
//!
//! - [`crate::protobuf`] decodes a protobuf body with it (Lease,
//!   LeaseCandidate, ConfigMap, Namespace and Node; Events are not decoded
//!   from protobuf, nor are the ValidatingAdmissionPolicies and, with the
//!   feature `workloads`, the workload and RBAC kinds, whose tables in
//!   `admission`, `pod`, `workloads` and `rbac` carry no field numbers);
//! - [`crate::validation::drop_unknown_fields`] finds the fields of a JSON
//!   body that the kind does not have, for `fieldValidation`;
//! - `validation::types` checks the JSON type of each field of the
//!   admission kinds and of the workload and RBAC kinds (the older kinds
//!   have checks of their own).
//!
//! The tables of the workload and RBAC kinds (`pod`, `workloads`, `rbac`) are
//! compiled with the feature `workloads` only.
//!
//! Every field of these kinds is named, so that a body the real server takes
//! is taken here. A field marked [`Shape::Opaque`] is known by name only: the
//! protobuf decoder skips it (the server sets it, or it is a status) and the
//! unknown-field check does not look inside it. These are the timestamps the
//! server sets, `metadata.managedFields`, a Namespace's and a Node's `status`,
//! a Node's `spec.configSource`, and the `metav1.Time` fields of Events.

use crate::resource::Resource;

mod admission;
mod label_selector;
mod lease_candidate;
#[cfg(feature = "workloads")]
mod pod;
#[cfg(feature = "workloads")]
mod rbac;
#[cfg(test)]
mod round_trip;
#[cfg(feature = "workloads")]
mod workloads;

/// How one field becomes JSON. Go leaves out a zero value of a non-pointer
/// field (`omitempty`) and keeps a pointer field that was sent.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// `string`, left out when empty.
    Str,
    /// `*string`, or a string without `omitempty`: kept even when empty.
    StrKept,
    /// `int64`, left out when zero.
    Int64,
    /// `int32`, left out when zero.
    Int32,
    /// `*int32`, kept even when zero.
    Int32Kept,
    /// `bool`, left out when false.
    Bool,
    /// `*bool`.
    BoolKept,
    /// `bytes`, as base64.
    Base64,
    /// `repeated string`.
    Strings,
    /// A `map<string, …>`: repeated entries `{key = 1, value = 2}`.
    Map(&'static Schema),
    /// `meta/v1.MicroTime` (`{seconds = 1, nanos = 2}`), as RFC 3339 with microseconds.
    MicroTime,
    /// A nested message.
    Message(&'static Schema),
    /// `repeated` messages.
    Messages(&'static Schema),
    /// `intstr.IntOrString`: a JSON integer or string (a port by number or
    /// name, a percentage). Kinds with such fields are JSON only (the pod
    /// template's, feature `workloads`).
    #[cfg(feature = "workloads")]
    IntOrStr,
    /// `resource.Quantity`: a JSON string (`"500m"`, `"1Gi"`) or number.
    /// Kinds with such fields are JSON only (the pod template's, feature
    /// `workloads`).
    #[cfg(feature = "workloads")]
    Quantity,
    /// Known by name, taken as written: not decoded from protobuf, not looked
    /// into by the unknown-field check.
    Opaque,
}

/// A message: its name (for errors) and its fields, by number and JSON name.
/// The number is the protobuf field number; it is 0 in the messages of kinds
/// that are taken as JSON only (the workloads and RBAC kinds, see
/// [`crate::protobuf`]), where it would never be read.
#[derive(Debug)]
pub(crate) struct Schema {
    pub(crate) name: &'static str,
    pub(crate) fields: &'static [(u64, &'static str, Shape)],
}

impl Schema {
    /// The shape of the field called `json_name`, if the message has one.
    pub(crate) fn field(&self, json_name: &str) -> Option<Shape> {
        self.fields
            .iter()
            .find(|(_, name, _)| *name == json_name)
            .map(|&(_, _, shape)| shape)
    }
}

/// An entry of a `map<string, string>`.
pub(crate) static STRING_ENTRY: Schema = Schema {
    name: "MapEntry",
    fields: &[(1, "key", Shape::StrKept), (2, "value", Shape::StrKept)],
};

/// An entry of a `map<string, bytes>`.
pub(crate) static BYTES_ENTRY: Schema = Schema {
    name: "MapEntry",
    fields: &[(1, "key", Shape::StrKept), (2, "value", Shape::Base64)],
};

/// `meta/v1.OwnerReference`.
static OWNER_REFERENCE: Schema = Schema {
    name: "OwnerReference",
    fields: &[
        (5, "apiVersion", Shape::StrKept),
        (1, "kind", Shape::StrKept),
        (3, "name", Shape::StrKept),
        (4, "uid", Shape::StrKept),
        (6, "controller", Shape::BoolKept),
        (7, "blockOwnerDeletion", Shape::BoolKept),
    ],
};

/// `meta/v1.ObjectMeta`. The fields the server sets are opaque: a protobuf
/// body's values of them are dropped, as before the server sets them.
static OBJECT_META: Schema = Schema {
    name: "ObjectMeta",
    fields: &[
        (1, "name", Shape::Str),
        (2, "generateName", Shape::Str),
        (3, "namespace", Shape::Str),
        (4, "selfLink", Shape::Opaque),
        (5, "uid", Shape::Str),
        (6, "resourceVersion", Shape::Str),
        (7, "generation", Shape::Int64),
        (8, "creationTimestamp", Shape::Opaque),
        (9, "deletionTimestamp", Shape::Opaque),
        (10, "deletionGracePeriodSeconds", Shape::Opaque),
        (11, "labels", Shape::Map(&STRING_ENTRY)),
        (12, "annotations", Shape::Map(&STRING_ENTRY)),
        (13, "ownerReferences", Shape::Messages(&OWNER_REFERENCE)),
        (14, "finalizers", Shape::Strings),
        (17, "managedFields", Shape::Opaque),
    ],
};

/// core/v1 `ConfigMap`.
static CONFIG_MAP: Schema = Schema {
    name: "ConfigMap",
    fields: &[
        (1, "metadata", Shape::Message(&OBJECT_META)),
        (2, "data", Shape::Map(&STRING_ENTRY)),
        (3, "binaryData", Shape::Map(&BYTES_ENTRY)),
        (4, "immutable", Shape::BoolKept),
    ],
};

/// core/v1 `NamespaceSpec`.
static NAMESPACE_SPEC: Schema = Schema {
    name: "NamespaceSpec",
    fields: &[(1, "finalizers", Shape::Strings)],
};

/// core/v1 `Namespace` (its `status` is the server's).
static NAMESPACE: Schema = Schema {
    name: "Namespace",
    fields: &[
        (1, "metadata", Shape::Message(&OBJECT_META)),
        (2, "spec", Shape::Message(&NAMESPACE_SPEC)),
        (3, "status", Shape::Opaque),
    ],
};

/// core/v1 `Taint` (`timeAdded` is set by the node controller).
static TAINT: Schema = Schema {
    name: "Taint",
    fields: &[
        (1, "key", Shape::StrKept),
        (2, "value", Shape::Str),
        (3, "effect", Shape::StrKept),
        (4, "timeAdded", Shape::Opaque),
    ],
};

/// core/v1 `NodeSpec` (the deprecated `externalID` and `configSource` opaque).
static NODE_SPEC: Schema = Schema {
    name: "NodeSpec",
    fields: &[
        (1, "podCIDR", Shape::Str),
        (7, "podCIDRs", Shape::Strings),
        (3, "providerID", Shape::Str),
        (4, "unschedulable", Shape::Bool),
        (5, "taints", Shape::Messages(&TAINT)),
        (2, "externalID", Shape::Opaque),
        (6, "configSource", Shape::Opaque),
    ],
};

/// core/v1 `Node` (its `status` is the kubelet's).
static NODE: Schema = Schema {
    name: "Node",
    fields: &[
        (1, "metadata", Shape::Message(&OBJECT_META)),
        (2, "spec", Shape::Message(&NODE_SPEC)),
        (3, "status", Shape::Opaque),
    ],
};

/// coordination/v1 `LeaseSpec`: every field a pointer.
static LEASE_SPEC: Schema = Schema {
    name: "LeaseSpec",
    fields: &[
        (1, "holderIdentity", Shape::StrKept),
        (2, "leaseDurationSeconds", Shape::Int32Kept),
        (3, "acquireTime", Shape::MicroTime),
        (4, "renewTime", Shape::MicroTime),
        (5, "leaseTransitions", Shape::Int32Kept),
        (6, "strategy", Shape::StrKept),
        (7, "preferredHolder", Shape::StrKept),
    ],
};

/// coordination/v1 `Lease`.
static LEASE: Schema = Schema {
    name: "Lease",
    fields: &[
        (1, "metadata", Shape::Message(&OBJECT_META)),
        (2, "spec", Shape::Message(&LEASE_SPEC)),
    ],
};

/// core/v1 `ObjectReference`.
static OBJECT_REFERENCE: Schema = Schema {
    name: "ObjectReference",
    fields: &[
        (1, "kind", Shape::Str),
        (2, "namespace", Shape::Str),
        (3, "name", Shape::Str),
        (4, "uid", Shape::Str),
        (5, "apiVersion", Shape::Str),
        (6, "resourceVersion", Shape::Str),
        (7, "fieldPath", Shape::Str),
    ],
};

/// core/v1 `EventSource`.
static EVENT_SOURCE: Schema = Schema {
    name: "EventSource",
    fields: &[(1, "component", Shape::Str), (2, "host", Shape::Str)],
};

/// core/v1 and events.k8s.io/v1 `EventSeries` (the same two fields).
static EVENT_SERIES: Schema = Schema {
    name: "EventSeries",
    fields: &[
        (1, "count", Shape::Int32),
        (2, "lastObservedTime", Shape::MicroTime),
    ],
};

/// core/v1 `Event`.
static EVENT: Schema = Schema {
    name: "Event",
    fields: &[
        (1, "metadata", Shape::Message(&OBJECT_META)),
        (2, "involvedObject", Shape::Message(&OBJECT_REFERENCE)),
        (3, "reason", Shape::Str),
        (4, "message", Shape::Str),
        (5, "source", Shape::Message(&EVENT_SOURCE)),
        (6, "firstTimestamp", Shape::Opaque),
        (7, "lastTimestamp", Shape::Opaque),
        (8, "count", Shape::Int32),
        (9, "type", Shape::Str),
        (10, "eventTime", Shape::MicroTime),
        (11, "series", Shape::Message(&EVENT_SERIES)),
        (12, "action", Shape::Str),
        (13, "related", Shape::Message(&OBJECT_REFERENCE)),
        (14, "reportingComponent", Shape::Str),
        (15, "reportingInstance", Shape::Str),
    ],
};

/// events.k8s.io/v1 `Event`.
static EVENT_V1: Schema = Schema {
    name: "Event",
    fields: &[
        (1, "metadata", Shape::Message(&OBJECT_META)),
        (2, "eventTime", Shape::MicroTime),
        (3, "series", Shape::Message(&EVENT_SERIES)),
        (4, "reportingController", Shape::Str),
        (5, "reportingInstance", Shape::Str),
        (6, "action", Shape::Str),
        (7, "reason", Shape::Str),
        (8, "regarding", Shape::Message(&OBJECT_REFERENCE)),
        (9, "related", Shape::Message(&OBJECT_REFERENCE)),
        (10, "note", Shape::Str),
        (11, "type", Shape::Str),
        (12, "deprecatedSource", Shape::Message(&EVENT_SOURCE)),
        (13, "deprecatedFirstTimestamp", Shape::Opaque),
        (14, "deprecatedLastTimestamp", Shape::Opaque),
        (15, "deprecatedCount", Shape::Int32),
    ],
};

/// The message of a kind (without `apiVersion` and `kind`, which are the
/// protobuf envelope's and every JSON object's).
pub(crate) fn of(resource: Resource) -> &'static Schema {
    match resource {
        Resource::Lease => &LEASE,
        Resource::LeaseCandidate => &lease_candidate::LEASE_CANDIDATE,
        Resource::ConfigMap => &CONFIG_MAP,
        Resource::Namespace => &NAMESPACE,
        Resource::Node => &NODE,
        Resource::Event => &EVENT,
        Resource::EventV1 => &EVENT_V1,
        #[cfg(feature = "workloads")]
        Resource::ServiceAccount => &rbac::SERVICE_ACCOUNT,
        #[cfg(feature = "workloads")]
        Resource::Role => &rbac::ROLE,
        #[cfg(feature = "workloads")]
        Resource::RoleBinding => &rbac::ROLE_BINDING,
        #[cfg(feature = "workloads")]
        Resource::Deployment => &workloads::DEPLOYMENT,
        #[cfg(feature = "workloads")]
        Resource::PodDisruptionBudget => &workloads::POD_DISRUPTION_BUDGET,
        Resource::ValidatingAdmissionPolicy => &admission::VALIDATING_ADMISSION_POLICY,
        Resource::ValidatingAdmissionPolicyBinding => {
            &admission::VALIDATING_ADMISSION_POLICY_BINDING
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No message names a field or a number twice (0, the number of the
    /// JSON-only kinds' fields, is no number).
    #[test]
    fn names_and_numbers_are_unique_per_message() {
        fn check(schema: &'static Schema, seen: &mut Vec<&'static str>) {
            if seen.contains(&schema.name) && schema.name != "MapEntry" {
                return;
            }
            seen.push(schema.name);
            for (i, (n, name, shape)) in schema.fields.iter().enumerate() {
                for (m, other, _) in &schema.fields[i + 1..] {
                    assert!(*n == 0 || n != m, "{}: number {n} twice", schema.name);
                    assert_ne!(name, other, "{}: {name} twice", schema.name);
                }
                if let Shape::Map(inner) | Shape::Message(inner) | Shape::Messages(inner) = shape {
                    check(inner, seen);
                }
            }
        }
        let mut seen = Vec::new();
        for &r in Resource::ALL {
            check(of(r), &mut seen);
        }
    }
}
