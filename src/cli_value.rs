//! Value parsers shared by the CLI's subcommands (clap `value_parser`s): one definition of what
//! a size, a probability or a duration argument accepts, so every subcommand rejects the same
//! inputs with the same message.

use crate::size::parse_size;

/// A byte size: `4096`, `64MiB`, `1.5MB` (`crate::size`).
pub fn size_arg(s: &str) -> Result<u64, String> {
    parse_size(s).map_err(|e| e.to_string())
}

/// A probability in [0, 1].
pub fn prob_arg(s: &str) -> Result<f64, String> {
    let p: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number"))?;
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("{p} is not a probability in [0, 1]"))
    }
}

/// A finite number >= 0.
pub fn nonneg_arg(s: &str) -> Result<f64, String> {
    let x: f64 = s.trim().parse().map_err(|_| format!("{s:?} is not a number"))?;
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(format!("{x} must be a finite non-negative number"))
    }
}

/// A finite number > 0.
pub fn pos_arg(s: &str) -> Result<f64, String> {
    let x = nonneg_arg(s)?;
    if x > 0.0 {
        Ok(x)
    } else {
        Err("must be positive".into())
    }
}

/// A switch: `on` or `off` (also `true`/`false`).
pub fn on_off_arg(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("{s:?} is neither on nor off")),
    }
}

/// An ECN re-route policy (`every`, `one`, `off`; `true` and `false` mean `every` and `off`).
pub fn ecn_reroute_arg(s: &str) -> Result<mroce_model::endpoint::EcnReroute, String> {
    mroce_model::endpoint::EcnReroute::parse(&s.to_ascii_lowercase())
        .ok_or_else(|| format!("unknown policy {s:?} (every, one, off)"))
}

/// A NIC's transmit order across connections: `oldest` or `rr`.
pub fn tx_order_arg(s: &str) -> Result<mroce_model::tx_order::TxOrder, String> {
    mroce_model::tx_order::TxOrder::parse(&s.to_ascii_lowercase())
        .ok_or_else(|| format!("unknown transmit order {s:?} (oldest, rr)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_rejects() {
        assert_eq!(size_arg("64MiB"), Ok(64 << 20));
        assert!(size_arg("64 parsecs").is_err());
        assert_eq!(prob_arg("0.01"), Ok(0.01));
        assert!(prob_arg("1.5").is_err());
        assert!(prob_arg("x").is_err());
        assert_eq!(nonneg_arg("0"), Ok(0.0));
        assert!(nonneg_arg("-1").is_err());
        assert!(nonneg_arg("inf").is_err());
        assert_eq!(on_off_arg("On"), Ok(true));
        assert_eq!(on_off_arg("false"), Ok(false));
        assert!(on_off_arg("maybe").is_err());
        assert!(pos_arg("0").is_err());
        assert_eq!(pos_arg("2.5"), Ok(2.5));
    }
}
