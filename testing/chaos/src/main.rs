//! A chaos soak: real candidate processes of this library contend for one
//! Lease on the API emulator, or on kube-apiserver and etcd, while seeded
//! faults hit them, and the run reports overlap, leaderless time and
//! hand-over and failover latencies.
//!
//! ```text
//! cargo run --release -p chaos -- --minutes 10 --seed 42
//! cargo run -p chaos -- --quick --seed 1          # 60 s, for CI
//! cargo run -p chaos -- --quick --seed 1 --server kube-apiserver
//! ```
//!
//! `testing/chaos/README.md` says how to run it and how to read its report;
//! what follows is how it works.
//!
//! Flags: `--minutes N` or `--seconds N` (default 60 s), `--quick` (60 s),
//! `--seed S` (default: drawn and printed), `--candidates K` (default 4),
//! `--no-faketime`, `--mix` (the quick start mixed in, below), `--verbose`
//! (every term and latency sample too), `--server emulator|kube-apiserver`
//! (below; default `emulator`). Exit status: 0 when the run passed, 1
//! on an overlap, a start no committed write backs or a late stop the machine
//! does not explain (below), 2 when it could not run.
//!
//! **Shape.** The emulator runs in this process (`kube_emulator::Emulator` on
//! 127.0.0.1, a free port), for its per-client fault injection and its write
//! history. Each candidate gets a kubeconfig with its own bearer token (its
//! identity), so a fault can target one candidate; kubectl gets one too, but
//! sends no token over plain HTTP, and the emulator knows it by its User-Agent.
//! The candidates are the project's own binaries, built at startup (`cargo
//! build [--release] -p leader-elector`, the harness's profile) and started
//! from that profile's target directory: `leader-elector serve` sidecars, and
//! every third one `leader-elector run -- sleep …` (a child only while
//! leading), with `Config::fast`'s timings (lease 2 s, renew deadline 1.5 s,
//! retry 250 ms). The quick start (`kube-elector/examples/quickstart.rs`) has
//! client-go's timings and the Lease `quickstart`, both fixed; with `--mix`
//! every third candidate is the quick start, and the sidecars take
//! `--lease quickstart` and client-go's timings, with the fault schedule's
//! durations scaled to them (a run needs minutes to see many failovers then).
//! The election-controller examples run their replicas and an emulator in one
//! process of their own, so they cannot be candidates here.
//!
//! **On kube-apiserver** (`--server kube-apiserver`, `src/server.rs`):
//! `test_kit::apiserver` starts kube-apiserver and etcd of the pinned release
//! (`bash testing/k8s-server/build.sh` builds them; without them the run
//! cannot start, exit 2), the Lease lives in the fixture's testers'
//! namespace, and each candidate is a ServiceAccount of its own whose
//! kubeconfig names a TCP proxy of its own (`test_kit::proxy`) in front of the
//! server: its network faults are the proxy's (every connection reset, every
//! byte held, a delay each way, answers held and their connections reset:
//! answers lost after the server acted). A TCP proxy cannot forge a 429 or an
//! error after a commit under TLS; the schedule draws the control plane's own
//! faults in their place: kube-apiserver restarted (every connection and
//! watch dropped, the watch cache rebuilt), etcd restarted on its data, each
//! after 0 to 3 s down, and etcd SIGSTOPped for 0.5 to 4 s (every client's
//! writes wait at once). The audit log, which keeps the Lease's bodies on this
//! server, gives the committed writes (who, the holder written, stamped when
//! the server answered) and the request counts.
//!
//! **Faults** (one every 1.5 to 4 s, drawn from the seed, each healed after a
//! drawn time): a partition of one candidate (every request reset, or left
//! hanging), latency on its requests, 429 with `Retry-After`, writes committed
//! then answered 500 or 504, writes committed and their answers lost; SIGKILL
//! (mostly of the leader) and SIGTERM (graceful), each followed by a restart
//! after a drawn delay; SIGSTOP of the leader for 0.5 to 4 s, then SIGCONT; and
//! kubectl (`/usr/bin/kubectl`) annotating, labelling, emptying or changing the
//! holder, shortening the duration, or deleting the Lease. Edits never forge a
//! release (an empty holder with a 1 s duration), the one edit the design says
//! may evict a live leader (design §4 "Foreign edits and twins").
//!
//! **Clock skew.** With faketime (Debian's `faketime`, installed with `bash
//! .ci/install faketime` when missing and running as root; else the run fails
//! unless `--no-faketime`), a probe first runs one sidecar with libfaketime
//! preloaded and `FAKETIME="+0 x2"`, and times its strict lock delay, to check
//! that faketime reaches the election's clock (the driver reads it through
//! libc for this reason); if it does not, the run fails. Odd candidates then
//! run with `FAKETIME="+0 xR"`, `R` drawn so that any two rates differ by less than 0.9 ×
//! `Config::tolerated_clock_ratio`.
//!
//! **Measurement**, all on this process's monotonic clock: leadership
//! intervals come from each candidate's `started leading` / `stopped leading`
//! lines, stamped on receipt by one thread that reads every pipe (so stamps
//! keep the order in which the processes wrote); the rules that end an
//! interval are in `src/measure.rs` and printed with the figures. The
//! emulator's committed Lease writes (holder, time) back every start (a write
//! by that candidate naming it, since its previous start) and appear in the
//! trace of any overlap. An overlap, or a start without such a write, prints
//! the seed and a replay command, and the run exits 1. The CPU each candidate
//! got is sampled every 100 ms from the kernel's scheduler statistics of its
//! threads (`src/sched.rs`): the trace of an overlap gives what each term's
//! process ran and waited for a CPU after its last committed write, and the
//! `late stops` line counts terms whose stop for the renew deadline came over
//! 250 ms after it was due, with what the latest one ran and waited (a starved
//! process, one that slept, and one that worked look alike in the log lines)
//! and the lines it printed since its last committed write: candidates log the
//! driver's lock calls and their answers (`election_driver=debug`), so a
//! process that kept sending shows apart from a silent one. One canary thread
//! pinned to each CPU naps 5 ms at a time and notes every wakeup over 100 ms
//! late (`src/canary.rs`), with how long it waited for its CPU while
//! runnable and how much of it the host took (steal): the `stalls` line, and
//! the same for the window of an overlap or of a late stop, tell a stalled
//! machine from a candidate alone. A late stop is the machine's when one
//! thread of its process waited for a CPU, or a canary stalled, as long as the
//! stop was late (beyond the 250 ms): kept from a CPU it was paused like a
//! SIGSTOPped leader, and its term ends at its deadline's bound
//! (docs/faults.md N5). Any other late stop fails the run.
//!
//! **Replay.** One seed gives one fault schedule (times, kinds, durations,
//! fallback targets), and a longer run extends a shorter one's. Which process
//! leads when an event fires, and everything that follows from timing, may
//! differ between two runs of one seed.
//!
//! Every child is in a process group of its own, started under `setpriv
//! --pdeathsig KILL` when installed (so it dies with the harness even on
//! SIGKILL), and killed and reaped when its handle is dropped (every exit path,
//! a panic included); the temporary directory (kubeconfigs) is removed.

