//! The command line: kubectl's global flags, then `get`, `describe` or `release`.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Shows the leader elections (Leases) of a cluster: holders, terms, Pods,
/// candidates, fences; releases a Lease on its holder's behalf.
#[derive(Debug, Parser)]
#[command(name = "kubectl-elector", bin_name = "kubectl elector", version)]
pub struct Cli {
    /// The kubeconfig file (else `KUBECONFIG`, else `~/.kube/config`).
    #[arg(long, global = true, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use (else its current context).
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,

    /// The namespace (else the context's, else `default`).
    #[arg(short = 'n', long, global = true, value_name = "NS")]
    pub namespace: Option<String>,

    /// Every namespace (`get` only).
    #[arg(short = 'A', long, global = true)]
    pub all_namespaces: bool,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Lists the elections: one row per Lease.
    Get {
        /// Only this Lease.
        name: Option<String>,
        /// `wide` adds candidates, strategy, preferred holder and acquisition;
        /// `json` and `yaml` print every field.
        #[arg(short = 'o', long, value_enum, value_name = "FORMAT")]
        output: Option<Output>,
        /// Also the node heartbeats (`kube-node-lease`) and the API servers'
        /// identity Leases, which are not elections.
        #[arg(long)]
        all_leases: bool,
    },
    /// Everything known of one election, with its Events.
    Describe {
        /// The Lease.
        name: String,
    },
    /// Empties the holder of a Lease as the holder's own release would.
    Release {
        /// The Lease.
        name: String,
        /// Prints the record it would write, and writes nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

/// `-o`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// More columns.
    Wide,
    /// One JSON document, `ElectionList`.
    Json,
    /// The same document as YAML.
    Yaml,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_flags_go_after_the_command_as_kubectl_hands_them_over() {
        let cli = Cli::try_parse_from([
            "kubectl-elector",
            "get",
            "-o",
            "wide",
            "-n",
            "ns",
            "--kubeconfig",
            "/k",
            "--context",
            "c",
        ])
        .expect("parses");
        assert_eq!(cli.namespace.as_deref(), Some("ns"));
        assert_eq!(cli.context.as_deref(), Some("c"));
        assert_eq!(cli.kubeconfig, Some(PathBuf::from("/k")));
        assert!(matches!(
            cli.command,
            Command::Get {
                output: Some(Output::Wide),
                ..
            }
        ));
    }

    #[test]
    fn describe_and_release_need_a_name() {
        assert!(Cli::try_parse_from(["kubectl-elector", "describe"]).is_err());
        assert!(Cli::try_parse_from(["kubectl-elector", "release"]).is_err());
        assert!(Cli::try_parse_from(["kubectl-elector", "get", "-o", "xml"]).is_err());
    }
}
