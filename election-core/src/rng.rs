//! A small seeded generator (SplitMix64): deterministic, no_std, a few lines, and
//! good enough to spread retries. The elector draws its jitter from it; the
//! simulator and the memory lock's fault plans use the same one, so every run
//! replays from its seed.

/// SplitMix64: a tiny deterministic generator, seeded by the caller.
///
/// ```
/// let (mut a, mut b) = (election_core::SplitMix64::new(7), election_core::SplitMix64::new(7));
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!((0.0..1.0).contains(&a.unit()));
/// ```
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

/// The elector's generator.
pub(crate) type Rng = SplitMix64;

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A float uniformly drawn from `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A jitter seed for a configuration that sets none: a hash of the identity
/// (FNV-1a), mixed with entropy unique to this process where `std` offers it
/// (`RandomState`'s keys come from the OS's randomness, and differ per process
/// and per instance), so that replicas never poll in lockstep, even two that
/// share an identity by mistake.
pub(crate) fn derived_seed(identity: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in identity.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h ^ process_entropy()
}

#[cfg(feature = "std")]
fn process_entropy() -> u64 {
    use core::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.finish()
}

#[cfg(not(feature = "std"))]
fn process_entropy() -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_stays_in_range_and_replays_from_its_seed() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..10_000 {
            let x = a.unit();
            assert!((0.0..1.0).contains(&x));
            assert_eq!(x, b.unit());
        }
    }
}
