//! The fencing policy as generated (feature `fence`): its YAML reads back as the
//! objects it renders, every field is one Kubernetes knows, and its CEL, run by a
//! CEL interpreter with the variables the API server binds, admits the current
//! holder's stamped writes and refuses the others.

use election_ops::fence::{
    Enforcement, FenceError, FencePolicy, HOLDER_ANNOTATION, POD_NAME_EXTRA, Protected,
    TERM_ANNOTATION, WRITE_ANNOTATION, Writer,
};
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use serde_json::{Value, json};

fn policy() -> FencePolicy {
    FencePolicy::new("shop", "orders")
        .protect(Protected::new("apps", "v1", "deployments"))
        .protect(Protected::new("", "v1", "configmaps"))
}

#[test]
fn the_yaml_reads_back_as_the_policy_and_its_binding() {
    for p in [
        policy(),
        policy().writer(Writer::PodName),
        policy()
            .writer(Writer::Username)
            .enforcement(Enforcement::WarnAndAudit),
    ] {
        let yaml = p.to_yaml().expect("renders");
        let docs: Vec<Value> = serde_saphyr::from_str_multiple(&yaml).expect("YAML");
        assert_eq!(docs, [p.policy().unwrap(), p.binding().unwrap()], "{yaml}");
    }
}

#[test]
fn every_field_is_one_kubernetes_knows() {
    let p = policy().writer(Writer::PodName);
    let (policy, binding) = (p.policy().unwrap(), p.binding().unwrap());
    let typed: ValidatingAdmissionPolicy = serde_json::from_value(policy.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), policy);
    let typed: ValidatingAdmissionPolicyBinding = serde_json::from_value(binding.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), binding);
    assert_eq!(
        binding["spec"]["paramRef"]["parameterNotFoundAction"],
        "Deny"
    );
    assert_eq!(binding["spec"]["validationActions"], json!(["Deny"]));
    assert_eq!(
        policy["spec"]["matchConstraints"]["resourceRules"][0]["operations"],
        json!(["CREATE", "UPDATE", "DELETE"]),
        "deletes are fenced"
    );
    let many = self::policy()
        .namespaces(["shop", "shop-2"])
        .binding()
        .unwrap();
    assert_eq!(
        many["spec"]["matchResources"]["namespaceSelector"],
        json!({ "matchExpressions": [{ "key": "kubernetes.io/metadata.name",
                                       "operator": "In", "values": ["shop", "shop-2"] }] })
    );
    let typed: ValidatingAdmissionPolicyBinding = serde_json::from_value(many.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), many);
    let any = policy_json(&self::policy());
    assert_eq!(
        any["spec"]["matchConstraints"]["resourceRules"][1]["operations"],
        json!(["CREATE", "UPDATE", "DELETE"]),
        "without it, deletes are fenced by their mark"
    );
}

#[test]
fn bad_inputs_are_typed_errors() {
    assert_eq!(
        FencePolicy::new("shop", "orders").to_yaml(),
        Err(FenceError::NothingProtected)
    );
    assert!(matches!(
        FencePolicy::new("Shop", "orders")
            .protect(Protected::new("", "v1", "configmaps"))
            .policy(),
        Err(FenceError::Name {
            what: "namespace",
            ..
        })
    ));
    // As the locks check names (lock_kube::names): a namespace is a DNS
    // label, so no dots; an object name is a subdomain of such labels.
    assert!(matches!(
        policy().namespaces(["a.b"]).binding(),
        Err(FenceError::Name {
            what: "namespace",
            ..
        })
    ));
    assert!(matches!(
        FencePolicy::new("shop", "a..b")
            .protect(Protected::new("", "v1", "configmaps"))
            .policy(),
        Err(FenceError::Name {
            what: "Lease name",
            ..
        })
    ));
    for bad in [
        "deployments",
        "apps/deployments",
        "a/b/c/d/e",
        "apps/v1/",
        "apps/x1/deployments",
    ] {
        assert_eq!(
            Protected::parse(bad),
            Err(FenceError::Protected(bad.into())),
            "{bad}"
        );
    }
    assert_eq!(
        Protected::parse("apps/v1/deployments"),
        Ok(Protected::new("apps", "v1", "deployments"))
    );
    assert_eq!(
        Protected::parse("v1/configmaps"),
        Ok(Protected::new("", "v1", "configmaps"))
    );
    assert_eq!(
        Protected::parse("v1/pods/status"),
        Ok(Protected::new("", "v1", "pods/status"))
    );
    assert_eq!(
        Protected::parse("batch.example.io/v1beta2/jobs/status"),
        Ok(Protected::new("batch.example.io", "v1beta2", "jobs/status"))
    );
}

