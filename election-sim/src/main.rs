//! Replays simulation seeds: `election-sim --seed N [--trace]`, or a range with
//! `--seeds FROM..TO`.

use std::process::ExitCode;

use election_sim::{SimOptions, run_seed};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let trace = args.iter().any(|a| a == "--trace");
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
    let mut failed = 0;
    for seed in range.clone() {
        let mut opts = SimOptions::for_seed(seed);
        opts.trace = trace;
        println!("seed {seed}: {opts:?}");
        match run_seed(seed, opts) {
            Ok(r) => println!(
                "seed {seed}: ok, {} leaderships, recovery {:?} ns, {} steps",
                r.starts, r.recovery, r.steps
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

fn usage() -> ExitCode {
    eprintln!("usage: election-sim --seed N [--trace] | --seeds FROM..TO");
    ExitCode::from(2)
}
