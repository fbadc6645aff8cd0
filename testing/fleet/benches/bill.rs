//! The control plane's bill: what `N` elections of three candidates cost a real
//! kube-apiserver and its etcd, client-go against kube-elector, in one run on
//! one machine, each row on a fresh server (`test_kit::apiserver`).
//!
//! Three candidate processes per row (three replicas of one controller binary,
//! each its own ServiceAccount), each running `N` elections on the Leases
//! `bill-0` … `bill-(N-1)`: the client-go peer's `--elections N` (`N`
//! `LeaderElector`s, each on a `LeaseLock` from `NewFromKubeconfig`) or
//! `elector-peer --elections N` (`N` candidates on one client, followers
//! watching each Lease, or with `--shared-watch` one watch per process).
//! client-go's default timings for both: lease 15 s, renew deadline 10 s, retry
//! 2 s, the leader renewing every retry period (kube-elector's default too).
//!
//! Per row: the time from the spawn until every election has a leader; then,
//! after a settling pause, a window in which it measures kube-apiserver's and
//! etcd's CPU (`utime + stime` of `/proc/<pid>/stat`, seconds per minute),
//! the requests on Leases per minute by verb (the audit log), the candidates'
//! CPU and each candidate process's resident memory at the end. Every
//! election is judged from the candidates' lines: never two processes leading
//! one Lease at once.
//!
//! ```text
//! cargo bench -p fleet --bench bill [-- --sizes 100,1000 --window 60
//!     --series client-go,per-lease,shared --timings 15000,10000,2000
//!     --renew-ms 5000 --request-timeout-ms 4000 --settle 15 --tsv PATH]
//! ```
//!
//! `--tsv PATH` (relative to `testing/fleet`, where cargo runs benchmarks)
//! appends one line per row (the header first when the file is
//! new), which `cargo run -p fleet --bin plots` draws (BENCHMARKS.md).
//! `--timings` sets both libraries' lease, renew deadline and retry period
//! (ms); `--renew-ms` kube-elector's renew interval (client-go has none) and
//! `--request-timeout-ms` its request timeout with it;
//! `--settle` the pause between the last election and the window (a lease by
//! default; CI's smoke run, `-- --sizes 10 --window 2 --settle 1`, is short).
//! Needs the built kube-apiserver and client-go peer (`bash
//! testing/k8s-server/build.sh`).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use fleet::harness::{client_go_peer, flag};
use fleet::line::{Event, Line, mono_now};
use test_kit::apiserver::{ApiServer, Server, TESTERS_NAMESPACE};
use test_kit::figures::{clock_ticks_per_second, process_cpu_ticks, process_rss_bytes};

/// kube-elector's peer, built by cargo for this benchmark.
const ELECTOR_PEER: &str = env!("CARGO_BIN_EXE_elector-peer");

/// The Leases' prefix.
const LEASE: &str = "bill";

/// client-go's defaults: lease, renew deadline, retry period (ms).
const TIMINGS_MS: (u64, u64, u64) = (15_000, 10_000, 2_000);

/// What every row of a run shares.
struct Plan {
    /// Lease, renew deadline, retry period (ms), for both libraries.
    timings_ms: (u64, u64, u64),
    /// kube-elector's renew interval (default: the retry period).
    renew_ms: Option<u64>,
    /// kube-elector's request timeout with `renew_ms` (default: client-go's,
    /// half the renew deadline, or less so that a renewal and its request fit
    /// the renew deadline).
    request_timeout_ms: Option<u64>,
    /// From the last election to the window.
    settle: Duration,
    window: Duration,
}

impl Plan {
    /// How often a leader of `series` renews (ms).
    fn renews_every(&self, series: Series) -> u64 {
        match (series, self.renew_ms) {
            (Series::PerLease | Series::Shared, Some(ms)) => ms,
            _ => self.timings_ms.2,
        }
    }
}

/// How long every election may take to have its leader.
const ELECT_WITHIN: Duration = Duration::from_secs(300);

/// The candidates of a row.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Series {
    /// client-go's `LeaderElector`s, followers polling.
    ClientGo,
    /// kube-elector, a watch per Lease per follower.
    PerLease,
    /// kube-elector, one shared watch per process.
    Shared,
}

