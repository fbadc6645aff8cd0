//! Entry points for the fuzz targets (`fuzz/`) and the property tests; not part
//! of the API.

use crate::{Cli, Mode, one_line};

/// Reads `args` (without the program name) as the sidecar's command line and
/// goes as far as `main` goes before it needs a cluster: the parse of
/// [`Cli::try_parse_args`] (its error as the one line `main` prints), the
/// election's configuration of `serve` and `run` checked (an identity `fuzz`
/// when none is given, so the environment does not count), the manifests of
/// `fence-policy` (in the namespace `fuzz` when none is given, for the same
/// reason). `Ok` with what the sidecar would print or start with, `Err` with
/// the reason it refuses.
pub fn command_line(args: &[String]) -> Result<String, String> {
    let argv = std::iter::once("leader-elector".to_owned()).chain(args.iter().cloned());
    let cli = Cli::try_parse_args(argv).map_err(|e| one_line(&e.render().to_string()))?;
    match &cli.mode {
        Mode::FencePolicy(fence) => fence.to_yaml(cli.namespace.as_deref().unwrap_or("fuzz")),
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
