//! The lock record as the etcd key's value: client-go's `LeaderElectionRecord`
//! as JSON, followed by this library's priority fields (the key holds nothing
//! else), written and read by [`lock_json`], the codec the ConfigMap lock shares.
//!
//! ```
//! use election_core::{LockRecord, Stamp, WallTime};
//! use lock_etcd::record::{decode_record, encode_record};
//!
//! let record = LockRecord {
//!     holder: "node-a".into(),
//!     lease_duration_secs: Some(15),
//!     renew_time: Stamp::Now,
//!     priority: Some(5),
//!     ..LockRecord::default()
//! };
//! let json = encode_record(&record, WallTime::new(1_700_000_000, 0));
//! assert_eq!(
//!     json,
//!     r#"{"holderIdentity":"node-a","leaseDurationSeconds":15,"acquireTime":null,"renewTime":"2023-11-14T22:13:20Z","leaderTransitions":0,"kube-elector.dev/priority":5}"#
//! );
//! assert_eq!(decode_record(json.as_bytes()).unwrap().priority, Some(5));
//! ```

use election_core::{LockRecord, WallTime};
pub use lock_json::{
    HANDOVER_PRIORITY, HANDOVER_TO, MALFORMED_HOLDER, PRIORITY, RecordError, decode_record,
    format_time, parse_time, record_or_malformed,
};

/// The JSON stored for `record` ([`lock_json::Encoding::WithPriority`]), with
/// `Stamp::Now` stamped `now`.
pub fn encode_record(record: &LockRecord, now: WallTime) -> String {
    lock_json::encode_record(record, now, lock_json::Encoding::WithPriority)
}
