//! The one place where drivers construct transports. Every driver works against
//! [`mroce_model::transport::Transport`] only; this factory is the single spot that names
//! the concrete types, so a new transport (or a constructor change) touches nothing else.

use mroce_model::endpoint::EcnReroute;
use mroce_model::transport::{NicAddr, Transport};
use serde::Serialize;

/// Which transport a driver runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// mroce (`mroce_model::endpoint::Endpoint`): multipath, selective repeat, streams.
    Mroce,
    /// RoCEv2 RC baseline (`mroce_model::rocev2::RoceEndpoint`): one path per QP, go-back-N.
    Rocev2,
}

impl TransportKind {
    /// Every kind, in a stable order.
    pub const ALL: [TransportKind; 2] = [TransportKind::Mroce, TransportKind::Rocev2];

    /// Name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            TransportKind::Mroce => "mroce",
            TransportKind::Rocev2 => "rocev2",
        }
    }

    /// Whether one connection carries several ordered streams. Transports without streams
    /// (RoCEv2 RC: one ordered stream per QP) get one connection per stream instead.
    pub fn has_streams(self) -> bool {
        match self {
            TransportKind::Mroce => true,
            TransportKind::Rocev2 => false,
        }
    }
}

impl core::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::str::FromStr for TransportKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "mroce" => Ok(TransportKind::Mroce),
            "rocev2" | "roce" => Ok(TransportKind::Rocev2),
            _ => Err(format!("unknown transport {s:?} (expected mroce or rocev2)")),
        }
    }
}

/// Driver-level knobs a transport constructor may take (fields a config lacks are ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportParams {
    /// Paths per connection requested by the driver (`--paths`).
    pub paths: u16,
    /// Streams per connection the workload uses.
    pub streams: u16,
    /// RTO floor (mroce) or fixed RTO (RoCEv2), ns; `None` keeps the model default.
    pub rto_min_ns: Option<u64>,
    /// RTO before the first RTT sample (mroce), ns.
    pub rto_init_ns: Option<u64>,
    /// A connection without ACK progress for this long fails, ns: mroce's peer timeout; for
    /// RoCEv2 its retry limit is raised so that its backed-off retries span at least this long.
    pub peer_timeout_ns: Option<u64>,
    /// mroce's policy for ECN re-route verdicts (`--ecn-reroute`); RoCEv2 has none.
    pub ecn_reroute: EcnReroute,
    /// mroce's connection limit before the first rate hint (`--initial-limit`); RoCEv2 has none.
    pub initial_conn_limit: u16,
    /// mroce's tail hedge (`--tail-hedge`, `EndpointConfig::tail_hedge`); RoCEv2 has none.
    pub tail_hedge: bool,
    /// mroce's immediate ACKs for the first flight (`--first-flight-ack-req`,
    /// `EndpointConfig::first_flight_ack_req`); RoCEv2 has none.
    pub first_flight_ack_req: bool,
    /// The network's unloaded RTT that bounds mroce's shared rate hints, ns (0 = none;
    /// `EndpointConfig::fabric_rtt_ns`); RoCEv2 has none.
    pub fabric_rtt_ns: u64,
    /// mroce announces its fan-in share to its peers (`EndpointConfig::announce_fan_in`);
    /// RoCEv2 has none.
    pub announce_fan_in: bool,
}

impl Default for TransportParams {
    fn default() -> Self {
        TransportParams {
            paths: mroce_model::params::PATHS as u16,
            streams: 1,
            rto_min_ns: None,
            rto_init_ns: None,
            peer_timeout_ns: None,
            ecn_reroute: EcnReroute::default(),
            initial_conn_limit: mroce_model::params::CONN_LIMIT_INIT_PKTS,
            tail_hedge: mroce_model::endpoint::EndpointConfig::default().tail_hedge,
            first_flight_ack_req: mroce_model::endpoint::EndpointConfig::default().first_flight_ack_req,
            fabric_rtt_ns: 0,
            announce_fan_in: false,
        }
    }
}

/// Why a transport could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactoryError {
    /// The model does not provide this transport yet.
    #[error("transport {0} is not available in this build (its model type is not wired into mroce::transports::make_transport yet)")]
    Unavailable(TransportKind),
    /// The constructor refused the parameters.
    #[error("transport {kind}: {why}")]
    Rejected {
        /// Transport.
        kind: TransportKind,
        /// Reason.
        why: String,
    },
}

