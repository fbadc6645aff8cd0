//! Nodes (cluster-scoped) and owner-reference garbage collection through the
//! real `kube::Client`.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource as _;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube_emulator::{Emulator, Resource};
use serde_json::json;

use common::api_status;

fn node(name: &str) -> Node {
    let mut n = Node::default();
    n.metadata.name = Some(name.to_owned());
    n.metadata.labels = Some(BTreeMap::from([("role".to_owned(), "worker".to_owned())]));
    n
}

fn owner_ref<K: kube::Resource<DynamicType = ()>>(owner: &K) -> OwnerReference {
    owner
        .controller_owner_ref(&())
        .expect("owner has a name and uid")
}

fn lease_owned_by(name: &str, owners: Vec<OwnerReference>) -> Lease {
    let mut l = Lease::default();
    l.metadata.name = Some(name.to_owned());
    l.metadata.owner_references = Some(owners);
    l.spec = Some(LeaseSpec {
        holder_identity: Some("maintenance".into()),
        lease_duration_seconds: Some(30),
        ..LeaseSpec::default()
    });
    l
}

#[tokio::test]
async fn nodes_are_cluster_scoped_and_patched_for_cordon_and_annotations() {
    let emu = Emulator::start().await.expect("start");
    let nodes: Api<Node> = Api::all(emu.client("admin").expect("client"));
    let created = nodes
        .create(&PostParams::default(), &node("worker-1"))
        .await
        .expect("create");
    assert!(created.metadata.uid.is_some());
    assert_eq!(created.metadata.namespace, None, "cluster-scoped");
    nodes
        .create(&PostParams::default(), &node("worker-2"))
        .await
        .expect("create a second");
    let listed = nodes
        .list(&ListParams::default().labels("role=worker"))
        .await
        .expect("list");
    let names: Vec<_> = listed
        .items
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    assert_eq!(names, ["worker-1", "worker-2"]);

    // Watch worker-1 from its created version, then cordon and annotate it.
    let rv = created.metadata.resource_version.clone().expect("rv");
    let mut events = nodes
        .watch(
            &WatchParams::default().fields("metadata.name=worker-1"),
            &rv,
        )
        .await
        .expect("watch")
        .boxed();

    let cordoned = nodes
        .patch(
            "worker-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": true}})),
        )
        .await
        .expect("cordon");
    assert_eq!(cordoned.spec.and_then(|s| s.unschedulable), Some(true));
    let annotated = nodes
        .patch(
            "worker-1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"annotations": {"example.com/window": "20"}}})),
        )
        .await
        .expect("annotate");
    assert_eq!(
        annotated.metadata.annotations.expect("annotations")["example.com/window"],
        "20"
    );
    let removed = nodes
        .patch(
            "worker-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"example.com/window": null}}, "spec": {"unschedulable": null}})),
        )
        .await
        .expect("remove the annotation and uncordon");
    assert!(removed.metadata.annotations.unwrap_or_default().is_empty());
    assert_eq!(removed.spec.and_then(|s| s.unschedulable), None);

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let event = tokio::time::timeout(Duration::from_secs(2), events.try_next())
            .await
            .expect("an event within 2 s")
            .expect("no error")
            .expect("still open");
        if let WatchEvent::Modified(n) = event {
            seen.push((
                n.spec.and_then(|s| s.unschedulable),
                n.metadata.annotations.unwrap_or_default().len(),
            ));
        }
    }
    assert_eq!(seen, [(Some(true), 0), (Some(true), 1), (None, 0)]);

    let bad = nodes
        .patch(
            "worker-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": "yes"}})),
        )
        .await
        .expect_err("a string is not a bool");
    let status = api_status(bad);
    assert_eq!(status.code, 400, "{status:?}");
    assert!(
        status.message.contains("cannot unmarshal string"),
        "{}",
        status.message
    );

    let missing = api_status(nodes.get("worker-9").await.expect_err("no such node"));
    assert_eq!(
        (missing.code, missing.message.as_str()),
        (404, "nodes \"worker-9\" not found")
    );
}

