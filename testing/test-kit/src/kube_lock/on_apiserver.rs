//! The cases of the Kubernetes lock suite that only a real API server answers:
//! the Role a lock ships ([`KubeLock::RBAC_YAML`]) under kube-apiserver's RBAC
//! authorizer. The emulator does not enforce RBAC; its tests check the Role
//! against the requests it counted instead (`rbac_the_shipped_role_grants_every_request_of_a_session`
//! in [`kube_lock`](super)). Run by
//! [`kube_lock_suite_on_apiserver!`](crate::kube_lock_suite_on_apiserver!).

use std::time::Duration;

use election_core::{Lock, LockError, LockRecord, Stamp, Version, WatchEvent};
use futures::StreamExt;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, ListParams, PostParams};
use lock_kube::{Codec, LeaderEvent, ObjectLock};

use super::{KubeLock, unique};
use crate::apiserver::{ADMIN, ApiServer, Server};
use crate::runtimes::timeout;

/// The Role and RoleBinding of `S`'s `RBAC_YAML`, as shipped.
fn shipped<S: KubeLock>() -> (Role, RoleBinding) {
    let docs: Vec<serde_json::Value> =
        serde_saphyr::from_str_multiple(S::RBAC_YAML).expect("the shipped RBAC YAML parses");
    let of_kind = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .cloned()
            .unwrap_or_else(|| panic!("the shipped RBAC YAML has a {kind}"))
    };
    (
        serde_json::from_value(of_kind("Role")).expect("a valid Role"),
        serde_json::from_value(of_kind("RoleBinding")).expect("a valid RoleBinding"),
    )
}

/// Creates `role` and `binding` in a new namespace, waits until the
/// authorizer enforces them, and returns the namespace and a configuration
/// for the ServiceAccount the binding names (with a token the server issued).
fn apply(server: &ApiServer, role: &Role, binding: &RoleBinding) -> (String, kube::Config) {
    let ns = server.namespace();
    let subject = binding
        .subjects
        .as_ref()
        .and_then(|s| s.first())
        .expect("the binding names a subject");
    assert_eq!(subject.kind, "ServiceAccount", "{subject:?}");
    let account = server.service_account_config(&ns, &subject.name);
    // A rule and verb the Role grants: allowed once the authorizer sees the
    // binding (it reads bindings through an informer).
    let probe = role
        .rules
        .iter()
        .flatten()
        .find_map(|r| {
            let verb = r.verbs.first()?.clone();
            let group = r.api_groups.as_ref()?.first()?.clone();
            let resource = r.resources.as_ref()?.first()?.clone();
            Some((verb, group, resource))
        })
        .expect("the Role grants something");
    let (admin, sa, ns2) = (server.client(ADMIN), account.clone(), ns.clone());
    let (role, binding) = (role.clone(), binding.clone());
    server
        .block_on(async move {
            Api::<Role>::namespaced(admin.clone(), &ns2)
                .create(&PostParams::default(), &role)
                .await?;
            Api::<RoleBinding>::namespaced(admin, &ns2)
                .create(&PostParams::default(), &binding)
                .await?;
            let sa = kube::Client::try_from(sa)?;
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        namespace: Some(ns2.clone()),
                        verb: Some(probe.0),
                        group: Some(probe.1),
                        resource: Some(probe.2),
                        ..ResourceAttributes::default()
                    }),
                    ..SelfSubjectAccessReviewSpec::default()
                },
                ..SelfSubjectAccessReview::default()
            };
            for _ in 0..500 {
                let answer = Api::<SelfSubjectAccessReview>::all(sa.clone())
                    .create(&PostParams::default(), &review)
                    .await?;
                if answer.status.is_some_and(|s| s.allowed) {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            panic!("the RoleBinding is not in force after 10 s");
        })
        .unwrap_or_else(|e: kube::Error| panic!("cannot apply the Role: {e}"));
    (ns, account)
}

/// A held record, stamped now.
fn held(holder: &str) -> LockRecord {
    LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(15),
        acquire_time: Stamp::Now,
        renew_time: Stamp::Now,
        ..LockRecord::default()
    }
}

