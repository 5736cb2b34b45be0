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
}

impl Default for TransportParams {
    fn default() -> Self {
        TransportParams {
            paths: mroce_model::params::PATHS as u16,
            streams: 1,
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
            Ok(Box::new(Endpoint::new(
                EndpointConfig {
                    addr,
                    paths,
                    ..Default::default()
                },
                seed,
            )))
        }
        TransportKind::Rocev2 => Ok(Box::new(RoceEndpoint::new(
            RoceConfig {
                addr,
                ..Default::default()
            },
            seed,
        ))),
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
