//! The fields of each served kind, as the Go types of `k8s.io/api` and
//! `k8s.io/apimachinery` declare them: the JSON name and how the value is
//! shaped.
//!
//! One table per message serves two readers:
//!
//! - [`crate::validation::drop_unknown_fields`] finds the fields of a JSON
//!   body that the kind does not have, for `fieldValidation`;
//! - `validation::types` checks the JSON type of each field of the
//!   admission kinds (the older kinds have checks of their own).
//!
//! Every field of these kinds is named, so that a body the real server takes
//! is taken here. A field marked [`Shape::Opaque`] is known by name only: the
//! unknown-field check does not look inside it. These are the timestamps the
//! server sets, `metadata.managedFields`, a Namespace's and a Node's `status`,
//! a Node's `spec.configSource`, and the `metav1.Time` fields of Events.

use crate::resource::Resource;

mod admission;
mod label_selector;
mod lease_candidate;
#[cfg(test)]
mod round_trip;

/// How one field is shaped in JSON.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// A string.
    Str,
    /// An `int64`.
    Int64,
    /// An `int32`.
    Int32,
    /// A boolean.
    Bool,
    /// `bytes`, as base64.
    Base64,
    /// `repeated string`.
    Strings,
    /// A `map<string, …>`: an object of `key` to `value`.
    Map(&'static Schema),
    /// `meta/v1.MicroTime`, as RFC 3339 with microseconds.
    MicroTime,
    /// A nested message.
    Message(&'static Schema),
    /// `repeated` messages.
    Messages(&'static Schema),
    /// Known by name, taken as written: not looked into by the unknown-field
    /// check.
    Opaque,
}

/// A message: its name (for errors) and its fields, by JSON name.
#[derive(Debug)]
pub(crate) struct Schema {
    pub(crate) name: &'static str,
    pub(crate) fields: &'static [(&'static str, Shape)],
}

impl Schema {
    /// The shape of the field called `json_name`, if the message has one.
    pub(crate) fn field(&self, json_name: &str) -> Option<Shape> {
        self.fields
            .iter()
            .find(|(name, _)| *name == json_name)
            .map(|&(_, shape)| shape)
    }
}

/// An entry of a `map<string, string>`.
pub(crate) static STRING_ENTRY: Schema = Schema {
    name: "MapEntry",
    fields: &[("key", Shape::Str), ("value", Shape::Str)],
};

/// An entry of a `map<string, bytes>`.
pub(crate) static BYTES_ENTRY: Schema = Schema {
    name: "MapEntry",
    fields: &[("key", Shape::Str), ("value", Shape::Base64)],
};

/// `meta/v1.OwnerReference`.
static OWNER_REFERENCE: Schema = Schema {
    name: "OwnerReference",
    fields: &[
        ("apiVersion", Shape::Str),
        ("kind", Shape::Str),
        ("name", Shape::Str),
        ("uid", Shape::Str),
        ("controller", Shape::Bool),
        ("blockOwnerDeletion", Shape::Bool),
    ],
};

/// `meta/v1.ObjectMeta`. The fields the server sets are opaque.
static OBJECT_META: Schema = Schema {
    name: "ObjectMeta",
    fields: &[
        ("name", Shape::Str),
        ("generateName", Shape::Str),
        ("namespace", Shape::Str),
        ("selfLink", Shape::Opaque),
        ("uid", Shape::Str),
        ("resourceVersion", Shape::Str),
        ("generation", Shape::Int64),
        ("creationTimestamp", Shape::Opaque),
        ("deletionTimestamp", Shape::Opaque),
        ("deletionGracePeriodSeconds", Shape::Opaque),
        ("labels", Shape::Map(&STRING_ENTRY)),
        ("annotations", Shape::Map(&STRING_ENTRY)),
        ("ownerReferences", Shape::Messages(&OWNER_REFERENCE)),
        ("finalizers", Shape::Strings),
        ("managedFields", Shape::Opaque),
    ],
};

/// core/v1 `ConfigMap`.
static CONFIG_MAP: Schema = Schema {
    name: "ConfigMap",
    fields: &[
        ("metadata", Shape::Message(&OBJECT_META)),
        ("data", Shape::Map(&STRING_ENTRY)),
        ("binaryData", Shape::Map(&BYTES_ENTRY)),
        ("immutable", Shape::Bool),
    ],
};

/// core/v1 `NamespaceSpec`.
static NAMESPACE_SPEC: Schema = Schema {
    name: "NamespaceSpec",
    fields: &[("finalizers", Shape::Strings)],
};

/// core/v1 `Namespace` (its `status` is the server's).
static NAMESPACE: Schema = Schema {
    name: "Namespace",
    fields: &[
        ("metadata", Shape::Message(&OBJECT_META)),
        ("spec", Shape::Message(&NAMESPACE_SPEC)),
        ("status", Shape::Opaque),
    ],
};

/// core/v1 `Taint` (`timeAdded` is set by the node controller).
static TAINT: Schema = Schema {
    name: "Taint",
    fields: &[
        ("key", Shape::Str),
        ("value", Shape::Str),
        ("effect", Shape::Str),
        ("timeAdded", Shape::Opaque),
    ],
};

