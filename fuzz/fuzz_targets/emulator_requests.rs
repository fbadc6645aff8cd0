//! The kube emulator's reading of requests: a sequence of requests (method,
//! path, query, content type, a body in JSON, protobuf or raw bytes)
//! answered by one fresh store, without HTTP or faults, so that objects
//! created early are updated, patched, listed with selectors, deleted and
//! admitted by policies later; and the request decoders alone (JSON bodies,
//! protobuf refused, label and field selectors, merge and JSON patches, RFC 3339
//! times, versions, `fieldValidation`).
//!
//! Invariants: no panic on any input (a panic is a finding); every answer's
//! code is an HTTP status, and a failure is a `metav1.Status` with its code; a
//! merge patch applied twice is the patch applied once (RFC 7386); a JSON
//! patch of `test` operations only leaves the document as it was; a time the
//! emulator reads, written back as a `MicroTime` within the years 0 to 9999,
//! reads back as that time at the microsecond.
#![no_main]

use arbitrary::Arbitrary;
use kube_emulator::fuzzing::{self, Server};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

/// Words that the emulator's readers look for (keys, values, paths).
const WORDS: &[&str] = &[
    "metadata",
    "name",
    "namespace",
    "spec",
    "holderIdentity",
    "leaseDurationSeconds",
    "acquireTime",
    "renewTime",
    "leaseTransitions",
    "preferredHolder",
    "strategy",
    "labels",
    "annotations",
    "resourceVersion",
    "uid",
    "ownerReferences",
    "finalizers",
    "data",
    "binaryData",
    "immutable",
    "kind",
    "apiVersion",
    "op",
    "path",
    "value",
    "from",
    "add",
    "remove",
    "replace",
    "move",
    "copy",
    "test",
    "/metadata/labels",
    "/spec",
    "",
    "/",
    "-",
    "/metadata/name",
    "/data/a",
    "2026-01-01T00:00:00.000000Z",
    "2026-01-01T00:00:00Z",
    "validations",
    "expression",
    "message",
    "messageExpression",
    "reason",
    "matchConstraints",
    "resourceRules",
    "apiGroups",
    "apiVersions",
    "resources",
    "operations",
    "*",
    "CREATE",
    "UPDATE",
    "DELETE",
    "policyName",
    "validationActions",
    "Deny",
    "Warn",
    "Audit",
    "paramKind",
    "paramRef",
    "variables",
    "matchConditions",
    "failurePolicy",
    "Fail",
    "Ignore",
    "namespaceSelector",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "In",
    "NotIn",
    "Exists",
    "DoesNotExist",
    "values",
    "object.spec.holderIdentity == 'a'",
    "has(object.metadata.labels)",
    "request.userInfo.username",
    "variables.x",
    "1 + 1",
    "object.metadata.name.size() < 10",
    "leaseName",
    "binaryVersion",
    "emulationVersion",
    "pingTime",
    "OldestEmulationVersion",
    "1.34.0",
    "1.33.0",
    "v1",
    "coordination.k8s.io/v1",
    "a",
    "b",
    "default",
    "kube-system",
    "lock",
    "propagationPolicy",
    "Orphan",
    "Foreground",
    "preconditions",
    "dryRun",
    "All",
    "replicas",
    "selector",
    "template",
    "containers",
    "image",
    "minAvailable",
    "maxUnavailable",
    "rules",
    "verbs",
    "get",
    "roleRef",
    "subjects",
    "taints",
    "effect",
    "NoSchedule",
    "unschedulable",
    "podCIDR",
    "controller",
    "blockOwnerDeletion",
];

#[derive(Arbitrary, Debug)]
enum J {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Word(u8),
    Text(String),
    Array(Vec<J>),
    Object(Vec<(Key, J)>),
}

#[derive(Arbitrary, Debug)]
enum Key {
    Word(u8),
    Text(String),
}

fn word(i: u8) -> &'static str {
    WORDS[usize::from(i) % WORDS.len()]
}

impl Key {
    fn text(&self) -> String {
        match self {
            Key::Word(i) => word(*i).to_owned(),
            Key::Text(s) => s.clone(),
        }
    }
}

