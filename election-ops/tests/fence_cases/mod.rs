//! The fencing cases that need no injected fault, on any server
//! (`test_kit::apiserver::Server`): the emulator's tests (`fence_emulator.rs`)
//! and kube-apiserver's (`fence_apiserver.rs`) run the same functions. Each
//! case fences ConfigMaps in a namespace of its own with a policy of its own
//! (the policy and its binding are cluster-scoped: named after a Lease no
//! other case uses), and waits until the server enforces it (kube-apiserver
//! takes about a second to see a new binding).
#![allow(dead_code)]

pub mod deposed;

use std::sync::atomic::{AtomicU32, Ordering};

use election_ops::fence::FencePolicy;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use kube_emulator::Resource;
use test_kit::admission::until_enforced;
use test_kit::apiserver::{ADMIN, Server};

/// A namespace of `server` fenced by a policy on its Lease `lease`.
pub struct Fenced<'s> {
    pub server: &'s dyn Server,
    pub ns: String,
    pub lease: String,
}

impl Fenced<'_> {
    /// The policy's (and binding's) name.
    pub fn policy_name(&self) -> String {
        format!("fence-{}", self.lease)
    }

    /// A client of the Pod `pod` of the ServiceAccount `app`, with a
    /// Pod-bound token.
    pub fn pod(&self, pod: &str) -> kube::Client {
        kube::Client::try_from(self.server.pod_config(&self.ns, "app", pod)).expect("client")
    }

    /// The admin's client.
    pub fn admin(&self) -> kube::Client {
        self.server.client(ADMIN)
    }

    /// A client with `config` whose writes `TermAnnotationLayer` stamps as
    /// `holder` believes it leads the term `transitions@version` (the stamp
    /// fixed for the term, as for the default fence).
    pub fn stamped(&self, config: kube::Config, holder: &str, term: (u32, &str)) -> kube::Client {
        let view = crate::common::Believes::leading(holder, term.0, term.1);
        crate::common::stamped(config, view, false)
    }

    /// [`Fenced::stamped`], each write with a token of its own (for a fence
    /// with no writer check).
    pub fn stamped_with_tokens(
        &self,
        config: kube::Config,
        holder: &str,
        term: (u32, &str),
    ) -> kube::Client {
        let view = crate::common::Believes::leading(holder, term.0, term.1);
        crate::common::stamped(config, view, true)
    }

    /// The ConfigMap `name` as the server has it.
    pub fn configmap(&self, name: &str) -> Option<serde_json::Value> {
        self.server.object(Resource::ConfigMap, &self.ns, name)
    }
}

/// A namespace of `server` fenced by the policy `make(namespace, lease)`
/// makes, applied by the admin with `FencePolicy::apply`; returns once the
/// server refuses an unstamped write in it (no Lease yet: every protected
/// write is refused).
pub async fn fenced(
    server: &dyn Server,
    make: impl FnOnce(&str, &str) -> FencePolicy,
) -> Fenced<'_> {
    fenced_with(server, &[], make).await
}

/// [`fenced`], the Pods' Role granting the RBAC `rules` besides ConfigMaps.
pub async fn fenced_with<'s>(
    server: &'s dyn Server,
    rules: &[serde_json::Value],
    make: impl FnOnce(&str, &str) -> FencePolicy,
) -> Fenced<'s> {
    static N: AtomicU32 = AtomicU32::new(0);
    let ns = server.namespace();
    let lease = format!("orders-{}", N.fetch_add(1, Ordering::Relaxed));
    // The Pods' ServiceAccount may write ConfigMaps (kube-apiserver enforces
    // the Role; the emulator enforces no RBAC. Not the `edit` ClusterRole:
    // with no controller-manager to aggregate it, it is empty).
    let mut all = vec![serde_json::json!({
        "apiGroups": [""], "resources": ["configmaps"],
        "verbs": ["get", "create", "update", "patch", "delete"],
    })];
    all.extend_from_slice(rules);
    test_kit::rbac::grant(server, &ns, "app", &all).await;
    make(&ns, &lease)
        .apply(server.client(ADMIN))
        .await
        .expect("policy and binding applied");
    let f = Fenced { server, ns, lease };
    test_kit::admission::until_configmaps_fenced(f.admin(), &f.ns).await;
    f
}

