//! The object store: one global, growing resourceVersion, objects kept as
//! JSON per (resource, namespace, name), and a bounded history of changes
//! that watches replay from. The rules follow the generic registry of the
//! API server (`staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`).

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, VecDeque};
use std::hash::{BuildHasher, Hasher};

use serde_json::{Map, Value, json};

use crate::patch::{PatchError, go_format, json_patch, merge_patch};
use crate::resource::Resource;
use crate::status::{ApiError, FieldError, OPTIMISTIC_LOCK_MSG, delete_success};
use crate::time::{Timestamp, format_time};
use crate::validation::{
    FieldValidation, cannot_handle, check_config_map, check_lease_candidate, check_lease_spec,
    check_metadata_types, check_node, check_types, lease_candidate_update_errors,
    strict_decoding_error, strict_decoding_message, validate_admission, validate_name,
    validate_owner_references,
};

/// Storage key: resource, namespace (`""` for cluster-scoped), name.
pub(crate) type Key = (Resource, String, String);

/// What a change did, as a watch event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One committed change, kept for watches.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub(crate) rv: u64,
    pub(crate) kind: ChangeKind,
    pub(crate) resource: Resource,
    pub(crate) namespace: String,
    pub(crate) object: Value,
}

/// The patch formats accepted by PATCH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchKind {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`, applied as a merge patch
    /// (the served kinds have no list whose merge key matters here); told
    /// apart for the wording of a strict refusal.
    StrategicMerge,
    /// `application/json-patch+json`.
    Json,
}

/// The outcome of a successful request: an HTTP code, a body, and the
/// warnings to send as `Warning` headers.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) code: u16,
    pub(crate) body: Value,
    pub(crate) warnings: Vec<String>,
    /// The version a deletion committed, which its answer (a `Status`) does
    /// not carry; every other write's is in its body.
    pub(crate) deleted_at: Option<String>,
}

impl Reply {
    pub(crate) fn new(code: u16, body: Value) -> Reply {
        Reply {
            code,
            body,
            warnings: Vec::new(),
            deleted_at: None,
        }
    }

    fn warned(mut self, warnings: Vec<String>) -> Reply {
        self.warnings = warnings;
        self
    }
}

/// The emulator's state.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    objects: BTreeMap<Key, Value>,
    rv: u64,
    history: VecDeque<Change>,
    history_limit: usize,
    /// Every change with a resourceVersion at or below this one has left the history.
    compacted: u64,
    uid_counter: u64,
    uid_seed: u64,
}

/// Whether `resource` allows a PUT to create a missing object (`AllowCreateOnUpdate`).
fn allow_create_on_update(resource: Resource) -> bool {
    matches!(
        resource,
        Resource::Lease | Resource::LeaseCandidate | Resource::Event | Resource::EventV1
    )
}

/// Whether a PUT of `resource` may leave out `metadata.resourceVersion` (or
/// send `"0"`) to overwrite whatever is stored (`AllowUnconditionalUpdate`).
/// A LeaseCandidate may not: its updates are always compare-and-swap.
fn allow_unconditional_update(resource: Resource) -> bool {
    resource != Resource::LeaseCandidate
}

fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    meta(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        // Just made sure it is an object; this arm cannot be reached.
        _ => unreachable!("metadata was set to an object above"),
    }
}

/// Whether a PUT body asks for an unconditional update: no
/// `resourceVersion`, or `"0"`.
fn unconditional(obj: &Value) -> Result<bool, ApiError> {
    let rv = meta_str(obj, "resourceVersion");
    Ok(rv.is_empty() || parse_rv(rv)? == 0)
}

fn parse_rv(text: &str) -> Result<u64, ApiError> {
    text.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "invalid resource version {text:?}: strconv.ParseUint: parsing {text:?}: invalid syntax"
        ))
    })
}