/// core/v1 `NodeSpec` (the deprecated `externalID` and `configSource` opaque).
static NODE_SPEC: Schema = Schema {
    name: "NodeSpec",
    fields: &[
        ("podCIDR", Shape::Str),
        ("podCIDRs", Shape::Strings),
        ("providerID", Shape::Str),
        ("unschedulable", Shape::Bool),
        ("taints", Shape::Messages(&TAINT)),
        ("externalID", Shape::Opaque),
        ("configSource", Shape::Opaque),
    ],
};

/// core/v1 `Node` (its `status` is the kubelet's).
static NODE: Schema = Schema {
    name: "Node",
    fields: &[
        ("metadata", Shape::Message(&OBJECT_META)),
        ("spec", Shape::Message(&NODE_SPEC)),
        ("status", Shape::Opaque),
    ],
};

/// coordination/v1 `LeaseSpec`: every field a pointer.
static LEASE_SPEC: Schema = Schema {
    name: "LeaseSpec",
    fields: &[
        ("holderIdentity", Shape::Str),
        ("leaseDurationSeconds", Shape::Int32),
        ("acquireTime", Shape::MicroTime),
        ("renewTime", Shape::MicroTime),
        ("leaseTransitions", Shape::Int32),
        ("strategy", Shape::Str),
        ("preferredHolder", Shape::Str),
    ],
};

/// coordination/v1 `Lease`.
static LEASE: Schema = Schema {
    name: "Lease",
    fields: &[
        ("metadata", Shape::Message(&OBJECT_META)),
        ("spec", Shape::Message(&LEASE_SPEC)),
    ],
};

/// core/v1 `ObjectReference`.
static OBJECT_REFERENCE: Schema = Schema {
    name: "ObjectReference",
    fields: &[
        ("kind", Shape::Str),
        ("namespace", Shape::Str),
        ("name", Shape::Str),
        ("uid", Shape::Str),
        ("apiVersion", Shape::Str),
        ("resourceVersion", Shape::Str),
        ("fieldPath", Shape::Str),
    ],
};

/// core/v1 `EventSource`.
static EVENT_SOURCE: Schema = Schema {
    name: "EventSource",
    fields: &[("component", Shape::Str), ("host", Shape::Str)],
};

/// core/v1 and events.k8s.io/v1 `EventSeries` (the same two fields).
static EVENT_SERIES: Schema = Schema {
    name: "EventSeries",
    fields: &[
        ("count", Shape::Int32),
        ("lastObservedTime", Shape::MicroTime),
    ],
};

/// core/v1 `Event`.
static EVENT: Schema = Schema {
    name: "Event",
    fields: &[
        ("metadata", Shape::Message(&OBJECT_META)),
        ("involvedObject", Shape::Message(&OBJECT_REFERENCE)),
        ("reason", Shape::Str),
        ("message", Shape::Str),
        ("source", Shape::Message(&EVENT_SOURCE)),
        ("firstTimestamp", Shape::Opaque),
        ("lastTimestamp", Shape::Opaque),
        ("count", Shape::Int32),
        ("type", Shape::Str),
        ("eventTime", Shape::MicroTime),
        ("series", Shape::Message(&EVENT_SERIES)),
        ("action", Shape::Str),
        ("related", Shape::Message(&OBJECT_REFERENCE)),
        ("reportingComponent", Shape::Str),
        ("reportingInstance", Shape::Str),
    ],
};

/// events.k8s.io/v1 `Event`.
static EVENT_V1: Schema = Schema {
    name: "Event",
    fields: &[
        ("metadata", Shape::Message(&OBJECT_META)),
        ("eventTime", Shape::MicroTime),
        ("series", Shape::Message(&EVENT_SERIES)),
        ("reportingController", Shape::Str),
        ("reportingInstance", Shape::Str),
        ("action", Shape::Str),
        ("reason", Shape::Str),
        ("regarding", Shape::Message(&OBJECT_REFERENCE)),
        ("related", Shape::Message(&OBJECT_REFERENCE)),
        ("note", Shape::Str),
        ("type", Shape::Str),
        ("deprecatedSource", Shape::Message(&EVENT_SOURCE)),
        ("deprecatedFirstTimestamp", Shape::Opaque),
        ("deprecatedLastTimestamp", Shape::Opaque),
        ("deprecatedCount", Shape::Int32),
    ],
};

/// The message of a kind (without `apiVersion` and `kind`, which every
/// object has).
pub(crate) fn of(resource: Resource) -> &'static Schema {
    match resource {
        Resource::Lease => &LEASE,
        Resource::LeaseCandidate => &lease_candidate::LEASE_CANDIDATE,
        Resource::ConfigMap => &CONFIG_MAP,
        Resource::Namespace => &NAMESPACE,
        Resource::Node => &NODE,
        Resource::Event => &EVENT,
        Resource::EventV1 => &EVENT_V1,
        Resource::ValidatingAdmissionPolicy => &admission::VALIDATING_ADMISSION_POLICY,
        Resource::ValidatingAdmissionPolicyBinding => {
            &admission::VALIDATING_ADMISSION_POLICY_BINDING
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No message names a field twice.
    #[test]
    fn names_are_unique_per_message() {
        fn check(schema: &'static Schema, seen: &mut Vec<&'static str>) {
            if seen.contains(&schema.name) && schema.name != "MapEntry" {
                return;
            }
            seen.push(schema.name);
            for (i, (name, shape)) in schema.fields.iter().enumerate() {
                for (other, _) in &schema.fields[i + 1..] {
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