fn configmap(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm
}

/// The Lease as `holder` takes it at `transitions` (written by the admin:
/// the Lease is never fenced); returns once the policy judges by it (a
/// dry-run write by the admin stamped for that term passes, or is refused by
/// the writer check alone).
pub async fn hold(f: &Fenced<'_>, holder: &str, transitions: i32) {
    put_lease(f, holder, transitions).await;
    let api: Api<ConfigMap> = Api::namespaced(f.admin(), &f.ns);
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let term = format!("{transitions}@0");
    let probe = crate::common::stamped_configmap("probe", Some((holder, &term)));
    let seen = match holder {
        "" => "has no holder".to_owned(),
        // The writer check's words (the stamp's say "held by … at transitions").
        _ => format!("is held by \"{holder}\")"),
    };
    until_enforced("the Lease's new state", async || {
        match api.create(&dry_run, &probe).await {
            Ok(_) => !holder.is_empty(),
            Err(kube::Error::Api(s)) => s.message.contains(&seen),
            Err(_) => false,
        }
    })
    .await;
}

async fn put_lease(f: &Fenced<'_>, holder: &str, transitions: i32) {
    let api = Api::namespaced(f.admin(), &f.ns);
    crate::common::put_lease(&api, &f.lease, holder, transitions).await;
}

/// A ConfigMap `name` created through `client`, stamped by hand for `holder`
/// at `term` with a write token of its own (no stamp when `None`).
pub async fn write(
    f: &Fenced<'_>,
    client: kube::Client,
    name: &str,
    stamp: Option<(&str, &str)>,
) -> Result<ConfigMap, kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(client, &f.ns);
    api.create(
        &PostParams::default(),
        &crate::common::stamped_configmap(name, stamp),
    )
    .await
}

/// The policy of the cases: ConfigMaps (core `v1`) fenced by `lease` in `ns`.
pub fn configmaps(ns: &str, lease: &str) -> FencePolicy {
    FencePolicy::new(ns, lease).protect(election_ops::fence::Protected::new("", "v1", "configmaps"))
}

pub use crate::common::refusal;

/// Writes not stamped with the current term are refused, in the API server's
/// words: before any Lease (a binding it cannot configure: 422), unstamped
/// (403, the policy's message), stamped by a deposed holder (naming the new
/// one; nothing stored), after a release (no holder); the holder's stamped
/// writes pass.
pub async fn writes_not_stamped_with_the_current_term_are_refused(
    server: &dyn Server,
    policy: impl FnOnce(&str, &str) -> FencePolicy,
) {
    let f = fenced(server, policy).await;
    let (app0, app1) = (f.pod("app-0"), f.pod("app-1"));
    let s = refusal(write(&f, app0.clone(), "early", Some(("app-0", "0@1"))).await);
    assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{s:?}");
    assert!(
        s.message
            .starts_with("configmaps \"early\" is forbidden: ValidatingAdmissionPolicy"),
        "{}",
        s.message
    );
    assert!(
        s.message.ends_with(
            "denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        ),
        "{}",
        s.message
    );

    hold(&f, "app-0", 3).await;
    write(&f, app0.clone(), "a", Some(("app-0", "3@17")))
        .await
        .expect("the holder's stamped write passes");
    let s = refusal(write(&f, app0.clone(), "bare", None).await);
    assert_eq!(s.code, 403, "{s:?}");
    let name = f.policy_name();
    // kube-apiserver's words (admission.NewForbidden), the policy's message
    // after them, and again as the one cause.
    let said = format!(
        "ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: fenced by {name}"
    );
    assert!(
        s.message
            .starts_with(&format!("configmaps \"bare\" is forbidden: {said}")),
        "{}",
        s.message
    );
    let details = s.details.as_ref().expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("bare", "configmaps")
    );
    assert!(details.causes[0].message.starts_with(&said), "{details:?}");

    // Another takes over: the deposed holder's write, sent with its old stamp,
    // is refused and stores nothing.
    hold(&f, "app-1", 4).await;
    let s = refusal(write(&f, app0, "late", Some(("app-0", "3@17"))).await);
    assert!(
        s.message.contains("held by \"app-1\" at transitions 4"),
        "{}",
        s.message
    );
    assert_eq!(f.configmap("late"), None);
    write(&f, app1.clone(), "b", Some(("app-1", "4@30")))
        .await
        .expect("the new holder's write passes");

    // A release (no holder) fences everyone off.
    hold(&f, "", 4).await;
    let s = refusal(write(&f, app1, "c", Some(("app-1", "4@30"))).await);
    assert!(s.message.contains("has no holder"), "{}", s.message);
}

