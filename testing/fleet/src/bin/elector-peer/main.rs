//! `elector-peer`: one kube-elector candidate on a Lease, printing each
//! transition as the client-go peer (`testing/client-go-peer`) prints it
//! (`fleet::line`), so that one harness reads both. Its leader work ticks every
//! `--tick-ms` while `Observer::is_leader` holds, the check the library gives
//! leader work; SIGTERM or SIGINT shuts it down (the work stopped, then the
//! Lease released). Flags as the client-go peer's:
//!
//! ```text
//! elector-peer --id ID --lease NAME --namespace NS --kubeconfig PATH
//!     --lease-duration-ms N --renew-deadline-ms N --retry-period-ms N
//!     [--tick-ms 100] [--coordinated] [--binary-version 1.36.0]
//!     [--emulation-version 1.36.0] [--candidate-namespace NS]
//!     [--renew-interval-ms N] [--request-timeout-ms N]
//!     [--elections N [--shared-watch]]
//! ```
//!
//! `--elections N` runs N elections in this process instead (`many.rs`), as the
//! client-go peer's flag of that name does.

mod many;

use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use fleet::line::{Event, Line};
use futures::StreamExt;
use kube_elector::driver::Observer;
use kube_elector::kube;
use kube_elector::prelude::*;
use tokio::signal::unix::{SignalKind, signal};

/// The flags.
struct Args {
    id: String,
    lease: String,
    namespace: String,
    kubeconfig: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    tick: Duration,
    coordinated: bool,
    binary_version: String,
    emulation_version: String,
    candidate_namespace: Option<String>,
    /// `--elections N`: N elections on the Leases `<lease>-0` … (`many.rs`).
    elections: Option<usize>,
    /// `--shared-watch`: with `--elections`, one watch for all of them.
    shared_watch: bool,
    /// `--renew-interval-ms`: how often a leader renews (default: every
    /// retry period, as client-go).
    renew_interval: Option<Duration>,
    /// `--request-timeout-ms` (default: client-go's, half the renew deadline).
    request_timeout: Option<Duration>,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut get = std::collections::BTreeMap::new();
    let (mut coordinated, mut shared_watch) = (false, false);
    while let Some(flag) = args.next() {
        let name = flag
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument {flag:?}"))?;
        match name {
            "coordinated" => coordinated = true,
            "shared-watch" => shared_watch = true,
            _ => {
                let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
                get.insert(name.to_owned(), value);
            }
        }
    }
    let mut take = |name: &str| get.remove(name);
    let required = |v: Option<String>, name: &str| v.ok_or_else(|| format!("--{name} is required"));
    let ms = |v: Option<String>, name: &str| -> Result<Duration, String> {
        let v = required(v, name)?;
        v.parse()
            .map(Duration::from_millis)
            .map_err(|_| format!("--{name} {v:?}: expected milliseconds"))
    };
    let args = Args {
        id: required(take("id"), "id")?,
        lease: required(take("lease"), "lease")?,
        namespace: required(take("namespace"), "namespace")?,
        kubeconfig: required(take("kubeconfig"), "kubeconfig")?,
        lease_duration: ms(take("lease-duration-ms"), "lease-duration-ms")?,
        renew_deadline: ms(take("renew-deadline-ms"), "renew-deadline-ms")?,
        retry_period: ms(take("retry-period-ms"), "retry-period-ms")?,
        tick: ms(take("tick-ms").or(Some("100".into())), "tick-ms")?,
        coordinated,
        binary_version: take("binary-version").unwrap_or_else(|| "1.36.0".into()),
        emulation_version: take("emulation-version").unwrap_or_else(|| "1.36.0".into()),
        candidate_namespace: take("candidate-namespace"),
        elections: take("elections")
            .map(|n| match n.parse() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!("--elections {n:?}: expected a positive count")),
            })
            .transpose()?,
        shared_watch,
        renew_interval: take("renew-interval-ms")
            .map(|v| ms(Some(v), "renew-interval-ms"))
            .transpose()?,
        request_timeout: take("request-timeout-ms")
            .map(|v| ms(Some(v), "request-timeout-ms"))
            .transpose()?,
    };
    if (args.shared_watch && args.elections.is_none())
        || (args.coordinated && args.elections.is_some())
    {
        return Err("--shared-watch needs --elections, which is not coordinated".into());
    }
    match get.keys().next() {
        Some(unknown) => Err(format!("unknown flag --{unknown}")),
        None => Ok(args),
    }
}

