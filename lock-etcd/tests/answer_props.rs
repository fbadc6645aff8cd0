//! Property tests of how the etcd lock reads etcd's JSON gateway
//! (`lock_etcd::fuzzing`, the lock's own decoding steps), the stable
//! counterpart of the fuzz target `etcd_answers` (fuzz/README.md), with no
//! etcd: arbitrary bytes as an error answer, a range answer, a transaction
//! answer or a watch stream never panic and give typed `LockError`s; a read's
//! failure never has an unknown outcome; gateway errors are classified by
//! their gRPC code; a key's revision and value are checked (a revision that
//! is not positive and a value that is not base64 are not etcd's answer, a
//! value that is not a record is held by the malformed holder); a watch
//! stream yields an error only last, when it ends, however it is cut.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use election_core::{LockError, WatchEvent};
use lock_etcd::EtcdLock;
use lock_etcd::fuzzing::{Txn, b64, error_answer, range_answer, txn_answer, unb64, watch_stream};
use lock_etcd::record::{MALFORMED_HOLDER, record_or_malformed};
use proptest::prelude::*;
use serde_json::json;

fn lock() -> EtcdLock {
    EtcdLock::builder("http://127.0.0.1:2379", "/elections/props")
        .build()
        .unwrap()
}

/// A key's value: a record, JSON that is not one, or any bytes.
fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(br#"{"holderIdentity":"a","leaseDurationSeconds":15}"#.to_vec()),
        Just(b"[]".to_vec()),
        prop::collection::vec(any::<u8>(), 0..64),
    ]
}