/// With the writer check (`Writer::PodName`), only the holder's Pod (its
/// Pod-bound token) writes, and deletes (through the stamp layer) are fenced
/// the same way.
pub async fn the_writer_check_admits_the_holders_pod_only(
    server: &dyn Server,
    policy: impl FnOnce(&str, &str) -> FencePolicy,
) {
    let f = fenced(server, policy).await;
    hold(&f, "app-0", 1).await;
    write(&f, f.pod("app-0"), "a", Some(("app-0", "1@5")))
        .await
        .expect("the holder's Pod");
    let s = refusal(write(&f, f.pod("app-1"), "b", Some(("app-0", "1@5"))).await);
    assert!(s.message.contains("not the holder Pod"), "{}", s.message);

    // Deletes go through the stamp layer (it marks the object first); another
    // Pod that believes it holds the same term is still not the holder's Pod.
    let as_app = |pod: &str| {
        let config = f.server.pod_config(&f.ns, "app", pod);
        Api::<ConfigMap>::namespaced(f.stamped(config, "app-0", (1, "5")), &f.ns)
    };
    let refused = as_app("app-1")
        .delete("a", &DeleteParams::default())
        .await
        .expect_err("a delete by another Pod is fenced");
    assert!(
        matches!(refused, kube::Error::Api(ref s) if s.code == 403),
        "{refused:?}"
    );
    assert!(f.configmap("a").is_some());
    as_app("app-0")
        .delete("a", &DeleteParams::default())
        .await
        .expect("the holder's Pod deletes");
    assert!(f.configmap("a").is_none());
}

/// The API server compiles a policy's CEL when it is written and refuses one
/// that does not compile (422, naming the field and the expression); the
/// generated policy (ConfigMaps and Deployments, with the writer check) is
/// taken. (kube-apiserver's later type check, which fills
/// `status.typeChecking`, runs in kube-controller-manager: not compared.)
pub async fn the_generated_policy_compiles_where_a_broken_one_is_refused(server: &dyn Server) {
    use election_ops::fence::{Protected, Writer};
    use k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy;

    // Taken (and enforced: `fenced` waits for that).
    fenced(server, |ns, lease| {
        configmaps(ns, lease)
            .protect(Protected::new("apps", "v1", "deployments"))
            .writer(Writer::PodName)
    })
    .await;
    let broken: ValidatingAdmissionPolicy = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "broken-cel" },
        "spec": {
            "matchConstraints": { "resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"],
            }]},
            "validations": [{ "expression": "object.metadata.name +" }],
        },
    }))
    .expect("a policy");
    let api: Api<ValidatingAdmissionPolicy> = Api::all(server.client(ADMIN));
    match api.create(&PostParams::default(), &broken).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422, "{s:?}");
            // kube-apiserver: `… "broken-cel" is invalid: spec.validations[0].expression:
            // Invalid value: "object.metadata.name +": compilation failed: ERROR: <input>:1:23:
            // Syntax error: …`; the emulator the same up to the parser's own words.
            let expected = "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"broken-cel\" is invalid: \
                 spec.validations[0].expression: Invalid value: \"object.metadata.name +\": compilation failed: ";
            assert!(
                s.message.starts_with(expected),
                "{}: {}",
                server.name(),
                s.message
            );
        }
        other => panic!(
            "a policy that does not compile is refused by the {}: {other:?}",
            server.name()
        ),
    }
}

