//! `kubectl elector`: a kubectl plugin that shows the leader elections of a
//! cluster (every `coordination.k8s.io/v1` Lease), who holds each, since when,
//! which Pod that is, the candidates of a coordinated election and the fence
//! that guards it, and that releases a Lease on its holder's behalf.
//!
//! ```text
//! kubectl elector get [NAME] [-n NS | -A] [-o wide|json|yaml] [--all-leases]
//! kubectl elector describe NAME [-n NS]
//! kubectl elector release NAME [-n NS] [--dry-run]
//! ```
//!
//! Install: put the `kubectl-elector` binary (`cargo build --release -p
//! leader-elector` builds it beside the sidecar, in `target/release/`) in a
//! directory on `PATH`; kubectl then runs it as `kubectl elector`, and
//! `kubectl plugin list` shows it. The cluster is the one kubectl would use:
//! `--kubeconfig PATH`, else `KUBECONFIG`, else `~/.kube/config`, with
//! `--context NAME`; the namespace is `-n`, else the context's, else
//! `default`. kubectl hands a plugin every argument after its name, so the
//! flags go after `elector` (`kubectl elector get -A`, not `kubectl -A elector
//! get`).
//!
//! - `get` lists one row per election: holder, term (`leaseTransitions`), the
//!   age of the last renewal against the lease duration (by this machine's
//!   clock), `held`, `expired` or `released`, the holder's Pod and its phase,
//!   and the fence (the ValidatingAdmissionPolicyBinding whose parameter is the
//!   Lease, as `leader-elector fence-policy` writes it). `-o wide` adds the
//!   LeaseCandidates with their versions, the coordinated strategy, the
//!   preferred holder and the age of the acquisition; `-o json` and `-o yaml`
//!   print every field. Node heartbeats (`kube-node-lease`) and the API
//!   servers' identity Leases are left out unless `--all-leases` is given.
//! - `describe` prints the same as `Key: value` lines, with the fence's policy
//!   and the Lease's last 20 Events (`<identity> became leader`, …).
//! - `release` empties the holder as a leader's own release does (the record of
//!   `LockRecord::released`, by compare-and-swap) and says what the holder
//!   does next: a kube-elector leader stops at once, a client-go leader takes
//!   the Lease back at its next renewal unless another candidate is faster.
//!
//! Errors are printed as `error: …` with exit status 1; a Pod, candidate or
//! fence the caller may not read is shown as `?`, said once on stderr.

mod cli;
mod client;
mod describe;
mod election;
mod error;
mod format;
mod get;
mod release;
mod table;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::error::Error;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), Error> {
    if cli.all_namespaces && !matches!(cli.command, Command::Get { .. }) {
        return Err(Error::Usage(
            "-A/--all-namespaces applies to `get` only".to_owned(),
        ));
    }
    let target = client::Target::load(&cli).await?;
    match &cli.command {
        Command::Get {
            name,
            output,
            all_leases,
        } => {
            get::run(
                &target,
                cli.all_namespaces,
                name.as_deref(),
                *output,
                *all_leases,
            )
            .await
        }
        Command::Describe { name } => describe::run(&target, name).await,
        Command::Release { name, dry_run } => release::run(&target, name, *dry_run).await,
    }
}
