//! Entry points for the fuzz targets (`fuzz/`) and the property tests; not part
//! of the API.

use clap::Parser as _;

use crate::{Cli, Mode, fence_policy, one_line};

/// Reads `args` (without the program name) as the sidecar's command line and
/// goes as far as `main` goes before it needs a cluster: clap's parse (its
/// error as the one line `main` prints), the election's configuration of
/// `serve` and `run` checked (an identity `fuzz` when none is given, so the
/// environment does not count), the manifests of `fence-policy`. `Ok` with what
/// the sidecar would print or start with, `Err` with the reason it refuses.
pub fn command_line(args: &[String]) -> Result<String, String> {
    let argv = std::iter::once("leader-elector".to_owned()).chain(args.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(|e| one_line(&e.render().to_string()))?;
    match &cli.mode {
        Mode::FencePolicy {
            lease,
            protect,
            writer,
            warn,
        } => fence_policy(cli.namespace.as_deref(), lease, protect, *writer, *warn),
        Mode::ExecChild { parent, command } => Ok(format!("exec {command:?} under {parent}")),
        Mode::Serve { .. } | Mode::Run { .. } => {
            let explicit = Some(cli.identity.clone().unwrap_or_else(|| "fuzz".to_owned()));
            let id = election_ops::identity::identity_from(explicit, None, None)
                .map_err(|e| e.to_string())?;
            let config = cli.election_config(id).map_err(|e| e.to_string())?;
            Ok(format!("{config:?}"))
        }
    }
}