#[tokio::test]
async fn deleting_a_node_deletes_the_leases_it_owns() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("admin").expect("client");
    let nodes: Api<Node> = Api::all(client.clone());
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let maps: Api<ConfigMap> = Api::namespaced(client, "kube-node-lease");
    let n1 = nodes
        .create(&PostParams::default(), &node("worker-1"))
        .await
        .expect("node");
    let mut keeper = ConfigMap::default();
    keeper.metadata.name = Some("keeper".into());
    let keeper = maps
        .create(&PostParams::default(), &keeper)
        .await
        .expect("configmap");
    // Owned by the Node alone; by the Node and a ConfigMap; by nothing.
    leases
        .create(
            &PostParams::default(),
            &lease_owned_by("window-worker-1", vec![owner_ref(&n1)]),
        )
        .await
        .expect("owned lease");
    let mut second = owner_ref(&keeper);
    second.controller = None;
    leases
        .create(
            &PostParams::default(),
            &lease_owned_by("shared", vec![owner_ref(&n1), second]),
        )
        .await
        .expect("shared lease");
    leases
        .create(&PostParams::default(), &lease_owned_by("free", vec![]))
        .await
        .expect("free lease");
    let mut watch = leases
        .watch(
            &WatchParams::default(),
            &n1.metadata.resource_version.clone().expect("rv"),
        )
        .await
        .expect("watch")
        .boxed();

    nodes
        .delete("worker-1", &DeleteParams::default())
        .await
        .expect("delete the node");

    assert!(
        leases
            .get_opt("window-worker-1")
            .await
            .expect("get")
            .is_none(),
        "collected"
    );
    let shared = leases
        .get("shared")
        .await
        .expect("still owned by the ConfigMap");
    let owners: Vec<_> = shared
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(owners, ["keeper"], "the dangling reference is removed");
    assert!(leases.get_opt("free").await.expect("get").is_some());
    assert!(
        emu.object(Resource::Lease, "kube-node-lease", "window-worker-1")
            .is_none()
    );

    // The collection is seen on a watch as the deletion of the Lease.
    let mut deleted = None;
    while deleted.is_none() {
        let event = tokio::time::timeout(Duration::from_secs(2), watch.try_next())
            .await
            .expect("an event within 2 s")
            .expect("no error")
            .expect("still open");
        if let WatchEvent::Deleted(l) = event {
            deleted = l.metadata.name;
        }
    }
    assert_eq!(deleted.as_deref(), Some("window-worker-1"));

    // Orphan propagation keeps the dependents and drops the reference.
    let n2 = nodes
        .create(&PostParams::default(), &node("worker-2"))
        .await
        .expect("node");
    leases
        .create(
            &PostParams::default(),
            &lease_owned_by("window-worker-2", vec![owner_ref(&n2)]),
        )
        .await
        .expect("owned lease");
    nodes
        .delete(
            "worker-2",
            &DeleteParams {
                propagation_policy: Some(kube::api::PropagationPolicy::Orphan),
                ..DeleteParams::default()
            },
        )
        .await
        .expect("delete, orphaning");
    let orphan = leases.get("window-worker-2").await.expect("kept");
    assert!(
        orphan
            .metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );

    // An owner reference without a uid is refused, as the API server does.
    let mut bad = owner_ref(&keeper);
    bad.uid = String::new();
    let status = api_status(
        leases
            .create(&PostParams::default(), &lease_owned_by("bad", vec![bad]))
            .await
            .expect_err("invalid"),
    );
    assert_eq!(status.code, 422, "{status:?}");
    assert!(
        status
            .message
            .contains("metadata.ownerReferences[0].uid: Required value"),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn discovery_lists_nodes_in_the_core_group() {
    let emu = Emulator::start().await.expect("start");
    let client = emu.client("admin").expect("client");
    let list = client
        .list_core_api_resources("v1")
        .await
        .expect("core resources");
    let nodes = list
        .resources
        .iter()
        .find(|r| r.name == "nodes")
        .expect("nodes are listed");
    assert!(!nodes.namespaced);
    assert_eq!(nodes.kind, "Node");
    assert_eq!(nodes.short_names.as_deref(), Some(&["no".to_owned()][..]));
    assert!(nodes.verbs.iter().any(|v| v == "patch"));
    assert_eq!(Node::url_path(&(), None), "/api/v1/nodes");
}
