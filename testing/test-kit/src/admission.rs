//! ValidatingAdmissionPolicy as the library's fencing users write it, checked
//! on any [`Server`]: the emulator (which evaluates policies itself) and
//! kube-apiserver (whose behaviour is the reference). Each check is one
//! function; the emulator's and the real server's tests call the same one.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use crate::apiserver::{ADMIN, Server};
use crate::runtimes::{compat, sleep};

/// Returns once `seen` (a probe, typically a dry-run write) says the server
/// enforces what was just written: kube-apiserver's admission sees a new
/// binding, or a new state of a policy's parameter, from its informers, a
/// little later (a binding about a second); the emulator at once.
///
/// # Panics
///
/// When `seen` is still false after 20 s, naming `what`.
pub async fn until_enforced(what: &str, mut seen: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !seen().await {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{what} is not enforced after 20 s"
        );
        sleep(Duration::from_millis(50)).await;
    }
}

/// Returns once `admin`'s dry-run create of a ConfigMap in `namespace` is
/// refused: a fence just applied there is enforced (an unstamped write, as the
/// admin's, is refused; with no Lease yet, every protected write is).
///
/// # Panics
///
/// When the create still passes after 20 s.
pub async fn until_configmaps_fenced(admin: kube::Client, namespace: &str) {
    let api: Api<ConfigMap> = Api::namespaced(admin, namespace);
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mut probe = ConfigMap::default();
    probe.metadata.name = Some("fence-probe".into());
    until_enforced(
        &format!("the fence of ConfigMaps in {namespace}"),
        async || api.create(&dry_run, &probe).await.is_err(),
    )
    .await;
}

/// A binding's `matchResources.objectSelector` takes only the objects whose
/// labels it selects (written or stored): a policy that refuses every
/// ConfigMap write, bound to the label `fenced: "yes"`, refuses the creation
/// of a labelled ConfigMap, an update that adds the label or removes it, and
/// the deletion of a labelled one; it admits every write of an unlabelled one
/// (`kubectl create configmap free-cm`).
pub async fn object_selector_takes_only_the_labelled_objects(server: &dyn Server) {
    let ns = server.namespace();
    let name = format!("refuse-labelled-{ns}");
    let policy = admission_object(
        "ValidatingAdmissionPolicy",
        &name,
        json!({
            "failurePolicy": "Fail",
            "matchConstraints": { "resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE", "DELETE"], "resources": ["configmaps"],
            }]},
            "validations": [{ "expression": "false", "message": "labelled: refused" }],
        }),
    );
    let binding = deny_binding(
        &name,
        json!({ "matchResources": {
            "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": ns } },
            "objectSelector": { "matchLabels": { "fenced": "yes" } },
        }}),
    );
    let admin = compat(async { server.client(ADMIN) }).await;
    let api: Api<ConfigMap> = Api::namespaced(admin.clone(), &ns);
    let configmap = |name: &str, labelled: bool| {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.to_owned());
        if labelled {
            cm.metadata.labels = Some([("fenced".to_owned(), "yes".to_owned())].into());
        }
        cm
    };
    let refused = |r: Result<ConfigMap, kube::Error>, what: &str| match r {
        Err(kube::Error::Api(s)) => assert!(
            s.message.contains("denied request: labelled: refused"),
            "{what}: {}",
            s.message
        ),
        other => panic!(
            "{what} on the {}: expected a refusal, got {other:?}",
            server.name()
        ),
    };
    compat(async {
        let pp = PostParams::default();
        // Made before the binding: a labelled ConfigMap.
        let old = api
            .create(&pp, &configmap("old-labelled", true))
            .await
            .expect("create old-labelled");
        for (path, body) in [
            (
                "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
                &policy,
            ),
            (
                "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
                &binding,
            ),
        ] {
            let request = http::Request::post(path)
                .header("content-type", "application/json")
                .body(serde_json::to_vec(body).expect("JSON"))
                .expect("a request");
            admin
                .request::<serde_json::Value>(request)
                .await
                .unwrap_or_else(|e| panic!("POST {path}: {e}"));
        }
        // kube-apiserver enforces a new binding once its informers saw it
        // (about a second); the emulator at once.
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        until_enforced("the binding", async || {
            api.create(&dry_run, &configmap("probe", true))
                .await
                .is_err()
        })
        .await;
        // Unlabelled: every write admitted.
        let mut free = api
            .create(&pp, &configmap("free-cm", false))
            .await
            .expect("create free-cm");
        free.data = Some([("k".to_owned(), "v".to_owned())].into());
        let free = api
            .replace("free-cm", &pp, &free)
            .await
            .expect("update free-cm");
        // Labelled: the creation refused; adding the label refused (the
        // object written is selected); removing it refused (the stored one
        // is); the deletion refused.
        refused(
            api.create(&pp, &configmap("fenced-cm", true)).await,
            "create labelled",
        );
        let mut labelled = free.clone();
        labelled.metadata.labels = configmap("", true).metadata.labels;
        refused(
            api.replace("free-cm", &pp, &labelled).await,
            "add the label",
        );
        let mut unlabelled = old.clone();
        unlabelled.metadata.labels = None;
        refused(
            api.replace("old-labelled", &pp, &unlabelled).await,
            "remove the label",
        );
        match api.delete("old-labelled", &DeleteParams::default()).await {
            Err(kube::Error::Api(s)) => assert!(
                s.message.contains("denied request: labelled: refused"),
                "delete labelled: {}",
                s.message
            ),
            other => panic!("delete labelled: expected a refusal, got {other:?}"),
        }
        api.delete("free-cm", &DeleteParams::default())
            .await
            .expect("delete free-cm");
        // The policy and its binding go (cluster-scoped: not with the namespace).
        for path in [
            format!(
                "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/{name}"
            ),
            format!("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{name}"),
        ] {
            let request = http::Request::delete(path.as_str())
                .body(Vec::new())
                .expect("a request");
            admin
                .request::<serde_json::Value>(request)
                .await
                .unwrap_or_else(|e| panic!("DELETE {path}: {e}"));
        }
    })
    .await;
}

