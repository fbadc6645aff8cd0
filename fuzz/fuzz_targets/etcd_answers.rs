//! Bytes as what etcd's JSON gateway answers the etcd lock: an error answer
//! (`classify_answer`), a range answer, a transaction answer, a watch stream
//! cut into chunks anywhere, a base64 byte field, a key's value (the record).
//! The first byte picks the decoder (and a status code, a chunk size).
//!
//! Invariants: no panic; a read's failure never has an unknown outcome (only a
//! write's may); every version handed to the elector is a positive revision;
//! a watch stream yields an error only as its last item, exactly when it ends,
//! and the same items however its bytes are cut into chunks; base64 decodes
//! only its canonical form, and what the lock encodes decodes to the bytes; a
//! record decoded round-trips through the lock's encoding.
#![no_main]

use std::sync::OnceLock;

use election_core::{LockRecord, Observation, Stamp, WallTime, WatchEvent};
use libfuzzer_sys::fuzz_target;
use lock_etcd::EtcdLock;
use lock_etcd::fuzzing::{Txn, b64, error_answer, range_answer, txn_answer, unb64, watch_stream};
use lock_etcd::record::{decode_record, encode_record};

fn lock() -> &'static EtcdLock {
    static LOCK: OnceLock<EtcdLock> = OnceLock::new();
    LOCK.get_or_init(|| {
        EtcdLock::builder("http://127.0.0.1:2379", "/elections/fuzz")
            .build()
            .expect("a valid endpoint and key")
    })
}

fn revision(o: &Observation) -> i64 {
    o.version.as_str().parse().expect("a decimal revision")
}

fn seconds(s: Stamp) -> Stamp {
    match s {
        Stamp::At(t) => Stamp::At(WallTime::new(t.unix_secs, 0)),
        other => other,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    match pick % 6 {
        0 => {
            let status =
                [200u16, 400, 401, 403, 404, 429, 500, 503, 504, 502][usize::from(pick / 6) % 10];
            let write = pick & 0x80 != 0;
            let e = error_answer(write, status, body);
            if !write {
                assert!(!e.outcome_unknown(), "a read's failure: {e:?}");
            }
        }
        1 => {
            if let Ok(o) = range_answer(lock(), body) {
                assert!(revision(&o) > 0);
            }
        }
        2 => match txn_answer(lock(), body) {
            Ok(Txn::Committed(rev)) => assert!(rev > 0),
            Ok(Txn::Failed(Some(o))) => assert!(revision(&o) > 0),
            Ok(Txn::Failed(None)) | Err(_) => {}
        },
        3 => {
            let (whole, ended) = watch_stream(lock(), [body]);
            let errors = whole.iter().filter(|i| i.is_err()).count();
            assert_eq!(errors, usize::from(ended), "{whole:?}");
            if ended {
                assert!(whole.last().is_some_and(Result::is_err));
            }
            for item in &whole {
                match item {
                    Ok(WatchEvent::Changed(o)) => assert!(revision(o) > 0),
                    Ok(WatchEvent::Deleted(Some(v))) => {
                        assert!(v.as_str().parse::<i64>().is_ok_and(|r| r > 0));
                    }
                    _ => {}
                }
            }
            let size = usize::from(pick / 6) + 1;
            let (cut, cut_ended) = watch_stream(lock(), body.chunks(size));
            assert_eq!((cut, cut_ended), (whole, ended), "chunks of {size}");
        }
        4 => {
            let text = String::from_utf8_lossy(body);
            if let Ok(bytes) = unb64(&text) {
                assert_eq!(b64(&bytes), text, "only the canonical form decodes");
            }
            assert_eq!(unb64(&b64(body)).as_deref(), Ok(body));
        }
        _ => {
            let Ok(record) = decode_record(body) else {
                return;
            };
            let json = encode_record(&record, WallTime::new(1_700_000_000, 0));
            let back = decode_record(json.as_bytes()).expect("what the lock writes reads back");
            let kept = LockRecord {
                lease_duration_secs: record.lease_duration_secs.map(|d| d.max(1)),
                acquire_time: seconds(record.acquire_time),
                renew_time: seconds(record.renew_time),
                ..record
            };
            assert_eq!(back, kept, "{json}");
        }
    }
});
