//! admissionregistration.k8s.io/v1 `ValidatingAdmissionPolicy` and
//! `ValidatingAdmissionPolicyBinding`, as the Go types of `k8s.io/api` 1.34
//! declare them. The policy's `status` is the API server's type checker's and is
//! opaque.

use super::label_selector::LABEL_SELECTOR;
use super::{OBJECT_META, Schema, Shape};

/// `ParamKind`.
static PARAM_KIND: Schema = Schema {
    name: "ParamKind",
    fields: &[("apiVersion", Shape::Str), ("kind", Shape::Str)],
};

/// `NamedRuleWithOperations`.
static NAMED_RULE_WITH_OPERATIONS: Schema = Schema {
    name: "NamedRuleWithOperations",
    fields: &[
        ("apiGroups", Shape::Strings),
        ("apiVersions", Shape::Strings),
        ("operations", Shape::Strings),
        ("resourceNames", Shape::Strings),
        ("resources", Shape::Strings),
        ("scope", Shape::Str),
    ],
};

/// `MatchResources`.
static MATCH_RESOURCES: Schema = Schema {
    name: "MatchResources",
    fields: &[
        (
            "excludeResourceRules",
            Shape::Messages(&NAMED_RULE_WITH_OPERATIONS),
        ),
        ("matchPolicy", Shape::Str),
        ("namespaceSelector", Shape::Message(&LABEL_SELECTOR)),
        ("objectSelector", Shape::Message(&LABEL_SELECTOR)),
        (
            "resourceRules",
            Shape::Messages(&NAMED_RULE_WITH_OPERATIONS),
        ),
    ],
};

/// `Validation`.
static VALIDATION: Schema = Schema {
    name: "Validation",
    fields: &[
        ("expression", Shape::Str),
        ("message", Shape::Str),
        ("messageExpression", Shape::Str),
        ("reason", Shape::Str),
    ],
};

/// `AuditAnnotation`.
static AUDIT_ANNOTATION: Schema = Schema {
    name: "AuditAnnotation",
    fields: &[("key", Shape::Str), ("valueExpression", Shape::Str)],
};

/// `MatchCondition`.
static MATCH_CONDITION: Schema = Schema {
    name: "MatchCondition",
    fields: &[("expression", Shape::Str), ("name", Shape::Str)],
};

/// `Variable`.
static VARIABLE: Schema = Schema {
    name: "Variable",
    fields: &[("expression", Shape::Str), ("name", Shape::Str)],
};

/// `ValidatingAdmissionPolicySpec`.
static VALIDATING_ADMISSION_POLICY_SPEC: Schema = Schema {
    name: "ValidatingAdmissionPolicySpec",
    fields: &[
        ("auditAnnotations", Shape::Messages(&AUDIT_ANNOTATION)),
        ("failurePolicy", Shape::Str),
        ("matchConditions", Shape::Messages(&MATCH_CONDITION)),
        ("matchConstraints", Shape::Message(&MATCH_RESOURCES)),
        ("paramKind", Shape::Message(&PARAM_KIND)),
        ("validations", Shape::Messages(&VALIDATION)),
        ("variables", Shape::Messages(&VARIABLE)),
    ],
};

/// admissionregistration.k8s.io/v1 `ValidatingAdmissionPolicy`.
pub(crate) static VALIDATING_ADMISSION_POLICY: Schema = Schema {
    name: "ValidatingAdmissionPolicy",
    fields: &[
        ("metadata", Shape::Message(&OBJECT_META)),
        ("spec", Shape::Message(&VALIDATING_ADMISSION_POLICY_SPEC)),
        ("status", Shape::Opaque),
    ],
};

/// `ParamRef`.
static PARAM_REF: Schema = Schema {
    name: "ParamRef",
    fields: &[
        ("name", Shape::Str),
        ("namespace", Shape::Str),
        ("parameterNotFoundAction", Shape::Str),
        ("selector", Shape::Message(&LABEL_SELECTOR)),
    ],
};

/// `ValidatingAdmissionPolicyBindingSpec`.
static VALIDATING_ADMISSION_POLICY_BINDING_SPEC: Schema = Schema {
    name: "ValidatingAdmissionPolicyBindingSpec",
    fields: &[
        ("matchResources", Shape::Message(&MATCH_RESOURCES)),
        ("paramRef", Shape::Message(&PARAM_REF)),
        ("policyName", Shape::Str),
        ("validationActions", Shape::Strings),
    ],
};

/// admissionregistration.k8s.io/v1 `ValidatingAdmissionPolicyBinding`.
pub(crate) static VALIDATING_ADMISSION_POLICY_BINDING: Schema = Schema {
    name: "ValidatingAdmissionPolicyBinding",
    fields: &[
        ("metadata", Shape::Message(&OBJECT_META)),
        (
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
