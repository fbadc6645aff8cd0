//! A lock's RBAC Role, checked against the requests a real lock session makes.
//!
//! On the emulator, which counts requests by client but enforces no RBAC, the
//! Role is read from YAML minimally ([`role_rules`]: the first document of kind
//! `Role` or `ClusterRole`, else the first document, its `rules`, each with
//! `apiGroups`, `resources` and `verbs` written as flow lists, as the Roles of
//! this workspace are) and each counted request checked against it
//! ([`not_granted`], [`unused`]). On kube-apiserver, which enforces RBAC,
//! [`grant`] writes the rules.

use std::time::Duration;

use election_core::{LeadershipChange, Lock, LockRecord, Stamp, WatchEvent};
use futures::StreamExt;
use kube_emulator::{Emulator, RequestCounts, Resource, Verb};

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
    let rules = role_rules(role_yaml);
    assert_eq!(not_granted(&counts, client, &rules), [], "rules: {rules:?}");
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
    if server.is_emulator() {
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

/// One rule of a Role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    /// `apiGroups` (`""` is the core group).
    pub api_groups: Vec<String>,
    /// `resources` (plural names).
    pub resources: Vec<String>,
    /// `verbs`.
    pub verbs: Vec<String>,
}

impl Rule {
    /// Whether the rule allows `verb` on `resource`.
    pub fn allows(&self, verb: Verb, resource: Resource) -> bool {
        let any = |list: &[String], item: &str| list.iter().any(|x| x == item || x == "*");
        any(&self.api_groups, resource.group())
            && any(&self.resources, resource.plural())
            && any(&self.verbs, verb.as_str())
    }
}

/// The rules of the Role in `yaml`: its first document of kind `Role` or
/// `ClusterRole`, else its first document. Lines it does not understand are
/// skipped; a rule starts at each `- apiGroups:` item.
pub fn role_rules(yaml: &str) -> Vec<Rule> {
    let documents: Vec<Vec<&str>> = yaml
        .split('\n')
        .map(|line| line.split('#').next().unwrap_or("").trim())
        .collect::<Vec<_>>()
        .split(|line| *line == "---")
        .map(<[&str]>::to_vec)
        .collect();
    let is_role = |doc: &&Vec<&str>| {
        doc.iter()
            .any(|line| matches!(*line, "kind: Role" | "kind: ClusterRole"))
    };
    let role = documents
        .iter()
        .find(is_role)
        .or(documents.first())
        .map_or(&[][..], Vec::as_slice);
    let mut rules: Vec<Rule> = Vec::new();
    for &line in role {
        let (starts_rule, line) = match line.strip_prefix("- ") {
            Some(rest) => (true, rest.trim()),
            None => (false, line),
        };
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim();
        if !matches!(key, "apiGroups" | "resources" | "verbs") {
            continue;
        }
        if starts_rule || rules.is_empty() {
            rules.push(Rule::default());
        }
        let list = flow_list(value);
        if let Some(rule) = rules.last_mut() {
            match key {
                "apiGroups" => rule.api_groups = list,
                "resources" => rule.resources = list,
                _ => rule.verbs = list,
            }
        }
    }
    rules
}

fn flow_list(value: &str) -> Vec<String> {
    let inner = value.trim().trim_start_matches('[').trim_end_matches(']');
    inner
        .split(',')
        .map(|s| s.trim().trim_matches('"').trim_matches('\'').to_owned())
        .filter(|s| !s.is_empty() || inner.contains("\"\""))
        .collect()
}

/// The requests of `client` in `counts` that no rule of `rules` allows, as
/// `(verb, resource)`.
pub fn not_granted(counts: &RequestCounts, client: &str, rules: &[Rule]) -> Vec<(Verb, Resource)> {
    counts
        .iter()
        .filter(|(c, _, _, n)| *c == client && *n > 0)
        .filter(|(_, v, r, _)| !rules.iter().any(|rule| rule.allows(*v, *r)))
        .map(|(_, v, r, _)| (v, r))
        .collect()
}

/// What `rules` grant on the served resources that `client` never asked for
/// in `counts`, as `(verb, resource)`: empty when the Role grants no more than
/// the requests counted needed (least privilege, for that session).
pub fn unused(counts: &RequestCounts, client: &str, rules: &[Rule]) -> Vec<(Verb, Resource)> {
    let mut unused = Vec::new();
    for &resource in Resource::ALL {
        for verb in Verb::ALL {
            let granted = rules.iter().any(|rule| rule.allows(verb, resource));
            if granted && counts.get(client, verb, resource) == 0 {
                unused.push((verb, resource));
            }
        }
    }
    unused
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLE: &str = r#"
kind: ServiceAccount
metadata:
  name: sa
---
kind: Role
rules:
  # a comment: verbs: ["delete"]
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["get", "watch"]
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["create"]
---
kind: RoleBinding
"#;

    #[test]
    fn rules_are_read_and_applied() {
        let rules = role_rules(ROLE);
        assert_eq!(rules.len(), 2, "{rules:?}");
        assert_eq!(rules[1].api_groups, [""]);
        assert!(rules[0].allows(Verb::Watch, Resource::Lease));
        assert!(!rules[0].allows(Verb::List, Resource::Lease));
        assert!(!rules[0].allows(Verb::Get, Resource::ConfigMap));
        assert!(rules[1].allows(Verb::Create, Resource::Event));
        assert!(
            !rules[1].allows(Verb::Create, Resource::EventV1),
            "another group"
        );
    }
}