/// Build one NIC of the given kind. `params.paths` is clamped to what the model supports
/// (more driver paths than model paths only means more lanes); RoCEv2 has a single path per
/// QP and ignores it.
pub fn make_transport(
    kind: TransportKind,
    addr: NicAddr,
    seed: u64,
    params: &TransportParams,
) -> Result<Box<dyn Transport>, FactoryError> {
    use mroce_model::endpoint::{Endpoint, EndpointConfig};
    use mroce_model::rocev2::{RoceConfig, RoceEndpoint};
    match kind {
        TransportKind::Mroce => {
            let paths = params.paths.clamp(1, mroce_model::params::PATHS as u16) as u8;
            let d = EndpointConfig::default();
            Ok(Box::new(Endpoint::new(
                EndpointConfig {
                    addr,
                    paths,
                    rto_min_ns: params.rto_min_ns.unwrap_or(d.rto_min_ns),
                    rto_init_ns: params.rto_init_ns.unwrap_or(d.rto_init_ns),
                    peer_timeout_ns: params.peer_timeout_ns.unwrap_or(d.peer_timeout_ns),
                    ecn_reroute: params.ecn_reroute,
                    initial_conn_limit: params.initial_conn_limit,
                    tail_hedge: params.tail_hedge,
                    first_flight_ack_req: params.first_flight_ack_req,
                    fabric_rtt_ns: params.fabric_rtt_ns,
                    announce_fan_in: params.announce_fan_in,
                    ..d
                },
                seed,
            )))
        }
        TransportKind::Rocev2 => {
            let d = RoceConfig::default();
            let rto_ns = params.rto_min_ns.unwrap_or(d.rto_ns);
            let retry_limit = params
                .peer_timeout_ns
                .map_or(d.retry_limit, |t| rocev2_retries_spanning(rto_ns, t).max(d.retry_limit));
            Ok(Box::new(RoceEndpoint::new(
                RoceConfig {
                    addr,
                    rto_ns,
                    retry_limit,
                    ..d
                },
                seed,
            )))
        }
    }
}

/// Consecutive RoCEv2 timeouts whose backed-off waits (`rto << min(k, MAX_BACKOFF)`) add up to
/// at least `span_ns`. RC's usual 7 retries of a 50 µs RTO give up after 9.6 ms without
/// progress: in the simulator that is a dead path, over real sockets one scheduling stall of
/// a loaded host (seen in CI: a QP failed 63 WRITEs into 64 at 1 % kernel loss). A driver
/// that gives mroce a peer timeout gives RoCEv2 the same patience.
fn rocev2_retries_spanning(rto_ns: u64, span_ns: u64) -> u32 {
    use mroce_model::rocev2::MAX_BACKOFF;
    let rto = rto_ns.max(1);
    // the waits double up to MAX_BACKOFF, then stay at rto << MAX_BACKOFF
    let mut total = 0u64;
    for k in 0..=u32::from(MAX_BACKOFF) {
        if total >= span_ns {
            return k;
        }
        total = total.saturating_add(rto << k);
    }
    let last = rto.saturating_mul(1 << MAX_BACKOFF);
    let more = span_ns.saturating_sub(total).div_ceil(last);
    u32::try_from(u64::from(MAX_BACKOFF) + 1 + more).unwrap_or(u32::MAX)
}

/// Whether [`make_transport`] can build `kind` in this build.
pub fn is_available(kind: TransportKind) -> bool {
    !matches!(
        make_transport(
            kind,
            NicAddr::with_planes([2, 0, 0, 0, 0, 1], [10, 0, 0, 1], 1),
            0,
            &TransportParams::default()
        ),
        Err(FactoryError::Unavailable(_))
    )
}

#[cfg(test)]
mod tests {
    use super::rocev2_retries_spanning;

    #[test]
    fn rocev2_retries_cover_the_span() {
        // 50 µs × (1 + 2 + 4 + 8 + 16 + 32 + 64 + 64) = 9.55 ms: RC's 7 retries
        assert_eq!(rocev2_retries_spanning(50_000, 9_550_000), 8);
        assert_eq!(rocev2_retries_spanning(50_000, 6_350_000), 7);
        assert_eq!(rocev2_retries_spanning(50_000, 1), 1);
        // 5 s: 7 doubling waits, then 3.2 ms each
        assert_eq!(rocev2_retries_spanning(50_000, 5_000_000_000), 7 + 1561);
        assert_eq!(rocev2_retries_spanning(1, u64::MAX), u32::MAX);
    }
}
