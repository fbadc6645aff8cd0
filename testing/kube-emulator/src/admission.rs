//! ValidatingAdmissionPolicy, evaluated as the API server evaluates it
//! (`k8s.io/apiserver/pkg/admission/plugin/policy/validating`): every binding
//! whose policy matches a write runs the policy's CEL (the `cel` crate) with the
//! variables the API server binds (`object`, `oldObject`, `params`, `request`,
//! `namespaceObject`, `variables`), and a failed validation refuses the write
//! with the policy's reason and message, worded as the API server words it.
//!
//! What is served: `matchConstraints.resourceRules` and
//! `excludeResourceRules` (groups, versions, resources, operations, `*`,
//! `resourceNames`, `scope`), a binding's `matchResources` narrowing them the
//! same way, the namespace selector (every namespace carries
//! `kubernetes.io/metadata.name`) and the object selector (the written object's
//! labels or the stored one's, as the API server matches them) of either, each
//! by `matchLabels` and `matchExpressions`, `matchConditions`, `paramKind` with `paramRef.name` and
//! `namespace` (and `parameterNotFoundAction`), `variables`, `validations` with
//! `message`, `messageExpression` and `reason`, `failurePolicy`, and
//! `validationActions` (`Deny`; `Warn` answers with a warning). A policy whose
//! CEL does not compile is refused when written, as the API server refuses it
//! (`compilation failed`), and a binding with a parameter selector
//! (`paramRef.selector`), which the emulator does not serve, is refused when
//! written, saying so. Not served either: audit annotations (there is no audit
//! log), subresources in rules, and the type checking of the expressions.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use crate::resource::{Resource, Verb};
use crate::status::ApiError;
use crate::store::Store;
use crate::validation::str_at;

/// Who writes: the user the API server would have authenticated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// `request.userInfo.username`.
    pub username: String,
    /// `request.userInfo.groups`.
    pub groups: Vec<String>,
    /// `request.userInfo.extra`.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The service account `namespace/name` in a Pod, as a pod-bound token
    /// names it: `system:serviceaccount:<namespace>:<name>`, with the Pod's name
    /// in `authentication.kubernetes.io/pod-name`, in the groups every service
    /// account is in (`system:serviceaccounts`, `system:serviceaccounts:<namespace>`,
    /// `system:authenticated`).
    pub fn pod(namespace: &str, service_account: &str, pod: &str) -> Self {
        UserInfo {
            username: format!("system:serviceaccount:{namespace}:{service_account}"),
            groups: vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".to_owned(),
            ],
            extra: BTreeMap::from([(
                "authentication.kubernetes.io/pod-name".to_owned(),
                vec![pod.to_owned()],
            )]),
        }
    }

    /// The user of a token the emulator was told nothing about: the token itself,
    /// in `system:authenticated`.
    pub(crate) fn named(token: &str) -> Self {
        UserInfo {
            username: token.to_owned(),
            groups: vec!["system:authenticated".to_owned()],
            extra: BTreeMap::new(),
        }
    }
}

/// One write, as admission sees it.
pub(crate) struct Attempt<'a> {
    pub(crate) verb: Verb,
    pub(crate) resource: Resource,
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
    /// The object as it would be stored (`None` for a delete).
    pub(crate) object: Option<&'a Value>,
    /// The object as stored now (`None` for a create).
    pub(crate) old: Option<&'a Value>,
    pub(crate) user: &'a UserInfo,
}

/// Whether any binding exists (admission has nothing to do otherwise).
pub(crate) fn any_binding(store: &Store) -> bool {
    store
        .objects_of(Resource::ValidatingAdmissionPolicyBinding)
        .next()
        .is_some()
}

