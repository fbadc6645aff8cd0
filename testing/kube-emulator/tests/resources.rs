//! ConfigMaps, Events, Namespaces and discovery through the real `kube::Client`.

mod common;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Namespace, ObjectReference};
use k8s_openapi::api::events::v1::Event as EventV1;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_emulator::{Emulator, Resource};
use serde_json::json;

use common::api_status;

const LEADER: &str = "control-plane.alpha.kubernetes.io/leader";

fn config_map(name: &str, record: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.annotations = Some(BTreeMap::from([(LEADER.to_owned(), record.to_owned())]));
    cm.data = Some(BTreeMap::from([("keep".to_owned(), "me".to_owned())]));
    cm
}

#[tokio::test]
async fn config_map_crud_and_conflict() {
    let emu = Emulator::start().await.expect("start");
    let api: Api<ConfigMap> = Api::namespaced(emu.client("a").expect("client"), "kube-system");
    let record = r#"{"holderIdentity":"a","leaseDurationSeconds":15,"acquireTime":"2026-01-01T00:00:00Z","renewTime":"2026-01-01T00:00:00Z","leaderTransitions":0}"#;
    let created = api
        .create(&PostParams::default(), &config_map("lock", record))
        .await
        .expect("create");
    assert_eq!(
        created.metadata.annotations.as_ref().expect("annotations")[LEADER],
        record
    );

    let mut next = created.clone();
    next.metadata
        .annotations
        .as_mut()
        .expect("annotations")
        .insert(LEADER.into(), "{}".into());
    let updated = api
        .replace("lock", &PostParams::default(), &next)
        .await
        .expect("update");
    assert_eq!(
        updated.data.expect("data")["keep"],
        "me",
        "other data untouched"
    );

    let status = api_status(
        api.replace("lock", &PostParams::default(), &next)
            .await
            .expect_err("stale"),
    );
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on configmaps \"lock\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let details = status.details.expect("details");
    assert_eq!(
        (details.group.as_str(), details.kind.as_str()),
        ("", "configmaps")
    );

    let status = api_status(
        api.create(&PostParams::default(), &config_map("lock", "{}"))
            .await
            .expect_err("exists"),
    );
    assert_eq!(status.message, "configmaps \"lock\" already exists");

    // ConfigMaps have no create-on-update: a PUT to a missing one is 404.
    let status = api_status(
        api.replace("other", &PostParams::default(), &config_map("other", "{}"))
            .await
            .expect_err("missing"),
    );
    assert_eq!(
        (status.code, status.message.as_str()),
        (404, "configmaps \"other\" not found")
    );

    let patch = json!({"metadata": {"annotations": {"extra": "x"}}});
    let patched = api
        .patch("lock", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    let annotations = patched.metadata.annotations.expect("annotations");
    assert_eq!(
        (annotations["extra"].as_str(), annotations[LEADER].as_str()),
        ("x", "{}")
    );

    api.delete("lock", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(
        emu.object(Resource::ConfigMap, "kube-system", "lock")
            .is_none()
    );
}

#[tokio::test]
async fn lists_filter_by_label_and_span_namespaces() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("a").expect("client");
    let in_default: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let in_system: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    let mut labelled = config_map("one", "{}");
    labelled.metadata.labels = Some(BTreeMap::from([("app".to_owned(), "x".to_owned())]));
    in_default
        .create(&PostParams::default(), &labelled)
        .await
        .expect("create");
    in_default
        .create(&PostParams::default(), &config_map("two", "{}"))
        .await
        .expect("create");
    in_system
        .create(&PostParams::default(), &config_map("three", "{}"))
        .await
        .expect("create");

    let only_x = in_default
        .list(&ListParams::default().labels("app=x"))
        .await
        .expect("list");
    assert_eq!(only_x.items.len(), 1);
    assert_eq!(only_x.items[0].metadata.name.as_deref(), Some("one"));
    let everywhere: Api<ConfigMap> = Api::all(client);
    let all = everywhere
        .list(&ListParams::default())
        .await
        .expect("list all");
    let names: Vec<_> = all
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert_eq!(names, ["one", "two", "three"]);
}

#[tokio::test]
async fn namespaces_exist_at_start_and_can_be_created_and_deleted() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("a").expect("client");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in ["default", "kube-system"] {
        let got = namespaces.get(ns).await.expect("built in");
        assert_eq!(got.status.expect("status").phase.as_deref(), Some("Active"));
    }
    let mut ns = Namespace::default();
    ns.metadata.name = Some("team".into());
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    cms.create(&PostParams::default(), &config_map("lock", "{}"))
        .await
        .expect("create in new namespace");
    namespaces
        .delete("team", &DeleteParams::default())
        .await
        .expect("delete namespace");
    assert!(
        emu.object(Resource::ConfigMap, "team", "lock").is_none(),
        "contents go with it"
    );
    let status = api_status(
        cms.create(&PostParams::default(), &config_map("lock", "{}"))
            .await
            .expect_err("gone"),
    );
    assert_eq!(status.message, "namespaces \"team\" not found");
}

