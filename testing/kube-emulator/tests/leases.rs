//! Leases through the real `kube::Client` over HTTP: CRUD, the API server's
//! errors, validation, create-on-update and patches with a version precondition.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_emulator::{Emulator, Resource, Verb};
use serde_json::json;

fn lease(name: &str, holder: &str) -> Lease {
    let mut l = Lease::default();
    l.metadata.name = Some(name.to_owned());
    l.spec = Some(LeaseSpec {
        holder_identity: Some(holder.to_owned()),
        lease_duration_seconds: Some(15),
        lease_transitions: Some(0),
        ..LeaseSpec::default()
    });
    l
}

fn api_error(err: kube::Error) -> Box<kube::core::Status> {
    match err {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn leases(emu: &Emulator, token: &str) -> Api<Lease> {
    Api::namespaced(emu.client(token).expect("client"), "default")
}

#[tokio::test]
async fn lease_create_get_update_delete() {
    let emu = Emulator::start().await.expect("start");
    let api = leases(&emu, "a").await;
    let created = api
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create");
    let rv1: u64 = created
        .metadata
        .resource_version
        .as_deref()
        .expect("rv")
        .parse()
        .expect("decimal");
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));

    let got = api.get("lock").await.expect("get");
    assert_eq!(got, created);

    let mut next = got.clone();
    next.spec.as_mut().expect("spec").holder_identity = Some("b".into());
    let updated = api
        .replace("lock", &PostParams::default(), &next)
        .await
        .expect("update");
    let rv2: u64 = updated
        .metadata
        .resource_version
        .as_deref()
        .expect("rv")
        .parse()
        .expect("decimal");
    assert!(rv2 > rv1, "resourceVersion grows: {rv1} -> {rv2}");
    assert_eq!(updated.metadata.uid, created.metadata.uid);
    assert_eq!(
        updated.spec.expect("spec").holder_identity.as_deref(),
        Some("b")
    );

    let list = api.list(&Default::default()).await.expect("list");
    assert_eq!(list.items.len(), 1);
    let list_rv: u64 = list
        .metadata
        .resource_version
        .as_deref()
        .expect("rv")
        .parse()
        .expect("decimal");
    assert!(list_rv >= rv2);

    let deleted = api
        .delete("lock", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(deleted.is_right(), "a Lease delete answers with a Status");
    let err = api_error(api.get("lock").await.expect_err("gone"));
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "leases.coordination.k8s.io \"lock\" not found");
    let details = err.details.expect("details");
    assert_eq!(
        (
            details.name.as_str(),
            details.group.as_str(),
            details.kind.as_str()
        ),
        ("lock", "coordination.k8s.io", "leases")
    );
}

#[tokio::test]
async fn a1_stale_update_gets_409_conflict_with_the_real_reason() {
    let emu = Emulator::start().await.expect("start");
    let api = leases(&emu, "a").await;
    let created = api
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create");
    let mut first = created.clone();
    first.spec.as_mut().expect("spec").holder_identity = Some("b".into());
    api.replace("lock", &PostParams::default(), &first)
        .await
        .expect("first update wins");
    let mut second = created;
    second.spec.as_mut().expect("spec").holder_identity = Some("c".into());
    let err = api_error(
        api.replace("lock", &PostParams::default(), &second)
            .await
            .expect_err("stale"),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on leases.coordination.k8s.io \"lock\": the object has been modified; please apply your changes to the latest version and try again"
    );
    assert_eq!(
        emu.object(Resource::Lease, "default", "lock")
            .expect("kept")["spec"]["holderIdentity"],
        "b"
    );
}

