//! The one interface between the suite and an implementation under test (IUT): frames in and
//! out, a clock, verbs, counters. Everything a case observes goes through it, so the same
//! catalogue runs against the model, the UDP runtime and (later) the co-simulated HDL.

use mroce_model::endpoint::EndpointConfig;
use mroce_model::memory::MrKey;
use mroce_model::transport::{ConnId, Event, LocalBuf, NicAddr, RemoteBuf, VerbError};

/// A capability a case may need beyond the basic interface. A target that lacks it reports
/// the case as not applicable, with the reason it gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Time advances exactly as the case says (virtual clock): timer values are checked to
    /// the nanosecond, and nothing happens between two frames handed in at the same instant.
    ExactTime,
    /// Arbitrary Ethernet/IPv4/UDP headers reach the IUT unchanged (bad EtherType, IPv4
    /// options or checksum, fragments, UDP port or length, Ethernet padding, TTL, UDP checksum).
    RawEnvelope,
    /// Frames can be handed in on a given port with a given ECN codepoint (CE marking).
    EcnMarking,
    /// CONNECTs from addresses the IUT does not know reach its neighbour-table check (§8.1).
    NeighbourTable,
    /// The IUT's addresses are those of the SPEC.md §5.11 scenario, so golden frames are fed
    /// and compared byte for byte.
    ScenarioAddresses,
}

/// How to configure the IUT for one case. The adapter decides the addresses (see
/// [`Env`]); everything else comes from `cfg`.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// Endpoint configuration (its `addr` is replaced by the adapter's).
    pub cfg: EndpointConfig,
    /// Planes of both NICs.
    pub planes: u8,
    /// Whether the tester is in the IUT's neighbour table from the start.
    pub tester_known: bool,
}

/// Addresses of one run, as the adapter assigned them.
#[derive(Debug, Clone, Copy)]
pub struct Env {
    /// The implementation under test.
    pub iut: NicAddr,
    /// The tester (the scripted peer NIC).
    pub tester: NicAddr,
    /// A third NIC the IUT does not know (source of "unknown peer" frames).
    pub stranger: NicAddr,
}

/// One frame the IUT emitted.
#[derive(Debug, Clone)]
pub struct OutFrame {
    /// Time of emission, ns (the adapter's clock).
    pub at: u64,
    /// Port (plane) it left on.
    pub plane: u8,
    /// The Ethernet frame (no preamble, no FCS).
    pub bytes: Vec<u8>,
}

/// The adapter trait: one implementation under test, driven by the suite.
pub trait Adapter {
    /// Target name ("model", "udp", "hdl").
    fn target(&self) -> &'static str;
    /// Why the IUT cannot run the whole suite (e.g. "co-simulation not built yet").
    fn unavailable(&self) -> Option<String> {
        None
    }
    /// How often a failed case is retried by default: 0 on a virtual clock; real-time targets
    /// may allow one retry (the scheduling of a shared host can let a timer interleave).
    fn default_retries(&self) -> u32 {
        0
    }
    /// Why the target lacks a capability (`None`: supported).
    fn lacks(&self, need: Need) -> Option<String>;
    /// Start a fresh IUT. Returns the addresses in use.
    fn start(&mut self, setup: &Setup) -> Result<Env, String>;
    /// Current time, ns.
    fn now(&self) -> u64;
    /// Let `ns` nanoseconds pass: timers run and frames sent meanwhile are collected.
    fn advance(&mut self, ns: u64);
    /// Hand one frame to the IUT, arriving on port `plane`.
    fn frame_in(&mut self, plane: u8, frame: &[u8]);
    /// Frames emitted since the last call, oldest first.
    fn frames_out(&mut self) -> Vec<OutFrame>;
    /// Events reported since the last call.
    fn events(&mut self) -> Vec<Event>;
    /// Counters as (name, value), names as in SPEC.md §9.3.
    fn counters(&mut self) -> Vec<(&'static str, u64)>;
    /// Called after a case's script passed: `Err` fails the case (e.g. the co-simulated
    /// hardware disagreed with the model), `Ok(Some(0))` makes it not applicable (the part of
    /// the implementation this target checks was never exercised), `Ok(Some(n))` counts the
    /// operations checked. `Ok(None)`: the target has no extra check (default).
    fn verify(&mut self) -> Result<Option<usize>, String> {
        Ok(None)
    }
    /// Implementation state for diagnostics (free text; not used by any check).
    fn debug_state(&mut self) -> String {
        String::new()
    }

    /// Register a zero-filled region.
    fn register(&mut self, len: usize, remote_write: bool) -> MrKey;
    /// Deregister a region.
    fn deregister(&mut self, key: MrKey) -> Result<(), String>;
    /// Fill local memory.
    fn write_mem(&mut self, key: MrKey, offset: u64, data: &[u8]) -> Result<(), String>;
    /// Read local memory.
    fn read_mem(&mut self, key: MrKey, offset: u64, len: u64) -> Result<Vec<u8>, String>;
    /// Make a NIC known (neighbour table).
    fn add_peer(&mut self, peer: NicAddr);
    /// connect verb.
    fn connect(&mut self, peer: NicAddr) -> Result<ConnId, VerbError>;
    /// disconnect verb.
    fn disconnect(&mut self, conn: ConnId) -> Result<(), VerbError>;
    /// post_write verb.
    fn post_write(
        &mut self,
        conn: ConnId,
        stream: u16,
        local: LocalBuf,
        remote: RemoteBuf,
        wr_id: u64,
    ) -> Result<(), VerbError>;
    /// post_send verb.
    fn post_send(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError>;
    /// post_recv verb.
    fn post_recv(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError>;
}
