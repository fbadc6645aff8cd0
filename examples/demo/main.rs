//! Three candidates in one process on the memory lock, driven on tokio: an election, a crash of the leader (no release) and its failover after
//! one lease, then a graceful hand-over (shutdown, release, the next leader at
//! once), then a clean shutdown. Prints a timeline and the measured latencies.
//!
//! Run from the repository root: `cargo run -p demo`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube_elector::prelude::*;

/// A duration as milliseconds with three decimals.
fn millis(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// A wall time from the store's log, in milliseconds since the Unix epoch.
fn wall_ms(w: &kube_elector::core::WallTime) -> f64 {
    w.unix_secs as f64 * 1e3 + f64::from(w.nanos) / 1e6
}

/// Prints one line of the timeline.
fn say(start: Instant, who: &str, what: &str) {
    let ms = start.elapsed().as_secs_f64() * 1e3;
    println!("{ms:>9.1} ms  {who:<8} {what}");
}

fn describe(s: &LeadershipState) -> Option<String> {
    Some(match &s.change {
        Change::Elector(Event::StartedLeading { term }) => format!("STARTED LEADING (term {term})"),
        Change::Elector(Event::Draining { reason }) => format!("draining leader work ({reason})"),
        Change::Elector(Event::StoppedLeading { term, reason }) => {
            format!("stopped leading (term {term}: {reason})")
        }
        Change::Elector(Event::LeaderChanged { leader }) => match leader {
            Some(l) => format!("sees leader {l}"),
            None => "sees no leader".to_owned(),
        },
        Change::Elector(Event::Terminated) => "shut down".to_owned(),
        Change::Aborted => "CRASHED (no release)".to_owned(),
        Change::Problem(e) => format!("problem: {e}"),
        Change::WorkEnded { term } => format!("leader work of term {term} ended"),
        _ => return None,
    })
}

fn candidate(store: &MemoryStore, name: &'static str, seed: u64, start: Instant) -> Handle {
    let handle = Builder::new(store.client(name), Config::fast(name).seed(seed))
        .leader_work(move |term, cancel| async move {
            say(
                start,
                name,
                &format!("  work: reconciling as leader of term {term}"),
            );
            cancel.cancelled().await;
            // A short, orderly drain: the release waits for it.
            tokio::time::sleep(Duration::from_millis(20)).await;
            say(start, name, "  work: drained");
        })
        .spawn(TokioRuntime::current().expect("inside tokio, timers on"))
        .expect("the fast preset is a valid configuration");
    // Every state in order (a tokio watch, `adapter_tokio::state_watch`, keeps
    // only the latest).
    let mut states = handle.states();
    tokio::spawn(async move {
        while let Some(s) = states.next().await {
            if let Some(line) = describe(&s) {
                say(start, name, &line);
            }
        }
    });
    handle
}

/// Waits (polling `is_leader`, 1 ms steps) until one of `nodes` leads.
async fn leader_among(nodes: &[Option<Handle>], limit: Duration) -> Option<usize> {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if let Some(i) = nodes
            .iter()
            .position(|n| n.as_ref().is_some_and(Handle::is_leader))
        {
            return Some(i);
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    None
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let lease = Config::fast("x").lease_duration;
    println!(
        "three candidates, memory lock, Config::fast (lease {lease:?}, renew deadline 1.5 s, retry 250 ms)\n"
    );
    let store = MemoryStore::new();
    let names = ["alpha", "bravo", "charlie"];
    let mut nodes: Vec<Option<Handle>> = names
        .iter()
        .zip(1..)
        .map(|(&n, seed)| Some(candidate(&store, n, seed, start)))
        .collect();

    // 1. The first election (the creator of a fresh lock waits one lease first).
    let first = leader_among(&nodes, Duration::from_secs(6))
        .await
        .ok_or("no leader elected")?;
    let term = nodes[first]
        .as_ref()
        .and_then(Handle::term)
        .map_or_else(String::new, |t| t.to_string());
    say(
        start,
        "demo",
        &format!("== {} leads (term {term})", names[first]),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;

    // 2. Crash: drop the leader without releasing. The others wait out its lease.
    say(
        start,
        "demo",
        &format!("== crashing {} (abort, no release)", names[first]),
    );
    let crashed_at = Instant::now();
    if let Some(h) = nodes[first].take() {
        h.abort();
    }
    let second = leader_among(&nodes, lease * 3).await.ok_or("no failover")?;
    let failover = crashed_at.elapsed();
    // The lease runs from the crashed leader's last renew as the others saw it:
    // measure from that write to the new leader's acquisition, minus the lease.
    let log = store.write_log();
    let last_renew = log
        .iter()
        .rev()
        .find(|w| &*w.client == names[first])
        .map(|w| w.wall);
    let takeover = log
        .iter()
        .rev()
        .find(|w| &*w.client == names[second])
        .map(|w| w.wall);
    let beyond_lease = last_renew
        .zip(takeover)
        .map(|(r, a)| wall_ms(&a) - wall_ms(&r) - lease.as_secs_f64() * 1e3);
    say(
        start,
        "demo",
        &format!(
            "== failover to {} after {}",
            names[second],
            millis(failover)
        ),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;

    // 3. Graceful hand-over: shut the new leader down; it drains, releases, and
    //    the last candidate takes over at once (its watch sees the release).
    say(
        start,
        "demo",
        &format!("== shutting {} down gracefully", names[second]),
    );
    let log_before = store.write_log().len();
    let shutdown_at = Instant::now();
    if let Some(h) = nodes[second].take() {
        h.shutdown().await;
    }
    let released_after = shutdown_at.elapsed();
    let third = leader_among(&nodes, lease * 2)
        .await
        .ok_or("no hand-over")?;
    let handover = shutdown_at.elapsed();
    // Release write to acquisition write, from the store's own log.
    let writes = store.write_log();
    let new_writes = &writes[log_before.min(writes.len())..];
    let release = new_writes
        .iter()
        .find(|w| w.record.as_ref().is_some_and(|r| r.holder.is_empty()));
    let acquire = new_writes.iter().find(|w| {
        w.record
            .as_ref()
            .is_some_and(|r| &*r.holder == names[third])
    });
    say(
        start,
        "demo",
        &format!("== {} leads after the hand-over", names[third]),
    );

    // 4. Shut the rest down gracefully.
    for (i, slot) in nodes.iter_mut().enumerate() {
        if let Some(h) = slot.take() {
            say(start, "demo", &format!("== shutting {} down", names[i]));
            h.shutdown().await;
        }
    }
    let holder: Option<Arc<str>> = store.current().map(|o| o.record.holder);
    tokio::time::sleep(Duration::from_millis(20)).await; // let the timeline printers finish

    println!("\nmeasured:");
    println!(
        "  crash failover (abort -> new leader):        {} (lease {lease:?})",
        millis(failover)
    );
    if let Some(b) = beyond_lease {
        println!(
            "    beyond the lease (last renew write -> acquire write, minus the lease): {b:.3} ms"
        );
    }
    println!(
        "  graceful hand-over (shutdown -> new leader): {}",
        millis(handover)
    );
    println!(
        "    of which drain + release (shutdown call):  {}",
        millis(released_after)
    );
    if let (Some(r), Some(a)) = (release, acquire) {
        println!(
            "    release write -> acquire write:          {:.3} ms",
            wall_ms(&a.wall) - wall_ms(&r.wall)
        );
    }
    println!(
        "  lock after shutdown: holder {:?} (released)",
        holder.as_deref().unwrap_or("")
    );
    Ok(())
}
