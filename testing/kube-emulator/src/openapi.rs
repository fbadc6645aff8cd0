//! OpenAPI v3 discovery, enough for clients to learn that writes take
//! `fieldValidation`: `GET /openapi/v3` and one document per served
//! group-version (`/openapi/v3/api/v1`, `/openapi/v3/apis/coordination.k8s.io/v1`,
//! `/openapi/v3/apis/events.k8s.io/v1`).
//!
//! kubectl validates what it sends (`--validate=strict`, its default) by
//! asking the server to: it reads these documents (cli-runtime's
//! `resource/query_param_verifier_v3.go`, through client-go's `openapi` and
//! `openapi3` packages), finds the PATCH operation whose
//! `x-kubernetes-group-version-kind` is the object's, and, when that
//! operation lists a `fieldValidation` parameter, sends
//! `?fieldValidation=Strict` instead of downloading the full schema (OpenAPI
//! v2, which the emulator does not serve) to validate on its side.
//!
//! **These are not full schemas.** A document holds the paths of the served
//! resources (the emulator's routes: collection, object and, for namespaced
//! kinds, the list across namespaces), each with the operations served there
//! and nothing more: `x-kubernetes-action`, `x-kubernetes-group-version-kind`,
//! the path parameters, `fieldValidation` on POST, PUT and PATCH, the patch
//! media types accepted (no `application/apply-patch+yaml`: server-side
//! apply is not served), and a bare response. No other query parameter is
//! listed (the emulator honours several), `components` is empty: no object
//! schema, so `kubectl explain` has nothing to show. What the emulator
//! checks of a body is in [`crate::validation`].
//!
//! As the real server (`k8s.io/kube-openapi/pkg/handler3`) does, the root
//! names each document by a `serverRelativeURL` with a `hash` query, a
//! document asked for under another hash answers 301 to the current URL, and
//! one asked for in a media type other than JSON answers 406. The real hash is
//! the SHA-512 of the document; the emulator's is a 64-bit FNV-1a of it, as
//! good a cache key for a client, which compares it and nothing more.

use serde_json::{Map, Value, json};

use crate::patch::MEDIA_TYPES;
use crate::resource::Resource;

/// The key of a group-version in the root document, and its path after
/// `/openapi/v3/`: `api/v1`, `apis/coordination.k8s.io/v1`.
fn key_of(resource: Resource) -> String {
    if resource.group().is_empty() {
        format!("api/{}", resource.version())
    } else {
        format!("apis/{}/{}", resource.group(), resource.version())
    }
}

/// The served group-versions, each once, in the order of [`Resource::ALL`].
fn keys() -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for &r in Resource::ALL {
        let key = key_of(r);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// FNV-1a (64 bits) of the document's bytes, in upper-case hex as the real
/// server writes its hash.
fn hash(document: &Value) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in document.to_string().bytes() {
        h ^= u64::from(byte);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016X}")
}

fn url(key: &str, document: &Value) -> String {
    format!("/openapi/v3/{key}?hash={}", hash(document))
}

/// `GET /openapi/v3`: every served group-version and where its document is.
pub(crate) fn root() -> Value {
    let paths: Map<String, Value> = keys()
        .into_iter()
        .filter_map(|key| {
            let doc = document(&key)?;
            let entry = json!({"serverRelativeURL": url(&key, &doc)});
            Some((key, entry))
        })
        .collect();
    json!({"paths": paths})
}

/// What `GET /openapi/v3/<key>` answers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// 200 with the document.
    Document(Value),
    /// 301 to the document's current URL: the `hash` asked for is not its.
    Moved(String),
    /// 406: the client takes no JSON.
    NotAcceptable,
}

/// The answer for the group-version `key` (`api/v1`), asked for with the
/// `hash` query and `Accept` header given; `None` for a group-version not served.
pub(crate) fn group_version(
    key: &str,
    hash_asked: Option<&str>,
    accept: Option<&str>,
) -> Option<Answer> {
    let doc = document(key)?;
    if !accepts_json(accept) {
        return Some(Answer::NotAcceptable);
    }
    if let Some(asked) = hash_asked
        && asked != hash(&doc)
    {
        return Some(Answer::Moved(url(key, &doc)));
    }
    Some(Answer::Document(doc))
}

/// Whether an `Accept` header takes JSON (no header takes anything).
fn accepts_json(accept: Option<&str>) -> bool {
    accept.is_none_or(|header| {
        header.split(',').any(|item| {
            let media = item.split(';').next().unwrap_or("").trim();
            matches!(media, "application/json" | "application/*" | "*/*")
        })
    })
}

/// The OpenAPI 3 document of the group-version `key`.
fn document(key: &str) -> Option<Value> {
    let served: Vec<Resource> = Resource::ALL
        .iter()
        .copied()
        .filter(|r| key_of(*r) == key)
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    for r in served {
        resource_paths(r, &mut paths);
    }
    let version = crate::discovery::version()["gitVersion"].clone();
    Some(json!({
        "openapi": "3.0.0",
        "info": {
            "title": "Kubernetes",
            "version": version,
            "description": "kube-emulator: the served paths and operations with their fieldValidation parameter; no object schemas",
        },
        "paths": paths,
        "components": {},
    }))
}

fn path_parameter(name: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}})
}

