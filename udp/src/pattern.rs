//! A deterministic, seekable data pattern: both ends generate the same bytes for any range
//! from `(seed, offset)` alone, so the receiver verifies content, not counts, and can check
//! any part of a transfer independently.
//!
//! Byte `a` of the pattern is byte `a % 8` (little-endian) of the 64-bit word
//! `splitmix64(seed ^ (a / 8) * 0x9E37_79B9_7F4A_7C15)`.

#[inline]
fn word(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fill `buf` with the pattern bytes `offset .. offset + buf.len()`.
pub fn fill(seed: u64, offset: u64, buf: &mut [u8]) {
    let mut a = offset;
    let mut i = 0;
    // Unaligned head.
    while i < buf.len() && !a.is_multiple_of(8) {
        buf[i] = word(seed, a / 8).to_le_bytes()[(a % 8) as usize];
        i += 1;
        a += 1;
    }
    let mut chunks = buf[i..].chunks_exact_mut(8);
    let mut w = a / 8;
    for c in &mut chunks {
        c.copy_from_slice(&word(seed, w).to_le_bytes());
        w += 1;
    }
    let rem = chunks.into_remainder();
    let bytes = word(seed, w).to_le_bytes();
    let n = rem.len();
    rem.copy_from_slice(&bytes[..n]);
}

/// Offset (relative to `buf`) of the first byte that differs from the pattern, if any.
pub fn first_mismatch(seed: u64, offset: u64, buf: &[u8]) -> Option<usize> {
    let mut tmp = [0u8; 4096];
    let mut done = 0;
    while done < buf.len() {
        let n = (buf.len() - done).min(tmp.len());
        fill(seed, offset + done as u64, &mut tmp[..n]);
        if tmp[..n] != buf[done..done + n] {
            let k = tmp[..n]
                .iter()
                .zip(&buf[done..done + n])
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            return Some(done + k);
        }
        done += n;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_range_matches_the_whole() {
        let mut whole = vec![0u8; 1000];
        fill(42, 0, &mut whole);
        for (off, len) in [(0, 1000), (3, 17), (8, 64), (999, 1), (13, 0), (5, 995)] {
            let mut part = vec![0u8; len];
            fill(42, off as u64, &mut part);
            assert_eq!(part, whole[off..off + len], "{off}+{len}");
            assert_eq!(first_mismatch(42, off as u64, &whole[off..off + len]), None);
        }
        let mut bad = whole.clone();
        bad[700] ^= 1;
        assert_eq!(first_mismatch(42, 0, &bad), Some(700));
        assert!(first_mismatch(43, 0, &whole).is_some());
    }
}
