//! Bytes as a stored JSON lock record (an etcd key's value, a ConfigMap's
//! annotation), read by `lock-json`: `decode_record`, `record_or_malformed`,
//! and `parse_time` on the bytes as text.
//!
//! Invariants: no panic; `record_or_malformed` is the decoded record, or the
//! malformed holder with no duration when decoding fails; a decoded record,
//! encoded in either form and decoded again, is the same record except for
//! what the form keeps (whole seconds, a duration at least 1 s, no priority
//! fields in client-go's form); a parsed time has nanoseconds below a second
//! and its formatted form parses back to it, truncated to the second.
#![no_main]

use election_core::{Handover, LockRecord, Stamp, WallTime};
use libfuzzer_sys::fuzz_target;
use lock_json::{
    Encoding, MALFORMED_HOLDER, decode_record, encode_record, format_time, parse_time,
    record_or_malformed,
};

fn seconds(s: Stamp) -> Stamp {
    match s {
        Stamp::At(t) => Stamp::At(WallTime::new(t.unix_secs, 0)),
        other => other,
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Stamp::At(t) = parse_time(text) {
            assert!(t.nanos < 1_000_000_000, "{text:?} -> {t:?}");
            assert_eq!(
                parse_time(&format_time(t)),
                seconds(Stamp::At(t)),
                "{text:?} -> {}",
                format_time(t)
            );
        }
    }
    let lenient = record_or_malformed("fuzz", data);
    let Ok(record) = decode_record(data) else {
        assert_eq!(&*lenient.holder, MALFORMED_HOLDER);
        assert_eq!(lenient.lease_duration_secs, None);
        return;
    };
    assert_eq!(lenient, record);
    let now = WallTime::new(1_700_000_000, 0);
    let kept = LockRecord {
        lease_duration_secs: record.lease_duration_secs.map(|d| d.max(1)),
        acquire_time: seconds(record.acquire_time),
        renew_time: seconds(record.renew_time),
        ..record.clone()
    };
    let json = encode_record(&record, now, Encoding::WithPriority);
    let back = decode_record(json.as_bytes()).expect("what we write reads back");
    assert_eq!(back, kept, "{json}");
    let json = encode_record(&record, now, Encoding::ClientGo);
    let back = decode_record(json.as_bytes()).expect("what we write reads back");
    let client_go = LockRecord {
        priority: None,
        handover: kept
            .handover
            .clone()
            .filter(|h: &Handover| h.priority.is_none()),
        ..kept
    };
    assert_eq!(back, client_go, "{json}");
});
