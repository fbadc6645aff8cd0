//! What the benchmarks and the chaos soak print their figures with: the
//! nearest-rank percentile and the median of their samples, the CPU they
//! ran on, and what another process (a server, a candidate) spent.
//!
//! ```
//! use test_kit::figures::percentile;
//! let samples = [5.0, 2.0, 3.0, 1.0, 4.0];
//! assert_eq!(percentile(&samples, 0.5), 3.0);
//! assert_eq!(percentile(&samples, 0.9), 5.0);
//! assert_eq!(percentile(&[1.0, 2.0], 0.5), 1.0); // the lower of two
//! assert!(percentile(&[], 0.5).is_nan());
//! assert_eq!(test_kit::figures::median(vec![3, 1, 2]), 2);
//! ```

/// The `p` quantile (0 to 1) of `samples`, in any order, by the nearest rank
/// (the smallest sample with at least `p` of them at or below it: rank
/// `ceil(p * n)`); NaN when there are none.
pub fn percentile(samples: &[f64], p: f64) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The median of `samples` (the upper one of an even count).
///
/// # Panics
///
/// If `samples` is empty.
pub fn median<T: Ord + Copy>(mut samples: Vec<T>) -> T {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// The CPU time another process has used, user and system, in clock ticks
/// (`utime` + `stime` of `/proc/<pid>/stat`; see [`clock_ticks_per_second`]),
/// or `None` when it cannot be read.
pub fn process_cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name in parentheses (which may hold spaces): field 3
    // (state) on; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// The clock ticks per second of `/proc/<pid>/stat`'s times (`CLK_TCK`).
pub fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second()
}

/// Another process's resident set size in bytes (`VmRSS` of
/// `/proc/<pid>/status`), or `None` when it cannot be read.
pub fn process_rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The CPU's model name, from `/proc/cpuinfo` (`"unknown"` elsewhere).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}
