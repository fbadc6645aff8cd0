//! The cases of the Kubernetes lock suite that need no fault injected, on any
//! [`Server`]: the emulator's tests ([`kube_lock_suite!`](crate::kube_lock_suite!))
//! run them on a fresh emulator, the real-server tests
//! ([`kube_lock_suite_on_apiserver!`](crate::kube_lock_suite_on_apiserver!)) on
//! kube-apiserver, each in a namespace of its own ([`Server::namespace`]).
//! Same names as the emulator's cases; the objects are read back as the server
//! has them ([`Server::object`]).

use std::collections::BTreeMap;

use election_core::{Lock, LockError, Stamp, Version, WatchEvent};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource as _;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use lock_kube::{Clock, LeaderEvent, ObjectLock};

use super::{KubeLock, Object, T0, changed, held, lock_on, next_event, raw_in, record_in, unique};
use crate::apiserver::Server;
use crate::runtimes::compat;

/// A create, a read by another client and a release round-trip with the fields,
/// values and timestamp format client-go writes; the holder is written present and
/// empty on release.
pub async fn create_get_update_round_trip_client_go_fields<S: KubeLock>(server: &dyn Server) {
    let ns = &server.namespace();
    let name = unique("rt");
    let a = lock_on::<S>(server, "a", ns, &name);
    assert_eq!(a.get().await, Err(LockError::NotFound));
    let created = a.create(&held("a", 0)).await.expect("create");
    assert_eq!(created.record.holder.as_ref(), "a");
    assert_eq!(created.record.renew_time, Stamp::At(T0));
    let rec = &record_in::<S>(server, ns, &name);
    assert_eq!(rec["holderIdentity"], "a");
    assert_eq!(rec["leaseDurationSeconds"], 15);
    assert_eq!(rec["renewTime"], S::RENEW_TIME_AT_T0);
    assert_eq!(rec[S::TRANSITIONS], 0);

    let b = lock_on::<S>(server, "b", ns, &name);
    let seen = b.get().await.expect("get");
    assert_eq!(seen, created);
    let mut release = held("", 0);
    release.lease_duration_secs = Some(1);
    let released = b.update(&seen.version, &release).await.expect("update");
    assert_ne!(released.version, seen.version);
    let rec = &record_in::<S>(server, ns, &name);
    assert_eq!(
        rec["holderIdentity"], "",
        "written present and empty on release"
    );
    assert_eq!(rec["leaseDurationSeconds"], 1);
}

/// FAULTS A1, A2, W3: a compare-and-swap from a stale cache is a conflict; from a
/// version the lock never saw, it reads first, then writes; from a version neither
/// cached nor current, a conflict without a write (the object keeps its
/// version).
pub async fn a1_a2_w3_update_from_a_stale_version_is_a_conflict<S: KubeLock>(server: &dyn Server) {
    let ns = &server.namespace();
    let name = unique("a1");
    let a = lock_on::<S>(server, "a", ns, &name);
    let b = lock_on::<S>(server, "b", ns, &name);
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
    assert_eq!(record_in::<S>(server, ns, &name)["holderIdentity"], "b");
    // a version a never saw (its cache is stale): read, then CAS on it.
    let v3 = a
        .update(&v2.version, &held("a", 2))
        .await
        .expect("CAS on the fresh version");
    assert_eq!(v3.record.holder.as_ref(), "a");
    // A version that is neither cached nor current is a conflict without a write.
    let version =
        |server: &dyn Server| raw_in::<S>(server, ns, &name)["metadata"]["resourceVersion"].clone();
    let before = version(server);
    assert_eq!(
        a.update(&Version::new("1"), &held("a", 3)).await,
        Err(LockError::Conflict)
    );
    assert_eq!(version(server), before, "no write");
}

/// FAULTS A3: a create of an existing lock object is `AlreadyExists`.
pub async fn a3_create_of_an_existing_object_is_already_exists<S: KubeLock>(server: &dyn Server) {
    let ns = &server.namespace();
    let name = unique("a3");
    let a = lock_on::<S>(server, "a", ns, &name);
    let b = lock_on::<S>(server, "b", ns, &name);
    a.create(&held("a", 0)).await.expect("create");
    assert_eq!(b.create(&held("b", 0)).await, Err(LockError::AlreadyExists));
}

/// FAULTS A4: an update of a deleted lock object is `NotFound`, and re-creates
/// nothing.
pub async fn a4_update_of_a_deleted_object_is_not_found_and_does_not_recreate_it<S: KubeLock>(
    server: &dyn Server,
) {
    let ns = &server.namespace();
    let name = unique("a4");
    let a = lock_on::<S>(server, "a", ns, &name);
    let v1 = a.create(&held("a", 0)).await.expect("create");
    compat(async {
        let api: Api<Object<S>> = Api::namespaced(server.client("admin"), ns);
        api.delete(&name, &DeleteParams::default()).await
    })
    .await
    .expect("delete");
    // Leases allow create-on-update (ConfigMaps do not), but our PUT carries the
    // old UID, whose precondition fails: the lock reports NotFound and nothing is
    // re-created.
    assert_eq!(
        a.update(&v1.version, &held("a", 0)).await,
        Err(LockError::NotFound)
    );
    assert_eq!(a.get().await, Err(LockError::NotFound));
}

