//! The suite of a Kubernetes lock (`lock_kube::ObjectLock` over a codec),
//! written once and run for each: the Lease lock and the ConfigMap lock against
//! the API emulator, with the real `kube` client over real HTTP on 127.0.0.1 and
//! faults injected per client. Each case is named after the FAULTS.md row it
//! covers.
//!
//! A lock crate describes its codec to the suite with a [`KubeLock`] (where the
//! record lives in the stored object, the Role it ships), then instantiates:
//!
//! - the cases below with [`kube_lock_suite!`](crate::kube_lock_suite!), each a
//!   test on tokio, smol and async-std (`on_tokio::a1_…`, `on_smol::a1_…`,
//!   `on_async_std::a1_…`, by [`runtime_tests!`](crate::runtime_tests!));
//! - the lock conformance suite of `lock-memory` with [`conformance`];
//! - the three-candidate election story with the functions of [`election`].
//!
//! The lock bridges kube's client to the runtime itself, so its calls are made as
//! they are; the suite's own direct `kube` calls go through
//! [`compat`], and its timers are `async-io`'s.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use election_core::{
    Config, Lock, LockError, LockRecord, Observation, Stamp, WallTime, WatchEvent,
};
use futures::StreamExt;
use kube::api::{Api, DeleteParams};
use kube_emulator::{Emulator, Fault, Match, Resource};
use lock_kube::{Clock, Codec, LeaderEvent, ObjectLock, WatchConfig};
use lock_memory::conformance::{Case, Harness, run_all};

use crate::apiserver::Server;
use crate::runtimes::{compat, timeout};

pub mod any_server;
pub mod election;
pub mod on_apiserver;
pub mod shared;

/// A Kubernetes lock under test: its codec, and what the suite must know about
/// where the codec keeps the record.
pub trait KubeLock: 'static {
    /// The codec; the lock under test is `ObjectLock<Self::Codec>`.
    type Codec: Codec + Default;

    /// The emulator's name for the kind of the lock object.
    const RESOURCE: Resource;

    /// The Role and RoleBinding the lock ships (its `RBAC_YAML`).
    const RBAC_YAML: &'static str;

    /// `renewTime` as the lock writes [`T0`] (its timestamp format).
    const RENEW_TIME_AT_T0: &'static str;

    /// The record's field for the transition count (`leaseTransitions`,
    /// `leaderTransitions`).
    const TRANSITIONS: &'static str;

    /// The record in `obj` (the lock object as the emulator stores it), as JSON
    /// with client-go's field names: `holderIdentity`, `leaseDurationSeconds`,
    /// `renewTime`, [`Self::TRANSITIONS`].
    fn record_json(obj: &serde_json::Value) -> serde_json::Value;

    /// Edits the record in `obj` as a human with `kubectl edit` would: sets its
    /// `holderIdentity` to `holder` and its `renewTime` to `renew_time` (text as
    /// written), and nothing else.
    fn edit_record(obj: &mut Object<Self>, holder: &str, renew_time: &str);
}

/// The kind of `S`'s lock object (`Lease`, `ConfigMap`).
pub type Object<S> = <<S as KubeLock>::Codec as Codec>::Object;

