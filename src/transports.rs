//! The one place where drivers construct transports. Every driver works against
//! [`mroce_model::transport::Transport`] only; this factory is the single spot that names
//! the concrete types, so a new transport (or a constructor change) touches nothing else.

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
    /// A connection without ACK progress for this long fails (mroce), ns.
    pub peer_timeout_ns: Option<u64>,
}

impl Default for TransportParams {
    fn default() -> Self {
        TransportParams {
            paths: mroce_model::params::PATHS as u16,
            streams: 1,
            rto_min_ns: None,
            rto_init_ns: None,
            peer_timeout_ns: None,
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
                    ..d
                },
                seed,
            )))
        }
        TransportKind::Rocev2 => {
            let d = RoceConfig::default();
            Ok(Box::new(RoceEndpoint::new(
                RoceConfig {
                    addr,
                    rto_ns: params.rto_min_ns.unwrap_or(d.rto_ns),
                    ..d
                },
                seed,
            )))
        }
    }
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