/// Runs every matching binding on `a`: `Ok` with the warnings of `Warn`
/// bindings, or the refusal of the first `Deny` binding that fails.
pub(crate) fn admit(store: &Store, a: &Attempt<'_>) -> Result<Vec<String>, ApiError> {
    let Some(operation) = operation(a.verb) else {
        return Ok(Vec::new());
    };
    let mut warnings = Vec::new();
    for binding in store.objects_of(Resource::ValidatingAdmissionPolicyBinding) {
        let bname = str_at(binding, "/metadata/name");
        let Some(policy) = store.get_object(
            Resource::ValidatingAdmissionPolicy,
            "",
            str_at(binding, "/spec/policyName"),
        ) else {
            continue; // a binding of a missing policy does nothing
        };
        let matches = |owner: &Value, at: &str| {
            namespace_matches(store, owner.pointer(&format!("{at}/namespaceSelector")), a)
                && object_matches(owner.pointer(&format!("{at}/objectSelector")), a)
        };
        if !rules_match(policy, binding, a, operation)
            || !matches(policy, "/spec/matchConstraints")
            || !matches(binding, "/spec/matchResources")
        {
            continue;
        }
        let pname = str_at(policy, "/metadata/name");
        let failed = evaluate(store, policy, binding, a, operation);
        let Some((reason, message)) = failed.first().cloned() else {
            continue;
        };
        let actions = binding.pointer("/spec/validationActions");
        let has = |action: &str| {
            actions
                .and_then(Value::as_array)
                .is_some_and(|l| l.iter().any(|x| x == action))
        };
        if has("Deny") {
            let message = format!(
                "ValidatingAdmissionPolicy '{pname}' with binding '{bname}' denied request: {message}"
            );
            return Err(refused(&reason, message, a));
        }
        if has("Warn") {
            // kube-apiserver's words for a warning (its validating dispatcher),
            // one for each validation that failed.
            warnings.extend(failed.iter().map(|(_, message)| {
                format!(
                    "Validation failed for ValidatingAdmissionPolicy '{pname}' with binding '{bname}': {message}"
                )
            }));
        }
    }
    Ok(warnings)
}

fn operation(verb: Verb) -> Option<&'static str> {
    match verb {
        Verb::Create => Some("CREATE"),
        Verb::Update | Verb::Patch => Some("UPDATE"),
        Verb::Delete => Some("DELETE"),
        Verb::Get | Verb::List | Verb::Watch => None,
    }
}

/// The refusal as the API server's admission chain words it
/// (`admission.NewForbidden`): `<resource> "<name>" is forbidden: <message>`,
/// the message again as the one cause, with the code the policy's `reason`
/// asks for (422 for a binding that cannot be configured, as for `Invalid`).
fn refused(reason: &str, message: String, a: &Attempt<'_>) -> ApiError {
    let (code, reason) = match reason {
        "Forbidden" => (403, "Forbidden"),
        "Unauthorized" => (401, "Unauthorized"),
        "RequestEntityTooLarge" => (413, "RequestEntityTooLarge"),
        _ => (422, "Invalid"),
    };
    let mut details = serde_json::Map::new();
    if !a.name.is_empty() {
        details.insert("name".into(), json!(a.name));
    }
    if !a.resource.group().is_empty() {
        details.insert("group".into(), json!(a.resource.group()));
    }
    details.insert("kind".into(), json!(a.resource.plural()));
    details.insert("causes".into(), json!([{ "message": message }]));
    ApiError {
        code,
        reason,
        message: format!(
            "{} {:?} is forbidden: {message}",
            a.resource.qualified(),
            a.name
        ),
        details: Some(Value::Object(details)),
        retry_after: None,
    }
}

/// Whether the write is in the policy's `matchConstraints.resourceRules` and
/// not in its `excludeResourceRules`, and, where the binding narrows them, in
/// its `matchResources.resourceRules` and not in its `excludeResourceRules`.
fn rules_match(policy: &Value, binding: &Value, a: &Attempt<'_>, operation: &str) -> bool {
    fn rules<'v>(v: &'v Value, at: &str) -> Option<&'v Vec<Value>> {
        v.pointer(at).and_then(Value::as_array)
    }
    let covered = |v: &Value, at: &str| {
        rules(v, at).is_some_and(|l| l.iter().any(|rule| rule_covers(rule, a, operation)))
    };
    let narrowed =
        rules(binding, "/spec/matchResources/resourceRules").is_some_and(|l| !l.is_empty());
    covered(policy, "/spec/matchConstraints/resourceRules")
        && !covered(policy, "/spec/matchConstraints/excludeResourceRules")
        && (!narrowed || covered(binding, "/spec/matchResources/resourceRules"))
        && !covered(binding, "/spec/matchResources/excludeResourceRules")
}

/// Whether one rule (`NamedRuleWithOperations`) covers the write: its groups,
/// versions, resources and operations (`*` for any), its `resourceNames` (none:
/// any name) and its `scope` (`Namespaced`, `Cluster`, `*`).
fn rule_covers(rule: &Value, a: &Attempt<'_>, operation: &str) -> bool {
    let covers = |field: &str, want: &str| {
        rule.get(field)
            .and_then(Value::as_array)
            .is_some_and(|l| l.iter().any(|x| x == want || x == "*"))
    };
    let names = rule
        .get("resourceNames")
        .and_then(Value::as_array)
        .filter(|l| !l.is_empty());
    let scope = match rule.get("scope").and_then(Value::as_str) {
        Some("Namespaced") => a.resource.namespaced(),
        Some("Cluster") => !a.resource.namespaced(),
        _ => true,
    };
    covers("apiGroups", a.resource.group())
        && covers("apiVersions", a.resource.version())
        && covers("resources", a.resource.plural())
        && covers("operations", operation)
        && names.is_none_or(|l| l.iter().any(|x| x == a.name))
        && scope
}