// A dependency the harness does not use is an error (in CI's clippy too).
#![cfg_attr(not(test), deny(unused_crate_dependencies))]

mod args;
mod canary;
mod history;
mod inject;
mod kubectl;
mod logs;
mod measure;
mod plan;
mod procs;
mod report;
mod run;
mod sched;
mod server;
mod skew;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use election_core::{Config, SplitMix64};
use tokio::signal::unix::{SignalKind, signal};

use crate::procs::{Kind, Spec, TempDir, Timings};
use crate::server::{Kind as ServerKind, Server};

#[tokio::main]
async fn main() -> ExitCode {
    let args = match args::parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return if message.starts_with("usage:") {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            };
        }
    };
    match soak(&args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("chaos: {e}");
            ExitCode::from(2)
        }
    }
}

fn timings(config: &Config) -> Timings {
    Timings {
        lease: config.lease_duration,
        renew: config.renew_deadline,
        retry: config.retry_period,
    }
}

/// The command that replays this run's schedule.
fn replay(args: &args::Args) -> String {
    let secs = args.run.as_secs_f64();
    let secs = if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs:.3}")
    };
    format!(
        "cargo run{} -p chaos -- --seconds {secs} --seed {} --candidates {}{}{}{}{}",
        if procs::release() { " --release" } else { "" },
        args.seed,
        args.candidates,
        if args.client_go > 0 {
            format!(" --client-go {}", args.client_go)
        } else {
            String::new()
        },
        if args.server == ServerKind::Emulator {
            String::new()
        } else {
            format!(" --server {}", args.server.flag())
        },
        if args.mix { " --mix" } else { "" },
        if args.no_faketime {
            " --no-faketime"
        } else {
            ""
        },
    )
}