/// One operation of `resource`: `action` is its `x-kubernetes-action`
/// (`list`, `post`, `get`, `put`, `patch`, `delete`).
fn operation(resource: Resource, action: &str) -> Value {
    let (code, description) = if action == "post" {
        ("201", "Created")
    } else {
        ("200", "OK")
    };
    let mut op = json!({
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {
            "group": resource.group(),
            "version": resource.version(),
            "kind": resource.kind(),
        },
        "responses": {code: {"description": description}},
    });
    if matches!(action, "post" | "put" | "patch") {
        op["parameters"] = json!([{
            "name": "fieldValidation",
            "in": "query",
            "description": "What to do with fields the kind does not have: Ignore drops them; Warn (the default) drops them and answers a Warning header for each; Strict refuses the request (400, or 422 for a patch).",
            "schema": {"type": "string"},
        }]);
    }
    if action == "patch" {
        let content: Map<String, Value> = MEDIA_TYPES
            .iter()
            .map(|m| ((*m).to_owned(), json!({})))
            .collect();
        op["requestBody"] = json!({"content": content, "required": true});
    }
    op
}

/// The paths at which `resource` is served, with their operations.
fn resource_paths(r: Resource, paths: &mut Map<String, Value>) {
    let base = format!("/{}", key_of(r));
    let plural = r.plural();
    let object_ops = |params: Value| {
        json!({
            "parameters": params,
            "get": operation(r, "get"),
            "put": operation(r, "put"),
            "patch": operation(r, "patch"),
            "delete": operation(r, "delete"),
        })
    };
    if r.namespaced() {
        paths.insert(
            format!("{base}/namespaces/{{namespace}}/{plural}"),
            json!({
                "parameters": [path_parameter("namespace")],
                "get": operation(r, "list"),
                "post": operation(r, "post"),
            }),
        );
        paths.insert(
            format!("{base}/namespaces/{{namespace}}/{plural}/{{name}}"),
            object_ops(json!([path_parameter("name"), path_parameter("namespace")])),
        );
        paths.insert(
            format!("{base}/{plural}"),
            json!({"get": operation(r, "list")}),
        );
    } else {
        paths.insert(
            format!("{base}/{plural}"),
            json!({"get": operation(r, "list"), "post": operation(r, "post")}),
        );
        paths.insert(
            format!("{base}/{plural}/{{name}}"),
            object_ops(json!([path_parameter("name")])),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What cli-runtime's verifier does with a document: the PATCH operation
    /// of the kind, and whether it takes `fieldValidation`.
    fn patch_takes_field_validation(doc: &Value, r: Resource) -> bool {
        doc["paths"]
            .as_object()
            .expect("paths")
            .values()
            .filter_map(|item| item.get("patch"))
            .find(|op| {
                let gvk = &op["x-kubernetes-group-version-kind"];
                gvk["group"] == r.group()
                    && gvk["version"] == r.version()
                    && gvk["kind"] == r.kind()
            })
            .is_some_and(|op| {
                op["parameters"]
                    .as_array()
                    .expect("parameters")
                    .iter()
                    .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
            })
    }

    #[test]
    fn root_names_a_document_per_group_version_with_its_hash() {
        let root = root();
        let paths = root["paths"].as_object().expect("paths");
        let keys: Vec<&str> = paths.keys().map(String::as_str).collect();
        let expected: &[&str] = &[
            "api/v1",
            "apis/admissionregistration.k8s.io/v1",
            #[cfg(feature = "workloads")]
            "apis/apps/v1",
            "apis/coordination.k8s.io/v1",
            "apis/coordination.k8s.io/v1beta1",
            "apis/events.k8s.io/v1",
            #[cfg(feature = "workloads")]
            "apis/policy/v1",
            #[cfg(feature = "workloads")]
            "apis/rbac.authorization.k8s.io/v1",
        ];
        assert_eq!(keys, expected);
        for (key, entry) in paths {
            let url = entry["serverRelativeURL"].as_str().expect("url");
            let doc = document(key).expect("served");
            assert_eq!(url, format!("/openapi/v3/{key}?hash={}", hash(&doc)));
            assert_eq!(hash(&doc).len(), 16);
        }
    }

    #[test]
    fn every_served_kind_patches_with_field_validation() {
        for &r in Resource::ALL {
            let doc = document(&key_of(r)).expect("served");
            assert!(patch_takes_field_validation(&doc, r), "{r}");
        }
        let core = document("api/v1").expect("core");
        let item = &core["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"];
        assert_eq!(item["put"]["x-kubernetes-action"], "put");
        assert_eq!(
            item["patch"]["requestBody"]["content"]
                .as_object()
                .expect("content")
                .keys()
                .collect::<Vec<_>>(),
            [
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json"
            ]
        );
        assert!(core["paths"]["/api/v1/nodes/{name}"]["patch"].is_object());
        assert!(core["paths"]["/api/v1/configmaps"]["post"].is_null());
        assert_eq!(core["components"], json!({}));
    }

    #[test]
    fn hash_and_accept_are_checked() {
        let doc = document("apis/coordination.k8s.io/v1").expect("served");
        let good = hash(&doc);
        assert_eq!(
            group_version("apis/coordination.k8s.io/v1", Some(&good), None),
            Some(Answer::Document(doc.clone()))
        );
        assert_eq!(
            group_version(
                "apis/coordination.k8s.io/v1",
                Some("0"),
                Some("application/json")
            ),
            Some(Answer::Moved(format!(
                "/openapi/v3/apis/coordination.k8s.io/v1?hash={good}"
            )))
        );
        assert_eq!(
            group_version(
                "apis/coordination.k8s.io/v1",
                None,
                Some("application/com.github.proto-openapi.spec.v3.v1.0+protobuf")
            ),
            Some(Answer::NotAcceptable)
        );
        assert_eq!(group_version("apis/batch/v1", None, None), None);
    }
}
