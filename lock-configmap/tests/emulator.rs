//! The ConfigMap lock against the project's API emulator: the real `kube` client over
//! real HTTP on 127.0.0.1, faults injected per client. Each test is named after the
//! FAULTS.md row it covers.
//!
//! Each test is a plain `async fn` run on tokio, smol and async-std
//! (`on_tokio::a1_…`, `on_smol::a1_…`, `on_async_std::a1_…`, by
//! `test_kit::runtime_tests!` at the end). The lock bridges kube's client to
//! the runtime itself, so its calls are made as they are; the test's own direct
//! `kube` calls go through `compat`, and its timers are `async-io`'s.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use election_core::{
    Lock, LockError, LockRecord, Observation, Stamp, Version, WallTime, WatchEvent,
};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube_emulator::{Emulator, Fault, Match, Resource};
use kube_support::{Clock, WatchConfig};
use lock_configmap::{ConfigMapLock, LeaderEvent};
use test_kit::runtimes::{compat, timeout};

const NS: &str = "default";
const T0: WallTime = WallTime {
    unix_secs: 1_786_144_269,
    nanos: 0,
};

fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}", N.fetch_add(1, Ordering::Relaxed))
}

fn lock(emu: &Emulator, token: &str, ns: &str, name: &str) -> ConfigMapLock {
    let client = kube_support::lock_client(emu.kube_config(token)).expect("client");
    ConfigMapLock::builder(client, ns, name)
        .request_timeout(Duration::from_millis(500))
        .clock(Clock::fixed(T0))
        .build()
        .expect("valid names")
}

fn held(holder: &str, transitions: u32) -> LockRecord {
    LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(15),
        acquire_time: Stamp::Now,
        renew_time: Stamp::Now,
        transitions,
        ..LockRecord::default()
    }
}

fn raw(emu: &Emulator, name: &str) -> serde_json::Value {
    emu.object(Resource::ConfigMap, NS, name)
        .expect("the configmap exists")
}

/// The leader record in the ConfigMap's annotation, as JSON.
fn spec(emu: &Emulator, name: &str) -> serde_json::Value {
    let obj = raw(emu, name);
    let json = obj["metadata"]["annotations"][lock_configmap::record::ANNOTATION]
        .as_str()
        .expect("the annotation");
    serde_json::from_str(json).expect("JSON")
}

/// The emulator, on a thread and tokio runtime of its own: the tests run on any
/// runtime.
fn start() -> Emulator {
    Emulator::start_blocking().expect("emulator starts")
}

async fn create_get_update_round_trip_client_go_fields() {
    let emu = start();
    let name = unique("rt");
    let a = lock(&emu, "a", NS, &name);
    assert_eq!(a.get().await, Err(LockError::NotFound));
    let created = a.create(&held("a", 0)).await.expect("create");
    assert_eq!(created.record.holder.as_ref(), "a");
    assert_eq!(created.record.renew_time, Stamp::At(T0));
    let rec = &spec(&emu, &name);
    assert_eq!(rec["holderIdentity"], "a");
    assert_eq!(rec["leaseDurationSeconds"], 15);
    assert_eq!(rec["renewTime"], "2026-08-07T23:11:09Z");
    assert_eq!(rec["leaderTransitions"], 0);

    let b = lock(&emu, "b", NS, &name);
    let seen = b.get().await.expect("get");
    assert_eq!(seen, created);
    let mut release = held("", 0);
    release.lease_duration_secs = Some(1);
    let released = b.update(&seen.version, &release).await.expect("update");
    assert_ne!(released.version, seen.version);
    let rec = &spec(&emu, &name);
    assert_eq!(
        rec["holderIdentity"], "",
        "written present and empty on release"
    );
    assert_eq!(rec["leaseDurationSeconds"], 1);
}

