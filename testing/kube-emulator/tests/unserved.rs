//! What the emulator does not serve is refused with a `metav1.Status`, never
//! a panic: a kind or an API group it does not serve (those a deployment of a
//! controller is made of, as Deployments, PodDisruptionBudgets, Pods,
//! ServiceAccounts, Roles and RoleBindings, or any other) with a 404
//! `NotFound` that names the resource and says to test it on kube-apiserver;
//! a path outside the API with the API server's bare 404.

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, PostParams};
use kube::client::Body;
use kube_emulator::Emulator;
use serde_json::{Value, json};

/// The code and the JSON body of `GET`/`POST` `uri` (`body`, if any).
async fn send(client: &kube::Client, method: &str, uri: &str, body: Option<Value>) -> (u16, Value) {
    let request = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", "application/json")
        .body(Body::from(
            body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
        ))
        .expect("a request");
    let resp = client.send(request).await.expect("an HTTP answer");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect_bytes().await.expect("a body");
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    })
}

/// Every path of those kinds (collection, object, across namespaces; POST,
/// GET, PUT, DELETE) and the discovery of their API groups answer 404
/// `NotFound` in a `Status` that names the resource and where to test it;
/// the discovery of the groups served leaves them out, and the kube client
/// gets the `Status` as its error.
#[tokio::test]
async fn a_kind_not_served_is_refused_with_a_status_saying_where_to_test_it() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("unserved").expect("client");
    let deployments = "the server could not find the requested resource: deployments.apps is not served by kube-emulator, which serves the kinds of leader election only; test this on kube-apiserver";
    for (method, uri, body) in [
        (
            "POST",
            "/apis/apps/v1/namespaces/default/deployments",
            Some(deployment()),
        ),
        ("GET", "/apis/apps/v1/namespaces/default/deployments", None),
        (
            "GET",
            "/apis/apps/v1/namespaces/default/deployments/d",
            None,
        ),
        (
            "PUT",
            "/apis/apps/v1/namespaces/default/deployments/d",
            Some(deployment()),
        ),
        (
            "DELETE",
            "/apis/apps/v1/namespaces/default/deployments/d",
            None,
        ),
        ("GET", "/apis/apps/v1/deployments?watch=true", None),
    ] {
        let (code, status) = send(&client, method, uri, body).await;
        assert_eq!(code, 404, "{method} {uri}: {status}");
        assert_eq!(
            status,
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": deployments, "reason": "NotFound",
                "details": {"group": "apps", "kind": "deployments"}, "code": 404,
            }),
            "{method} {uri}"
        );
    }
    for (uri, what) in [
        (
            "/api/v1/namespaces/default/serviceaccounts",
            "serviceaccounts",
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/r",
            "roles.rbac.authorization.k8s.io",
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            "rolebindings.rbac.authorization.k8s.io",
        ),
        (
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
            "poddisruptionbudgets.policy",
        ),
        ("/api/v1/namespaces/default/pods/p", "pods"),
        ("/apis/batch/v1/namespaces/default/jobs", "jobs.batch"),
        ("/api/v1/namespaces/default/secrets/s", "secrets"),
        ("/apis/batch", "the API group \"batch\""),
        ("/apis/apps", "the API group \"apps\""),
        ("/apis/policy/v1", "the API group \"policy\""),
    ] {
        let (code, status) = send(&client, "GET", uri, None).await;
        assert_eq!(
            (code, &status["reason"]),
            (404, &json!("NotFound")),
            "{uri}"
        );
        assert_eq!(
            status["message"],
            format!(
                "the server could not find the requested resource: {what} is not served by kube-emulator, which serves the kinds of leader election only; test this on kube-apiserver"
            ),
            "{uri}"
        );
    }

    // The kube client sees the Status; nothing was stored or counted as a write.
    let api: Api<Deployment> = Api::default_namespaced(client.clone());
    let typed: Deployment = serde_json::from_value(deployment()).expect("a Deployment");
    match api.create(&PostParams::default(), &typed).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
            assert_eq!(s.message, deployments);
        }
        other => panic!("a 404 Status, got {other:?}"),
    }
    assert!(emu.write_history().is_empty(), "{:?}", emu.write_history());

    // Discovery names none of them: kubectl says it knows no such kind.
    let (_, groups) = send(&client, "GET", "/apis", None).await;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "coordination.k8s.io",
            "events.k8s.io",
            "admissionregistration.k8s.io"
        ]
    );
    let (_, core) = send(&client, "GET", "/api/v1", None).await;
    assert!(
        !core.to_string().contains("serviceaccounts"),
        "core discovery lists serviceaccounts: {core}"
    );
}

/// A path outside the API gets the API server's bare 404 `Status`.
#[tokio::test]
async fn a_path_outside_the_api_gets_the_bare_not_found_status() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("unknown").expect("client");
    for uri in ["/openapi/v3", "/openapi/v2"] {
        let (code, status) = send(&client, "GET", uri, None).await;
        assert_eq!(code, 404, "{uri}");
        assert_eq!(
            status["message"], "the server could not find the requested resource",
            "{uri}"
        );
    }
}
