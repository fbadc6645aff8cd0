//! Validation as the API server does it for the served types: object names
//! (`ValidateObjectMeta`), the Lease spec (`pkg/apis/coordination/validation`),
//! and decoding errors (wrong JSON types → 400, as the JSON decoder reports).

use serde_json::Value;

use crate::resource::Resource;
use crate::status::{ApiError, FieldError};
use crate::time::{format_micro_time, parse_rfc3339};

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// Errors of `metadata.name` for an object of `resource`.
pub(crate) fn validate_name(resource: Resource, name: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
        return errs;
    }
    let quoted = format!("{name:?}");
    match resource {
        Resource::Namespace => {
            if name.len() > 63 {
                errs.push(FieldError::invalid(
                    "metadata.name",
                    &quoted,
                    "must be no more than 63 characters",
                ));
            }
            if !is_dns_label(name) {
                errs.push(FieldError::invalid(
                    "metadata.name",
                    &quoted,
                    DNS1123_LABEL_MSG,
                ));
            }
        }
        _ => {
            if name.len() > 253 {
                errs.push(FieldError::invalid(
                    "metadata.name",
                    &quoted,
                    "must be no more than 253 characters",
                ));
            }
            if !is_dns_subdomain(name) {
                errs.push(FieldError::invalid(
                    "metadata.name",
                    &quoted,
                    DNS1123_SUBDOMAIN_MSG,
                ));
            }
        }
    }
    errs
}

fn decode_error(resource: Resource, field: &str, go_type: &str, got: &Value) -> ApiError {
    let json_type = match got {
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    };
    ApiError::bad_request(format!(
        "{kind} in version \"v1\" cannot be handled as a {kind}: json: cannot unmarshal {json_type} into Go struct field {field} of type {go_type}",
        kind = resource.kind()
    ))
}