async fn a1_a2_w3_update_from_a_stale_version_is_a_conflict() {
    let emu = start();
    let name = unique("a1");
    let a = lock(&emu, "a", NS, &name);
    let b = lock(&emu, "b", NS, &name);
    let v1 = a.create(&held("a", 0)).await.expect("create");
    let v2 = b
        .update(&v1.version, &held("b", 1))
        .await
        .expect("b takes over");
    // a still holds v1 in its cache: its compare-and-swap must fail.
    assert_eq!(
        a.update(&v1.version, &held("a", 0)).await,
        Err(LockError::Conflict)
    );
    assert_eq!(spec(&emu, &name)["holderIdentity"], "b");
    // a version a never saw (its cache is stale): read, then CAS on it.
    let v3 = a
        .update(&v2.version, &held("a", 2))
        .await
        .expect("CAS on the fresh version");
    assert_eq!(v3.record.holder.as_ref(), "a");
    // A version that is neither cached nor current is a conflict without a write.
    let writes = emu.write_history().len();
    assert_eq!(
        a.update(&Version::new("1"), &held("a", 3)).await,
        Err(LockError::Conflict)
    );
    assert_eq!(emu.write_history().len(), writes);
}

async fn a3_create_of_an_existing_configmap_is_already_exists() {
    let emu = start();
    let name = unique("a3");
    let a = lock(&emu, "a", NS, &name);
    let b = lock(&emu, "b", NS, &name);
    a.create(&held("a", 0)).await.expect("create");
    assert_eq!(b.create(&held("b", 0)).await, Err(LockError::AlreadyExists));
}

async fn a4_update_of_a_deleted_configmap_is_not_found_and_does_not_recreate_it() {
    let emu = start();
    let name = unique("a4");
    let a = lock(&emu, "a", NS, &name);
    let v1 = a.create(&held("a", 0)).await.expect("create");
    compat(async {
        let api: Api<ConfigMap> = Api::namespaced(emu.client("admin").unwrap(), NS);
        api.delete(&name, &DeleteParams::default()).await
    })
    .await
    .expect("delete");
    // ConfigMaps do not allow create-on-update; our PUT also carries the old UID:
    // the lock reports NotFound and nothing is re-created.
    assert_eq!(
        a.update(&v1.version, &held("a", 0)).await,
        Err(LockError::NotFound)
    );
    assert_eq!(a.get().await, Err(LockError::NotFound));
}

async fn a5_missing_namespace_is_invalid_and_names_it() {
    let emu = start();
    let a = lock(&emu, "a", "no-such-ns", "lock");
    match a.create(&held("a", 0)).await {
        Err(LockError::Invalid { message }) => {
            assert!(message.contains("\"no-such-ns\""), "{message}")
        }
        other => panic!("expected Invalid naming the namespace, got {other:?}"),
    }
}