#[tokio::test]
async fn a3_second_create_gets_409_already_exists() {
    let emu = Emulator::start().await.expect("start");
    let api = leases(&emu, "a").await;
    api.create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create");
    let err = api_error(
        api.create(&PostParams::default(), &lease("lock", "b"))
            .await
            .expect_err("exists"),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(
        err.message,
        "leases.coordination.k8s.io \"lock\" already exists"
    );
}

#[tokio::test]
async fn a5_create_in_a_missing_namespace_names_the_namespace() {
    let emu = Emulator::start().await.expect("start");
    let api: Api<Lease> = Api::namespaced(emu.client("a").expect("client"), "nowhere");
    let err = api_error(
        api.create(&PostParams::default(), &lease("lock", "a"))
            .await
            .expect_err("no namespace"),
    );
    assert_eq!((err.code, err.reason.as_str()), (404, "NotFound"));
    assert_eq!(err.message, "namespaces \"nowhere\" not found");
    assert_eq!(err.details.expect("details").kind, "namespaces");
    // A PUT that would create is refused the same way.
    let err = api_error(
        api.replace("lock", &PostParams::default(), &lease("lock", "a"))
            .await
            .expect_err("no namespace"),
    );
    assert_eq!(err.message, "namespaces \"nowhere\" not found");
    // Reads answer as for a missing object, like the API server.
    let err = api_error(api.get("lock").await.expect_err("missing"));
    assert_eq!(err.message, "leases.coordination.k8s.io \"lock\" not found");
}

#[tokio::test]
async fn a8_invalid_lease_gets_422_with_the_real_wording() {
    let emu = Emulator::start().await.expect("start");
    let api = leases(&emu, "a").await;
    let rv_before = emu.resource_version();
    let mut zero = lease("lock", "a");
    zero.spec.as_mut().expect("spec").lease_duration_seconds = Some(0);
    let err = api_error(
        api.create(&PostParams::default(), &zero)
            .await
            .expect_err("invalid"),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "Lease.coordination.k8s.io \"lock\" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
    );
    let details = err.details.expect("details");
    assert_eq!(details.kind, "Lease");
    assert_eq!(details.causes[0].field, "spec.leaseDurationSeconds");

    let mut negative = lease("lock", "a");
    negative.spec.as_mut().expect("spec").lease_transitions = Some(-1);
    let err = api_error(
        api.create(&PostParams::default(), &negative)
            .await
            .expect_err("invalid"),
    );
    assert!(
        err.message.ends_with(
            "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"
        ),
        "{}",
        err.message
    );

    let mut preferred = lease("lock", "a");
    preferred.spec.as_mut().expect("spec").preferred_holder = Some("b".into());
    let err = api_error(
        api.create(&PostParams::default(), &preferred)
            .await
            .expect_err("invalid"),
    );
    assert!(
        err.message.ends_with(
            "spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"
        ),
        "{}",
        err.message
    );

    let err = api_error(
        api.create(&PostParams::default(), &lease("Not_A_Name", "a"))
            .await
            .expect_err("bad name"),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains(
            "metadata.name: Invalid value: \"Not_A_Name\": a lowercase RFC 1123 subdomain"
        ),
        "{}",
        err.message
    );
    assert!(
        emu.object(Resource::Lease, "default", "lock").is_none(),
        "nothing was stored"
    );
    assert_eq!(emu.resource_version(), rv_before, "no write happened");
}

#[tokio::test]
async fn a4_put_to_a_missing_lease_creates_it_unless_it_carries_a_uid() {
    let emu = Emulator::start().await.expect("start");
    let api = leases(&emu, "a").await;
    // No uid: create-on-update, even with a made-up resourceVersion.
    let mut fresh = lease("lock", "a");
    fresh.metadata.resource_version = Some("12345".into());
    let created = api
        .replace("lock", &PostParams::default(), &fresh)
        .await
        .expect("create-on-update");
    assert!(created.metadata.uid.is_some());

    // A renew from the cached copy (which carries the uid) after a delete:
    // the uid is a precondition, so the API server refuses with 409.
    api.delete("lock", &DeleteParams::default())
        .await
        .expect("delete");
    let err = api_error(
        api.replace("lock", &PostParams::default(), &created)
            .await
            .expect_err("uid precondition"),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message
            .contains("Precondition failed: UID in precondition"),
        "{}",
        err.message
    );
    assert!(emu.object(Resource::Lease, "default", "lock").is_none());
}

#[tokio::test]
async fn merge_patch_with_resource_version_precondition() {
    let emu = Emulator::start().await.expect("start");
    let api = leases(&emu, "a").await;
    let created = api
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create");
    let rv = created.metadata.resource_version.clone().expect("rv");
    let patch = json!({"metadata": {"resourceVersion": rv}, "spec": {"holderIdentity": "b", "renewTime": "2026-01-01T00:00:00Z"}});
    let patched = api
        .patch("lock", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    let spec = patched.spec.clone().expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(
        spec.lease_duration_seconds,
        Some(15),
        "merge keeps other fields"
    );
    assert!(spec.renew_time.is_some());
    // The same precondition again is stale now.
    let err = api_error(
        api.patch("lock", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect_err("stale"),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    // Without a version the patch is unconditional.
    let blind = json!({"spec": {"holderIdentity": "c"}});
    let patched = api
        .patch("lock", &PatchParams::default(), &Patch::Merge(&blind))
        .await
        .expect("blind patch");
    assert_eq!(
        patched.spec.expect("spec").holder_identity.as_deref(),
        Some("c")
    );
    // Patching a missing object is a 404.
    let err = api_error(
        api.patch("nope", &PatchParams::default(), &Patch::Merge(&blind))
            .await
            .expect_err("missing"),
    );
    assert_eq!(err.code, 404);
}

#[tokio::test]
async fn micro_time_is_normalised_to_six_digits_utc() {
    let emu = Emulator::start().await.expect("start");
    let api = leases(&emu, "a").await;
    let mut l = lease("lock", "a");
    let patch = json!({"spec": {"renewTime": "2026-08-17T23:11:09.123456789+02:00"}});
    l.spec.as_mut().expect("spec").acquire_time = None;
    api.create(&PostParams::default(), &l)
        .await
        .expect("create");
    api.patch("lock", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    let stored = emu
        .object(Resource::Lease, "default", "lock")
        .expect("stored");
    assert_eq!(stored["spec"]["renewTime"], "2026-08-17T21:11:09.123456Z");
    let got = api.get("lock").await.expect("get");
    let renew: Option<MicroTime> = got.spec.expect("spec").renew_time;
    assert_eq!(
        serde_json::to_value(renew).expect("serialises"),
        json!("2026-08-17T21:11:09.123456Z")
    );
    assert_eq!(
        emu.request_counts().get("a", Verb::Patch, Resource::Lease),
        1
    );
}

#[tokio::test]
async fn n11_concurrent_writers_exactly_one_compare_and_swap_wins() {
    let emu = Emulator::start().await.expect("start");
    let mut tasks = Vec::new();
    for i in 0..16 {
        let api = leases(&emu, &format!("node-{i}")).await;
        tasks.push(tokio::spawn(async move {
            api.create(&PostParams::default(), &lease("lock", &format!("node-{i}")))
                .await
        }));
    }
    let mut created = Vec::new();
    let mut exists = 0;
    for t in tasks {
        match t.await.expect("joined") {
            Ok(l) => created.push(l),
            Err(kube::Error::Api(s)) if s.reason == "AlreadyExists" => exists += 1,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((created.len(), exists), (1, 15));

    // All race to update from the same version: one wins, the rest conflict.
    let base = created.pop().expect("winner");
    let mut tasks = Vec::new();
    for i in 0..16 {
        let api = leases(&emu, &format!("node-{i}")).await;
        let mut mine = base.clone();
        mine.spec.as_mut().expect("spec").holder_identity = Some(format!("node-{i}"));
        mine.spec.as_mut().expect("spec").lease_transitions = Some(1);
        tasks.push(tokio::spawn(async move {
            api.replace("lock", &PostParams::default(), &mine).await
        }));
    }
    let mut winners = Vec::new();
    let mut conflicts = 0;
    for t in tasks {
        match t.await.expect("joined") {
            Ok(l) => winners.push(l),
            Err(kube::Error::Api(s)) if s.reason == "Conflict" => conflicts += 1,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((winners.len(), conflicts), (1, 15));
    let stored = emu
        .object(Resource::Lease, "default", "lock")
        .expect("stored");
    assert_eq!(
        stored["spec"]["holderIdentity"],
        json!(winners[0].spec.as_ref().expect("spec").holder_identity)
    );
}

#[tokio::test]
async fn delete_honours_preconditions_and_dry_run_changes_nothing() {
    let emu = Emulator::start().await.expect("start");
    let api = leases(&emu, "a").await;
    let created = api
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create");
    let stale = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            resource_version: Some("1".into()),
            uid: None,
        }),
        ..DeleteParams::default()
    };
    let err = api_error(api.delete("lock", &stale).await.expect_err("precondition"));
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert!(
        err.message
            .contains("Precondition failed: ResourceVersion in precondition: 1"),
        "{}",
        err.message
    );

    let rv_before = emu.resource_version();
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mut changed = created.clone();
    changed.spec.as_mut().expect("spec").holder_identity = Some("dry".into());
    let answer = api
        .replace("lock", &dry, &changed)
        .await
        .expect("dry-run update");
    assert_eq!(
        answer.spec.expect("spec").holder_identity.as_deref(),
        Some("dry")
    );
    assert_eq!(emu.resource_version(), rv_before, "nothing committed");
    assert_eq!(
        emu.object(Resource::Lease, "default", "lock")
            .expect("stored")["spec"]["holderIdentity"],
        "a"
    );

    let exact = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            resource_version: created.metadata.resource_version.clone(),
            uid: created.metadata.uid.clone(),
        }),
        ..DeleteParams::default()
    };
    api.delete("lock", &exact)
        .await
        .expect("delete with matching preconditions");
    assert!(emu.object(Resource::Lease, "default", "lock").is_none());
}

#[tokio::test]
async fn json_patch_with_a_test_operation_on_the_version() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("a").expect("client");
    let api = leases(&emu, "a").await;
    let created = api
        .create(&PostParams::default(), &lease("lock", "a"))
        .await
        .expect("create");
    let rv = created.metadata.resource_version.expect("rv");
    let send = |ops: serde_json::Value| {
        let client = client.clone();
        async move {
            let req = hyper::Request::patch(
                "/apis/coordination.k8s.io/v1/namespaces/default/leases/lock",
            )
            .header("content-type", "application/json-patch+json")
            .body(ops.to_string().into_bytes())
            .expect("request");
            client.request::<Lease>(req).await
        }
    };
    let ok = send(
        json!([{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
                         {"op": "replace", "path": "/spec/holderIdentity", "value": "b"}]),
    )
    .await
    .expect("applies");
    assert_eq!(ok.spec.expect("spec").holder_identity.as_deref(), Some("b"));
    let err = api_error(
        send(
            json!([{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
                    {"op": "replace", "path": "/spec/holderIdentity", "value": "c"}]),
        )
        .await
        .expect_err("the test op fails on the old version"),
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        emu.object(Resource::Lease, "default", "lock")
            .expect("stored")["spec"]["holderIdentity"],
        "b"
    );
}
