//! Validation as the API server does it for the served types: object names
//! (`ValidateObjectMeta`), the Lease spec (`pkg/apis/coordination/validation`),
//! decoding errors (wrong JSON types → 400, as the JSON decoder reports), and
//! fields a kind does not have (`fieldValidation`).
//!
//! # `fieldValidation`
//!
//! The API server decodes a create, update or patch body into its Go type,
//! which has no room for a field it does not declare. The query parameter
//! `fieldValidation` says what then happens (`k8s.io/apiserver/pkg/endpoints/handlers`,
//! `create.go`, `update.go`, `patch.go`): `Ignore` drops such fields, `Warn`
//! drops them and answers a `Warning: 299 - "unknown field \"spec.foo\""`
//! header for each, `Strict` refuses the write. An absent or empty parameter
//! is `Warn`, as in the API server since server-side field validation became
//! the default; kubectl sends `Strict` unless told `--validate=false` (which
//! sends `Ignore`) or `--validate=warn`. Any other value is 422 `Invalid` on
//! `CreateOptions`, `UpdateOptions` or `PatchOptions`.
//!
//! A strict refusal is worded as the server words it: for a create or an
//! update, 400 `BadRequest` `ConfigMap in version "v1" cannot be handled as a
//! ConfigMap: strict decoding error: unknown field "datta"`; for a patch,
//! whose unknown fields are those of the patched object, 422 `Invalid`
//! `patch: Invalid value: "…": strict decoding error: …`, the value being the
//! patched object as JSON (a JSON or merge patch) or the patch as Go prints a
//! map (a strategic merge patch).
//!
//! The fields known are those of [`crate::schema`], which names every field of
//! the served kinds; below a field it marks opaque (the timestamps the server
//! sets, `managedFields`, a Node's or Namespace's `status`, a Node's
//! `spec.configSource`) nothing is checked. Duplicate fields, which the server
//! also reports, are not detected: the JSON parser keeps the last one. Unknown
//! fields are listed in the order of their paths, not of the document.

use serde_json::{Map, Value};

mod admission;
mod lease_candidate;
mod types;

pub(crate) use admission::validate as validate_admission;
pub(crate) use lease_candidate::{
    OLDEST_EMULATION_VERSION, check as check_lease_candidate,
    update_errors as lease_candidate_update_errors,
};
pub(crate) use types::check_types;

use crate::resource::Resource;
use crate::schema::{Schema, Shape};
use crate::status::{ApiError, FieldError};
use crate::time::{format_micro_time, parse_rfc3339};

/// What a write asks the server to do with fields its kind does not have
/// (`metav1.FieldValidationIgnore`, `…Warn`, `…Strict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    /// Drop them.
    Ignore,
    /// Drop them and warn: one `Warning` header for each.
    Warn,
    /// Refuse the write.
    Strict,
}

impl FieldValidation {
    /// The directive of the `fieldValidation` query parameter of a write
    /// whose options are `options_kind` (`CreateOptions`, `UpdateOptions`,
    /// `PatchOptions`): absent or empty is `Warn`; a value other than the
    /// three is 422 `Invalid`, as `ValidateFieldValidation` words it.
    pub(crate) fn parse(value: Option<&str>, options_kind: &str) -> Result<Self, ApiError> {
        match value.unwrap_or("") {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(ApiError::invalid_of(
                "meta.k8s.io",
                options_kind,
                "",
                &[FieldError::not_supported(
                    "fieldValidation",
                    other,
                    &["", "Ignore", "Strict", "Warn"],
                )],
            )),
        }
    }

    /// Applies the directive to a decoded body: the fields `resource` does not
    /// have are dropped from `obj`. `Ok` holds the warnings to answer with
    /// (`Warn` only); `Err` the paths of the unknown fields (`Strict` only),
    /// for the caller to word as its verb does.
    pub(crate) fn apply(
        self,
        resource: Resource,
        obj: &mut Value,
    ) -> Result<Vec<String>, Vec<String>> {
        let unknown = drop_unknown_fields(resource, obj);
        match self {
            _ if unknown.is_empty() => Ok(Vec::new()),
            FieldValidation::Ignore => Ok(Vec::new()),
            FieldValidation::Warn => Ok(unknown.iter().map(|p| unknown_field(p)).collect()),
            FieldValidation::Strict => Err(unknown),
        }
    }
}