fn print(id: &str, event: Event) {
    // One write per line: stdout is a pipe, and lines of tasks must not mix.
    println!("{}", Line::now(id, event));
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args = match parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("elector-peer: {e}");
            return ExitCode::from(2);
        }
    };
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("elector-peer: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let kubeconfig = kube::config::Kubeconfig::read_from(&args.kubeconfig)?;
    let options = kube::config::KubeConfigOptions::default();
    let client =
        kube_elector::client(kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?)?;
    let mut config = Config::client_go(args.id.as_str()).timings(
        args.lease_duration,
        args.renew_deadline,
        args.retry_period,
    );
    if let Some(every) = args.renew_interval {
        config = config.renew_interval(every);
    }
    if let Some(timeout) = args.request_timeout {
        config.request_timeout = timeout;
    }
    if let Some(elections) = args.elections {
        return many::run(&args, client, config, elections).await;
    }
    if args.coordinated {
        config = config.coordinated();
    }
    let candidate = if args.coordinated {
        let ns = args
            .candidate_namespace
            .as_deref()
            .unwrap_or(&args.namespace);
        Some(
            kube_elector::candidate::LeaseCandidate::builder(
                client.clone(),
                ns,
                &args.id,
                &args.lease,
            )
            .binary_version(args.binary_version.as_str())
            .emulation_version(args.emulation_version.as_str())
            .request_timeout(config.request_timeout)
            .build()?,
        )
    } else {
        None
    };
    let lock = LeaseLock::new(client, &args.namespace, &args.lease)?;
    let observer: Arc<OnceLock<Observer>> = Arc::default();
    let (id, tick) = (args.id.clone(), args.tick);
    let work_observer = Arc::clone(&observer);
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut builder = Builder::new(lock, config);
    if let Some(candidate) = candidate {
        // Withdrawn by the shutdown before the release.
        builder =
            builder.companion(move |stop| async move { candidate.run(stop.cancelled()).await });
    }
    let handle = builder
        .leader_work(move |_term, cancel| {
            let (id, observer) = (id.clone(), Arc::clone(&work_observer));
            async move {
                print(&id, Event::Leading);
                let leads = || observer.get().is_some_and(Observer::is_leader);
                let mut cancelled = std::pin::pin!(cancel.cancelled());
                loop {
                    tokio::select! {
                        () = &mut cancelled => break,
                        () = tokio::time::sleep(tick) => {}
                    }
                    if !leads() {
                        // Past its deadline: it acts no more, and says so now.
                        break;
                    }
                    print(&id, Event::Tick);
                }
                print(&id, Event::Stopped);
                cancelled.await;
            }
        })
        .spawn(TokioRuntime::current()?)?;
    let _ = observer.set(handle.observer());
    print(&args.id, Event::Started);
    let mut states = handle.states();
    let id = args.id.clone();
    tokio::spawn(async move {
        let mut seen: Option<Option<Arc<str>>> = None;
        while let Some(state) = states.next().await {
            if seen.as_ref() != Some(&state.leader) {
                print(
                    &id,
                    Event::Leader(state.leader.as_deref().map(str::to_owned)),
                );
                seen = Some(state.leader);
            }
        }
    });
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
    }
    // The candidacy is withdrawn, the work stops (and prints `stopped`), then
    // the Lease is released.
    handle.shutdown().await;
    print(&args.id, Event::Exit);
    Ok(())
}
