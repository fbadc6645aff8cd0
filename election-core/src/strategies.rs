//! [proptest](mod@proptest) strategies for lock records (feature `proptest`): for a lock
//! backend's property tests, such as "every record written reads back as
//! written, up to what the encoding keeps".
//!
//! ```
//! use election_core::strategies::lock_record;
//! use proptest::prelude::*;
//!
//! proptest!(|(record in lock_record())| {
//!     // Your backend's encode, then decode, compared with `record`.
//!     let copy = record.clone();
//!     prop_assert_eq!(copy, record);
//! });
//! ```

use proptest::prelude::*;
use std::string::String;

use crate::{Handover, LockRecord, Stamp, WallTime};

/// Go's years 1 to 9999, in seconds since the Unix epoch: where RFC 3339 is
/// defined, and what an API server stores.
pub const GO_SECS: core::ops::RangeInclusive<i64> = -62_135_596_800..=253_402_300_799;

/// A wall time within Go's years ([`GO_SECS`]), with any nanoseconds.
pub fn wall_time() -> impl Strategy<Value = WallTime> {
    (GO_SECS, 0u32..1_000_000_000).prop_map(|(s, n)| WallTime::new(s, n))
}

/// A stamp: unset, the backend's own clock, or a [`wall_time`].
pub fn stamp() -> impl Strategy<Value = Stamp> {
    prop_oneof![
        Just(Stamp::Unset),
        Just(Stamp::Now),
        wall_time().prop_map(Stamp::At),
    ]
}

/// Any record: a holder of up to 12 characters of any kind (the empty one
/// too), any duration (negative, zero and huge ones too), [`stamp`]s, any
/// transition count, and a priority, a hand-over and a strategy or none.
pub fn lock_record() -> impl Strategy<Value = LockRecord> {
    (
        (".{0,12}", prop::option::of(any::<i64>()), stamp(), stamp()),
        (
            any::<u32>(),
            prop::option::of(any::<i64>()),
            prop::option::of(("[a-z]{1,8}", prop::option::of(any::<i64>()))),
            prop::option::of("[A-Za-z]{1,12}"),
        ),
    )
        .prop_map(
            |((holder, duration, acquire, renew), (transitions, priority, handover, strategy))| {
                LockRecord {
                    holder: holder.into(),
                    lease_duration_secs: duration,
                    acquire_time: acquire,
                    renew_time: renew,
                    transitions,
                    priority,
                    handover: handover.map(|(to, priority): (String, _)| Handover {
                        to: to.into(),
                        priority,
                    }),
                    strategy: strategy.map(|s: String| s.into()),
                }
            },
        )
}