/// What a lock session does, as the election does it: create, a fresh watch
/// (its first read), a renew seen on it, a resumed watch, a read, a
/// leadership Event, a release seen on the resumed watch. The first step that
/// fails, with its error.
async fn session<C: Codec>(lock: &ObjectLock<C>) -> Result<(), (&'static str, LockError)> {
    async fn next(
        w: &mut election_core::WatchStream,
        what: &'static str,
    ) -> Result<Version, (&'static str, LockError)> {
        match timeout(Duration::from_secs(10), w.next()).await {
            Some(Some(Ok(WatchEvent::Changed(o)))) => Ok(o.version),
            Some(Some(Err(e))) => Err((what, e)),
            other => panic!("{what}: expected a change in time, got {other:?}"),
        }
    }
    let step = |what: &'static str| move |e: LockError| (what, e);
    let v1 = lock
        .create(&held("me"))
        .await
        .map_err(step("create"))?
        .version;
    let mut fresh = lock.watch(None).expect("the lock watches");
    assert_eq!(next(&mut fresh, "fresh watch").await?, v1);
    let v2 = lock
        .update(&v1, &held("me"))
        .await
        .map_err(step("renew"))?
        .version;
    assert_eq!(next(&mut fresh, "fresh watch").await?, v2);
    drop(fresh);
    let mut resumed = lock.watch(Some(&v2)).expect("the lock watches");
    lock.get().await.map_err(step("get"))?;
    lock.record_event(LeaderEvent::BecameLeader {
        identity: "me".into(),
    })
    .await
    .map_err(|e| step("event")(e.0))?;
    let released = lock
        .update(&v2, &held(""))
        .await
        .map_err(step("release"))?
        .version;
    assert_eq!(next(&mut resumed, "resumed watch").await?, released);
    Ok(())
}

/// The Role the lock ships, bound as shipped to its ServiceAccount (with a
/// token kube-apiserver issued), grants a whole lock session under the real
/// RBAC authorizer, and the session's leadership Event is stored.
pub async fn rbac_the_shipped_role_grants_every_request_of_a_session<S: KubeLock>(
    server: &ApiServer,
) {
    let (role, binding) = shipped::<S>();
    let (ns, account) = apply(server, &role, &binding);
    let name = unique("rbac-session");
    let client = lock_kube::lock_client(account).expect("client");
    let lock = ObjectLock::<S::Codec>::builder(client, &ns, &name)
        .build()
        .expect("valid names");
    session(&lock).await.expect("the session");
    let events = server
        .block_on({
            let (admin, ns) = (server.client(ADMIN), ns.clone());
            async move {
                Api::<Event>::namespaced(admin, &ns)
                    .list(&ListParams::default())
                    .await
            }
        })
        .expect("list Events");
    assert!(
        events
            .items
            .iter()
            .any(|e| e.involved_object.name.as_deref() == Some(name.as_str())),
        "the leadership Event is stored: {events:?}"
    );
}

/// Each verb of the shipped Role is needed: with any one removed, the session
/// fails at the step that needs it, with a `Forbidden` error that names the
/// verb and the resource (the Event's step for `create` on `events`, which the
/// election itself only logs).
pub async fn rbac_a_missing_permission_is_reported_clearly<S: KubeLock>(server: &ApiServer) {
    let (role, binding) = shipped::<S>();
    let rules = role.rules.clone().unwrap_or_default();
    for (i, rule) in rules.iter().enumerate() {
        for verb in &rule.verbs {
            let mut less = role.clone();
            let mut kept = rules.clone();
            kept[i].verbs.retain(|v| v != verb);
            kept.retain(|r| !r.verbs.is_empty());
            less.rules = Some(kept);
            let (ns, account) = apply(server, &less, &binding);
            let client = lock_kube::lock_client(account).expect("client");
            let lock = ObjectLock::<S::Codec>::builder(client, &ns, &unique("rbac-less"))
                .build()
                .expect("valid names");
            let resource = rule
                .resources
                .as_ref()
                .and_then(|r| r.first())
                .expect("a resource");
            match session(&lock).await {
                Ok(()) => panic!("without {verb} on {resource} the session went through"),
                Err((step, LockError::Forbidden { message })) => {
                    // kube-apiserver's words: `… cannot get resource "leases" …`.
                    let names = format!("cannot {verb} resource \"{resource}\"");
                    assert!(message.contains(&names), "{step}: {message}");
                }
                Err((step, other)) => {
                    panic!("without {verb} on {resource}: {step} failed with {other:?}")
                }
            }
        }
    }
}
