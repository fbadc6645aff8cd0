//! Pure formatting: ages as kubectl prints them, a holder's Pod name, the
//! `RENEWED` cell.

/// A duration in milliseconds as kubectl prints an age (its `HumanDuration`):
/// `45s`, `3m20s`, `25m`, `5h10m`, `30h`, `3d4h`, `100d`, `3y20d`, `10y`. A
/// time up to 2 s in the future (clocks a little apart) reads `0s`; further
/// in the future, `<invalid>`.
pub fn age(millis: i64) -> String {
    // Go's `int(d.Seconds())`: truncated towards zero.
    let seconds = millis / 1000;
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if seconds < 0 {
        return "0s".to_owned();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 3 * 60 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    let days = hours / 24;
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{h}h")
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{days}d");
    }
    let years = days / 365;
    if hours < 24 * 365 * 8 {
        let d = days % 365;
        return if d == 0 {
            format!("{years}y")
        } else {
            format!("{years}y{d}d")
        };
    }
    format!("{years}y")
}

/// The `RENEWED` cell: the age of the last renewal against the lease duration,
/// `3s/15s`; `<unknown>` for a missing renewal time, `-` for a missing
/// duration.
pub fn renewed(age_millis: Option<i64>, lease_duration_secs: Option<i64>) -> String {
    let age = age_millis.map_or_else(|| "<unknown>".to_owned(), age);
    let lease = lease_duration_secs.map_or_else(|| "-".to_owned(), |s| format!("{s}s"));
    format!("{age}/{lease}")
}

/// The names the holder's Pod may have, in the order to try: the identity
/// itself (a Pod's name, as `deploy/` sets it), then the part before the first
/// `_` (client-go's and controller-runtime's `<hostname>_<uuid>`: a Pod's
/// hostname is its name). Only names Kubernetes accepts for a Pod.
pub fn pod_names(holder: &str) -> Vec<&str> {
    let mut names = Vec::new();
    if is_pod_name(holder) {
        names.push(holder);
    }
    if let Some((host, _)) = holder.split_once('_')
        && is_pod_name(host)
    {
        names.push(host);
    }
    names
}

/// A DNS-1123 subdomain: at most 253 characters of lower-case letters, digits,
/// `-` and `.`, starting and ending with a letter or digit.
fn is_pod_name(s: &str) -> bool {
    let edge = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !s.is_empty()
        && s.len() <= 253
        && s.starts_with(edge)
        && s.ends_with(edge)
        && s.chars().all(|c| edge(c) || c == '-' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        let s = |secs: i64| secs * 1000;
        assert_eq!(age(0), "0s");
        assert_eq!(age(999), "0s");
        assert_eq!(age(3_400), "3s");
        assert_eq!(age(s(119)), "119s");
        assert_eq!(age(s(120)), "2m");
        assert_eq!(age(s(200)), "3m20s");
        assert_eq!(age(s(600)), "10m");
        assert_eq!(age(s(179 * 60 + 59)), "179m");
        assert_eq!(age(s(3 * 3600)), "3h");
        assert_eq!(age(s(5 * 3600 + 10 * 60)), "5h10m");
        assert_eq!(age(s(30 * 3600)), "30h");
        assert_eq!(age(s(3 * 86400 + 4 * 3600)), "3d4h");
        assert_eq!(age(s(100 * 86400)), "100d");
        assert_eq!(age(s(3 * 365 * 86400 + 20 * 86400)), "3y20d");
        assert_eq!(age(s(10 * 365 * 86400)), "10y");
        // A clock a little ahead: now; further ahead: invalid.
        assert_eq!(age(-1_500), "0s");
        assert_eq!(age(-2_000), "<invalid>");
    }

    #[test]
    fn the_renewed_cell_shows_the_age_against_the_lease() {
        assert_eq!(renewed(Some(3_200), Some(15)), "3s/15s");
        assert_eq!(renewed(None, Some(15)), "<unknown>/15s");
        assert_eq!(renewed(Some(200_000), None), "3m20s/-");
    }

    #[test]
    fn a_holder_names_its_pod_or_its_hostname_before_the_uuid() {
        assert_eq!(pod_names("web-7d9f-abcde"), ["web-7d9f-abcde"]);
        assert_eq!(
            pod_names("web-7d9f-abcde_5f1c2e4a-1b2c-4d5e-8f90-123456789abc"),
            ["web-7d9f-abcde"]
        );
        // Not a Pod name at all.
        assert!(pod_names("Node_A").is_empty());
        assert!(pod_names("").is_empty());
        assert!(pod_names("_x").is_empty());
        assert!(pod_names("a b").is_empty());
        // Both may be names: the identity first.
        assert_eq!(pod_names("a.b"), ["a.b"]);
    }
}
