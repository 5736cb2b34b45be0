//! Connection layer of mroce: ordered streams over sprayed paths, direct placement,
//! per-message de-duplication, loss recovery and congestion control (SPEC.md §8).
//!
//! A [`Connection`] is driven by the [`crate::endpoint::Endpoint`] (the NIC) and owns one
//! instance of each hardware-mapped component: [`RxTracker`], [`TxScoreboard`] and
//! [`PathSelector`]. Everything else here (message tables, streams) is the part a NIC keeps
//! in host-visible memory or firmware.

use alloc::collections::VecDeque;
use alloc::vec;
use alloc::vec::Vec;

use crate::component_trace::{ComponentCalls, TracedPathSelector, TracedRxTracker, TracedTxScoreboard};
use crate::endpoint::EcnReroute;
use crate::memory::Memory;
use crate::params::{
    ACK_DELAY_NS, LOSS_THRESHOLD, PATHS, PATH_DOWN_RTOS, PROBE_INTERVAL_NS, SACK_WORDS, SACK_WORD_BITS,
};
use crate::path_selector::{Credit, PathHealth, PathSelector};
use crate::rtt::RttEstimator;
use crate::rx_tracker::{AckSnapshot, RxPacket, RxTracker, RxVerdict};
use crate::transport::{Completion, ConnId, Event, LocalBuf, Nanos, NicAddr, RemoteBuf, Status, WorkKind};
use crate::tx_order::{self, TxKey};
use crate::tx_scoreboard::{TimerResult, TxScoreboard, WordResult};
use crate::wire::{self, Akh, Mrh, Nkh, Rph, Sdh};
use crate::{seq, Counters, Rng};

/// One path-selector command of the NIC control core (the firmware's `SEL_CMD`), applied to a
/// connection whose path health the control core decides (`EndpointConfig::firmware_path_health`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlOp {
    /// `PathSelector::new(paths, planes)`; must match the connection's negotiated counts.
    Init {
        /// Paths.
        paths: u8,
        /// Planes.
        planes: u8,
    },
    /// `set_health(path, health)`.
    SetHealth {
        /// Path.
        path: u8,
        /// New health.
        health: PathHealth,
    },
    /// `clear_inflight(path)`.
    ClearInflight {
        /// Path.
        path: u8,
    },
    /// `request_reroll(path, random)`: new entropy once the path drained.
    RequestReroll {
        /// Path.
        path: u8,
        /// Random input.
        random: u16,
    },
    /// `reroll(path, random)`: new entropy now.
    Reroll {
        /// Path.
        path: u8,
        /// Random input.
        random: u16,
    },
    /// `set_plane(path, plane)`: move the path to another plane.
    SetPlane {
        /// Path.
        path: u8,
        /// Plane.
        plane: u8,
    },
    /// `set_plane_up(plane, up)`.
    SetPlaneUp {
        /// Plane.
        plane: u8,
        /// Up or down.
        up: bool,
    },
    /// `set_conn_limit(pkts)`.
    SetConnLimit {
        /// Packets in flight.
        pkts: u16,
    },
}

/// Why a [`ControlOp`] was refused (nothing was applied).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlError {
    /// The path is beyond `PATHS`.
    BadPath(u8),
    /// The plane is beyond the connection's planes.
    BadPlane(u8),
    /// `Init` with counts other than the connection's.
    InitMismatch {
        /// Paths asked for.
        paths: u8,
        /// Planes asked for.
        planes: u8,
    },
}

/// Messages a receiver tracks ahead of the next one to complete, per stream.
pub const MAX_MSGS_AHEAD: u32 = 1 << 16;
/// Failed messages a receiver remembers, to NAK their retransmissions again.
pub const FAILED_MEMORY: usize = 64;
/// Tail-loss probes per path per RTO period: the first at TLP_TIME, each further one an SRTT
/// plus the ACK delay after the previous one went unanswered (SPEC.md §8.4).
pub const TLP_MAX_PROBES: u8 = 3;

/// State of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnState {
    /// CONNECT sent, waiting for CONNECT_ACK.
    Connecting {
        /// Request nonce.
        nonce: u64,
        /// Attempts so far.
        tries: u8,
        /// Next retry time.
        retry_at: Nanos,
    },
    /// Data may flow.
    Established,
    /// DISCONNECT sent, waiting for DISCONNECT_ACK.
    Closing {
        /// Attempts so far.
        tries: u8,
        /// Next retry time.
        retry_at: Nanos,
    },
}

/// What occupies a transmit slot (one per path PSN in the window).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Empty,
    Probe,
    Chunk(ChunkRef),
}

/// The transmit slots of every path (SPEC.md §8.3), `PATHS` × `SACK_BITS`: 12 bytes each (the
/// enum takes 16), all zero when Empty, so the table is one zeroed allocation rather than
/// 4,096 enum writes when a connection opens. It is most of a connection's state
/// (`mroce sim connections`: 53.6 KB per connection in all).
#[derive(Debug)]
struct SlotTable(Vec<[u32; 3]>);

impl SlotTable {
    const PROBE: u32 = 1;
    const CHUNK: u32 = 2;

    fn new() -> Self {
        SlotTable(vec![[0; 3]; PATHS * crate::params::SACK_BITS])
    }

    fn index(path: u8, psn: u32) -> usize {
        path as usize % PATHS * crate::params::SACK_BITS + psn as usize % crate::params::SACK_BITS
    }

    fn put(&mut self, path: u8, psn: u32, slot: Slot) {
        self.0[Self::index(path, psn)] = match slot {
            Slot::Empty => [0; 3],
            Slot::Probe => [Self::PROBE, 0, 0],
            Slot::Chunk(c) => [Self::CHUNK | u32::from(c.stream) << 16, c.msg_seq, c.chunk],
        };
    }

    /// The slot of `psn` on `path`, left in place.
    fn get(&self, path: u8, psn: u32) -> Slot {
        match self.0[Self::index(path, psn)] {
            [w, _, _] if w & 3 == Self::PROBE => Slot::Probe,
            [w, m, c] if w & 3 == Self::CHUNK => Slot::Chunk(ChunkRef {
                stream: (w >> 16) as u16,
                msg_seq: m,
                chunk: c,
            }),
            _ => Slot::Empty,
        }
    }

    /// The slot of `psn` on `path`, which becomes Empty.
    fn take(&mut self, path: u8, psn: u32) -> Slot {
        let slot = self.get(path, psn);
        self.0[Self::index(path, psn)] = [0; 3];
        slot
    }
}

/// Identity of one packet-sized piece of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct ChunkRef {
    stream: u16,
    msg_seq: u32,
    chunk: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MsgKind {
    Write(RemoteBuf),
    /// SEND with its receive sequence number (its index among the stream's SENDs).
    Send(u32),
}

#[derive(Debug)]
struct TxMsg {
    kind: MsgKind,
    local: LocalBuf,
    wr_id: u64,
    nchunks: u32,
    next_chunk: u32,
    acked: Vec<u64>,
    acked_count: u32,
    inflight: Vec<u8>,
    status: Option<Status>,
    /// Endpoint time of the post: the message's rank in the NIC's oldest-first transmit order.
    posted_at: Nanos,
}

impl TxMsg {
    fn done(&self) -> bool {
        self.status.is_some() || self.acked_count == self.nchunks
    }
}

#[derive(Debug, Default)]
struct StreamTx {
    /// Sequence number of `msgs[0]`.
    base_seq: u32,
    msgs: VecDeque<TxMsg>,
    /// Index in `msgs` of the first message with unsent chunks.
    cursor: usize,
    queued: bool,
    /// Receive sequence number of the next SEND posted on this stream.
    next_rsn: u32,
}

#[derive(Debug)]
struct RxMsg {
    write: bool,
    /// RSN of a SEND (None for a WRITE).
    rsn: Option<u32>,
    len: u32,
    nchunks: u32,
    got: Vec<u64>,
    got_count: u32,
    status: Option<Status>,
}

#[derive(Debug, Default)]
struct StreamRx {
    /// Sequence number of the next message to complete (`msgs[0]`).
    next_seq: u32,
    msgs: VecDeque<Option<RxMsg>>,
    /// Posted receive buffers; `recvs[i]` is consumed by the SEND with RSN `recv_base + i`.
    recvs: VecDeque<(LocalBuf, u64)>,
    /// RSN matched by `recvs[0]`.
    recv_base: u32,
}

/// An outgoing control frame waiting for the transmit scheduler.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ctrl {
    Ack {
        conn: ConnId,
        plane: u8,
        sport: u16,
        akh: Akh,
    },
    Nak {
        conn: ConnId,
        plane: u8,
        nkh: Nkh,
    },
}

/// Everything a connection may touch outside itself.
pub(crate) struct Ctx<'a> {
    pub mem: &'a mut Memory,
    pub events: &'a mut VecDeque<Event>,
    pub ctrl: &'a mut VecDeque<Ctrl>,
    pub counters: &'a mut Counters,
    pub rng: &'a mut Rng,
}

