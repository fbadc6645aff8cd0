//! `election-check`: explores one preset and prints its figures, or the
//! shortest schedule that breaks a property.

use std::process::ExitCode;

use election_check::{Setup, World, explore};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(String::as_str)
    };
    let num = |name: &str, default: u64| arg(name).map_or(Ok(default), str::parse::<u64>);
    let (Ok(nodes), Ok(ticks), Ok(budget), Ok(cap)) = (
        num("--nodes", 2),
        num("--ticks", 8),
        num("--faults", 1),
        num("--max-states", 5_000_000),
    ) else {
        return usage();
    };
    let mut setup = Setup::classic(nodes as usize, ticks as u32, budget as u8);
    if args.iter().any(|a| a == "--watch") {
        setup = setup.watching();
    }
    if args.iter().any(|a| a == "--symmetry") {
        setup = setup.symmetric();
    }
    if let Some(skew) = arg("--coordinated") {
        let Ok(skew) = skew.parse::<i64>() else {
            return usage();
        };
        setup = setup.coordinated(skew);
    }
    if let Some(h) = arg("--held-by") {
        setup = setup.held_by(h);
    }
    if let Some(kinds) = arg("--kinds") {
        let mut f = election_check::Faults::NONE;
        for k in kinds.split(',') {
            match k {
                "late" => f.late = true,
                "lose" => f.lose = true,
                "duplicate" => f.duplicate = true,
                "refuse" => f.refuse = true,
                "crash" => f.crash = true,
                "partition" => f.partition = true,
                "pause" => f.pause = true,
                "stop" => f.stop = true,
                "watch-break" => f.watch_break = true,
                "edit" => f.edit = true,
                "delete" => f.delete = true,
                _ => return usage(),
            }
        }
        setup = setup.faults(f);
    }
    if let Some(rates) = arg("--rates") {
        for (i, r) in rates.split(',').enumerate() {
            let rate = r
                .split_once('/')
                .and_then(|(n, d)| Some((n.parse().ok()?, d.parse().ok()?)));
            match rate {
                Some((n, d)) if i < setup.nodes.len() && n > 0 && d > 0 => {
                    setup = setup.rate(i, n, d);
                }
                _ => return usage(),
            }
        }
    }
    if let Some(ms) = arg("--tick-ms") {
        let Ok(ms) = ms.parse::<u64>() else {
            return usage();
        };
        setup.tick = std::time::Duration::from_millis(ms);
    }
    println!("{setup:#?}");
    let report = explore(&World::new(setup), cap);
    println!(
        "states {} transitions {} depth {} leaves {} complete {} in {:.1?}",
        report.states,
        report.transitions,
        report.depth,
        report.leaves,
        report.complete,
        report.elapsed
    );
    match report.violation {
        None => ExitCode::SUCCESS,
        Some(v) => {
            println!("{v}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: election-check [--nodes N] [--ticks T] [--faults K] [--max-states S] \
         [--watch] [--symmetry] [--held-by ID] [--coordinated SKEW_MS] \
         [--kinds late,lose,duplicate,refuse,crash,partition,pause,stop,watch-break,edit,delete] [--rates NUM/DEN,.. (each node's clock rate)] [--tick-ms MS]"
    );
    ExitCode::from(2)
}
