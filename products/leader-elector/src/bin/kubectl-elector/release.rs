//! `kubectl elector release NAME`: empties the holder as the holder's own
//! release would ([`LockRecord::released`]: no holder,
//! `leaseDurationSeconds: 1`, times stamped now, transitions kept), by
//! compare-and-swap through the library's Lease lock, and says what the holder
//! does next.

use std::future::Future;
use std::io::Write as _;
use std::time::Duration;

use election_core::{Lock, LockError, LockRecord, Observation, WallTime};
use lock_lease::LeaseLock;

use crate::client::Target;
use crate::error::Error;

/// How long one lock call may take: the lock bounds none of its own (the
/// driver does, in an election), so a tool bounds its calls itself.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How many writes a release tries while others keep renewing the same holder
/// (each conflict is followed by a fresh read).
const ATTEMPTS: usize = 5;

/// Releases the Lease `name` in the target's namespace (or, `dry_run`, prints
/// what it would write).
pub async fn run(target: &Target, name: &str, dry_run: bool) -> Result<(), Error> {
    let ns = target.namespace.as_str();
    // The lock's own client: kube's retries off, as the lock wants.
    let client = lock_kube::lock_client(target.config.clone()).map_err(Error::Client)?;
    let lock = LeaseLock::builder(client, ns, name)
        .without_events()
        .build()
        .map_err(|e| Error::Name(e.to_string()))?;
    let failed = |what: &'static str, source: LockError| match source {
        LockError::NotFound => Error::NotFound {
            namespace: ns.to_owned(),
            name: name.to_owned(),
        },
        source => Error::Lock {
            what,
            namespace: ns.to_owned(),
            name: name.to_owned(),
            source,
        },
    };
    let mut seen = bounded(lock.get())
        .await
        .map_err(|e| failed("reading", e))?;
    let holder = seen.record.holder.to_string();
    if !seen.record.is_held() {
        return Err(Error::AlreadyReleased {
            namespace: ns.to_owned(),
            name: name.to_owned(),
        });
    }
    let mut stdout = std::io::stdout().lock();
    if dry_run {
        let spec = lock_lease::record::spec_from_record(&seen.record.released(), WallTime::now());
        let spec = serde_json::to_value(spec).map_err(std::io::Error::from)?;
        write!(
            stdout,
            "Would write to Lease {ns}/{name} (held by {holder:?}, resourceVersion {}), nothing written:\n{}",
            seen.version,
            election_ops::yaml::to_yaml(&serde_json::json!({ "spec": spec }))
        )?;
        stdout.flush()?;
        return Ok(());
    }
    let mut attempts = 0;
    let written = loop {
        attempts += 1;
        match bounded(lock.update(&seen.version, &seen.record.released())).await {
            Ok(written) => break written,
            Err(LockError::Conflict) if attempts < ATTEMPTS => {
                // Renewed (or changed) since the read: read again, and release
                // only what the same holder still holds.
                seen = bounded(lock.get())
                    .await
                    .map_err(|e| failed("reading", e))?;
                if *seen.record.holder != *holder {
                    return Err(Error::HolderChanged {
                        namespace: ns.to_owned(),
                        name: name.to_owned(),
                        before: holder,
                        now: seen.record.holder.to_string(),
                    });
                }
            }
            Err(e) => return Err(failed("releasing", e)),
        }
    };
    write!(stdout, "{}", report(ns, name, &holder, &written))?;
    stdout.flush()?;
    Ok(())
}

/// `call`, or an unknown outcome after [`CALL_TIMEOUT`].
async fn bounded<F>(call: F) -> Result<Observation, LockError>
where
    F: Future<Output = Result<Observation, LockError>>,
{
    tokio::time::timeout(CALL_TIMEOUT, call)
        .await
        .unwrap_or_else(|_| {
            Err(LockError::unknown(format!(
                "no answer within {} s",
                CALL_TIMEOUT.as_secs()
            )))
        })
}

/// What was written and what the previous holder does next.
pub fn report(ns: &str, name: &str, holder: &str, written: &Observation) -> String {
    let LockRecord { transitions, .. } = written.record;
    let next = transitions.saturating_add(1);
    format!(
        "Lease {ns}/{name} released: holder {holder:?} emptied, term {transitions} kept \
         (leaseTransitions {transitions}), leaseDurationSeconds 1, resourceVersion {version}.\n\
         What happens next:\n\
         - If {holder:?} is a kube-elector leader (this library), it stops leading as soon as it \
         sees its holder emptied: at once through its watch, else at its next read. Any candidate \
         may take the released Lease at once, as term {next}.\n\
         - If {holder:?} is a client-go leader, it does not stop: client-go's IsLeader compares \
         the holder it last read, so its next renewal (within its RetryPeriod, about 2 s) \
         conflicts, re-reads, finds the Lease free and takes it again as a new term \
         (leaseTransitions {next}), unless another candidate takes it first. Then the old \
         client-go leader keeps running its leader work beside the new leader until its \
         RenewDeadline (10 s by default, counted from the start of that renewal attempt) \
         runs out.\n",
        version = written.version,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_names_the_holder_the_kept_term_and_both_kinds_of_leader() {
        let record = LockRecord {
            holder: "".into(),
            lease_duration_secs: Some(1),
            transitions: 4,
            ..LockRecord::default()
        };
        let text = report("ns", "l", "pod-a", &Observation::new("17", record));
        assert!(text.starts_with(
            "Lease ns/l released: holder \"pod-a\" emptied, term 4 kept (leaseTransitions 4)"
        ));
        assert!(text.contains("kube-elector leader (this library), it stops leading"));
        assert!(text.contains("as term 5."));
        assert!(text.contains("client-go leader, it does not stop"));
        assert!(text.contains("(leaseTransitions 5)"));
    }
}