impl Series {
    const ALL: [Series; 3] = [Series::ClientGo, Series::PerLease, Series::Shared];

    fn name(self) -> &'static str {
        match self {
            Series::ClientGo => "client-go",
            Series::PerLease => "per-lease",
            Series::Shared => "shared",
        }
    }

    /// The identity (and ServiceAccount) of its candidate process `p`.
    fn process(self, p: usize) -> String {
        format!("{}{p}", &self.name()[..1])
    }

    /// The candidate process's command for the identity `id`.
    fn command(
        self,
        id: &str,
        namespace: &str,
        kubeconfig: &Path,
        n: usize,
        plan: &Plan,
    ) -> Command {
        let mut cmd = Command::new(match self {
            Series::ClientGo => client_go_peer(),
            Series::PerLease | Series::Shared => PathBuf::from(ELECTOR_PEER),
        });
        let (lease, renew, retry) = plan.timings_ms;
        cmd.args(["--id", id, "--lease", LEASE, "--namespace", namespace])
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--lease-duration-ms", &lease.to_string()])
            .args(["--renew-deadline-ms", &renew.to_string()])
            .args(["--retry-period-ms", &retry.to_string()])
            .args(["--elections", &n.to_string()]);
        if self == Series::Shared {
            cmd.arg("--shared-watch");
        }
        if let (Some(ms), true) = (plan.renew_ms, self != Series::ClientGo) {
            let timeout = plan
                .request_timeout_ms
                .unwrap_or_else(|| (renew / 2).min(renew.saturating_sub(ms + 1_000)));
            cmd.args(["--renew-interval-ms", &ms.to_string()])
                .args(["--request-timeout-ms", &timeout.to_string()]);
        }
        cmd
    }
}

/// Who led which Lease when, from the candidates' lines.
#[derive(Default)]
struct Leaders {
    /// Per Lease: its terms, (process, from, to), `CLOCK_MONOTONIC` ns.
    terms: BTreeMap<String, Vec<(String, u64, Option<u64>)>>,
    /// Leases with a term open now.
    elected: usize,
    /// The processes that printed `started`.
    started: usize,
}

impl Leaders {
    /// Takes one line (`fleet::line`): `<lease>/<id>` `leading` or `stopped`,
    /// or `<id>` `started` or `exit`.
    fn take(&mut self, line: &str) {
        let Ok(Line {
            mono,
            identity,
            event,
            ..
        }) = Line::parse(line)
        else {
            return;
        };
        if event == Event::Started {
            self.started += 1;
            return;
        }
        let Some((lease, id)) = identity.split_once('/') else {
            return;
        };
        let terms = self.terms.entry(lease.to_owned()).or_default();
        let open = |terms: &[(String, u64, Option<u64>)]| terms.iter().any(|t| t.2.is_none());
        let was = open(terms);
        match event {
            Event::Leading => terms.push((id.to_owned(), mono, None)),
            Event::Stopped => {
                if let Some(t) = terms.iter_mut().rev().find(|t| t.0 == id && t.2.is_none()) {
                    t.2 = Some(mono);
                }
            }
            _ => return,
        }
        match (was, open(terms)) {
            (false, true) => self.elected += 1,
            (true, false) => self.elected -= 1,
            _ => {}
        }
    }

    /// Terms of two processes on one Lease that overlap in time (a term still
    /// open runs to the end): (Lease, one, the other).
    fn overlaps(&self) -> Vec<(String, String, String)> {
        let mut found = Vec::new();
        for (lease, terms) in &self.terms {
            for (i, (a, a0, a1)) in terms.iter().enumerate() {
                for (b, b0, b1) in &terms[i + 1..] {
                    if a != b && a0 < &b1.unwrap_or(u64::MAX) && b0 < &a1.unwrap_or(u64::MAX) {
                        found.push((lease.clone(), a.clone(), b.clone()));
                    }
                }
            }
        }
        found
    }

    /// Terms that followed another process's term on their Lease (the rest
    /// followed the same process's own, or were the first).
    fn moved(&self) -> usize {
        self.terms
            .values()
            .map(|terms| {
                let mut by_start: Vec<_> = terms.iter().collect();
                by_start.sort_by_key(|t| t.1);
                by_start.windows(2).filter(|w| w[0].0 != w[1].0).count()
            })
            .sum()
    }

