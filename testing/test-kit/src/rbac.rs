//! A lock's RBAC Role, checked against the requests a real lock session makes.

use std::time::Duration;

use election_core::{LeadershipChange, Lock, LockRecord, Stamp, WatchEvent};
use futures::StreamExt;
use kube_emulator::{Emulator, Resource, Verb};

use crate::runtimes::timeout;

/// Checks that the Role in `role_yaml` grants every request a lock session makes.
///
/// `lock` is a fresh lock (its object absent) whose client the emulator counts as
/// `client`; the session creates the lock, renews it, opens a fresh watch and a
/// resumed one, reads it, records a leadership Event through
/// [`Lock::leadership_changed`] and
/// releases it. Then each (verb, resource) the emulator counted for `client` must be
/// allowed by a rule of the Role.
///
/// # Panics
///
/// When a step of the session fails, or a request is not granted.
pub async fn rbac_session<L: Lock>(emu: &Emulator, lock: &L, client: &str, role_yaml: &str) {
    let record = |holder: &str| LockRecord {
        holder: holder.into(),
        lease_duration_secs: Some(15),
        acquire_time: Stamp::Now,
        renew_time: Stamp::Now,
        ..LockRecord::default()
    };
    async fn next_version(w: &mut election_core::WatchStream) -> election_core::Version {
        match timeout(Duration::from_secs(5), w.next()).await {
            Some(Some(Ok(WatchEvent::Changed(o)))) => o.version,
            other => panic!("expected a change in time, got {other:?}"),
        }
    }

    let v1 = lock.create(&record(client)).await.expect("create").version;
    let mut fresh = lock.watch(None).expect("a fresh watch");
    assert_eq!(next_version(&mut fresh).await, v1);
    let v2 = lock
        .update(&v1, &record(client))
        .await
        .expect("renew")
        .version;
    assert_eq!(next_version(&mut fresh).await, v2);
    drop(fresh);
    let mut resumed = lock.watch(Some(&v2)).expect("a resumed watch");
    lock.get().await.expect("read");
    let event = lock
        .leadership_changed(client, LeadershipChange::BecameLeader)
        .expect("the lock records Events");
    timeout(Duration::from_secs(5), event)
        .await
        .expect("the Event is written in time");
    let released = lock
        .update(&v2, &record(""))
        .await
        .expect("release")
        .version;
    assert_eq!(next_version(&mut resumed).await, released);

    let counts = emu.request_counts();
    let used: Vec<_> = counts.iter().filter(|(c, ..)| *c == client).collect();
    assert!(used.len() >= 5, "the session made its requests: {used:?}");
    let events = [Resource::Event, Resource::EventV1].map(|r| counts.get(client, Verb::Create, r));
    assert!(
        events.iter().sum::<u64>() >= 1,
        "an Event was created: {used:?}"
    );
    let rules = kube_emulator::rbac::role_rules(role_yaml);
    assert_eq!(
        kube_emulator::rbac::not_granted(&counts, client, &rules),
        [],
        "rules: {rules:?}"
    );
}

/// Grants the ServiceAccount `service_account` of `namespace` the RBAC `rules`
/// there (JSON `PolicyRule`s), by a Role and a RoleBinding named after it,
/// written by the server's admin. kube-apiserver enforces them, a moment after
/// they are written; on the emulator, which enforces no RBAC and serves no
/// Roles, nothing is written.
///
/// # Panics
///
/// When the server refuses the Role or its binding.
pub async fn grant(
    server: &dyn crate::apiserver::Server,
    namespace: &str,
    service_account: &str,
    rules: &[serde_json::Value],
) {
    if server.name() == "emulator" {
        return;
    }
    let admin = server.client(crate::apiserver::ADMIN);
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    use kube::api::{Api, PostParams};
    let role: Role = serde_json::from_value(serde_json::json!({
        "metadata": { "name": service_account },
        "rules": rules,
    }))
    .expect("a Role");
    let binding: RoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": { "name": service_account },
        "subjects": [{ "kind": "ServiceAccount", "name": service_account, "namespace": namespace }],
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": service_account },
    }))
    .expect("a RoleBinding");
    Api::<Role>::namespaced(admin.clone(), namespace)
        .create(&PostParams::default(), &role)
        .await
        .expect("the Role");
    Api::<RoleBinding>::namespaced(admin, namespace)
        .create(&PostParams::default(), &binding)
        .await
        .expect("the RoleBinding");
}
