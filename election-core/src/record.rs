//! The lock record: what a lock stores, as the core reads and writes it.
//!
//! One type serves both directions. A backend turns whatever it stores (a Lease's
//! spec, a ConfigMap annotation, a row) into a [`LockRecord`] plus the lock's
//! opaque [`Version`]; the core answers with records to write, whose timestamps
//! say whether the backend stamps them with its own clock ([`Stamp::Now`]) or
//! keeps a value ([`Stamp::At`]).
//!
//! Reading is tolerant: a foreign record may lack any field. Backends map an
//! absent, null or empty holder to `""`, an absent `leaseTransitions` to 0, and an
//! absent duration to `None` (the configured duration then applies).

use alloc::sync::Arc;
use core::cmp::Ordering;
use core::fmt;
use core::time::Duration;

use crate::time::WallTime;

/// The lock's version (Kubernetes' `resourceVersion`): every write is a
/// compare-and-swap on it, and a new version is how change is detected.
///
/// Opaque to the core except for one thing: two versions that both look like
/// decimal integers are ordered as numbers ([`Version::order`]). A lock whose
/// versions are decimal must make them grow with every write, deletions and
/// re-creations included (etcd revisions and Kubernetes resourceVersions do, and
/// so do this workspace's locks): the elector then ignores a watch event older than
/// the version it already saw (a replayed or resumed watch), and breaks ties between
/// terms whose transition counters saturated. A lock with other versions (not
/// decimal) is never ordered: any version that differs counts as new.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Version(Arc<str>);

impl Version {
    /// Wraps a backend's version string.
    pub fn new(v: impl Into<Arc<str>>) -> Self {
        Version(v.into())
    }

    /// The version as the backend gave it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// How `self` orders against `other` when both are unsigned decimal integers
    /// (compared as numbers, leading zeros ignored); `None` when either is not, since
    /// such versions carry no order.
    pub fn order(&self, other: &Version) -> Option<Ordering> {
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
        let (a, b) = (self.as_str(), other.as_str());
        if !(digits(a) && digits(b)) {
            return None;
        }
        let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
        Some(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
    }

    /// Whether `self` is a later version than `other`: by [`Version::order`] where
    /// both are decimal, else whenever they differ.
    pub fn is_newer_than(&self, other: &Version) -> bool {
        self.order(other)
            .map_or(self != other, |o| o == Ordering::Greater)
    }

    /// A total order consistent with `Eq`: [`Version::order`] where both are
    /// decimal (ties, such as `"010"` and `"10"`, broken bytewise), bytewise
    /// otherwise.
    pub fn cmp_numeric(&self, other: &Version) -> Ordering {
        self.order(other)
            .unwrap_or(Ordering::Equal)
            .then_with(|| self.as_str().cmp(other.as_str()))
    }
}

impl From<&str> for Version {
    fn from(s: &str) -> Self {
        Version::new(s)
    }
}

impl From<alloc::string::String> for Version {
    fn from(s: alloc::string::String) -> Self {
        Version::new(s)
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A timestamp field of a record: as read, or what a write asks the backend to store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Stamp {
    /// Absent, null, or unparseable.
    #[default]
    Unset,
    /// Read as, or to be kept as, this wall time.
    At(WallTime),
    /// In a write: the backend stamps the time of the write from its own clock.
    Now,
}

/// A higher-priority candidate's request that the holder hand the lock over.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Handover {
    /// The identity asking to lead.
    pub to: Arc<str>,
    /// The asker's priority, so that a still higher candidate can override the request.
    /// `None` for a request from elsewhere (Kubernetes' `preferredHolder`), always honoured.
    pub priority: Option<i64>,
}

/// The content of a lock, in client-go's terms (`LeaderElectionRecord`), plus the
/// fields of this library's priority handover.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct LockRecord {
    /// The holder's identity; `""` when nobody holds it (absent and null read as `""`).
    pub holder: Arc<str>,
    /// `leaseDurationSeconds` as read (any value: absent, zero, negative, huge), or
    /// as written (always at least 1).
    pub lease_duration_secs: Option<i64>,
    /// `acquireTime`.
    pub acquire_time: Stamp,
    /// `renewTime`.
    pub renew_time: Stamp,
    /// `leaseTransitions` / `leaderTransitions`: how many times the holder changed.
    /// Saturates at [`MAX_TRANSITIONS`] (the API's `int32`).
    pub transitions: u32,
    /// The holder's priority, if it has one.
    pub priority: Option<i64>,
    /// A pending handover request, kept in the released record so that only the
    /// named candidate may take the lock for one lease duration.
    pub handover: Option<Handover>,
    /// Kubernetes' coordinated-election `strategy`, kept as read.
    pub strategy: Option<Arc<str>>,
}

/// The largest transition count a record can carry (Kubernetes stores an `int32`).
pub const MAX_TRANSITIONS: u32 = i32::MAX as u32;

/// The holder a lock backend reads a record it cannot decode as: nobody can have
/// this identity (it is not a valid Kubernetes name), so the elector times it
/// like any holder's and takes it over after a lease (docs/faults.md R6).
pub const MALFORMED_HOLDER: &str = "<malformed-record>";

impl LockRecord {
    /// Whether someone holds the lock (the holder is not empty).
    pub fn is_held(&self) -> bool {
        !self.holder.is_empty()
    }

