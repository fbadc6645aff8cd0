//! Many Lease elections on one API server (docs/design.md §9): `E` elections, each
//! with a candidate in each of three "processes" (three clients with their own
//! token, as three replicas would be), every candidate an `election-driver` task
//! on one tokio runtime; followers watch each Lease on its own watch (the
//! default) or through one shared watch per process (`SharedWatch`), in one run.
//!
//! The API emulator runs in a child process (this program re-executed with
//! `--emulator`), so that the CPU and memory measured are the candidates' alone;
//! the child reports the requests it served by verb and client.
//!
//! For each `E` and mode it prints: the time until every election has a leader;
//! resident memory per election (three candidates, RSS growth over the spawn);
//! API requests per second by verb in a steady-state window; watches opened;
//! process CPU per renewal (the leaders' writes) and in all.
//!
//! Run: `cargo run --release --example bench_shared_watch` (about 4 minutes), or
//! `-- --quick` (100 elections at `Config::fast`, a 3 s window; in CI). Timings: client-go's 15 s / 10 s /
//! 2 s, the leader renewing every 5 s (a third of the lease, request timeout 4 s;
//! `-- --renew-every-retry` for client-go's renew every 2 s, `-- --shared-only` for
//! the shared-watch rows alone). Linux only.
//!
//! `-- --servers` (about 7 minutes): the shared watch at 1, 100 and 1,000
//! elections on the emulator and on a real kube-apiserver v1.36.3 with its
//! etcd (`test_kit::apiserver`, each candidate process a ServiceAccount of its
//! own; requests counted from its audit log), row by row in turn, each with the
//! server's own CPU time per minute of the window (`utime + stime` of
//! `/proc/<pid>/stat`: the emulator child; kube-apiserver and etcd apart). The
//! smoke run ends with 10 elections on each. Without the built server
//! (`bash testing/k8s-server/build.sh`) its rows are skipped, saying so.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use adapter_tokio::TokioRuntime;
use election_core::Config;
use election_driver::{Builder, Handle};
use examples::{clock_ticks_per_second, cpu_time, process_cpu_ticks, rss_bytes};
use k8s_openapi::api::coordination::v1::Lease;
use lock_kube::{SharedWatch, WatchConfig};
use lock_lease::LeaseLock;
use test_kit::apiserver::{ApiServer, Server};

// ------------------------------------------------------------ the emulator child

/// The child: serves the emulator, prints its port, then answers `reset` and
/// `counts` on stdin until stdin closes.
fn serve_emulator() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let emu = rt
        .block_on(
            kube_emulator::Emulator::builder()
                .history_limit(100_000)
                .start(),
        )
        .expect("emulator");
    println!("port {}", emu.addr.port());
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        match line.trim() {
            "reset" => {
                emu.reset_request_counts();
                println!("ok");
            }
            "counts" => {
                for (client, verb, resource, n) in emu.request_counts().iter() {
                    println!("{client} {verb:?} {resource:?} {n}");
                }
                println!("end");
            }
            _ => println!("?"),
        }
    }
}

/// The parent's handle on the emulator child.
struct EmulatorProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    port: u16,
}

impl EmulatorProcess {
    fn start() -> Self {
        let mut child = Command::new(std::env::current_exe().expect("own path"))
            .arg("--emulator")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the emulator starts");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the port");
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .expect("port N");
        EmulatorProcess {
            child,
            stdin,
            stdout,
            port,
        }
    }

    fn ask(&mut self, what: &str) -> Vec<String> {
        writeln!(self.stdin, "{what}").expect("ask");
        let mut out = Vec::new();
        loop {
            let mut line = String::new();
            self.stdout.read_line(&mut line).expect("answer");
            let line = line.trim().to_owned();
            if line == "ok" || line == "end" || line.is_empty() {
                return out;
            }
            out.push(line);
        }
    }

    /// Requests by verb (all clients), from the last reset.
    fn counts(&mut self) -> BTreeMap<String, u64> {
        let mut by_verb = BTreeMap::new();
        for line in self.ask("counts") {
            let parts: Vec<&str> = line.split_whitespace().collect();
            if let [_, verb, _, n] = parts[..] {
                *by_verb.entry(verb.to_owned()).or_default() += n.parse::<u64>().unwrap_or(0);
            }
        }
        by_verb
    }

    fn kube_config(&self, token: &str) -> kube::Config {
        let uri: http::Uri = format!("http://127.0.0.1:{}", self.port)
            .parse()
            .expect("a URI");
        let mut config = kube::Config::new(uri);
        config.default_namespace = "default".to_owned();
        let value = http::HeaderValue::from_str(&format!("Bearer {token}")).expect("a header");
        config.headers.push((http::header::AUTHORIZATION, value));
        config
    }
}

