//! core/v1 `ServiceAccount` and rbac.authorization.k8s.io/v1 `Role` and
//! `RoleBinding`, as the Go types of `k8s.io/api` 1.34 declare them (the JSON
//! names k8s-openapi's `v1_34` module spells). All three are taken as JSON
//! only: the field numbers are 0.

use super::pod::LOCAL_OBJECT_REFERENCE;
use super::{OBJECT_META, OBJECT_REFERENCE, Schema, Shape};

/// core/v1 `ServiceAccount`.
pub(crate) static SERVICE_ACCOUNT: Schema = Schema {
    name: "ServiceAccount",
    fields: &[
        (0, "metadata", Shape::Message(&OBJECT_META)),
        (0, "automountServiceAccountToken", Shape::BoolKept),
        (
            0,
            "imagePullSecrets",
            Shape::Messages(&LOCAL_OBJECT_REFERENCE),
        ),
        (0, "secrets", Shape::Messages(&OBJECT_REFERENCE)),
    ],
};

/// rbac/v1 `PolicyRule`.
static POLICY_RULE: Schema = Schema {
    name: "PolicyRule",
    fields: &[
        (0, "apiGroups", Shape::Strings),
        (0, "nonResourceURLs", Shape::Strings),
        (0, "resourceNames", Shape::Strings),
        (0, "resources", Shape::Strings),
        (0, "verbs", Shape::Strings),
    ],
};

/// rbac/v1 `Role`.
pub(crate) static ROLE: Schema = Schema {
    name: "Role",
    fields: &[
        (0, "metadata", Shape::Message(&OBJECT_META)),
        (0, "rules", Shape::Messages(&POLICY_RULE)),
    ],
};

/// rbac/v1 `RoleRef`.
static ROLE_REF: Schema = Schema {
    name: "RoleRef",
    fields: &[
        (0, "apiGroup", Shape::StrKept),
        (0, "kind", Shape::StrKept),
        (0, "name", Shape::StrKept),
    ],
};

/// rbac/v1 `Subject`.
static SUBJECT: Schema = Schema {
    name: "Subject",
    fields: &[
        (0, "apiGroup", Shape::Str),
        (0, "kind", Shape::StrKept),
        (0, "name", Shape::StrKept),
        (0, "namespace", Shape::Str),
    ],
};

/// rbac/v1 `RoleBinding`.
pub(crate) static ROLE_BINDING: Schema = Schema {
    name: "RoleBinding",
    fields: &[
        (0, "metadata", Shape::Message(&OBJECT_META)),
        (0, "roleRef", Shape::Message(&ROLE_REF)),
        (0, "subjects", Shape::Messages(&SUBJECT)),
    ],
};

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};

    use super::*;
    use crate::schema::round_trip::assert_round_trips;

    /// Every field named here is a field of the Go type: a JSON document with
    /// all of them set survives k8s-openapi's decoder unchanged.
    #[test]
    fn every_field_is_one_of_the_type() {
        assert_round_trips::<ServiceAccount>(&SERVICE_ACCOUNT);
        assert_round_trips::<Role>(&ROLE);
        assert_round_trips::<RoleBinding>(&ROLE_BINDING);
    }
}
