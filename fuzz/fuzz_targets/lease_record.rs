//! Bytes as a JSON `coordination.k8s.io/v1` Lease (what a GET or a watch of
//! the API server answers), read by the Lease lock's codec; a Lease it reads
//! is written back by the codec and read again.
//!
//! Invariants: no panic; the record written for a decoded record reads back
//! as that record (the holder, the times exactly, the transitions and the
//! priority fields), except that a duration below 1 s is written as 1 s; the
//! Lease written serialises to JSON, and (for times in Go's years 1 to 9999,
//! which are all an API server stores) that JSON reads back as the same
//! record, its times at the microsecond a `MicroTime` keeps.
#![no_main]

use election_core::{LockRecord, Stamp, WallTime};
use k8s_openapi::api::coordination::v1::Lease;
use libfuzzer_sys::fuzz_target;
use lock_lease::record::{record_from_lease, spec_from_record, write_record};

/// Go's `time.Time` marshals years 1 to 9999 only.
const GO_SECS: std::ops::RangeInclusive<i64> = -62_135_596_800..=253_402_300_799;

fn micros(s: Stamp) -> Stamp {
    match s {
        Stamp::At(t) => Stamp::At(WallTime::new(t.unix_secs, t.nanos / 1_000 * 1_000)),
        other => other,
    }
}

fn in_go_range(s: Stamp) -> bool {
    match s {
        Stamp::At(t) => GO_SECS.contains(&t.unix_secs),
        _ => true,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(lease) = serde_json::from_slice::<Lease>(data) else {
        return;
    };
    let record = record_from_lease(&lease);
    let now = WallTime::new(1_700_000_000, 123_456_789);

    // What the codec writes for the record read.
    let expected = LockRecord {
        lease_duration_secs: record.lease_duration_secs.map(|d| d.max(1)),
        ..record.clone()
    };
    let mut written = lease.clone();
    write_record(&mut written, &record, now);
    assert_eq!(
        written.spec,
        Some(spec_from_record(&record, now)),
        "write_record writes spec_from_record"
    );
    let back = record_from_lease(&written);
    assert_eq!(back, expected, "the written record reads back");

    // Through JSON, as the API server would store it.
    let json = serde_json::to_vec(&written).expect("a written Lease serialises");
    if in_go_range(record.acquire_time) && in_go_range(record.renew_time) {
        let stored: Lease = serde_json::from_slice(&json).expect("a written Lease parses");
        let read = record_from_lease(&stored);
        let expected = LockRecord {
            acquire_time: micros(expected.acquire_time),
            renew_time: micros(expected.renew_time),
            ..expected
        };
        assert_eq!(read, expected, "the stored Lease reads back");
    }
});
