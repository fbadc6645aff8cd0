//! The gateway's JSON messages the lock reads (etcd's `etcdserverpb` in
//! protobuf's JSON mapping): 64-bit integers as strings (numbers accepted too),
//! byte fields base64, default values left out, field names as in the `.proto`
//! (camel case accepted too).

use serde::{Deserialize, Deserializer};

/// An `int64` field: a JSON string or number; absent is 0.
fn int64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Int {
        Text(String),
        Number(i64),
    }
    match Option::<Int>::deserialize(d)? {
        None => Ok(0),
        Some(Int::Number(n)) => Ok(n),
        Some(Int::Text(s)) => s.parse().map_err(serde::de::Error::custom),
    }
}

/// `ResponseHeader`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Header {
    #[serde(default, deserialize_with = "int64")]
    pub(crate) revision: i64,
}

/// `mvccpb.KeyValue`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct KeyValue {
    #[serde(default, alias = "modRevision", deserialize_with = "int64")]
    pub(crate) mod_revision: i64,
    /// base64; absent when empty.
    #[serde(default)]
    pub(crate) value: Option<String>,
}

/// `RangeResponse`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RangeResponse {
    #[serde(default)]
    pub(crate) header: Header,
    #[serde(default)]
    pub(crate) kvs: Vec<KeyValue>,
}

/// `ResponseOp` (only the range a failed transaction reads is looked at).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ResponseOp {
    #[serde(default, alias = "responseRange")]
    pub(crate) response_range: Option<RangeResponse>,
}

/// `TxnResponse`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct TxnResponse {
    #[serde(default)]
    pub(crate) header: Header,
    #[serde(default)]
    pub(crate) succeeded: bool,
    #[serde(default)]
    pub(crate) responses: Vec<ResponseOp>,
}

/// `mvccpb.Event`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Event {
    /// `PUT` (the default, so usually absent) or `DELETE`.
    #[serde(default, rename = "type")]
    pub(crate) kind: Option<String>,
    #[serde(default)]
    pub(crate) kv: KeyValue,
}

/// `WatchResponse`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WatchResponse {
    #[serde(default)]
    pub(crate) canceled: bool,
    #[serde(default, alias = "compactRevision", deserialize_with = "int64")]
    pub(crate) compact_revision: i64,
    #[serde(default, alias = "cancelReason")]
    pub(crate) cancel_reason: Option<String>,
    #[serde(default)]
    pub(crate) events: Vec<Event>,
}

/// One line of the streamed watch: a result or an error.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct WatchLine {
    #[serde(default)]
    pub(crate) result: Option<WatchResponse>,
    #[serde(default)]
    pub(crate) error: Option<crate::client::GatewayError>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gateway_forms_parse() {
        let t: TxnResponse = serde_json::from_str(
            r#"{"header":{"cluster_id":"1","revision":"2","raft_term":"2"},"responses":[{"response_range":{"header":{"revision":"2"},"kvs":[{"key":"Zm9v","create_revision":"2","mod_revision":"2","version":"1","value":"YmFy"}],"count":"1"}}]}"#,
        )
        .unwrap();
        assert!(!t.succeeded);
        assert_eq!(t.header.revision, 2);
        let kv = &t.responses[0].response_range.as_ref().unwrap().kvs[0];
        assert_eq!(kv.mod_revision, 2);
        let w: WatchLine = serde_json::from_str(
            r#"{"result":{"header":{"raft_term":"2"},"canceled":true,"compact_revision":"3"}}"#,
        )
        .unwrap();
        let r = w.result.unwrap();
        assert!(r.canceled);
        assert_eq!(r.compact_revision, 3);
        let w: WatchLine = serde_json::from_str(
            r#"{"result":{"header":{"revision":"4"},"events":[{"type":"DELETE","kv":{"key":"Zm9v","modRevision":4}}]}}"#,
        )
        .unwrap();
        let e = &w.result.unwrap().events[0];
        assert_eq!((e.kind.as_deref(), e.kv.mod_revision), (Some("DELETE"), 4));
        assert!(serde_json::from_str::<Header>(r#"{"revision":"x"}"#).is_err());
    }
}
