//! The API server's validation of a ValidatingAdmissionPolicy and its binding,
//! as far as the emulator evaluates them (`pkg/apis/admissionregistration/validation`):
//! every CEL expression of a policy compiles; a binding names its parameter by
//! name, not by selector. The JSON types were checked before ([`super::types`]).

use serde_json::Value;

use crate::resource::Resource;
use crate::status::FieldError;

/// The field errors of `obj`, an object of `resource` (none for the other kinds).
pub(crate) fn validate(resource: Resource, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match resource {
        Resource::ValidatingAdmissionPolicy => admission_policy(obj, &mut errs),
        // Taken by kube-apiserver, not evaluated here: refused rather than
        // taken and ignored.
        Resource::ValidatingAdmissionPolicyBinding
            if obj.pointer("/spec/paramRef/selector").is_some() =>
        {
            errs.push(FieldError::forbidden(
                "spec.paramRef.selector",
                "a parameter selector is not served by the kube-elector API emulator \
                 (kube-apiserver takes it); name the parameter with paramRef.name",
            ));
        }
        _ => {}
    }
    errs
}

/// Every CEL expression of a ValidatingAdmissionPolicy compiles, as the API
/// server checks when the policy is written (`compilation failed: …`, 422);
/// the emulator parses with the `cel` crate that evaluates them, so its
/// messages after `compilation failed:` are that crate's, and it checks no
/// types (the API server also refuses some ill-typed expressions here).
fn admission_policy(obj: &Value, errs: &mut Vec<FieldError>) {
    let spec = obj.get("spec");
    let list = |key: &str| {
        spec.and_then(|s| s.get(key))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    };
    let mut check = |field: String, expression: Option<&Value>| {
        let Some(src) = expression.and_then(Value::as_str) else {
            return;
        };
        if let Err(e) = cel::Program::compile(src) {
            errs.push(FieldError::invalid(
                &field,
                &format!("{src:?}"),
                &format!("compilation failed: {e}"),
            ));
        }
    };
    for (i, v) in list("validations").iter().enumerate() {
        check(
            format!("spec.validations[{i}].expression"),
            v.get("expression"),
        );
        check(
            format!("spec.validations[{i}].messageExpression"),
            v.get("messageExpression"),
        );
    }
    for (i, v) in list("matchConditions").iter().enumerate() {
        check(
            format!("spec.matchConditions[{i}].expression"),
            v.get("expression"),
        );
    }
    for (i, v) in list("variables").iter().enumerate() {
        check(
            format!("spec.variables[{i}].expression"),
            v.get("expression"),
        );
    }
    for (i, v) in list("auditAnnotations").iter().enumerate() {
        check(
            format!("spec.auditAnnotations[{i}].valueExpression"),
            v.get("valueExpression"),
        );
    }
}