/// The API server of a row: the emulator child, or a real kube-apiserver on
/// its etcd (`test_kit::apiserver`), the same elections on either.
enum Backend {
    Emulator(EmulatorProcess),
    ApiServer {
        api: Box<ApiServer>,
        namespace: String,
        /// Requests are counted from here (the audit log).
        since: SystemTime,
    },
}

impl Backend {
    fn name(&self) -> &'static str {
        match self {
            Backend::Emulator(_) => "emulator",
            Backend::ApiServer { .. } => "kube-apiserver",
        }
    }

    fn kube_config(&self, identity: &str) -> kube::Config {
        match self {
            Backend::Emulator(emu) => emu.kube_config(identity),
            // A ServiceAccount of its own per identity, bound to cluster-admin.
            Backend::ApiServer { api, .. } => Server::kube_config(&**api, identity),
        }
    }

    fn namespace(&self) -> &str {
        match self {
            Backend::Emulator(_) => "default",
            Backend::ApiServer { namespace, .. } => namespace,
        }
    }

    /// Requests on Leases by verb (`Get`, `Update`, …; all clients) from the
    /// last reset: the emulator's counts, or kube-apiserver's audit log.
    fn counts(&mut self) -> BTreeMap<String, u64> {
        match self {
            Backend::Emulator(emu) => emu.counts(),
            Backend::ApiServer {
                api,
                namespace,
                since,
            } => {
                // Received until now; logged when answered, a moment later.
                let until = SystemTime::now();
                std::thread::sleep(Duration::from_millis(500));
                let mut by_verb = BTreeMap::new();
                for ((_, verb), n) in api.audit_requests("leases", namespace, *since, until) {
                    let mut verb = verb.clone();
                    if let Some(first) = verb.get_mut(..1) {
                        first.make_ascii_uppercase();
                    }
                    *by_verb.entry(verb).or_default() += n;
                }
                by_verb
            }
        }
    }

    fn reset(&mut self) {
        match self {
            Backend::Emulator(emu) => {
                emu.ask("reset");
            }
            Backend::ApiServer { since, .. } => *since = SystemTime::now(),
        }
    }

    /// The server's own processes and their CPU time so far, in clock ticks
    /// (`/proc/<pid>/stat`).
    fn cpu_ticks(&self) -> Vec<(&'static str, u64)> {
        let ticks = |pid: u32| process_cpu_ticks(pid).expect("the server's /proc/<pid>/stat");
        match self {
            Backend::Emulator(emu) => vec![("emulator", ticks(emu.child.id()))],
            Backend::ApiServer { api, .. } => vec![
                ("kube-apiserver", ticks(api.pid())),
                ("etcd", ticks(api.etcd_pid())),
            ],
        }
    }
}

impl Drop for EmulatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ------------------------------------------------------------ the candidates

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// A watch per Lease per candidate (the default).
    PerLease,
    /// One shared watch per process.
    Shared,
}

struct Row {
    elections: usize,
    mode: Mode,
    /// The server's processes and their CPU seconds per minute of the window.
    server_cpu: Vec<(&'static str, f64)>,
    /// The time until all were elected, or how many were after 180 s.
    elected_after: Result<Duration, usize>,
    rss_per_election: f64,
    per_sec: BTreeMap<String, f64>,
    watches_opened: u64,
    cpu_per_renewal: Duration,
    cpu_share: f64,
    max_leaders: usize,
}

/// The candidates' timings.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Timing {
    /// client-go's 15 s / 10 s / 2 s, renewing every 5 s (request timeout 4 s).
    ClientGoRenewThird,
    /// client-go's, renewing every retry period.
    ClientGo,
    /// `Config::fast` (2 s / 1.5 s / 250 ms), renewing every 667 ms: the smoke run.
    FastRenewThird,
}

fn config(id: &str, seed: u64, timing: Timing) -> Config {
    match timing {
        Timing::ClientGoRenewThird => {
            let mut c = Config::client_go(id).renew_interval(Duration::from_secs(5));
            c.request_timeout = Duration::from_secs(4);
            c.seed(seed)
        }
        Timing::ClientGo => Config::client_go(id).seed(seed),
        Timing::FastRenewThird => Config::fast(id)
            .renew_interval(Duration::from_millis(667))
            .seed(seed),
    }
}

