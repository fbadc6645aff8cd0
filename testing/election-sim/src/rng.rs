//! The simulator's seeded generator: the core's SplitMix64, so every run replays
//! from its seed.

use election_core::SplitMix64;

/// A small deterministic generator.
#[derive(Clone, Debug)]
pub struct SimRng(SplitMix64);

impl SimRng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SimRng(SplitMix64::new(seed ^ 0x5151_5151_dead_beef))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        self.0.unit()
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// An integer in `[lo, hi)` (`lo` if the range is empty).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            lo
        } else {
            lo + self.next_u64() % (hi - lo)
        }
    }
}
