//! Field and label selectors of list and watch (`fieldSelector=metadata.name=x`,
//! `labelSelector=app=a,tier!=b,present,!absent`).

use serde_json::Value;

use crate::status::ApiError;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    Eq(String),
    Ne(String),
    Exists,
    NotExists,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Requirement {
    key: String,
    op: Op,
}

/// Parsed selectors; the default selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Selectors {
    fields: Vec<Requirement>,
    labels: Vec<Requirement>,
}

fn parse_term(term: &str, allow_exists: bool) -> Option<Requirement> {
    let term = term.trim();
    // Set-based requirements (`env in (a,b)`) are not served: refuse them
    // rather than misread them.
    if term.contains(['(', ')', ' ']) {
        return None;
    }
    if let Some((k, v)) = term.split_once("!=") {
        return Some(Requirement {
            key: k.trim().to_owned(),
            op: Op::Ne(v.trim().to_owned()),
        });
    }
    if let Some((k, v)) = term.split_once("==") {
        return Some(Requirement {
            key: k.trim().to_owned(),
            op: Op::Eq(v.trim().to_owned()),
        });
    }
    if let Some((k, v)) = term.split_once('=') {
        return Some(Requirement {
            key: k.trim().to_owned(),
            op: Op::Eq(v.trim().to_owned()),
        });
    }
    if !allow_exists || term.is_empty() {
        return None;
    }
    match term.strip_prefix('!') {
        Some(k) => Some(Requirement {
            key: k.trim().to_owned(),
            op: Op::NotExists,
        }),
        None => Some(Requirement {
            key: term.to_owned(),
            op: Op::Exists,
        }),
    }
}

impl Selectors {
    /// Parses both selectors; a malformed term is a 400 as from the API server.
    pub(crate) fn parse(field: Option<&str>, label: Option<&str>) -> Result<Selectors, ApiError> {
        let mut s = Selectors::default();
        for term in field
            .unwrap_or("")
            .split(',')
            .filter(|t| !t.trim().is_empty())
        {
            let r = parse_term(term, false).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "invalid selector: '{term}'; can't understand '{term}'"
                ))
            })?;
            s.fields.push(r);
        }
        for term in label
            .unwrap_or("")
            .split(',')
            .filter(|t| !t.trim().is_empty())
        {
            let r = parse_term(term, true).ok_or_else(|| {
                ApiError::bad_request(format!("unable to parse requirement: {term:?}"))
            })?;
            s.labels.push(r);
        }
        Ok(s)
    }

    /// Whether `obj` is selected.
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        let field_ok = self.fields.iter().all(|r| {
            let mut cur = Some(obj);
            for part in r.key.split('.') {
                cur = cur.and_then(|v| v.get(part));
            }
            let have = match cur {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            match &r.op {
                Op::Eq(v) => &have == v,
                Op::Ne(v) => &have != v,
                Op::Exists | Op::NotExists => true,
            }
        });
        let labels = obj.get("metadata").and_then(|m| m.get("labels"));
        let label_ok = self.labels.iter().all(|r| {
            let have = labels.and_then(|l| l.get(&r.key)).and_then(Value::as_str);
            match &r.op {
                Op::Eq(v) => have == Some(v.as_str()),
                Op::Ne(v) => have != Some(v.as_str()),
                Op::Exists => have.is_some(),
                Op::NotExists => have.is_none(),
            }
        });
        field_ok && label_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selects_by_name_and_labels() {
        let obj = json!({"metadata": {"name": "a", "namespace": "ns", "labels": {"app": "x"}}});
        let by_name = Selectors::parse(Some("metadata.name=a"), None).expect("parses");
        assert!(by_name.matches(&obj));
        let other =
            Selectors::parse(Some("metadata.name==b,metadata.namespace=ns"), None).expect("parses");
        assert!(!other.matches(&obj));
        let labels = Selectors::parse(None, Some("app=x,!tier")).expect("parses");
        assert!(labels.matches(&obj));
        let missing = Selectors::parse(None, Some("tier")).expect("parses");
        assert!(!missing.matches(&obj));
        assert!(Selectors::parse(Some("metadata.name"), None).is_err());
        assert!(Selectors::parse(None, Some("env in (a,b)")).is_err());
    }
}