/// Whether a namespace selector (`matchLabels` and `matchExpressions`) takes
/// the write's namespace; cluster-scoped objects are always taken, as is every
/// namespace without a selector.
fn namespace_matches(store: &Store, selector: Option<&Value>, a: &Attempt<'_>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    if !a.resource.namespaced() {
        return true;
    }
    let ns = store.get_object(Resource::Namespace, "", a.namespace);
    let label = |k: &str| {
        if k == "kubernetes.io/metadata.name" {
            Some(a.namespace)
        } else {
            ns.and_then(|n| n.pointer("/metadata/labels"))
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
        }
    };
    selector_matches(selector, label)
}

/// Whether an object selector takes the write: the labels of the object
/// written or of the object stored (a create has only the one, a delete only
/// the other), as the API server's `MatchObjectSelector` does. No selector, or
/// an empty one, takes every object.
fn object_matches(selector: Option<&Value>, a: &Attempt<'_>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    let takes = |object: Option<&Value>| {
        object.is_some_and(|o| {
            let labels = o.pointer("/metadata/labels");
            selector_matches(selector, |k| {
                labels.and_then(|l| l.get(k)).and_then(Value::as_str)
            })
        })
    };
    takes(a.object) || takes(a.old)
}

/// Whether a label selector (`matchLabels` and `matchExpressions`) takes the
/// labels `label` reads.
fn selector_matches<'v>(selector: &Value, label: impl Fn(&str) -> Option<&'v str>) -> bool {
    let labels_match = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|m| m.iter().all(|(k, v)| label(k) == v.as_str()));
    let expressions_match = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .is_none_or(|exprs| {
            exprs.iter().all(|e| {
                let have = label(str_at(e, "/key"));
                let listed = |v: &str| {
                    e.get("values")
                        .and_then(Value::as_array)
                        .is_some_and(|l| l.iter().any(|x| x == v))
                };
                match str_at(e, "/operator") {
                    "In" => have.is_some_and(listed),
                    "NotIn" => !have.is_some_and(listed),
                    "Exists" => have.is_some(),
                    "DoesNotExist" => have.is_none(),
                    _ => false,
                }
            })
        });
    labels_match && expressions_match
}

