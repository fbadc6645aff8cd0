//! Validation of the names a lock is given, so that a typo is a typed error at
//! construction rather than a 404 or 422 at every attempt.

/// A lock's namespace or name that Kubernetes would not accept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The namespace is not a DNS-1123 label (lowercase letters, digits and `-`,
    /// starting and ending with a letter or digit, at most 63 characters).
    #[error(
        "invalid namespace {0:?}: must be a DNS-1123 label (a-z, 0-9, '-', at most 63 characters)"
    )]
    Namespace(String),
    /// The object name is not a DNS-1123 subdomain (lowercase letters, digits, `-`
    /// and `.`, each dot-separated part starting and ending with a letter or
    /// digit, at most 253 characters).
    #[error(
        "invalid object name {0:?}: must be a DNS-1123 subdomain (a-z, 0-9, '-', '.', at most 253 characters)"
    )]
    Name(String),
}

fn is_label(s: &str, max: usize) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= max
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Checks a namespace.
pub fn validate_namespace(ns: &str) -> Result<(), NameError> {
    if is_label(ns, 63) {
        Ok(())
    } else {
        Err(NameError::Namespace(ns.to_owned()))
    }
}

/// Checks an object name.
pub fn validate_name(name: &str) -> Result<(), NameError> {
    if name.len() <= 253 && name.split('.').all(|part| is_label(part, 253)) {
        Ok(())
    } else {
        Err(NameError::Name(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_dns_1123() {
        assert!(validate_namespace("kube-system").is_ok());
        assert!(validate_namespace("Kube").is_err());
        assert!(validate_namespace("").is_err());
        assert!(validate_namespace("a.b").is_err());
        assert!(validate_name("my-controller.example.com").is_ok());
        assert!(validate_name("-x").is_err());
        assert!(validate_name("a..b").is_err());
        assert!(validate_name(&"a".repeat(254)).is_err());
    }
}
