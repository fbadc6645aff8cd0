//! A small block-YAML emitter for JSON values: what `kubectl apply -f` reads and
//! a person reads too. The fence policy ([`crate::fence`]) prints its documents
//! with it, and `kubectl elector get -o yaml` its list.
//!
//! Keys are written as they are (the documents it serves have plain keys);
//! strings are plain words when YAML reads them back as the same string, and
//! JSON strings otherwise, which YAML reads as double-quoted scalars. Numbers,
//! booleans and `null` are written as JSON writes them. So the YAML reads back
//! as the JSON value it came from.
//!
//! ```
//! use serde_json::json;
//!
//! let doc = json!({
//!     "kind": "ElectionList",
//!     "items": [{ "name": "my-lease", "holder": null, "term": 3, "renewTime": "2025-01-02T03:04:05Z" }],
//!     "empty": [],
//! });
//! // serde_json's maps keep their keys sorted.
//! assert_eq!(
//!     election_ops::yaml::to_yaml(&doc),
//!     "empty: []\n\
//!      items:\n  \
//!        - holder: null\n    \
//!          name: my-lease\n    \
//!          renewTime: \"2025-01-02T03:04:05Z\"\n    \
//!          term: 3\n\
//!      kind: ElectionList\n"
//! );
//! ```

use serde_json::Value;

/// `value` as one block-YAML document (no `---` line), ending with a newline.
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    yaml(value, 0, &mut out);
    out
}

/// `value` as block YAML at `indent`, strings quoted as JSON strings (which YAML
/// reads as double-quoted scalars) unless they are plain words.
fn yaml(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.push_str(&format!("{pad}{k}:"));
                inline_or_block(v, indent + 2, out);
            }
        }
        Value::Array(items) => {
            for v in items {
                out.push_str(&format!("{pad}-"));
                match v {
                    Value::Object(map) if !map.is_empty() => {
                        // The first key on the dash's line, the rest below it.
                        let mut first = String::new();
                        yaml(v, indent + 2, &mut first);
                        out.push(' ');
                        out.push_str(first.trim_start());
                    }
                    _ => inline_or_block(v, indent + 2, out),
                }
            }
        }
        scalar => {
            out.push_str(&pad);
            out.push_str(&yaml_scalar(scalar));
            out.push('\n');
        }
    }
}

fn inline_or_block(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            yaml(v, indent, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            yaml(v, indent, out);
        }
        Value::Object(_) => out.push_str(" {}\n"),
        Value::Array(_) => out.push_str(" []\n"),
        scalar => {
            out.push(' ');
            out.push_str(&yaml_scalar(scalar));
            out.push('\n');
        }
    }
}

fn yaml_scalar(v: &Value) -> String {
    match v {
        Value::String(s) => {
            let plain = !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '/' | '_'))
                && s.starts_with(|c: char| c.is_ascii_alphabetic())
                && !matches!(
                    s.to_ascii_lowercase().as_str(),
                    "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
                );
            if plain { s.clone() } else { v.to_string() }
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::to_yaml;
    use serde_json::{Value, json};

    #[test]
    fn yaml_reads_back_as_the_json_it_came_from() {
        let doc = json!({
            "apiVersion": "kube-elector.dev/v1",
            "items": [
                {
                    "name": "a",
                    "nested": { "list": [1, 2.5, -3], "empty": {} },
                    "words": ["yes", "no", "null", "1.30.0", "", "a: b", "x\ny"],
                    "flag": true,
                    "none": null,
                },
                { "candidates": [{ "name": "c", "binaryVersion": "1.36.0" }] },
            ],
        });
        let text = to_yaml(&doc);
        let back: Value = serde_saphyr::from_str(&text).expect(&text);
        assert_eq!(back, doc, "{text}");
    }

    #[test]
    fn words_yaml_would_read_otherwise_are_quoted() {
        assert_eq!(to_yaml(&json!({ "k": "true" })), "k: \"true\"\n");
        assert_eq!(to_yaml(&json!({ "k": "v1" })), "k: v1\n");
        assert_eq!(to_yaml(&json!({ "k": "1.36" })), "k: \"1.36\"\n");
    }
}