fn policy_json(p: &FencePolicy) -> Value {
    p.policy().expect("renders")
}

/// What the API server binds for one request.
struct Request {
    operation: &'static str,
    /// The object the write leaves (`null` for a delete).
    object: Value,
    /// The object stored before (`null` for a create).
    old: Value,
    params: Value,
    user: Value,
    /// `request.subResource` (`""`: the object itself).
    sub_resource: &'static str,
}

/// Runs the policy's CEL as the API server would: the match condition, then the
/// variables in order, then every validation; `Ok` when admitted, else the first
/// refusal's message.
fn admit(policy: &Value, r: &Request) -> Result<(), String> {
    let spec = &policy["spec"];
    let mut request = json!({
        "operation": r.operation,
        "namespace": "shop",
        "name": "web",
        "resource": { "group": "apps", "version": "v1", "resource": "deployments" },
        "userInfo": r.user,
    });
    if !r.sub_resource.is_empty() {
        request["subResource"] = json!(r.sub_resource);
    }
    let mut ctx = cel::Context::default();
    for (name, value) in [
        ("object", r.object.clone()),
        ("oldObject", r.old.clone()),
        ("params", r.params.clone()),
        ("request", request),
    ] {
        ctx.add_variable_from_value(name, cel::to_value(value).expect("a CEL value"));
    }
    let eval = |ctx: &cel::Context, src: &str| -> cel::Value {
        cel::Program::compile(src)
            .unwrap_or_else(|e| panic!("{src}: {e}"))
            .execute(ctx)
            .unwrap_or_else(|e| panic!("{src}: {e}"))
    };
    // A condition that does not hold: the policy does not apply, the write passes.
    for condition in spec["matchConditions"].as_array().unwrap() {
        let src = condition["expression"].as_str().unwrap();
        if eval(&ctx, src) != cel::Value::Bool(true) {
            return Ok(());
        }
    }
    let mut variables = std::collections::HashMap::new();
    for v in spec["variables"].as_array().unwrap() {
        ctx.add_variable_from_value("variables", cel::to_value(&variables).expect("a CEL value"));
        let value = eval(&ctx, v["expression"].as_str().unwrap());
        variables.insert(v["name"].as_str().unwrap().to_owned(), json_of(&value));
    }
    ctx.add_variable_from_value("variables", cel::to_value(&variables).expect("a CEL value"));
    for v in spec["validations"].as_array().unwrap() {
        if eval(&ctx, v["expression"].as_str().unwrap()) != cel::Value::Bool(true) {
            return match eval(&ctx, v["messageExpression"].as_str().unwrap()) {
                cel::Value::String(m) => Err(m.to_string()),
                other => panic!("a message that is not a string: {other:?}"),
            };
        }
    }
    Ok(())
}

fn json_of(v: &cel::Value) -> Value {
    match v {
        cel::Value::String(s) => json!(s.as_str()),
        cel::Value::Int(i) => json!(i),
        cel::Value::UInt(u) => json!(u),
        cel::Value::Bool(b) => json!(b),
        other => panic!("a variable of an unexpected type: {other:?}"),
    }
}

fn lease(holder: Option<&str>, transitions: Option<u32>) -> Value {
    let mut spec = json!({ "leaseDurationSeconds": 15 });
    if let Some(h) = holder {
        spec["holderIdentity"] = json!(h);
    }
    if let Some(t) = transitions {
        spec["leaseTransitions"] = json!(t);
    }
    json!({ "metadata": { "name": "orders", "namespace": "shop" }, "spec": spec })
}

/// An object stamped for `holder` at `term`, with a write token no other
/// object of these tests carries.
fn stamped(holder: &str, term: &str) -> Value {
    static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    stamped_with(holder, term, &format!("{n:016x}"))
}

fn stamped_with(holder: &str, term: &str, token: &str) -> Value {
    json!({ "metadata": { "name": "web", "annotations": {
        HOLDER_ANNOTATION: holder, TERM_ANNOTATION: term, WRITE_ANNOTATION: token,
        "other": "x" } } })
}