/// Checks the JSON types of a Lease spec, normalises its MicroTime fields to
/// the server's six-digit UTC form, and returns the field errors of
/// `ValidateLeaseSpec`. A wrong JSON type is a 400, as the decoder reports it.
pub(crate) fn check_lease_spec(obj: &mut Value) -> Result<Vec<FieldError>, ApiError> {
    let r = Resource::Lease;
    let Some(spec) = obj.get_mut("spec") else {
        return Ok(Vec::new());
    };
    if spec.is_null() {
        return Ok(Vec::new());
    }
    let Some(spec) = spec.as_object_mut() else {
        return Err(decode_error(r, "Lease.spec", "v1.LeaseSpec", spec));
    };
    for (field, go) in [
        ("holderIdentity", "string"),
        ("strategy", "v1.CoordinatedLeaseStrategy"),
        ("preferredHolder", "string"),
    ] {
        if let Some(v) = spec.get(field)
            && !(v.is_string() || v.is_null())
        {
            return Err(decode_error(r, &format!("LeaseSpec.spec.{field}"), go, v));
        }
    }
    let int32 = |field: &str| -> Result<Option<i64>, ApiError> {
        match spec.get(field) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => match v.as_i64() {
                Some(n) if i32::try_from(n).is_ok() => Ok(Some(n)),
                _ => Err(decode_error(
                    r,
                    &format!("LeaseSpec.spec.{field}"),
                    "int32",
                    v,
                )),
            },
        }
    };
    let duration = int32("leaseDurationSeconds")?;
    let transitions = int32("leaseTransitions")?;
    for field in ["acquireTime", "renewTime"] {
        if let Some(v) = spec.get_mut(field) {
            match v {
                Value::Null => {}
                Value::String(s) => match parse_rfc3339(s) {
                    Some(ts) => *v = Value::String(format_micro_time(ts)),
                    None => {
                        return Err(ApiError::bad_request(format!(
                            "Lease in version \"v1\" cannot be handled as a Lease: parsing time {s:?} as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse {s:?} as a MicroTime"
                        )));
                    }
                },
                other => {
                    return Err(decode_error(
                        r,
                        &format!("LeaseSpec.spec.{field}"),
                        "v1.MicroTime",
                        other,
                    ));
                }
            }
        }
    }
    let mut errs = Vec::new();
    if let Some(d) = duration
        && d <= 0
    {
        errs.push(FieldError::invalid(
            "spec.leaseDurationSeconds",
            &d.to_string(),
            "must be greater than 0",
        ));
    }
    if let Some(t) = transitions
        && t < 0
    {
        errs.push(FieldError::invalid(
            "spec.leaseTransitions",
            &t.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    let strategy = spec.get("strategy").and_then(Value::as_str).unwrap_or("");
    if spec.get("strategy").is_some_and(Value::is_string) {
        errs.extend(validate_strategy(strategy));
    }
    let preferred = spec
        .get("preferredHolder")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !preferred.is_empty() && strategy.is_empty() {
        errs.push(FieldError::forbidden(
            "spec.preferredHolder",
            "may only be specified if `strategy` is defined",
        ));
    }
    Ok(errs)
}

/// `ValidateCoordinatedLeaseStrategy`, including the upstream quirk that the
/// field path names `strategy` twice.
fn validate_strategy(strategy: &str) -> Vec<FieldError> {
    const KNOWN: [&str; 1] = ["OldestEmulationVersion"];
    let field = "spec.strategy.strategy";
    if !strategy.contains('/') {
        if KNOWN.contains(&strategy) {
            return Vec::new();
        }
        return vec![FieldError::not_supported(field, strategy, &KNOWN)];
    }
    // A qualified name: `prefix/name` with a DNS-subdomain prefix and a name of
    // at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric.
    let quoted = format!("{strategy:?}");
    let mut errs = Vec::new();
    let parts: Vec<&str> = strategy.split('/').collect();
    if parts.len() != 2 || parts[0].is_empty() || !is_dns_subdomain(parts[0]) {
        errs.push(FieldError::invalid(
            field,
            &quoted,
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ));
        return errs;
    }
    let name = parts[1].as_bytes();
    let ok = !name.is_empty()
        && name.len() <= 63
        && name[0].is_ascii_alphanumeric()
        && name[name.len() - 1].is_ascii_alphanumeric()
        && name
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !ok {
        errs.push(FieldError::invalid(
            field,
            &quoted,
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ));
    }
    errs
}

/// Checks the JSON types of a ConfigMap (`data` values are strings).
pub(crate) fn check_config_map(obj: &Value) -> Result<(), ApiError> {
    if let Some(data) = obj.get("data") {
        match data {
            Value::Null => {}
            Value::Object(m) => {
                for v in m.values() {
                    if !v.is_string() {
                        return Err(decode_error(
                            Resource::ConfigMap,
                            "ConfigMap.data",
                            "string",
                            v,
                        ));
                    }
                }
            }
            other => {
                return Err(decode_error(
                    Resource::ConfigMap,
                    "ConfigMap.data",
                    "map[string]string",
                    other,
                ));
            }
        }
    }
    Ok(())
}

/// Checks the JSON types of a Node's spec (`unschedulable` is a bool).
pub(crate) fn check_node(obj: &Value) -> Result<(), ApiError> {
    let r = Resource::Node;
    match obj.get("spec") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Object(spec)) => match spec.get("unschedulable") {
            None | Some(Value::Null) | Some(Value::Bool(_)) => Ok(()),
            Some(v) => Err(decode_error(r, "NodeSpec.spec.unschedulable", "bool", v)),
        },
        Some(other) => Err(decode_error(r, "Node.spec", "v1.NodeSpec", other)),
    }
}

/// The field errors of `metadata.ownerReferences` (`ValidateOwnerReferences`):
/// each names its owner by `apiVersion`, `kind`, `name` and `uid`. The JSON types
/// were checked by [`check_metadata_types`].
pub(crate) fn validate_owner_references(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let refs = obj
        .get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array);
    for (i, r) in refs.into_iter().flatten().enumerate() {
        for field in ["apiVersion", "kind", "name", "uid"] {
            if r.get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                errs.push(FieldError::required(
                    &format!("metadata.ownerReferences[{i}].{field}"),
                    "",
                ));
            }
        }
    }
    errs
}

