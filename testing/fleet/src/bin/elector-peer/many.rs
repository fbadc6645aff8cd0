//! `--elections N`: N kube-elector candidates in this process, on the Leases
//! `<lease>-0` … `<lease>-(N-1)`, each with the identity `--id`, all on one
//! client; as the client-go peer's `--elections` runs N `LeaderElector`s (the
//! server's-bill benchmark, `benches/bill.rs`). Followers watch each Lease on
//! its own watch, or with `--shared-watch` through one watch for all of them
//! (the Leases labelled with the prefix).
//!
//! Lines: `started` once every candidate runs, then per Lease
//! `<lease>/<id> leading` when its leader work starts and `<lease>/<id>
//! stopped` when that work is cancelled; `exit` after SIGTERM or SIGINT, once
//! every candidate has shut down (released what it held).

use fleet::line::Event;
use kube_elector::kube;
use kube_elector::prelude::*;
use kube_elector::{SharedWatch, WatchConfig};
use tokio::signal::unix::{SignalKind, signal};

use crate::{Args, print};

/// The label of the Leases a shared watch finds: their prefix.
const LABEL: &str = "fleet.kube-elector.test/elections";

pub async fn run(
    args: &Args,
    client: kube::Client,
    config: Config,
    elections: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let label = [(LABEL.to_owned(), args.lease.clone())];
    let shared: Option<SharedWatch<_>> = args.shared_watch.then(|| {
        let hub = LeaseLock::shared_watch(
            client.clone(),
            &args.namespace,
            label.clone(),
            WatchConfig::default(),
        );
        tokio::spawn(hub.run());
        hub
    });
    let mut handles = Vec::with_capacity(elections);
    for i in 0..elections {
        let lease = format!("{}-{i}", args.lease);
        let mut builder =
            LeaseLock::builder(client.clone(), &args.namespace, &lease).labels(label.clone());
        if let Some(hub) = &shared {
            builder = builder.shared_watch(hub);
        }
        let who = format!("{lease}/{}", args.id);
        // A jitter of its own per candidate, not one per process.
        let seed = args.id.bytes().fold(i as u64 + 1, |h, b| {
            h.wrapping_mul(31).wrapping_add(u64::from(b))
        });
        let handle = Builder::new(builder.build()?, config.clone().seed(seed))
            .leader_work(move |_term, cancel| {
                let who = who.clone();
                async move {
                    print(&who, Event::Leading);
                    cancel.cancelled().await;
                    print(&who, Event::Stopped);
                }
            })
            .spawn(TokioRuntime::current()?)?;
        handles.push(handle);
    }
    print(&args.id, Event::Started);
    tokio::select! {
        _ = terminate.recv() => {}
        _ = interrupt.recv() => {}
    }
    // Every candidate shuts down at once: its work stops, then its Lease is
    // released; as many releases in flight as there are leaders here.
    futures::future::join_all(handles.iter().map(Handle::shutdown)).await;
    print(&args.id, Event::Exit);
    Ok(())
}
