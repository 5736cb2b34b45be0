//! mroce-sim: a discrete-event, packet-level simulator of multi-plane leaf-spine fabrics
//! whose endpoints are the `mroce_model` transports (mroce and the RoCEv2 baseline).
//!
//! The simulator is a *driver*: it owns the clock and the wire and talks to every NIC only
//! through the sans-IO [`Transport`] trait (`handle_frame`, `poll_transmit`, `poll_timeout`,
//! `handle_timeout`, `poll_event` and the verbs). It contains no protocol logic: switches
//! forward by the IPv4 destination and ECMP-hash the 5-tuple, queues mark CE by rewriting the
//! ECN bits with `wire::set_ecn`, and applications post WRITEs and react to completions.
//!
//! - [`fabric`]: topology, link numbering, rates, failures, the ECMP hash;
//! - [`workload`]: regions, connections, flows with dependencies, content checks;
//! - [`engine`]: the event loop ([`engine::run`]);
//! - [`experiments`]: the six experiments of `mroce sim` and their JSON summaries;
//! - [`output`]: JSON lines, CSV and SVG plots;
//! - [`pcap`]: classic pcap writer (shared with the `pipe` harness);
//! - [`queue`]: the event queue;
//! - [`rng`]: deterministic generators;
//! - [`route_bound`]: the rate fixed routes allow every flow at once (maximum concurrent flow).
#![warn(missing_docs)]

pub mod engine;
pub mod experiments;
pub mod fabric;
pub mod output;
pub mod pcap;
pub mod queue;
pub mod rng;
pub mod route_bound;
pub mod workload;

pub use mroce_model::transport::{NicAddr, Transport};
use serde::Serialize;

/// Which transport a run uses. The simulator never names the concrete model types: the
/// caller's factory builds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// mroce: multipath, selective repeat, one NIC port per plane, the NIC picks the plane.
    Mroce,
    /// RoCEv2 RC baseline: one path per QP, go-back-N, one port per NIC.
    Rocev2,
}

impl Kind {
    /// Both, in report order.
    pub const ALL: [Kind; 2] = [Kind::Mroce, Kind::Rocev2];

    /// Name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Mroce => "mroce",
            Kind::Rocev2 => "rocev2",
        }
    }

    /// Whether one NIC drives every plane (mroce) or a host needs one single-plane NIC per
    /// plane with the application striping over them (RoCEv2: a QP is bound to one port).
    pub fn spans_planes(self) -> bool {
        matches!(self, Kind::Mroce)
    }
}

impl core::fmt::Display for Kind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the simulator asks of a transport constructor (fields a transport lacks are ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TransportParams {
    /// Paths per connection (mroce).
    pub paths: u16,
    /// Payload bytes per packet.
    pub mtu: u16,
    /// Inbound capacity of the NIC, Mb/s (mroce's receiver fair-share hints).
    pub rx_capacity_mbps: u32,
    /// Connections the NIC must hold.
    pub max_connections: u32,
    /// mroce's policy for its path selector's ECN re-route verdict (`EndpointConfig::ecn_reroute`).
    #[serde(serialize_with = "ecn_reroute_name")]
    pub ecn_reroute: mroce_model::endpoint::EcnReroute,
    /// mroce's connection limit before the first rate hint (`EndpointConfig::initial_conn_limit`).
    pub initial_conn_limit: u16,
    /// mroce's tail hedge (`EndpointConfig::tail_hedge`).
    pub tail_hedge: bool,
    /// mroce's immediate ACKs for the first flight (`EndpointConfig::first_flight_ack_req`).
    pub first_flight_ack_req: bool,
    /// The fabric's unloaded RTT that mroce's rate hints are computed from at most, ns
    /// (`EndpointConfig::fabric_rtt_ns`; 0 = measured RTTs only).
    pub fabric_rtt_ns: u64,
    /// mroce's NICs announce their fan-in share to their peers (`EndpointConfig::announce_fan_in`).
    pub announce_fan_in: bool,
    /// RoCEv2's retransmission timeout, ns (`RoceConfig::rto_ns`; `None`: its default, mroce's
    /// 50 µs RTO floor).
    pub rocev2_rto_ns: Option<u64>,
    /// mroce's transmit order across connections (`EndpointConfig::tx_order`).
    #[serde(serialize_with = "tx_order_name")]
    pub tx_order: mroce_model::tx_order::TxOrder,
    /// RoCEv2's transmit order across QPs (`RoceConfig::tx_order`).
    #[serde(serialize_with = "tx_order_name")]
    pub rocev2_tx_order: mroce_model::tx_order::TxOrder,
}

fn tx_order_name<S: serde::Serializer>(o: &mroce_model::tx_order::TxOrder, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(o.as_str())
}

fn ecn_reroute_name<S: serde::Serializer>(p: &mroce_model::endpoint::EcnReroute, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(p.as_str())
}

/// Builds one NIC: `(kind, addresses, seed, params)`.
pub type Factory<'a> = dyn FnMut(Kind, NicAddr, u64, &TransportParams) -> Result<Box<dyn Transport>, String> + 'a;

/// The configuration of the mroce NIC at `addr` that [`model_factory`] builds.
pub fn mroce_config(addr: NicAddr, p: &TransportParams) -> mroce_model::endpoint::EndpointConfig {
    use mroce_model::endpoint::EndpointConfig;
    EndpointConfig {
        addr,
        paths: p.paths.clamp(1, mroce_model::params::PATHS as u16) as u8,
        mtu: p.mtu,
        rx_capacity_mbps: p.rx_capacity_mbps,
        max_connections: p.max_connections.max(EndpointConfig::default().max_connections),
        ecn_reroute: p.ecn_reroute,
        initial_conn_limit: p.initial_conn_limit,
        tail_hedge: p.tail_hedge,
        first_flight_ack_req: p.first_flight_ack_req,
        fabric_rtt_ns: p.fabric_rtt_ns,
        announce_fan_in: p.announce_fan_in,
        tx_order: p.tx_order,
        ..Default::default()
    }
}

/// The model's NICs (mroce `Endpoint`, RoCEv2 `RoceEndpoint`) as a [`Factory`]: what
/// `mroce sim` runs. Configured here rather than by `mroce::transports::make_transport`, which
/// does not take the MTU, the receiver capacity (mroce's fair-share hints must equal the NIC's
/// inbound capacity, which varies with the fabric) or the connection-table size.
pub fn model_factory(kind: Kind, addr: NicAddr, seed: u64, p: &TransportParams) -> Result<Box<dyn Transport>, String> {
    use mroce_model::endpoint::Endpoint;
    use mroce_model::rocev2::{RoceConfig, RoceEndpoint};
    Ok(match kind {
        Kind::Mroce => Box::new(Endpoint::new(mroce_config(addr, p), seed)),
        Kind::Rocev2 => Box::new(RoceEndpoint::new(
            RoceConfig {
                addr,
                mtu: p.mtu,
                rto_ns: p.rocev2_rto_ns.unwrap_or(RoceConfig::default().rto_ns),
                tx_order: p.rocev2_tx_order,
                ..Default::default()
            },
            seed,
        )),
    })
}
