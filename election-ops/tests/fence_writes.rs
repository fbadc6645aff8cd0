//! docs/faults.md N17 on the emulator enforcing the generated policy
//! (`fence_cases::deposed`, also run on kube-apiserver by
//! `fence_apiserver.rs`): every write verb by the holder through the stamp
//! layer, by a deposed holder through it and by its Pod around it, in the
//! default mode (the writer check, a stamp fixed for the term) and with no
//! writer check (a token of each write).
//!
//! (Server-side apply is stamped like a merge patch, a unit test in
//! `fake_view.rs` shows it; the emulator does not serve apply, 415.)

mod common;
mod fence_cases;

use election_ops::fence::{HOLDER_ANNOTATION, Writer};
use fence_cases::deposed::{Verb, attempt, every_write_of_a_deposed_holder_is_refused, refused};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube_emulator::{Emulator, UserInfo};

/// The finding: a deposed holder's JSON, merge and strategic merge patches
/// that leave the annotations alone were admitted (the object kept the current
/// holder's stamp). Under the default policy (the writer check, a stamp fixed
/// for the term) every verb is refused, through the layer or around it: the
/// layer's by the stamp, the bypass's by the writer check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n17_every_write_of_a_deposed_holder_is_refused_under_the_default_policy() {
    let emu = Emulator::start().await.expect("emulator");
    every_write_of_a_deposed_holder_is_refused(&emu, fence_cases::configmaps, false).await;
}

/// With no writer check, write tokens do it: a write whose token is the
/// stored one brought no stamp of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn n17_every_write_of_a_deposed_holder_is_refused_with_no_writer_check() {
    let emu = Emulator::start().await.expect("emulator");
    every_write_of_a_deposed_holder_is_refused(
        &emu,
        |ns, lease| fence_cases::configmaps(ns, lease).writer(Writer::Any),
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
    let emu = Emulator::start().await.expect("emulator");
    let f = fence_cases::fenced(&emu, |ns, lease| {
        fence_cases::configmaps(ns, lease).writer(Writer::Any)
    })
    .await;
    let [holder, ..] = fence_cases::deposed::taken_over(&f, "work", true).await;
    let holder_bypass = f.pod("app-1");
    for verb in [Verb::JsonPatch, Verb::MergePatch, Verb::Delete] {
        let message = refused(
            attempt(&holder_bypass, &f.ns, verb, "work").await,
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
    let api: Api<ConfigMap> = Api::namespaced(gc.clone(), &f.ns);
    let mut bare = ConfigMap::default();
    bare.metadata.name = Some("bare".into());
    bare.data = Some([("k".to_owned(), "by-gc".to_owned())].into());
    api.create(&PostParams::default(), &bare)
        .await
        .expect("an exempt writer needs no stamp");
    assert!(f.configmap("bare").expect("stored")["metadata"]["annotations"].is_null());
    attempt(&holder, &f.ns, Verb::JsonPatch, "bare")
        .await
        .expect("the holder's JSON patch of an object with no annotations");
    let obj = f.configmap("bare").expect("stored");
    assert_eq!(obj["data"]["k"], "json-patched");
    assert_eq!(obj["metadata"]["annotations"][HOLDER_ANNOTATION], "app-1");
    attempt(&gc, &f.ns, Verb::Delete, "bare")
        .await
        .expect("an exempt writer deletes without a mark");
}