/// Makes the [`kube_lock`](crate::kube_lock) cases for the lock `S` (a
/// [`KubeLock`]) `async fn`s of the calling module, and runs each, with the
/// calling module's own `extra` tests, on tokio, smol and async-std
/// ([`runtime_tests!`](crate::runtime_tests!)).
///
/// ```text
/// test_kit::kube_lock_suite!(Lease);
/// test_kit::kube_lock_suite!(ConfigMap; extra: r6_a_malformed_record_is_held_by_an_unknown_holder);
/// ```
#[macro_export]
macro_rules! kube_lock_suite {
    ($subject:ty $(; extra: $($extra:ident),+ $(,)?)?) => {
        $crate::kube_lock_suite!(@cases $subject; [$($($extra),+)?];
            create_get_update_round_trip_client_go_fields,
            a1_a2_w3_update_from_a_stale_version_is_a_conflict,
            a3_create_of_an_existing_object_is_already_exists,
            a4_update_of_a_deleted_object_is_not_found_and_does_not_recreate_it,
            a5_missing_namespace_is_invalid_and_names_it,
            a6_forbidden_names_the_verb_and_the_resource,
            a7_unauthorized_is_forbidden,
            a8_unprocessable_write_is_invalid,
            a9_too_many_requests_is_transient_with_retry_after,
            a9_a_plain_text_429_keeps_the_retry_after_header,
            a10_server_error_after_commit_is_unknown_and_the_write_is_visible,
            a11_service_unavailable_is_transient,
            a12_connection_refused_is_transient,
            a13_connection_dropped_after_sending_is_unknown,
            a14_a_hung_request_is_left_to_the_drivers_bound,
            watch_yields_the_current_state_then_changes,
            w1_a_broken_watch_ends_and_resumes_from_the_last_version,
            w1_a_silent_watch_ends_after_the_silence_bound,
            w2_gone_ends_the_watch_and_a_fresh_watch_lists_first,
            r10_an_identical_rewrite_takes_a_new_version,
            r12_foreign_labels_annotations_and_owners_are_preserved,
            h9_events_are_recorded_and_their_failures_do_not_touch_the_lock,
            rbac_a_missing_permission_is_reported_clearly,
            rbac_the_shipped_role_grants_every_request_of_a_session,
            r1_r2_r9_human_edits_are_read_and_our_stale_cas_fails,
            a15_a16_a_held_answer_is_awaited_and_the_write_landed,
        );
    };
    (@cases $subject:ty; [$($extra:ident),*]; $($case:ident,)+) => {
        $(
            async fn $case() {
                $crate::kube_lock::$case::<$subject>().await
            }
        )+
        $crate::runtime_tests!($($case,)+ $($extra),*);
    };
}

/// Makes the cases of [`any_server`] (those that need no injected fault), of
/// [`on_apiserver`] (the shipped Role under real RBAC) and the lock
/// conformance suite ([`conformance_on`]) tests against the real
/// kube-apiserver ([`ApiServer::shared`](crate::apiserver::ApiServer::shared),
/// one per test binary, a namespace per test), in a module `on_apiserver`, on
/// tokio. They are `#[ignore]`d: they need the server built by
/// `testing/k8s-server/build.sh`, and `.ci/run` runs them with `--ignored`.
///
/// ```text
/// test_kit::kube_lock_suite_on_apiserver!(LeaseSuite);
/// ```
#[macro_export]
macro_rules! kube_lock_suite_on_apiserver {
    ($subject:ty) => {
        $crate::kube_lock_suite_on_apiserver!(@cases $subject;
            create_get_update_round_trip_client_go_fields,
            a1_a2_w3_update_from_a_stale_version_is_a_conflict,
            a3_create_of_an_existing_object_is_already_exists,
            a4_update_of_a_deleted_object_is_not_found_and_does_not_recreate_it,
            a5_missing_namespace_is_invalid_and_names_it,
            a8_a_zero_lease_duration_is_written_as_one,
            watch_yields_the_current_state_then_changes,
            r10_an_identical_rewrite_takes_a_new_version,
            r12_foreign_labels_annotations_and_owners_are_preserved,
            h9_events_are_recorded_as_client_go_words_them,
            r1_r2_r9_human_edits_are_read_and_our_stale_cas_fails,
        );
    };
    (@rbac $subject:ty; $($case:ident,)+) => {
        $(
            #[test]
            #[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
            fn $case() {
                $crate::runtimes::Runtime::Tokio.run(|| {
                    $crate::kube_lock::on_apiserver::$case::<$subject>(
                        $crate::apiserver::ApiServer::shared(),
                    )
                })
            }
        )+
    };
    (@cases $subject:ty; $($case:ident,)+) => {
        mod on_apiserver {
            #[allow(unused_imports)]
            use super::*;

            $(
                #[test]
                #[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
                fn $case() {
                    $crate::runtimes::Runtime::Tokio.run(|| {
                        $crate::kube_lock::any_server::$case::<$subject>(
                            $crate::apiserver::ApiServer::shared(),
                        )
                    })
                }
            )+

            $crate::kube_lock_suite_on_apiserver!(@rbac $subject;
                rbac_the_shipped_role_grants_every_request_of_a_session,
                rbac_a_missing_permission_is_reported_clearly,
            );

            /// FAULTS W2 on a server of its own: it restarts kube-apiserver.
            #[test]
            #[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
            fn w2_gone_ends_the_watch_and_a_fresh_watch_lists_first() {
                let server = $crate::apiserver::ApiServer::start().expect("kube-apiserver");
                $crate::runtimes::Runtime::Tokio.run(|| {
                    $crate::kube_lock::any_server::w2_gone_ends_the_watch_and_a_fresh_watch_lists_first::<$subject>(&server)
                })
            }

            /// The lock conformance suite, whole.
            #[test]
            #[ignore = "needs the built kube-apiserver: bash testing/k8s-server/build.sh; CI runs it"]
            fn conformance() {
                $crate::runtimes::Runtime::Tokio.run(|| {
                    $crate::kube_lock::conformance_on::<$subject>(
                        $crate::apiserver::ApiServer::shared(),
                    )
                })
            }
        }
    };
}