impl J {
    /// As JSON, at most `depth` levels deep.
    fn value(&self, depth: u8) -> Value {
        match self {
            _ if depth == 0 => Value::Null,
            J::Null => Value::Null,
            J::Bool(b) => Value::Bool(*b),
            J::Int(n) => json!(n),
            J::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
            J::Word(i) => Value::from(word(*i)),
            J::Text(s) => Value::from(s.as_str()),
            J::Array(items) => items.iter().take(16).map(|j| j.value(depth - 1)).collect(),
            J::Object(fields) => Value::Object(
                fields
                    .iter()
                    .take(16)
                    .map(|(k, j)| (k.text(), j.value(depth - 1)))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }
}

/// The collections a request may name, with a body for each that is valid.
fn template(i: u8) -> (&'static str, Value) {
    let all = [
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "lock", "labels": {"a": "b"}},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                     "acquireTime": "2026-01-01T00:00:00.000000Z",
                     "renewTime": "2026-01-01T00:00:00.000000Z", "leaseTransitions": 1}}),
        ),
        (
            "/api/v1/namespaces/default/configmaps",
            json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "lock", "annotations": {"control-plane.alpha.kubernetes.io/leader": "{}"}},
            "data": {"a": "b"}}),
        ),
        (
            "/apis/coordination.k8s.io/v1beta1/namespaces/default/leasecandidates",
            json!({
            "apiVersion": "coordination.k8s.io/v1beta1", "kind": "LeaseCandidate",
            "metadata": {"name": "a"},
            "spec": {"leaseName": "lock", "binaryVersion": "1.34.0", "emulationVersion": "1.33.0",
                     "strategy": "OldestEmulationVersion", "renewTime": "2026-01-01T00:00:00.000000Z"}}),
        ),
        (
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "a", "labels": {"a": "b"}}}),
        ),
        (
            "/api/v1/nodes",
            json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "a"}, "spec": {"podCIDR": "10.0.0.0/24",
            "taints": [{"key": "a", "effect": "NoSchedule"}]}}),
        ),
        (
            "/api/v1/namespaces/default/events",
            json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "a"}, "reason": "LeaderElection", "message": "a became leader",
            "involvedObject": {"kind": "Lease", "name": "lock", "namespace": "default"}}),
        ),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"apiVersion": "apps/v1",
            "kind": "Deployment", "metadata": {"name": "a"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                     "template": {"metadata": {"labels": {"a": "b"}},
                                  "spec": {"containers": [{"name": "a", "image": "a:1"}]}}}}),
        ),
        (
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
            json!({"apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget", "metadata": {"name": "a"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}}),
        ),
        (
            "/api/v1/namespaces/default/serviceaccounts",
            json!({"apiVersion": "v1",
            "kind": "ServiceAccount", "metadata": {"name": "a"}}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "a"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "a"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "a"},
            "subjects": [{"kind": "ServiceAccount", "name": "a", "namespace": "default"}]}),
        ),
        (
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
            json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "a"},
            "spec": {"failurePolicy": "Fail",
                     "matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
                         "resources": ["*"], "operations": ["*"]}]},
                     "variables": [{"name": "x", "expression": "object.metadata.name"}],
                     "validations": [{"expression": "variables.x != 'b'", "message": "no"}]}}),
        ),
        (
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
            json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "a"},
            "spec": {"policyName": "a", "validationActions": ["Deny"]}}),
        ),
    ];
    all[usize::from(i) % all.len()].clone()
}

#[derive(Arbitrary, Debug)]
enum Body {
    None,
    /// The collection's template, with values set at JSON pointers.
    Template(Vec<(Vec<Key>, J)>),
    Json(J),
    /// A protobuf body (the magic prepended when asked).
    Protobuf(bool, Vec<u8>),
    Raw(Vec<u8>),
}

#[derive(Arbitrary, Debug)]
enum Target {
    Collection,
    Object(Option<String>),
    Raw(String),
}

const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "text/plain",
];
const PARAMS: &[&str] = &[
    "fieldSelector",
    "labelSelector",
    "watch",
    "resourceVersion",
    "resourceVersionMatch",
    "limit",
    "continue",
    "fieldValidation",
    "dryRun",
    "timeoutSeconds",
    "allowWatchBookmarks",
    "sendInitialEvents",
];

#[derive(Arbitrary, Debug)]
struct Request {
    client: bool,
    method: u8,
    collection: u8,
    target: Target,
    query: Vec<(u8, Key)>,
    raw_query: Option<String>,
    content_type: Option<u8>,
    body: Body,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Request(Request),
    Body(Option<u8>, Vec<u8>),
    Selects(Option<String>, Option<String>, J),
    MergePatch(J, J),
    JsonPatch(J, J),
    GoFormat(J),
    Time(String),
    Version(String),
    FieldValidation(Option<String>),
}

fn set(doc: &mut Value, path: &[Key], value: Value) {
    let mut cur = doc;
    for key in path.iter().take(6) {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        cur = cur
            .as_object_mut()
            .expect("an object")
            .entry(key.text())
            .or_insert(Value::Null);
    }
    *cur = value;
}