/// The ValidatingAdmissionPolicyBinding `name` of the policy `name`, with the
/// action `Deny` and the fields of `more` (its `matchResources`, its `paramRef`)
/// in its spec.
fn deny_binding(name: &str, more: serde_json::Value) -> serde_json::Value {
    let mut spec = json!({ "policyName": name, "validationActions": ["Deny"] });
    if let (Some(spec), serde_json::Value::Object(more)) = (spec.as_object_mut(), more) {
        spec.extend(more);
    }
    admission_object("ValidatingAdmissionPolicyBinding", name, spec)
}

/// An `admissionregistration.k8s.io/v1` object of `kind`, named `name`, with
/// `spec`.
fn admission_object(kind: &str, name: &str, spec: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": { "name": name },
        "spec": spec,
    })
}

/// Creates `objects` (policies, bindings: JSON with `apiVersion` and `kind`)
/// as the admin; the first refusal, if any.
async fn create_all(
    admin: &kube::Client,
    objects: &[&serde_json::Value],
) -> Result<(), kube::Error> {
    for object in objects {
        let plural = match object["kind"].as_str() {
            Some("ValidatingAdmissionPolicy") => "validatingadmissionpolicies",
            _ => "validatingadmissionpolicybindings",
        };
        let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
        let request = http::Request::post(path.as_str())
            .header("content-type", "application/json")
            .body(serde_json::to_vec(object).expect("JSON"))
            .expect("a request");
        admin.request::<serde_json::Value>(request).await?;
    }
    Ok(())
}

/// A policy's `excludeResourceRules` and a binding's narrowing
/// `matchResources` (`resourceNames` in either) take writes out of the
/// policy: of a policy that refuses every ConfigMap creation, the ConfigMap
/// the policy excludes by name and the one the binding excludes are created;
/// any other is refused.
pub async fn exclude_rules_and_resource_names_narrow_a_policy(server: &dyn Server) {
    let ns = server.namespace();
    let name = format!("exclude-{ns}");
    let rule = |names: &[&str]| {
        json!({
            "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
            "resources": ["configmaps"], "resourceNames": names,
        })
    };
    let policy = admission_object(
        "ValidatingAdmissionPolicy",
        &name,
        json!({
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [rule(&[])],
                "excludeResourceRules": [rule(&["exempt-by-policy"])],
            },
            "validations": [{ "expression": "false", "message": "not excluded: refused" }],
        }),
    );
    let binding = deny_binding(
        &name,
        json!({ "matchResources": {
            "namespaceSelector": { "matchLabels": { "kubernetes.io/metadata.name": ns } },
            "resourceRules": [rule(&[])],
            "excludeResourceRules": [rule(&["exempt-by-binding"])],
        }}),
    );
    let admin = compat(async { server.client(ADMIN) }).await;
    compat(async {
        create_all(&admin, &[&policy, &binding])
            .await
            .expect("the policy and its binding are taken");
        let api: Api<ConfigMap> = Api::namespaced(admin.clone(), &ns);
        let configmap = |name: &str| {
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some(name.to_owned());
            cm
        };
        let dry_run = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        until_enforced("the binding", async || {
            api.create(&dry_run, &configmap("probe")).await.is_err()
        })
        .await;
        let pp = PostParams::default();
        for exempt in ["exempt-by-policy", "exempt-by-binding"] {
            api.create(&pp, &configmap(exempt))
                .await
                .unwrap_or_else(|e| panic!("{exempt} on the {}: {e}", server.name()));
        }
        match api.create(&pp, &configmap("other")).await {
            Err(kube::Error::Api(s)) => assert!(
                s.message.contains("denied request: not excluded: refused"),
                "{}",
                s.message
            ),
            other => panic!(
                "other on the {}: expected a refusal, got {other:?}",
                server.name()
            ),
        }
    })
    .await;
}

/// A binding that picks its parameters by label (`paramRef.selector`):
/// kube-apiserver takes it; the emulator, which does not serve it, refuses it
/// when written, saying so, rather than taking it and ignoring it.
pub async fn a_parameter_selector_is_taken_or_refused_saying_so(server: &dyn Server) {
    let ns = server.namespace();
    let name = format!("param-selector-{ns}");
    let policy = admission_object(
        "ValidatingAdmissionPolicy",
        &name,
        json!({
            "paramKind": { "apiVersion": "v1", "kind": "ConfigMap" },
            "matchConstraints": { "resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                "resources": ["secrets"],
            }]},
            "validations": [{ "expression": "true" }],
        }),
    );
    let binding = deny_binding(
        &name,
        json!({ "paramRef": {
            "namespace": ns,
            "selector": { "matchLabels": { "role": "limits" } },
            "parameterNotFoundAction": "Allow",
        }}),
    );
    let admin = compat(async { server.client(ADMIN) }).await;
    let taken = compat(create_all(&admin, &[&policy, &binding])).await;
    if server.is_emulator() {
        match taken {
            Err(kube::Error::Api(s)) => {
                assert_eq!(s.code, 422, "{s:?}");
                assert!(
                    s.message.contains("spec.paramRef.selector")
                        && s.message
                            .contains("not served by the kube-elector API emulator"),
                    "{}",
                    s.message
                );
            }
            other => panic!("the emulator refuses a parameter selector: {other:?}"),
        }
    } else {
        taken.expect("kube-apiserver takes a parameter selector");
    }
}
