//! `kube-emulator`: serve the emulator on 127.0.0.1 and write a kubeconfig for it.

use std::path::PathBuf;

use clap::Parser;
use kube_emulator::Emulator;

/// A Kubernetes API emulator (Leases, ConfigMaps, Events, Namespaces, Nodes) on 127.0.0.1.
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
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let emu = match Emulator::builder()
        .port(args.port)
        .history_limit(args.history)
        .start()
        .await
    {
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
    println!("try: KUBECONFIG={} kubectl get leases -A", path.display());
    if let Err(e) = tokio::signal::ctrl_c().await {
        eprintln!("kube-emulator: waiting for Ctrl-C failed: {e}");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