/// Rates for faketime: odd slots get one when skew is on. Drawn from a stream
/// of their own, so the fault schedule is the same either way.
fn rates(seed: u64, candidates: usize, skew: bool, tolerated: f64) -> Vec<Option<f64>> {
    let mut rng = SplitMix64::new(seed ^ 0x5eed_c10c_4a7e_0000);
    // Any two rates in [1/q, q] differ by a ratio of at most q², kept under
    // 0.9 × the tolerated ratio (and 1, the unskewed candidates, lies inside).
    let q = (0.9 * tolerated).max(1.0).sqrt();
    (0..candidates)
        .map(|i| {
            let u = rng.unit();
            (skew && i % 2 == 1).then(|| q.powf(2.0 * u - 1.0))
        })
        .collect()
}

async fn soak(args: &args::Args) -> Result<bool, String> {
    let profile = if procs::release() { "release" } else { "debug" };
    eprintln!(
        "chaos: building the candidates ({profile}: cargo build -p leader-elector{})",
        if args.mix {
            ", -p kube-elector --example quickstart"
        } else {
            ""
        }
    );
    let began = Instant::now();
    if !args.no_faketime {
        skew::ensure_faketime()?;
    }
    let bins = procs::build(args.mix, args.client_go > 0)?;
    eprintln!("chaos: built in {:.1} s", began.elapsed().as_secs_f64());
    if procs::which("kubectl").is_none() {
        return Err("kubectl is not on PATH (the kubectl faults run the real one)".into());
    }
    let dir = TempDir::new().map_err(|e| format!("cannot make a temporary directory: {e}"))?;
    if args.server == ServerKind::KubeApiserver {
        eprintln!("chaos: starting kube-apiserver and etcd");
    }
    let server = Server::start(args.server).await?;
    let (reader, msgs) = logs::Reader::start();

    let fast = timings(&Config::fast("x"));
    let (t, lease, scale) = if args.mix {
        let cg = timings(&Config::client_go("x"));
        (
            cg,
            "quickstart",
            cg.lease.as_secs_f64() / fast.lease.as_secs_f64(),
        )
    } else {
        (fast, "chaos", 1.0)
    };
    let tolerated = t.lease.as_secs_f64() / t.renew.as_secs_f64();

    let skew_line = if args.no_faketime {
        None
    } else {
        eprintln!("chaos: probing faketime (a few seconds)");
        let began = Instant::now();
        let line = skew::probe(&server, &dir.0, &bins, &reader, &msgs, fast).await?;
        eprintln!("chaos: probed in {:.1} s", began.elapsed().as_secs_f64());
        Some(line)
    };
    let skew_on = skew_line.is_some();
    // The last K slots are client-go's: Go reads its clocks without libc,
    // so faketime cannot skew them.
    let ours = args.candidates - args.client_go;
    let mut rates = rates(args.seed, args.candidates, skew_on, tolerated);
    for rate in &mut rates[ours..] {
        *rate = None;
    }
    let set: Vec<f64> = rates.iter().map(|r| r.unwrap_or(1.0)).collect();
    let max_ratio =
        set.iter().copied().fold(1.0, f64::max) / set.iter().copied().fold(1.0, f64::min);

    let mut slots = Vec::new();
    for (i, rate) in rates.iter().enumerate() {
        let kind = match i % 3 {
            _ if i >= ours => Kind::ClientGo,
            1 if args.mix => Kind::Quickstart,
            2 => Kind::Run,
            _ => Kind::Serve,
        };
        let identity = if kind == Kind::ClientGo {
            format!("client-go-{i}")
        } else {
            format!("cand-{i}")
        };
        let kubeconfig = dir.0.join(format!("{identity}.kubeconfig"));
        server.candidate_kubeconfig(&identity, &kubeconfig).await?;
        slots.push(run::Slot::new(Spec {
            identity,
            kind,
            kubeconfig,
            lease: lease.to_owned(),
            namespace: server.namespace().to_owned(),
            timings: t,
            rate: *rate,
        }));
    }
    let kubectl_config = dir.0.join("kubectl.kubeconfig");
    server.kubectl_kubeconfig(&kubectl_config)?;

    println!(
        "chaos soak: {:.1} s, seed {}{}, {} candidates on Lease {}/{lease} on {}, {profile} build",
        args.run.as_secs_f64(),
        args.seed,
        if args.seed_drawn { " (drawn)" } else { "" },
        args.candidates,
        server.namespace(),
        server.name()
    );
    for s in &slots {
        println!(
            "  {:<8} {}{}",
            s.spec.identity,
            s.spec.kind.name(),
            s.spec
                .rate
                .map_or(String::new(), |r| format!(" under faketime x{r:.4}"))
        );
    }
    println!(
        "  timings: lease {} s, renew deadline {:.3} s, retry {:.3} s; tolerated clock ratio {:.3}; max clock ratio here {:.3}",
        t.lease.as_secs(),
        t.renew.as_secs_f64(),
        t.retry.as_secs_f64(),
        tolerated,
        max_ratio
    );
    println!(
        "  clock skew: {}",
        skew_line
            .as_ref()
            .map_or("left out (--no-faketime)", String::as_str)
    );
    println!(
        "  kubectl: {} ({})",
        procs::which("kubectl").map_or_else(String::new, |p| p.display().to_string()),
        match args.server {
            ServerKind::Emulator =>
                "known to the emulator by its User-Agent: no token over plain HTTP",
            ServerKind::KubeApiserver => "the user `kubectl`, a static token",
        }
    );
    if args.server == ServerKind::KubeApiserver {
        println!(
            "  each candidate: a ServiceAccount of its own, through a TCP proxy of its own (its network faults)"
        );
    }
    if bins.setpriv.is_none() {
        println!("  setpriv not found: children would outlive a SIGKILL of the harness");
    }
    println!("  replay: {}", replay(args));
    println!("timeline (seconds since the start; a fault on \"the leader\" names it):");

    server.reset_counts();
    let schedule = plan::schedule(args.seed, args.run, args.candidates, scale, args.server);
    let mut run = run::Run::new(
        &server,
        &bins,
        &reader,
        &msgs,
        lease.to_owned(),
        t,
        kubectl_config,
        slots,
    );
    let end = run.t0 + args.run;
    let mut next = 0;
    let mut collected = Instant::now();
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut interrupted = false;
    loop {
        let now = Instant::now();
        run.drain();
        run.housekeeping(now);
        while next < schedule.len() && run.t0 + schedule[next].at <= now {
            run.fire(&schedule[next], now);
            next += 1;
        }
        if now >= end {
            break;
        }
        if now - collected > Duration::from_secs(5) {
            run.history.collect(&server);
            collected = now;
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(10)) => {}
            _ = &mut ctrl_c => { interrupted = true; break; }
            _ = term.recv() => { interrupted = true; break; }
        }
    }
    let run_end = Instant::now().min(end);
    run.drain();
    run.history.collect(&server);
    let counts = server.counts();
    if interrupted {
        println!(
            "interrupted at {:.3} s: measuring up to here",
            run.t(run_end)
        );
    }
    let began = Instant::now();
    run.shut_down().await;
    eprintln!("chaos: shut down in {:.1} s", began.elapsed().as_secs_f64());
    run.drain();
    let cx = report::Context {
        timings: t,
        max_ratio,
        run_end,
        counts,
        server: args.server,
        replay: replay(args),
        seed: args.seed,
        verbose: args.verbose,
    };
    let pass = report::print(&run, &cx);
    drop(run);
    reader.finish();
    Ok(pass)
}
