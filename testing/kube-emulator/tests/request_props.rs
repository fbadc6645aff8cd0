//! Property tests of the emulator's reading of requests
//! (`kube_emulator::fuzzing`, the server's own steps without HTTP), the
//! stable counterpart of the fuzz target `emulator_requests`
//! (fuzz/README.md): arbitrary bodies (JSON, bytes), paths, query
//! strings, selectors and patches never panic; every failure is a
//! `metav1.Status` with its code, of the class the API server answers
//! (400 for what does not decode, 415 for a body it cannot read, 422 for
//! what is invalid); a merge patch is idempotent (RFC 7386); a JSON patch
//! that only tests leaves the object as it was; an object stays readable
//! whatever patch was refused or applied.

use kube_emulator::fuzzing::{self, Server};
use proptest::prelude::*;
use serde_json::{Value, json};

const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
const CONFIG_MAPS: &str = "/api/v1/namespaces/default/configmaps";

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        prop::sample::select(
            &[
                "",
                "a",
                "lock",
                "/spec",
                "/metadata/labels",
                "add",
                "copy",
                "test",
                "2026-01-01T00:00:00.000000Z"
            ][..]
        )
        .prop_map(Value::from),
        ".{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    prop::sample::select(
                        &[
                            "metadata",
                            "spec",
                            "name",
                            "labels",
                            "holderIdentity",
                            "op",
                            "path",
                            "value",
                            "from",
                            "data"
                        ][..]
                    )
                    .prop_map(str::to_owned),
                    ".{0,6}",
                ],
                inner,
                0..4,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn lease() -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "lock", "labels": {"app": "a"}},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
                 "renewTime": "2026-01-01T00:00:00.000000Z"}
    })
}

/// A failure is a Status with its code.
fn check(code: u16, body: &Value) -> Result<(), TestCaseError> {
    prop_assert!((200..600).contains(&code), "{code}");
    if code >= 400 {
        prop_assert_eq!(&body["kind"], "Status", "{} {}", code, body);
        prop_assert_eq!(&body["code"], code);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any bytes as the body of a create, as JSON or protobuf: created, or a
    /// Status of a class the API server answers.
    #[test]
    fn any_body_is_created_or_refused_with_a_status(
        body in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..128),
            json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
            prop::collection::vec(any::<u8>(), 0..64).prop_map(|b| [b"k8s\0".as_slice(), &b].concat()),
        ],
        protobuf in any::<bool>(),
        configmap in any::<bool>(),
    ) {
        let server = Server::new();
        let content_type = if protobuf { "application/vnd.kubernetes.protobuf" } else { "application/json" };
        let path = if configmap { CONFIG_MAPS } else { LEASES };
        let (code, answer) = server.request("a", "POST", path, Some(content_type), &body);
        check(code, &answer)?;
        prop_assert!(matches!(code, 201 | 400 | 409 | 415 | 422), "{code} {answer}");
    }

    /// A protobuf body is 415 whatever it holds (the emulator takes JSON only),
    /// unless it is empty.
    #[test]
    fn protobuf_bodies_are_refused(body in prop::collection::vec(any::<u8>(), 1..128), magic in any::<bool>()) {
        let body = if magic { [b"k8s\0".as_slice(), &body].concat() } else { body };
        let r = fuzzing::decode_body(Some("application/vnd.kubernetes.protobuf"), &body).unwrap_err();
        prop_assert_eq!(r.code, 415, "{:?}", r);
    }

    /// Any path, method and query string: an answer, never a panic.
    #[test]
    fn any_path_and_query_are_answered(
        method in prop::sample::select(&["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"][..]),
        path in prop_oneof![
            Just(LEASES.to_owned()),
            Just(format!("{LEASES}/lock")),
            Just("/api/v1/nodes".to_owned()),
            "(/[a-z0-9.%]{0,12}){0,6}",
        ],
        query in prop_oneof![
            ".{0,40}",
            (prop::sample::select(&["labelSelector", "fieldSelector", "limit", "continue", "resourceVersion", "resourceVersionMatch", "watch", "timeoutSeconds", "fieldValidation", "dryRun"][..]), ".{0,16}")
                .prop_map(|(k, v)| format!("{k}={v}")),
        ],
    ) {
        let server = Server::new();
        let (code, body) = server.request("a", "POST", LEASES, Some("application/json"), &serde_json::to_vec(&lease()).unwrap());
        prop_assert_eq!(code, 201, "{}", body);
        let target = format!("{path}?{query}");
        let (code, answer) = server.request("a", method, &target, Some("application/json"), b"");
        check(code, &answer)?;
    }

    /// Label and field selectors of any text parse or are a 400; what parses
    /// selects or not.
    #[test]
    fn selectors_parse_or_are_bad_requests(field in prop::option::of(".{0,24}"), label in prop::option::of(".{0,24}"), object in json_value()) {
        if let Err(r) = fuzzing::selects(field.as_deref(), label.as_deref(), &object) {
            prop_assert_eq!(r.code, 400);
        }
    }

    /// A merge patch applied twice is the patch applied once.
    #[test]
    fn merge_patches_are_idempotent(target in json_value(), patch in json_value()) {
        let mut once = target;
        fuzzing::merge_patch(&mut once, &patch);
        let mut twice = once.clone();
        fuzzing::merge_patch(&mut twice, &patch);
        prop_assert_eq!(once, twice);
    }

    /// A JSON patch of `test` operations only leaves the document as it was.
    #[test]
    fn json_patches_that_only_test_change_nothing(doc in json_value(), paths in prop::collection::vec(("(/[a-z]{0,3}){0,3}", json_value()), 0..4)) {
        let patch: Vec<Value> = paths.iter().map(|(path, value)| json!({"op": "test", "path": path, "value": value})).collect();
        if let Ok(out) = fuzzing::json_patch(&doc, &Value::Array(patch)) {
            prop_assert_eq!(out, doc);
        }
    }

    /// Any patch of a Lease, of either kind: applied or refused with a
    /// Status, and the Lease stays readable.
    #[test]
    fn any_patch_is_applied_or_refused_and_the_object_stays_readable(
        patch in json_value(),
        kind in prop::sample::select(&["application/merge-patch+json", "application/strategic-merge-patch+json", "application/json-patch+json"][..]),
    ) {
        let server = Server::new();
        let (code, _) = server.request("a", "POST", LEASES, Some("application/json"), &serde_json::to_vec(&lease()).unwrap());
        prop_assert_eq!(code, 201);
        let path = format!("{LEASES}/lock");
        let body = serde_json::to_vec(&patch).unwrap();
        let (code, answer) = server.request("a", "PATCH", &path, Some(kind), &body);
        check(code, &answer)?;
        prop_assert!(matches!(code, 200 | 400 | 409 | 422), "{code} {answer}");
        let (code, answer) = server.request("a", "GET", &path, None, b"");
        prop_assert_eq!(code, 200, "{}", answer);
    }

    /// RFC 3339 text: a time with a fraction below a second, which the
    /// emulator writes back as a `MicroTime` that reads as the same instant
    /// at the microsecond (years 0 to 9999).
    #[test]
    fn times_read_back_as_written(text in prop_oneof![
        ".{0,30}",
        "[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,12})?([Zz]|[+-][0-9]{2}:[0-9]{2})",
    ]) {
        if let Some((secs, nanos, micro)) = fuzzing::parse_time(&text) {
            prop_assert!(nanos < 1_000_000_000);
            if (-62_167_219_200..=253_402_300_799).contains(&secs) {
                let back = fuzzing::parse_time(&micro).map(|(s, n, _)| (s, n));
                prop_assert_eq!(back, Some((secs, nanos / 1_000 * 1_000)), "{} -> {}", text, micro);
            }
        }
    }

    /// `fieldValidation` of any text: one of the three, or 422.
    #[test]
    fn field_validation_is_one_of_three_or_invalid(value in prop::option::of(".{0,10}")) {
        let known = matches!(value.as_deref(), None | Some("" | "Warn" | "Ignore" | "Strict"));
        match fuzzing::field_validation(value.as_deref()) {
            Ok(()) => prop_assert!(known),
            Err(r) => {
                prop_assert!(!known);
                prop_assert_eq!(r.code, 422);
            }
        }
    }
}

