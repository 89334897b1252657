//! The project's one seeded random generator (xorshift64*): the same seed gives the same
//! sequence on every platform, with no global state.
//!
//! It is meant to be the one generator type of every crate: the algorithm is the world's,
//! bit for bit (a world's state hash includes [`Rng::state`]), random points on the mesh
//! draw from it ([`NavMesh::random_point`](crate::NavMesh::random_point)), and tools and
//! tests use it for sample points. It is small and fast, not cryptographic.

/// A small deterministic generator: xorshift64* (Vigna, "An experimental exploration of
/// Marsaglia's xorshift generators, scrambled", 2016), seeded through the SplitMix64
/// finaliser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value, zero included). The seed goes through the
    /// SplitMix64 finaliser, a bijection, so different seeds start from different states
    /// (xorshift needs a non-zero state: the one seed that mixes to zero takes a fixed
    /// constant instead).
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Rng(if z == 0 { 0x9e37_79b9_7f4a_7c15 } else { z })
    }

    /// The internal state, for a state hash. Never zero.
    pub fn state(&self) -> u64 {
        self.0
    }

    /// The next 64 random bits: one xorshift64* step, scrambled by the multiplication.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`: the top 53 bits of [`Rng::next_u64`], so every value is a
    /// multiple of 2⁻⁵³.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform integer in `lo..=hi` (the bounds may come in either order; `0..=u64::MAX`
    /// is the whole range). Unbiased: Lemire's multiply-and-reject ("Fast random integer
    /// generation in an interval", 2019), which draws more than once only with probability
    /// below `span / 2⁶⁴`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
        // The number of values, which wraps to zero for the whole range.
        let span = (hi - lo).wrapping_add(1);
        if span == 0 {
            return self.next_u64();
        }
        // Products whose low half falls below `2⁶⁴ mod span` are the surplus that would
        // make some results more likely than others: draw again.
        let threshold = span.wrapping_neg() % span;
        loop {
            let product = u128::from(self.next_u64()) * u128::from(span);
            if product as u64 >= threshold {
                return lo + (product >> 64) as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn different_seeds_give_different_sequences() {
        // Seeds that differ in one bit (a naive seeding makes 2 and 3 collide) and a run of
        // small ones.
        let mut firsts: Vec<u64> = (0..1000u64)
            .chain([u64::MAX, 1 << 63])
            .map(|seed| {
                let mut rng = Rng::new(seed);
                rng.next_f64().to_bits()
            })
            .collect();
        let n = firsts.len();
        firsts.sort_unstable();
        firsts.dedup();
        assert_eq!(firsts.len(), n);
    }

    #[test]
    fn the_same_seed_gives_the_same_sequence() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_f64().to_bits(), b.next_f64().to_bits());
        }
    }

    /// The algorithm written out longhand, as the world has always run it: its state hash
    /// depends on every bit of this sequence.
    #[test]
    fn the_sequence_is_xorshift64_star_from_a_splitmix_seed() {
        for seed in [0u64, 1, 42, u64::MAX] {
            let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let mut state = z ^ (z >> 31);
            let mut rng = Rng::new(seed);
            assert_eq!(rng.state(), state);
            for _ in 0..50 {
                state ^= state >> 12;
                state ^= state << 25;
                state ^= state >> 27;
                let v = state.wrapping_mul(0x2545_f491_4f6c_dd1d);
                let f = (v >> 11) as f64 / (1u64 << 53) as f64;
                assert_eq!(rng.next_f64().to_bits(), f.to_bits());
                assert_eq!(rng.state(), state);
            }
        }
        // next_f64 is next_u64's top 53 bits.
        let (mut a, mut b) = (Rng::new(9), Rng::new(9));
        for _ in 0..50 {
            let f = (a.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            assert_eq!(b.next_f64().to_bits(), f.to_bits());
        }
    }

    #[test]
    fn the_seed_that_mixes_to_zero_gets_the_guard_state() {
        // The finaliser maps zero to zero, so the one seed that mixes to zero is the one
        // that the added constant wraps to zero.
        let seed = 0x9e37_79b9_7f4a_7c15u64.wrapping_neg();
        let mut rng = Rng::new(seed);
        assert_eq!(rng.state(), 0x9e37_79b9_7f4a_7c15);
        let first = rng.next_u64();
        assert_ne!(rng.state(), 0);
        assert_ne!(first, rng.next_u64());
    }

    #[test]
    fn next_f64_is_in_the_unit_interval() {
        let mut rng = Rng::new(3);
        for _ in 0..10_000 {
            let x = rng.next_f64();
            assert!((0.0..1.0).contains(&x), "{x}");
        }
    }

    #[test]
    fn range_stays_in_bounds_and_reaches_both_ends() {
        let mut rng = Rng::new(11);
        let mut seen = [0usize; 7];
        for _ in 0..7_000 {
            let x = rng.range(3, 9);
            assert!((3..=9).contains(&x), "{x}");
            seen[(x - 3) as usize] += 1;
        }
        // Each of the 7 values is expected 1,000 times; the standard deviation is about
        // 30, so 800..1,200 fails only if the generator is badly broken.
        for (k, &n) in seen.iter().enumerate() {
            assert!((800..1_200).contains(&n), "value {}: {n} of 7000", k + 3);
        }
        // Reversed bounds, a single value and the whole range.
        for _ in 0..100 {
            assert!((3..=9).contains(&rng.range(9, 3)));
            assert_eq!(rng.range(5, 5), 5);
        }
        let _any = rng.range(0, u64::MAX);
        assert!(rng.range(u64::MAX - 1, u64::MAX) >= u64::MAX - 1);
    }
}
