//! Small deterministic random number generators for the drivers (no `rand` dependency).
//!
//! [`SplitMix64`] expands a seed; [`Xoshiro256`] (xoshiro256**, Blackman & Vigna) is the
//! generator the drivers draw from. Both are fully determined by their seed on every
//! platform, which is what makes a simulation run reproducible.

/// SplitMix64: a 64-bit state generator, used to seed [`Xoshiro256`] and derive sub-seeds.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// Next 64-bit output.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Derive an independent sub-seed from `seed` and a `stream` label.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut s = SplitMix64(seed ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    s.next_u64();
    s.next_u64()
}

/// xoshiro256**: fast, 256-bit state, good statistical quality.
#[derive(Debug, Clone)]
pub struct Xoshiro256 {
    s: [u64; 4],
}

impl Xoshiro256 {
    /// Seed through SplitMix64 (as the authors recommend).
    pub fn new(seed: u64) -> Self {
        let mut sm = SplitMix64(seed);
        let s = [sm.next_u64(), sm.next_u64(), sm.next_u64(), sm.next_u64()];
        Self::from_state(s)
    }

    /// Use a raw state (must not be all zero; an all-zero state is replaced by seed 0).
    pub fn from_state(s: [u64; 4]) -> Self {
        if s == [0; 4] {
            return Self::new(0);
        }
        Xoshiro256 { s }
    }

    /// Next 64-bit output.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n) (n > 0), by widening multiplication (bias < n / 2^64).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// True with probability `p` (see [`Chance`] for a precomputed, faster form).
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        Chance::new(p).draw(self)
    }

    /// Fill `buf` with random bytes (little-endian words).
    pub fn fill_bytes(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rem = chunks.into_remainder();
        if !rem.is_empty() {
            let w = self.next_u64().to_le_bytes();
            let n = rem.len();
            rem.copy_from_slice(&w[..n]);
        }
    }
}

/// A Bernoulli trial with a precomputed 64-bit threshold. A probability of 0 never draws
/// from the generator, so an impairment that is off does not shift the random stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chance {
    threshold: u64,
    always: bool,
}

impl Chance {
    /// Probability `p` (clamped to [0, 1]; NaN counts as 0).
    pub fn new(p: f64) -> Self {
        if p.is_nan() || p <= 0.0 {
            Chance {
                threshold: 0,
                always: false,
            }
        } else if p >= 1.0 {
            Chance {
                threshold: u64::MAX,
                always: true,
            }
        } else {
            Chance {
                threshold: (p * 18_446_744_073_709_551_616.0) as u64,
                always: false,
            }
        }
    }

    /// True if the probability is zero (no draw will ever happen).
    pub fn is_never(&self) -> bool {
        self.threshold == 0 && !self.always
    }

    /// Draw once (no draw at all when the probability is 0).
    #[inline]
    pub fn draw(&self, rng: &mut Xoshiro256) -> bool {
        if self.threshold == 0 {
            return false;
        }
        let x = rng.next_u64();
        self.always || x < self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_vector() {
        let mut s = SplitMix64(0);
        assert_eq!(s.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(s.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(s.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn xoshiro_reference_vector() {
        let mut x = Xoshiro256::from_state([1, 2, 3, 4]);
        assert_eq!(x.next_u64(), 11520);
        assert_eq!(x.next_u64(), 0);
        assert_eq!(x.next_u64(), 1_509_978_240);
        assert_eq!(x.next_u64(), 1_215_971_899_390_074_240);
    }

    #[test]
    fn chance_frequencies() {
        let mut x = Xoshiro256::new(7);
        let c = Chance::new(0.01);
        let hits = (0..1_000_000).filter(|_| c.draw(&mut x)).count();
        assert!((9_000..11_000).contains(&hits), "{hits}");
        assert!(!Chance::new(0.0).draw(&mut x));
        assert!(Chance::new(1.0).draw(&mut x));
        assert!(Chance::new(f64::NAN).is_never());
    }

    #[test]
    fn below_and_fill() {
        let mut x = Xoshiro256::new(1);
        for _ in 0..1000 {
            assert!(x.below(7) < 7);
        }
        let mut a = [0u8; 13];
        let mut b = [0u8; 13];
        Xoshiro256::new(3).fill_bytes(&mut a);
        Xoshiro256::new(3).fill_bytes(&mut b);
        assert_eq!(a, b);
        assert_ne!(a, [0; 13]);
        assert_ne!(derive_seed(1, 1), derive_seed(1, 2));
    }
}
