//! Discovery documents: `/version`, `/api`, `/apis`, `/api/v1`,
//! `/apis/{group}` and `/apis/{group}/{version}` for the served types.

use serde_json::{Value, json};

use crate::resource::Resource;

/// The Kubernetes version the emulator claims.
pub(crate) const MINOR: &str = "34";

pub(crate) fn version() -> Value {
    json!({
        "major": "1",
        "minor": MINOR,
        "emulationMajor": "1",
        "emulationMinor": MINOR,
        "gitVersion": format!("v1.{MINOR}.0-kube-emulator"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

pub(crate) fn api_versions(addr: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}]
    })
}

/// The served API groups (the core group aside), in discovery's order.
const GROUPS: &[&str] = &[
    "coordination.k8s.io",
    "events.k8s.io",
    "admissionregistration.k8s.io",
];

/// The versions of `group` the emulator serves, in the order of
/// [`Resource::ALL`], which puts each group's GA version (the preferred one)
/// first: `coordination.k8s.io` serves `v1` (Leases) and `v1beta1`
/// (LeaseCandidates).
fn versions(group: &str) -> Vec<&'static str> {
    let mut versions: Vec<&'static str> = Vec::new();
    for r in Resource::ALL.iter().filter(|r| r.group() == group) {
        if !versions.contains(&r.version()) {
            versions.push(r.version());
        }
    }
    versions
}

fn group_doc(group: &str) -> Value {
    let versions: Vec<Value> = versions(group)
        .into_iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": versions, "preferredVersion": preferred})
}

pub(crate) fn api_group_list() -> Value {
    let groups: Vec<Value> = GROUPS.iter().map(|g| group_doc(g)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub(crate) fn api_group(group: &str) -> Option<Value> {
    if !GROUPS.contains(&group) {
        return None;
    }
    let mut doc = group_doc(group);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

pub(crate) fn resource_list(group: &str, version: &str) -> Value {
    let resources: Vec<Value> = Resource::ALL
        .iter()
        .copied()
        .filter(|r| r.group() == group && r.version() == version)
        .map(|r| {
            let mut doc = json!({
                "name": r.plural(),
                "singularName": r.kind().to_lowercase(),
                "namespaced": r.namespaced(),
                "kind": r.kind(),
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            });
            match r {
                Resource::ConfigMap => doc["shortNames"] = json!(["cm"]),
                Resource::Event => doc["shortNames"] = json!(["ev"]),
                Resource::EventV1 => doc["shortNames"] = json!(["ev"]),
                Resource::Namespace => doc["shortNames"] = json!(["ns"]),
                Resource::Node => doc["shortNames"] = json!(["no"]),
                Resource::Lease
                | Resource::LeaseCandidate
                | Resource::ValidatingAdmissionPolicy
                | Resource::ValidatingAdmissionPolicyBinding => {}
            }
            doc
        })
        .collect();
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}