/// `unknown field "spec.foo"`, as the strict JSON decoder words one.
fn unknown_field(path: &str) -> String {
    format!("unknown field {path:?}")
}

/// `strict decoding error: unknown field "a", unknown field "b"`.
pub(crate) fn strict_decoding_message(unknown: &[String]) -> String {
    let each: Vec<String> = unknown.iter().map(|p| unknown_field(p)).collect();
    format!("strict decoding error: {}", each.join(", "))
}

/// The 400 of a create or update refused under `Strict`.
pub(crate) fn strict_decoding_error(resource: Resource, unknown: &[String]) -> ApiError {
    cannot_handle(resource, &strict_decoding_message(unknown))
}

/// Removes from `obj` every field that the kind of `resource` does not have,
/// at any depth the schema describes, and returns their paths
/// (`spec.foo`, `spec.taints[0].foo`), as the strict decoder names them.
pub(crate) fn drop_unknown_fields(resource: Resource, obj: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    if let Value::Object(fields) = obj {
        drop_unknown_in(crate::schema::of(resource), fields, "", true, &mut unknown);
    }
    unknown
}

fn drop_unknown_in(
    schema: &Schema,
    fields: &mut Map<String, Value>,
    parent: &str,
    top: bool,
    unknown: &mut Vec<String>,
) {
    fields.retain(|name, value| {
        let path = if parent.is_empty() {
            name.clone()
        } else {
            format!("{parent}.{name}")
        };
        // TypeMeta is inline in every top-level object.
        if top && (name == "apiVersion" || name == "kind") {
            return true;
        }
        let Some(shape) = schema.field(name) else {
            unknown.push(path);
            return false;
        };
        match (shape, value) {
            (Shape::Message(inner), Value::Object(nested)) => {
                drop_unknown_in(inner, nested, &path, false, unknown);
            }
            (Shape::Messages(inner), Value::Array(items)) => {
                for (i, item) in items.iter_mut().enumerate() {
                    if let Value::Object(nested) = item {
                        drop_unknown_in(inner, nested, &format!("{path}[{i}]"), false, unknown);
                    }
                }
            }
            // Scalars, lists of strings, string maps, opaque fields; and a
            // value of the wrong JSON type, which is the type checks' to refuse.
            _ => {}
        }
        true
    });
}

const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// The string at JSON `pointer` in `obj`, `""` where there is none.
pub(crate) fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

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
    let mut invalid = |detail: &str| {
        errs.push(FieldError::invalid("metadata.name", &quoted, detail));
    };
    // `ValidLeaseCandidateName` is `IsConfigMapKey`: letters of either case,
    // digits, '-', '_' and '.'; a Namespace's name is a DNS label, any other
    // a DNS subdomain.
    let (limit, fits, rule) = match resource {
        Resource::LeaseCandidate => (
            253,
            name.bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')),
            CONFIG_KEY_MSG,
        ),
        Resource::Namespace => (63, is_dns_label(name), DNS1123_LABEL_MSG),
        _ => (253, is_dns_subdomain(name), DNS1123_SUBDOMAIN_MSG),
    };
    if name.len() > limit {
        invalid(&format!("must be no more than {limit} characters"));
    }
    if !fits {
        invalid(rule);
    }
    if resource == Resource::LeaseCandidate {
        if name == "." || name == ".." {
            invalid(&format!("must not be '{name}'"));
        } else if name.starts_with("..") {
            invalid("must not start with '..'");
        }
    }
    errs
}

/// `Lease in version "v1" cannot be handled as a Lease: <detail>`: a body the
/// decoder refused (`transformDecodeError`).
pub(crate) fn cannot_handle(resource: Resource, detail: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: {detail}",
        kind = resource.kind(),
        version = resource.version(),
    ))
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
    cannot_handle(
        resource,
        &format!(
            "json: cannot unmarshal {json_type} into Go struct field {field} of type {go_type}"
        ),
    )
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
    normalise_micro_times(r, "LeaseSpec", spec, &["acquireTime", "renewTime"])?;
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

