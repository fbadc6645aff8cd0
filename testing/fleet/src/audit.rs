//! Requests counted from the API server's audit log
//! (`test_kit::apiserver::ApiServer::audit_log`: Leases and LeaseCandidates,
//! level `Metadata`): who sent how many in a window, as the server saw them.

use std::collections::BTreeMap;
use std::path::Path;

/// The requests each user sent on objects of `namespace` received between
/// `from` and `to` (wall time, inclusive), by `verb`: each request once (a
/// watch has two events, its start and its end), keyed by
/// `(username, verb)`.
pub fn requests(
    log: &Path,
    namespace: &str,
    from: jiff::Timestamp,
    to: jiff::Timestamp,
) -> BTreeMap<(String, String), u64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut seen = std::collections::BTreeSet::new();
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let field = |path: &str| event.pointer(path).and_then(|v| v.as_str()).unwrap_or("");
        if field("/objectRef/namespace") != namespace {
            continue;
        }
        let Ok(at) = field("/requestReceivedTimestamp").parse::<jiff::Timestamp>() else {
            continue;
        };
        if at < from || at > to || !seen.insert(field("/auditID").to_owned()) {
            continue;
        }
        *counts
            .entry((
                field("/user/username").to_owned(),
                field("/verb").to_owned(),
            ))
            .or_insert(0) += 1;
    }
    counts
}
