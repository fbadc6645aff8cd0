//! admissionregistration.k8s.io/v1 `ValidatingAdmissionPolicy` and
//! `ValidatingAdmissionPolicyBinding`, as the Go types of `k8s.io/api` 1.34
//! declare them. The policy's `status` is the API server's type checker's and is
//! opaque. Both kinds are taken as JSON only: the field numbers are 0.

use super::label_selector::LABEL_SELECTOR;
use super::{OBJECT_META, Schema, Shape};

/// `ParamKind`.
static PARAM_KIND: Schema = Schema {
    name: "ParamKind",
    fields: &[(0, "apiVersion", Shape::Str), (0, "kind", Shape::Str)],
};

/// `NamedRuleWithOperations`.
static NAMED_RULE_WITH_OPERATIONS: Schema = Schema {
    name: "NamedRuleWithOperations",
    fields: &[
        (0, "apiGroups", Shape::Strings),
        (0, "apiVersions", Shape::Strings),
        (0, "operations", Shape::Strings),
        (0, "resourceNames", Shape::Strings),
        (0, "resources", Shape::Strings),
        (0, "scope", Shape::Str),
    ],
};

/// `MatchResources`.
static MATCH_RESOURCES: Schema = Schema {
    name: "MatchResources",
    fields: &[
        (
            0,
            "excludeResourceRules",
            Shape::Messages(&NAMED_RULE_WITH_OPERATIONS),
        ),
        (0, "matchPolicy", Shape::Str),
        (0, "namespaceSelector", Shape::Message(&LABEL_SELECTOR)),
        (0, "objectSelector", Shape::Message(&LABEL_SELECTOR)),
        (
            0,
            "resourceRules",
            Shape::Messages(&NAMED_RULE_WITH_OPERATIONS),
        ),
    ],
};

/// `Validation`.
static VALIDATION: Schema = Schema {
    name: "Validation",
    fields: &[
        (0, "expression", Shape::StrKept),
        (0, "message", Shape::Str),
        (0, "messageExpression", Shape::Str),
        (0, "reason", Shape::Str),
    ],
};

/// `AuditAnnotation`.
static AUDIT_ANNOTATION: Schema = Schema {
    name: "AuditAnnotation",
    fields: &[
        (0, "key", Shape::StrKept),
        (0, "valueExpression", Shape::StrKept),
    ],
};

/// `MatchCondition`.
static MATCH_CONDITION: Schema = Schema {
    name: "MatchCondition",
    fields: &[
        (0, "expression", Shape::StrKept),
        (0, "name", Shape::StrKept),
    ],
};

/// `Variable`.
static VARIABLE: Schema = Schema {
    name: "Variable",
    fields: &[
        (0, "expression", Shape::StrKept),
        (0, "name", Shape::StrKept),
    ],
};

/// `ValidatingAdmissionPolicySpec`.
static VALIDATING_ADMISSION_POLICY_SPEC: Schema = Schema {
    name: "ValidatingAdmissionPolicySpec",
    fields: &[
        (0, "auditAnnotations", Shape::Messages(&AUDIT_ANNOTATION)),
        (0, "failurePolicy", Shape::Str),
        (0, "matchConditions", Shape::Messages(&MATCH_CONDITION)),
        (0, "matchConstraints", Shape::Message(&MATCH_RESOURCES)),
        (0, "paramKind", Shape::Message(&PARAM_KIND)),
        (0, "validations", Shape::Messages(&VALIDATION)),
        (0, "variables", Shape::Messages(&VARIABLE)),
    ],
};

/// admissionregistration.k8s.io/v1 `ValidatingAdmissionPolicy`.
pub(crate) static VALIDATING_ADMISSION_POLICY: Schema = Schema {
    name: "ValidatingAdmissionPolicy",
    fields: &[
        (0, "metadata", Shape::Message(&OBJECT_META)),
        (0, "spec", Shape::Message(&VALIDATING_ADMISSION_POLICY_SPEC)),
        (0, "status", Shape::Opaque),
    ],
};

/// `ParamRef`.
static PARAM_REF: Schema = Schema {
    name: "ParamRef",
    fields: &[
        (0, "name", Shape::Str),
        (0, "namespace", Shape::Str),
        (0, "parameterNotFoundAction", Shape::Str),
        (0, "selector", Shape::Message(&LABEL_SELECTOR)),
    ],
};

/// `ValidatingAdmissionPolicyBindingSpec`.
static VALIDATING_ADMISSION_POLICY_BINDING_SPEC: Schema = Schema {
    name: "ValidatingAdmissionPolicyBindingSpec",
    fields: &[
        (0, "matchResources", Shape::Message(&MATCH_RESOURCES)),
        (0, "paramRef", Shape::Message(&PARAM_REF)),
        (0, "policyName", Shape::Str),
        (0, "validationActions", Shape::Strings),
    ],
};

/// admissionregistration.k8s.io/v1 `ValidatingAdmissionPolicyBinding`.
pub(crate) static VALIDATING_ADMISSION_POLICY_BINDING: Schema = Schema {
    name: "ValidatingAdmissionPolicyBinding",
    fields: &[
        (0, "metadata", Shape::Message(&OBJECT_META)),
        (
            0,
            "spec",
            Shape::Message(&VALIDATING_ADMISSION_POLICY_BINDING_SPEC),
        ),
    ],
};

#[cfg(test)]
mod tests {
    use k8s_openapi::api::admissionregistration::v1::{
        ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    };

    use super::*;
    use crate::schema::round_trip::assert_round_trips;

    /// Every field named here is a field of the Go type: a JSON document with
    /// all of them set survives k8s-openapi's decoder unchanged.
    #[test]
    fn every_field_is_one_of_the_type() {
        assert_round_trips::<ValidatingAdmissionPolicy>(&VALIDATING_ADMISSION_POLICY);
        assert_round_trips::<ValidatingAdmissionPolicyBinding>(
            &VALIDATING_ADMISSION_POLICY_BINDING,
        );
    }
}