    /// Whether the record has the shape of a holder's own release, which a
    /// follower may take at once: no holder, and a duration of 1 s (client-go's
    /// release and this library's) or none at all (kubert's `vacate`, which
    /// removes both; a record with every field missing). An emptied holder of any
    /// other shape (an operator's patch of `holderIdentity` leaves the duration as
    /// it was) is not a release: the previous holder may still believe it leads,
    /// so the elector times it like a held lease (docs/faults.md R2).
    pub fn is_released(&self) -> bool {
        !self.is_held() && matches!(self.lease_duration_secs, None | Some(1))
    }

    /// The record a holder's release writes over `self`: an empty holder,
    /// `leaseDurationSeconds: 1` (never 0, which the API rejects), acquire and
    /// renew times stamped by the backend at the write ([`Stamp::Now`]),
    /// transitions kept (the next holder counts one more), a pending handover
    /// kept so that only its target may take the lock for one lease duration,
    /// and the priority dropped (nobody holds it).
    ///
    /// It has the shape [`LockRecord::is_released`] recognises, so followers
    /// take it at once (docs/faults.md R2). The elector writes it when it
    /// releases; a tool that releases on a holder's behalf writes the same.
    ///
    /// ```
    /// use election_core::{LockRecord, Stamp};
    /// let held = LockRecord {
    ///     holder: "node-a".into(),
    ///     lease_duration_secs: Some(15),
    ///     transitions: 3,
    ///     priority: Some(7),
    ///     ..LockRecord::default()
    /// };
    /// let released = held.released();
    /// assert!(released.is_released());
    /// assert_eq!(released.transitions, 3);
    /// assert_eq!(released.lease_duration_secs, Some(1));
    /// assert_eq!(released.renew_time, Stamp::Now);
    /// assert_eq!(released.priority, None);
    /// ```
    #[must_use]
    pub fn released(&self) -> LockRecord {
        LockRecord {
            holder: "".into(),
            lease_duration_secs: Some(1),
            acquire_time: Stamp::Now,
            renew_time: Stamp::Now,
            priority: None,
            ..self.clone()
        }
    }

    /// The record's lease duration if it is usable (positive), else `None`.
    pub fn lease_duration(&self) -> Option<Duration> {
        match self.lease_duration_secs {
            Some(s) if s > 0 => Some(Duration::from_secs(s.unsigned_abs())),
            _ => None,
        }
    }
}

/// A record together with the version it was read at: what a read, a successful
/// write, or a watch yields.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Observation {
    /// The version the record was read at.
    pub version: Version,
    /// The record.
    pub record: LockRecord,
}

impl Observation {
    /// An observation of `record` at `version`.
    pub fn new(version: impl Into<Version>, record: LockRecord) -> Self {
        Observation {
            version: version.into(),
            record,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_as_numbers_when_both_are_digits() {
        let v = |s: &str| Version::new(s);
        assert_eq!(v("9").cmp_numeric(&v("10")), Ordering::Less);
        assert_eq!(v("010").order(&v("10")), Some(Ordering::Equal));
        // A total order consistent with Eq: "010" != "10", so they are not Equal.
        assert_eq!(v("010").cmp_numeric(&v("10")), Ordering::Less);
        assert_eq!(v("b").cmp_numeric(&v("a")), Ordering::Greater);
        assert_eq!(v("b").order(&v("a")), None);
        assert!(v("10").is_newer_than(&v("9")));
        assert!(!v("9").is_newer_than(&v("10")));
        assert!(!v("10").is_newer_than(&v("10")));
        assert!(
            v("a").is_newer_than(&v("b")),
            "unordered: any other version is new"
        );
    }

    #[test]
    fn unusable_durations_read_as_none() {
        let mut r = LockRecord::default();
        for bad in [None, Some(0), Some(-5)] {
            r.lease_duration_secs = bad;
            assert_eq!(r.lease_duration(), None);
        }
        r.lease_duration_secs = Some(10_000_000_000);
        assert_eq!(
            r.lease_duration(),
            Some(Duration::from_secs(10_000_000_000))
        );
    }
}