/// Checks `metadata.labels` / `metadata.annotations` are string maps.
pub(crate) fn check_metadata_types(resource: Resource, obj: &Value) -> Result<(), ApiError> {
    let Some(meta) = obj.get("metadata") else {
        return Ok(());
    };
    let Some(meta) = meta.as_object() else {
        return Err(decode_error(resource, "metadata", "v1.ObjectMeta", meta));
    };
    for field in ["labels", "annotations"] {
        match meta.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for v in m.values() {
                    if !v.is_string() {
                        return Err(decode_error(
                            resource,
                            &format!("ObjectMeta.metadata.{field}"),
                            "string",
                            v,
                        ));
                    }
                }
            }
            Some(other) => {
                return Err(decode_error(
                    resource,
                    &format!("ObjectMeta.metadata.{field}"),
                    "map[string]string",
                    other,
                ));
            }
        }
    }
    match meta.get("ownerReferences") {
        None | Some(Value::Null) => {}
        Some(Value::Array(refs)) => {
            for r in refs {
                let Some(fields) = r.as_object() else {
                    return Err(decode_error(
                        resource,
                        "ObjectMeta.metadata.ownerReferences",
                        "v1.OwnerReference",
                        r,
                    ));
                };
                for field in ["apiVersion", "kind", "name", "uid"] {
                    if let Some(v) = fields.get(field)
                        && !(v.is_string() || v.is_null())
                    {
                        return Err(decode_error(
                            resource,
                            &format!("OwnerReference.metadata.ownerReferences.{field}"),
                            "string",
                            v,
                        ));
                    }
                }
            }
        }
        Some(other) => {
            return Err(decode_error(
                resource,
                "ObjectMeta.metadata.ownerReferences",
                "[]v1.OwnerReference",
                other,
            ));
        }
    }
    for field in [
        "name",
        "namespace",
        "resourceVersion",
        "uid",
        "generateName",
    ] {
        if let Some(v) = meta.get(field)
            && !(v.is_string() || v.is_null())
        {
            return Err(decode_error(
                resource,
                &format!("ObjectMeta.metadata.{field}"),
                "string",
                v,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lease_spec_rules_match_the_api_server() {
        let mut ok = json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0,
            "renewTime": "2026-01-01T00:00:00Z"}});
        assert!(check_lease_spec(&mut ok).expect("types ok").is_empty());
        assert_eq!(ok["spec"]["renewTime"], "2026-01-01T00:00:00.000000Z");

        let mut zero = json!({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}});
        let errs = check_lease_spec(&mut zero).expect("types ok");
        let text: Vec<String> = errs
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect();
        assert_eq!(
            text,
            [
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"
            ]
        );

        let mut preferred = json!({"spec": {"preferredHolder": "b"}});
        let errs = check_lease_spec(&mut preferred).expect("types ok");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.preferredHolder");

        let mut with_strategy =
            json!({"spec": {"preferredHolder": "b", "strategy": "OldestEmulationVersion"}});
        assert!(
            check_lease_spec(&mut with_strategy)
                .expect("types ok")
                .is_empty()
        );

        let mut bad_strategy = json!({"spec": {"strategy": "Newest"}});
        let errs = check_lease_spec(&mut bad_strategy).expect("types ok");
        assert_eq!(errs[0].field, "spec.strategy.strategy");
        assert!(
            errs[0].detail.starts_with("Unsupported value: \"Newest\""),
            "{}",
            errs[0].detail
        );

        let mut wrong_type = json!({"spec": {"leaseDurationSeconds": "15"}});
        let err =
            check_lease_spec(&mut wrong_type).expect_err("a string duration is a decode error");
        assert_eq!(err.code, 400);
        assert!(
            err.message.contains("cannot unmarshal string"),
            "{}",
            err.message
        );
    }

    #[test]
    fn names_follow_dns_rules() {
        assert!(validate_name(Resource::Lease, "kube-scheduler").is_empty());
        assert!(validate_name(Resource::Lease, "a.b-c").is_empty());
        assert_eq!(validate_name(Resource::Lease, "Bad_Name").len(), 1);
        assert_eq!(validate_name(Resource::Namespace, "a.b").len(), 1);
        assert_eq!(
            validate_name(Resource::ConfigMap, "")[0].reason,
            "FieldValueRequired"
        );
    }
}
