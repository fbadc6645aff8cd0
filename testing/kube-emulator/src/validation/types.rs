//! The JSON type of every field a kind's schema describes, checked as the API
//! server's JSON decoder checks it: a number where the Go type has a `string`
//! is a 400 `json: cannot unmarshal number into Go struct field
//! ValidatingAdmissionPolicySpec.spec.failurePolicy of type string`. A `null` is taken anywhere (Go
//! leaves the field at its zero value); below an opaque field nothing is
//! checked; fields the kind does not have were dropped or refused before, by
//! `fieldValidation`. The top-level `metadata` is left to
//! [`super::check_metadata_types`], which every kind goes through.

use serde_json::Value;

use super::decode_error;
use crate::resource::Resource;
use crate::schema::{Schema, Shape};
use crate::status::ApiError;

/// Checks the JSON types of `obj`, an object of `resource`, against its schema.
pub(crate) fn check_types(resource: Resource, obj: &Value) -> Result<(), ApiError> {
    let schema = crate::schema::of(resource);
    let Value::Object(fields) = obj else {
        return Ok(());
    };
    for (name, value) in fields {
        if matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(shape) = schema.field(name) {
            check(resource, schema, name, shape, value)?;
        }
    }
    Ok(())
}

/// Checks `value`, the field at `path` of a `parent` message, against `shape`.
fn check(
    resource: Resource,
    parent: &Schema,
    path: &str,
    shape: Shape,
    value: &Value,
) -> Result<(), ApiError> {
    let fits = match (shape, value) {
        (_, Value::Null) | (Shape::Opaque, _) => true,
        (Shape::Str | Shape::Base64 | Shape::MicroTime, Value::String(_)) => true,
        (Shape::Int32, Value::Number(n)) => n.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        (Shape::Int64, Value::Number(n)) => n.as_i64().is_some(),
        (Shape::Bool, Value::Bool(_)) => true,
        (Shape::Strings, Value::Array(items)) => items
            .iter()
            .all(|item| matches!(item, Value::String(_) | Value::Null)),
        (Shape::Map(entry), Value::Object(map)) => {
            let values = entry.field("value").unwrap_or(Shape::Opaque);
            for (key, item) in map {
                check(resource, parent, &format!("{path}[{key}]"), values, item)?;
            }
            true
        }
        (Shape::Message(inner), Value::Object(fields)) => {
            for (name, item) in fields {
                if let Some(shape) = inner.field(name) {
                    check(resource, inner, &format!("{path}.{name}"), shape, item)?;
                }
            }
            true
        }
        (Shape::Messages(inner), Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let at = format!("{path}[{i}]");
                match item {
                    Value::Object(_) | Value::Null => {
                        check(resource, parent, &at, Shape::Message(inner), item)?;
                    }
                    other => {
                        return Err(decode_error(
                            resource,
                            &format!("{}.{at}", parent.name),
                            &go_type(Shape::Message(inner)),
                            other,
                        ));
                    }
                }
            }
            true
        }
        _ => false,
    };
    if fits {
        Ok(())
    } else {
        Err(decode_error(
            resource,
            &format!("{}.{path}", parent.name),
            &go_type(shape),
            value,
        ))
    }
}

/// The Go type of a shape, as the decoder names it in its error.
fn go_type(shape: Shape) -> String {
    match shape {
        Shape::Str => "string".into(),
        Shape::Int32 => "int32".into(),
        Shape::Int64 => "int64".into(),
        Shape::Bool => "bool".into(),
        Shape::Base64 => "[]uint8".into(),
        Shape::Strings => "[]string".into(),
        Shape::Map(_) => "map[string]string".into(),
        Shape::MicroTime => "v1.MicroTime".into(),
        Shape::Message(inner) => format!("v1.{}", inner.name),
        Shape::Messages(inner) => format!("[]v1.{}", inner.name),
        Shape::Opaque => "interface {}".into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(spec: Value) -> Value {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "p"}, "spec": spec})
    }

    #[test]
    fn a_policy_of_the_right_types_and_nulls_passes() {
        let p = policy(json!({
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"},
            "matchConstraints": {
                "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]}],
                "namespaceSelector": {"matchLabels": {"team": "a"}},
            },
            "validations": [{"expression": "true", "message": null}],
            "variables": null,
        }));
        check_types(Resource::ValidatingAdmissionPolicy, &p).expect("well typed");
    }

    #[test]
    fn a_wrong_type_in_a_policy_is_named_by_its_path_as_the_decoder_names_it() {
        let cases = [
            (
                json!({"failurePolicy": 1}),
                "json: cannot unmarshal number into Go struct field ValidatingAdmissionPolicySpec.spec.failurePolicy of type string",
            ),
            (
                json!({"validations": {"expression": "true"}}),
                "json: cannot unmarshal object into Go struct field ValidatingAdmissionPolicySpec.spec.validations of type []v1.Validation",
            ),
            (
                json!({"validations": ["true"]}),
                "json: cannot unmarshal string into Go struct field ValidatingAdmissionPolicySpec.spec.validations[0] of type v1.Validation",
            ),
            (
                json!({"matchConstraints": {"resourceRules": [{"resources": "configmaps"}]}}),
                "json: cannot unmarshal string into Go struct field NamedRuleWithOperations.spec.matchConstraints.resourceRules[0].resources of type []string",
            ),
        ];
        for (spec, message) in cases {
            let err = check_types(Resource::ValidatingAdmissionPolicy, &policy(spec.clone()))
                .expect_err("a wrong type");
            assert!(
                err.message.ends_with(message),
                "{spec}: {:?}\nwanted the end: {message}",
                err.message
            );
        }
    }
}