/// Found by review of the fuzz target `emulator_requests`' patch decoding:
/// each `copy` of a part of the document into itself doubled that part, so 40
/// operations (a 2 KiB body) asked for 2^40 times the Lease's spec, and the
/// process ran out of memory. A patch whose copies add more than the
/// emulator's bound (3 MiB, the API server's request size limit) is refused
/// with 422, as json-patch refuses it, and the object is unchanged. (16
/// copies here: some 6 MB without the bound, which the test then sees stored.)
#[test]
fn a_json_patch_that_doubles_the_object_by_copies_is_refused() {
    let server = Server::new();
    let body = serde_json::to_vec(&lease()).unwrap();
    let (code, _) = server.request("a", "POST", LEASES, Some("application/json"), &body);
    assert_eq!(code, 201);
    let doubling: Vec<Value> = (0..16)
        .map(|i| json!({"op": "copy", "from": "/spec", "path": format!("/spec/c{i}")}))
        .collect();
    let path = format!("{LEASES}/lock");
    let patch = serde_json::to_vec(&doubling).unwrap();
    let (code, answer) = server.request(
        "a",
        "PATCH",
        &path,
        Some("application/json-patch+json"),
        &patch,
    );
    assert_eq!(code, 422, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("accumulated size increase of copy"),
        "{answer}"
    );
    let (code, answer) = server.request("a", "GET", &path, None, b"");
    assert_eq!(code, 200);
    assert!(answer["spec"].get("c0").is_none(), "{answer}");
    // The API server's bound on the number of operations: 413.
    let many: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/spec/holderIdentity", "value": "a"}))
        .collect();
    let patch = serde_json::to_vec(&many).unwrap();
    let (code, answer) = server.request(
        "a",
        "PATCH",
        &path,
        Some("application/json-patch+json"),
        &patch,
    );
    assert_eq!(code, 413, "{answer}");
}