/// One mroce connection.
#[derive(Debug)]
pub struct Connection {
    pub(crate) id: ConnId,
    pub(crate) peer_conn: u32,
    pub(crate) peer: NicAddr,
    pub(crate) state: ConnState,
    pub(crate) paths: u8,
    pub(crate) planes: u8,
    pub(crate) mtu: u16,
    pub(crate) isn_tx: u32,
    pub(crate) isn_rx: u32,
    pub(crate) rx_capacity_mbps: u32,
    pub(crate) streams_max: u16,
    pub(crate) nonce: u64,
    // Transmit side.
    sb: TracedTxScoreboard,
    sel: TracedPathSelector,
    rtt: [RttEstimator; PATHS],
    slots: SlotTable,
    streams_tx: Vec<StreamTx>,
    active: VecDeque<u16>,
    retx: VecDeque<ChunkRef>,
    tlp_at: [Option<Nanos>; PATHS],
    /// Tail-loss probes sent on each path since its last progress or RTO (at most
    /// `TLP_MAX_PROBES` per RTO period).
    tlp_sent: [u8; PATHS],
    /// Bit p: path p's newest frame is data, so a trailing probe is owed when the send
    /// queue runs dry (SPEC.md §8.4).
    trail_owed: u32,
    /// Send time (low 32 bits of ns) of the newest data or probe frame of each path: the
    /// evidence test of the early tail-loss probe (SPEC.md §8.4).
    last_tx: [u32; PATHS],
    /// Bit p: path p's newest frame asked for an immediate ACK (a probe, or data with AckReq),
    /// so the early tail-loss probe need not allow for the receiver's ACK delay (SPEC.md §8.4).
    tail_ack_req: u32,
    /// No ACK has arrived yet (SPEC.md §8.3 step 7).
    first_flight: bool,
    /// `EndpointConfig::first_flight_ack_req`.
    first_flight_ack_req: bool,
    /// The first flight asks for an immediate ACK of every packet, so that the ACK clock
    /// starts one RTT after the first packet instead of one RTT plus the receiver's
    /// coalescing delay. Not while the peer's port may be shared: with `fabric_rtt_ns`
    /// configured, only once a fan-in announcement allows the whole initial limit.
    quick_ack: bool,
    probe_at: [Option<Nanos>; PATHS],
    rtos_in_row: [u8; PATHS],
    last_progress: Nanos,
    // Receive side.
    rt: TracedRxTracker,
    streams_rx: Vec<StreamRx>,
    ack_at: [Option<Nanos>; PATHS],
    ack_plane: [u8; PATHS],
    ack_sport: [u16; PATHS],
    ack_ts: [u32; PATHS],
    failed: VecDeque<(u16, u32, u8)>,
    pub(crate) last_rx_data: Nanos,
    pub(crate) rate_hint_mbps: u32,
    /// Packets in flight the last rate hint allows (SPEC.md §8.5); `u16::MAX` before one.
    hint_limit: u16,
    /// Limit held above `hint_limit` while a cut left more in flight (0 = none): it steps
    /// down with deliveries and losses instead of stopping the connection (§8.5).
    limit_hold: u16,
    /// Packets in flight when the hold began (H0).
    hold_start: u16,
    /// Packets delivered since the hold began.
    hold_delivered: u16,
    /// Packets found lost since the hold began.
    hold_lost: u16,
    pub(crate) in_ready: bool,
    /// The last `poll_transmit` found data and an eligible path, but only on planes whose
    /// port was busy.
    pub(crate) port_blocked: bool,
    /// The eligible paths that poll found (`blocked_verdict` reads them back).
    blocked_paths: u32,
    pub(crate) scheduled: Option<Nanos>,
    noted: Option<Nanos>,
    /// No message was pending since the last completion.
    idle: bool,
    rto_min_ns: u64,
    rto_init_ns: u64,
    /// Path and plane health are decided by the control core ([`ControlOp`]), not here.
    firmware_health: bool,
    /// What to do with CREDIT's re-route verdict (`EndpointConfig::ecn_reroute`).
    ecn_reroute: EcnReroute,
    /// Connection limit before the first rate hint (`EndpointConfig::initial_conn_limit`).
    initial_limit: u16,
    /// Ceiling on the RTT a shared rate hint's limit is computed from, ns; 0 = none
    /// (`EndpointConfig::fabric_rtt_ns`).
    fabric_rtt_ns: u64,
    /// Keep a second copy of doubtful tail chunks in flight (`EndpointConfig::tail_hedge`).
    tail_hedge: bool,
    /// Chunks owed a second copy, each with the path to avoid, while nothing else waits to
    /// be sent: a retransmission just sent, the newest chunk of a path whose TLP fired, a
    /// chunk that lost one of its two copies (SPEC.md §8.3, tail hedge). At most `PATHS`.
    hedges: VecDeque<(ChunkRef, u8)>,
}