async fn a6_forbidden_names_the_verb_and_the_resource() {
    let emu = start();
    let name = unique("a6");
    let a = lock(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a").on(Match::writes()).forbidden();
    match a.update(&v.version, &held("a", 0)).await {
        Err(LockError::Forbidden { message }) => {
            assert!(message.contains("update"), "{message}");
            assert!(message.contains("configmaps"), "{message}");
            assert!(message.contains(&format!("default/{name}")), "{message}");
        }
        other => panic!("expected Forbidden, got {other:?}"),
    }
    // Once allowed again, the same lock works.
    emu.faults("a").clear();
    a.update(&v.version, &held("a", 0))
        .await
        .expect("allowed again");
}

async fn a7_unauthorized_is_forbidden() {
    let emu = start();
    let a = lock(&emu, "a", NS, &unique("a7"));
    emu.faults("a").error(401);
    match a.get().await {
        Err(LockError::Forbidden { message }) => assert!(message.contains("401"), "{message}"),
        other => panic!("expected Forbidden, got {other:?}"),
    }
}

async fn a8_unprocessable_write_is_invalid() {
    let emu = start();
    let name = unique("a8");
    let a = lock(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a").on(Match::writes()).error(422);
    assert!(matches!(
        a.update(&v.version, &held("a", 0)).await,
        Err(LockError::Invalid { .. })
    ));
    // We never write a duration of 0, which the API rejects: a record asking for
    // one is written as 1.
    emu.faults("a").clear();
    let mut zero = held("", 0);
    zero.lease_duration_secs = Some(0);
    a.update(&v.version, &zero)
        .await
        .expect("written with duration 1");
    assert_eq!(spec(&emu, &name)["leaseDurationSeconds"], 1);
}

async fn a9_too_many_requests_is_transient_with_retry_after() {
    let emu = start();
    let a = lock(&emu, "a", NS, &unique("a9"));
    emu.faults("a").too_many_requests(3);
    match a.get().await {
        Err(LockError::Transient { retry_after, .. }) => {
            assert_eq!(retry_after, Some(Duration::from_secs(3)))
        }
        other => panic!("expected Transient, got {other:?}"),
    }
}

async fn a10_server_error_after_commit_is_unknown_and_the_write_is_visible() {
    for code in [500, 504] {
        let emu = start();
        let name = unique("a10");
        let a = lock(&emu, "a", NS, &name);
        let v = a.create(&held("a", 0)).await.expect("create");
        emu.faults("a")
            .on(Match::writes())
            .times(1)
            .error_after_commit(code);
        let r = a.update(&v.version, &held("b", 1)).await;
        assert!(matches!(r, Err(LockError::Unknown { .. })), "{code}: {r:?}");
        let now = a.get().await.expect("read");
        assert_eq!(now.record.holder.as_ref(), "b", "the write happened");
        assert_ne!(now.version, v.version);
    }
}

async fn a11_service_unavailable_is_transient() {
    let emu = start();
    let name = unique("a11");
    let a = lock(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a").error(503);
    assert!(matches!(
        a.update(&v.version, &held("a", 0)).await,
        Err(LockError::Transient { .. })
    ));
    assert!(matches!(a.get().await, Err(LockError::Transient { .. })));
}

async fn a12_connection_refused_is_transient() {
    let emu = start();
    emu.stop_listening().await;
    let a = lock(&emu, "a", NS, &unique("a12"));
    match a.create(&held("a", 0)).await {
        Err(LockError::Transient { message, .. }) => {
            assert!(message.contains("connect"), "{message}")
        }
        other => panic!("expected Transient, got {other:?}"),
    }
    // Needs no reactor of the caller's: it listens on the emulator's own runtime.
    emu.resume_listening().await.expect("listen again");
    a.create(&held("a", 0)).await.expect("works again");
}

async fn a13_connection_dropped_after_sending_is_unknown() {
    let emu = start();
    let name = unique("a13");
    let a = lock(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a")
        .on(Match::writes())
        .times(1)
        .inject(Fault::DropAfterCommit);
    let r = a.update(&v.version, &held("b", 1)).await;
    assert!(matches!(r, Err(LockError::Unknown { .. })), "{r:?}");
    assert_eq!(spec(&emu, &name)["holderIdentity"], "b", "it committed");
    emu.faults("a")
        .on(Match::writes())
        .times(1)
        .drop_connection();
    let now = a.get().await.expect("read");
    let r = a.update(&now.version, &held("a", 2)).await;
    assert!(matches!(r, Err(LockError::Unknown { .. })), "{r:?}");
}

async fn a14_a_hung_request_is_unknown_after_the_request_timeout() {
    let emu = start();
    let name = unique("a14");
    let a = lock(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a").on(Match::writes()).hang();
    let started = std::time::Instant::now();
    match a.update(&v.version, &held("a", 0)).await {
        Err(LockError::Unknown { message }) => assert!(message.contains("timeout"), "{message}"),
        other => panic!("expected Unknown, got {other:?}"),
    }
    // Bounded by the lock's 500 ms request timeout (generous upper bound for CI).
    assert!(started.elapsed() < Duration::from_secs(5));
}

async fn next_event(s: &mut election_core::WatchStream) -> Option<Result<WatchEvent, LockError>> {
    timeout(Duration::from_secs(5), s.next())
        .await
        .expect("the watch answers in time")
}

fn changed(ev: Option<Result<WatchEvent, LockError>>) -> Observation {
    match ev {
        Some(Ok(WatchEvent::Changed(o))) => o,
        other => panic!("expected a change, got {other:?}"),
    }
}

async fn watch_yields_the_current_state_then_changes() {
    let emu = start();
    let name = unique("watch");
    let a = lock(&emu, "a", NS, &name);
    let b = lock(&emu, "b", NS, &name);
    // A ConfigMap of another name must not show up (field selector).
    lock(&emu, "c", NS, &unique("other"))
        .create(&held("c", 0))
        .await
        .unwrap();
    let v1 = a.create(&held("a", 0)).await.expect("create");
    let mut w = b.watch(None).expect("the ConfigMap lock watches");
    assert_eq!(changed(next_event(&mut w).await), v1);
    let v2 = a.update(&v1.version, &held("a", 0)).await.expect("renew");
    assert_eq!(changed(next_event(&mut w).await), v2);
    compat(async {
        let api: Api<ConfigMap> = Api::namespaced(emu.client("admin").unwrap(), NS);
        api.delete(&name, &DeleteParams::default()).await
    })
    .await
    .unwrap();
    assert!(matches!(
        next_event(&mut w).await,
        Some(Ok(WatchEvent::Deleted))
    ));
}

async fn w1_a_broken_watch_ends_and_resumes_from_the_last_version() {
    let emu = start();
    let name = unique("w1");
    let a = lock(&emu, "a", NS, &name);
    let b = lock(&emu, "b", NS, &name);
    let v1 = a.create(&held("a", 0)).await.expect("create");
    emu.faults("b")
        .on(Match::verbs(&[kube_emulator::Verb::Watch]))
        .times(1)
        .inject(Fault::WatchBreakAfter(Duration::from_millis(100)));
    let mut w = b.watch(Some(&v1.version)).expect("watch");
    // The stream ends (possibly after reporting the break).
    loop {
        match next_event(&mut w).await {
            None => break,
            Some(Err(_)) => continue,
            Some(Ok(ev)) => panic!("nothing changed, got {ev:?}"),
        }
    }
    let v2 = a.update(&v1.version, &held("a", 0)).await.expect("renew");
    let mut w = b.watch(Some(&v1.version)).expect("resume");
    assert_eq!(
        changed(next_event(&mut w).await),
        v2,
        "the change made while not watching"
    );
}

async fn w1_a_silent_watch_ends_after_the_silence_bound() {
    let emu = start();
    let name = unique("w1s");
    let a = lock(&emu, "a", NS, &name);
    let v1 = a.create(&held("a", 0)).await.expect("create");
    let client = kube_support::lock_client(emu.kube_config("b")).unwrap();
    let b = ConfigMapLock::builder(client, NS, &name)
        .watch(WatchConfig {
            silence: Duration::from_millis(300),
            ..WatchConfig::default()
        })
        .build()
        .unwrap();
    emu.faults("b").inject(Fault::WatchSilent);
    let mut w = b.watch(Some(&v1.version)).expect("watch");
    let started = std::time::Instant::now();
    assert!(next_event(&mut w).await.is_none(), "ends without an item");
    assert!(started.elapsed() >= Duration::from_millis(250));
}

async fn w2_gone_ends_the_watch_and_a_fresh_watch_lists_first() {
    let emu = start();
    let name = unique("w2");
    let a = lock(&emu, "a", NS, &name);
    let v1 = a.create(&held("a", 0)).await.expect("create");
    let v2 = a.update(&v1.version, &held("a", 0)).await.expect("renew");
    emu.compact();
    let mut w = a.watch(Some(&v1.version)).expect("watch");
    let mut ended = false;
    for _ in 0..3 {
        match next_event(&mut w).await {
            None => {
                ended = true;
                break;
            }
            Some(Err(_)) => continue,
            Some(Ok(ev)) => panic!("a compacted version yields no change, got {ev:?}"),
        }
    }
    assert!(ended, "the watch ends on 410");
    let mut w = a.watch(None).expect("fresh watch");
    assert_eq!(changed(next_event(&mut w).await), v2);
}

async fn r10_an_identical_rewrite_takes_a_new_version() {
    let emu = start();
    let a = lock(&emu, "a", NS, &unique("r10"));
    let v1 = a.create(&held("a", 0)).await.expect("create");
    let v2 = a
        .update(&v1.version, &held("a", 0))
        .await
        .expect("renew, frozen clock");
    assert_eq!(v1.record, v2.record, "identical bytes");
    assert_ne!(v1.version, v2.version);
    let v3 = a.update(&v2.version, &held("a", 0)).await.expect("again");
    assert_ne!(v3.version, v2.version);
}

async fn r12_foreign_labels_annotations_and_owners_are_preserved() {
    let emu = start();
    let name = unique("r12");
    let client = kube_support::lock_client(emu.kube_config("a")).unwrap();
    let a = ConfigMapLock::builder(client, NS, &name)
        .label("app", "ours")
        .clock(Clock::fixed(T0))
        .build()
        .unwrap();
    let v1 = a.create(&held("a", 0)).await.expect("create");
    // A human (or a controller) adds metadata.
    let v2 = compat(async {
        let api: Api<ConfigMap> = Api::namespaced(emu.client("human").unwrap(), NS);
        let mut lease = api.get(&name).await.unwrap();
        lease
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("team".into(), "x".into());
        lease
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert("note".into(), "keep me".into());
        lease.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "ctl".into(),
            uid: "1234".into(),
            ..OwnerReference::default()
        }]);
        api.replace(&name, &PostParams::default(), &lease)
            .await
            .unwrap()
    })
    .await;
    // The lock writes from a stale cache (v1 is gone): it must still keep them.
    assert_eq!(
        a.update(&v1.version, &held("a", 0)).await,
        Err(LockError::Conflict)
    );
    let mut rec = held("a", 0);
    rec.priority = Some(5);
    a.update(&Version::new(v2.metadata.resource_version.unwrap()), &rec)
        .await
        .expect("renew");
    let obj = raw(&emu, &name);
    assert_eq!(obj["metadata"]["labels"]["team"], "x");
    assert_eq!(obj["metadata"]["labels"]["app"], "ours");
    assert_eq!(obj["metadata"]["annotations"]["note"], "keep me");
    assert_eq!(obj["metadata"]["annotations"]["election.rs/priority"], "5");
    assert_eq!(obj["metadata"]["ownerReferences"][0]["name"], "ctl");
}

async fn h9_events_are_recorded_and_their_failures_do_not_touch_the_lock() {
    let emu = start();
    let name = unique("h9");
    let a = lock(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    a.record_event(LeaderEvent::BecameLeader {
        identity: "a".into(),
    })
    .await
    .expect("event recorded");
    let list = compat(async {
        let events: Api<Event> = Api::namespaced(emu.client("admin").unwrap(), NS);
        events.list(&ListParams::default()).await
    })
    .await
    .unwrap();
    let ev = list
        .items
        .iter()
        .find(|e| e.involved_object.name.as_deref() == Some(name.as_str()))
        .expect("an event on the configmap");
    assert_eq!(ev.reason.as_deref(), Some("LeaderElection"));
    assert_eq!(ev.message.as_deref(), Some("a became leader"));
    assert_eq!(ev.type_.as_deref(), Some("Normal"));
    assert_eq!(ev.involved_object.kind.as_deref(), Some("ConfigMap"));

    emu.faults("a")
        .on(Match::any().resource(Resource::Event))
        .forbidden();
    let err = a
        .record_event(LeaderEvent::StoppedLeading {
            identity: "a".into(),
        })
        .await
        .expect_err("events forbidden");
    assert!(matches!(err.0, LockError::Forbidden { .. }));
    a.update(&v.version, &held("a", 0))
        .await
        .expect("the lock is unaffected");
}

async fn rbac_a_missing_permission_is_reported_clearly() {
    // The Role in lock-configmap/rbac.yaml grants get, create, update and watch on
    // configmaps; without "watch" the watch yields the state it read, then fails
    // with a message naming the verb and the resource, and ends.
    let emu = start();
    let name = unique("rbac");
    let a = lock(&emu, "a", NS, &name);
    a.create(&held("a", 0)).await.expect("create");
    emu.faults("a")
        .on(Match::verbs(&[kube_emulator::Verb::Watch]))
        .forbidden();
    let mut w = a.watch(None).expect("watch");
    let first = changed(next_event(&mut w).await);
    assert_eq!(first.record.holder.as_ref(), "a");
    match next_event(&mut w).await {
        Some(Err(LockError::Forbidden { message })) => {
            assert!(message.contains("watch"), "{message}");
            assert!(message.contains("configmaps"), "{message}");
        }
        other => panic!("expected Forbidden, got {other:?}"),
    }
    assert!(next_event(&mut w).await.is_none(), "and the watch ends");
}

/// The Role shipped in `lock-configmap/rbac.yaml` grants every request a lock session
/// makes: create, read, renew, a fresh watch and a resumed one, an Event, a
/// release. Each (verb, resource) the emulator counted for the lock's client
/// must be allowed by a rule of the Role.
async fn rbac_the_shipped_role_grants_every_request_of_a_session() {
    let emu = start();
    let a = lock(&emu, "a", NS, &unique("rbac-session"));
    test_kit::rbac::rbac_session(&emu, &a, "a", lock_configmap::RBAC_YAML).await;
}

/// Writes a ConfigMap as another client would, returning its version.
async fn foreign(emu: &Emulator, name: &str, annotation: &str) -> Version {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.annotations = Some(BTreeMap::from([(
        lock_configmap::record::ANNOTATION.to_owned(),
        annotation.to_owned(),
    )]));
    cm.data = Some(BTreeMap::from([(
        "app.yaml".to_owned(),
        "replicas: 3".to_owned(),
    )]));
    let created = compat(async {
        let api: Api<ConfigMap> = Api::namespaced(emu.client("other-client").unwrap(), NS);
        api.create(&PostParams::default(), &cm).await
    })
    .await
    .expect("create");
    Version::new(created.metadata.resource_version.unwrap())
}

async fn create_makes_a_configmap_with_just_the_annotation() {
    let emu = start();
    let name = unique("create");
    lock(&emu, "a", NS, &name)
        .create(&held("a", 0))
        .await
        .expect("create");
    let obj = raw(&emu, &name);
    assert!(
        obj.get("data").is_none_or(serde_json::Value::is_null),
        "{obj}"
    );
    let annotations = obj["metadata"]["annotations"].as_object().unwrap();
    assert_eq!(annotations.len(), 1, "{annotations:?}");
}

async fn r6_a_malformed_record_is_held_by_an_unknown_holder_and_taken_over_by_cas() {
    let emu = start();
    let name = unique("r6");
    let v = foreign(
        &emu,
        &name,
        r#"{"holderIdentity":"x","leaseDurationSeconds":"fifteen"}"#,
    )
    .await;
    let a = lock(&emu, "a", NS, &name);
    let seen = a.get().await.expect("no permanent error");
    assert_eq!(seen.version, v);
    assert_eq!(
        seen.record.holder.as_ref(),
        lock_configmap::record::MALFORMED_HOLDER
    );
    assert_eq!(seen.record.lease_duration_secs, None);
    // After a lease (the elector's business), a compare-and-swap takes it over.
    let taken = a.update(&seen.version, &held("a", 1)).await.expect("CAS");
    assert_eq!(taken.record.holder.as_ref(), "a");
    assert_eq!(spec(&emu, &name)["holderIdentity"], "a");
    assert_eq!(
        raw(&emu, &name)["data"]["app.yaml"],
        "replicas: 3",
        "data untouched"
    );
}

async fn r11_fabric8_and_python_records_are_read_and_replaced_by_client_gos() {
    let emu = start();
    for (i, json) in [
        r#"{"holderIdentity":"java","leaseDuration":"PT15S","acquireTime":"2026-08-07T23:11:09.123456Z","renewTime":"2026-08-07T23:11:09.123456Z","leaderTransitions":3}"#,
        r#"{"holderIdentity":"python","leaseDurationSeconds":"15","acquireTime":"2026-08-17 23:11:09.123456","renewTime":"2026-08-17 23:11:09.123456"}"#,
    ]
    .into_iter()
    .enumerate()
    {
        let name = unique("r11");
        let v = foreign(&emu, &name, json).await;
        let a = lock(&emu, "a", NS, &name);
        let seen = a.get().await.expect("read");
        assert_eq!(seen.version, v);
        assert_eq!(seen.record.lease_duration_secs, Some(15), "{json}");
        assert_eq!(seen.record.holder.as_ref(), ["java", "python"][i]);
        assert!(matches!(seen.record.renew_time, Stamp::At(_)));
        a.update(&seen.version, &held("a", seen.record.transitions + 1))
            .await
            .expect("CAS");
        let written = spec(&emu, &name);
        assert_eq!(written["leaseDurationSeconds"], 15);
        assert_eq!(written["renewTime"], "2026-08-07T23:11:09Z");
    }
}

// Each test above on tokio, smol and async-std: `on_tokio::a1_…`, `on_smol::a1_…`,
// `on_async_std::a1_…`.
test_kit::runtime_tests!(
    create_get_update_round_trip_client_go_fields,
    a1_a2_w3_update_from_a_stale_version_is_a_conflict,
    a3_create_of_an_existing_configmap_is_already_exists,
    a4_update_of_a_deleted_configmap_is_not_found_and_does_not_recreate_it,
    a5_missing_namespace_is_invalid_and_names_it,
    a6_forbidden_names_the_verb_and_the_resource,
    a7_unauthorized_is_forbidden,
    a8_unprocessable_write_is_invalid,
    a9_too_many_requests_is_transient_with_retry_after,
    a10_server_error_after_commit_is_unknown_and_the_write_is_visible,
    a11_service_unavailable_is_transient,
    a12_connection_refused_is_transient,
    a13_connection_dropped_after_sending_is_unknown,
    a14_a_hung_request_is_unknown_after_the_request_timeout,
    watch_yields_the_current_state_then_changes,
    w1_a_broken_watch_ends_and_resumes_from_the_last_version,
    w1_a_silent_watch_ends_after_the_silence_bound,
    w2_gone_ends_the_watch_and_a_fresh_watch_lists_first,
    r10_an_identical_rewrite_takes_a_new_version,
    r12_foreign_labels_annotations_and_owners_are_preserved,
    h9_events_are_recorded_and_their_failures_do_not_touch_the_lock,
    rbac_a_missing_permission_is_reported_clearly,
    rbac_the_shipped_role_grants_every_request_of_a_session,
    create_makes_a_configmap_with_just_the_annotation,
    r6_a_malformed_record_is_held_by_an_unknown_holder_and_taken_over_by_cas,
    r11_fabric8_and_python_records_are_read_and_replaced_by_client_gos,
);
