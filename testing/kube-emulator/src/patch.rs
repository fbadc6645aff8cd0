//! PATCH bodies: JSON merge patch (RFC 7386; strategic merge is treated the
//! same for the served types, which have no patch-merge keys that matter to
//! leader election) and JSON patch (RFC 6902).

use serde_json::Value;

/// The patch media types served, as the OpenAPI documents list them and the
/// 415 of another one names them. Server-side apply
/// (`application/apply-patch+yaml`) is not among them.
pub(crate) const MEDIA_TYPES: [&str; 3] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

/// The most operations one JSON patch may hold (the API server's
/// `maxJSONPatchOperations`; more is 413).
pub(crate) const MAX_OPERATIONS: usize = 10_000;

/// The most bytes (as JSON) that the `copy` operations of one JSON patch may
/// add to the document: the emulator's bound, the size of the API server's
/// request limit (3 MiB). Without one, each copy of a part into itself doubles
/// it, and a few dozen operations ask for more memory than there is.
pub(crate) const MAX_COPIED_BYTES: usize = 3 * 1024 * 1024;

/// Why a JSON patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PatchError {
    /// More than [`MAX_OPERATIONS`] operations.
    #[error("The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {0}")]
    TooManyOperations(usize),
    /// The copies of the patch would add more than [`MAX_COPIED_BYTES`] (json-patch's words).
    #[error(
        "Unable to complete the copy, the accumulated size increase of copy is {0}, exceeding the limit {MAX_COPIED_BYTES}"
    )]
    CopiedTooMuch(usize),
    /// The body is not a JSON array of operations.
    #[error("the patch is not a JSON array of operations")]
    NotAnArray,
    /// An operation lacks a field or has an unknown `op`.
    #[error("invalid JSON patch operation: {0}")]
    BadOperation(String),
    /// A path names no value.
    #[error("jsonpatch {op} operation does not apply: doc is missing path: {path:?}")]
    MissingPath {
        /// The operation.
        op: String,
        /// The path.
        path: String,
    },
    /// A `test` operation found another value.
    #[error("testing value {path:?} failed: test failed")]
    TestFailed {
        /// The path tested.
        path: String,
    },
}

/// RFC 7386 merge: `null` removes, objects merge recursively, anything else replaces.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let Value::Object(map) = target else {
        return;
    };
    for (k, v) in patch {
        if v.is_null() {
            map.remove(k);
        } else {
            let entry = map.entry(k.clone()).or_insert(Value::Null);
            merge_patch(entry, v);
        }
    }
}

/// A decoded patch as Go's `fmt` prints a `map[string]interface{}` with
/// `%+v`, which the API server puts in the message of a strategic merge patch
/// it refuses: `map[data:map[a:b] kind:ConfigMap]`, keys sorted, strings bare,
/// `<nil>` for null. A number that is not an integer is written as JSON
/// writes it (Go would write `1e+06` where JSON has `1000000.0`).
pub(crate) fn go_format(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let each: Vec<String> = items.iter().map(go_format).collect();
            format!("[{}]", each.join(" "))
        }
        // serde_json's map keeps its keys sorted, as fmt prints a map's.
        Value::Object(map) => {
            let each: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_format(v)))
                .collect();
            format!("map[{}]", each.join(" "))
        }
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

fn tokens(path: &str) -> Result<Vec<String>, PatchError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(PatchError::BadOperation(format!(
            "path {path:?} does not start with '/'"
        )));
    };
    Ok(rest.split('/').map(unescape).collect())
}

fn parent_mut<'a>(
    doc: &'a mut Value,
    toks: &[String],
    op: &str,
    path: &str,
) -> Result<&'a mut Value, PatchError> {
    let missing = || PatchError::MissingPath {
        op: op.to_owned(),
        path: path.to_owned(),
    };
    let mut cur = doc;
    for t in toks {
        cur = match cur {
            Value::Object(m) => m.get_mut(t).ok_or_else(missing)?,
            Value::Array(a) => {
                let i: usize = t.parse().map_err(|_| missing())?;
                a.get_mut(i).ok_or_else(missing)?
            }
            _ => return Err(missing()),
        };
    }
    Ok(cur)
}