    /// Terms started in `[from, to)` (`CLOCK_MONOTONIC` ns): all of them
    /// without `from`.
    fn started(&self, from: u64, to: u64) -> usize {
        self.terms
            .values()
            .flatten()
            .filter(|t| (from..to).contains(&t.1))
            .count()
    }
}

/// One row's figures.
struct Row {
    series: Series,
    elections: usize,
    elected_after: Result<Duration, usize>,
    /// kube-apiserver's and etcd's CPU, seconds per minute.
    apiserver_cpu: f64,
    etcd_cpu: f64,
    /// Requests on Leases per minute, by verb.
    per_minute: BTreeMap<String, f64>,
    /// The candidate processes' CPU, seconds per minute (all three).
    candidates_cpu: f64,
    /// Each candidate process's resident memory at the end of the window.
    rss: Vec<u64>,
    terms: usize,
    /// Terms that started in the window: leadership changes in steady state.
    window_terms: usize,
    /// Terms that followed another process's on their Lease.
    moved: usize,
    /// Terms of two processes on one Lease that overlapped.
    overlaps: usize,
}

fn main() {
    let sizes: Vec<usize> = flag("--sizes")
        .unwrap_or_else(|| "100,1000".into())
        .split(',')
        .map(|n| n.parse().expect("--sizes: counts separated by commas"))
        .collect();
    let series: Vec<Series> = match flag("--series") {
        None => Series::ALL.to_vec(),
        Some(names) => names
            .split(',')
            .map(|n| {
                *Series::ALL
                    .iter()
                    .find(|s| s.name() == n)
                    .unwrap_or_else(|| panic!("--series: {n}? client-go, per-lease or shared"))
            })
            .collect(),
    };
    let timings_ms = flag("--timings").map_or(TIMINGS_MS, |t| {
        let ms: Vec<u64> = t
            .split(',')
            .map(|v| v.parse().expect("--timings: LEASE,RENEW,RETRY in ms"))
            .collect();
        let [lease, renew, retry] = ms[..] else {
            panic!("--timings: LEASE,RENEW,RETRY in ms");
        };
        (lease, renew, retry)
    });
    let plan = Plan {
        timings_ms,
        renew_ms: flag("--renew-ms").map(|ms| ms.parse().expect("--renew-ms: ms")),
        request_timeout_ms: flag("--request-timeout-ms")
            .map(|ms| ms.parse().expect("--request-timeout-ms: ms")),
        settle: Duration::from_secs(flag("--settle").map_or(timings_ms.0 / 1000, |w| {
            w.parse().expect("--settle: seconds")
        })),
        window: Duration::from_secs(
            flag("--window").map_or(60, |w| w.parse().expect("--window: seconds")),
        ),
    };
    let tsv = flag("--tsv").map(PathBuf::from);
    println!(
        "{} elections x 3 candidate processes, timings {:?} ms{}, window {} s, a fresh kube-apiserver per row",
        sizes
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("/"),
        plan.timings_ms,
        plan.renew_ms.map_or(String::new(), |ms| format!(
            ", kube-elector renewing every {ms} ms"
        )),
        plan.window.as_secs()
    );
    println!(
        "{:>9} {:>9} | {:>10} | {:>14} {:>9} | {:>9} {:>9} {:>9} {:>9} | {:>11} | {:>24}",
        "elections",
        "series",
        "elected",
        "apiserver s/min",
        "etcd",
        "get/min",
        "update/min",
        "create/min",
        "watch/min",
        "cands s/min",
        "RSS per process (MiB)"
    );
    let mut rows = Vec::new();
    for &n in &sizes {
        for &s in &series {
            let row = run(s, n, &plan);
            print_row(&row);
            if let Some(path) = &tsv {
                append_tsv(path, &row, &plan);
            }
            rows.push(row);
        }
    }
    // Ratios kube-elector / client-go, row by row of one size.
    println!(
        "ratios to client-go at the same size (server CPU = kube-apiserver + etcd; requests = all verbs):"
    );
    for &n in &sizes {
        let Some(go) = rows
            .iter()
            .find(|r| r.elections == n && r.series == Series::ClientGo)
        else {
            continue;
        };
        for r in rows
            .iter()
            .filter(|r| r.elections == n && r.series != Series::ClientGo)
        {
            let total = |r: &Row| r.per_minute.values().sum::<f64>();
            println!(
                "  {n:>6} {:<9} server CPU {:.3}  requests {:.3}  memory per process {:.3}",
                r.series.name(),
                (r.apiserver_cpu + r.etcd_cpu) / (go.apiserver_cpu + go.etcd_cpu),
                total(r) / total(go),
                mean(&r.rss) / mean(&go.rss),
            );
        }
    }
}

