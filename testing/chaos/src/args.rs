//! The command line of the soak harness.

use std::time::Duration;

use crate::server::Kind as ServerKind;

/// What the run was asked for.
#[derive(Debug, Clone)]
pub struct Args {
    /// How long faults are injected and leadership measured.
    pub run: Duration,
    /// The seed of the fault schedule.
    pub seed: u64,
    /// Whether the seed was drawn (not given).
    pub seed_drawn: bool,
    /// How many candidate processes contend for the Lease.
    pub candidates: usize,
    /// Run without faketime (no clock-skew probe, no skewed candidates).
    pub no_faketime: bool,
    /// Mix the quick start in: Lease `quickstart`, client-go timings for all.
    pub mix: bool,
    /// Also print every term and every latency sample.
    pub verbose: bool,
    /// The API server the candidates contend on.
    pub server: ServerKind,
    /// How many of the candidates are client-go's (`testing/client-go-peer`),
    /// the last ones.
    pub client_go: usize,
}

/// The usage text.
pub const USAGE: &str = "\
usage: cargo run --release -p chaos -- [--minutes N | --seconds N | --quick]
                                       [--seed S] [--candidates K] [--no-faketime] [--mix] [--verbose]
                                       [--server emulator|kube-apiserver] [--client-go K]

  --minutes N      run N minutes (fractions allowed); default 1
  --seconds N      run N seconds
  --quick          60 seconds (for CI)
  --seed S         the fault schedule's seed (default: drawn and printed)
  --candidates K   candidate processes on the one Lease (default 4, at least 2)
  --no-faketime    do not probe faketime nor run skewed candidates
  --mix            mix the quick start (kube-elector/examples/quickstart.rs) in:
                   Lease `quickstart`, client-go timings (15s/10s/2s) for every
                   candidate, fault durations scaled to them
  --verbose        also print every term and every latency sample
  --server S       the API server: `emulator` (default; in this process) or
                   `kube-apiserver` (kube-apiserver and etcd, from
                   `bash testing/k8s-server/build.sh`; a proxy per candidate)
  --client-go K    K of the candidates (the last ones) are client-go's
                   (testing/client-go-peer) on the same Lease; their overlaps
                   are reported apart. With --server kube-apiserver only";

fn number(flag: &str, value: Option<String>) -> Result<f64, String> {
    let value = value.ok_or_else(|| format!("{flag} needs a value"))?;
    match value.parse::<f64>() {
        Ok(n) if n.is_finite() && n > 0.0 => Ok(n),
        _ => Err(format!("{flag}: {value:?} is not a positive number")),
    }
}

/// Parses the process's arguments; `Err` carries the message to print (the
/// usage for `--help`).
pub fn parse() -> Result<Args, String> {
    parse_from(std::env::args().skip(1))
}

/// Parses `args` (without the program name).
pub fn parse_from(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut run = Duration::from_secs(60);
    let mut seed = None;
    let mut candidates = 4;
    let mut no_faketime = false;
    let mut mix = false;
    let mut verbose = false;
    let mut server = ServerKind::Emulator;
    let mut client_go = 0;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--minutes" => run = Duration::from_secs_f64(number(&arg, args.next())? * 60.0),
            "--seconds" => run = Duration::from_secs_f64(number(&arg, args.next())?),
            "--quick" => run = Duration::from_secs(60),
            "--seed" => {
                let value = args.next().ok_or("--seed needs a value")?;
                seed = Some(
                    value
                        .parse::<u64>()
                        .map_err(|_| format!("--seed: {value:?} is not a number"))?,
                );
            }
            "--candidates" => {
                let value = args.next().ok_or("--candidates needs a value")?;
                candidates = match value.parse::<usize>() {
                    Ok(k) if (2..=32).contains(&k) => k,
                    _ => return Err(format!("--candidates: {value:?} is not in 2..=32")),
                };
            }
            "--no-faketime" => no_faketime = true,
            "--mix" => mix = true,
            "--verbose" => verbose = true,
            "--client-go" => {
                let value = args.next().ok_or("--client-go needs a value")?;
                client_go = value
                    .parse::<usize>()
                    .map_err(|_| format!("--client-go: {value:?} is not a number"))?;
            }
            "--server" => {
                let value = args.next().ok_or("--server needs a value")?;
                server = [ServerKind::Emulator, ServerKind::KubeApiserver]
                    .into_iter()
                    .find(|k| k.flag() == value)
                    .ok_or_else(|| {
                        format!("--server: {value:?} is neither `emulator` nor `kube-apiserver`")
                    })?;
            }
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
        }
    }
    if client_go > 0 && server != ServerKind::KubeApiserver {
        return Err(
            "--client-go needs --server kube-apiserver (client-go sends no token over \
             the emulator's plain HTTP, so the emulator cannot tell it apart)"
                .to_owned(),
        );
    }
    if client_go > 0 && mix {
        return Err("--client-go and --mix do not go together".to_owned());
    }
    if client_go >= candidates {
        return Err(format!(
            "--client-go {client_go}: at least one of the {candidates} candidates must be this library's"
        ));
    }
    let seed_drawn = seed.is_none();
    let seed = seed.unwrap_or_else(drawn_seed);
    Ok(Args {
        run,
        seed,
        seed_drawn,
        candidates,
        no_faketime,
        mix,
        verbose,
        server,
        client_go,
    })
}

/// A seed from the wall clock and the process id, kept small enough to type.
fn drawn_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut rng = election_core::SplitMix64::new(nanos ^ u64::from(std::process::id()) << 32);
    rng.next_u64() % 1_000_000
}