/// The namespace of the lock objects.
pub const NS: &str = "default";
/// The frozen wall clock of [`lock`]: 2026-08-07T23:11:09Z.
pub const T0: WallTime = WallTime {
    unix_secs: 1_786_144_269,
    nanos: 0,
};

/// A name no other test of this process uses.
pub fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// The lock under test on the object `name` in `ns`, as the client `token`, with
/// a wall clock frozen at [`T0`].
pub fn lock<S: KubeLock>(
    emu: &Emulator,
    token: &str,
    ns: &str,
    name: &str,
) -> ObjectLock<S::Codec> {
    lock_on::<S>(emu, token, ns, name)
}

/// [`lock`] on any [`Server`], as `identity`.
pub fn lock_on<S: KubeLock>(
    server: &dyn Server,
    identity: &str,
    ns: &str,
    name: &str,
) -> ObjectLock<S::Codec> {
    let client = lock_kube::lock_client(server.kube_config(identity)).expect("client");
    ObjectLock::<S::Codec>::builder(client, ns, name)
        .clock(Clock::fixed(T0))
        .build()
        .expect("valid names")
}

/// A record held by `holder` for 15 s, stamped now, after `transitions` changes.
pub fn held(holder: &str, transitions: u32) -> LockRecord {
    LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(15),
        acquire_time: Stamp::Now,
        renew_time: Stamp::Now,
        transitions,
        ..LockRecord::default()
    }
}

/// The lock object `name` in [`NS`] as the emulator stores it.
pub fn raw<S: KubeLock>(emu: &Emulator, name: &str) -> serde_json::Value {
    raw_in::<S>(emu, NS, name)
}

/// The record in the lock object `name` in [`NS`], as JSON in client-go's field
/// names.
pub fn record<S: KubeLock>(emu: &Emulator, name: &str) -> serde_json::Value {
    S::record_json(&raw::<S>(emu, name))
}

/// The lock object `name` in `ns` as `server` has it.
pub fn raw_in<S: KubeLock>(server: &dyn Server, ns: &str, name: &str) -> serde_json::Value {
    server.object(S::RESOURCE, ns, name).unwrap_or_else(|| {
        panic!(
            "the lock object {ns}/{name} exists on the {}",
            server.name()
        )
    })
}

/// The record in the lock object `name` in `ns` on `server`, as JSON in
/// client-go's field names.
pub fn record_in<S: KubeLock>(server: &dyn Server, ns: &str, name: &str) -> serde_json::Value {
    S::record_json(&raw_in::<S>(server, ns, name))
}

/// The emulator, on a thread and tokio runtime of its own: the tests run on any
/// runtime.
pub fn start() -> Emulator {
    Emulator::start_blocking().expect("emulator starts")
}

/// A create, a read by another client and a release round-trip with the fields,
/// values and timestamp format client-go writes; the holder is written present and
/// empty on release.
pub async fn create_get_update_round_trip_client_go_fields<S: KubeLock>() {
    any_server::create_get_update_round_trip_client_go_fields::<S>(&start()).await
}

/// FAULTS A1, A2, W3: a compare-and-swap from a stale cache is a conflict; from a
/// version the lock never saw, it reads first, then writes; from a version neither
/// cached nor current, a conflict without a write.
pub async fn a1_a2_w3_update_from_a_stale_version_is_a_conflict<S: KubeLock>() {
    any_server::a1_a2_w3_update_from_a_stale_version_is_a_conflict::<S>(&start()).await
}