#[tokio::test]
async fn h9_events_in_both_apis() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("a").expect("client");
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let mut ev = CoreEvent::default();
    ev.metadata.generate_name = Some("lock.".into());
    ev.reason = Some("LeaderElection".into());
    ev.message = Some("a became leader".into());
    ev.type_ = Some("Normal".into());
    ev.involved_object = ObjectReference {
        kind: Some("Lease".into()),
        name: Some("lock".into()),
        namespace: Some("default".into()),
        api_version: Some("coordination.k8s.io/v1".into()),
        ..ObjectReference::default()
    };
    let created = core
        .create(&PostParams::default(), &ev)
        .await
        .expect("core event");
    let name = created.metadata.name.expect("generated name");
    assert!(
        name.starts_with("lock.") && name.len() == "lock.".len() + 5,
        "{name}"
    );
    let listed = core
        .list(&ListParams::default().fields("involvedObject.name=lock"))
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 1);

    let v1: Api<EventV1> = Api::namespaced(client, "default");
    let mut e = EventV1::default();
    e.metadata.name = Some("lock.1".into());
    e.reason = Some("LeaderElection".into());
    e.note = Some("a became leader".into());
    e.event_time = Some(MicroTime("2026-01-01T00:00:00Z".parse().expect("time")));
    e.reporting_controller = Some("election".into());
    e.reporting_instance = Some("a".into());
    e.action = Some("Acquired".into());
    e.type_ = Some("Normal".into());
    v1.create(&PostParams::default(), &e)
        .await
        .expect("events.k8s.io event");
    assert!(emu.object(Resource::EventV1, "default", "lock.1").is_some());
    // Events fail like anything else when told to (for H9 tests of the locks).
    emu.faults("a")
        .on(kube_emulator::Match::any().resource(Resource::Event))
        .error(500);
    let status = api_status(
        core.create(&PostParams::default(), &ev)
            .await
            .expect_err("500"),
    );
    assert_eq!(status.code, 500);
}

#[tokio::test]
async fn discovery_answers_the_version() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("a").expect("client");
    let info = client.apiserver_version().await.expect("/version");
    assert_eq!(info.major, "1");
    let groups = client.list_api_groups().await.expect("/apis");
    let names: Vec<_> = groups.groups.iter().map(|g| g.name.as_str()).collect();
    assert!(names.contains(&"coordination.k8s.io"), "{names:?}");
    let core = client.list_core_api_resources("v1").await.expect("/api/v1");
    assert!(core.resources.iter().any(|r| r.name == "configmaps"));
    let coordination = client
        .list_api_group_resources("coordination.k8s.io/v1")
        .await
        .expect("/apis/coordination.k8s.io/v1");
    assert_eq!(coordination.resources[0].kind, "Lease");
}

/// A protobuf body (kubectl's typed writes send one) is refused over HTTP
/// with 415 and a `Status` naming kube-apiserver, and nothing is stored.
#[tokio::test]
async fn protobuf_bodies_are_refused_with_a_status_naming_kube_apiserver() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("proto").expect("client");
    let request = http::Request::post("/apis/coordination.k8s.io/v1/namespaces/default/leases")
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .body(b"k8s\0\x0a\x1f".to_vec())
        .expect("request");
    let status = api_status(
        client
            .request::<serde_json::Value>(request)
            .await
            .expect_err("415"),
    );
    assert_eq!(
        (status.code, status.reason.as_str()),
        (415, "UnsupportedMediaType")
    );
    assert!(
        status
            .message
            .contains("test a client that sends protobuf on kube-apiserver"),
        "{}",
        status.message
    );
    assert!(emu.objects(Resource::Lease, "default").is_empty());
}