async fn run(
    emu: &mut Backend,
    elections: usize,
    mode: Mode,
    window: Duration,
    timing: Timing,
) -> Row {
    let rt = TokioRuntime::current().expect("inside tokio");
    let tag = format!("{mode:?}-{elections}").to_lowercase();
    let namespace = emu.namespace().to_owned();
    let label = [("bench".to_owned(), tag.clone())];
    let rss0 = rss_bytes();
    let mut hubs: Vec<SharedWatch<Lease>> = Vec::new();
    let mut tasks = Vec::new();
    let clients: Vec<(String, kube::Client)> = (0..3)
        .map(|p| {
            let token = format!("{tag}-p{p}");
            let client = lock_kube::lock_client(emu.kube_config(&token)).expect("client");
            (token, client)
        })
        .collect();
    if mode == Mode::Shared {
        for (_, client) in &clients {
            let hub = LeaseLock::shared_watch(
                client.clone(),
                &namespace,
                label.clone(),
                WatchConfig::default(),
            );
            tasks.push(tokio::spawn(hub.run()));
            hubs.push(hub);
        }
    }
    let spawned = Instant::now();
    let mut handles: Vec<Vec<Handle>> = Vec::with_capacity(elections);
    for e in 0..elections {
        let name = format!("{tag}-{e}");
        let mut group = Vec::with_capacity(3);
        for (p, (token, client)) in clients.iter().enumerate() {
            let mut b = LeaseLock::builder(client.clone(), &namespace, &name)
                .label("bench", tag.clone())
                .without_events();
            if let Some(hub) = hubs.get(p) {
                b = b.shared_watch(hub);
            }
            let lock = b.build().expect("valid names");
            let seed = (e * 3 + p) as u64 + 1;
            let h = Builder::new(lock, config(token, seed, timing))
                .spawn(rt.clone())
                .expect("valid config");
            group.push(h);
        }
        handles.push(group);
    }
    // Every election elected (sampled every 50 ms), at most one leader each; a
    // setup the server cannot keep up with is reported, not waited for forever.
    let mut max_leaders = 0;
    let elected_after = loop {
        let mut elected = 0;
        for g in &handles {
            let n = g.iter().filter(|h| h.is_leader()).count();
            max_leaders = max_leaders.max(n);
            elected += usize::from(n == 1);
        }
        if elected == elections {
            break Ok(spawned.elapsed());
        }
        if spawned.elapsed() > Duration::from_secs(180) {
            break Err(elected);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let rss = rss_bytes().saturating_sub(rss0);
    // Past the start; then the window.
    tokio::time::sleep(Duration::from_secs(if timing == Timing::FastRenewThird {
        1
    } else {
        3
    }))
    .await;
    let opened = emu.counts().get("Watch").copied().unwrap_or(0);
    emu.reset();
    let server0 = emu.cpu_ticks();
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    while t0.elapsed() < window {
        for g in &handles {
            max_leaders = max_leaders.max(g.iter().filter(|h| h.is_leader()).count());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let cpu = cpu_time() - cpu0;
    let server1 = emu.cpu_ticks();
    let secs = t0.elapsed().as_secs_f64();
    let tck = clock_ticks_per_second() as f64;
    let server_cpu = server0
        .iter()
        .zip(&server1)
        .map(|(&(name, a), &(_, b))| (name, b.saturating_sub(a) as f64 / tck / secs * 60.0))
        .collect();
    let counts = emu.counts();
    let per_sec: BTreeMap<String, f64> = counts
        .iter()
        .map(|(v, n)| (v.clone(), *n as f64 / secs))
        .collect();
    let renewals = counts.get("Update").copied().unwrap_or(0).max(1);
    for g in handles {
        for h in g {
            h.abort();
        }
    }
    for t in tasks {
        t.abort();
    }
    Row {
        elections,
        mode,
        server_cpu,
        elected_after,
        rss_per_election: rss as f64 / elections as f64,
        per_sec,
        watches_opened: opened,
        cpu_per_renewal: cpu / renewals as u32,
        cpu_share: cpu.as_secs_f64() / secs,
        max_leaders,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--emulator") {
        return serve_emulator();
    }
    let quick = args.iter().any(|a| a == "--quick");
    let timing = if quick {
        Timing::FastRenewThird
    } else if args.iter().any(|a| a == "--renew-every-retry") {
        Timing::ClientGo
    } else {
        Timing::ClientGoRenewThird
    };
    let shared_only = args.iter().any(|a| a == "--shared-only");
    let window = Duration::from_secs(if quick { 3 } else { 30 });
    if args.iter().any(|a| a == "--row") {
        return row(&args, timing, window);
    }
    // `--servers`: the shared watch at 1, 100 and 1,000 elections on the
    // emulator and on a real kube-apiserver, row by row in turn, with the
    // server's own CPU time. The smoke run does a small one after its rows.
    let servers = args.iter().any(|a| a == "--servers");
    let mut plan: Vec<(usize, Mode, &str)> = if servers {
        Vec::new()
    } else if quick {
        vec![
            (100, Mode::PerLease, EMULATOR),
            (100, Mode::Shared, EMULATOR),
        ]
    } else {
        vec![
            (1_000, Mode::PerLease, EMULATOR),
            (1_000, Mode::Shared, EMULATOR),
            (10_000, Mode::Shared, EMULATOR),
        ]
    };
    plan.retain(|&(_, m, _)| !shared_only || m == Mode::Shared);
    if servers || quick {
        let sizes: &[usize] = if quick { &[10] } else { &[1, 100, 1_000] };
        for &e in sizes {
            plan.push((e, Mode::Shared, EMULATOR));
            plan.push((e, Mode::Shared, KUBE_APISERVER));
        }
    }
    println!(
        "{} elections x 3 processes on the API emulator (a child process){}, {}; window {} s",
        plan.iter()
            .map(|(e, _, _)| e.to_string())
            .collect::<Vec<_>>()
            .join("/"),
        if plan.iter().any(|p| p.2 == KUBE_APISERVER) {
            " or on kube-apiserver (test_kit::apiserver, with its etcd)"
        } else {
            ""
        },
        match timing {
            Timing::ClientGoRenewThird => "client-go timings, renew every 5 s",
            Timing::ClientGo => "client-go timings, renew every 2 s",
            Timing::FastRenewThird => "Config::fast, renew every 667 ms (QUICK smoke mode)",
        },
        window.as_secs()
    );
    println!(
        "{:>14} {:>9} {:>9} | {:>10} {:>12} | {:>8} {:>8} {:>8} {:>8} {:>8} | {:>8} | {:>10} {:>7} | {:>4} | server CPU s/min",
        "server",
        "elections",
        "mode",
        "elected",
        "RSS/election",
        "get/s",
        "list/s",
        "watch/s",
        "update/s",
        "create/s",
        "watches",
        "CPU/renew",
        "CPU",
        "max"
    );
    for &(elections, mode, server) in &plan {
        // Each row in a fresh process (so that its RSS growth is its own), with a
        // fresh server.
        let status = Command::new(std::env::current_exe().expect("own path"))
            .args(args.iter().skip(1))
            .args([
                "--row",
                &elections.to_string(),
                &format!("{mode:?}"),
                server,
            ])
            .status()
            .expect("the row runs");
        assert!(status.success(), "row {elections} {mode:?} {server} failed");
    }
}

const EMULATOR: &str = "emulator";
const KUBE_APISERVER: &str = "kube-apiserver";

/// One row of the table, in this process: `--row E PerLease|Shared
/// emulator|kube-apiserver`.
fn row(args: &[String], timing: Timing, window: Duration) {
    let at = args.iter().position(|a| a == "--row").expect("--row");
    let elections: usize = args[at + 1].parse().expect("a number of elections");
    let mode = if args[at + 2] == "Shared" {
        Mode::Shared
    } else {
        Mode::PerLease
    };
    let mut server = if args.get(at + 3).map(String::as_str) == Some(KUBE_APISERVER) {
        match ApiServer::start() {
            Ok(api) => {
                let namespace = Server::namespace(&api);
                Backend::ApiServer {
                    api: Box::new(api),
                    namespace,
                    since: SystemTime::UNIX_EPOCH,
                }
            }
            Err(e) => {
                // CI builds the server; elsewhere this row is skipped, loudly.
                eprintln!("!!!!!!!! SKIPPED: {elections} elections on kube-apiserver: {e}");
                return;
            }
        }
    } else {
        Backend::Emulator(EmulatorProcess::start())
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let row = rt.block_on(run(&mut server, elections, mode, window, timing));
    rt.shutdown_timeout(Duration::from_secs(5));
    let rate = |v: &str| row.per_sec.get(v).copied().unwrap_or(0.0);
    println!(
        "{:>14} {:>9} {:>9} | {:>10} {:>9.1} KiB | {:>8.1} {:>8.2} {:>8.2} {:>8.1} {:>8.2} | {:>8} | {:>7.1} µs {:>6.1}% | {:>4} | {}",
        server.name(),
        row.elections,
        format!("{:?}", row.mode),
        match row.elected_after {
            Ok(d) => format!("{:.1} s", d.as_secs_f64()),
            Err(n) => format!("{n} only"),
        },
        row.rss_per_election / 1024.0,
        rate("Get"),
        rate("List"),
        rate("Watch"),
        rate("Update"),
        rate("Create"),
        row.watches_opened,
        row.cpu_per_renewal.as_secs_f64() * 1e6,
        row.cpu_share * 100.0,
        row.max_leaders,
        row.server_cpu
            .iter()
            .map(|(name, s)| format!("{name} {s:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(row.max_leaders, 1, "never two leaders in one election");
}