fn bit_test(v: &[u64], i: u32) -> bool {
    v.get(i as usize / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
}
fn bit_set(v: &mut [u64], i: u32) {
    if let Some(w) = v.get_mut(i as usize / 64) {
        *w |= 1 << (i % 64);
    }
}

/// Lower 32 bits of the clock, as the hardware timers see it.
fn t32(now: Nanos) -> u32 {
    now as u32
}

/// Convert a 32-bit deadline back to 64-bit time relative to `now`.
fn t64(now: Nanos, d: u32) -> Nanos {
    let delta = d.wrapping_sub(t32(now));
    if seq::is_negative(delta) {
        now
    } else {
        now + u64::from(delta)
    }
}

impl Connection {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: ConnId,
        peer: NicAddr,
        paths: u8,
        planes: u8,
        mtu: u16,
        isn_tx: u32,
        state: ConnState,
        nonce: u64,
        rng: &mut Rng,
        now: Nanos,
        trace: bool,
    ) -> Self {
        let paths = paths.clamp(1, PATHS as u8);
        let planes = planes.max(1);
        let mut sel = TracedPathSelector::new(PathSelector::default(), trace);
        Self::init_selector(&mut sel, paths, planes, rng);
        let mut sb = TracedTxScoreboard::new(TxScoreboard::default(), trace);
        sb.reinit(isn_tx);
        let mut rt = TracedRxTracker::new(RxTracker::default(), trace);
        rt.reinit(0);
        Connection {
            id,
            peer_conn: 0,
            peer,
            state,
            paths,
            planes,
            mtu: mtu.max(64),
            isn_tx,
            isn_rx: 0,
            rx_capacity_mbps: 0,
            streams_max: crate::params::MAX_STREAMS,
            nonce,
            sb,
            sel,
            rtt: [RttEstimator::default(); PATHS],
            slots: SlotTable::new(),
            streams_tx: Vec::new(),
            active: VecDeque::new(),
            retx: VecDeque::new(),
            tlp_at: [None; PATHS],
            tlp_sent: [0; PATHS],
            trail_owed: 0,
            last_tx: [0; PATHS],
            tail_ack_req: 0,
            first_flight: true,
            quick_ack: true,
            first_flight_ack_req: true,
            probe_at: [None; PATHS],
            rtos_in_row: [0; PATHS],
            last_progress: now,
            rt,
            streams_rx: Vec::new(),
            ack_at: [None; PATHS],
            ack_plane: [0; PATHS],
            ack_sport: [0; PATHS],
            ack_ts: [0; PATHS],
            failed: VecDeque::new(),
            last_rx_data: 0,
            rate_hint_mbps: 0,
            hint_limit: u16::MAX,
            limit_hold: 0,
            hold_start: 0,
            hold_delivered: 0,
            hold_lost: 0,
            in_ready: false,
            port_blocked: false,
            blocked_paths: 0,
            scheduled: None,
            noted: None,
            idle: true,
            rto_min_ns: crate::params::RTO_MIN_NS,
            rto_init_ns: crate::params::RTO_INIT_NS,
            firmware_health: false,
            ecn_reroute: EcnReroute::Every,
            initial_limit: u16::MAX,
            fabric_rtt_ns: 0,
            tail_hedge: false,
            hedges: VecDeque::new(),
        }
    }

    /// Apply the parameters negotiated by CONNECT_ACK (before any data was sent): the path
    /// selector is rebuilt for the agreed path and plane counts.
    pub(crate) fn renegotiate(&mut self, paths: u8, planes: u8, mtu: u16, rng: &mut Rng) {
        self.paths = paths.clamp(1, PATHS as u8);
        self.planes = planes.max(1);
        self.mtu = mtu.max(64);
        Self::init_selector(&mut self.sel, self.paths, self.planes, rng);
        self.sel.set_conn_limit(self.initial_limit);
    }

    fn init_selector(sel: &mut TracedPathSelector, paths: u8, planes: u8, rng: &mut Rng) {
        sel.reinit(paths, planes);
        // Within each plane, consecutive entropies from an independent random base: distinct,
        // spread evenly by a modulo ECMP function, and (base unaligned, one per plane) not the
        // same XOR pattern on every plane for a linear CRC hash. Re-rolls later are random.
        let mut bases = [0u16; crate::params::MAX_PLANES];
        for b in bases.iter_mut() {
            *b = rng.next_u32() as u16;
        }
        let planes = planes.clamp(1, crate::params::MAX_PLANES as u8);
        for p in 0..paths {
            let plane = (p % planes) as usize;
            sel.reroll(p, bases[plane].wrapping_add(u16::from(p / planes)));
        }
    }

    /// Set the receive ISN once the peer's is known.
    pub(crate) fn set_rx_isn(&mut self, isn: u32) {
        self.isn_rx = isn;
        self.rt.reinit(isn);
    }

    /// RTO of path `pi` under this connection's bounds.
    fn rto(&self, pi: usize) -> u32 {
        let borrowed = if self.rtt[pi].valid { None } else { self.borrowed_rtt() };
        self.rto_with(pi, borrowed)
    }

    /// The RTT estimate a path without a sample yet borrows: that of the first sampled path of
    /// the same connection (same endpoints, similar route), instead of the long initial RTO.
    fn borrowed_rtt(&self) -> Option<RttEstimator> {
        self.rtt[..self.paths as usize].iter().find(|r| r.valid).copied()
    }

    /// [`Self::rto`] given [`Self::borrowed_rtt`], for callers that take the RTO of every path
    /// at once and look the borrowed estimate up once.
    fn rto_with(&self, pi: usize, borrowed: Option<RttEstimator>) -> u32 {
        let r = match borrowed {
            Some(b) if !self.rtt[pi].valid => b,
            _ => self.rtt[pi],
        };
        r.rto_bounded(self.rto_min_ns, self.rto_init_ns)
    }

    /// Set the RTO floor and the RTO used before the first RTT sample (endpoint config).
    pub(crate) fn set_rto_bounds(&mut self, min_ns: u64, init_ns: u64) {
        self.rto_min_ns = min_ns;
        self.rto_init_ns = init_ns;
    }

    /// The policy for the path selector's ECN re-route verdicts (`EndpointConfig::ecn_reroute`).
    pub(crate) fn set_ecn_reroute(&mut self, policy: EcnReroute) {
        self.ecn_reroute = policy;
    }

    /// Packets in flight allowed until the first rate hint (`EndpointConfig::initial_conn_limit`):
    /// without it the first flight is every path's initial window, more than the port can
    /// deliver before the first ACK.
    pub(crate) fn set_initial_conn_limit(&mut self, pkts: u16) {
        self.initial_limit = pkts;
        if self.rate_hint_mbps == 0 && self.limit_hold == 0 {
            self.sel.set_conn_limit(pkts);
        }
    }

    /// Whether the first flight asks for immediate ACKs (`EndpointConfig::first_flight_ack_req`).
    pub(crate) fn set_first_flight_ack_req(&mut self, on: bool) {
        self.first_flight_ack_req = on;
    }

    /// The fabric's unloaded round trip (`EndpointConfig::fabric_rtt_ns`): a shared rate
    /// hint's limit is computed from no larger an RTT, whatever the samples say.
    pub(crate) fn set_fabric_rtt(&mut self, ns: u64) {
        self.fabric_rtt_ns = ns;
        self.quick_ack = ns == 0;
    }

    /// Hedge doubtful tail chunks (`EndpointConfig::tail_hedge`, SPEC.md §8.3).
    pub(crate) fn set_tail_hedge(&mut self, on: bool) {
        self.tail_hedge = on;
        if !on {
            self.hedges.clear();
        }
    }

    /// Leave path/plane health decisions (health, re-rolls, plane up/down) to the control core;
    /// RTO expiry, retransmission, probes of paths that are not Up and credit stay here.
    pub(crate) fn set_firmware_health(&mut self, on: bool) {
        self.firmware_health = on;
    }

    /// Apply one control-core selector command. Not recorded in the component trace: the
    /// hardware executed it itself (`SEL_CMD`). Probing follows the new health: a Suspect path
    /// is probed now, a Down path every `PROBE_INTERVAL_NS`, an Up or Disabled one not at all.
    pub fn apply_control(&mut self, now: Nanos, op: ControlOp) -> Result<(), ControlError> {
        let path_ok = |p: u8| {
            if (p as usize) < PATHS {
                Ok(p)
            } else {
                Err(ControlError::BadPath(p))
            }
        };
        match op {
            ControlOp::Init { paths, planes } => {
                if paths != self.paths || planes != self.planes {
                    return Err(ControlError::InitMismatch { paths, planes });
                }
                self.sel.apply_unrecorded(|s| *s = PathSelector::new(paths, planes));
            }
            ControlOp::SetHealth { path, health } => {
                let p = path_ok(path)?;
                self.sel.apply_unrecorded(|s| s.set_health(p, health));
                let pi = p as usize;
                match health {
                    PathHealth::Suspect => {
                        if self.probe_at[pi].is_none() {
                            self.probe_at[pi] = Some(now);
                            self.note(now);
                        }
                    }
                    PathHealth::Down => {
                        if self.probe_at[pi].is_none() {
                            self.probe_at[pi] = Some(now + PROBE_INTERVAL_NS);
                            self.note(now + PROBE_INTERVAL_NS);
                        }
                    }
                    PathHealth::Up | PathHealth::Disabled => self.probe_at[pi] = None,
                }
            }
            ControlOp::ClearInflight { path } => {
                let p = path_ok(path)?;
                self.sel.apply_unrecorded(|s| s.clear_inflight(p));
            }
            ControlOp::RequestReroll { path, random } => {
                let p = path_ok(path)?;
                self.sel.apply_unrecorded(|s| s.request_reroll(p, random));
            }
            ControlOp::Reroll { path, random } => {
                let p = path_ok(path)?;
                self.sel.apply_unrecorded(|s| s.reroll(p, random));
            }
            ControlOp::SetPlane { path, plane } => {
                let p = path_ok(path)?;
                if plane >= self.planes {
                    return Err(ControlError::BadPlane(plane));
                }
                self.sel.apply_unrecorded(|s| s.set_plane(p, plane));
            }
            ControlOp::SetPlaneUp { plane, up } => {
                if plane >= self.planes {
                    return Err(ControlError::BadPlane(plane));
                }
                self.sel.apply_unrecorded(|s| s.set_plane_up(plane, up));
            }
            ControlOp::SetConnLimit { pkts } => self.sel.apply_unrecorded(|s| s.set_conn_limit(pkts)),
        }
        Ok(())
    }

    /// Paths in use (negotiated).
    pub fn paths(&self) -> u8 {
        self.paths
    }

    /// Planes (negotiated).
    pub fn planes(&self) -> u8 {
        self.planes
    }

    /// Path selector (read-only, for tests and telemetry).
    pub fn selector(&self) -> &PathSelector {
        &self.sel
    }

    /// Transmit scoreboard (read-only).
    pub fn scoreboard(&self) -> &TxScoreboard {
        &self.sb
    }

    /// Receive tracker (read-only).
    pub fn tracker(&self) -> &RxTracker {
        &self.rt
    }

    /// The component operations recorded since the last call (empty unless the endpoint was
    /// configured with `trace_components`).
    pub fn take_component_calls(&mut self) -> ComponentCalls {
        ComponentCalls {
            rx: self.rt.take_log(),
            tx: self.sb.take_log(),
            sel: self.sel.take_log(),
        }
    }

    /// RTT estimate of a path.
    pub fn rtt(&self, path: u8) -> &RttEstimator {
        &self.rtt[path as usize % PATHS]
    }

    /// Mark a plane down or up by hand (firmware / operator action; normally automatic).
    pub fn set_plane_up(&mut self, plane: u8, up: bool) {
        self.sel.set_plane_up(plane, up);
    }

    fn stream_tx(&mut self, stream: u16) -> &mut StreamTx {
        let i = stream as usize;
        if self.streams_tx.len() <= i {
            self.streams_tx.resize_with(i + 1, StreamTx::default);
        }
        &mut self.streams_tx[i]
    }

    fn stream_rx(&mut self, stream: u16) -> &mut StreamRx {
        let i = stream as usize;
        if self.streams_rx.len() <= i {
            self.streams_rx.resize_with(i + 1, StreamRx::default);
        }
        &mut self.streams_rx[i]
    }

    /// Queue a WRITE or SEND message; `now` is the endpoint's time.
    pub(crate) fn post(&mut self, now: Nanos, stream: u16, local: LocalBuf, remote: Option<RemoteBuf>, wr_id: u64) {
        let mtu = u32::from(self.mtu);
        let nchunks = local.len.div_ceil(mtu).max(1);
        let st = self.stream_tx(stream);
        let kind = match remote {
            Some(r) => MsgKind::Write(r),
            None => {
                st.next_rsn = st.next_rsn.wrapping_add(1);
                MsgKind::Send(st.next_rsn.wrapping_sub(1))
            }
        };
        let msg = TxMsg {
            kind,
            local,
            wr_id,
            nchunks,
            next_chunk: 0,
            acked: vec![0; (nchunks as usize).div_ceil(64)],
            acked_count: 0,
            inflight: vec![0; nchunks as usize],
            status: None,
            posted_at: now,
        };
        let st = self.stream_tx(stream);
        st.msgs.push_back(msg);
        if !st.queued {
            st.queued = true;
            self.active.push_back(stream);
        }
    }

    /// Post a receive buffer.
    pub(crate) fn post_recv(&mut self, stream: u16, local: LocalBuf, wr_id: u64) {
        self.stream_rx(stream).recvs.push_back((local, wr_id));
    }

    /// The connection's rank in the NIC's oldest-first transmit order (SPEC.md §8.3): the
    /// post time of its oldest message with unsent chunks (each stream's first such message
    /// is at its cursor); with none in the active list, only retransmissions and probes, which
    /// go first.
    pub(crate) fn tx_key(&self) -> TxKey {
        let oldest = self
            .active
            .iter()
            .filter_map(|&s| {
                let st = self.streams_tx.get(s as usize)?;
                st.msgs.get(st.cursor).map(|m| m.posted_at)
            })
            .min();
        tx_order::tx_key(oldest.is_some(), oldest.unwrap_or(0))
    }

    /// Anything to send (new data or retransmissions), ignoring windows.
    pub(crate) fn has_work(&self) -> bool {
        !self.retx.is_empty() || !self.active.is_empty() || self.trail_owed != 0 || self.probe_due_any()
    }

    fn probe_due_any(&self) -> bool {
        self.probe_at.iter().any(|p| p.is_some()) || self.tlp_at.iter().any(|p| p.is_some())
    }

    /// Outstanding messages (sent or queued, not yet completed).
    pub(crate) fn pending_messages(&self) -> usize {
        self.streams_tx.iter().map(|s| s.msgs.len()).sum()
    }

    // -----------------------------------------------------------------------------------
    // Transmit
    // -----------------------------------------------------------------------------------

    /// Next chunk to send: a retransmission first, else new data round robin over streams.
    fn next_chunk(&mut self, counters: &mut Counters) -> Option<(ChunkRef, bool)> {
        while let Some(c) = self.retx.front().copied() {
            match self.msg_tx(c.stream, c.msg_seq) {
                Some(m) if !m.done() && !bit_test(&m.acked, c.chunk) && m.inflight[c.chunk as usize] == 0 => {
                    return Some((c, true));
                }
                _ => {
                    self.retx.pop_front();
                    counters.retx_cancelled += 1;
                }
            }
        }
        while let Some(&s) = self.active.front() {
            let st = &mut self.streams_tx[s as usize];
            while st.cursor < st.msgs.len() {
                let m = &st.msgs[st.cursor];
                if m.status.is_none() && m.next_chunk < m.nchunks {
                    let c = ChunkRef {
                        stream: s,
                        msg_seq: st.base_seq.wrapping_add(st.cursor as u32),
                        chunk: m.next_chunk,
                    };
                    return Some((c, false));
                }
                st.cursor += 1;
            }
            st.queued = false;
            self.active.pop_front();
        }
        None
    }

    /// The local bytes of a chunk are still registered.
    fn local_ok(&self, c: ChunkRef, ctx: &Ctx<'_>) -> bool {
        let mtu = u32::from(self.mtu);
        match self.msg_tx(c.stream, c.msg_seq) {
            Some(m) => {
                let off = c.chunk * mtu;
                let len = m.local.len.saturating_sub(off).min(mtu);
                ctx.mem
                    .check_local(m.local.key, m.local.offset + u64::from(off), u64::from(len))
                    .is_ok()
            }
            None => true,
        }
    }

    fn msg_tx(&self, stream: u16, msg_seq: u32) -> Option<&TxMsg> {
        let st = self.streams_tx.get(stream as usize)?;
        let i = msg_seq.wrapping_sub(st.base_seq);
        st.msgs.get(i as usize)
    }

    fn msg_tx_mut(&mut self, stream: u16, msg_seq: u32) -> Option<&mut TxMsg> {
        let st = self.streams_tx.get_mut(stream as usize)?;
        let i = msg_seq.wrapping_sub(st.base_seq);
        st.msgs.get_mut(i as usize)
    }

    fn frame_addrs(&self, local: &NicAddr, plane: u8, sport: u16) -> wire::FrameAddrs {
        let p = (plane as usize) % crate::params::MAX_PLANES;
        wire::FrameAddrs {
            dst_mac: self.peer.mac,
            src_mac: local.mac,
            src_ip: local.ips[p],
            dst_ip: self.peer.ips[p],
            src_port: sport,
            dscp: 26,
            ecn: wire::ecn::ECT0,
            ttl: 64,
        }
    }

    /// Send one probe if one is due on some path. Probes consume a PSN and request an ACK.
    fn poll_probe(&mut self, now: Nanos, local: &NicAddr, buf: &mut [u8], ctx: &mut Ctx<'_>) -> Option<(usize, u8)> {
        for p in 0..self.paths {
            let pi = p as usize;
            let due = self.probe_at[pi].is_some_and(|t| t <= now) || self.tlp_at[pi].is_some_and(|t| t <= now);
            if !due || !self.sb.has_room(p) {
                continue;
            }
            let down = self.sel.path(p).health == PathHealth::Down;
            if down && self.sb.outstanding(p) > 0 {
                // One probe at a time on a dead path; the next one after it resolves.
                self.probe_at[pi] = Some(now + PROBE_INTERVAL_NS);
                continue;
            }
            let tlp = self.tlp_at[pi].is_some_and(|t| t <= now);
            let reprobe = tlp && self.tlp_sent[pi] > 0;
            if reprobe && !down && self.tail_hedge && self.retx.is_empty() && self.active.is_empty() {
                // Nothing else to send and the path's last probe went unanswered: another probe
                // can only tell whether its newest chunk arrived; a copy on another path
                // delivers it if not. (On a first TLP, often only a late ACK, copies cost 1.6 %
                // of the halving-doubling all-reduce's time, sim/README.md.)
                if let Some(c) = self.newest_outstanding_chunk(p) {
                    self.owe_hedge(c, p);
                }
            }
            self.tlp_at[pi] = None;
            self.probe_at[pi] = if down { Some(now + PROBE_INTERVAL_NS) } else { None };
            let sent = self.send_probe(p, now, local, buf, ctx);
            if let Some(t) = self.probe_at[pi] {
                self.note(t);
            }
            if tlp {
                self.tlp_sent[pi] = self.tlp_sent[pi].saturating_add(1);
                self.arm_reprobe(p, now);
            }
            return sent;
        }
        None
    }

    /// Trailing probe: the send queue just ran dry, so nothing will follow the newest data
    /// frame of each path and reveal its loss by a gap. One probe behind it on every path
    /// whose newest frame is unanswered data asks for an immediate ACK: a lost tail is found
    /// one RTT after it left instead of at the TLP time (about two SRTTs), and a tail that
    /// arrived is acknowledged without the receiver's ACK delay.
    fn poll_trailing_probe(
        &mut self,
        now: Nanos,
        local: &NicAddr,
        buf: &mut [u8],
        ctx: &mut Ctx<'_>,
    ) -> Option<(usize, u8)> {
        while self.trail_owed != 0 {
            let p = self.trail_owed.trailing_zeros() as u8;
            // One chance per path: a path without room or outstanding data owes nothing.
            self.trail_owed &= !(1 << p);
            if p < self.paths
                && self.sb.outstanding(p) > 0
                && self.sb.has_room(p)
                && self.sel.path(p).health != PathHealth::Down
            {
                let sent = self.send_probe(p, now, local, buf, ctx);
                // Its ACK is due one RTT from now: if it has not come an SRTT and the ACK
                // delay later, the probe or its ACK was lost too, and the path's TLP is due.
                let pi = p as usize;
                if self.tlp_sent[pi] == 0 {
                    let t = now + self.srtt_or_init(pi) + ACK_DELAY_NS;
                    if self.tlp_at[pi].is_none_or(|x| t < x) {
                        self.tlp_at[pi] = Some(t);
                        self.note(t);
                    }
                }
                return sent;
            }
        }
        None
    }

    /// SRTT of a path, or the NIC's `rto_init_ns` / 2 before its first sample.
    fn srtt_or_init(&self, pi: usize) -> u64 {
        if self.rtt[pi].valid {
            u64::from(self.rtt[pi].srtt)
        } else {
            // the NIC's own initial RTO (a driver on a slower network programs a larger one)
            self.rto_init_ns / 2
        }
    }

    /// Send a PROBE on path `p`: a fresh PSN with no payload that requests an ACK.
    fn send_probe(
        &mut self,
        p: u8,
        now: Nanos,
        local: &NicAddr,
        buf: &mut [u8],
        ctx: &mut Ctx<'_>,
    ) -> Option<(usize, u8)> {
        let pi = p as usize;
        let rto = self.rto(pi);
        let psn = self.sb.send(p, t32(now), rto)?;
        self.note_rto(p, now);
        self.slots.put(p, psn, Slot::Probe);
        self.sel.charge_probe(p);
        self.last_tx[pi] = t32(now);
        self.tail_ack_req |= 1 << p;
        self.trail_owed &= !(1 << p);
        let sp = *self.sel.path(p);
        let mrh = Mrh {
            flags: 0,
            path: p,
            plane: sp.plane,
            psn,
            floor: self.sb.path(p).una,
            ts: t32(now),
        };
        let mut bth = wire::Bth::new(wire::opcode::MR_PROBE, self.peer_conn, psn);
        bth.ack_req = true;
        let addrs = self.frame_addrs(local, sp.plane, sp.entropy);
        match wire::encode_mroce(buf, &addrs, &bth, &wire::MrPacket::Probe { mrh }) {
            Ok(n) => {
                ctx.counters.probes_sent += 1;
                Some((n, sp.plane))
            }
            Err(_) => {
                ctx.counters.tx_encode_errors += 1;
                None
            }
        }
    }

    /// Write the next data or probe frame of this connection into `buf`.
    pub(crate) fn poll_transmit(
        &mut self,
        now: Nanos,
        local: &NicAddr,
        buf: &mut [u8],
        ready_planes: u8,
        ctx: &mut Ctx<'_>,
    ) -> Option<(usize, u8)> {
        self.port_blocked = false;
        if self.state != ConnState::Established {
            return None;
        }
        if let Some(r) = self.poll_probe(now, local, buf, ctx) {
            return Some(r);
        }
        // The second copy of a tail chunk goes first, on another path (SPEC.md §8.3).
        let mut hedged = None;
        while let Some((c, first)) = self.hedges.pop_front() {
            if self.hedge_wanted(c, ctx) {
                let (room, on_ready) = self.send_masks(ready_planes);
                hedged = self.select_path(room & on_ready & !(1u32 << first)).map(|p| (c, p));
                if hedged.is_some() {
                    break;
                }
            }
        }
        let is_hedge = hedged.is_some();
        let (chunk, is_retx, path) = if let Some((c, p)) = hedged {
            (c, true, p)
        } else {
            let (chunk, is_retx) = loop {
                let Some((chunk, is_retx)) = self.next_chunk(ctx.counters) else {
                    return self.poll_trailing_probe(now, local, buf, ctx);
                };
                if self.local_ok(chunk, ctx) {
                    break (chunk, is_retx);
                }
                // The application deregistered the buffer under a pending request: fail the
                // message instead of sending a malformed packet, and go on with the next one.
                ctx.counters.local_access_errors += 1;
                if let Some(m) = self.msg_tx_mut(chunk.stream, chunk.msg_seq) {
                    m.status = Some(Status::ConnectionFailed);
                }
                self.complete_tx(ctx);
            };
            if self.idle {
                // Busy again after an idle spell: the peer timeout counts from now.
                self.last_progress = now;
                self.idle = false;
            }
            let (room, on_ready) = self.send_masks(ready_planes);
            let Some(path) = self.select_path(room & on_ready) else {
                self.blocked_paths = self.sel.eligible_mask(room);
                self.port_blocked = self.blocked_paths != 0;
                // Over-committed (a lower hint came with more in flight, as in an incast): the
                // paths' tails were probably dropped and nothing follows them, so the owed
                // trailing probes go now (SPEC.md §8.4).
                if self.sel.total_inflight() > self.sel.conn_limit().min(self.hint_limit) {
                    return self.poll_trailing_probe(now, local, buf, ctx);
                }
                return None;
            };
            (chunk, is_retx, path)
        };
        let pi = path as usize;
        let rto = self.rto(pi);
        let Some(psn) = self.sb.send(path, t32(now), rto) else {
            // Unreachable by construction (room_mask), but never lose the packet's credit.
            self.sel.credit(&Credit {
                path,
                acked: 0,
                lost: 1,
                probes: 0,
                ce: false,
            });
            return None;
        };
        if is_hedge {
            ctx.counters.tail_hedges += 1;
        } else if is_retx {
            self.retx.pop_front();
            ctx.counters.retransmits += 1;
        } else if let Some(s) = self.active.pop_front() {
            // Round robin over streams, one packet at a time.
            self.active.push_back(s);
        }
        self.slots.put(path, psn, Slot::Chunk(chunk));
        let mtu = u32::from(self.mtu);
        let sp = *self.sel.path(path);
        let floor = self.sb.path(path).una;
        let peer_conn = self.peer_conn;
        let addrs = self.frame_addrs(local, sp.plane, sp.entropy);
        let more_queued = !self.retx.is_empty();
        let st = self.streams_tx.get_mut(chunk.stream as usize)?;
        let idx = chunk.msg_seq.wrapping_sub(st.base_seq) as usize;
        let m = st.msgs.get_mut(idx)?;
        if !is_retx {
            m.next_chunk += 1;
        }
        m.inflight[chunk.chunk as usize] = m.inflight[chunk.chunk as usize].saturating_add(1);
        let last_chunk = chunk.chunk + 1 == m.nchunks;
        let offset = chunk.chunk * mtu;
        let len = m.local.len.saturating_sub(offset).min(mtu);
        let sdh = Sdh {
            stream: chunk.stream,
            msg_seq: chunk.msg_seq,
            offset,
            msg_len: m.local.len,
        };
        let mrh = Mrh {
            flags: if is_retx { wire::MRH_FLAG_RETX } else { 0 },
            path,
            plane: sp.plane,
            psn,
            floor,
            ts: t32(now),
        };
        // Checked by `local_ok` above; an empty slice cannot happen.
        let payload = ctx
            .mem
            .local(m.local.key, m.local.offset + u64::from(offset), u64::from(len))
            .unwrap_or(&[]);
        let pkt = match m.kind {
            MsgKind::Write(r) => wire::MrPacket::Write {
                mrh,
                sdh,
                rph: Rph {
                    va: r.va.wrapping_add(u64::from(offset)),
                    rkey: r.rkey,
                },
                payload,
            },
            MsgKind::Send(rsn) => wire::MrPacket::Send { mrh, sdh, rsn, payload },
        };
        let mut bth = wire::Bth::new(0, peer_conn, psn);
        let tail = !more_queued && self.active.is_empty();
        bth.ack_req = last_chunk || tail || (self.first_flight && self.quick_ack && self.first_flight_ack_req);
        bth.se = last_chunk;
        let n = match wire::encode_mroce(buf, &addrs, &bth, &pkt) {
            Ok(n) => n,
            Err(_) => {
                ctx.counters.tx_encode_errors += 1;
                return None;
            }
        };
        ctx.counters.tx_data += 1;
        self.last_tx[path as usize] = t32(now);
        if bth.ack_req {
            self.tail_ack_req |= 1 << path;
        } else {
            self.tail_ack_req &= !(1 << path);
        }
        self.trail_owed |= 1 << path;
        self.arm_tlp(path, now);
        self.note_rto(path, now);
        if self.tail_hedge && is_retx && !is_hedge && tail {
            self.owe_hedge(chunk, path);
        }
        Some((n, sp.plane))
    }

    /// After a poll that came back port-blocked: the planes it could send on, and the time of
    /// its earliest probe or TLP. Until one of those planes is ready, that time comes, a handler
    /// runs on it or memory registrations change, another poll comes back port-blocked too and
    /// changes nothing, so the endpoint need not make it (`Endpoint::poll_transmit`).
    pub(crate) fn blocked_verdict(&self) -> Option<(u8, Nanos)> {
        if !self.port_blocked || !self.hedges.is_empty() {
            return None;
        }
        // the paths the poll found eligible: the poll changed nothing after finding them
        let planes = (0..self.paths)
            .filter(|&p| self.blocked_paths & (1 << p) != 0)
            .fold(0u8, |m, p| m | self.plane_bit(p));
        let n = usize::from(self.paths);
        let until = self.probe_at[..n.min(PATHS)]
            .iter()
            .chain(&self.tlp_at[..n.min(PATHS)])
            .flatten()
            .copied()
            .min()
            .unwrap_or(Nanos::MAX);
        Some((planes, until))
    }

    /// SELECT over `mask`, and once more when it found none while a path of `mask` has an
    /// open window now: SELECT tests the windows as they were before the selector's previous
    /// operation, and the second SELECT sees them as they are (SPEC.md §6.3, §8.3 step 5).
    fn select_path(&mut self, mask: u32) -> Option<u8> {
        match self.sel.select(mask) {
            None if self.sel.eligible_mask(mask) != 0 => self.sel.select(mask),
            got => got,
        }
    }

    /// Paths with scoreboard room, and paths whose plane's port can take a frame now (the
    /// driver's back-pressure, `ready_planes`).
    fn send_masks(&self, ready_planes: u8) -> (u32, u32) {
        let on_ready = (0..self.paths)
            .filter(|&p| ready_planes & self.plane_bit(p) != 0)
            .fold(0u32, |m, p| m | 1 << p);
        (self.sb.room_mask(), on_ready)
    }

    /// Path `p`'s plane as a bit of a ready-planes mask.
    fn plane_bit(&self, p: u8) -> u8 {
        1 << (self.sel.path(p).plane % 8)
    }

    /// Owe a second copy of `c`, on a path other than `path`, unless already owed or the
    /// queue is full.
    fn owe_hedge(&mut self, c: ChunkRef, path: u8) {
        if self.hedges.len() < PATHS && !self.hedges.iter().any(|&(h, _)| h == c) {
            self.hedges.push_back((c, path));
        }
    }

    /// The newest chunk still outstanding on path `p` (its slot not yet freed or lost).
    fn newest_outstanding_chunk(&self, p: u8) -> Option<ChunkRef> {
        let ps = self.sb.path(p);
        let span = ps.next.wrapping_sub(ps.una).min(crate::params::SACK_BITS as u32);
        (1..=span).find_map(|k| match self.slots.get(p, ps.next.wrapping_sub(k)) {
            Slot::Chunk(c) => Some(c),
            _ => None,
        })
    }

    /// `c` still deserves a second copy: exactly one copy is outstanding and unanswered, its
    /// message goes on, and nothing else waits to be sent.
    fn hedge_wanted(&self, c: ChunkRef, ctx: &Ctx<'_>) -> bool {
        let live = self.msg_tx(c.stream, c.msg_seq).is_some_and(|m| {
            !m.done()
                && m.status.is_none()
                && !bit_test(&m.acked, c.chunk)
                && m.inflight.get(c.chunk as usize).is_some_and(|&n| n == 1)
        });
        live && self.retx.is_empty() && self.active.is_empty() && self.local_ok(c, ctx)
    }

    // -----------------------------------------------------------------------------------
    // ACK and NAK processing (sender side)
    // -----------------------------------------------------------------------------------

    pub(crate) fn on_ack(&mut self, now: Nanos, a: &Akh, ctx: &mut Ctx<'_>) {
        let announce = a.flags & wire::AKH_FLAG_ANNOUNCE != 0;
        if announce && !self.announce_applies() {
            // Late announcements (a CONNECT answered again after the data began) carry a
            // stale Base; ignored unchecked, they are not counted as forged.
            return;
        }
        let path = a.path;
        if path >= self.paths {
            ctx.counters.forged_acks += 1;
            return;
        }
        let pi = path as usize;
        let st = *self.sb.path(path);
        // The ACK window is aligned with ours; a base behind our floor by more than the
        // window or ahead of what we sent cannot come from the peer.
        let ahead = a.base.wrapping_sub(st.una);
        let behind = st.una.wrapping_sub(a.base);
        let aligned = ahead.is_multiple_of(SACK_WORD_BITS as u32);
        let plausible = if seq::is_negative(ahead) {
            behind as usize <= crate::params::SACK_BITS
        } else {
            seq::le(a.base, st.next)
        };
        if !aligned || !plausible {
            ctx.counters.forged_acks += 1;
            return;
        }
        if announce {
            // A fan-in announcement acknowledges nothing new and echoes no timestamp.
            if self.apply_announce(a.rate_hint_mbps) {
                ctx.counters.announces_applied += 1;
            }
            return;
        }
        self.first_flight = false;
        // RTT sample from the echoed timestamp (unambiguous: PSNs are never reused).
        let sample = t32(now).wrapping_sub(a.ts_echo);
        if !seq::is_negative(sample) && u64::from(sample) < crate::params::RTO_MAX_NS {
            self.rtt[pi].sample(sample.max(1));
            self.probe_stale_tails(path, a.ts_echo, now);
        }
        if a.rate_hint_mbps != 0 {
            self.rate_hint_mbps = a.rate_hint_mbps;
            if self.apply_rate_hint() {
                ctx.counters.limit_holds += 1;
            }
        }
        // Highest acknowledged PSN in the bitmap, for gap-based loss detection.
        let mut highest: Option<u32> = None;
        for k in (0..SACK_WORDS).rev() {
            if a.sack[k] != 0 {
                let bit = 31 - a.sack[k].leading_zeros();
                highest = Some(a.base.wrapping_add((k * SACK_WORD_BITS) as u32 + bit));
                break;
            }
        }
        let lost_below = match highest {
            Some(h) => h.wrapping_add(1).wrapping_sub(LOSS_THRESHOLD),
            None => a.base,
        };
        let rto = self.rto(pi);
        let start = st.una;
        let mut acked = 0u16;
        let mut lost = 0u16;
        let mut probes = 0u16;
        let mut forged = false;
        for k in 0..(2 * SACK_WORDS) as u32 {
            let wp = start.wrapping_add(k * SACK_WORD_BITS as u32);
            if !seq::lt(wp, self.sb.path(path).next) {
                break;
            }
            let rel = wp.wrapping_sub(a.base);
            let mask = if seq::is_negative(rel) {
                u32::MAX
            } else if (rel as usize) < crate::params::SACK_BITS {
                a.sack[rel as usize / SACK_WORD_BITS]
            } else {
                break;
            };
            let r = self.sb.ack_word(path, wp, mask, lost_below, t32(now), rto);
            forged |= r.forged;
            acked += r.freed.count_ones() as u16;
            lost += r.lost.count_ones() as u16;
            probes += self.apply_word(path, &r, ctx);
        }
        if forged {
            ctx.counters.forged_ack_bits += 1;
        }
        if self.sel.credit(&Credit {
            path,
            acked,
            lost,
            probes,
            ce: a.ecn_count > 0,
        }) && self.acts_on_reroute()
        {
            // under firmware health the control core re-routes on EVT_REROUTE
            if !self.firmware_health {
                self.sel.request_reroll(path, ctx.rng.next_u32() as u16);
            }
            ctx.counters.ecn_reroutes += 1;
        }
        // probes are outside the connection's flight (path_selector::credit)
        let data_acked = acked.saturating_sub(probes);
        self.descend_hold(data_acked, (acked + lost).saturating_sub(probes) - data_acked);
        if a.ecn_count > 0 {
            ctx.counters.ecn_echoes += 1;
        }
        if acked > 0 {
            self.last_progress = now;
            self.rtos_in_row[pi] = 0;
            if self.firmware_health && self.sel.path(path).health == PathHealth::Down {
                // the route works again: normal timers; the control core brings the path up
                self.sb.clear_backoff(path);
                self.probe_at[pi] = None;
            } else if self.sel.path(path).health == PathHealth::Down {
                self.sel.set_health(path, PathHealth::Up);
                self.sb.clear_backoff(path);
                self.probe_at[pi] = None;
                let plane = self.sel.path(path).plane;
                self.sel.set_plane_up(plane, true);
                ctx.counters.paths_recovered += 1;
                ctx.events.push_back(Event::PathHealth {
                    conn: self.id,
                    path,
                    up: true,
                });
            }
            self.tlp_sent[pi] = 0;
            if self.sb.outstanding(path) == 0 {
                self.tlp_at[pi] = None;
            } else {
                self.arm_tlp(path, now);
            }
        }
        self.note_rto(path, now);
        self.complete_tx(ctx);
    }

    /// Whether a re-route verdict is acted on now (`EndpointConfig::ecn_reroute`).
    fn acts_on_reroute(&self) -> bool {
        match self.ecn_reroute {
            EcnReroute::Off => false,
            EcnReroute::Every => true,
            EcnReroute::One => (0..self.paths).all(|p| !self.sel.path(p).reroll_pending),
        }
    }

    /// Early tail-loss probe (RACK across paths, SPEC.md §8.4). The ACK of `path` shows that a
    /// frame sent at `delivered` arrived. Paths are FIFO, so another path whose newest frame
    /// left more than a quarter of the minimum RTT (RACK's reordering window) before that,
    /// plus the ACK delay unless that frame asked for an immediate ACK, and still has PSNs
    /// outstanding, has most likely lost its tail: its probe is due now, not ~2 SRTTs after
    /// its last ACK, which under loss or queueing is several base RTTs of a stalled path. A
    /// wrong guess costs one probe.
    fn probe_stale_tails(&mut self, path: u8, delivered: u32, now: Nanos) {
        let pa = path as usize;
        let reorder = if self.rtt[pa].valid { self.rtt[pa].min / 4 } else { 0 };
        // Without the ACK delay only while nothing waits to be sent: a wrong guess then costs a
        // probe and no data (mid-flow, the probe takes a window slot of a path that is only
        // slower, e.g. on another plane: 8-plane goodput fell 3-6% when this applied always).
        let drained = self.active.is_empty() && self.retx.is_empty();
        for p in 0..self.paths {
            let pi = p as usize;
            let age = delivered.wrapping_sub(self.last_tx[pi]);
            let reo = if drained && self.tail_ack_req & (1 << p) != 0 {
                reorder
            } else {
                reorder + ACK_DELAY_NS as u32
            };
            if p != path
                && self.tlp_at[pi].is_some_and(|t| t > now)
                && self.tlp_sent[pi] == 0
                && !seq::is_negative(age)
                && self.sb.outstanding(p) > 0
            {
                if age > reo {
                    self.tlp_at[pi] = Some(now);
                } else if drained {
                    // RACK's reordering timer: p's newest frame left no later than the one just
                    // acknowledged; once it has been out that frame's round trip plus the
                    // window without an answer, its probe is due. In the tail no later ACK may
                    // come to run the test above (every path's trailing probe leaves at once).
                    let t = now + u64::from(reo - age) + 1;
                    if self.tlp_at[pi].is_some_and(|x| t < x) {
                        self.tlp_at[pi] = Some(t);
                        self.note(t);
                    }
                }
            }
        }
    }

    /// Tail-loss probe of `path`: if nothing comes back for ~2 RTTs after `now`, probe it. The
    /// probe's answer takes another RTT, so it goes out at least one RTT (and the ACK delay)
    /// before the path's RTO deadline: the scoreboard restarts the RTO on progress, not on
    /// send, and an RTO declares the whole window lost and cuts it where a probe only
    /// resolves the tail. Once a TLP went out, data no longer re-arms it until progress or the
    /// RTO; only its re-probes follow (`arm_reprobe`).
    fn arm_tlp(&mut self, path: u8, now: Nanos) {
        let pi = path as usize;
        if self.tlp_sent[pi] != 0 {
            return;
        }
        let srtt = self.srtt_or_init(pi);
        let mut t = now + 2 * srtt + ACK_DELAY_NS;
        if let Some(d) = self.sb.deadline(path) {
            t = t.min(t64(now, d).saturating_sub(srtt + ACK_DELAY_NS).max(now));
        }
        self.tlp_at[pi] = Some(t);
        if t > now {
            self.note(t);
        }
        // else the probe is due now: transmit work (`has_work`), not a timer
    }

    /// Re-probe: the tail-loss probe sent at `now` (or its ACK) may be lost as well. If no
    /// progress is seen one SRTT and the ACK delay later, probe again, up to
    /// `TLP_MAX_PROBES` per RTO period, and only while the RTO is still ahead: an RTO cuts the
    /// window and re-routes the path, a probe costs one small frame.
    fn arm_reprobe(&mut self, path: u8, now: Nanos) {
        let pi = path as usize;
        if self.tlp_sent[pi] >= TLP_MAX_PROBES {
            return;
        }
        let srtt = self.srtt_or_init(pi);
        let t = now + srtt + ACK_DELAY_NS;
        if self.sb.deadline(path).is_some_and(|d| t < t64(now, d)) {
            self.tlp_at[pi] = Some(t);
            self.note(t);
        }
    }

    /// Fold one scoreboard word result into the message tables.
    /// Returns how many of the resolved PSNs were probes.
    fn apply_word(&mut self, path: u8, r: &WordResult, ctx: &mut Ctx<'_>) -> u16 {
        let mut probes = 0;
        let mut freed = r.freed;
        while freed != 0 {
            let b = freed.trailing_zeros();
            freed &= freed - 1;
            let psn = r.word_psn.wrapping_add(b);
            let slot = self.slots.take(path, psn);
            match slot {
                Slot::Chunk(c) => self.chunk_acked(c, ctx),
                Slot::Probe => probes += 1,
                Slot::Empty => {}
            }
        }
        let mut lost = r.lost;
        while lost != 0 {
            let b = lost.trailing_zeros();
            lost &= lost - 1;
            let psn = r.word_psn.wrapping_add(b);
            let slot = self.slots.take(path, psn);
            ctx.counters.losses_detected += 1;
            match slot {
                Slot::Chunk(c) => self.chunk_lost(c, path),
                Slot::Probe => probes += 1,
                Slot::Empty => {}
            }
        }
        probes
    }

    fn chunk_acked(&mut self, c: ChunkRef, ctx: &mut Ctx<'_>) {
        let Some(m) = self.msg_tx_mut(c.stream, c.msg_seq) else {
            // Message already completed: this was an extra copy.
            ctx.counters.redundant_acks += 1;
            return;
        };
        let i = c.chunk as usize;
        if i >= m.inflight.len() {
            return;
        }
        m.inflight[i] = m.inflight[i].saturating_sub(1);
        if bit_test(&m.acked, c.chunk) || m.status.is_some() {
            ctx.counters.redundant_acks += 1;
        } else {
            bit_set(&mut m.acked, c.chunk);
            m.acked_count += 1;
        }
    }

    /// A transmission of `c` on `path` was declared lost.
    fn chunk_lost(&mut self, c: ChunkRef, path: u8) {
        let Some(m) = self.msg_tx_mut(c.stream, c.msg_seq) else {
            return;
        };
        let i = c.chunk as usize;
        if i >= m.inflight.len() {
            return;
        }
        m.inflight[i] = m.inflight[i].saturating_sub(1);
        if bit_test(&m.acked, c.chunk) || m.status.is_some() {
            return;
        }
        if m.inflight[i] == 0 {
            self.retx.push_back(c);
        } else if self.tail_hedge && self.retx.is_empty() && self.active.is_empty() {
            // A hedged tail chunk lost one of its two copies: replace it, so that the one
            // left is not again the only one (SPEC.md §8.3).
            self.owe_hedge(c, path);
        }
    }

    /// Emit sender completions in stream order.
    fn complete_tx(&mut self, ctx: &mut Ctx<'_>) {
        let id = self.id;
        let mut pending = false;
        for (s, st) in self.streams_tx.iter_mut().enumerate() {
            while st.msgs.front().is_some_and(|m| m.done()) {
                let Some(m) = st.msgs.pop_front() else { break };
                let seq_done = st.base_seq;
                st.base_seq = st.base_seq.wrapping_add(1);
                st.cursor = st.cursor.saturating_sub(1);
                ctx.events.push_back(Event::Completion(Completion {
                    conn: id,
                    stream: s as u16,
                    msg_seq: seq_done,
                    wr_id: m.wr_id,
                    kind: if matches!(m.kind, MsgKind::Write(_)) {
                        WorkKind::Write
                    } else {
                        WorkKind::Send
                    },
                    status: m.status.unwrap_or(Status::Ok),
                    bytes: m.local.len,
                }));
            }
            pending |= !st.msgs.is_empty();
        }
        if !pending {
            self.idle = true;
        }
    }

    pub(crate) fn on_nak(&mut self, k: &Nkh, ctx: &mut Ctx<'_>) {
        let status = match k.syndrome {
            wire::nak::REMOTE_ACCESS => Status::RemoteAccessError,
            _ => Status::RemoteInvalid,
        };
        match self.msg_tx_mut(k.stream, k.msg_seq) {
            Some(m) if m.status.is_none() => m.status = Some(status),
            _ => {
                ctx.counters.stale_naks += 1;
                return;
            }
        }
        self.complete_tx(ctx);
    }

    /// Packets in flight a rate of `mbps` allows over `rtt_ns` (SPEC.md §8.5).
    fn limit_for(&self, mbps: u32, rtt_ns: u64) -> u16 {
        let frame = u64::from(self.mtu) + wire::WRITE_HEADERS as u64;
        // Fair share x twice the base RTT: the minimum RTT misses the ACK coalescing delay
        // (up to ACK_COALESCE packets per path), and the share must be reachable.
        let bytes = u64::from(mbps) * rtt_ns / 8000;
        let pkts = (bytes * 2) / frame + 2;
        pkts.min(u64::from(u16::MAX)) as u16
    }

    /// A fan-in announcement of `mbps` (SPEC.md §8.5), on a connection where
    /// [`Self::announce_applies`]: until the first rate hint, the limit is the smaller of the
    /// initial limit and that share over the fabric RTT, so that many senders starting
    /// together fit the receiver's port. True if it set the limit.
    fn apply_announce(&mut self, mbps: u32) -> bool {
        if mbps == 0 {
            return false;
        }
        let pkts = self.limit_for(mbps, self.fabric_rtt_ns);
        self.sel.set_conn_limit(self.initial_limit.min(pkts));
        // Immediate ACKs would bring rate hints computed while the receiver has seen only
        // part of the fan-in, and those would lift the limit the fan-in set.
        self.quick_ack = pkts >= self.initial_limit;
        true
    }

    /// An announcement can still set the limit: the fabric RTT is configured and neither a
    /// rate hint nor a hold has come yet.
    fn announce_applies(&self) -> bool {
        self.rate_hint_mbps == 0 && self.limit_hold == 0 && self.fabric_rtt_ns != 0
    }

    /// A fan-in announcement of `mbps` for the peer (SPEC.md §8.5): an ACK of path 0 flagged
    /// ANNOUNCE that repeats the path's state, so that it acknowledges nothing new.
    pub(crate) fn announce_ack(&self, mbps: u32) -> Akh {
        let s = self.rt.peek(0);
        Akh {
            path: s.path,
            flags: wire::AKH_FLAG_ANNOUNCE,
            ecn_count: 0,
            pkt_count: 0,
            base: s.base,
            cum: s.cum,
            ts_echo: 0,
            rate_hint_mbps: mbps,
            sack: s.sack,
        }
    }

    /// Apply `rate_hint_mbps`; true if it began a hold.
    fn apply_rate_hint(&mut self) -> bool {
        let mut began = false;
        let min_rtt = (0..self.paths as usize)
            .filter(|&p| self.rtt[p].valid)
            .map(|p| self.rtt[p].min)
            .min();
        if let Some(rtt) = min_rtt {
            // A hint below the receiver's capacity means senders share its port, and their
            // samples are taken behind the queue they build there: computed from those, the
            // limit would keep the queue standing. The fabric's unloaded RTT bounds them then
            // (SPEC.md §8.5). A sole sender keeps its samples: queues elsewhere are ECN's.
            let shared = self.rate_hint_mbps < self.rx_capacity_mbps;
            let rtt = match self.fabric_rtt_ns {
                cap if shared && cap != 0 => u64::from(rtt).min(cap),
                _ => u64::from(rtt),
            };
            self.hint_limit = self.limit_for(self.rate_hint_mbps, rtt);
            // A cut below what is in flight holds the limit there (never above the previous
            // one) and lets it descend (SPEC.md §8.5).
            let inflight = self.sel.total_inflight().min(self.sel.conn_limit());
            if self.limit_hold == 0 && inflight > self.hint_limit {
                self.limit_hold = inflight;
                self.hold_start = inflight;
                self.hold_delivered = 0;
                self.hold_lost = 0;
                began = true;
            }
            self.refresh_hold();
        }
        began
    }

    /// Count deliveries and losses against the held limit.
    fn descend_hold(&mut self, delivered: u16, lost: u16) {
        if self.limit_hold == 0 {
            return;
        }
        self.hold_delivered = self.hold_delivered.saturating_add(delivered);
        self.hold_lost = self.hold_lost.saturating_add(lost);
        self.refresh_hold();
    }

    /// Limit of a held connection, by proportional rate reduction (RFC 6937): what it had in
    /// flight at the cut (H0), less what was delivered or lost since, plus `hint_limit` of
    /// every H0 delivered; released once that reaches the hinted limit.
    fn refresh_hold(&mut self) {
        if self.limit_hold != 0 {
            let h0 = u64::from(self.hold_start).max(1);
            let l = u64::from(self.hint_limit).min(h0);
            let d = u64::from(self.hold_delivered);
            let left = (h0 + d * l / h0).saturating_sub(d + u64::from(self.hold_lost)).min(h0);
            self.limit_hold = if left <= u64::from(self.hint_limit) {
                0
            } else {
                left as u16
            };
        }
        self.sel.set_conn_limit(self.hint_limit.max(self.limit_hold));
    }

    // -----------------------------------------------------------------------------------
    // Receive side
    // -----------------------------------------------------------------------------------

    /// A data or probe packet for this connection.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_data(
        &mut self,
        now: Nanos,
        plane: u8,
        sport: u16,
        ce: bool,
        ack_req: bool,
        pkt: &wire::MrPacket<'_>,
        hint_mbps: u32,
        ctx: &mut Ctx<'_>,
    ) {
        let (mrh, data) = match pkt {
            wire::MrPacket::Write { mrh, sdh, rph, payload } => (
                *mrh,
                Some(DataRef {
                    sdh: *sdh,
                    rph: Some(*rph),
                    rsn: None,
                    payload,
                }),
            ),
            wire::MrPacket::Send { mrh, sdh, rsn, payload } => (
                *mrh,
                Some(DataRef {
                    sdh: *sdh,
                    rph: None,
                    rsn: Some(*rsn),
                    payload,
                }),
            ),
            wire::MrPacket::Probe { mrh } => (*mrh, None),
            _ => return,
        };
        if mrh.path >= self.paths {
            ctx.counters.bad_path += 1;
            return;
        }
        if ce {
            ctx.counters.ce_received += 1;
        }
        self.last_rx_data = now;
        // Placement decision first (it decides whether the tracker records the PSN).
        let action = match &data {
            None => Placement::Nothing,
            Some(d) => self.check_placement(d, ctx),
        };
        // Refused and NAKed packets are not recorded: the sender keeps retransmitting until
        // a receive is posted, or until one of the (repeated) NAKs reaches it.
        let commit = !matches!(action, Placement::Refuse | Placement::Nak(_));
        let r = self.rt.packet(&RxPacket {
            path: mrh.path,
            psn: mrh.psn,
            floor: mrh.floor,
            ce,
            ack_req,
            commit,
        });
        match r.verdict {
            RxVerdict::New => {
                if let Some(d) = &data {
                    self.place(action, d, ctx);
                }
            }
            RxVerdict::Duplicate => ctx.counters.duplicate_psn += 1,
            RxVerdict::OutOfWindow => ctx.counters.out_of_window += 1,
            RxVerdict::Refused => match (action, &data) {
                (Placement::Nak(syn), Some(d)) => self.nak(syn, d, plane, ctx),
                _ => ctx.counters.rnr_drops += 1,
            },
        }
        let pi = mrh.path as usize;
        self.ack_plane[pi] = plane;
        self.ack_sport[pi] = sport;
        self.ack_ts[pi] = mrh.ts;
        match r.ack {
            Some(snap) => {
                self.ack_at[pi] = None;
                self.queue_ack(&snap, mrh.ts, plane, sport, hint_mbps, data.is_none(), ctx);
            }
            None => {
                if self.ack_at[pi].is_none() {
                    self.ack_at[pi] = Some(now + ACK_DELAY_NS);
                    self.note(now + ACK_DELAY_NS);
                }
            }
        }
        self.complete_rx(ctx);
    }

    #[allow(clippy::too_many_arguments)]
    fn queue_ack(&self, s: &AckSnapshot, ts: u32, plane: u8, sport: u16, hint: u32, probe: bool, ctx: &mut Ctx<'_>) {
        let akh = Akh {
            path: s.path,
            flags: if probe { wire::AKH_FLAG_PROBE } else { 0 },
            ecn_count: s.ecn_count,
            pkt_count: s.pkt_count,
            base: s.base,
            cum: s.cum,
            ts_echo: ts,
            rate_hint_mbps: hint,
            sack: s.sack,
        };
        ctx.ctrl.push_back(Ctrl::Ack {
            conn: self.id,
            plane,
            sport,
            akh,
        });
    }

    fn check_placement(&mut self, d: &DataRef<'_>, ctx: &mut Ctx<'_>) -> Placement {
        let sdh = &d.sdh;
        let len = d.payload.len() as u32;
        if sdh.stream >= self.streams_max {
            ctx.counters.invalid_requests += 1;
            return Placement::Nak(wire::nak::REMOTE_INVALID);
        }
        let mtu = u32::from(self.mtu);
        if let Some(&(_, _, syn)) = self.failed.iter().find(|f| f.0 == sdh.stream && f.1 == sdh.msg_seq) {
            return Placement::Nak(syn);
        }
        let st = self.stream_rx(sdh.stream);
        let ahead = sdh.msg_seq.wrapping_sub(st.next_seq);
        if seq::is_negative(ahead) {
            return Placement::Duplicate;
        }
        if ahead >= MAX_MSGS_AHEAD {
            // Legitimate but too far ahead to track: not recorded, the sender retries.
            return Placement::Refuse;
        }
        let last = sdh.offset.checked_add(len) == Some(sdh.msg_len);
        if !sdh.offset.is_multiple_of(mtu) || len > mtu || (len != mtu && !last) {
            ctx.counters.invalid_requests += 1;
            return Placement::Nak(wire::nak::REMOTE_INVALID);
        }
        let ahead = ahead as usize;
        if let Some(Some(m)) = st.msgs.get(ahead) {
            if bit_test(&m.got, sdh.offset / mtu) {
                return Placement::Duplicate;
            }
            if m.len != sdh.msg_len || m.write != d.rph.is_some() || m.rsn != d.rsn {
                ctx.counters.invalid_requests += 1;
                return Placement::Nak(wire::nak::REMOTE_INVALID);
            }
        }
        match (d.rph, d.rsn) {
            (Some(r), _) => match ctx.mem.check_remote_write(r.rkey, r.va, u64::from(len)) {
                Ok(()) => Placement::Write,
                Err(e) => {
                    match e {
                        crate::memory::MemError::OutOfBounds { .. } => ctx.counters.bounds_violations += 1,
                        _ => ctx.counters.rkey_violations += 1,
                    }
                    Placement::Nak(wire::nak::REMOTE_ACCESS)
                }
            },
            (None, Some(rsn)) => {
                let idx = rsn.wrapping_sub(st.recv_base);
                if seq::is_negative(idx) {
                    // Its receive was already consumed by an earlier SEND with this RSN.
                    ctx.counters.invalid_requests += 1;
                    return Placement::Nak(wire::nak::REMOTE_INVALID);
                }
                match st.recvs.get(idx as usize) {
                    None => Placement::Refuse,
                    Some((buf, _)) if buf.len < sdh.msg_len => {
                        ctx.counters.invalid_requests += 1;
                        Placement::Nak(wire::nak::REMOTE_INVALID)
                    }
                    Some((buf, _)) => {
                        match ctx
                            .mem
                            .check_local(buf.key, buf.offset + u64::from(sdh.offset), u64::from(len))
                        {
                            Ok(()) => Placement::Recv(*buf),
                            Err(_) => {
                                // The receive buffer was deregistered after it was posted.
                                ctx.counters.local_access_errors += 1;
                                Placement::Nak(wire::nak::REMOTE_INVALID)
                            }
                        }
                    }
                }
            }
            (None, None) => Placement::Nothing,
        }
    }

    fn place(&mut self, action: Placement, d: &DataRef<'_>, ctx: &mut Ctx<'_>) {
        let mtu = u32::from(self.mtu);
        let sdh = &d.sdh;
        let st = self.stream_rx(sdh.stream);
        let ahead = sdh.msg_seq.wrapping_sub(st.next_seq) as usize;
        let placed = match action {
            Placement::Write => match d.rph {
                Some(r) => ctx.mem.remote_write(r.rkey, r.va, d.payload).is_ok(),
                None => false,
            },
            Placement::Recv(buf) => {
                match ctx
                    .mem
                    .local_mut(buf.key, buf.offset + u64::from(sdh.offset), d.payload.len() as u64)
                {
                    Ok(dst) => {
                        dst.copy_from_slice(d.payload);
                        true
                    }
                    Err(_) => false,
                }
            }
            Placement::Duplicate => {
                ctx.counters.duplicate_chunks += 1;
                return;
            }
            _ => return,
        };
        if !placed {
            // check_placement validated this access a moment ago; count, never panic.
            ctx.counters.local_access_errors += 1;
            return;
        }
        let m = Self::rx_msg(st, ahead, sdh, d.rph.is_some(), d.rsn, mtu);
        bit_set(&mut m.got, sdh.offset / mtu);
        m.got_count += 1;
        ctx.counters.bytes_placed += d.payload.len() as u64;
    }

    fn rx_msg<'m>(
        st: &'m mut StreamRx,
        ahead: usize,
        sdh: &Sdh,
        write: bool,
        rsn: Option<u32>,
        mtu: u32,
    ) -> &'m mut RxMsg {
        if st.msgs.len() <= ahead {
            st.msgs.resize_with(ahead + 1, || None);
        }
        st.msgs[ahead].get_or_insert_with(|| {
            let nchunks = sdh.msg_len.div_ceil(mtu).max(1);
            RxMsg {
                write,
                rsn,
                len: sdh.msg_len,
                nchunks,
                got: vec![0; (nchunks as usize).div_ceil(64)],
                got_count: 0,
                status: None,
            }
        })
    }

    /// Fail a message at the receiver and (re)send its NAK. The failure is remembered so a
    /// retransmission after a lost NAK is NAKed again rather than acknowledged.
    fn nak(&mut self, syn: u8, d: &DataRef<'_>, plane: u8, ctx: &mut Ctx<'_>) {
        let mtu = u32::from(self.mtu);
        let id = self.id;
        let sdh = &d.sdh;
        if !self.failed.iter().any(|f| f.0 == sdh.stream && f.1 == sdh.msg_seq) {
            if self.failed.len() >= FAILED_MEMORY {
                self.failed.pop_front();
            }
            self.failed.push_back((sdh.stream, sdh.msg_seq, syn));
            if sdh.stream < self.streams_max {
                let st = self.stream_rx(sdh.stream);
                let ahead = sdh.msg_seq.wrapping_sub(st.next_seq);
                if !seq::is_negative(ahead) && ahead < MAX_MSGS_AHEAD {
                    let m = Self::rx_msg(st, ahead as usize, sdh, d.rph.is_some(), d.rsn, mtu);
                    m.status = Some(if syn == wire::nak::REMOTE_ACCESS {
                        Status::RemoteAccessError
                    } else {
                        Status::RemoteInvalid
                    });
                }
            }
        }
        ctx.counters.naks_sent += 1;
        ctx.ctrl.push_back(Ctrl::Nak {
            conn: id,
            plane,
            nkh: Nkh {
                syndrome: syn,
                stream: sdh.stream,
                msg_seq: sdh.msg_seq,
                offset: sdh.offset,
            },
        });
    }

    /// Emit receiver completions in stream order. A SEND consumes the receive matching its
    /// RSN (if one is posted: a SEND that failed before its receive was posted consumes none).
    fn complete_rx(&mut self, ctx: &mut Ctx<'_>) {
        let id = self.id;
        for (s, st) in self.streams_rx.iter_mut().enumerate() {
            while let Some(Some(m)) = st.msgs.front() {
                if m.status.is_none() && m.got_count < m.nchunks {
                    break;
                }
                let Some(Some(m)) = st.msgs.pop_front() else { break };
                let seq_done = st.next_seq;
                st.next_seq = st.next_seq.wrapping_add(1);
                let (kind, wr_id) = match m.rsn {
                    None => (WorkKind::WriteReceived, 0),
                    Some(rsn) if rsn == st.recv_base => {
                        st.recv_base = st.recv_base.wrapping_add(1);
                        match st.recvs.pop_front() {
                            Some((_, w)) => (WorkKind::Recv, w),
                            None => (WorkKind::Recv, 0),
                        }
                    }
                    Some(_) => (WorkKind::Recv, 0),
                };
                ctx.events.push_back(Event::Completion(Completion {
                    conn: id,
                    stream: s as u16,
                    msg_seq: seq_done,
                    wr_id,
                    kind,
                    status: m.status.unwrap_or(Status::Ok),
                    bytes: m.len,
                }));
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // Timers
    // -----------------------------------------------------------------------------------

    /// Record a timer that was just set, so the endpoint can schedule it without scanning
    /// every timer of the connection.
    pub(crate) fn note(&mut self, t: Nanos) {
        self.noted = Some(self.noted.map_or(t, |x| x.min(t)));
    }

    fn note_rto(&mut self, path: u8, now: Nanos) {
        if let Some(d) = self.sb.deadline(path) {
            self.note(t64(now, d));
        }
    }

    /// Timers set since the last call (earliest of them).
    pub(crate) fn take_noted(&mut self) -> Option<Nanos> {
        self.noted.take()
    }

    /// Earliest timer of this connection.
    pub(crate) fn next_deadline(&self, now: Nanos) -> Option<Nanos> {
        let mut d: Option<Nanos> = None;
        let mut take = |t: Option<Nanos>| {
            if let Some(t) = t {
                d = Some(d.map_or(t, |x| x.min(t)));
            }
        };
        match self.state {
            // Only the CM retry runs while connecting or closing: data timers are not
            // serviced then, so they must not keep the connection's deadline in the past.
            ConnState::Connecting { retry_at, .. } | ConnState::Closing { retry_at, .. } => return Some(retry_at),
            ConnState::Established => {}
        }
        for p in 0..self.paths as usize {
            take(self.sb.deadline(p as u8).map(|x| t64(now, x)));
            // A probe already due is transmit work (see `has_work`), not a timer.
            take(self.tlp_at[p].filter(|&t| t > now));
            take(self.probe_at[p].filter(|&t| t > now));
            take(self.ack_at[p]);
        }
        d
    }

    /// Run RTO, probe and delayed-ACK timers. Returns true if the connection may now send.
    pub(crate) fn on_timeout(&mut self, now: Nanos, hint_mbps: u32, ctx: &mut Ctx<'_>) -> bool {
        let mut wake = false;
        // Nothing below takes an RTT sample: one lookup serves every path.
        let borrowed = self.borrowed_rtt();
        for p in 0..self.paths {
            let pi = p as usize;
            if self.ack_at[pi].is_some_and(|t| t <= now) {
                self.ack_at[pi] = None;
                if self.rt.pending(p) > 0 {
                    let snap = self.rt.flush(p);
                    let (ts, plane, sport) = (self.ack_ts[pi], self.ack_plane[pi], self.ack_sport[pi]);
                    self.queue_ack(&snap, ts, plane, sport, hint_mbps, false, ctx);
                }
            }
            if self.tlp_at[pi].is_some_and(|t| t <= now) {
                if self.sb.outstanding(p) == 0 {
                    self.tlp_at[pi] = None;
                } else {
                    wake = true;
                }
            }
            if self.probe_at[pi].is_some_and(|t| t <= now) {
                wake = true;
            }
            let rto = self.rto_with(pi, borrowed);
            if let TimerResult::Expired { .. } = self.sb.timer(p, t32(now), rto) {
                wake = true;
                self.on_rto(p, now, ctx);
            }
        }
        wake
    }

    fn on_rto(&mut self, path: u8, now: Nanos, ctx: &mut Ctx<'_>) {
        let pi = path as usize;
        ctx.counters.rtos += 1;
        let mut lost = 0u16;
        let mut probes = 0u16;
        for _ in 0..SACK_WORDS {
            let r = self.sb.expire_head(path);
            lost += r.lost.count_ones() as u16;
            probes += self.apply_word(path, &r, ctx);
        }
        self.sel.credit(&Credit {
            path,
            acked: 0,
            lost,
            probes,
            ce: false,
        });
        self.descend_hold(0, lost.saturating_sub(probes));
        self.sel.clear_inflight(path);
        self.tlp_at[pi] = None;
        self.tlp_sent[pi] = 0;
        self.rtos_in_row[pi] = self.rtos_in_row[pi].saturating_add(1);
        if self.firmware_health {
            // The control core sees the RTO in its counters and decides health and route. Until
            // it does, a probe goes out now and takes the path's window (data sent there would
            // wait for the next, backed-off RTO); a path already Down is probed every interval.
            let t = if self.sel.path(path).health == PathHealth::Down {
                now + PROBE_INTERVAL_NS
            } else {
                now
            };
            self.probe_at[pi] = Some(t);
            return;
        }
        // Move the path to another ECMP route: the old one may be broken.
        self.sel.reroll(path, ctx.rng.next_u32() as u16);
        ctx.counters.entropy_rerolls += 1;
        if self.rtos_in_row[pi] >= PATH_DOWN_RTOS {
            if self.sel.path(path).health != PathHealth::Down {
                self.sel.set_health(path, PathHealth::Down);
                ctx.counters.paths_down += 1;
                ctx.events.push_back(Event::PathHealth {
                    conn: self.id,
                    path,
                    up: false,
                });
                self.update_plane(self.sel.path(path).plane, ctx);
            }
            self.probe_at[pi] = Some(now + PROBE_INTERVAL_NS);
        } else {
            self.sel.set_health(path, PathHealth::Suspect);
            // A suspect path is probed right away: cheap, and it tells loss from failure.
            self.probe_at[pi] = Some(now);
        }
    }

    /// A plane is down when every enabled path on it is down; traffic then sprays over the
    /// remaining planes only, with no action from the application.
    fn update_plane(&mut self, plane: u8, ctx: &mut Ctx<'_>) {
        let mut any = false;
        let mut all_down = true;
        for p in 0..self.paths {
            let s = self.sel.path(p);
            if s.plane == plane {
                any = true;
                all_down &= s.health == PathHealth::Down;
            }
        }
        if any && all_down && self.sel.planes_up() & (1 << plane) != 0 {
            self.sel.set_plane_up(plane, false);
            ctx.counters.planes_down += 1;
        }
    }

    /// Fail every pending request (teardown or peer loss).
    pub(crate) fn fail_all(&mut self, ctx: &mut Ctx<'_>) {
        for st in self.streams_tx.iter_mut() {
            for m in st.msgs.iter_mut() {
                if m.status.is_none() && m.acked_count < m.nchunks {
                    m.status = Some(Status::ConnectionFailed);
                }
            }
        }
        self.retx.clear();
        self.complete_tx(ctx);
    }

    /// No transmission was attempted since the connection last had nothing pending.
    pub(crate) fn is_idle(&self) -> bool {
        self.idle
    }

    /// Time of the last ACK progress.
    pub(crate) fn last_progress(&self) -> Nanos {
        self.last_progress
    }
}

/// The data part of a WRITE or SEND packet, as the receive path sees it.
struct DataRef<'a> {
    sdh: Sdh,
    rph: Option<Rph>,
    rsn: Option<u32>,
    payload: &'a [u8],
}

/// Placement decision for one data packet, taken before the tracker records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Probe: nothing to place.
    Nothing,
    /// Write at the packet's own address.
    Write,
    /// Copy into the posted receive buffer.
    Recv(LocalBuf),
    /// The chunk was already placed (or the message completed): record, do not place.
    Duplicate,
    /// Not placeable now (no receive posted): do not record, so the sender retransmits.
    Refuse,
    /// Do not record; NAK the message with this syndrome.
    Nak(u8),
}
