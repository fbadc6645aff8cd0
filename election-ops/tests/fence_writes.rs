//! docs/faults.md N17: every write verb (create, replace, JSON patch, merge
//! patch, strategic merge patch, delete) by the holder through the stamp layer,
//! by a deposed holder through it (its view still believes in its old term, as a
//! paused process's does), and by writers that bypass it, against the emulator
//! enforcing the generated policy, in the default mode (the writer check, a
//! stamp fixed for the term) and with no writer check (a token of each write).
//! The deposed writes are the adversary's: patches that leave the annotations
//! alone, on an object the current holder stamped last.
//!
//! (Server-side apply is stamped like a merge patch, a unit test in
//! `fake_view.rs` shows it; the emulator does not serve apply, 415.)

mod common;

use common::{Believes, fenced, hold};
use election_ops::fence::{
    FencePolicy, HOLDER_ANNOTATION, Protected, TERM_ANNOTATION, WRITE_ANNOTATION, Writer,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_emulator::{Emulator, Resource, UserInfo};
use serde_json::json;

/// The writes tried, each on the object `work`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verb {
    Create,
    Replace,
    JsonPatch,
    MergePatch,
    StrategicPatch,
    Delete,
}

const VERBS: [Verb; 6] = [
    Verb::Create,
    Verb::Replace,
    Verb::JsonPatch,
    Verb::MergePatch,
    Verb::StrategicPatch,
    Verb::Delete,
];

/// `verb` through `client`, on the object `name` (a create makes `name-new`).
async fn attempt(client: &kube::Client, verb: Verb, name: &str) -> Result<(), kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PatchParams::default();
    match verb {
        Verb::Create => {
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some(format!("{name}-new"));
            api.create(&PostParams::default(), &cm).await.map(drop)
        }
        Verb::Replace => {
            // Read, changed, written back: the body carries the stored stamp.
            let mut cm = api.get(name).await?;
            cm.data
                .get_or_insert_default()
                .insert("k".into(), "replaced".into());
            api.replace(name, &PostParams::default(), &cm)
                .await
                .map(drop)
        }
        Verb::JsonPatch => {
            let ops: json_patch::Patch = serde_json::from_value(json!([
                {"op": "replace", "path": "/data/k", "value": "json-patched"}
            ]))
            .expect("a JSON patch");
            api.patch(name, &pp, &Patch::Json::<()>(ops))
                .await
                .map(drop)
        }
        Verb::MergePatch => {
            let patch = Patch::Merge(json!({"data": {"k2": "merge-patched"}}));
            api.patch(name, &pp, &patch).await.map(drop)
        }
        Verb::StrategicPatch => {
            let patch = Patch::Strategic(json!({"data": {"k3": "strategic-patched"}}));
            api.patch(name, &pp, &patch).await.map(drop)
        }
        Verb::Delete => api.delete(name, &DeleteParams::default()).await.map(drop),
    }
}

/// The object `name`, as stored.
fn stored(emu: &Emulator, name: &str) -> Option<serde_json::Value> {
    emu.object(Resource::ConfigMap, "default", name)
}