/// FAULTS A5: a create in a missing namespace is `Invalid`, naming the namespace.
pub async fn a5_missing_namespace_is_invalid_and_names_it<S: KubeLock>(server: &dyn Server) {
    let a = lock_on::<S>(server, "a", "no-such-ns", "lock");
    match a.create(&held("a", 0)).await {
        Err(LockError::Invalid { message }) => {
            assert!(message.contains("\"no-such-ns\""), "{message}")
        }
        other => panic!("expected Invalid naming the namespace, got {other:?}"),
    }
}

/// FAULTS A8: a record asking for a zero lease duration is written as 1, which
/// the API accepts (it refuses 0).
pub async fn a8_a_zero_lease_duration_is_written_as_one<S: KubeLock>(server: &dyn Server) {
    let ns = &server.namespace();
    let name = unique("a8-zero");
    let a = lock_on::<S>(server, "a", ns, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    let mut zero = held("", 0);
    zero.lease_duration_secs = Some(0);
    a.update(&v.version, &zero)
        .await
        .expect("written with duration 1");
    assert_eq!(record_in::<S>(server, ns, &name)["leaseDurationSeconds"], 1);
}

/// A fresh watch yields the current state, then each change of this object only
/// (field selector), then its deletion.
pub async fn watch_yields_the_current_state_then_changes<S: KubeLock>(server: &dyn Server) {
    let ns = &server.namespace();
    let name = unique("watch");
    let a = lock_on::<S>(server, "a", ns, &name);
    let b = lock_on::<S>(server, "b", ns, &name);
    // An object of another name must not show up (field selector).
    lock_on::<S>(server, "c", ns, &unique("other"))
        .create(&held("c", 0))
        .await
        .unwrap();
    let v1 = a.create(&held("a", 0)).await.expect("create");
    let mut w = b.watch(None).expect("the lock watches");
    assert_eq!(changed(next_event(&mut w).await), v1);
    let v2 = a.update(&v1.version, &held("a", 0)).await.expect("renew");
    assert_eq!(changed(next_event(&mut w).await), v2);
    compat(async {
        let api: Api<Object<S>> = Api::namespaced(server.client("admin"), ns);
        api.delete(&name, &DeleteParams::default()).await
    })
    .await
    .unwrap();
    // The deletion carries its own version, after the last write's.
    match next_event(&mut w).await {
        Some(Ok(WatchEvent::Deleted(Some(at)))) => {
            assert!(at.is_newer_than(&v2.version), "{at:?} after {v2:?}")
        }
        other => panic!("expected the deletion with its version, got {other:?}"),
    }
}

/// FAULTS W2: a resume from a version the server no longer has the history
/// of (410 Gone: compacted on the emulator; before its watch cache began on
/// a restarted kube-apiserver, [`Server::expire_watch_history`]) ends the
/// watch, naming the 410; a fresh watch yields the current state.
pub async fn w2_gone_ends_the_watch_and_a_fresh_watch_lists_first<S: KubeLock>(
    server: &dyn Server,
) {
    let ns = &server.namespace();
    let name = unique("w2");
    let a = lock_on::<S>(server, "a", ns, &name);
    let v1 = a.create(&held("a", 0)).await.expect("create");
    let v2 = a.update(&v1.version, &held("a", 0)).await.expect("renew");
    server.expire_watch_history();
    let mut w = a.watch(Some(&v1.version)).expect("watch");
    let mut errors = Vec::new();
    let mut ended = false;
    for _ in 0..3 {
        match next_event(&mut w).await {
            None => {
                ended = true;
                break;
            }
            Some(Err(e)) => errors.push(e),
            Some(Ok(ev)) => panic!("a version without history yields no change, got {ev:?}"),
        }
    }
    assert!(ended, "the watch ends on 410: {errors:?}");
    // The same words from both servers: `rejected (410 Expired): too old
    // resource version: 5 (6)`.
    assert!(
        errors
            .iter()
            .any(|e| matches!(e, LockError::Invalid { message }
            if message.contains("(410 Expired): too old resource version"))),
        "{}: {errors:?}",
        server.name()
    );
    let mut w = a.watch(None).expect("fresh watch");
    assert_eq!(changed(next_event(&mut w).await), v2);
}

/// FAULTS R10: a write identical to the stored record (a frozen clock) still gets
/// a new version.
pub async fn r10_an_identical_rewrite_takes_a_new_version<S: KubeLock>(server: &dyn Server) {
    let ns = &server.namespace();
    let a = lock_on::<S>(server, "a", ns, &unique("r10"));
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

/// FAULTS R12: labels, annotations and owner references that others put on the
/// lock object are kept, even by a write from a stale cache; the lock's own labels
/// and annotations are added.
pub async fn r12_foreign_labels_annotations_and_owners_are_preserved<S: KubeLock>(
    server: &dyn Server,
) {
    let ns = &server.namespace();
    let name = unique("r12");
    let client = lock_kube::lock_client(server.kube_config("a")).unwrap();
    let a = ObjectLock::<S::Codec>::builder(client, ns, &name)
        .label("app", "ours")
        .clock(Clock::fixed(T0))
        .build()
        .unwrap();
    let v1 = a.create(&held("a", 0)).await.expect("create");
    // A human (or a controller) adds metadata.
    let v2 = compat(async {
        let api: Api<Object<S>> = Api::namespaced(server.client("human"), ns);
        let mut obj = api.get(&name).await.unwrap();
        obj.meta_mut()
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("team".into(), "x".into());
        obj.meta_mut()
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert("note".into(), "keep me".into());
        obj.meta_mut().owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "ctl".into(),
            uid: "1234".into(),
            ..OwnerReference::default()
        }]);
        api.replace(&name, &PostParams::default(), &obj)
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
    a.update(
        &Version::new(v2.meta().resource_version.clone().unwrap()),
        &rec,
    )
    .await
    .expect("renew");
    let obj = raw_in::<S>(server, ns, &name);
    assert_eq!(obj["metadata"]["labels"]["team"], "x");
    assert_eq!(obj["metadata"]["labels"]["app"], "ours");
    assert_eq!(obj["metadata"]["annotations"]["note"], "keep me");
    assert_eq!(
        obj["metadata"]["annotations"]["kube-elector.dev/priority"],
        "5"
    );
    assert_eq!(obj["metadata"]["ownerReferences"][0]["name"], "ctl");
}

/// FAULTS H9: leadership Events are recorded on the lock object as client-go
/// words them (the emulator's case adds the other half: a refused Event leaves
/// the lock working).
pub async fn h9_events_are_recorded_as_client_go_words_them<S: KubeLock>(server: &dyn Server) {
    h9_record_an_event::<S>(server, &server.namespace()).await;
}

/// The recording half of H9 in `ns`: the lock that recorded the Event, and the
/// version of its object.
pub(super) async fn h9_record_an_event<S: KubeLock>(
    server: &dyn Server,
    ns: &str,
) -> (ObjectLock<S::Codec>, Version) {
    let name = unique("h9");
    let a = lock_on::<S>(server, "a", ns, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    a.record_event(LeaderEvent::BecameLeader {
        identity: "a".into(),
    })
    .await
    .expect("event recorded");
    let list = compat(async {
        let events: Api<Event> = Api::namespaced(server.client("admin"), ns);
        events.list(&ListParams::default()).await
    })
    .await
    .unwrap();
    let ev = list
        .items
        .iter()
        .find(|e| e.involved_object.name.as_deref() == Some(name.as_str()))
        .expect("an event on the lock object");
    assert_eq!(ev.reason.as_deref(), Some("LeaderElection"));
    assert_eq!(ev.message.as_deref(), Some("a became leader"));
    assert_eq!(ev.type_.as_deref(), Some("Normal"));
    assert_eq!(
        ev.involved_object.kind.as_deref(),
        Some(Object::<S>::kind(&()).as_ref())
    );
    assert_eq!(ev.involved_object.namespace.as_deref(), Some(ns));
    (a, v.version)
}

/// FAULTS R1, R2, R9: a human's edits (another holder with a far-future renew
/// time; an empty holder with a far-past one) are read as written, and a renew
/// from the version before them loses its compare-and-swap.
pub async fn r1_r2_r9_human_edits_are_read_and_our_stale_cas_fails<S: KubeLock>(
    server: &dyn Server,
) {
    let ns = &server.namespace();
    let name = unique("r1");
    let a = lock_on::<S>(server, "a", ns, &name);
    let v1 = a.create(&held("a", 0)).await.expect("create");
    // The human's client and calls get a tokio reactor from `compat`; the lock's do not.
    let api: Api<Object<S>> = compat(async { Api::namespaced(server.client("human"), ns) }).await;
    for (holder, renew) in [
        ("intruder", "2099-01-01T00:00:00.000000Z"), // R1, with R9's far-future renewTime
        ("", "1999-01-01T00:00:00.000000Z"),         // R2, far past
    ] {
        compat(async {
            let mut obj = api.get(&name).await.unwrap();
            S::edit_record(&mut obj, holder, renew);
            api.replace(&name, &PostParams::default(), &obj)
                .await
                .unwrap();
        })
        .await;
        let seen = a.get().await.expect("read");
        assert_eq!(seen.record.holder.as_ref(), holder);
        assert!(matches!(seen.record.renew_time, Stamp::At(_)));
    }
    // Our renew from the version before the edits loses its compare-and-swap.
    assert_eq!(
        a.update(&v1.version, &held("a", 0)).await,
        Err(LockError::Conflict)
    );
    assert_eq!(record_in::<S>(server, ns, &name)["holderIdentity"], "");
}