impl Store {
    pub(crate) fn new(history_limit: usize, now: Timestamp) -> Store {
        let seed = RandomState::new().build_hasher().finish();
        let mut store = Store {
            objects: BTreeMap::new(),
            rv: 0,
            history: VecDeque::new(),
            history_limit: history_limit.max(1),
            compacted: 0,
            uid_counter: 0,
            uid_seed: seed,
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            // Built-in namespaces are valid by construction.
            let _ = store.create(Resource::Namespace, "", body, now, FieldValidation::Strict);
        }
        store
    }

    /// The current (latest) resourceVersion.
    pub(crate) fn resource_version(&self) -> u64 {
        self.rv
    }

    /// Changes at or below this version are no longer in the history.
    pub(crate) fn compacted(&self) -> u64 {
        self.compacted
    }

    /// Forgets the whole history: a watch from any older version now gets 410.
    pub(crate) fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.rv;
    }

    /// Changes after `rv`, oldest first, or `None` when some were compacted away.
    pub(crate) fn changes_since(&self, rv: u64) -> Option<Vec<Change>> {
        if rv < self.compacted {
            return None;
        }
        Some(self.history.iter().filter(|c| c.rv > rv).cloned().collect())
    }

    /// All objects of `resource` (in `namespace` if given), ordered by namespace and name.
    pub(crate) fn objects(&self, resource: Resource, namespace: Option<&str>) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|((r, ns, _), _)| *r == resource && namespace.is_none_or(|n| n == ns))
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// A copy to run a write on and throw away (a dry run, or admission's look at
    /// the object a write would store): the objects, without the watch history,
    /// which a write does not read and which would make the copy cost as much as
    /// the history is long.
    pub(crate) fn scratch(&self) -> Store {
        Store {
            objects: self.objects.clone(),
            rv: self.rv,
            history: VecDeque::new(),
            history_limit: self.history_limit,
            compacted: self.rv,
            uid_counter: self.uid_counter,
            uid_seed: self.uid_seed,
        }
    }

    /// Every object of `resource`, in every namespace.
    pub(crate) fn objects_of(&self, resource: Resource) -> impl Iterator<Item = &Value> {
        self.objects
            .iter()
            .filter(move |((r, _, _), _)| *r == resource)
            .map(|(_, v)| v)
    }

    pub(crate) fn get_object(
        &self,
        resource: Resource,
        namespace: &str,
        name: &str,
    ) -> Option<&Value> {
        self.objects
            .get(&(resource, namespace.to_owned(), name.to_owned()))
    }

    fn new_uid(&mut self) -> String {
        self.uid_counter += 1;
        let mut h = RandomState::new().build_hasher();
        h.write_u64(self.uid_seed);
        h.write_u64(self.uid_counter);
        let a = h.finish();
        let b =
            self.uid_seed.rotate_left(17) ^ self.uid_counter.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0x0fff,
            0x8000 | (b >> 48) & 0x3fff,
            b & 0xffff_ffff_ffff
        )
    }

    fn commit(
        &mut self,
        resource: Resource,
        namespace: &str,
        name: &str,
        mut obj: Value,
        kind: ChangeKind,
    ) -> Value {
        self.rv += 1;
        meta_mut(&mut obj).insert("resourceVersion".into(), json!(self.rv.to_string()));
        let key = (resource, namespace.to_owned(), name.to_owned());
        match kind {
            ChangeKind::Deleted => {
                self.objects.remove(&key);
            }
            ChangeKind::Added | ChangeKind::Modified => {
                self.objects.insert(key, obj.clone());
            }
        }
        self.history.push_back(Change {
            rv: self.rv,
            kind,
            resource,
            namespace: namespace.to_owned(),
            object: obj.clone(),
        });
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
        obj
    }

    /// Decoding checks shared by create, update and patch: a JSON object of
    /// the right apiVersion and kind, in the namespace of the URL.
    fn check_body(resource: Resource, namespace: &str, obj: &mut Value) -> Result<(), ApiError> {
        if !obj.is_object() {
            let what = if obj.is_array() { "array" } else { "value" };
            return Err(cannot_handle(
                resource,
                &format!("json: cannot unmarshal {what} into Go value of type struct"),
            ));
        }
        match obj.get("apiVersion").and_then(Value::as_str) {
            Some(v) if !v.is_empty() && v != resource.api_version() => {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({v}) does not match the expected API version ({})",
                    resource.api_version()
                )));
            }
            _ => {}
        }
        match obj.get("kind").and_then(Value::as_str) {
            Some(k) if !k.is_empty() && k != resource.kind() => {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    resource.kind()
                )));
            }
            _ => {}
        }
        check_metadata_types(resource, obj)?;
        obj["apiVersion"] = json!(resource.api_version());
        obj["kind"] = json!(resource.kind());
        if resource.namespaced() {
            let body_ns = meta_str(obj, "namespace").to_owned();
            if !body_ns.is_empty() && body_ns != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            meta_mut(obj).insert("namespace".into(), json!(namespace));
        } else {
            meta_mut(obj).remove("namespace");
        }
        Ok(())
    }

    /// Type-specific decoding and validation; returns the field errors.
    fn validate(
        resource: Resource,
        name: &str,
        obj: &mut Value,
    ) -> Result<Vec<FieldError>, ApiError> {
        let mut errs = validate_name(resource, name);
        match resource {
            Resource::Lease => errs.extend(check_lease_spec(obj)?),
            Resource::LeaseCandidate => errs.extend(check_lease_candidate(obj)?),
            Resource::ConfigMap => check_config_map(obj)?,
            Resource::Node => check_node(obj)?,
            Resource::Event | Resource::EventV1 | Resource::Namespace => {}
            Resource::ValidatingAdmissionPolicy | Resource::ValidatingAdmissionPolicyBinding => {
                check_types(resource, obj)?;
                errs.extend(validate_admission(resource, obj));
            }
        }
        errs.extend(validate_owner_references(obj));
        Ok(errs)
    }

    fn require_namespace(&self, resource: Resource, namespace: &str) -> Result<(), ApiError> {
        if resource.namespaced()
            && self
                .get_object(Resource::Namespace, "", namespace)
                .is_none()
        {
            return Err(ApiError::not_found(Resource::Namespace, namespace));
        }
        Ok(())
    }

    /// Fills the system fields of an object about to be created.
    fn fill_for_create(&mut self, resource: Resource, obj: &mut Value, now: Timestamp) {
        let uid = self.new_uid();
        let m = meta_mut(obj);
        m.insert("uid".into(), json!(uid));
        m.insert("creationTimestamp".into(), json!(format_time(now)));
        m.remove("resourceVersion");
        m.remove("deletionTimestamp");
        m.remove("deletionGracePeriodSeconds");
        m.remove("generateName");
        if resource == Resource::Namespace {
            let name = m
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            if let Value::Object(l) = labels {
                l.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
            obj["status"] = json!({"phase": "Active"});
        }
    }

    fn generated_name(&mut self, prefix: &str) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        self.uid_counter += 1;
        let mut h = RandomState::new().build_hasher();
        h.write_u64(self.uid_seed ^ self.uid_counter);
        let mut x = h.finish();
        let mut s = String::from(prefix);
        for _ in 0..5 {
            s.push(ALPHABET[(x % ALPHABET.len() as u64) as usize] as char);
            x /= ALPHABET.len() as u64;
        }
        s
    }

    /// POST to a collection. Fields the kind does not have are dropped, or
    /// refused under [`FieldValidation::Strict`].
    pub(crate) fn create(
        &mut self,
        resource: Resource,
        namespace: &str,
        mut obj: Value,
        now: Timestamp,
        fields: FieldValidation,
    ) -> Result<Reply, ApiError> {
        Self::check_body(resource, namespace, &mut obj)?;
        let warnings = fields
            .apply(resource, &mut obj)
            .map_err(|unknown| strict_decoding_error(resource, &unknown))?;
        let mut name = meta_str(&obj, "name").to_owned();
        let generate = meta_str(&obj, "generateName").to_owned();
        self.require_namespace(resource, namespace)?;
        if name.is_empty() && !generate.is_empty() {
            name = self.generated_name(&generate);
            meta_mut(&mut obj).insert("name".into(), json!(name));
        }
        let errs = Self::validate(resource, &name, &mut obj)?;
        if !errs.is_empty() {
            return Err(ApiError::invalid(resource, &name, &errs));
        }
        let ns = if resource.namespaced() { namespace } else { "" };
        if self.get_object(resource, ns, &name).is_some() {
            return Err(ApiError::already_exists(resource, &name));
        }
        self.fill_for_create(resource, &mut obj, now);
        let body = self.commit(resource, ns, &name, obj, ChangeKind::Added);
        Ok(Reply::new(201, body).warned(warnings))
    }

    /// GET of one object.
    pub(crate) fn get(
        &self,
        resource: Resource,
        namespace: &str,
        name: &str,
    ) -> Result<Reply, ApiError> {
        self.get_object(resource, namespace, name)
            .map(|o| Reply::new(200, o.clone()))
            .ok_or_else(|| ApiError::not_found(resource, name))
    }

    /// GET from a lagging cache: the object as it was before its latest
    /// write, when the history still holds that write; else the current one.
    pub(crate) fn stale_get(
        &self,
        resource: Resource,
        namespace: &str,
        name: &str,
    ) -> Result<Reply, ApiError> {
        let mut mine = self.history.iter().rev().filter(|c| {
            c.resource == resource
                && c.namespace == namespace
                && meta_str(&c.object, "name") == name
        });
        let latest = mine.next();
        let previous = mine.next();
        match (latest, previous) {
            (Some(_), Some(prev)) if prev.kind != ChangeKind::Deleted => {
                Ok(Reply::new(200, prev.object.clone()))
            }
            (Some(_), Some(_)) => Err(ApiError::not_found(resource, name)),
            (Some(latest), None) if latest.kind == ChangeKind::Added => {
                Err(ApiError::not_found(resource, name))
            }
            _ => self.get(resource, namespace, name),
        }
    }

    /// The UID precondition of an update: the API server takes the UID of the
    /// body as a precondition and checks it before anything else, even
    /// before create-on-update.
    fn check_uid_precondition(
        resource: Resource,
        namespace: &str,
        name: &str,
        body_uid: &str,
        existing: Option<&Value>,
    ) -> Result<(), ApiError> {
        if body_uid.is_empty() {
            return Ok(());
        }
        let (existing_uid, existing_rv) = match existing {
            Some(e) => (meta_str(e, "uid"), meta_str(e, "resourceVersion")),
            None => ("", "0"),
        };
        if existing_uid != body_uid {
            let key = if namespace.is_empty() {
                format!("/registry/{}/{name}", resource.plural())
            } else {
                format!("/registry/{}/{namespace}/{name}", resource.plural())
            };
            return Err(ApiError::conflict(
                resource,
                name,
                &format!(
                    "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: {existing_rv}, AdditionalErrorMsg: Precondition failed: UID in precondition: {body_uid}, UID in object meta: {existing_uid}"
                ),
            ));
        }
        Ok(())
    }

    /// The update path shared by PUT and PATCH once the new object is known.
    fn update_existing(
        &mut self,
        resource: Resource,
        ns: &str,
        name: &str,
        mut obj: Value,
        existing: &Value,
    ) -> Result<Reply, ApiError> {
        let new_rv = meta_str(&obj, "resourceVersion").to_owned();
        let existing_rv = meta_str(existing, "resourceVersion").to_owned();
        // An absent or "0" version is an unconditional update (Leases,
        // ConfigMaps and Events all allow them); any other must match.
        if !new_rv.is_empty() {
            let parsed = parse_rv(&new_rv)?;
            if parsed != 0 && parsed.to_string() != existing_rv {
                return Err(ApiError::conflict(resource, name, OPTIMISTIC_LOCK_MSG));
            }
        }
        let mut errs = Self::validate(resource, name, &mut obj)?;
        if resource == Resource::LeaseCandidate {
            errs.extend(lease_candidate_update_errors(&obj, existing));
        }
        if !errs.is_empty() {
            return Err(ApiError::invalid(resource, name, &errs));
        }
        // System fields come from the stored object.
        {
            let old = meta(existing).cloned().unwrap_or_default();
            let m = meta_mut(&mut obj);
            for field in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "generateName",
            ] {
                match old.get(field) {
                    Some(v) => {
                        m.insert(field.into(), v.clone());
                    }
                    None => {
                        m.remove(field);
                    }
                }
            }
            m.insert("resourceVersion".into(), json!(existing_rv));
        }
        if resource == Resource::Namespace {
            obj["status"] = existing.get("status").cloned().unwrap_or(Value::Null);
            obj["spec"] = existing.get("spec").cloned().unwrap_or(Value::Null);
        }
        // etcd3's GuaranteedUpdate skips a write whose bytes equal the stored
        // ones: same resourceVersion, no watch event.
        if &obj == existing {
            return Ok(Reply::new(200, obj));
        }
        let body = self.commit(resource, ns, name, obj, ChangeKind::Modified);
        Ok(Reply::new(200, body))
    }

    /// PUT of one object; `fields` as for [`Store::create`].
    pub(crate) fn update(
        &mut self,
        resource: Resource,
        namespace: &str,
        name: &str,
        mut obj: Value,
        now: Timestamp,
        fields: FieldValidation,
    ) -> Result<Reply, ApiError> {
        let ns = if resource.namespaced() { namespace } else { "" };
        Self::check_body(resource, ns, &mut obj)?;
        let warnings = fields
            .apply(resource, &mut obj)
            .map_err(|unknown| strict_decoding_error(resource, &unknown))?;
        let body_name = meta_str(&obj, "name").to_owned();
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let existing = self.get_object(resource, ns, name).cloned();
        Self::check_uid_precondition(resource, ns, name, meta_str(&obj, "uid"), existing.as_ref())?;
        let reply = match existing {
            Some(_) if !allow_unconditional_update(resource) && unconditional(&obj)? => {
                // `errors.NewInvalid` with the resource where the kind goes,
                // as the generic registry words it.
                Err(ApiError::invalid_of(
                    resource.group(),
                    resource.plural(),
                    name,
                    &[FieldError::invalid(
                        "metadata.resourceVersion",
                        "0",
                        "must be specified for an update",
                    )],
                ))
            }
            Some(existing) => self.update_existing(resource, ns, name, obj, &existing),
            None if allow_create_on_update(resource) => {
                // Create-on-update: the resourceVersion in the body is not a
                // precondition (only the UID is), so a stale version creates.
                self.require_namespace(resource, ns)?;
                let errs = Self::validate(resource, name, &mut obj)?;
                if !errs.is_empty() {
                    return Err(ApiError::invalid(resource, name, &errs));
                }
                self.fill_for_create(resource, &mut obj, now);
                let body = self.commit(resource, ns, name, obj, ChangeKind::Added);
                Ok(Reply::new(201, body))
            }
            None => Err(ApiError::not_found(resource, name)),
        };
        reply.map(|r| r.warned(warnings))
    }

    /// PATCH of one object. A `metadata.resourceVersion` in the patch is a
    /// precondition, as in the API server. The fields of the patched object
    /// that the kind does not have are dropped, or refused under
    /// [`FieldValidation::Strict`] with 422, as the server's patcher refuses them.
    pub(crate) fn patch(
        &mut self,
        resource: Resource,
        namespace: &str,
        name: &str,
        kind: PatchKind,
        patch: &Value,
        fields: FieldValidation,
    ) -> Result<Reply, ApiError> {
        let ns = if resource.namespaced() { namespace } else { "" };
        let Some(existing) = self.get_object(resource, ns, name).cloned() else {
            return Err(ApiError::not_found(resource, name));
        };
        let mut obj = match kind {
            PatchKind::Merge | PatchKind::StrategicMerge => {
                if !patch.is_object() {
                    return Err(ApiError::bad_request(
                        "json: cannot unmarshal non-object into Go value of type map[string]interface {}",
                    ));
                }
                let mut o = existing.clone();
                merge_patch(&mut o, patch);
                o
            }
            PatchKind::Json => json_patch(&existing, patch).map_err(|e| match e {
                PatchError::NotAnArray | PatchError::BadOperation(_) => {
                    ApiError::bad_request(e.to_string())
                }
                PatchError::MissingPath { .. }
                | PatchError::TestFailed { .. }
                | PatchError::CopiedTooMuch(_) => {
                    let mut err = ApiError::bad_request(e.to_string());
                    err.code = 422;
                    err.reason = "Invalid";
                    err
                }
                PatchError::TooManyOperations(_) => {
                    let mut err = ApiError::bad_request(e.to_string());
                    err.code = 413;
                    err.reason = "RequestEntityTooLarge";
                    err
                }
            })?,
        };
        Self::check_body(resource, ns, &mut obj)?;
        // The message names the patched object (JSON and merge patches) or
        // the patch (strategic merge), as the server's two patchers do.
        let shown = (fields == FieldValidation::Strict).then(|| match kind {
            PatchKind::StrategicMerge => go_format(patch),
            PatchKind::Merge | PatchKind::Json => obj.to_string(),
        });
        let warnings = fields.apply(resource, &mut obj).map_err(|unknown| {
            let shown = shown.unwrap_or_default();
            ApiError::invalid_of(
                "",
                "",
                "",
                &[FieldError::invalid(
                    "patch",
                    &format!("{shown:?}"),
                    &strict_decoding_message(&unknown),
                )],
            )
        })?;
        let new_name = meta_str(&obj, "name").to_owned();
        if new_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({new_name}) does not match the name on the URL ({name})"
            )));
        }
        Self::check_uid_precondition(resource, ns, name, meta_str(&obj, "uid"), Some(&existing))?;
        self.update_existing(resource, ns, name, obj, &existing)
            .map(|r| r.warned(warnings))
    }

    /// Owner-reference garbage collection after the objects with the uids
    /// `gone` were deleted, done at once rather than by a background collector.
    /// A dependent whose every owner is gone is deleted (and its own dependents
    /// after it); one that still has a live owner only loses the dangling
    /// reference, as the API server's collector does. With `orphan`
    /// (`propagationPolicy: Orphan`) the direct dependents are kept and lose the
    /// reference.
    fn collect_garbage(&mut self, mut gone: Vec<String>, orphan: bool) {
        let owners_of = |obj: &Value| -> Vec<String> {
            meta(obj)
                .and_then(|m| m.get("ownerReferences"))
                .and_then(Value::as_array)
                .map(|refs| {
                    refs.iter()
                        .filter_map(|r| r.get("uid").and_then(Value::as_str))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut first_level = true;
        while !gone.is_empty() {
            let live: std::collections::BTreeSet<String> = self
                .objects
                .values()
                .map(|o| meta_str(o, "uid").to_owned())
                .collect();
            let dependents: Vec<(Key, Value)> = self
                .objects
                .iter()
                .filter(|(_, o)| owners_of(o).iter().any(|u| gone.contains(u)))
                .map(|(k, o)| (k.clone(), o.clone()))
                .collect();
            let mut next = Vec::new();
            for ((r, n, o), mut obj) in dependents {
                let keep = (orphan && first_level)
                    || owners_of(&obj)
                        .iter()
                        .any(|u| !gone.contains(u) && live.contains(u));
                if keep {
                    if let Some(Value::Array(refs)) = meta_mut(&mut obj).get_mut("ownerReferences")
                    {
                        refs.retain(|r| {
                            r.get("uid")
                                .and_then(Value::as_str)
                                .is_none_or(|u| !gone.iter().any(|g| g == u))
                        });
                    }
                    self.commit(r, &n, &o, obj, ChangeKind::Modified);
                } else {
                    next.push(meta_str(&obj, "uid").to_owned());
                    self.commit(r, &n, &o, obj, ChangeKind::Deleted);
                }
            }
            gone = next;
            first_level = false;
        }
    }

    /// DELETE of one object, honouring `preconditions` in DeleteOptions.
    pub(crate) fn delete(
        &mut self,
        resource: Resource,
        namespace: &str,
        name: &str,
        options: Option<&Value>,
    ) -> Result<Reply, ApiError> {
        let ns = if resource.namespaced() { namespace } else { "" };
        let Some(existing) = self.get_object(resource, ns, name).cloned() else {
            return Err(ApiError::not_found(resource, name));
        };
        let uid = meta_str(&existing, "uid").to_owned();
        if let Some(pre) = options.and_then(|o| o.get("preconditions")) {
            if let Some(want) = pre.get("uid").and_then(Value::as_str)
                && want != uid
            {
                return Err(ApiError::conflict(
                    resource,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {want}, UID in object meta: {uid}"
                    ),
                ));
            }
            if let Some(want) = pre.get("resourceVersion").and_then(Value::as_str) {
                let have = meta_str(&existing, "resourceVersion");
                if want != have {
                    return Err(ApiError::conflict(
                        resource,
                        name,
                        &format!(
                            "Precondition failed: ResourceVersion in precondition: {want}, ResourceVersion in object meta: {have}"
                        ),
                    ));
                }
            }
        }
        let orphan = options.is_some_and(|o| {
            o.get("propagationPolicy").and_then(Value::as_str) == Some("Orphan")
                || o.get("orphanDependents").and_then(Value::as_bool) == Some(true)
        });
        let mut gone_uids = Vec::new();
        if resource == Resource::Namespace {
            let inside: Vec<Key> = self
                .objects
                .keys()
                .filter(|(r, n, _)| r.namespaced() && n == name)
                .cloned()
                .collect();
            for (r, n, o) in inside {
                if let Some(obj) = self.objects.get(&(r, n.clone(), o.clone())).cloned() {
                    gone_uids.push(meta_str(&obj, "uid").to_owned());
                    self.commit(r, &n, &o, obj, ChangeKind::Deleted);
                }
            }
        }
        let gone = self.commit(resource, ns, name, existing, ChangeKind::Deleted);
        let deleted_at = Some(self.rv.to_string());
        gone_uids.push(uid.clone());
        self.collect_garbage(gone_uids, orphan);
        let body = if resource == Resource::Namespace {
            let mut ns_obj = gone;
            ns_obj["status"] = json!({"phase": "Terminating"});
            ns_obj
        } else {
            delete_success(resource, name, &uid)
        };
        Ok(Reply {
            deleted_at,
            ..Reply::new(200, body)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        Timestamp {
            secs: 1_700_000_000,
            nanos: 0,
        }
    }

    fn lease(name: &str) -> Value {
        json!({"metadata": {"name": name}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})
    }

    /// Creates `body` as a `resource` in `default`, now, with strict field validation.
    fn create(s: &mut Store, resource: Resource, body: Value) -> Result<Reply, ApiError> {
        s.create(resource, "default", body, now(), FieldValidation::Strict)
    }

    /// Updates `name`, a `resource` in `default`, to `body`, now, with strict
    /// field validation.
    fn update(
        s: &mut Store,
        resource: Resource,
        name: &str,
        body: Value,
    ) -> Result<Reply, ApiError> {
        s.update(
            resource,
            "default",
            name,
            body,
            now(),
            FieldValidation::Strict,
        )
    }

    #[test]
    fn versions_grow_and_stale_updates_conflict() {
        let mut s = Store::new(100, now());
        let created = create(&mut s, Resource::Lease, lease("l"))
            .expect("created")
            .body;
        let rv1 = created["metadata"]["resourceVersion"]
            .as_str()
            .expect("rv")
            .to_owned();
        let mut next = created.clone();
        next["spec"]["holderIdentity"] = json!("b");
        let updated = update(&mut s, Resource::Lease, "l", next.clone())
            .expect("updated")
            .body;
        let rv2 = updated["metadata"]["resourceVersion"].as_str().expect("rv");
        assert!(rv2.parse::<u64>().expect("num") > rv1.parse::<u64>().expect("num"));
        let err = update(&mut s, Resource::Lease, "l", next).expect_err("stale");
        assert_eq!((err.code, err.reason), (409, "Conflict"));
        assert!(
            err.message.ends_with(OPTIMISTIC_LOCK_MSG),
            "{}",
            err.message
        );
    }

    #[test]
    fn version_zero_or_absent_is_unconditional() {
        let mut s = Store::new(100, now());
        create(&mut s, Resource::Lease, lease("l")).expect("created");
        let mut body = lease("l");
        body["spec"]["holderIdentity"] = json!("b");
        body["metadata"]["resourceVersion"] = json!("0");
        update(&mut s, Resource::Lease, "l", body.clone()).expect("rv 0 is unconditional");
        body["spec"]["holderIdentity"] = json!("c");
        body["metadata"]
            .as_object_mut()
            .expect("meta")
            .remove("resourceVersion");
        let r = update(&mut s, Resource::Lease, "l", body).expect("absent rv is unconditional");
        assert_eq!(r.body["spec"]["holderIdentity"], "c");
        let mut bad = lease("l");
        bad["metadata"]["resourceVersion"] = json!("abc");
        assert_eq!(
            update(&mut s, Resource::Lease, "l", bad)
                .expect_err("not a number")
                .code,
            400
        );
    }

    #[test]
    fn identical_update_is_a_no_op_without_new_version() {
        let mut s = Store::new(100, now());
        let created = create(&mut s, Resource::Lease, lease("l"))
            .expect("created")
            .body;
        let rv = s.resource_version();
        let again = update(&mut s, Resource::Lease, "l", created.clone())
            .expect("ok")
            .body;
        assert_eq!(again, created);
        assert_eq!(s.resource_version(), rv);
    }

    #[test]
    fn put_to_missing_lease_creates_unless_uid_given() {
        let mut s = Store::new(100, now());
        let mut body = lease("l");
        body["metadata"]["resourceVersion"] = json!("999");
        let r = update(&mut s, Resource::Lease, "l", body).expect("create-on-update");
        assert_eq!(r.code, 201);
        s.delete(Resource::Lease, "default", "l", None)
            .expect("deleted");
        let mut with_uid = r.body.clone();
        with_uid["metadata"]["resourceVersion"] = json!("1");
        let err = update(&mut s, Resource::Lease, "l", with_uid).expect_err("uid precondition");
        assert_eq!((err.code, err.reason), (409, "Conflict"));
        assert!(
            err.message
                .contains("Precondition failed: UID in precondition"),
            "{}",
            err.message
        );
        let err = update(
            &mut s,
            Resource::ConfigMap,
            "c",
            json!({"metadata": {"name": "c"}}),
        )
        .expect_err("no create");
        assert_eq!(err.code, 404);
    }

    #[test]
    fn history_is_bounded_and_compaction_is_reported() {
        let mut s = Store::new(3, now());
        for i in 0..5 {
            create(
                &mut s,
                Resource::ConfigMap,
                json!({"metadata": {"name": format!("c{i}")}}),
            )
            .expect("created");
        }
        let rv = s.resource_version();
        assert_eq!(s.changes_since(rv - 3).map(|c| c.len()), Some(3));
        assert!(s.changes_since(rv - 4).is_none());
        s.compact();
        assert!(s.changes_since(rv - 1).is_none());
        assert_eq!(s.changes_since(rv).map(|c| c.len()), Some(0));
    }
}
