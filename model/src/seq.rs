//! Wrap-safe 32-bit sequence arithmetic (RFC 1982 serial numbers).
//!
//! Differences are computed with `wrapping_sub`; a difference with the top bit set is
//! "negative" (the first PSN is behind the second).

/// True when the wrapped difference `d` is negative (top bit set).
#[inline]
pub fn is_negative(d: u32) -> bool {
    d & 0x8000_0000 != 0
}

/// `a < b` in serial arithmetic.
#[inline]
pub fn lt(a: u32, b: u32) -> bool {
    is_negative(a.wrapping_sub(b))
}

/// `a <= b` in serial arithmetic.
#[inline]
pub fn le(a: u32, b: u32) -> bool {
    !is_negative(b.wrapping_sub(a))
}

/// The later of two serial numbers.
#[inline]
pub fn max(a: u32, b: u32) -> u32 {
    if lt(a, b) {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn wraps() {
        assert!(lt(u32::MAX, 0));
        assert!(lt(u32::MAX - 5, 3));
        assert!(!lt(3, u32::MAX - 5));
        assert!(le(7, 7));
        assert_eq!(max(u32::MAX, 2), 2);
    }
}