/// The value at `toks` in `doc`, if any.
fn get_tokens<'a>(doc: &'a Value, toks: &[String]) -> Option<&'a Value> {
    toks.iter().try_fold(doc, |cur, t| match cur {
        Value::Object(m) => m.get(t),
        Value::Array(a) => a.get(t.parse::<usize>().ok()?),
        _ => None,
    })
}

fn get<'a>(doc: &'a Value, path: &str, op: &str) -> Result<&'a Value, PatchError> {
    let toks = tokens(path)?;
    let missing = || PatchError::MissingPath {
        op: op.to_owned(),
        path: path.to_owned(),
    };
    let mut cur = doc;
    for t in &toks {
        cur = match cur {
            Value::Object(m) => m.get(t).ok_or_else(missing)?,
            Value::Array(a) => a
                .get(t.parse::<usize>().map_err(|_| missing())?)
                .ok_or_else(missing)?,
            _ => return Err(missing()),
        };
    }
    Ok(cur)
}

fn add(doc: &mut Value, path: &str, value: Value, op: &str) -> Result<(), PatchError> {
    let toks = tokens(path)?;
    let Some((last, parents)) = toks.split_last() else {
        *doc = value;
        return Ok(());
    };
    let missing = || PatchError::MissingPath {
        op: op.to_owned(),
        path: path.to_owned(),
    };
    match parent_mut(doc, parents, op, path)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(a) => {
            if last == "-" {
                a.push(value);
                return Ok(());
            }
            let i: usize = last.parse().map_err(|_| missing())?;
            if i > a.len() {
                return Err(missing());
            }
            a.insert(i, value);
            Ok(())
        }
        _ => Err(missing()),
    }
}

fn remove(doc: &mut Value, path: &str, op: &str) -> Result<Value, PatchError> {
    let toks = tokens(path)?;
    let missing = || PatchError::MissingPath {
        op: op.to_owned(),
        path: path.to_owned(),
    };
    let Some((last, parents)) = toks.split_last() else {
        return Err(missing());
    };
    match parent_mut(doc, parents, op, path)? {
        Value::Object(m) => m.remove(last).ok_or_else(missing),
        Value::Array(a) => {
            let i: usize = last.parse().map_err(|_| missing())?;
            if i >= a.len() {
                return Err(missing());
            }
            Ok(a.remove(i))
        }
        _ => Err(missing()),
    }
}

/// The length of `v` written as compact JSON, without writing it.
fn json_size(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, v);
    count.0
}