fn request(server: &Server, r: &Request) {
    let (collection, template) = template(r.collection);
    let path = match &r.target {
        Target::Collection => collection.to_owned(),
        Target::Object(name) => {
            let name = name.clone().unwrap_or_else(|| {
                template["metadata"]["name"]
                    .as_str()
                    .unwrap_or("a")
                    .to_owned()
            });
            format!("{collection}/{name}")
        }
        Target::Raw(p) => p.clone(),
    };
    let mut query: Vec<String> = r
        .query
        .iter()
        .take(8)
        .map(|(k, v)| format!("{}={}", PARAMS[usize::from(*k) % PARAMS.len()], v.text()))
        .collect();
    query.extend(r.raw_query.clone());
    let query = query.join("&");
    let body = match &r.body {
        Body::None => Vec::new(),
        Body::Template(sets) => {
            let mut doc = template;
            for (path, j) in sets.iter().take(8) {
                set(&mut doc, path, j.value(6));
            }
            serde_json::to_vec(&doc).expect("JSON serialises")
        }
        Body::Json(j) => serde_json::to_vec(&j.value(8)).expect("JSON serialises"),
        Body::Protobuf(magic, bytes) => {
            let mut out = if *magic {
                b"k8s\0".to_vec()
            } else {
                Vec::new()
            };
            out.extend_from_slice(bytes);
            out
        }
        Body::Raw(bytes) => bytes.clone(),
    };
    let content_type = r
        .content_type
        .map(|i| CONTENT_TYPES[usize::from(i) % CONTENT_TYPES.len()]);
    let method = METHODS[usize::from(r.method) % METHODS.len()];
    let client = if r.client { "a" } else { "b" };
    let target = if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    };
    let (code, answer) = server.request(client, method, &target, content_type, &body);
    assert!((100..=599).contains(&code), "{code}");
    if code >= 400 && code != 405 {
        assert_eq!(answer["kind"], "Status", "{code} {answer}");
        assert_eq!(answer["code"], code, "{answer}");
    }
}

/// Year 0 to year 9999, what `MicroTime`'s four-digit year can hold.
const FOUR_DIGIT_YEARS: std::ops::RangeInclusive<i64> = -62_167_219_200..=253_402_300_799;

fuzz_target!(|ops: Vec<Op>| {
    let server = Server::new();
    for op in ops.iter().take(32) {
        match op {
            Op::Request(r) => request(&server, r),
            Op::Body(content_type, bytes) => {
                let content_type =
                    content_type.map(|i| CONTENT_TYPES[usize::from(i) % CONTENT_TYPES.len()]);
                if let Err(refused) = fuzzing::decode_body(content_type, bytes) {
                    assert!(matches!(refused.code, 400 | 415), "{refused:?}");
                }
            }
            Op::Selects(field, label, object) => {
                let _ = fuzzing::selects(field.as_deref(), label.as_deref(), &object.value(8));
            }
            Op::MergePatch(target, patch) => {
                let (mut once, patch) = (target.value(8), patch.value(8));
                fuzzing::merge_patch(&mut once, &patch);
                let mut twice = once.clone();
                fuzzing::merge_patch(&mut twice, &patch);
                assert_eq!(once, twice, "a merge patch is idempotent");
            }
            Op::JsonPatch(doc, patch) => {
                let (doc, patch) = (doc.value(8), patch.value(8));
                let tests_only = patch
                    .as_array()
                    .is_some_and(|ops| ops.iter().all(|op| op["op"] == "test"));
                if let Ok(out) = fuzzing::json_patch(&doc, &patch)
                    && tests_only
                {
                    assert_eq!(out, doc);
                }
            }
            Op::GoFormat(j) => {
                let _ = fuzzing::go_format(&j.value(8));
            }
            Op::Time(text) => {
                if let Some((secs, nanos, micro)) = fuzzing::parse_time(text) {
                    assert!(nanos < 1_000_000_000);
                    if FOUR_DIGIT_YEARS.contains(&secs) {
                        let back = fuzzing::parse_time(&micro).map(|(s, n, _)| (s, n));
                        assert_eq!(
                            back,
                            Some((secs, nanos / 1_000 * 1_000)),
                            "{text:?} -> {micro}"
                        );
                    }
                }
            }
            Op::Version(text) => {
                let _ = fuzzing::versions(text);
            }
            Op::FieldValidation(value) => {
                if let Err(refused) = fuzzing::field_validation(value.as_deref()) {
                    assert_eq!(refused.code, 422);
                }
            }
        }
    }
});