fn user(pod: Option<&str>) -> Value {
    match pod {
        Some(p) => json!({ "username": "system:serviceaccount:shop:app",
                           "extra": { POD_NAME_EXTRA: [p] } }),
        None => json!({ "username": "system:serviceaccount:shop:app" }),
    }
}

/// An update to an object an earlier term stamped last.
fn write(object: Value, params: Value) -> Request {
    Request {
        operation: "UPDATE",
        object,
        old: stamped("app-9", "1@1"),
        params,
        user: user(Some("app-0")),
        sub_resource: "",
    }
}

/// A delete of `old`.
fn delete(old: Value, params: Value) -> Request {
    Request {
        operation: "DELETE",
        object: Value::Null,
        old,
        params,
        user: user(Some("app-0")),
        sub_resource: "",
    }
}

#[test]
fn the_current_holders_stamped_writes_pass_and_the_rest_are_refused() {
    let p = policy_json(&policy());
    let current = lease(Some("app-0"), Some(3));
    assert_eq!(
        admit(&p, &write(stamped("app-0", "3@1042"), current.clone())),
        Ok(())
    );
    let mut create = write(stamped("app-0", "3@1042"), current.clone());
    create.operation = "CREATE";
    create.old = Value::Null;
    assert_eq!(admit(&p, &create), Ok(()));

    // A deposed holder's write: another holds the Lease now.
    let taken = lease(Some("app-1"), Some(4));
    let refused = admit(&p, &write(stamped("app-0", "3@1042"), taken)).unwrap_err();
    assert!(refused.contains("fence-orders"), "{refused}");
    assert!(refused.contains("\"app-0\" term \"3@1042\""), "{refused}");
    assert!(
        refused.contains("held by \"app-1\" at transitions 4"),
        "{refused}"
    );
    // The same holder, but a term it held before another came between (A, B, A).
    let back = lease(Some("app-0"), Some(5));
    assert!(admit(&p, &write(stamped("app-0", "3@1042"), back.clone())).is_err());
    assert_eq!(admit(&p, &write(stamped("app-0", "5@2000"), back)), Ok(()));
    // Transitions 1 is not a prefix match for 12.
    let twelve = lease(Some("app-0"), Some(12));
    assert!(admit(&p, &write(stamped("app-0", "1@9"), twelve)).is_err());
    // No stamp, a forged holder, a released Lease, a Lease without transitions.
    let bare = json!({ "metadata": { "name": "web" } });
    assert!(admit(&p, &write(bare, current.clone())).is_err());
    assert!(admit(&p, &write(stamped("intruder", "3@1"), current)).is_err());
    let released = admit(
        &p,
        &write(stamped("app-0", "3@1"), lease(Some(""), Some(3))),
    );
    assert!(released.unwrap_err().contains("has no holder"));
    assert!(admit(&p, &write(stamped("app-0", "3@1"), lease(None, None))).is_err());
    assert_eq!(
        admit(
            &p,
            &write(stamped("app-0", "0@1"), lease(Some("app-0"), None))
        ),
        Ok(()),
        "an absent leaseTransitions reads as 0"
    );
}

