//! Deterministic generators of the simulator (no `rand` dependency): every random choice of
//! a run derives from its seed, so a run is a pure function of its configuration.

/// SplitMix64 step: expands seeds and hashes indices.
#[inline(always)]
pub fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// An independent sub-seed of `seed` for the purpose named by `stream`.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    splitmix(splitmix(seed ^ stream.wrapping_mul(0xD6E8_FEB8_6659_FD93)))
}

/// xoshiro256** (Blackman & Vigna).
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// Seeded through SplitMix64.
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut s = [0u64; 4];
        for w in s.iter_mut() {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            *w = splitmix(x);
        }
        if s == [0; 4] {
            s[0] = 1;
        }
        Rng { s }
    }

    /// Next 64 bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let r = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        r
    }

    /// Uniform in `[0, n)` (`n > 0`).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniformly random permutation of `0..n` without fixed points (a derangement) for
    /// `n >= 2`, by rejection of Fisher-Yates shuffles.
    pub fn derangement(&mut self, n: usize) -> Vec<usize> {
        let mut p: Vec<usize> = (0..n).collect();
        if n < 2 {
            return p;
        }
        loop {
            for i in (1..n).rev() {
                let j = self.below(i as u64 + 1) as usize;
                p.swap(i, j);
            }
            if p.iter().enumerate().all(|(i, &x)| i != x) {
                return p;
            }
        }
    }
}

/// A Bernoulli draw with a precomputed 64-bit threshold (`p = 0` never draws the generator).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Chance(u64);

impl Chance {
    /// Probability `p` in `[0, 1]`.
    pub fn new(p: f64) -> Self {
        if p <= 0.0 {
            Chance(0)
        } else if p >= 1.0 {
            Chance(u64::MAX)
        } else {
            Chance((p * 18_446_744_073_709_551_616.0) as u64)
        }
    }

    /// True with the probability given at construction.
    #[inline]
    pub fn draw(self, rng: &mut Rng) -> bool {
        self.0 != 0 && (self.0 == u64::MAX || rng.next_u64() < self.0)
    }

    /// True if this can never draw.
    pub fn is_never(self) -> bool {
        self.0 == 0
    }
}

/// Deterministic content of registered buffers: word `i` of a pattern with seed `s` is
/// `splitmix(s ^ i * K)`, so any slice can be regenerated for a content check without
/// storing a copy.
#[inline(always)]
pub fn pattern_word(seed: u64, word: u64) -> u64 {
    splitmix(seed ^ word.wrapping_mul(0xA24B_AED4_963E_E407))
}

/// Fill `buf` (which starts at byte `offset` of a pattern buffer; both multiples of 8 or
/// not) with the pattern of `seed`.
pub fn fill_pattern(seed: u64, offset: u64, buf: &mut [u8]) {
    // a partial first word up to the next word boundary, whole words, then a partial last word
    let head = (((8 - offset % 8) % 8) as usize).min(buf.len());
    let (first, rest) = buf.split_at_mut(head);
    if head > 0 {
        let k = (offset % 8) as usize;
        first.copy_from_slice(&pattern_word(seed, offset / 8).to_le_bytes()[k..k + head]);
    }
    let word = (offset + head as u64) / 8;
    let whole = rest.len() / 8 * 8;
    let (body, tail) = rest.split_at_mut(whole);
    fill_words(seed, word, body);
    let n = tail.len();
    tail.copy_from_slice(&pattern_word(seed, word + (whole / 8) as u64).to_le_bytes()[..n]);
}

/// Whole pattern words from word `word` on into `body` (a multiple of 8 bytes long). The
/// regions of a run are filled and checked this way, gigabytes per experiment: with AVX-512
/// the 64-bit multiplies vectorise eight to an instruction (measured: setup 3x faster).
fn fill_words(seed: u64, word: u64, body: &mut [u8]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512dq") {
        // SAFETY: the CPU has the features the function is compiled for (checked above).
        unsafe { fill_words_avx512(seed, word, body) };
        return;
    }
    fill_words_portable(seed, word, body);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
fn fill_words_avx512(seed: u64, word: u64, body: &mut [u8]) {
    fill_words_portable(seed, word, body);
}

#[inline(always)]
fn fill_words_portable(seed: u64, mut word: u64, body: &mut [u8]) {
    for c in body.chunks_exact_mut(8) {
        c.copy_from_slice(&pattern_word(seed, word).to_le_bytes());
        word += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_pattern_matches_its_definition_at_any_offset_and_length() {
        let byte = |seed: u64, pos: u64| pattern_word(seed, pos / 8).to_le_bytes()[(pos % 8) as usize];
        for off in 0..20u64 {
            for len in 0..40usize {
                let mut b = vec![0xAAu8; len];
                fill_pattern(7, off, &mut b);
                let want: Vec<u8> = (0..len as u64).map(|i| byte(7, off + i)).collect();
                assert_eq!(b, want, "offset {off}, length {len}");
            }
        }
    }

    #[test]
    fn derangement_has_no_fixed_point() {
        let mut r = Rng::new(3);
        for n in 2..40 {
            let p = r.derangement(n);
            let mut s = p.clone();
            s.sort();
            assert_eq!(s, (0..n).collect::<Vec<_>>());
            assert!(p.iter().enumerate().all(|(i, &x)| i != x));
        }
    }

    #[test]
    fn pattern_is_offset_consistent() {
        let mut a = vec![0u8; 100];
        fill_pattern(9, 0, &mut a);
        let mut b = vec![0u8; 37];
        fill_pattern(9, 13, &mut b);
        assert_eq!(&a[13..50], &b[..]);
    }
}