/// The resource version of `object` as the server has it.
fn version_of(object: &serde_json::Value) -> String {
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// docs/faults.md H11: under the default fence (the writer check, a stamp
/// fixed for the term), the holder's write of what is already stored changes
/// nothing, whatever its verb: a merge, strategic merge and JSON patch, a
/// replace of the object as read and (where the server serves it, `apply`) a
/// repeated server-side apply are admitted and store no new version, so a
/// level-triggered controller that watches what it writes settles. A write
/// that changes something still stores one, stamped.
pub async fn a_write_of_what_is_stored_changes_nothing_under_the_default_fence(
    server: &dyn Server,
    apply: bool,
) {
    use kube::api::{Patch, PatchParams};
    use serde_json::json;

    let f = fenced(server, configmaps).await;
    hold(&f, "app-0", 1).await;
    let pod = server.pod_config(&f.ns, "app", "app-0");
    let api: Api<ConfigMap> = Api::namespaced(f.stamped(pod, "app-0", (1, "5")), &f.ns);
    let mut cm = configmap("steady");
    cm.data = Some([("k".to_owned(), "v".to_owned())].into());
    api.create(&PostParams::default(), &cm)
        .await
        .expect("the holder creates");
    let stored = || f.configmap("steady").expect("stored");
    let mut version = version_of(&stored());
    let pp = PatchParams::default();
    if apply {
        // The first apply takes the fields over from the create's manager (a
        // new version); the next ones change nothing.
        let apply = Patch::Apply(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "steady" }, "data": { "k": "v" },
        }));
        let ssa = PatchParams::apply("steady-controller");
        api.patch("steady", &ssa, &apply)
            .await
            .expect("the holder applies");
        version = version_of(&stored());
        for _ in 0..3 {
            api.patch("steady", &ssa, &apply)
                .await
                .expect("the holder applies again");
            assert_eq!(
                version_of(&stored()),
                version,
                "{}: a repeated apply",
                server.name()
            );
        }
    }
    let json_patch: json_patch::Patch =
        serde_json::from_value(json!([{"op": "replace", "path": "/data/k", "value": "v"}]))
            .expect("a JSON patch");
    let merge = Patch::Merge(json!({ "data": { "k": "v" } }));
    let strategic = Patch::Strategic(json!({ "data": { "k": "v" } }));
    for _ in 0..3 {
        for (what, patch) in [
            ("merge patch", &merge),
            ("strategic merge patch", &strategic),
        ] {
            api.patch("steady", &pp, patch).await.expect(what);
            assert_eq!(version_of(&stored()), version, "{}: {what}", server.name());
        }
        api.patch("steady", &pp, &Patch::Json::<()>(json_patch.clone()))
            .await
            .expect("JSON patch");
        assert_eq!(
            version_of(&stored()),
            version,
            "{}: JSON patch",
            server.name()
        );
        let read = api.get("steady").await.expect("read");
        api.replace("steady", &PostParams::default(), &read)
            .await
            .expect("replace");
        assert_eq!(version_of(&stored()), version, "{}: replace", server.name());
    }

    // A change is a write, stamped for the term.
    api.patch(
        "steady",
        &pp,
        &Patch::Merge(json!({ "data": { "k": "w" } })),
    )
    .await
    .expect("a change");
    let changed = stored();
    assert_ne!(version_of(&changed), version, "{}", server.name());
    let a = &changed["metadata"]["annotations"];
    assert_eq!(
        (
            a[election_ops::fence::HOLDER_ANNOTATION].as_str(),
            a[election_ops::fence::TERM_ANNOTATION].as_str()
        ),
        (Some("app-0"), Some("1@5"))
    );
}