/// `default/orders` held by `app-1` at transitions 4, after `app-0` held it at
/// 3; `app-1` created `name` through its stamp layer (with data `k`). Returns
/// the clients: the holder's, the deposed holder's through the layer (its view
/// stuck in term 3), and the deposed holder's plain one; the layers make write
/// tokens if `write_tokens`.
async fn taken_over(emu: &Emulator, name: &str, write_tokens: bool) -> [kube::Client; 3] {
    hold(emu, "app-0", 3).await;
    hold(emu, "app-1", 4).await;
    let stamped =
        |token: &str, view: Believes| common::stamped_client_with(emu, token, view, write_tokens);
    let holder = stamped("app-1", Believes::leading("app-1", 4, "30"));
    let deposed = stamped("app-0", Believes::leading("app-0", 3, "17"));
    let bypass = emu.client("app-0").expect("client");
    let api: Api<ConfigMap> = Api::namespaced(holder.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.data = Some([("k".to_owned(), "by-holder".to_owned())].into());
    api.create(&PostParams::default(), &cm)
        .await
        .expect("the holder's stamped create passes");
    [holder, deposed, bypass]
}

fn refused(result: Result<(), kube::Error>, verb: Verb, who: &str) -> String {
    match result {
        Err(kube::Error::Api(s)) if s.code == 403 => s.message,
        other => panic!("{who}'s {verb:?} should be refused with 403, got {other:?}"),
    }
}

/// Runs the matrix under `policy`: every deposed write refused and the object
/// untouched (the create stores nothing), every holder's write through the
/// layer (making write tokens if `write_tokens`) admitted.
async fn every_deposed_write_is_refused(policy: FencePolicy, write_tokens: bool) {
    let emu = fenced(policy).await;
    let [holder, deposed, bypass] = taken_over(&emu, "work", write_tokens).await;
    let before = stored(&emu, "work").expect("created");
    for verb in VERBS {
        for (who, client) in [("deposed (layer)", &deposed), ("deposed (bypass)", &bypass)] {
            let message = refused(attempt(client, verb, "work").await, verb, who);
            assert!(message.contains("fenced by fence-orders"), "{message}");
            assert_eq!(stored(&emu, "work-new"), None, "{who} {verb:?}");
            assert_eq!(
                stored(&emu, "work").as_ref(),
                Some(&before),
                "{who}'s {verb:?} changed nothing"
            );
        }
    }
    // The holder's writes, each through the layer, pass (the delete last).
    let mut tokens = std::collections::HashSet::new();
    for verb in VERBS {
        attempt(&holder, verb, "work")
            .await
            .unwrap_or_else(|e| panic!("the holder's {verb:?}: {e:?}"));
        if let Some(obj) = stored(&emu, "work").filter(|_| verb != Verb::Create) {
            let a = &obj["metadata"]["annotations"];
            assert_eq!(
                (&a[HOLDER_ANNOTATION], &a[TERM_ANNOTATION]),
                (&json!("app-1"), &json!("4@30")),
                "{verb:?}"
            );
            let token = a[WRITE_ANNOTATION].as_str().unwrap_or_default().to_owned();
            let fresh = tokens.insert(token);
            assert!(
                fresh || !write_tokens,
                "{verb:?} brought a token of its own"
            );
        }
    }
    let kept = stored(&emu, "work-new").expect("the holder's create");
    assert_eq!(kept["metadata"]["annotations"][HOLDER_ANNOTATION], "app-1");
    assert_eq!(stored(&emu, "work"), None, "the holder's delete");
    // With tokens, replace and the three patches each brought one; without,
    // none carries any (the one "token" is the empty one).
    let expected = if write_tokens { 4 } else { 1 };
    assert_eq!(tokens.len(), expected, "{tokens:?}");
}

/// The finding: a deposed holder's JSON, merge and strategic merge patches
/// that leave the annotations alone were admitted (the object kept the current
/// holder's stamp). Under the default policy (the writer check, a stamp fixed
/// for the term) every verb is refused, through the layer or around it: the
/// layer's by the stamp, the bypass's by the writer check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n17_every_write_of_a_deposed_holder_is_refused_under_the_default_policy() {
    every_deposed_write_is_refused(
        FencePolicy::new("default", "orders").protect(Protected::new("", "v1", "configmaps")),
        false,
    )
    .await;
}

/// With no writer check, write tokens do it: a write whose token is the
/// stored one brought no stamp of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n17_every_write_of_a_deposed_holder_is_refused_with_no_writer_check() {
    every_deposed_write_is_refused(
        FencePolicy::new("default", "orders")
            .protect(Protected::new("", "v1", "configmaps"))
            .writer(Writer::Any),
        true,
    )
    .await;
}

/// With no writer check the current holder's own writes must come through the
/// layer too: a patch it sends around it leaves its last stamp in place and is
/// refused like anyone's. The control plane's writers (exempt by default)
/// write without a stamp, and the holder's JSON patch of the object they left
/// with no annotations at all passes (the layer's second form creates the map).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n17_unstamped_writes_need_an_exemption_and_json_patches_create_the_annotations() {
    let emu = fenced(
        FencePolicy::new("default", "orders")
            .protect(Protected::new("", "v1", "configmaps"))
            .writer(Writer::Any),
    )
    .await;
    let [holder, ..] = taken_over(&emu, "work", true).await;
    let holder_bypass = emu.client("app-1").expect("client");
    for verb in [Verb::JsonPatch, Verb::MergePatch, Verb::Delete] {
        let message = refused(
            attempt(&holder_bypass, verb, "work").await,
            verb,
            "holder (bypass)",
        );
        assert!(
            message.contains("no stamp of its own") || message.contains("not marked"),
            "{message}"
        );
    }

    emu.set_user(
        "gc",
        UserInfo {
            username: "system:serviceaccount:kube-system:generic-garbage-collector".into(),
            groups: vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:kube-system".into(),
            ],
            ..UserInfo::default()
        },
    );
    let gc = emu.client("gc").expect("client");
    let api: Api<ConfigMap> = Api::namespaced(gc.clone(), "default");
    let mut bare = ConfigMap::default();
    bare.metadata.name = Some("bare".into());
    bare.data = Some([("k".to_owned(), "by-gc".to_owned())].into());
    api.create(&PostParams::default(), &bare)
        .await
        .expect("an exempt writer needs no stamp");
    assert!(stored(&emu, "bare").expect("stored")["metadata"]["annotations"].is_null());
    attempt(&holder, Verb::JsonPatch, "bare")
        .await
        .expect("the holder's JSON patch of an object with no annotations");
    let obj = stored(&emu, "bare").expect("stored");
    assert_eq!(obj["data"]["k"], "json-patched");
    assert_eq!(obj["metadata"]["annotations"][HOLDER_ANNOTATION], "app-1");
    attempt(&gc, Verb::Delete, "bare")
        .await
        .expect("an exempt writer deletes without a mark");
}
