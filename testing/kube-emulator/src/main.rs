//! `kube-emulator`: serve the emulator on 127.0.0.1 and write a kubeconfig for it.

use std::path::PathBuf;

use clap::Parser;
use kube_emulator::{Coordinator, Emulator};

/// A Kubernetes API emulator on 127.0.0.1, for kubectl and other clients.
///
/// It serves Leases and LeaseCandidates, ConfigMaps, Events, Namespaces,
/// Nodes, and ValidatingAdmissionPolicies with their bindings.
/// With --coordinated-leader-election it also elects the holders of the Leases
/// that LeaseCandidates name, as the API server's leader-election controller
/// does.
#[derive(Debug, Parser)]
#[command(name = "kube-emulator", version)]
struct Args {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    port: u16,
    /// Where to write the kubeconfig (default: <temp dir>/kube-emulator-<port>.kubeconfig).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Bearer token written into the kubeconfig.
    #[arg(long, default_value = "kube-emulator")]
    token: String,
    /// How many changes the watch history keeps before a resume gets 410.
    #[arg(long, default_value_t = 1000)]
    history: usize,
    /// Run coordinated leader election (KEP-4355): ping the LeaseCandidates
    /// of each Lease and make the one with the oldest emulation version its
    /// holder. Timings are the API server's: 5 s to ack, a look every 5 s,
    /// Leases of 5 s, candidates valid for 30 min.
    #[arg(long)]
    coordinated_leader_election: bool,
    /// Multiply the coordinator's timings by this factor (0.1: ten times
    /// faster; the Lease duration stays whole seconds, at least 1).
    #[arg(long, default_value_t = 1.0, requires = "coordinated_leader_election",
        value_parser = positive_factor)]
    coordinator_scale: f64,
}

/// A factor for `--coordinator-scale`: a positive number.
fn positive_factor(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(f),
        _ => Err(format!("{text:?} is not a positive number")),
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let mut builder = Emulator::builder()
        .port(args.port)
        .history_limit(args.history);
    if args.coordinated_leader_election {
        builder = builder.coordinator(Coordinator::default().scaled(args.coordinator_scale));
    }
    let emu = match builder.start().await {
        Ok(emu) => emu,
        Err(e) => {
            eprintln!("kube-emulator: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let path = args.kubeconfig.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("kube-emulator-{}.kubeconfig", emu.addr.port()))
    });
    if let Err(e) = emu.write_kubeconfig(&path, &args.token) {
        eprintln!("kube-emulator: {e}");
        return std::process::ExitCode::FAILURE;
    }
    println!("kube-emulator listening on {}", emu.url());
    println!("kubeconfig written to {}", path.display());
    if args.coordinated_leader_election {
        println!(
            "try: KUBECONFIG={} kubectl get leases,leasecandidates -A",
            path.display()
        );
    } else {
        println!("try: KUBECONFIG={} kubectl get leases -A", path.display());
    }
    if let Err(e) = tokio::signal::ctrl_c().await {
        eprintln!("kube-emulator: waiting for Ctrl-C failed: {e}");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