/// docs/faults.md N17, by the policy's CEL alone, with no writer check: an
/// update must bring a write token unlike the stored one (a write that leaves
/// the annotations alone inherits them, token included), and a delete needs
/// the stored object marked for deletion in the current term.
#[test]
fn n17_a_write_that_brings_no_stamp_of_its_own_is_refused() {
    let p = policy_json(&policy().writer(Writer::Any));
    let current = lease(Some("app-1"), Some(4));
    // The current holder stamped the object last; a deposed writer's patch that
    // leaves the annotations alone arrives with exactly that stamp.
    let stored = stamped_with("app-1", "4@30", "b-token");
    let mut inherited = write(stored.clone(), current.clone());
    inherited.old = stored.clone();
    let refused = admit(&p, &inherited).unwrap_err();
    assert!(refused.contains("brings no stamp of its own"), "{refused}");
    assert!(
        refused.contains("TermAnnotationLayer::write_tokens"),
        "{refused}"
    );
    // With a token of its own, the current holder's write passes.
    let mut fresh = write(stamped_with("app-1", "4@31", "b-next"), current.clone());
    fresh.old = stored.clone();
    assert_eq!(admit(&p, &fresh), Ok(()));
    // A token that is there but empty, or missing, is no token.
    let mut empty = write(stamped_with("app-1", "4@31", ""), current.clone());
    empty.old = stamped_with("app-1", "4@30", "");
    assert!(admit(&p, &empty).is_err());
    let mut none = write(
        json!({ "metadata": { "annotations": {
        HOLDER_ANNOTATION: "app-1", TERM_ANNOTATION: "4@31" } } }),
        current.clone(),
    );
    none.old = json!({ "metadata": { "name": "web" } });
    assert!(admit(&p, &none).is_err());

    // Deletes: only of an object marked for deletion in this term.
    assert_eq!(
        admit(
            &p,
            &delete(stamped_with("app-1", "4@32", "delete-9"), current.clone())
        ),
        Ok(())
    );
    let unmarked = admit(&p, &delete(stored, current.clone())).unwrap_err();
    assert!(unmarked.contains("not marked for deletion"), "{unmarked}");
    let old_mark = admit(
        &p,
        &delete(stamped_with("app-0", "3@9", "delete-1"), current.clone()),
    );
    assert!(
        old_mark
            .unwrap_err()
            .contains("deleted object is stamped for holder \"app-0\"")
    );
    let bare = admit(
        &p,
        &delete(json!({ "metadata": { "name": "web" } }), current),
    );
    assert!(bare.is_err());
}

/// docs/faults.md N17 and H11 under the default policy (the Pod-name writer
/// check): no write token is asked for, so the holder's write that leaves the
/// stamp of its term in place (a repeated write, a no-op) passes, while the
/// same write from another Pod (a deposed replica's patch that leaves the
/// current holder's stamp alone) is refused by the writer check; an object
/// stamped in an earlier term still needs the current stamp. A delete needs
/// the object stamped in this term (no deletion mark) and the holder's Pod. A
/// subresource write whose object keeps the stored stamp (a custom resource's
/// status) is judged by the writer check alone.
#[test]
fn n17_h11_the_default_policy_takes_a_stamp_fixed_for_the_term_from_the_holders_pod_only() {
    let p = policy_json(&policy());
    let current = lease(Some("app-1"), Some(4));
    let term_stamp = || stamped_with("app-1", "4@30", "");
    let as_pod = |mut r: Request, pod: &str| {
        r.user = user(Some(pod));
        r
    };
    let mut same = write(term_stamp(), current.clone());
    same.old = term_stamp();
    assert_eq!(
        admit(&p, &as_pod(same, "app-1")),
        Ok(()),
        "a no-op by the holder"
    );
    let mut inherited = write(term_stamp(), current.clone());
    inherited.old = term_stamp();
    let refused = admit(&p, &as_pod(inherited, "app-0")).unwrap_err();
    assert!(refused.contains("not the holder Pod"), "{refused}");
    // An unstamped write on an object an earlier term stamped: refused.
    let mut stale = write(stamped_with("app-1", "2@3", ""), current.clone());
    stale.old = stamped_with("app-1", "2@3", "");
    let refused = admit(&p, &as_pod(stale, "app-1")).unwrap_err();
    assert!(refused.contains("term \"2@3\""), "{refused}");

    // Deletes: of an object stamped in this term, by the holder's Pod.
    let del = |old: Value, pod: &str| as_pod(delete(old, current.clone()), pod);
    assert_eq!(admit(&p, &del(term_stamp(), "app-1")), Ok(()));
    assert!(admit(&p, &del(term_stamp(), "app-0")).is_err());
    assert!(admit(&p, &del(stamped_with("app-0", "3@9", ""), "app-1")).is_err());

    // A status write of a custom resource: the API server put the stored
    // (earlier term's) metadata back. The holder's Pod passes, another not.
    let mut status = write(stamped_with("app-0", "3@9", ""), current.clone());
    status.old = stamped_with("app-0", "3@9", "");
    status.sub_resource = "status";
    let other = Request {
        user: user(Some("app-0")),
        object: status.object.clone(),
        old: status.old.clone(),
        params: status.params.clone(),
        operation: status.operation,
        sub_resource: "status",
    };
    assert_eq!(admit(&p, &as_pod(status, "app-1")), Ok(()));
    assert!(
        admit(&p, &other)
            .unwrap_err()
            .contains("not the holder Pod")
    );
}