/// FAULTS A3: a create of an existing lock object is `AlreadyExists`.
pub async fn a3_create_of_an_existing_object_is_already_exists<S: KubeLock>() {
    any_server::a3_create_of_an_existing_object_is_already_exists::<S>(&start()).await
}

/// FAULTS A4: an update of a deleted lock object is `NotFound`, and re-creates
/// nothing.
pub async fn a4_update_of_a_deleted_object_is_not_found_and_does_not_recreate_it<S: KubeLock>() {
    any_server::a4_update_of_a_deleted_object_is_not_found_and_does_not_recreate_it::<S>(&start())
        .await
}

/// FAULTS A5: a create in a missing namespace is `Invalid`, naming the namespace.
pub async fn a5_missing_namespace_is_invalid_and_names_it<S: KubeLock>() {
    any_server::a5_missing_namespace_is_invalid_and_names_it::<S>(&start()).await
}

/// FAULTS A6: a 403 is `Forbidden`, naming the verb, the resource and the object;
/// once allowed again, the same lock works.
pub async fn a6_forbidden_names_the_verb_and_the_resource<S: KubeLock>() {
    let emu = start();
    let name = unique("a6");
    let a = lock::<S>(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a").on(Match::writes()).forbidden();
    match a.update(&v.version, &held("a", 0)).await {
        Err(LockError::Forbidden { message }) => {
            assert!(message.contains("update"), "{message}");
            assert!(message.contains(S::Codec::RESOURCE), "{message}");
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

/// FAULTS A7: a 401 is `Forbidden`.
pub async fn a7_unauthorized_is_forbidden<S: KubeLock>() {
    let emu = start();
    let a = lock::<S>(&emu, "a", NS, &unique("a7"));
    emu.faults("a").error(401);
    match a.get().await {
        Err(LockError::Forbidden { message }) => assert!(message.contains("401"), "{message}"),
        other => panic!("expected Forbidden, got {other:?}"),
    }
}

/// FAULTS A8: a 422 is `Invalid`; a record asking for a zero lease duration is
/// written as 1, which the API accepts.
pub async fn a8_unprocessable_write_is_invalid<S: KubeLock>() {
    let emu = start();
    let name = unique("a8");
    let a = lock::<S>(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a").on(Match::writes()).error(422);
    assert!(matches!(
        a.update(&v.version, &held("a", 0)).await,
        Err(LockError::Invalid { .. })
    ));
    // We never write a duration of 0, which the API rejects: a record asking for
    // one is written as 1.
    emu.faults("a").clear();
    any_server::a8_a_zero_lease_duration_is_written_as_one::<S>(&emu).await;
}

/// FAULTS A9: a 429 is `Transient` with its `retryAfterSeconds`.
pub async fn a9_too_many_requests_is_transient_with_retry_after<S: KubeLock>() {
    let emu = start();
    let a = lock::<S>(&emu, "a", NS, &unique("a9"));
    emu.faults("a").too_many_requests(3);
    match a.get().await {
        Err(LockError::Transient { retry_after, .. }) => {
            assert_eq!(retry_after, Some(Duration::from_secs(3)))
        }
        other => panic!("expected Transient, got {other:?}"),
    }
}

/// A real API server's 429 carries the delay in the `Retry-After` header only,
/// with a plain-text body (no `details.retryAfterSeconds`): the lock's client
/// keeps the header, so the error still says when to retry.
pub async fn a9_a_plain_text_429_keeps_the_retry_after_header<S: KubeLock>() {
    let emu = start();
    let name = unique("a9-plain");
    let a = lock::<S>(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a").too_many_requests_plain(4);
    for r in [a.get().await, a.update(&v.version, &held("a", 0)).await] {
        match r {
            Err(LockError::Transient {
                retry_after,
                message,
            }) => {
                assert_eq!(retry_after, Some(Duration::from_secs(4)), "{message}");
                assert!(message.contains("429"), "{message}");
            }
            other => panic!("expected Transient, got {other:?}"),
        }
    }
}

/// FAULTS A10: a 500 or 504 after the write committed is `Unknown`, and the write
/// is visible to the next read.
pub async fn a10_server_error_after_commit_is_unknown_and_the_write_is_visible<S: KubeLock>() {
    for code in [500, 504] {
        let emu = start();
        let name = unique("a10");
        let a = lock::<S>(&emu, "a", NS, &name);
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

/// FAULTS A11: a 503 is `Transient`, for reads and writes.
pub async fn a11_service_unavailable_is_transient<S: KubeLock>() {
    let emu = start();
    let name = unique("a11");
    let a = lock::<S>(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a").error(503);
    assert!(matches!(
        a.update(&v.version, &held("a", 0)).await,
        Err(LockError::Transient { .. })
    ));
    assert!(matches!(a.get().await, Err(LockError::Transient { .. })));
}

/// FAULTS A12: a refused connection is `Transient`; the lock works again once the
/// server listens.
pub async fn a12_connection_refused_is_transient<S: KubeLock>() {
    let emu = start();
    emu.stop_listening().await;
    let a = lock::<S>(&emu, "a", NS, &unique("a12"));
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

/// FAULTS A13: a connection dropped after the request was sent is `Unknown`,
/// whether the write committed or not.
pub async fn a13_connection_dropped_after_sending_is_unknown<S: KubeLock>() {
    let emu = start();
    let name = unique("a13");
    let a = lock::<S>(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a")
        .on(Match::writes())
        .times(1)
        .inject(Fault::AnswerLost);
    let r = a.update(&v.version, &held("b", 1)).await;
    assert!(matches!(r, Err(LockError::Unknown { .. })), "{r:?}");
    assert_eq!(
        record::<S>(&emu, &name)["holderIdentity"],
        "b",
        "it committed"
    );
    emu.faults("a").on(Match::writes()).times(1).reset();
    let now = a.get().await.expect("read");
    let r = a.update(&now.version, &held("a", 2)).await;
    assert!(matches!(r, Err(LockError::Unknown { .. })), "{r:?}");
}

/// FAULTS A14: a hung request is bounded once, by the driver (its request
/// timeout turns the call into `Unknown`), not a second time by the lock: a
/// configured lock's update under a hang is still waiting well past the
/// election's request timeout, and is cancelled by being dropped, as the
/// driver drops it.
pub async fn a14_a_hung_request_is_left_to_the_drivers_bound<S: KubeLock>() {
    let emu = start();
    let name = unique("a14");
    let a = lock::<S>(&emu, "a", NS, &name);
    let mut config = Config::fast("a");
    config.request_timeout = Duration::from_millis(300);
    a.configure(&config);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a").on(Match::writes()).hang();
    let record = held("a", 0);
    let hung = a.update(&v.version, &record);
    let answer = crate::runtimes::timeout(Duration::from_millis(900), hung).await;
    assert!(
        answer.is_none(),
        "the lock bounded its own call: {answer:?}"
    );
    emu.faults("a").clear();
    assert_eq!(
        a.get().await.expect("read").version,
        v.version,
        "the hung write was never applied"
    );
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

/// A fresh watch yields the current state, then each change of this object only
/// (field selector), then its deletion.
pub async fn watch_yields_the_current_state_then_changes<S: KubeLock>() {
    any_server::watch_yields_the_current_state_then_changes::<S>(&start()).await
}

/// FAULTS W1: a broken watch ends; resumed from the last version seen, it yields
/// the change made meanwhile.
pub async fn w1_a_broken_watch_ends_and_resumes_from_the_last_version<S: KubeLock>() {
    let emu = start();
    let name = unique("w1");
    let a = lock::<S>(&emu, "a", NS, &name);
    let b = lock::<S>(&emu, "b", NS, &name);
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

/// FAULTS W1: a watch that says nothing ends after the silence bound.
pub async fn w1_a_silent_watch_ends_after_the_silence_bound<S: KubeLock>() {
    let emu = start();
    let name = unique("w1s");
    let a = lock::<S>(&emu, "a", NS, &name);
    let v1 = a.create(&held("a", 0)).await.expect("create");
    let client = lock_kube::lock_client(emu.kube_config("b")).unwrap();
    let b = ObjectLock::<S::Codec>::builder(client, NS, &name)
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

/// FAULTS W2: a resume from a compacted version (410) ends the watch; a fresh
/// watch yields the current state.
pub async fn w2_gone_ends_the_watch_and_a_fresh_watch_lists_first<S: KubeLock>() {
    any_server::w2_gone_ends_the_watch_and_a_fresh_watch_lists_first::<S>(&start()).await
}

/// FAULTS R10: a write identical to the stored record (a frozen clock) still gets
/// a new version.
pub async fn r10_an_identical_rewrite_takes_a_new_version<S: KubeLock>() {
    any_server::r10_an_identical_rewrite_takes_a_new_version::<S>(&start()).await
}

/// FAULTS R12: labels, annotations and owner references that others put on the
/// lock object are kept, even by a write from a stale cache; the lock's own labels
/// and annotations are added.
pub async fn r12_foreign_labels_annotations_and_owners_are_preserved<S: KubeLock>() {
    any_server::r12_foreign_labels_annotations_and_owners_are_preserved::<S>(&start()).await
}

/// FAULTS H9: leadership Events are recorded on the lock object as client-go
/// words them; a refused Event is an error for the log and leaves the lock working.
pub async fn h9_events_are_recorded_and_their_failures_do_not_touch_the_lock<S: KubeLock>() {
    let emu = start();
    let (a, version) = any_server::h9_record_an_event::<S>(&emu, NS).await;
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
    a.update(&version, &held("a", 0))
        .await
        .expect("the lock is unaffected");
}

/// A missing RBAC permission is reported clearly.
pub async fn rbac_a_missing_permission_is_reported_clearly<S: KubeLock>() {
    // The Role each lock ships (its rbac.yaml) grants get, create, update and
    // watch on its objects; without "watch" the watch yields the state it read, then fails
    // with a message naming the verb and the resource, and ends.
    let emu = start();
    let name = unique("rbac");
    let a = lock::<S>(&emu, "a", NS, &name);
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
            assert!(message.contains(S::Codec::RESOURCE), "{message}");
        }
        other => panic!("expected Forbidden, got {other:?}"),
    }
    assert!(next_event(&mut w).await.is_none(), "and the watch ends");
}

/// The Role the lock ships ([`KubeLock::RBAC_YAML`]) grants every request a lock session
/// makes: create, read, renew, a fresh watch and a resumed one, an Event, a
/// release. Each (verb, resource) the emulator counted for the lock's client
/// must be allowed by a rule of the Role.
pub async fn rbac_the_shipped_role_grants_every_request_of_a_session<S: KubeLock>() {
    let emu = start();
    let a = lock::<S>(&emu, "a", NS, &unique("rbac-session"));
    crate::rbac::rbac_session(&emu, &a, "a", S::RBAC_YAML).await;
}

/// FAULTS R1, R2, R9: a human's edits (another holder with a far-future renew
/// time; an empty holder with a far-past one) are read as written, and a renew
/// from the version before them loses its compare-and-swap.
pub async fn r1_r2_r9_human_edits_are_read_and_our_stale_cas_fails<S: KubeLock>() {
    any_server::r1_r2_r9_human_edits_are_read_and_our_stale_cas_fails::<S>(&start()).await
}

/// FAULTS A15, A16: an answer held after the write committed is still awaited
/// by the lock (the driver's request timeout is the one bound, and makes it
/// `Unknown`): the write landed before any answer; and a slow read answers,
/// late, with the record.
pub async fn a15_a16_a_held_answer_is_awaited_and_the_write_landed<S: KubeLock>() {
    let emu = start();
    let name = unique("a16");
    let a = lock::<S>(&emu, "a", NS, &name);
    let v = a.create(&held("a", 0)).await.expect("create");
    emu.faults("a")
        .on(Match::writes())
        .times(1)
        .inject(Fault::DelayAfterCommit(Duration::from_secs(2)));
    let takeover = held("b", 1);
    let held_answer = a.update(&v.version, &takeover);
    let r = crate::runtimes::timeout(Duration::from_millis(900), held_answer).await;
    assert!(r.is_none(), "answered before the delay: {r:?}");
    assert_eq!(
        record::<S>(&emu, &name)["holderIdentity"],
        "b",
        "committed before the answer"
    );
    emu.faults("a").clear();
    emu.faults("a").latency(Duration::from_millis(800));
    let started = std::time::Instant::now();
    let seen = a.get().await.expect("a slow read answers");
    assert!(started.elapsed() >= Duration::from_millis(800));
    assert_eq!(seen.record.holder.as_ref(), "b");
}

/// The lock conformance suite of `lock-memory`, run whole against `S`'s lock over
/// a fresh emulator, on whichever runtime runs it ([`runtime_tests!`] runs it on a
/// thread with a large stack: the suite's futures nest deeply in debug builds).
/// Every case must pass, none be skipped, in the suite's order, and the printed
/// report must say so line by line.
///
/// [`runtime_tests!`]: crate::runtime_tests!
pub async fn conformance<S: KubeLock>() {
    conformance_on::<S>(&start()).await;
}

/// [`conformance`] against any [`Server`], in a namespace of its own.
pub async fn conformance_on<S: KubeLock>(server: &dyn Server) {
    let mut h = ObjectHarness::<S> {
        server,
        ns: server.namespace(),
        name: String::new(),
        shared: None,
    };
    check_conformance(run_all(&mut h).await);
}

/// The conformance suite on `S`'s lock watched through a shared watch per client
/// ([`lock_kube::SharedWatch`]), on tokio (the shared watches run as tokio
/// tasks).
pub async fn conformance_shared<S: KubeLock>() {
    let emu = Emulator::start().await.expect("emulator");
    let shared = ["a", "b"].map(|token| {
        let client = lock_kube::lock_client(emu.kube_config(token)).expect("client");
        let label = [("election.test/conformance".to_owned(), "shared".to_owned())];
        let shared = ObjectLock::<S::Codec>::shared_watch(client, NS, label, Default::default());
        tokio::spawn(shared.run());
        shared
    });
    let mut h = ObjectHarness::<S> {
        server: &emu,
        ns: NS.to_owned(),
        name: String::new(),
        shared: Some(shared),
    };
    check_conformance(run_all(&mut h).await);
}

/// Every case ran and passed, in the suite's order, and the report says so line
/// by line.
fn check_conformance(r: lock_memory::conformance::Report) {
    assert!(r.is_complete(), "every case ran and passed: {r}");
    assert_eq!(r.passed(), Case::ALL, "{r}");
    let lines: Vec<String> = r.to_string().lines().map(str::to_owned).collect();
    let expected: Vec<String> = Case::ALL.iter().map(|c| format!("ok      {c}")).collect();
    assert_eq!(lines, expected);
}

/// The conformance harness: two clients' locks on a fresh object per case
/// (watched through the clients' shared watches if given), and an admin's
/// delete.
struct ObjectHarness<'s, S: KubeLock> {
    server: &'s dyn Server,
    ns: String,
    name: String,
    shared: Option<[lock_kube::SharedWatch<Object<S>>; 2]>,
}

impl<S: KubeLock> ObjectHarness<'_, S> {
    fn lock(&self, token: &str) -> ObjectLock<S::Codec> {
        let client = lock_kube::lock_client(self.server.kube_config(token)).expect("client");
        let mut b = ObjectLock::<S::Codec>::builder(client, &self.ns, &self.name);
        if let Some(shared) = &self.shared {
            b = b.shared_watch(&shared[usize::from(token == "b")]);
        }
        b.build().expect("valid names")
    }
}

impl<S: KubeLock> Harness for ObjectHarness<'_, S> {
    type Lock = ObjectLock<S::Codec>;

    async fn fresh(&mut self) -> (Self::Lock, Self::Lock) {
        static N: AtomicU32 = AtomicU32::new(0);
        self.name = format!("conformance-{}", N.fetch_add(1, Ordering::Relaxed));
        (self.lock("a"), self.lock("b"))
    }

    async fn delete(&mut self) -> bool {
        let client = lock_kube::lock_client(self.server.kube_config("admin")).expect("client");
        let api: Api<Object<S>> = Api::namespaced(client, &self.ns);
        let name = self.name.clone();
        // kube's client wants a tokio reactor, also under smol and async-std.
        compat(async move { api.delete(&name, &DeleteParams::default()).await })
            .await
            .is_ok()
    }
}
