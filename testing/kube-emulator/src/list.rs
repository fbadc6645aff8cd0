//! LIST of a collection: the version it is served at (`resourceVersion`,
//! `resourceVersionMatch`), selectors, and pages (`limit`, `continue`), with the
//! API server's answers to what it refuses (its rules are in
//! `staging/src/k8s.io/apiserver/pkg/storage/cacher` and `etcd3/store.go`).
//!
//! What differs from a real server, on purpose:
//!
//! - `resourceVersionMatch=Exact` is served at the current version only; an older
//!   one is answered 410 `Expired`, as the real server answers a compacted one
//!   (the emulator keeps changes, not past states).
//! - The pages after the first are read from the current state, not from the
//!   first page's snapshot; every page reports the first page's version. A client
//!   that then watches from that version sees whatever changed in between again
//!   as events, which the watch contract gives it anyway.

use serde_json::{Value, json};

use crate::resource::Resource;
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{Reply, Store};

/// What a LIST asks for, from its query parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ListRequest {
    /// `resourceVersion`: `None` or `""` for the most recent, `"0"` for any.
    pub(crate) resource_version: Option<String>,
    /// `resourceVersionMatch`: `NotOlderThan` or `Exact`.
    pub(crate) version_match: Option<String>,
    /// `limit`: at most this many items per page (0 or absent: all).
    pub(crate) limit: Option<String>,
    /// `continue`: the token of the previous page.
    pub(crate) continue_token: Option<String>,
}

/// Where a page starts: the version of the list it continues, and the last key
/// of the previous page (`namespace/name`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Continue {
    rv: u64,
    after: String,
}

impl Continue {
    /// An opaque token (hex, so it needs no escaping in a URL).
    fn encode(&self) -> String {
        format!("{}:{}", self.rv, self.after)
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn decode(token: &str) -> Option<Continue> {
        if !token.len().is_multiple_of(2) {
            return None;
        }
        let bytes: Option<Vec<u8>> = (0..token.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(token.get(i..i + 2)?, 16).ok())
            .collect();
        let text = String::from_utf8(bytes?).ok()?;
        let (rv, after) = text.split_once(':')?;
        Some(Continue {
            rv: rv.parse().ok()?,
            after: after.to_owned(),
        })
    }
}

fn invalid_continue() -> ApiError {
    ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion")
}

/// The version a LIST is served at, or its refusal.
fn served_version(req: &ListRequest, store: &Store) -> Result<u64, ApiError> {
    let current = store.resource_version();
    let rv = req.resource_version.as_deref().filter(|v| !v.is_empty());
    let exact = match (req.version_match.as_deref(), rv) {
        (None | Some(""), _) => false,
        (Some(_), None) => {
            return Err(ApiError::bad_request(
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        (Some("NotOlderThan"), Some(_)) => false,
        (Some("Exact"), Some("0")) => {
            return Err(ApiError::bad_request(
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        (Some("Exact"), Some(_)) => true,
        (Some(other), Some(_)) => {
            return Err(ApiError::bad_request(format!(
                "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
            )));
        }
    };
    let Some(rv) = rv else { return Ok(current) };
    let wanted: u64 = rv.parse().map_err(|_| {
        ApiError::bad_request(format!(
            "invalid resource version {rv:?}: strconv.ParseUint: parsing {rv:?}: invalid syntax"
        ))
    })?;
    if wanted > current {
        return Err(ApiError::too_large_resource_version(wanted, current));
    }
    if exact && wanted < current {
        return Err(ApiError::expired(wanted, store.compacted()));
    }
    Ok(current)
}

/// Answers a LIST of `resource` (in `namespace`, or across all) under the store lock.
pub(crate) fn list(
    store: &Store,
    resource: Resource,
    namespace: Option<&str>,
    selectors: &Selectors,
    req: &ListRequest,
) -> Result<Reply, ApiError> {
    let limit = match req.limit.as_deref().filter(|l| !l.is_empty()) {
        None => None,
        Some(l) => match l.parse::<i64>() {
            Ok(n) if n > 0 => Some(n as usize),
            Ok(_) => None,
            Err(_) => return Err(ApiError::bad_request(format!("invalid limit {l:?}"))),
        },
    };
    let start = match req.continue_token.as_deref().filter(|t| !t.is_empty()) {
        None => None,
        Some(token) => {
            if req
                .resource_version
                .as_deref()
                .is_some_and(|v| !v.is_empty())
            {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            let c = Continue::decode(token).ok_or_else(invalid_continue)?;
            if c.rv < store.compacted() {
                return Err(ApiError::continue_expired());
            }
            Some(c)
        }
    };
    let rv = match &start {
        Some(c) => c.rv,
        None => served_version(req, store)?,
    };
    let key = |o: &Value| {
        let m = &o["metadata"];
        format!(
            "{}/{}",
            m["namespace"].as_str().unwrap_or(""),
            m["name"].as_str().unwrap_or("")
        )
    };
    let mut matching = store
        .objects(resource, namespace)
        .into_iter()
        .filter(|o| selectors.matches(o))
        .filter(|o| start.as_ref().is_none_or(|c| key(o) > c.after))
        .peekable();
    let mut items = Vec::new();
    while let Some(mut o) = matching.next_if(|_| limit.is_none_or(|n| items.len() < n)) {
        if let Value::Object(m) = &mut o {
            m.remove("apiVersion");
            m.remove("kind");
        }
        items.push(o);
    }
    let remaining = matching.count();
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if remaining > 0
        && let Some(last) = items.last()
    {
        let token = Continue {
            rv,
            after: key(last),
        };
        metadata["continue"] = json!(token.encode());
        metadata["remainingItemCount"] = json!(remaining);
    }
    Ok(Reply::new(
        200,
        json!({
            "kind": format!("{}List", resource.kind()),
            "apiVersion": resource.api_version(),
            "metadata": metadata,
            "items": items,
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_refuse_garbage() {
        let c = Continue {
            rv: 42,
            after: "default/a:b".into(),
        };
        assert_eq!(Continue::decode(&c.encode()), Some(c));
        assert_eq!(Continue::decode("zz"), None);
        assert_eq!(Continue::decode("abc"), None);
        assert_eq!(Continue::decode(""), None);
    }
}