/// The control plane's controllers write protected objects without a stamp
/// (the deployment controller's annotations, the garbage collector, the
/// namespace controller): exempt by default, unless the fenced namespace is
/// `kube-system`, where the election's own writers would be exempt too.
#[test]
fn the_control_planes_writers_are_exempt_and_the_exemptions_can_be_set() {
    let bare = json!({ "metadata": { "name": "web" } });
    let as_user = |username: &str, groups: &[&str]| {
        let mut w = write(bare.clone(), lease(Some("app-0"), Some(3)));
        w.user = json!({ "username": username, "groups": groups });
        w
    };
    let kcm = as_user("system:kube-controller-manager", &[]);
    let gc = as_user(
        "system:serviceaccount:kube-system:generic-garbage-collector",
        &[
            "system:serviceaccounts",
            "system:serviceaccounts:kube-system",
        ],
    );
    let app = as_user(
        "system:serviceaccount:shop:app",
        &["system:serviceaccounts", "system:serviceaccounts:shop"],
    );
    let p = policy_json(&policy());
    assert_eq!(admit(&p, &kcm), Ok(()));
    assert_eq!(admit(&p, &gc), Ok(()));
    assert!(admit(&p, &app).is_err());

    let in_kube_system = policy_json(
        &FencePolicy::new("kube-system", "orders").protect(Protected::new("", "v1", "configmaps")),
    );
    assert_eq!(admit(&in_kube_system, &kcm), Ok(()));
    assert!(
        admit(&in_kube_system, &gc).is_err(),
        "kube-system's accounts are fenced there"
    );

    let none = policy_json(&policy().default_exemptions(false));
    assert!(admit(&none, &kcm).is_err());
    assert!(admit(&none, &gc).is_err());
    assert_eq!(
        none["spec"]["matchConditions"].as_array().map(Vec::len),
        Some(1)
    );
    let more = policy_json(
        &policy()
            .exempt_user("ops-admin")
            .exempt_user("o'brien \\ co")
            .exempt_group("shop:operators"),
    );
    assert_eq!(admit(&more, &as_user("ops-admin", &[])), Ok(()));
    assert_eq!(
        admit(&more, &as_user("o'brien \\ co", &[])),
        Ok(()),
        "quoted for CEL"
    );
    assert!(admit(&more, &as_user("o'brien", &[])).is_err());
    assert_eq!(
        admit(&more, &as_user("someone", &["shop:operators"])),
        Ok(())
    );
    assert!(admit(&more, &as_user("someone", &["shop:viewers"])).is_err());
}

#[test]
fn the_writer_check_admits_only_the_holders_pod_and_fences_deletes() {
    let p = policy_json(&policy().writer(Writer::PodName));
    let current = lease(Some("app-0"), Some(3));
    assert_eq!(
        admit(&p, &write(stamped("app-0", "3@7"), current.clone())),
        Ok(())
    );
    let mut other_pod = write(stamped("app-0", "3@7"), current.clone());
    other_pod.user = user(Some("app-1"));
    let refused = admit(&p, &other_pod).unwrap_err();
    assert!(refused.contains("not the holder Pod"), "{refused}");
    let mut no_pod = write(stamped("app-0", "3@7"), current.clone());
    no_pod.user = user(None);
    assert!(admit(&p, &no_pod).is_err());
    // A delete of an object marked in this term: the writer decides too.
    let marked = stamped_with("app-0", "3@8", "delete-01");
    let mut by_holder = delete(marked.clone(), current.clone());
    assert_eq!(admit(&p, &by_holder), Ok(()));
    by_holder.user = user(Some("app-1"));
    assert!(
        admit(&p, &by_holder)
            .unwrap_err()
            .contains("not the holder Pod")
    );
    // With a released Lease, nobody deletes.
    assert!(admit(&p, &delete(marked, lease(Some(""), Some(3)))).is_err());
}

#[test]
fn the_lease_itself_is_never_fenced() {
    let p = policy_json(&policy());
    let condition = p["spec"]["matchConditions"][0]["expression"]
        .as_str()
        .unwrap();
    let mut ctx = cel::Context::default();
    let request = json!({ "namespace": "shop", "name": "orders",
        "resource": { "group": "coordination.k8s.io", "resource": "leases" } });
    ctx.add_variable_from_value("request", cel::to_value(request).unwrap());
    let matched = cel::Program::compile(condition)
        .unwrap()
        .execute(&ctx)
        .unwrap();
    assert_eq!(matched, cel::Value::Bool(false));
}
