//! Many elections in one process (docs/design.md §9): `E` independent elections of three
//! candidates each, every candidate an `election-driver` task on one tokio
//! runtime, every election on its own memory lock; followers watch, and as the
//! baseline in the same run they poll (client-go's behaviour, the lock offering
//! no watch).
//!
//! For each `E` it prints:
//! - the time until every election has a leader (from spawning; the first
//!   election of a fresh lock includes the strict lock delay of one lease);
//! - resident memory per candidate (RSS growth over the spawn, divided by `3E`:
//!   driver task, elector, lock client, watch, handle);
//! - in steady state, over a measured window: lock writes per second (the
//!   leaders' renewals), lock requests per second (reads too), process CPU time
//!   per renewal (the leader's renew plus what the two followers do meanwhile:
//!   watch events, or polls), and CPU use of the whole process;
//! - a safety check: at no sampled instant two leaders in one election.
//!
//! Run: `cargo run --release --example bench_many` (about a minute), or
//! `-- --quick` for a smoke run (10 elections, short window). Linux only (reads
//! `/proc/self/statm`).

use std::time::{Duration, Instant};

use adapter_tokio::TokioRuntime;
use election_core::Config;
use election_driver::{Builder, Handle};
use examples::{cpu_time, rss_bytes};
use lock_memory::MemoryStore;

struct Election {
    store: MemoryStore,
    names: Vec<String>,
    nodes: Vec<Handle>,
}

impl Election {
    fn leaders(&self) -> usize {
        self.nodes.iter().filter(|h| h.is_leader()).count()
    }

    fn requests(&self) -> u64 {
        self.names
            .iter()
            .map(|n| self.store.calls(n).requests())
            .sum()
    }
}

struct Figures {
    elections: usize,
    watch: bool,
    requests_per_sec: f64,
    elected_after: Duration,
    rss_per_candidate: f64,
    writes_per_sec: f64,
    cpu_per_write_us: f64,
    cpu_share: f64,
    max_leaders: usize,
}

async fn run(rt: &TokioRuntime, elections: usize, watch: bool, window: Duration) -> Figures {
    let rss_before = rss_bytes();
    let spawned = Instant::now();
    let mut all: Vec<Election> = (0..elections)
        .map(|e| {
            let store = MemoryStore::new();
            let names: Vec<String> = (0..3).map(|c| format!("e{e}-c{c}")).collect();
            let nodes = names
                .iter()
                .enumerate()
                .map(|(c, name)| {
                    let config = Config::fast(name.as_str()).seed((e * 3 + c) as u64);
                    let lock = store.client(name);
                    let lock = if watch { lock } else { lock.without_watch() };
                    Builder::new(lock, config)
                        .spawn(rt.clone())
                        .expect("valid configuration")
                })
                .collect();
            Election {
                store,
                names,
                nodes,
            }
        })
        .collect();

    let mut max_leaders = 0;
    let elected_after = loop {
        let counts: Vec<usize> = all.iter().map(Election::leaders).collect();
        max_leaders = max_leaders.max(counts.iter().copied().max().unwrap_or(0));
        if counts.iter().all(|&c| c == 1) {
            break spawned.elapsed();
        }
        assert!(
            spawned.elapsed() < Duration::from_secs(60),
            "not every election has a leader after 60 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    // Let the followers settle (their first watch events), then measure.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_per_candidate = rss_bytes().saturating_sub(rss_before) as f64 / (elections * 3) as f64;

    let seq_before: u64 = all.iter().map(|e| e.store.last_seq()).sum();
    let requests_before: u64 = all.iter().map(Election::requests).sum();
    let (cpu_before, wall_before) = (cpu_time(), Instant::now());
    let end = wall_before + window;
    while Instant::now() < end {
        for e in &all {
            max_leaders = max_leaders.max(e.leaders());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let wall = wall_before.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_before);
    let writes: u64 = all.iter().map(|e| e.store.last_seq()).sum::<u64>() - seq_before;
    let requests: u64 = all.iter().map(Election::requests).sum::<u64>() - requests_before;

    for e in all.drain(..) {
        for h in e.nodes {
            h.abort();
        }
    }
    Figures {
        elections,
        watch,
        requests_per_sec: requests as f64 / wall.as_secs_f64(),
        elected_after,
        rss_per_candidate,
        writes_per_sec: writes as f64 / wall.as_secs_f64(),
        cpu_per_write_us: if writes == 0 {
            f64::NAN
        } else {
            cpu.as_secs_f64() * 1e6 / writes as f64
        },
        cpu_share: cpu.as_secs_f64() / wall.as_secs_f64(),
        max_leaders,
    }
}

fn row(f: &Figures) -> String {
    format!(
        "| {} | {} | {} | {:.0} ms | {:.1} KiB | {:.0} | {:.0} | {:.1} µs | {:.1} % | {} |",
        f.elections,
        f.elections * 3,
        if f.watch { "watch" } else { "poll" },
        f.elected_after.as_secs_f64() * 1e3,
        f.rss_per_candidate / 1024.0,
        f.writes_per_sec,
        f.requests_per_sec,
        f.cpu_per_write_us,
        f.cpu_share * 100.0,
        f.max_leaders,
    )
}

/// `bench_many --one E watch|poll SECS`: one configuration in this process (a
/// fresh process per configuration, so that its RSS growth is its own and not
/// memory the allocator kept from an earlier run).
async fn one(args: &[String]) {
    let elections = args[0].parse().expect("E");
    let watch = args[1] == "watch";
    let window = Duration::from_secs(args[2].parse().expect("seconds"));
    let rt = TokioRuntime::current().expect("inside tokio");
    let f = run(&rt, elections, watch, window).await;
    println!("{}", row(&f));
    assert!(f.max_leaders <= 1, "two leaders in one election");
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--one") {
        return one(&args[i + 1..]).await;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let (sizes, window): (&[usize], u64) = if quick {
        (&[10], 1)
    } else {
        (&[10, 100, 1000], 10)
    };
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "machine: {cpus} CPUs; profile: {}; Config::fast (lease 2 s, retry 250 ms); memory lock; tokio multi-thread; one process per row",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
    );
    println!(
        "| elections | candidates | followers | all elected after | RSS per candidate | lock writes/s | lock requests/s | CPU per renewal | process CPU | max leaders in one election |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let exe = std::env::current_exe().expect("this program");
    for &e in sizes {
        for mode in ["watch", "poll"] {
            let out = std::process::Command::new(&exe)
                .args(["--one", &e.to_string(), mode, &window.to_string()])
                .output()
                .expect("run one configuration");
            print!("{}", String::from_utf8_lossy(&out.stdout));
            assert!(
                out.status.success(),
                "{e} elections, {mode}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
