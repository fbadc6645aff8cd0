//! The kubectl edits and deletions of the Lease, with the real `kubectl`.
//!
//! kubectl sends no bearer token to a plain-HTTP server, so the emulator knows
//! it by its User-Agent (`kubectl/v1.… (linux/amd64) kubernetes/…`); its
//! kubeconfig still carries the token `kubectl`, in case a version sends it,
//! and kube-apiserver knows it by that token (the user `kubectl`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::plan::KubectlOp;

/// The token in kubectl's kubeconfig.
pub const TOKEN: &str = "kubectl";

/// Whether a write history's client is kubectl.
pub fn is_kubectl(client: &str) -> bool {
    client == TOKEN || client.starts_with("kubectl/")
}

/// The arguments of `op` on the Lease `lease`, whose last write named
/// `holder`, or why it is skipped now.
pub fn args(
    op: KubectlOp,
    lease: &str,
    holder: Option<&str>,
    identities: &[String],
    lease_secs: u64,
) -> Result<Vec<String>, String> {
    let patch = |kind: &str, body: String| {
        vec![
            "patch".to_owned(),
            "lease".into(),
            lease.into(),
            format!("--type={kind}"),
            "-p".into(),
            body,
        ]
    };
    Ok(match op {
        KubectlOp::Annotate(n) => vec![
            "annotate".into(),
            "lease".into(),
            lease.into(),
            format!("chaos.example.com/poke={n}"),
            "--overwrite".into(),
        ],
        KubectlOp::Label(n) => vec![
            "label".into(),
            "lease".into(),
            lease.into(),
            format!("chaos={n}"),
            "--overwrite".into(),
        ],
        // With the duration written, never in a release's shape (an empty
        // holder with a duration of 1 s, or none): that one edit may evict a
        // live leader, by design (§4 "Foreign edits and twins").
        KubectlOp::EmptyHolder => patch(
            "merge",
            format!(r#"{{"spec":{{"holderIdentity":null,"leaseDurationSeconds":{lease_secs}}}}}"#),
        ),
        KubectlOp::ChangeHolder(slot) => {
            let name = slot.map_or("intruder", |s| identities[s].as_str());
            patch(
                "merge",
                format!(r#"{{"spec":{{"holderIdentity":"{name}"}}}}"#),
            )
        }
        KubectlOp::Shorten => {
            // Only while a holder is named, checked by the server (`test`):
            // a 1 s duration on an emptied holder would forge a release.
            let holder = holder.ok_or("no holder named (a 1 s duration would forge a release)")?;
            patch(
                "json",
                format!(
                    r#"[{{"op":"test","path":"/spec/holderIdentity","value":"{holder}"}},{{"op":"add","path":"/spec/leaseDurationSeconds","value":1}}]"#
                ),
            )
        }
        KubectlOp::Delete => vec![
            "delete".into(),
            "lease".into(),
            lease.into(),
            "--wait=false".into(),
        ],
    })
}

/// `kubectl <args>` against `kubeconfig` (with `setpriv` first when given).
pub fn command(kubeconfig: &Path, args: &[String], setpriv: Option<&PathBuf>) -> Command {
    let mut argv: Vec<String> = Vec::new();
    if let Some(setpriv) = setpriv {
        argv.extend([
            setpriv.display().to_string(),
            "--pdeathsig".into(),
            "KILL".into(),
            "--".into(),
        ]);
    }
    argv.extend([
        "kubectl".into(),
        "--kubeconfig".into(),
        kubeconfig.display().to_string(),
        "--cache-dir".into(),
        kubeconfig
            .with_extension("kubectl-cache")
            .display()
            .to_string(),
        "--request-timeout=5s".into(),
    ]);
    argv.extend(args.iter().cloned());
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    cmd
}
