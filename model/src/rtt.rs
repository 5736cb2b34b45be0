//! Per-path RTT estimator (RFC 6298 with shifts only, so hardware can mirror it).

use crate::params::{RTO_INIT_NS, RTO_MAX_NS, RTO_MIN_NS};

/// Smoothed RTT, variance and minimum of one path, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RttEstimator {
    /// Smoothed RTT.
    pub srtt: u32,
    /// RTT variation.
    pub rttvar: u32,
    /// Minimum RTT seen.
    pub min: u32,
    /// At least one sample was taken.
    pub valid: bool,
}

impl RttEstimator {
    /// Feed one sample.
    pub fn sample(&mut self, rtt: u32) {
        if !self.valid {
            self.srtt = rtt;
            self.rttvar = rtt / 2;
            self.min = rtt;
            self.valid = true;
            return;
        }
        let err = self.srtt.abs_diff(rtt);
        self.rttvar = self.rttvar - (self.rttvar >> 2) + (err >> 2);
        self.srtt = self.srtt - (self.srtt >> 3) + (rtt >> 3);
        self.min = self.min.min(rtt);
    }

    /// Retransmission timeout before backoff, with the default bounds.
    pub fn rto(&self) -> u32 {
        self.rto_bounded(RTO_MIN_NS, RTO_INIT_NS)
    }

    /// Retransmission timeout before backoff: `init` before any sample, else
    /// srtt + 4 rttvar clamped to [`min`, RTO_MAX_NS].
    pub fn rto_bounded(&self, min: u64, init: u64) -> u32 {
        if !self.valid {
            return init.min(RTO_MAX_NS) as u32;
        }
        let r = u64::from(self.srtt) + 4 * u64::from(self.rttvar);
        r.clamp(min.min(RTO_MAX_NS), RTO_MAX_NS) as u32
    }
}
