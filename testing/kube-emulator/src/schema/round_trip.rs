//! The test of a schema table against k8s-openapi's type of the same message:
//! every field filled in, deserialized into the type and serialized back
//! unchanged (test builds only).

use super::{Schema, Shape};
use k8s_openapi::serde;
use serde_json::{Map, Value, json};

/// A JSON object of `schema` with every field that is not opaque set to a
/// value of its shape, nested messages filled in turn.
fn filled(schema: &Schema) -> Value {
    let mut object = Map::new();
    for &(name, shape) in schema.fields {
        if let Some(value) = value_of(shape) {
            object.insert(name.to_owned(), value);
        }
    }
    Value::Object(object)
}

/// A value of `shape`, or `None` for an opaque field.
fn value_of(shape: Shape) -> Option<Value> {
    Some(match shape {
        Shape::Str => json!("x"),
        Shape::Int32 | Shape::Int64 => json!(1),
        Shape::Bool => json!(true),
        Shape::Base64 => json!("eA=="),
        Shape::Strings => json!(["x"]),
        Shape::Map(entry) => {
            let value = entry
                .field("value")
                .and_then(value_of)
                .expect("a map entry has a value");
            json!({ "k": value })
        }
        Shape::MicroTime => json!("2026-01-01T00:00:00.000000Z"),
        Shape::Message(inner) => filled(inner),
        Shape::Messages(inner) => json!([filled(inner)]),
        Shape::Opaque => return None,
    })
}

/// The paths where `actual` differs from `expected`: `dropped: a.b` for
/// what `expected` has and `actual` lacks, `added: …` for the reverse,
/// `changed: …` for a different value.
fn diff(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                match a.get(key) {
                    Some(other) => diff(&join(key), value, other, out),
                    None => out.push(format!("dropped: {}", join(key))),
                }
            }
            for key in a.keys().filter(|key| !e.contains_key(*key)) {
                out.push(format!("added: {}", join(key)));
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (value, other)) in e.iter().zip(a).enumerate() {
                diff(&format!("{path}[{i}]"), value, other, out);
            }
        }
        _ if expected != actual => out.push(format!("changed: {path}: {expected} -> {actual}")),
        _ => {}
    }
}

/// `filled(schema)` deserializes into `T` and serializes back unchanged
/// (but for the `apiVersion` and `kind` a kind's type adds): every field
/// the table names is one of `T`'s, spelled as `T` spells it, and of a
/// JSON type `T` takes; a required field of `T` the table lacks shows up
/// as `added`.
pub(crate) fn assert_round_trips<T: serde::de::DeserializeOwned + serde::Serialize>(
    schema: &Schema,
) {
    let sent = filled(schema);
    let typed: T = serde_json::from_value(sent.clone())
        .unwrap_or_else(|e| panic!("{}: does not deserialize: {e}", schema.name));
    let mut back = serde_json::to_value(&typed).expect("serializes");
    // A kind's type writes its `apiVersion` and `kind`, which its table
    // leaves out (see `schema::of`).
    if let Value::Object(object) = &mut back {
        for envelope in ["apiVersion", "kind"] {
            if schema.field(envelope).is_none() {
                object.remove(envelope);
            }
        }
    }
    let mut differences = Vec::new();
    diff("", &sent, &back, &mut differences);
    assert!(
        differences.is_empty(),
        "{} does not round-trip:\n{}",
        schema.name,
        differences.join("\n")
    );
}