fn mean(xs: &[u64]) -> f64 {
    xs.iter().sum::<u64>() as f64 / xs.len().max(1) as f64
}

fn print_row(r: &Row) {
    let m = |v: &str| r.per_minute.get(v).copied().unwrap_or(0.0);
    println!(
        "{:>9} {:>9} | {:>10} | {:>14.2} {:>9.2} | {:>9.0} {:>9.0} {:>9.0} {:>9.1} | {:>11.2} | {:>24} | terms {} ({} in the window, {} after another process's), overlaps {}",
        r.elections,
        r.series.name(),
        match r.elected_after {
            Ok(d) => format!("{:.1} s", d.as_secs_f64()),
            Err(n) => format!("{n} only"),
        },
        r.apiserver_cpu,
        r.etcd_cpu,
        m("get"),
        m("update"),
        m("create"),
        m("watch"),
        r.candidates_cpu,
        r.rss
            .iter()
            .map(|b| format!("{:.1}", *b as f64 / (1 << 20) as f64))
            .collect::<Vec<_>>()
            .join(" "),
        r.terms,
        r.window_terms,
        r.moved,
        r.overlaps,
    );
}

/// The TSV's columns.
const TSV_HEADER: &str = "series\telections\tlease_ms\trenew_ms\telected_s\tapiserver_cpu_s_per_min\tetcd_cpu_s_per_min\tget_per_min\tupdate_per_min\tcreate_per_min\tlist_per_min\twatch_per_min\tcandidates_cpu_s_per_min\trss_mib_per_process";

fn append_tsv(path: &Path, r: &Row, plan: &Plan) {
    let new = !path.is_file();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if new {
        writeln!(file, "{TSV_HEADER}").expect("written");
    }
    let m = |v: &str| r.per_minute.get(v).copied().unwrap_or(0.0);
    writeln!(
        file,
        "{}\t{}\t{}\t{}\t{}\t{:.3}\t{:.3}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.3}\t{:.1}",
        r.series.name(),
        r.elections,
        plan.timings_ms.0,
        plan.renews_every(r.series),
        r.elected_after
            .map_or(String::from("-"), |d| format!("{:.1}", d.as_secs_f64())),
        r.apiserver_cpu,
        r.etcd_cpu,
        m("get"),
        m("update"),
        m("create"),
        m("list"),
        m("watch"),
        r.candidates_cpu,
        mean(&r.rss) / (1 << 20) as f64,
    )
    .expect("written");
}

