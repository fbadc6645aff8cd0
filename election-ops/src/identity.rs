//! A default identity that two processes never share by accident (docs/faults.md N1).
//!
//! The identity names this candidate in the lock record (`holderIdentity`). Two live
//! processes with one identity both believe they hold the lock, so the default
//! carries a random suffix: `<POD_NAME or hostname>-<8 hex digits>`. Set
//! `ELECTION_IDENTITY` to choose it exactly (it is then used as given, after
//! validation); that is the documented override, e.g. for a stable identity across
//! restarts when the process is the only one with that name.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

/// The environment variable that sets the identity exactly.
pub const IDENTITY_ENV: &str = "ELECTION_IDENTITY";
/// The environment variable Kubernetes' downward API usually fills with the pod name.
pub const POD_NAME_ENV: &str = "POD_NAME";
/// The longest identity accepted (a Lease's `holderIdentity` has no limit of its
/// own, but label-like lengths keep records and logs readable).
pub const MAX_IDENTITY_LEN: usize = 253;

/// Why an identity was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IdentityError {
    /// The identity is empty (an empty holder means "released" in the lock record).
    #[error("identity is empty (an empty holder means the lock is released)")]
    Empty,
    /// The identity is longer than [`MAX_IDENTITY_LEN`] bytes.
    #[error("identity is {0} bytes long, more than {MAX_IDENTITY_LEN}")]
    TooLong(usize),
    /// The identity has whitespace or control characters, which logs and
    /// `kubectl` output would mangle.
    #[error("identity {0:?} contains whitespace or control characters")]
    BadCharacter(String),
}

/// Checks that `identity` can name a holder: not empty, at most
/// [`MAX_IDENTITY_LEN`] bytes, no whitespace or control characters.
pub fn validate(identity: &str) -> Result<(), IdentityError> {
    if identity.is_empty() {
        return Err(IdentityError::Empty);
    }
    if identity.len() > MAX_IDENTITY_LEN {
        return Err(IdentityError::TooLong(identity.len()));
    }
    if identity
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(IdentityError::BadCharacter(identity.to_owned()));
    }
    Ok(())
}

/// Eight hex digits from `std`'s per-process random hash keys, mixed with the
/// time, the process id and a counter: two processes (or two calls) differ.
pub fn random_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    if let Ok(d) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(d.as_nanos());
    }
    format!("{:08x}", h.finish() as u32)
}

/// The identity from the environment: `ELECTION_IDENTITY` as given if set, else
/// `POD_NAME` or the hostname, plus `-` and a [`random_suffix`].
pub fn from_env() -> Result<Arc<str>, IdentityError> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    identity_from(env(IDENTITY_ENV), env(POD_NAME_ENV), hostname())
}

/// The rule of [`from_env`] on given values: `explicit` wins as given; else
/// `pod_name`, else `hostname`, else `"candidate"`, plus a random suffix. The base
/// is cut so that the result fits [`MAX_IDENTITY_LEN`].
pub fn identity_from(
    explicit: Option<String>,
    pod_name: Option<String>,
    hostname: Option<String>,
) -> Result<Arc<str>, IdentityError> {
    if let Some(id) = explicit {
        validate(&id)?;
        return Ok(id.into());
    }
    let base = pod_name
        .or(hostname)
        .map(|b| b.trim().to_owned())
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "candidate".to_owned());
    let mut base = base;
    let room = MAX_IDENTITY_LEN - 9;
    if base.len() > room {
        let mut cut = room;
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        base.truncate(cut);
    }
    let id = format!("{base}-{}", random_suffix());
    validate(&id)?;
    Ok(id.into())
}

/// The hostname: `HOSTNAME`, else `/proc/sys/kernel/hostname`, else `/etc/hostname`.
pub fn hostname() -> Option<String> {
    if let Some(h) = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.trim().is_empty())
    {
        return Some(h);
    }
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .map(|s| s.trim().to_owned())
        .find(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n1_default_identities_differ_between_calls() {
        let a = identity_from(None, Some("web-0".into()), None).unwrap();
        let b = identity_from(None, Some("web-0".into()), None).unwrap();
        assert!(a.starts_with("web-0-"), "{a}");
        assert_eq!(a.len(), "web-0-".len() + 8);
        assert_ne!(a, b, "two candidates with one pod name must differ");
    }

    #[test]
    fn pod_name_wins_over_hostname_and_explicit_wins_over_both() {
        let id = identity_from(None, Some("pod".into()), Some("host".into())).unwrap();
        assert!(id.starts_with("pod-"), "{id}");
        let id = identity_from(None, None, Some("host".into())).unwrap();
        assert!(id.starts_with("host-"), "{id}");
        let id = identity_from(Some("exact".into()), Some("pod".into()), None).unwrap();
        assert_eq!(&*id, "exact");
        let id = identity_from(None, None, None).unwrap();
        assert!(id.starts_with("candidate-"), "{id}");
    }

    #[test]
    fn bad_identities_are_typed_errors() {
        assert_eq!(
            identity_from(Some(String::new()), None, None),
            Err(IdentityError::Empty)
        );
        assert!(matches!(
            identity_from(Some("a b".into()), None, None),
            Err(IdentityError::BadCharacter(_))
        ));
        assert_eq!(validate(&"x".repeat(300)), Err(IdentityError::TooLong(300)));
        // A long base is cut to fit, at a character boundary.
        let id = identity_from(None, Some("é".repeat(200)), None).unwrap();
        assert!(id.len() <= MAX_IDENTITY_LEN);
    }
}