/// Rewrites the `MicroTime` fields `fields` of `spec` (a `spec_type`, as the
/// decoder names it) in the server's six-digit UTC form. A time that is not
/// RFC 3339, or a value that is not a string, is the decoder's 400.
pub(crate) fn normalise_micro_times(
    resource: Resource,
    spec_type: &str,
    spec: &mut Map<String, Value>,
    fields: &[&str],
) -> Result<(), ApiError> {
    for field in fields {
        let Some(v) = spec.get_mut(*field) else {
            continue;
        };
        match v {
            Value::Null => {}
            Value::String(s) => match parse_rfc3339(s) {
                Some(ts) => *v = Value::String(format_micro_time(ts)),
                None => {
                    return Err(cannot_handle(
                        resource,
                        &format!(
                            "parsing time {s:?} as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse {s:?} as a MicroTime"
                        ),
                    ));
                }
            },
            other => {
                return Err(decode_error(
                    resource,
                    &format!("{spec_type}.spec.{field}"),
                    "v1.MicroTime",
                    other,
                ));
            }
        }
    }
    Ok(())
}

/// `ValidateCoordinatedLeaseStrategy` (the `strategy` of a Lease and of a
/// LeaseCandidate), including the upstream quirk that the field path names
/// `strategy` twice.
fn validate_strategy(strategy: &str) -> Vec<FieldError> {
    const KNOWN: [&str; 1] = [OLDEST_EMULATION_VERSION];
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
    fn unknown_fields_are_found_at_every_depth_the_schema_knows() {
        let mut node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n", "labelz": {}, "creationTimestamp": "2026-01-01T00:00:00Z",
                "managedFields": [{"anything": 1}], "ownerReferences": [{"uid": "u", "ctrl": true}]},
            "spec": {"unschedulable": true, "taints": [{"key": "k", "effect": "NoSchedule", "colour": "red"}],
                "configSource": {"whatever": {}}},
            "status": {"kubelet's": "own"},
            "extra": 1
        });
        let unknown = drop_unknown_fields(Resource::Node, &mut node);
        assert_eq!(
            unknown,
            [
                "extra",
                "metadata.labelz",
                "metadata.ownerReferences[0].ctrl",
                "spec.taints[0].colour"
            ]
        );
        assert!(node.get("extra").is_none());
        assert!(node["metadata"].get("labelz").is_none());
        assert_eq!(
            node["spec"]["taints"][0],
            json!({"key": "k", "effect": "NoSchedule"})
        );
        assert_eq!(node["status"], json!({"kubelet's": "own"}), "opaque: kept");

        let mut event = json!({"involvedObject": {"kind": "Pod", "name": "p", "colour": 1},
            "source": {"component": "c"}, "series": {"count": 2, "lastObservedTime": "x"}, "count": 1});
        assert_eq!(
            drop_unknown_fields(Resource::Event, &mut event),
            ["involvedObject.colour"]
        );
        let mut lease = json!({"spec": {"holderIdentity": "a", "holder": "b"}});
        assert_eq!(
            drop_unknown_fields(Resource::Lease, &mut lease),
            ["spec.holder"]
        );
    }

    #[test]
    fn field_validation_directives() {
        let cm = || json!({"metadata": {"name": "c"}, "datta": {"a": "b"}, "spec": {"foo": 1}});
        let (mut a, mut b, mut c) = (cm(), cm(), cm());
        assert_eq!(
            FieldValidation::Strict.apply(Resource::ConfigMap, &mut a),
            Err(vec!["datta".to_owned(), "spec".to_owned()])
        );
        assert_eq!(
            FieldValidation::Warn.apply(Resource::ConfigMap, &mut b),
            Ok(vec![
                "unknown field \"datta\"".to_owned(),
                "unknown field \"spec\"".to_owned()
            ])
        );
        assert_eq!(
            FieldValidation::Ignore.apply(Resource::ConfigMap, &mut c),
            Ok(vec![])
        );
        assert_eq!(c, json!({"metadata": {"name": "c"}}));
        assert_eq!(
            strict_decoding_error(Resource::ConfigMap, &["datta".to_owned()]).message,
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"datta\""
        );

        assert_eq!(
            FieldValidation::parse(None, "CreateOptions").ok(),
            Some(FieldValidation::Warn)
        );
        assert_eq!(
            FieldValidation::parse(Some(""), "CreateOptions").ok(),
            Some(FieldValidation::Warn)
        );
        let err = FieldValidation::parse(Some("strict"), "PatchOptions").expect_err("case matters");
        assert_eq!((err.code, err.reason), (422, "Invalid"));
        assert_eq!(
            err.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
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
