//! What the benchmarks and the chaos soak print their figures with: the
//! nearest-rank percentile and the median of their samples, and the CPU they
//! ran on.
//!
//! ```
//! use test_kit::figures::percentile;
//! let sorted = [1.0, 2.0, 3.0, 4.0, 5.0];
//! assert_eq!(percentile(&sorted, 0.5), 3.0);
//! assert_eq!(percentile(&sorted, 0.9), 5.0);
//! assert_eq!(test_kit::figures::median(vec![3, 1, 2]), 2);
//! ```

/// The `p` quantile (0 to 1) of `sorted`, by the nearest rank.
///
/// # Panics
///
/// If `sorted` is empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
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
