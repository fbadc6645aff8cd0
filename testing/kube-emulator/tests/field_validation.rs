//! `fieldValidation` on create, update and patch, and the OpenAPI v3
//! documents that tell clients about it, over HTTP through the kube client.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::client::Body;
use kube_emulator::{Emulator, Resource};
use serde_json::{Value, json};

const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

/// An answer read whole: status, `Warning` headers, body as JSON.
struct Answer {
    code: u16,
    warnings: Vec<String>,
    body: Value,
}

async fn send(client: &kube::Client, request: http::Request<Vec<u8>>) -> Answer {
    let (parts, body) = request.into_parts();
    let resp = client
        .send(http::Request::from_parts(parts, Body::from(body)))
        .await
        .expect("an HTTP answer");
    let code = resp.status().as_u16();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().expect("ASCII").to_owned())
        .collect();
    let bytes = resp.into_body().collect_bytes().await.expect("a body");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer {
        code,
        warnings,
        body,
    }
}

fn json_request(
    method: &str,
    uri: &str,
    content_type: &str,
    body: &Value,
) -> http::Request<Vec<u8>> {
    http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(serde_json::to_vec(body).expect("JSON"))
        .expect("request")
}

fn post(uri: &str, body: &Value) -> http::Request<Vec<u8>> {
    json_request("POST", uri, "application/json", body)
}

fn misspelled(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
        "data": {"a": "b"}, "datta": {"a": "b"}})
}

#[tokio::test]
async fn create_strict_refuses_warn_warns_and_ignore_drops() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("fields").expect("client");

    let strict = send(
        &client,
        post(
            &format!("{CONFIG_MAPS}?fieldValidation=Strict"),
            &misspelled("strict"),
        ),
    )
    .await;
    assert_eq!(strict.code, 400);
    assert_eq!(strict.body["reason"], "BadRequest");
    assert_eq!(
        strict.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"datta\""
    );
    assert!(
        emu.object(Resource::ConfigMap, "default", "strict")
            .is_none()
    );

    let warn = send(
        &client,
        post(
            &format!("{CONFIG_MAPS}?fieldValidation=Warn"),
            &misspelled("warn"),
        ),
    )
    .await;
    assert_eq!(warn.code, 201);
    assert_eq!(warn.warnings, [r#"299 - "unknown field \"datta\"""#]);
    assert!(warn.body.get("datta").is_none(), "dropped: {}", warn.body);
    assert_eq!(warn.body["data"], json!({"a": "b"}));

    // No parameter: the server's default, Warn.
    let default = send(&client, post(CONFIG_MAPS, &misspelled("default"))).await;
    assert_eq!(default.code, 201);
    assert_eq!(default.warnings, warn.warnings);

    let ignore = send(
        &client,
        post(
            &format!("{CONFIG_MAPS}?fieldValidation=Ignore"),
            &misspelled("ignore"),
        ),
    )
    .await;
    assert_eq!(ignore.code, 201);
    assert!(ignore.warnings.is_empty(), "{:?}", ignore.warnings);
    let stored = emu
        .object(Resource::ConfigMap, "default", "ignore")
        .expect("stored");
    assert!(stored.get("datta").is_none(), "{stored}");

    // A body with only known fields (a typed object) is accepted under Strict,
    // server-set fields included.
    let api: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let mut typed = api.get("ignore").await.expect("get");
    typed.metadata.name = Some("typed".into());
    typed.metadata.resource_version = None;
    typed.metadata.uid = None;
    let body = serde_json::to_value(&typed).expect("JSON");
    let answer = send(
        &client,
        post(&format!("{CONFIG_MAPS}?fieldValidation=Strict"), &body),
    )
    .await;
    assert_eq!(answer.code, 201, "{}", answer.body);

    let bad = send(
        &client,
        post(
            &format!("{CONFIG_MAPS}?fieldValidation=Loose"),
            &misspelled("loose"),
        ),
    )
    .await;
    assert_eq!(
        (bad.code, bad.body["reason"].as_str()),
        (422, Some("Invalid"))
    );
    assert_eq!(
        bad.body["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
    );
}

#[tokio::test]
async fn update_and_patch_honour_field_validation() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("fields").expect("client");
    let leases: Api<Lease> = Api::default_namespaced(client.clone());
    let mut lease = Lease::default();
    lease.metadata.name = Some("lock".into());
    leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("create");

    let body = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "lock"}, "spec": {"holderIdentity": "a", "foo": 1}});
    let put = |validation: &str| {
        json_request(
            "PUT",
            &format!("{LEASES}/lock?fieldValidation={validation}"),
            "application/json",
            &body,
        )
    };
    let strict = send(&client, put("Strict")).await;
    assert_eq!(
        (strict.code, strict.body["reason"].as_str()),
        (400, Some("BadRequest"))
    );
    assert_eq!(
        strict.body["message"],
        "Lease in version \"v1\" cannot be handled as a Lease: strict decoding error: unknown field \"spec.foo\""
    );
    let warn = send(&client, put("Warn")).await;
    assert_eq!(warn.code, 200);
    assert_eq!(warn.warnings, [r#"299 - "unknown field \"spec.foo\"""#]);
    assert_eq!(warn.body["spec"], json!({"holderIdentity": "a"}));

    // Patches: the unknown fields of the patched object, refused with 422.
    let patch = json!({"spec": {"holderIdentity": "b", "foo": 1}});
    let status = match leases
        .patch(
            "lock",
            &PatchParams::default().validation_strict(),
            &Patch::Merge(&patch),
        )
        .await
        .expect_err("strict")
    {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other:?}"),
    };
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status
            .message
            .starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
        "{}",
        status.message
    );
    assert!(
        status
            .message
            .ends_with("\": strict decoding error: unknown field \"spec.foo\""),
        "{}",
        status.message
    );
    let status = match leases
        .patch(
            "lock",
            &PatchParams::default().validation_strict(),
            &Patch::Strategic(&patch),
        )
        .await
        .expect_err("strict")
    {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other:?}"),
    };
    assert_eq!(
        status.message,
        " \"\" is invalid: patch: Invalid value: \"map[spec:map[foo:1 holderIdentity:b]]\": strict decoding error: unknown field \"spec.foo\""
    );
    let unchanged = emu
        .object(Resource::Lease, "default", "lock")
        .expect("stored");
    assert_eq!(unchanged["spec"]["holderIdentity"], "a");

    let warned = send(
        &client,
        json_request(
            "PATCH",
            &format!("{LEASES}/lock?fieldValidation=Warn"),
            "application/merge-patch+json",
            &patch,
        ),
    )
    .await;
    assert_eq!(warned.code, 200);
    assert_eq!(warned.warnings, [r#"299 - "unknown field \"spec.foo\"""#]);
    let ignored = leases
        .patch(
            "lock",
            &PatchParams::default().validation_ignore(),
            &Patch::Merge(json!({"spec": {"holderIdentity": "c", "bar": true}})),
        )
        .await
        .expect("ignored");
    assert_eq!(
        ignored.spec.expect("spec").holder_identity.as_deref(),
        Some("c")
    );
    let stored = emu
        .object(Resource::Lease, "default", "lock")
        .expect("stored");
    assert_eq!(stored["spec"], json!({"holderIdentity": "c"}));
}
