//! Replays simulation seeds: `election-sim --seed N [--trace]`, or a range with
//! `--seeds FROM..TO`. The options a test may change from what the seed draws are
//! flags too, as a failure's printed replay command gives them: `--faults
//! true|false`, `--clock-ratio R`, `--write-mode cas|blind`, `--coordinated
//! true|false`, `--lease-factors K,K,..` (one multiplier per node, each >= 1),
//! `--fleet-lease true|false` (the nodes are told the fleet's longest lease).
//! `--mix-leases` gives every seed the mixed lease lengths it would draw
//! ([`SimOptions::mix_leases`]). `--digest` prints, for each seed, a hash of its
//! whole trace (every call, answer, watch event, event and fault, with its
//! instant) instead of the trace: two builds that print the same digests ran
//! every seed identically (a refactor of the core that must not change what it
//! does is checked so).

use std::process::ExitCode;

use election_sim::{SimOptions, World, WriteMode, run_seed};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let trace = args.iter().any(|a| a == "--trace");
    let digest = args.iter().any(|a| a == "--digest");
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let range = if let Some(s) = value("--seed") {
        match s.parse::<u64>() {
            Ok(n) => n..n + 1,
            Err(_) => return usage(),
        }
    } else if let Some(r) = value("--seeds") {
        let Some((a, b)) = r.split_once("..") else {
            return usage();
        };
        match (a.parse(), b.parse()) {
            (Ok(a), Ok(b)) => a..b,
            _ => return usage(),
        }
    } else {
        return usage();
    };
    let faults = match value("--faults").map(|s| s.parse::<bool>()) {
        None => None,
        Some(Ok(b)) => Some(b),
        Some(Err(_)) => return usage(),
    };
    let clock_ratio = match value("--clock-ratio").map(|s| s.parse::<f64>()) {
        None => None,
        Some(Ok(r)) if r.is_finite() && r >= 1.0 => Some(r),
        Some(_) => return usage(),
    };
    let write_mode = match value("--write-mode").map(String::as_str) {
        None => None,
        Some("cas") => Some(WriteMode::CompareAndSwap),
        Some("blind") => Some(WriteMode::Blind),
        Some(_) => return usage(),
    };
    let coordinated = match value("--coordinated").map(|s| s.parse::<bool>()) {
        None => None,
        Some(Ok(b)) => Some(b),
        Some(Err(_)) => return usage(),
    };
    let lease_factors = match value("--lease-factors") {
        None => None,
        Some(s) => match s
            .split(',')
            .map(|k| k.parse::<u32>().ok().filter(|&k| k >= 1))
            .collect::<Option<Vec<u32>>>()
        {
            Some(f) => Some(f),
            None => return usage(),
        },
    };
    let fleet_lease = match value("--fleet-lease").map(|s| s.parse::<bool>()) {
        None => None,
        Some(Ok(b)) => Some(b),
        Some(Err(_)) => return usage(),
    };
    let mix_leases = args.iter().any(|a| a == "--mix-leases");
    let mut failed = 0;
    for seed in range.clone() {
        let mut opts = SimOptions::for_seed(seed);
        opts.trace = trace;
        if let Some(b) = faults {
            opts.faults = b;
        }
        if let Some(r) = clock_ratio {
            opts.clock_ratio = r;
        }
        if let Some(m) = write_mode {
            opts.write_mode = m;
        }
        if let Some(b) = coordinated {
            opts.set_coordinated(b);
        }
        if mix_leases {
            opts.mix_leases(seed);
        }
        if let Some(b) = fleet_lease {
            opts.fleet_lease = b;
        }
        if let Some(f) = &lease_factors {
            if f.len() != opts.nodes {
                eprintln!(
                    "seed {seed} has {} nodes: give one lease factor each",
                    opts.nodes
                );
                return usage();
            }
            opts.set_lease_factors(f.clone());
        }
        if digest {
            opts.trace = true;
            let (outcome, trace) = match World::new(seed, opts).run() {
                Ok((r, t)) => (
                    format!("ok, {} leaderships, {} steps", r.starts, r.steps),
                    t,
                ),
                Err((v, t)) => {
                    failed += 1;
                    (format!("failed: {v}"), t)
                }
            };
            let trace = trace.unwrap_or_default();
            println!(
                "seed {seed}: digest {:016x}, {} trace lines, {outcome}",
                fnv1a(trace.as_bytes()),
                trace.lines().count()
            );
            continue;
        }
        println!("seed {seed}: {opts:?}");
        match run_seed(seed, opts) {
            Ok(r) => println!(
                "seed {seed}: ok, {} leaderships, recovery {:?} ns (bound {} ns), {} steps, \
                 hidden holders: {} deletions, {} assignments",
                r.starts, r.recovery, r.bound, r.steps, r.hidden_deletions, r.hidden_assignments
            ),
            Err(f) => {
                if let Some(t) = &f.trace {
                    println!("{t}");
                }
                println!("{f}");
                failed += 1;
            }
        }
    }
    println!("{} passed, {failed} failed", range.count() - failed);
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The 64-bit FNV-1a hash of `bytes` (stable across builds and platforms).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: election-sim (--seed N | --seeds FROM..TO) [--trace | --digest] [--faults true|false] \
         [--clock-ratio R (>= 1)] [--write-mode cas|blind] [--coordinated true|false] \
         [--lease-factors K,K,.. (one per node, each >= 1) | --mix-leases] \
         [--fleet-lease true|false]"
    );
    ExitCode::from(2)
}
