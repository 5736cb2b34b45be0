//! Byte-size arguments: `4096`, `64MiB`, `1GiB`, `1.5MB`, `16k`.
//!
//! A number (integer or decimal) followed by an optional unit, case-insensitive, with
//! optional spaces between them. Decimal units: `B`, `k`/`KB`, `M`/`MB`, `G`/`GB`, `T`/`TB`
//! (powers of 1000). Binary units: `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024). The result
//! must be a whole number of bytes that fits in a `u64`.

use core::fmt;

/// Why a size string was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeError(pub String);

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SizeError {}

fn unit_multiplier(unit: &str) -> Option<u64> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "m" | "mb" => 1_000_000,
        "g" | "gb" => 1_000_000_000,
        "t" | "tb" => 1_000_000_000_000,
        "ki" | "kib" => 1 << 10,
        "mi" | "mib" => 1 << 20,
        "gi" | "gib" => 1 << 30,
        "ti" | "tib" => 1 << 40,
        _ => return None,
    })
}

/// Parse a byte size (see the module documentation).
pub fn parse_size(s: &str) -> Result<u64, SizeError> {
    let err = |why: &str| {
        SizeError(format!(
            "invalid size {s:?}: {why} (examples: 4096, 64MiB, 1GiB, 1.5MB)"
        ))
    };
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim_start();
    if num.is_empty() {
        return Err(err("no number"));
    }
    let mult = unit_multiplier(unit).ok_or_else(|| err("unknown unit"))?;
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num, ""),
    };
    if frac_part.contains('.') {
        return Err(err("more than one decimal point"));
    }
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(err("no digits"));
    }
    // Exact arithmetic: value = (int * 10^k + frac) * mult / 10^k.
    let digits: String = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    if digits.len() > 30 {
        return Err(err("too large"));
    }
    let mantissa: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse().map_err(|_| err("bad number"))?
    };
    let scale = 10u128
        .checked_pow(frac_part.len() as u32)
        .ok_or_else(|| err("too many decimals"))?;
    let scaled = mantissa.checked_mul(u128::from(mult)).ok_or_else(|| err("too large"))?;
    if scaled % scale != 0 {
        return Err(err("not a whole number of bytes"));
    }
    u64::try_from(scaled / scale).map_err(|_| err("too large"))
}

/// Format a byte count compactly with binary units when exact (`64MiB`), else in bytes.
pub fn format_size(n: u64) -> String {
    for (unit, shift) in [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift && n.trailing_zeros() >= shift {
            return format!("{}{unit}", n >> shift);
        }
    }
    format!("{n}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1.5MB"), Ok(1_500_000));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        assert_eq!(parse_size("16k"), Ok(16_000));
        assert_eq!(parse_size("16 KiB"), Ok(16 << 10));
        assert_eq!(parse_size("  2mib "), Ok(2 << 20));
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size(".5KiB"), Ok(512));
        assert_eq!(parse_size("7B"), Ok(7));
        assert_eq!(parse_size("1.000GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("16TiB"), Ok(16 << 40));
        assert_eq!(parse_size("18446744073709551615"), Ok(u64::MAX));
    }

    #[test]
    fn rejected() {
        for bad in [
            "",
            "MiB",
            "abc",
            "1.5",
            "1.2.3MB",
            "-5",
            "5 XB",
            "1e6",
            "18446744073709551616",
            "99999999TiB",
            ".",
            "0.1B",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?} should be rejected");
        }
        assert!(parse_size("5 XB").unwrap_err().to_string().contains("unknown unit"));
    }

    #[test]
    fn formatting() {
        assert_eq!(format_size(64 << 20), "64MiB");
        assert_eq!(format_size(1 << 30), "1GiB");
        assert_eq!(format_size(1500), "1500B");
        assert_eq!(format_size(0), "0B");
    }
}
