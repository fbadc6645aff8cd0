//! docs/faults.md N17 on any server: every write verb (create, replace, JSON
//! patch, merge patch, strategic merge patch, delete) by the holder through
//! the stamp layer, by a deposed holder through it (its view still believes in
//! its old term, as a paused process's does), and by a deposed holder's Pod
//! that bypasses it. The deposed writes are the adversary's: patches that
//! leave the annotations alone, on an object the current holder stamped last.

use election_ops::fence::{FencePolicy, HOLDER_ANNOTATION, TERM_ANNOTATION, WRITE_ANNOTATION};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use test_kit::apiserver::Server;

use super::{Fenced, fenced, hold};

/// The writes tried, each on one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Create,
    Replace,
    JsonPatch,
    MergePatch,
    StrategicPatch,
    Delete,
}

pub const VERBS: [Verb; 6] = [
    Verb::Create,
    Verb::Replace,
    Verb::JsonPatch,
    Verb::MergePatch,
    Verb::StrategicPatch,
    Verb::Delete,
];

/// `verb` through `client` in `ns`, on the object `name` (a create makes
/// `name-new`).
pub async fn attempt(
    client: &kube::Client,
    ns: &str,
    verb: Verb,
    name: &str,
) -> Result<(), kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
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

/// The fenced Lease held by `app-1` at transitions 4, after `app-0` held it
/// at 3; `app-1`'s Pod created `name` through its stamp layer (with data `k`).
/// Returns the clients: the holder's, the deposed holder's through the layer
/// (its view stuck in term 3), and the deposed holder's Pod's plain one; the
/// layers make write tokens if `write_tokens`.
pub async fn taken_over(f: &Fenced<'_>, name: &str, write_tokens: bool) -> [kube::Client; 3] {
    hold(f, "app-0", 3).await;
    hold(f, "app-1", 4).await;
    let stamped = |pod: &str, term: (u32, &str)| {
        let config = f.server.pod_config(&f.ns, "app", pod);
        if write_tokens {
            f.stamped_with_tokens(config, pod, term)
        } else {
            f.stamped(config, pod, term)
        }
    };
    let holder = stamped("app-1", (4, "30"));
    let deposed = stamped("app-0", (3, "17"));
    let bypass = f.pod("app-0");
    let api: Api<ConfigMap> = Api::namespaced(holder.clone(), &f.ns);
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.data = Some([("k".to_owned(), "by-holder".to_owned())].into());
    api.create(&PostParams::default(), &cm)
        .await
        .expect("the holder's stamped create passes");
    [holder, deposed, bypass]
}

/// The message of a 403.
pub fn refused(result: Result<(), kube::Error>, verb: Verb, who: &str) -> String {
    match result {
        Err(kube::Error::Api(s)) if s.code == 403 => s.message,
        other => panic!("{who}'s {verb:?} should be refused with 403, got {other:?}"),
    }
}

/// The matrix under the policy `make(namespace, lease)` makes: every deposed
/// write refused and the object untouched (the create stores nothing), every
/// holder's write through the layer (making write tokens if `write_tokens`)
/// admitted, stamped for its term.
pub async fn every_write_of_a_deposed_holder_is_refused(
    server: &dyn Server,
    make: impl FnOnce(&str, &str) -> FencePolicy,
    write_tokens: bool,
) {
    let f = fenced(server, make).await;
    let [holder, deposed, bypass] = taken_over(&f, "work", write_tokens).await;
    let before = f.configmap("work").expect("created");
    let fenced_by = format!("fenced by {}", f.policy_name());
    for verb in VERBS {
        for (who, client) in [("deposed (layer)", &deposed), ("deposed (bypass)", &bypass)] {
            let message = refused(attempt(client, &f.ns, verb, "work").await, verb, who);
            assert!(message.contains(&fenced_by), "{message}");
            assert_eq!(f.configmap("work-new"), None, "{who} {verb:?}");
            assert_eq!(
                f.configmap("work").as_ref(),
                Some(&before),
                "{}: {who}'s {verb:?} changed nothing",
                server.name()
            );
        }
    }
    // The holder's writes, each through the layer, pass (the delete last).
    let mut tokens = std::collections::HashSet::new();
    for verb in VERBS {
        attempt(&holder, &f.ns, verb, "work")
            .await
            .unwrap_or_else(|e| panic!("{}: the holder's {verb:?}: {e:?}", server.name()));
        if let Some(obj) = f.configmap("work").filter(|_| verb != Verb::Create) {
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
    let kept = f.configmap("work-new").expect("the holder's create");
    assert_eq!(kept["metadata"]["annotations"][HOLDER_ANNOTATION], "app-1");
    assert_eq!(f.configmap("work"), None, "the holder's delete");
    // With tokens, replace and the three patches each brought one; without,
    // none carries any (the one "token" is the empty one).
    let expected = if write_tokens { 4 } else { 1 };
    assert_eq!(tokens.len(), expected, "{tokens:?}");
}
