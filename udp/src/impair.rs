//! Userspace impairment of the receive path: random loss, duplication and reordering of
//! received datagrams (`tc netem` is not available on the machines this runs on; real kernel
//! loss comes from nftables, see `scripts/netns-loss.sh`).
//!
//! Drawn per received datagram, in this order: loss; then duplication (a second copy is
//! handed in right after the first); then, per copy, reordering (the copy is held back for a
//! delay uniform in `[0, reorder_delay]` while later datagrams overtake it).

/// Impairment settings (probabilities per received datagram).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Impairment {
    /// Probability that a datagram is dropped.
    pub loss: f64,
    /// Probability that a datagram is held back.
    pub reorder: f64,
    /// Maximum hold-back of a reordered datagram, nanoseconds.
    pub reorder_delay_ns: u64,
    /// Probability that a datagram is handed in twice.
    pub dup: f64,
    /// Seed of the draws.
    pub seed: u64,
}

impl Default for Impairment {
    fn default() -> Self {
        Impairment {
            loss: 0.0,
            reorder: 0.0,
            reorder_delay_ns: 100_000,
            dup: 0.0,
            seed: 1,
        }
    }
}

impl Impairment {
    /// No impairment is configured.
    pub fn is_none(&self) -> bool {
        self.loss <= 0.0 && self.reorder <= 0.0 && self.dup <= 0.0
    }

    /// Check the probabilities.
    pub fn validate(&self) -> Result<(), String> {
        for (n, p) in [("loss", self.loss), ("reorder", self.reorder), ("dup", self.dup)] {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("{n} must be a probability in [0, 1], got {p}"));
            }
        }
        Ok(())
    }
}

/// SplitMix64 generator with precomputed Bernoulli thresholds.
#[derive(Debug, Clone)]
pub(crate) struct Impairer {
    state: u64,
    loss: u64,
    reorder: u64,
    dup: u64,
    delay: u64,
    pub(crate) active: bool,
}

fn threshold(p: f64) -> u64 {
    if p <= 0.0 || p.is_nan() {
        0
    } else if p >= 1.0 {
        u64::MAX
    } else {
        (p * 18_446_744_073_709_551_616.0) as u64
    }
}

impl Impairer {
    pub(crate) fn new(cfg: &Impairment) -> Self {
        Impairer {
            state: cfg.seed ^ 0x5EED_1A7E_D00D_F00D,
            loss: threshold(cfg.loss),
            reorder: threshold(cfg.reorder),
            dup: threshold(cfg.dup),
            delay: cfg.reorder_delay_ns,
            active: !cfg.is_none(),
        }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn draw(&mut self, t: u64) -> bool {
        t != 0 && (t == u64::MAX || self.next() < t)
    }

    pub(crate) fn lose(&mut self) -> bool {
        let t = self.loss;
        self.draw(t)
    }

    pub(crate) fn duplicate(&mut self) -> bool {
        let t = self.dup;
        self.draw(t)
    }

    /// Hold-back delay for one copy, if it is reordered.
    pub(crate) fn reorder_delay(&mut self) -> Option<u64> {
        let t = self.reorder;
        if self.draw(t) {
            let d = self.delay;
            Some(if d == 0 {
                0
            } else {
                ((u128::from(self.next()) * u128::from(d + 1)) >> 64) as u64
            })
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_close_to_the_settings() {
        let mut i = Impairer::new(&Impairment {
            loss: 0.05,
            reorder: 0.1,
            dup: 0.02,
            reorder_delay_ns: 50,
            seed: 9,
        });
        let n = 200_000;
        let (mut l, mut r, mut d) = (0, 0, 0);
        for _ in 0..n {
            l += i.lose() as u32;
            d += i.duplicate() as u32;
            if let Some(x) = i.reorder_delay() {
                assert!(x <= 50);
                r += 1;
            }
        }
        let f = |x: u32| f64::from(x) / f64::from(n);
        assert!((f(l) - 0.05).abs() < 0.005 && (f(r) - 0.1).abs() < 0.005 && (f(d) - 0.02).abs() < 0.003);
        let mut none = Impairer::new(&Impairment::default());
        assert!(!none.active && !none.lose() && none.reorder_delay().is_none());
    }
}