/// A `mod_revision` as the gateway writes it (a string) or as JSON allows.
fn revision_json(rev: i64, as_string: bool) -> serde_json::Value {
    if as_string {
        json!(rev.to_string())
    } else {
        json!(rev)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any status and body: a typed error; a read's is never of unknown outcome.
    #[test]
    fn any_error_answer_is_classified(write in any::<bool>(), status in 100u16..600, body in prop::collection::vec(any::<u8>(), 0..128)) {
        let e = error_answer(write, status, &body);
        if !write {
            prop_assert!(!e.outcome_unknown(), "{e:?}");
        }
    }

    /// The gateway's error bodies are classified by their gRPC code, whatever
    /// the HTTP status and the kind of call.
    #[test]
    fn gateway_errors_follow_their_grpc_code(write in any::<bool>(), status in 400u16..600, code in 0i64..20, message in "[a-z ]{0,20}") {
        let body = json!({"error": message, "code": code, "message": message}).to_string();
        let e = error_answer(write, status, body.as_bytes());
        match code {
            3 | 5 | 9 | 11 | 12 => prop_assert!(matches!(e, LockError::Invalid { .. }), "{e:?}"),
            7 | 16 => prop_assert!(matches!(e, LockError::Forbidden { .. }), "{e:?}"),
            8 | 10 => prop_assert!(matches!(e, LockError::Transient { .. }), "{e:?}"),
            _ if write && code != 14 => prop_assert!(e.outcome_unknown(), "{e:?}"),
            _ => {}
        }
    }

    /// Any bytes as a 2xx answer: an observation, or a typed error.
    #[test]
    fn any_range_or_txn_answer_gives_a_result(body in prop::collection::vec(any::<u8>(), 0..200)) {
        let lock = lock();
        if let Ok(o) = range_answer(&lock, &body) {
            prop_assert!(o.version.as_str().parse::<i64>().unwrap() > 0);
        }
        if let Ok(Txn::Committed(rev)) = txn_answer(&lock, &body) {
            prop_assert!(rev > 0);
        }
    }

    /// A key as the gateway answers it: its revision must be positive and its
    /// value base64; a value that is not a record reads as the malformed holder.
    #[test]
    fn a_keys_revision_and_value_are_checked(
        rev in prop_oneof![Just(0i64), Just(-1), Just(i64::MIN), 1i64..1_000_000, Just(i64::MAX)],
        as_string in any::<bool>(),
        value in value(),
        garbage in any::<bool>(),
    ) {
        let encoded = if garbage { "***".to_owned() } else { STANDARD.encode(&value) };
        let body = json!({
            "header": {"revision": "1"},
            "kvs": [{"key": "a2V5", "mod_revision": revision_json(rev, as_string), "value": encoded}],
        })
        .to_string();
        match range_answer(&lock(), body.as_bytes()) {
            Ok(o) => {
                prop_assert!(rev > 0 && !garbage);
                prop_assert_eq!(o.version.as_str(), rev.to_string());
                prop_assert_eq!(o.record, record_or_malformed("k", &value));
            }
            Err(LockError::Invalid { .. }) => prop_assert!(rev <= 0 || garbage),
            Err(e) => prop_assert!(false, "{e:?}"),
        }
        // The same key in a failed transaction's range.
        let body = json!({
            "header": {"revision": "9"},
            "succeeded": false,
            "responses": [{"response_range": {"kvs": [{"mod_revision": revision_json(rev, as_string), "value": encoded}]}}],
        })
        .to_string();
        match txn_answer(&lock(), body.as_bytes()) {
            Ok(Txn::Failed(Some(o))) => {
                prop_assert!(rev > 0 && !garbage);
                prop_assert_eq!(o.version.as_str(), rev.to_string());
            }
            Err(LockError::Invalid { .. }) => prop_assert!(rev <= 0 || garbage),
            other => prop_assert!(false, "{other:?}"),
        }
    }

    /// A succeeded transaction needs a positive revision, else its outcome is unknown.
    #[test]
    fn a_succeeded_transaction_needs_a_revision(rev in prop_oneof![Just(0i64), Just(-5), 1i64..1_000]) {
        let body = json!({"header": {"revision": rev.to_string()}, "succeeded": true}).to_string();
        match txn_answer(&lock(), body.as_bytes()) {
            Ok(Txn::Committed(r)) => prop_assert_eq!(r, rev),
            Err(e) => prop_assert!(rev <= 0 && e.outcome_unknown(), "{e:?}"),
            other => prop_assert!(false, "{other:?}"),
        }
    }

    /// A watch stream of any lines: an error only last, exactly when it
    /// ends; the same items however the bytes are cut.
    #[test]
    fn watch_streams_end_on_their_only_error_however_cut(
        lines in prop::collection::vec(prop_oneof![
            Just(r#"{"result":{"header":{"revision":"3"},"created":true}}"#.to_owned()),
            (1i64..100, value()).prop_map(|(r, v)| json!({"result": {"events": [{"kv": {"mod_revision": r.to_string(), "value": STANDARD.encode(v)}}]}}).to_string()),
            (-2i64..100).prop_map(|r| json!({"result": {"events": [{"type": "DELETE", "kv": {"mod_revision": r}}]}}).to_string()),
            (0i64..5).prop_map(|c| json!({"result": {"canceled": true, "compact_revision": c.to_string()}}).to_string()),
            Just(r#"{"error":{"grpc_code":14,"message":"etcdserver: no leader"}}"#.to_owned()),
            ".{0,20}",
        ], 0..8),
        cut in 1usize..40,
    ) {
        let bytes = lines.join("\n").into_bytes();
        let (items, ended) = watch_stream(&lock(), [bytes.as_slice()]);
        let errors = items.iter().filter(|i| i.is_err()).count();
        prop_assert_eq!(errors, usize::from(ended));
        prop_assert!(!ended || items.last().is_some_and(Result::is_err));
        for item in &items {
            if let Ok(WatchEvent::Changed(o)) = item {
                prop_assert!(o.version.as_str().parse::<i64>().unwrap() > 0);
            }
        }
        let (cut_items, cut_ended) = watch_stream(&lock(), bytes.chunks(cut));
        prop_assert_eq!((cut_items, cut_ended), (items, ended));
    }

    /// Byte fields: what the lock encodes decodes to the bytes, and only the
    /// canonical form decodes.
    #[test]
    fn base64_fields_round_trip(bytes in prop::collection::vec(any::<u8>(), 0..64), text in "[A-Za-z0-9+/=]{0,12}") {
        prop_assert_eq!(unb64(&b64(&bytes)), Ok(bytes));
        if let Ok(decoded) = unb64(&text) {
            prop_assert_eq!(b64(&decoded), text);
        }
    }
}

/// A value that is not a record is held by the malformed holder.
#[test]
fn a_value_that_is_not_a_record_is_held_by_the_malformed_holder() {
    let body =
        json!({"kvs": [{"mod_revision": "7", "value": STANDARD.encode("not json")}]}).to_string();
    let o = range_answer(&lock(), body.as_bytes()).unwrap();
    assert_eq!(o.version.as_str(), "7");
    assert_eq!(&*o.record.holder, MALFORMED_HOLDER);
}
