//! The program's host-side random numbers (batches, sampling).

/// A deterministic generator (SplitMix64): the corpus and the batches are
/// reproducible from a seed. Hand-written because it is six lines and the
/// stream must stay the same across versions of any crate.
#[derive(Clone, Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    /// A float in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix;

    #[test]
    fn the_stream_is_splitmix64() {
        // SplitMix64's first output for seed 0; examples/python/train_lm.py
        // asserts the same value, so both hold out the same problems.
        assert_eq!(SplitMix::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
        let mut r = SplitMix::new(1);
        assert!((0..1000).map(|_| r.unit()).all(|u| (0.0..1.0).contains(&u)));
    }
}
