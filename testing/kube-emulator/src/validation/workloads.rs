//! The API server's validation of the workload and RBAC kinds, the rules a
//! manifest most often breaks (`pkg/apis/apps/validation`,
//! `pkg/apis/policy/validation`, `pkg/apis/rbac/validation`,
//! `pkg/apis/core/validation`), worded as the server words them:
//!
//! - a Deployment needs a non-empty `spec.selector` that matches its
//!   template's labels, at least one container, and a name and an image for
//!   each container (a DNS label, unique in the Pod); `replicas` is not
//!   negative; the template's `restartPolicy`, if set, is `Always`;
//! - a PodDisruptionBudget sets at most one of `minAvailable` and
//!   `maxUnavailable`;
//! - a Role's rules each name verbs, and API groups when they name resources;
//! - a RoleBinding refers to a `Role` or `ClusterRole` of
//!   `rbac.authorization.k8s.io` by name, and each subject is a
//!   `ServiceAccount` (with a name), a `User` or a `Group`.
//!
//! The JSON types were checked before ([`super::types`]). Everything else the
//! real validation checks (resource quantities, probe handlers, ports' ranges,
//! volumes) is not checked here. Compiled with the feature `workloads` only.

use serde_json::{Map, Value};

use super::{is_dns_label, str_at};
use crate::resource::Resource;
use crate::status::FieldError;

/// The field errors of `obj`, an object of `resource`.
pub(crate) fn validate(resource: Resource, obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match resource {
        Resource::Deployment => deployment(obj, &mut errs),
        Resource::PodDisruptionBudget => pod_disruption_budget(obj, &mut errs),
        Resource::Role => role(obj, &mut errs),
        Resource::RoleBinding => role_binding(obj, &mut errs),
        _ => {}
    }
    errs
}

fn deployment(obj: &Value, errs: &mut Vec<FieldError>) {
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    if let Some(replicas) = spec.get("replicas").and_then(Value::as_i64)
        && replicas < 0
    {
        errs.push(FieldError::invalid(
            "spec.replicas",
            &replicas.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    let labels = spec
        .pointer("/template/metadata/labels")
        .and_then(Value::as_object);
    match spec.get("selector").filter(|s| !s.is_null()) {
        None => errs.push(FieldError::required("spec.selector", "")),
        Some(selector) if selector_is_empty(selector) => errs.push(FieldError::invalid(
            "spec.selector",
            "{}",
            "empty selector is invalid for deployment",
        )),
        Some(selector) if !selector_matches(selector, labels) => {
            errs.push(FieldError::invalid(
                "spec.template.metadata.labels",
                &go_map(labels),
                "`selector` does not match template `labels`",
            ));
        }
        Some(_) => {}
    }
    let pod = spec.pointer("/template/spec").unwrap_or(&empty);
    let policy = str_at(pod, "/restartPolicy");
    if !policy.is_empty() && policy != "Always" {
        errs.push(FieldError::not_supported(
            "spec.template.spec.restartPolicy",
            policy,
            &["Always"],
        ));
    }
    let containers = pod.get("containers").and_then(Value::as_array);
    if containers.is_none_or(Vec::is_empty) {
        errs.push(FieldError::required("spec.template.spec.containers", ""));
    }
    let mut names: Vec<&str> = Vec::new();
    for (list, items) in [
        ("initContainers", pod.get("initContainers")),
        ("containers", pod.get("containers")),
    ] {
        for (i, c) in items
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = format!("spec.template.spec.{list}[{i}]");
            let name = str_at(c, "/name");
            if name.is_empty() {
                errs.push(FieldError::required(&format!("{at}.name"), ""));
            } else if !is_dns_label(name) {
                errs.push(FieldError::invalid(
                    &format!("{at}.name"),
                    &format!("{name:?}"),
                    super::DNS1123_LABEL_MSG,
                ));
            } else if names.contains(&name) {
                errs.push(FieldError::duplicate(
                    &format!("{at}.name"),
                    &format!("{name:?}"),
                ));
            } else {
                names.push(name);
            }
            if str_at(c, "/image").is_empty() {
                errs.push(FieldError::required(&format!("{at}.image"), ""));
            }
        }
    }
}

/// Whether a `LabelSelector` selects nothing by itself (no labels, no expressions).
fn selector_is_empty(selector: &Value) -> bool {
    let none = |field: &str| match selector.get(field) {
        Some(Value::Object(m)) => m.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        _ => true,
    };
    none("matchLabels") && none("matchExpressions")
}

/// Whether a `LabelSelector` selects an object with `labels`.
fn selector_matches(selector: &Value, labels: Option<&Map<String, Value>>) -> bool {
    let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    let by_labels = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k).is_some() && label(k) == v.as_str());
    let by_expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|e| {
            let key = str_at(e, "/key");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match (str_at(e, "/operator"), label(key)) {
                ("In", Some(v)) => values.contains(&v),
                ("NotIn", v) => v.is_none_or(|v| !values.contains(&v)),
                ("Exists", v) => v.is_some(),
                ("DoesNotExist", v) => v.is_none(),
                _ => false,
            }
        });
    by_labels && by_expressions
}

/// A label map as Go's `%v` prints the value of an `Invalid` error.
fn go_map(labels: Option<&Map<String, Value>>) -> String {
    let pairs: Vec<String> = labels
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k:?}:{:?}", v.as_str().unwrap_or("")))
        .collect();
    format!("map[string]string{{{}}}", pairs.join(", "))
}