/// Runs the policy for one binding: the `(reason, message)` of each failed
/// validation, in order, or of the error that stopped it under `failurePolicy:
/// Fail`; none when the write passes.
fn evaluate(
    store: &Store,
    policy: &Value,
    binding: &Value,
    a: &Attempt<'_>,
    operation: &str,
) -> Vec<(String, String)> {
    let spec = &policy["spec"];
    let fail_closed = spec.get("failurePolicy").and_then(Value::as_str) != Some("Ignore");
    let error = |message: String| {
        if fail_closed {
            vec![("Invalid".to_owned(), message)]
        } else {
            Vec::new()
        }
    };
    let params = match params(store, spec, binding, a) {
        Ok(Some(p)) => p,
        Ok(None) => return Vec::new(), // missing, and `Allow`: the binding does nothing
        // A configuration error, as the API server's dispatcher words it: under
        // `failurePolicy: Fail` a refusal with no reason, so 422 Invalid.
        Err(message) => return error(message),
    };
    let mut ctx = cel::Context::default();
    let request = json!({
        "operation": operation,
        "namespace": a.namespace,
        "name": a.name,
        "resource": {
            "group": a.resource.group(),
            "version": a.resource.version(),
            "resource": a.resource.plural(),
        },
        "kind": {
            "group": a.resource.group(),
            "version": a.resource.version(),
            "kind": a.resource.kind(),
        },
        "userInfo": {
            "username": a.user.username,
            "groups": a.user.groups,
            "extra": a.user.extra,
        },
        "dryRun": false,
    });
    let namespace_object = store
        .get_object(Resource::Namespace, "", a.namespace)
        .cloned()
        .unwrap_or(Value::Null);
    for (name, value) in [
        ("object", a.object.cloned().unwrap_or(Value::Null)),
        ("oldObject", a.old.cloned().unwrap_or(Value::Null)),
        ("params", params),
        ("request", request),
        ("namespaceObject", namespace_object),
    ] {
        ctx.add_variable_from_value(name, cel_of(&value));
    }
    let eval = |ctx: &cel::Context, src: &str| -> Result<cel::Value, String> {
        compiled(src)?
            .execute(ctx)
            .map_err(|e| format!("expression '{src}' resulted in error: {e}"))
    };
    let items = |key: &str| {
        spec.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for condition in items("matchConditions") {
        match eval(&ctx, str_at(&condition, "/expression")) {
            Ok(cel::Value::Bool(true)) => {}
            Ok(_) => return Vec::new(), // not matched: the policy does not apply
            Err(e) => return error(e),
        }
    }
    let mut variables: HashMap<String, cel::Value> = HashMap::new();
    for v in items("variables") {
        ctx.add_variable_from_value("variables", variables.clone());
        match eval(&ctx, str_at(&v, "/expression")) {
            Ok(value) => {
                variables.insert(str_at(&v, "/name").to_owned(), value);
            }
            Err(e) => return error(e),
        }
    }
    ctx.add_variable_from_value("variables", variables);
    // Every validation is evaluated, as kube-apiserver does: each that fails
    // is a decision (a `Deny` binding answers with the first, a `Warn` one
    // warns of each).
    let mut failed = Vec::new();
    for v in items("validations") {
        let expression = str_at(&v, "/expression");
        match eval(&ctx, expression) {
            Ok(cel::Value::Bool(true)) => continue,
            Ok(_) => {}
            Err(e) => {
                failed.extend(error(e));
                continue;
            }
        }
        let message = match v.get("messageExpression").and_then(Value::as_str) {
            Some(src) => match eval(&ctx, src) {
                Ok(cel::Value::String(s)) => s.to_string(),
                _ => format!("failed expression: {expression}"),
            },
            None => match v.get("message").and_then(Value::as_str) {
                Some(m) => m.to_owned(),
                None => format!("failed expression: {expression}"),
            },
        };
        let reason = v.get("reason").and_then(Value::as_str).unwrap_or("Invalid");
        failed.push((reason.to_owned(), message));
    }
    failed
}

/// The binding's parameter object (`null` for a policy without `paramKind`);
/// `None` when it is missing and `parameterNotFoundAction` is `Allow`, the
/// refusal when it is missing otherwise.
fn params(
    store: &Store,
    spec: &Value,
    binding: &Value,
    a: &Attempt<'_>,
) -> Result<Option<Value>, String> {
    let Some(kind) = spec.get("paramKind") else {
        return Ok(Some(Value::Null));
    };
    let resource = Resource::of_kind(str_at(kind, "/apiVersion"), str_at(kind, "/kind"));
    let reference = &binding["spec"]["paramRef"];
    let namespace = match str_at(reference, "/namespace") {
        "" => a.namespace,
        ns => ns,
    };
    let found = resource.and_then(|r| {
        let ns = if r.namespaced() { namespace } else { "" };
        store.get_object(r, ns, str_at(reference, "/name")).cloned()
    });
    match found {
        Some(p) => Ok(Some(p)),
        None if str_at(reference, "/parameterNotFoundAction") == "Allow" => Ok(None),
        None => Err(
            "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
                .to_owned(),
        ),
    }
}

/// `src` compiled, from a per-thread cache: a policy's expressions are compiled
/// once, not on every write (the API server compiles them when the policy is
/// written).
fn compiled(src: &str) -> Result<std::rc::Rc<cel::Program>, String> {
    use std::cell::RefCell;
    use std::rc::Rc;
    thread_local! {
        static PROGRAMS: RefCell<HashMap<String, Rc<cel::Program>>> = RefCell::new(HashMap::new());
    }
    PROGRAMS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(p) = cache.get(src) {
            return Ok(Rc::clone(p));
        }
        let program =
            Rc::new(cel::Program::compile(src).map_err(|e| format!("compilation failed: {e}"))?);
        if cache.len() >= 1024 {
            cache.clear(); // many policies come and go: keep the cache bounded
        }
        cache.insert(src.to_owned(), Rc::clone(&program));
        Ok(program)
    })
}

/// A JSON value as CEL sees it (integers as `int`, as Kubernetes' CEL types
/// them).
fn cel_of(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            (None, None) => cel::Value::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => items.iter().map(cel_of).collect::<Vec<_>>().into(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), cel_of(v)))
            .collect::<HashMap<String, cel::Value>>()
            .into(),
    }
}