/// One row: a fresh server, three candidate processes of `series` with `n`
/// elections each, measured, judged and stopped.
fn run(series: Series, n: usize, plan: &Plan) -> Row {
    let api = ApiServer::start().unwrap_or_else(|e| panic!("kube-apiserver: {e}"));
    let namespace = api.namespace();
    let dir =
        std::env::temp_dir().join(format!("bill-{}-{}-{n}", std::process::id(), series.name()));
    std::fs::create_dir_all(&dir).expect("a directory for the kubeconfigs");
    let leaders = Arc::new(Mutex::new(Leaders::default()));
    let spawned = Instant::now();
    let mut children: Vec<Child> = (0..3)
        .map(|p| {
            let id = series.process(p);
            let kubeconfig = dir.join(format!("{id}.kubeconfig"));
            api.write_service_account_kubeconfig(TESTERS_NAMESPACE, &id, &kubeconfig);
            let stderr = std::fs::File::create(dir.join(format!("{id}.stderr"))).expect("a log");
            let mut child = series
                .command(&id, &namespace, &kubeconfig, n, plan)
                .stdout(Stdio::piped())
                .stderr(stderr)
                .spawn()
                .expect("a candidate process");
            let stdout = BufReader::new(child.stdout.take().expect("its stdout"));
            let leaders = Arc::clone(&leaders);
            std::thread::spawn(move || {
                for line in stdout.lines() {
                    let Ok(line) = line else { break };
                    leaders.lock().expect("not poisoned").take(&line);
                }
            });
            child
        })
        .collect();
    let elected_after = loop {
        for (p, child) in children.iter_mut().enumerate() {
            if let Ok(Some(status)) = child.try_wait() {
                let id = series.process(p);
                let said =
                    std::fs::read_to_string(dir.join(format!("{id}.stderr"))).unwrap_or_default();
                panic!(
                    "{} {n}: candidate process {id} exited ({status}): {said}",
                    series.name()
                );
            }
        }
        let elected = leaders.lock().expect("not poisoned").elected;
        if elected == n {
            break Ok(spawned.elapsed());
        }
        if spawned.elapsed() > ELECT_WITHIN {
            break Err(elected);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Past the start (a lease by default, so that every follower has seen its
    // leader and the first creates and events are behind), then the window.
    std::thread::sleep(plan.settle);
    let pids: Vec<u32> = children.iter().map(Child::id).collect();
    let cpu = |pid: u32| process_cpu_ticks(pid).unwrap_or_else(|| panic!("/proc/{pid}/stat"));
    let candidates = |pids: &[u32]| pids.iter().map(|&p| cpu(p)).sum::<u64>();
    let (api0, etcd0, cand0) = (cpu(api.pid()), cpu(api.etcd_pid()), candidates(&pids));
    let from = SystemTime::now();
    let (t0, mono0) = (Instant::now(), mono_now());
    std::thread::sleep(plan.window);
    let (api1, etcd1, cand1) = (cpu(api.pid()), cpu(api.etcd_pid()), candidates(&pids));
    let secs = t0.elapsed().as_secs_f64();
    let (to, mono1) = (SystemTime::now(), mono_now());
    let rss: Vec<u64> = pids
        .iter()
        .map(|&p| process_rss_bytes(p).unwrap_or_else(|| panic!("/proc/{p}/status")))
        .collect();
    // Answered requests reach the audit log a moment after they are received.
    std::thread::sleep(Duration::from_secs(1));
    let mut per_minute = BTreeMap::new();
    for ((_, verb), count) in api.audit_requests("leases", &namespace, from, to) {
        *per_minute.entry(verb).or_insert(0.0) += count as f64 * 60.0 / secs;
    }
    let per_min = |ticks: u64| ticks as f64 / clock_ticks_per_second() as f64 / secs * 60.0;
    // Stopped as a rollout stops them: SIGTERM, every process at once (each
    // releases what it holds), then SIGKILL after 30 s.
    for &pid in &pids {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).expect("a pid"),
            rustix::process::Signal::TERM,
        );
    }
    let stopping = Instant::now();
    for child in &mut children {
        while child.try_wait().ok().flatten().is_none()
            && stopping.elapsed() < Duration::from_secs(30)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    let leaders = leaders.lock().expect("not poisoned");
    let overlaps = leaders.overlaps();
    if !overlaps.is_empty() {
        println!(
            "!!!!!!!! {} {n}: two processes led one Lease at once, {} times: {:?}",
            series.name(),
            overlaps.len(),
            &overlaps[..overlaps.len().min(5)]
        );
    }
    // client-go's overlaps under an overloaded server are reported (the
    // fleet's tests show where client-go's leader works on past its lease);
    // kube-elector's are a failure.
    assert!(
        overlaps.is_empty() || series == Series::ClientGo,
        "kube-elector never has two leaders"
    );
    assert_eq!(leaders.started, 3, "every candidate process started");
    let _ = std::fs::remove_dir_all(&dir);
    Row {
        series,
        elections: n,
        elected_after,
        apiserver_cpu: per_min(api1 - api0),
        etcd_cpu: per_min(etcd1 - etcd0),
        per_minute,
        candidates_cpu: per_min(cand1 - cand0),
        rss,
        terms: leaders.started(0, u64::MAX),
        window_terms: leaders.started(mono0, mono1),
        moved: leaders.moved(),
        overlaps: overlaps.len(),
    }
}