/// Applies an RFC 6902 patch to a copy of `doc`; `doc` is untouched on error.
/// At most [`MAX_OPERATIONS`] operations, whose copies add at most
/// [`MAX_COPIED_BYTES`].
pub(crate) fn json_patch(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    let Value::Array(ops) = patch else {
        return Err(PatchError::NotAnArray);
    };
    if ops.len() > MAX_OPERATIONS {
        return Err(PatchError::TooManyOperations(ops.len()));
    }
    let mut copied = 0usize;
    let mut out = doc.clone();
    for op in ops {
        let name = op
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| PatchError::BadOperation(format!("missing \"op\" in {op}")))?;
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| PatchError::BadOperation(format!("missing \"path\" in {op}")))?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| PatchError::BadOperation(format!("missing \"value\" in {op}")))
        };
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or_else(|| PatchError::BadOperation(format!("missing \"from\" in {op}")))
        };
        match name {
            "add" => add(&mut out, path, value()?, name)?,
            "remove" => {
                remove(&mut out, path, name)?;
            }
            "replace" => {
                let v = value()?;
                let toks = tokens(path)?;
                let slot = parent_mut(&mut out, &toks, name, path)?;
                *slot = v;
            }
            "move" => {
                let from = from()?;
                let v = remove(&mut out, from, name)?;
                add(&mut out, path, v, name)?;
            }
            "copy" => {
                let v = get(&out, from()?, name)?;
                // Counted before the value is cloned: the bound is on memory.
                copied = copied.saturating_add(json_size(v));
                if copied > MAX_COPIED_BYTES {
                    return Err(PatchError::CopiedTooMuch(copied));
                }
                let v = v.clone();
                add(&mut out, path, v, name)?;
            }
            "test" => {
                let expected = value()?;
                // json-patch (v4, the API server's) passes a `null` test on a
                // member missing from an object that exists.
                let found = match get(&out, path, name) {
                    Err(missing) if expected.is_null() => {
                        let toks = tokens(path)?;
                        let parent = toks.split_last().map(|(_, parents)| parents);
                        match parent.map(|p| get_tokens(&out, p)) {
                            Some(Some(Value::Object(_))) => &expected,
                            _ => return Err(missing),
                        }
                    }
                    other => other?,
                };
                if found != &expected {
                    return Err(PatchError::TestFailed {
                        path: path.to_owned(),
                    });
                }
            }
            other => return Err(PatchError::BadOperation(format!("unknown op {other:?}"))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc7386() {
        let mut doc = json!({"a": "b", "c": {"d": "e", "f": "g"}});
        merge_patch(&mut doc, &json!({"a": "z", "c": {"f": null}}));
        assert_eq!(doc, json!({"a": "z", "c": {"d": "e"}}));
        let mut arr = json!({"a": [1, 2]});
        merge_patch(&mut arr, &json!({"a": [3]}));
        assert_eq!(arr, json!({"a": [3]}));
    }

    #[test]
    fn go_format_prints_maps_as_fmt_does() {
        let patch = json!({"metadata": {"labels": {"b": "2", "a": "1"}}, "datta": {"k": null},
            "list": [1, "x", true]});
        assert_eq!(
            go_format(&patch),
            "map[datta:map[k:<nil>] list:[1 x true] metadata:map[labels:map[a:1 b:2]]]"
        );
    }

    #[test]
    fn json_patch_follows_rfc6902() {
        let doc =
            json!({"metadata": {"resourceVersion": "5", "labels": {"a/b": "x"}}, "list": [1, 2]});
        let out = json_patch(
            &doc,
            &json!([
                {"op": "test", "path": "/metadata/resourceVersion", "value": "5"},
                {"op": "replace", "path": "/metadata/labels/a~1b", "value": "y"},
                {"op": "add", "path": "/list/-", "value": 3},
                {"op": "remove", "path": "/list/0"},
                {"op": "copy", "from": "/list/0", "path": "/first"},
                {"op": "move", "from": "/first", "path": "/moved"}
            ]),
        )
        .expect("applies");
        assert_eq!(
            out,
            json!({"metadata": {"resourceVersion": "5", "labels": {"a/b": "y"}}, "list": [2, 3], "moved": 2})
        );

        let failed = json_patch(
            &doc,
            &json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "4"}]),
        );
        assert_eq!(
            failed,
            Err(PatchError::TestFailed {
                path: "/metadata/resourceVersion".into()
            })
        );
        let missing = json_patch(
            &doc,
            &json!([{"op": "replace", "path": "/spec/x", "value": 1}]),
        );
        assert!(matches!(missing, Err(PatchError::MissingPath { .. })));
        assert_eq!(json_patch(&doc, &json!({})), Err(PatchError::NotAnArray));
    }

    /// As json-patch v4 (the API server's): a `null` test passes on a member
    /// missing from an object, not on a present one nor under a missing parent.
    #[test]
    fn a_null_test_passes_on_a_missing_member_only() {
        let doc = json!({"metadata": {"name": "x"}});
        let create = json!([
            {"op": "test", "path": "/metadata/annotations", "value": null},
            {"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}
        ]);
        let out = json_patch(&doc, &create).expect("absent: the test passes");
        assert_eq!(out["metadata"]["annotations"], json!({"a": "b"}));
        assert_eq!(
            json_patch(&out, &create),
            Err(PatchError::TestFailed {
                path: "/metadata/annotations".into()
            })
        );
        let under_missing = json!([{"op": "test", "path": "/spec/x", "value": null}]);
        assert!(matches!(
            json_patch(&doc, &under_missing),
            Err(PatchError::MissingPath { .. })
        ));
        let add_under_missing =
            json!([{"op": "add", "path": "/metadata/annotations/k", "value": "v"}]);
        assert!(matches!(
            json_patch(&doc, &add_under_missing),
            Err(PatchError::MissingPath { .. })
        ));
    }
}
