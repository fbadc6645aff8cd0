//! An election on smol, with no tokio in the build: three candidates on the
//! memory lock, the leader crashes, another takes over after the lease, and the
//! last ones hand over and shut down. Exits 0 when every step happened.
//!
//! The dependency a smol (or async-std) application writes:
//!
//! ```toml
//! kube-elector = { version = "0.1", default-features = false, features = ["smol", "memory"] }
//! smol = "2"
//! ```
//!
//! Run: `cargo run -p kube-elector --no-default-features --features smol,memory --example smol_app`
//! (`cargo tree -p kube-elector --no-default-features --features smol,memory -e normal`
//! lists no tokio).

use std::time::{Duration, Instant};

use kube_elector::prelude::*;

/// Waits until one of `candidates` other than `skip` leads, polling every 10 ms.
async fn leader(candidates: &[Handle], skip: Option<usize>, limit: Duration) -> Option<usize> {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        let leading = (0..candidates.len()).find(|&i| Some(i) != skip && candidates[i].is_leader());
        if leading.is_some() {
            return leading;
        }
        smol::Timer::after(Duration::from_millis(10)).await;
    }
    None
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    smol::block_on(async {
        let start = Instant::now();
        let say =
            |what: String| println!("{:>7.1} ms  {what}", start.elapsed().as_secs_f64() * 1e3);
        let store = MemoryStore::new(); // its timers are async-io's, smol's own
        let names = ["alpha", "bravo", "charlie"];
        let candidates: Vec<Handle> = names
            .into_iter()
            .map(|name| {
                Builder::new(store.client(name), Config::fast(name))
                    .leader_work(move |term, cancel| async move {
                        println!("           {name} works as leader of term {term}");
                        cancel.cancelled().await; // runs until leadership ends
                    })
                    .spawn(SmolRuntime::new())
            })
            .collect::<Result<_, _>>()?;
        let lease = Config::fast("x").lease_duration;

        // A fresh lock's creator leads one lease after its create.
        let first = leader(&candidates, None, lease * 3)
            .await
            .ok_or("no leader")?;
        say(format!("{} leads", names[first]));

        // A crash: no release. The others wait out the lease, then one takes over.
        candidates[first].abort();
        let crashed = Instant::now();
        say(format!("{} crashed", names[first]));
        let second = leader(&candidates, Some(first), lease * 3)
            .await
            .ok_or("no failover")?;
        say(format!(
            "{} leads, {:.0} ms after the crash (the lease is {lease:?})",
            names[second],
            crashed.elapsed().as_secs_f64() * 1e3
        ));

        // A graceful handover: the leader drains and releases, the last one takes
        // over at once.
        candidates[second].shutdown().await;
        say(format!("{} shut down and released", names[second]));
        let third = 3 - first - second;
        if leader(&candidates, Some(second), lease).await != Some(third) {
            return Err(format!("{} did not take over after the release", names[third]).into());
        }
        say(format!("{} leads after the handover", names[third]));

        candidates[third].shutdown().await;
        let holder = store.current().map(|o| o.record.holder);
        say(format!("all shut down; the lock's holder: {holder:?}"));
        if holder.as_deref() != Some("") {
            return Err("the lock was not released".into());
        }
        Ok(())
    })
}