fn pod_disruption_budget(obj: &Value, errs: &mut Vec<FieldError>) {
    let set = |field: &str| {
        obj.pointer(&format!("/spec/{field}"))
            .is_some_and(|v| !v.is_null())
    };
    if set("minAvailable") && set("maxUnavailable") {
        let spec = obj.get("spec").map(Value::to_string).unwrap_or_default();
        errs.push(FieldError::invalid(
            "spec",
            &spec,
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
}

fn role(obj: &Value, errs: &mut Vec<FieldError>) {
    let rules = obj.get("rules").and_then(Value::as_array);
    for (i, rule) in rules.into_iter().flatten().enumerate() {
        let count = |field: &str| {
            rule.get(field)
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
        };
        if count("verbs") == 0 {
            errs.push(FieldError::required(
                &format!("rules[{i}].verbs"),
                "verbs must contain at least one value",
            ));
        }
        if count("nonResourceURLs") > 0 {
            errs.push(FieldError::invalid(
                &format!("rules[{i}].nonResourceURLs"),
                "",
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if count("resources") > 0 && count("apiGroups") == 0 {
            errs.push(FieldError::required(
                &format!("rules[{i}].apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
    }
}

fn role_binding(obj: &Value, errs: &mut Vec<FieldError>) {
    let group = str_at(obj, "/roleRef/apiGroup");
    if group != "rbac.authorization.k8s.io" {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            group,
            &["rbac.authorization.k8s.io"],
        ));
    }
    let kind = str_at(obj, "/roleRef/kind");
    if !matches!(kind, "Role" | "ClusterRole") {
        errs.push(FieldError::not_supported(
            "roleRef.kind",
            kind,
            &["ClusterRole", "Role"],
        ));
    }
    if str_at(obj, "/roleRef/name").is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    }
    let subjects = obj.get("subjects").and_then(Value::as_array);
    for (i, s) in subjects.into_iter().flatten().enumerate() {
        let at = format!("subjects[{i}]");
        match str_at(s, "/kind") {
            "ServiceAccount" | "User" | "Group" => {}
            other => errs.push(FieldError::not_supported(
                &format!("{at}.kind"),
                other,
                &["Group", "ServiceAccount", "User"],
            )),
        }
        if str_at(s, "/name").is_empty() {
            errs.push(FieldError::required(&format!("{at}.name"), ""));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(resource: Resource, obj: Value) -> Vec<String> {
        validate(resource, &obj)
            .iter()
            .map(|e| format!("{}: {}", e.field, e.detail))
            .collect()
    }

    fn deployment(selector: Value, labels: Value, containers: Value) -> Value {
        json!({"spec": {
            "selector": selector,
            "template": {"metadata": {"labels": labels}, "spec": {"containers": containers}},
        }})
    }

    #[test]
    fn a_valid_deployment_has_no_errors() {
        let d = deployment(
            json!({"matchLabels": {"app": "a"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}),
            json!({"app": "a", "tier": "web"}),
            json!([{"name": "app", "image": "i"}, {"name": "sidecar", "image": "j"}]),
        );
        assert_eq!(messages(Resource::Deployment, d), Vec::<String>::new());
    }

    #[test]
    fn deployment_rules_are_worded_as_the_server_words_them() {
        let cases = [
            (
                deployment(
                    json!({"matchLabels": {"app": "b"}}),
                    json!({"app": "a"}),
                    json!([{"name": "c", "image": "i"}]),
                ),
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"a\"}: `selector` does not match template `labels`",
            ),
            (
                deployment(
                    json!({}),
                    json!({"app": "a"}),
                    json!([{"name": "c", "image": "i"}]),
                ),
                "spec.selector: Invalid value: {}: empty selector is invalid for deployment",
            ),
            (
                deployment(
                    json!({"matchLabels": {"app": "a"}}),
                    json!({"app": "a"}),
                    json!([]),
                ),
                "spec.template.spec.containers: Required value",
            ),
            (
                deployment(
                    json!({"matchLabels": {"app": "a"}}),
                    json!({"app": "a"}),
                    json!([{"name": "c"}]),
                ),
                "spec.template.spec.containers[0].image: Required value",
            ),
            (
                deployment(
                    json!({"matchLabels": {"app": "a"}}),
                    json!({"app": "a"}),
                    json!([{"name": "c", "image": "i"}, {"name": "c", "image": "j"}]),
                ),
                "spec.template.spec.containers[1].name: Duplicate value: \"c\"",
            ),
        ];
        for (obj, message) in cases {
            let got = messages(Resource::Deployment, obj.clone());
            assert!(
                got.iter().any(|m| m == message),
                "{obj}: {got:?}\nwanted: {message}"
            );
        }
    }

    #[test]
    fn pdb_role_and_binding_rules() {
        let pdb = json!({"spec": {"minAvailable": 1, "maxUnavailable": 1}});
        let got = messages(Resource::PodDisruptionBudget, pdb);
        assert!(
            got.len() == 1
                && got[0].ends_with(": minAvailable and maxUnavailable cannot be both set"),
            "{got:?}"
        );
        let role = json!({"rules": [{"resources": ["leases"], "verbs": []}]});
        assert_eq!(messages(Resource::Role, role).len(), 2);
        let binding = json!({
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "Robot", "name": "x"}],
        });
        assert_eq!(
            messages(Resource::RoleBinding, binding),
            [
                "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\""
            ]
        );
    }
}
