//! `pipe`: an in-memory lossy multipath link harness (a discrete-event simulation driver).
//!
//! Two NICs, A (sender) and B (receiver), each with `planes` ports, are joined per plane by
//! `lanes` parallel full-duplex links (default `ceil(paths / planes)` per plane, so there are
//! as many lanes in total as paths). The driver only calls the sans-IO [`Transport`] API; it
//! contains no protocol logic.
//!
//! # Model
//!
//! * **Clock.** Internal time is in picoseconds (so serialisation times at 400 Gb/s are
//!   exact); transports see nanoseconds (`ps / 1000`). Events live in a binary heap ordered
//!   by `(time, seq)`, where `seq` is a global insertion counter: a run is a pure function of
//!   its [`PipeConfig`] (seed included).
//! * **NIC ports.** One port per plane, serialising at `gbps / planes`. The driver pulls a
//!   frame from `poll_transmit` only while some port is idle (and, with several planes, while
//!   no port holds more than [`NIC_PORT_QUEUE`] frames waiting, since the transport, not the
//!   driver, picks the plane). A frame reaches its lane when its last bit leaves the port
//!   (store and forward).
//! * **Lanes.** A frame goes to lane `src_port % lanes` of its plane by default
//!   ([`EcmpMode::PortMod`]), or `ecmp_hash(frame) % lanes` with [`EcmpMode::Crc`].
//!   [`ecmp_hash`] is CRC-32 (IEEE, as `crc32fast`) over the 13-byte 5-tuple key
//!   `src_ip(4) ‖ dst_ip(4) ‖ src_port(2, BE) ‖ dst_port(2, BE) ‖ proto(1)`. Each lane and
//!   direction has a FIFO output queue (occupancy counts the frame being serialised) with a
//!   drop-tail limit and an ECN threshold: a frame arriving while occupancy exceeds the
//!   threshold is marked CE with `wire::set_ecn` if it is ECT(0)/ECT(1). A lane serialises at
//!   `gbps / (planes * lanes)`. Serialisation counts [`WIRE_OVERHEAD`] extra bytes per frame
//!   (preamble, FCS, inter-frame gap).
//! * **Impairments**, drawn per frame when it leaves a lane, in both directions, for data and
//!   control frames alike, in this order: loss (`loss`), corruption (`corrupt`: one byte in
//!   the ICRC-protected, non-masked part, i.e. UDP ports/length, BTH except its reserved byte,
//!   transport headers, payload or the ICRC itself, is XORed with a random non-zero value, so
//!   the receiver must reject it through the ICRC), duplication (`dup`: a second copy follows),
//!   and per copy reordering (`reorder`: extra delay uniform in `[0, reorder_delay]`). Then
//!   the frame propagates for `delay`.
//! * **Workload.** A registers a source region of `bytes` filled from a seeded generator,
//!   B a destination region. After `Event::Connected`, A posts `bytes` as WRITE messages of
//!   `msg_size` round-robin over `streams` streams. Transports with streams get one
//!   connection carrying them; transports without (RoCEv2) get one connection (QP) per stream
//!   (see [`StreamMapping`]). The run ends when every message has a sender completion and
//!   a receiver `WriteReceived`, when nothing is left to happen, or at `time_limit`.

use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::time::Instant;

use mroce_model::endpoint::EcnReroute;
use mroce_model::memory::{Access, MrKey};
use mroce_model::transport::{ConnId, Event, LocalBuf, NicAddr, RemoteBuf, Status, Transport, VerbError, WorkKind};
use mroce_model::wire::{self, ecn, opcode};
use serde::Serialize;

use crate::pcap::{PcapWriter, TsResolution};
use crate::rng::{derive_seed, Chance, Xoshiro256};
use crate::transports::{make_transport, FactoryError, TransportKind, TransportParams};

/// Bytes of every frame buffer in the pool (enough for a 9 KiB jumbo frame).
pub const FRAME_BUF_LEN: usize = 10_240;
/// Bytes each frame occupies on the wire beyond its length: preamble + SFD (8), FCS (4),
/// inter-frame gap (12).
pub const WIRE_OVERHEAD: u64 = 24;
/// Frames that may wait behind a busy NIC port (only matters with several planes).
pub const NIC_PORT_QUEUE: usize = 2;
/// Consecutive timer firings without simulated time advancing before the run is aborted.
const TIMER_LIVELOCK_LIMIT: u32 = 100_000;
/// Bytes per chunk when regenerating source data for the integrity check.
const CHECK_CHUNK: usize = 1 << 20;

/// How workload streams map onto connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamMapping {
    /// [`TransportKind::has_streams`] decides.
    #[default]
    Auto,
    /// One connection; message `i` goes on stream `i % streams`.
    Streams,
    /// `streams` connections, each with stream 0; message `i` goes on connection `i % streams`.
    Connections,
}

/// Everything that defines a pipe run. Two runs with equal configs produce equal reports
/// (wall-clock fields aside).
#[derive(Debug, Clone, PartialEq)]
pub struct PipeConfig {
    /// Transport under test (used by [`run`]; [`run_with`] takes a factory instead).
    pub transport: TransportKind,
    /// Paths per connection requested from the transport; default lane count.
    pub paths: u16,
    /// Parallel links per plane (`None`: `ceil(paths / planes)`, see [`PipeConfig::lanes`]).
    pub lanes: Option<u16>,
    /// NIC ports / network planes (1..=8).
    pub planes: u8,
    /// Total bandwidth of a NIC over all its planes, Gb/s (split evenly across lanes).
    pub gbps: f64,
    /// One-way propagation delay of a lane, ns.
    pub delay_ns: u64,
    /// Drop-tail limit of each lane queue, bytes.
    pub queue_limit: u64,
    /// ECN marking threshold of each lane queue, bytes.
    pub ecn_threshold: u64,
    /// Probability that a frame is lost.
    pub loss: f64,
    /// Probability that a frame gets an extra delay.
    pub reorder: f64,
    /// Maximum extra delay of a reordered frame, ns.
    pub reorder_delay_ns: u64,
    /// Probability that a frame is duplicated.
    pub dup: f64,
    /// Probability that a frame has one byte corrupted.
    pub corrupt: f64,
    /// Payload bytes to move.
    pub bytes: u64,
    /// Bytes per WRITE message.
    pub msg_size: u64,
    /// Streams the messages are spread over.
    pub streams: u16,
    /// How streams map to connections.
    pub stream_mapping: StreamMapping,
    /// Seed of everything random (data, impairments, transports).
    pub seed: u64,
    /// Simulated-time limit, ns.
    pub time_limit_ns: u64,
    /// Write every transmitted frame to this pcap file.
    pub pcap: Option<PathBuf>,
    /// How a frame picks its lane.
    pub ecmp: EcmpMode,
    /// mroce's policy for ECN re-route verdicts.
    pub ecn_reroute: EcnReroute,
    /// mroce's connection limit before the first rate hint.
    pub initial_conn_limit: u16,
    /// mroce's second copy of tail retransmissions (`EndpointConfig::tail_hedge`).
    pub tail_hedge: bool,
    /// mroce's immediate ACKs for the first flight (`EndpointConfig::first_flight_ack_req`).
    pub first_flight_ack_req: bool,
}

/// The pipe's ECMP function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum, Default)]
#[serde(rename_all = "kebab-case")]
pub enum EcmpMode {
    /// Lane = UDP source port modulo lanes: a NIC that picks consecutive entropies gets one
    /// path per lane (the pipe is a bundle of paths, not a fabric).
    #[default]
    PortMod,
    /// Lane = CRC-32 of the 5-tuple modulo lanes, like a switch (collisions happen; the
    /// fabric simulator models this properly).
    Crc,
}

impl Default for PipeConfig {
    fn default() -> Self {
        PipeConfig {
            transport: TransportKind::Mroce,
            paths: 16,
            lanes: None,
            planes: 1,
            gbps: 400.0,
            delay_ns: 2_000,
            queue_limit: 256 << 10,
            ecn_threshold: 64 << 10,
            loss: 0.0,
            reorder: 0.0,
            reorder_delay_ns: 4_000,
            dup: 0.0,
            corrupt: 0.0,
            bytes: 64 << 20,
            msg_size: 1 << 20,
            streams: 4,
            stream_mapping: StreamMapping::Auto,
            seed: 7,
            time_limit_ns: 10_000_000_000,
            pcap: None,
            ecmp: EcmpMode::PortMod,
            ecn_reroute: EcnReroute::default(),
            initial_conn_limit: mroce_model::params::CONN_LIMIT_INIT_PKTS,
            tail_hedge: mroce_model::endpoint::EndpointConfig::default().tail_hedge,
            first_flight_ack_req: mroce_model::endpoint::EndpointConfig::default().first_flight_ack_req,
        }
    }
}

impl PipeConfig {
    /// Lanes per plane actually used: `lanes`, or by default `ceil(paths / planes)`, so
    /// that there are as many lanes in total as paths (16 lanes of 25 Gb/s on one plane by
    /// default; 4 lanes per plane with 4 planes).
    pub fn lanes(&self) -> u16 {
        self.lanes
            .unwrap_or_else(|| self.paths.div_ceil(u16::from(self.planes.max(1))))
            .max(1)
    }

    fn uses_connections(&self) -> bool {
        match self.stream_mapping {
            StreamMapping::Auto => !self.transport.has_streams(),
            StreamMapping::Streams => false,
            StreamMapping::Connections => true,
        }
    }

    /// Check the parameters; the error names the offending one.
    pub fn validate(&self) -> Result<(), PipeError> {
        let bad = |s: String| Err(PipeError::Config(s));
        let prob = |name: &str, p: f64| {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err(PipeError::Config(format!(
                    "{name} must be a probability in [0, 1], got {p}"
                )))
            }
        };
        prob("loss", self.loss)?;
        prob("reorder", self.reorder)?;
        prob("dup", self.dup)?;
        prob("corrupt", self.corrupt)?;
        if self.planes == 0 || self.planes as usize > mroce_model::params::MAX_PLANES {
            return bad(format!(
                "planes must be 1..={}, got {}",
                mroce_model::params::MAX_PLANES,
                self.planes
            ));
        }
        if self.paths == 0 {
            return bad("paths must be at least 1".into());
        }
        if self.lanes == Some(0) {
            return bad("lanes must be at least 1".into());
        }
        if !(self.gbps.is_finite() && self.gbps > 0.0) {
            return bad(format!("gbps must be positive, got {}", self.gbps));
        }
        if self.bytes == 0 {
            return bad("bytes must be positive".into());
        }
        if usize::try_from(self.bytes).is_err() {
            return bad("bytes does not fit in memory".into());
        }
        if self.msg_size == 0 || self.msg_size > u64::from(u32::MAX) {
            return bad(format!(
                "msg-size must be 1..={} bytes, got {}",
                u32::MAX,
                self.msg_size
            ));
        }
        if self.streams == 0 {
            return bad("streams must be at least 1".into());
        }
        if self.queue_limit < FRAME_BUF_LEN as u64 {
            return bad(format!("queue limit must hold one frame ({FRAME_BUF_LEN} bytes)"));
        }
        Ok(())
    }
}

/// Result of a pipe run. Everything but the wall-clock fields (`wall_s`, `wall_loop_s`,
/// `packets_per_s`, `data_packets_per_s`) is deterministic for a given config.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipeReport {
    /// Transport name as it reports itself.
    pub transport: String,
    /// Random loss probability per frame.
    pub loss: f64,
    /// Reorder probability.
    pub reorder: f64,
    /// Duplication probability.
    pub dup: f64,
    /// Corruption probability.
    pub corrupt: f64,
    /// Paths requested from the transport.
    pub paths: u16,
    /// Lanes per plane.
    pub lanes: u16,
    /// Planes.
    pub planes: u8,
    /// Streams.
    pub streams: u16,
    /// Connections opened.
    pub connections: u32,
    /// Bytes per message.
    pub msg_size: u64,
    /// Payload bytes requested.
    pub bytes: u64,
    /// Payload bytes reported by receiver `WriteReceived` completions.
    pub delivered_bytes: u64,
    /// Messages posted.
    pub messages: u64,
    /// Messages with a successful sender completion.
    pub messages_completed: u64,
    /// Every message completed on both sides before the time limit.
    pub complete: bool,
    /// delivered_bytes × 8 / (last receiver completion − first data frame), Gb/s.
    pub goodput_gbps: f64,
    /// Retransmissions (sender counter).
    pub retransmits: u64,
    /// Spurious retransmissions (transport counter).
    pub spurious_retransmits: u64,
    /// "ok" (destination equals source, all complete), "corrupt" or "incomplete".
    pub integrity: String,
    /// Simulated time at the end of the run, µs.
    pub sim_time_us: f64,
    /// First data frame transmitted, µs of simulated time.
    pub first_data_us: f64,
    /// Last receiver completion, µs of simulated time.
    pub last_completion_us: f64,
    /// Wall-clock seconds of the whole run (setup and integrity check included).
    pub wall_s: f64,
    /// Wall-clock seconds of the event loop alone (the denominator of the rates below).
    pub wall_loop_s: f64,
    /// Frames handed to a NIC (both directions, duplicates included).
    pub packets: u64,
    /// Of those, data frames (WRITE/SEND opcodes).
    pub data_packets: u64,
    /// `packets` per wall-clock second of the event loop.
    pub packets_per_s: f64,
    /// `data_packets` per wall-clock second of the event loop.
    pub data_packets_per_s: f64,
    /// Frames the NICs transmitted (= pcap records).
    pub frames_tx: u64,
    /// Frames dropped by random loss.
    pub drops_loss: u64,
    /// Frames dropped by a full lane queue.
    pub drops_queue: u64,
    /// Frames marked CE.
    pub ecn_marks: u64,
    /// Frames corrupted by the link.
    pub corrupted: u64,
    /// Corrupted frames that `wire::decode_frame` rejects with an ICRC mismatch.
    pub corrupted_icrc_detectable: u64,
    /// Frames duplicated by the link.
    pub duplicated: u64,
    /// Frame copies given extra delay.
    pub reordered: u64,
    /// Work requests that completed with an error status.
    pub failed_completions: u64,
    /// Seed.
    pub seed: u64,
    /// Why the run stopped early, if it did.
    pub failure: Option<String>,
    /// Counters of the sender NIC (A).
    pub counters_sender: BTreeMap<String, u64>,
    /// Counters of the receiver NIC (B).
    pub counters_receiver: BTreeMap<String, u64>,
}

/// Why a run could not be carried out (an incomplete transfer is a report, not an error).
#[derive(Debug, thiserror::Error)]
pub enum PipeError {
    /// Bad parameter.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The transport could not be built.
    #[error(transparent)]
    Factory(#[from] FactoryError),
    /// The transport refused a verb the workload needs.
    #[error("{verb} refused: {err}")]
    Verb {
        /// Verb.
        verb: &'static str,
        /// Error.
        err: VerbError,
    },
    /// The pcap file could not be written.
    #[error("pcap {path}: {err}")]
    Pcap {
        /// File.
        path: PathBuf,
        /// Error.
        err: std::io::Error,
    },
    /// The transport misbehaved at the driver interface.
    #[error("transport violated the driver contract: {0}")]
    Contract(String),
}

/// CRC-32 ECMP hash of a frame's 5-tuple (see the module documentation); 0 for frames that
/// are not IPv4.
#[inline]
pub fn ecmp_hash(frame: &[u8]) -> u32 {
    const E: usize = wire::ETH_LEN;
    if frame.len() < wire::BTH_OFFSET || frame[12] != 0x08 || frame[13] != 0x00 {
        return 0;
    }
    let mut key = [0u8; 13];
    key[0..8].copy_from_slice(&frame[E + 12..E + 20]); // src ip, dst ip
    key[8..12].copy_from_slice(&frame[E + wire::IPV4_LEN..E + wire::IPV4_LEN + 4]); // ports
    key[12] = frame[E + 9]; // protocol
    crc32fast::hash(&key)
}

/// UDP source port of a frame (0 when too short).
#[inline]
pub fn port_of(frame: &[u8]) -> u16 {
    const P: usize = wire::ETH_LEN + wire::IPV4_LEN;
    match frame.get(P..P + 2) {
        Some(b) => u16::from_be_bytes([b[0], b[1]]),
        None => 0,
    }
}

/// True for opcodes that carry payload (RC SEND/WRITE, mroce SEND/WRITE).
#[inline]
pub fn is_data_opcode(op: u8) -> bool {
    matches!(op, 0x00..=0x0B | opcode::MR_WRITE | opcode::MR_SEND)
}

/// Pick the byte of a `len`-byte frame to corrupt: one that only the ICRC protects, i.e. the
/// UDP source port, the BTH except its reserved (masked) byte, the transport headers, the
/// payload, pad or the ICRC itself. Bytes that an earlier check would catch (IPv4 header and
/// checksum, UDP destination port and length) or that the ICRC masks (UDP checksum) are
/// never chosen, so every corrupted frame must be rejected by the ICRC check.
fn corrupt_position(rng: &mut Xoshiro256, len: usize) -> Option<usize> {
    let udp = wire::ETH_LEN + wire::IPV4_LEN;
    let bth_resv = wire::BTH_OFFSET + 4;
    if len < wire::BTH_OFFSET + wire::BTH_LEN + wire::ICRC_LEN {
        return None;
    }
    // Candidates: udp, udp+1, then BTH_OFFSET..len without bth_resv.
    let k = rng.below((2 + len - wire::BTH_OFFSET - 1) as u64) as usize;
    Some(match k {
        0 | 1 => udp + k,
        _ => {
            let p = wire::BTH_OFFSET + (k - 2);
            if p >= bth_resv {
                p + 1
            } else {
                p
            }
        }
    })
}

/// Run the pipe with the transport named in `cfg` (built by [`make_transport`]).
pub fn run(cfg: &PipeConfig) -> Result<PipeReport, PipeError> {
    let params = TransportParams {
        paths: cfg.paths,
        streams: if cfg.uses_connections() { 1 } else { cfg.streams },
        ecn_reroute: cfg.ecn_reroute,
        initial_conn_limit: cfg.initial_conn_limit,
        tail_hedge: cfg.tail_hedge,
        first_flight_ack_req: cfg.first_flight_ack_req,
        ..TransportParams::default()
    };
    let kind = cfg.transport;
    run_with(cfg, &mut |addr, seed| Ok(make_transport(kind, addr, seed, &params)?))
}

/// Addresses of NIC A and NIC B for `planes` planes.
pub fn nic_addrs(planes: u8) -> [NicAddr; 2] {
    [
        NicAddr::with_planes([0x02, 0, 0, 0, 0, 0x0A], [10, 0, 0, 1], planes),
        NicAddr::with_planes([0x02, 0, 0, 0, 0, 0x0B], [10, 0, 0, 2], planes),
    ]
}

/// Run the pipe with transports from `factory(addr, seed)` (called for A, then for B).
pub fn run_with(
    cfg: &PipeConfig,
    factory: &mut dyn FnMut(NicAddr, u64) -> Result<Box<dyn Transport>, PipeError>,
) -> Result<PipeReport, PipeError> {
    let wall0 = Instant::now();
    cfg.validate()?;
    let addrs = nic_addrs(cfg.planes);
    let a = factory(addrs[0], derive_seed(cfg.seed, 0xA))?;
    let b = factory(addrs[1], derive_seed(cfg.seed, 0xB))?;
    let mut sim = Sim::new(cfg, [a, b])?;
    sim.setup()?;
    let loop0 = Instant::now();
    sim.run_loop()?;
    let loop_s = loop0.elapsed().as_secs_f64();
    if let Some(p) = sim.pcap.as_mut() {
        p.flush().map_err(|err| PipeError::Pcap {
            path: cfg.pcap.clone().unwrap_or_default(),
            err,
        })?;
    }
    let integrity = sim.integrity();
    Ok(sim.report(integrity, wall0.elapsed().as_secs_f64(), loop_s))
}

// ---------------------------------------------------------------------------------------
// Simulation state
// ---------------------------------------------------------------------------------------

const EV_PORT_DONE: u64 = 0;
const EV_LINK_DONE: u64 = 1;
const EV_ARRIVE: u64 = 2;
const EV_ARG_BITS: u32 = 22;
const EV_ARG_MASK: u64 = (1 << EV_ARG_BITS) - 1;

/// A heap entry, packed into 16 bytes: `key = seq << 24 | kind << 22 | arg`. Because `seq`
/// sits in the top bits and is unique, ordering by `(t, key)` is ordering by `(t, seq)`.
/// `arg` is a frame id (arrive), a link index (link done) or `nic << 3 | plane` (port done).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Ev {
    t: u64,
    key: u64,
}

impl Ev {
    #[inline]
    fn kind(&self) -> u64 {
        (self.key >> EV_ARG_BITS) & 3
    }
    #[inline]
    fn arg(&self) -> u32 {
        (self.key & EV_ARG_MASK) as u32
    }
}

impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<core::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ev {
    // Reversed: BinaryHeap is a max-heap and we want the earliest (time, seq) first.
    #[inline]
    fn cmp(&self, o: &Self) -> core::cmp::Ordering {
        (o.t, o.key).cmp(&(self.t, self.key))
    }
}

#[derive(Default)]
struct Port {
    cur: Option<u32>,
    q: VecDeque<u32>,
}

struct Nic {
    t: Box<dyn Transport>,
    ports: Vec<Port>,
    /// Cached `poll_timeout`, ps (refreshed after every `&mut` call into the transport).
    timer_ps: Option<u64>,
}

#[derive(Default)]
struct Link {
    q: VecDeque<u32>,
    bytes: u64,
    busy: bool,
}

/// Frame buffers recycled through a free list; frames are named by index.
struct Pool {
    bufs: Vec<Vec<u8>>,
    lens: Vec<u32>,
    /// Link index of each frame.
    link: Vec<u32>,
    free: Vec<u32>,
}

impl Pool {
    #[inline]
    fn alloc(&mut self) -> u32 {
        if let Some(id) = self.free.pop() {
            return id;
        }
        self.bufs.push(vec![0; FRAME_BUF_LEN]);
        self.lens.push(0);
        self.link.push(0);
        (self.bufs.len() - 1) as u32
    }
    #[inline]
    fn release(&mut self, id: u32) {
        self.free.push(id);
    }
    #[inline]
    fn frame(&self, id: u32) -> &[u8] {
        &self.bufs[id as usize][..self.lens[id as usize] as usize]
    }
}

struct Workload {
    src: MrKey,
    dst: MrKey,
    msg_size: u64,
    bytes: u64,
    n_msgs: u64,
    streams: u16,
    by_connection: bool,
    conns: Vec<ConnId>,
    posted: Vec<bool>,
    any_posted: bool,
    tx_ok: u64,
    tx_failed: u64,
    rx_done: u64,
    rx_bytes: u64,
    first_data_ps: Option<u64>,
    last_rx_ps: u64,
    failure: Option<String>,
}

impl Workload {
    fn finished(&self) -> bool {
        let tx_all = self.tx_ok + self.tx_failed >= self.n_msgs;
        (tx_all && (self.rx_done >= self.n_msgs || self.tx_failed > 0)) || self.failure.is_some()
    }

    fn complete(&self) -> bool {
        self.tx_ok >= self.n_msgs && self.rx_done >= self.n_msgs && self.tx_failed == 0
    }

    /// Post every message that belongs to connection index `c`.
    fn post_for(&mut self, t: &mut dyn Transport, c: usize) -> Result<(), PipeError> {
        if self.posted[c] {
            return Ok(());
        }
        self.posted[c] = true;
        self.any_posted = true;
        let conn = self.conns[c];
        let step = u64::from(self.streams);
        let (first, stride) = if self.by_connection { (c as u64, step) } else { (0, 1) };
        let mut i = first;
        while i < self.n_msgs {
            let offset = i * self.msg_size;
            let len = self.msg_size.min(self.bytes - offset) as u32;
            let stream = if self.by_connection { 0 } else { (i % step) as u16 };
            let local = LocalBuf {
                key: self.src,
                offset,
                len,
            };
            let remote = RemoteBuf {
                va: self.dst.va + offset,
                rkey: self.dst.rkey,
            };
            t.post_write(conn, stream, local, remote, i)
                .map_err(|err| PipeError::Verb {
                    verb: "post_write",
                    err,
                })?;
            i += stride;
        }
        Ok(())
    }

    fn on_event(&mut self, nic: usize, t: &mut dyn Transport, ev: Event, now_ps: u64) -> Result<(), PipeError> {
        match ev {
            Event::Connected(id) if nic == 0 => {
                if let Some(c) = self.conns.iter().position(|&x| x == id) {
                    self.post_for(t, c)?;
                }
            }
            Event::ConnectFailed(id) => {
                self.failure = Some(format!("NIC {} connection {id} failed to connect", nic_name(nic)))
            }
            Event::Disconnected(id) => {
                self.failure = Some(format!("NIC {} connection {id} disconnected", nic_name(nic)))
            }
            Event::Completion(c) => match (nic, c.kind) {
                (0, WorkKind::Write) => {
                    if c.status == Status::Ok {
                        self.tx_ok += 1;
                    } else {
                        self.tx_failed += 1;
                        self.failure
                            .get_or_insert_with(|| format!("WRITE wr_id {} completed with {:?}", c.wr_id, c.status));
                    }
                }
                (1, WorkKind::WriteReceived) => {
                    if c.status == Status::Ok {
                        self.rx_done += 1;
                        self.rx_bytes += u64::from(c.bytes);
                        self.last_rx_ps = now_ps;
                    } else {
                        self.failure
                            .get_or_insert_with(|| format!("WriteReceived completed with {:?}", c.status));
                    }
                }
                _ => {}
            },
            _ => {}
        }
        Ok(())
    }
}

fn nic_name(n: usize) -> &'static str {
    if n == 0 {
        "A"
    } else {
        "B"
    }
}

#[derive(Default)]
struct Stats {
    packets: u64,
    data_packets: u64,
    frames_tx: u64,
    drops_loss: u64,
    drops_queue: u64,
    ecn_marks: u64,
    corrupted: u64,
    corrupted_detectable: u64,
    duplicated: u64,
    reordered: u64,
}

struct Sim<'c> {
    cfg: &'c PipeConfig,
    nics: [Nic; 2],
    links: Vec<Link>,
    pool: Pool,
    heap: BinaryHeap<Ev>,
    seq: u64,
    now_ps: u64,
    lanes: u32,
    planes: u32,
    port_ps_per_byte: f64,
    lane_ps_per_byte: f64,
    delay_ps: u64,
    reorder_delay_ps: u64,
    loss: Chance,
    corrupt: Chance,
    dup: Chance,
    reorder: Chance,
    rng: Xoshiro256,
    work: Workload,
    stats: Stats,
    pcap: Option<PcapWriter<BufWriter<File>>>,
}

impl<'c> Sim<'c> {
    fn new(cfg: &'c PipeConfig, transports: [Box<dyn Transport>; 2]) -> Result<Self, PipeError> {
        let planes = u32::from(cfg.planes);
        let lanes = u32::from(cfg.lanes());
        let [a, b] = transports;
        let mk = |t: Box<dyn Transport>| Nic {
            t,
            ports: (0..planes).map(|_| Port::default()).collect(),
            timer_ps: None,
        };
        let pcap = match &cfg.pcap {
            Some(path) => {
                let f = File::create(path).map_err(|err| PipeError::Pcap {
                    path: path.clone(),
                    err,
                })?;
                Some(
                    PcapWriter::new(BufWriter::with_capacity(1 << 20, f), TsResolution::Nanos).map_err(|err| {
                        PipeError::Pcap {
                            path: path.clone(),
                            err,
                        }
                    })?,
                )
            }
            None => None,
        };
        let n_msgs = cfg.bytes.div_ceil(cfg.msg_size);
        let by_connection = cfg.uses_connections();
        let n_conns = if by_connection { usize::from(cfg.streams) } else { 1 };
        Ok(Sim {
            cfg,
            nics: [mk(a), mk(b)],
            links: (0..2 * planes * lanes).map(|_| Link::default()).collect(),
            pool: Pool {
                bufs: Vec::new(),
                lens: Vec::new(),
                link: Vec::new(),
                free: Vec::new(),
            },
            heap: BinaryHeap::with_capacity(4096),
            seq: 0,
            now_ps: 0,
            lanes,
            planes,
            port_ps_per_byte: 8_000.0 / (cfg.gbps / f64::from(planes)),
            lane_ps_per_byte: 8_000.0 / (cfg.gbps / f64::from(planes * lanes)),
            delay_ps: cfg.delay_ns.saturating_mul(1000),
            reorder_delay_ps: cfg.reorder_delay_ns.saturating_mul(1000),
            loss: Chance::new(cfg.loss),
            corrupt: Chance::new(cfg.corrupt),
            dup: Chance::new(cfg.dup),
            reorder: Chance::new(cfg.reorder),
            rng: Xoshiro256::new(derive_seed(cfg.seed, 0x11A7)),
            work: Workload {
                src: MrKey {
                    lkey: 0,
                    rkey: 0,
                    va: 0,
                },
                dst: MrKey {
                    lkey: 0,
                    rkey: 0,
                    va: 0,
                },
                msg_size: cfg.msg_size,
                bytes: cfg.bytes,
                n_msgs,
                streams: cfg.streams,
                by_connection,
                conns: Vec::with_capacity(n_conns),
                posted: vec![false; n_conns],
                any_posted: false,
                tx_ok: 0,
                tx_failed: 0,
                rx_done: 0,
                rx_bytes: 0,
                first_data_ps: None,
                last_rx_ps: 0,
                failure: None,
            },
            stats: Stats::default(),
            pcap,
        })
    }

    fn data_rng(&self) -> Xoshiro256 {
        Xoshiro256::new(derive_seed(self.cfg.seed, 0xDA7A))
    }

    /// Register memory, fill the source, introduce the NICs and open the connections.
    #[inline(never)]
    fn setup(&mut self) -> Result<(), PipeError> {
        let len = self.cfg.bytes as usize;
        let mut rng = self.data_rng();
        let [a, b] = &mut self.nics;
        let src = a.t.memory_mut().register(len, Access { remote_write: false });
        {
            let buf =
                a.t.memory_mut()
                    .local_mut(src, 0, len as u64)
                    .map_err(|e| PipeError::Contract(format!("source region: {e}")))?;
            for chunk in buf.chunks_mut(CHECK_CHUNK) {
                rng.fill_bytes(chunk);
            }
        }
        let dst = b.t.memory_mut().register(len, Access { remote_write: true });
        {
            // Fault the (lazily zeroed) destination pages in now, so the page-fault cost of
            // first touch is paid in setup, not inside the timed event loop.
            let buf =
                b.t.memory_mut()
                    .local_mut(dst, 0, len as u64)
                    .map_err(|e| PipeError::Contract(format!("destination region: {e}")))?;
            for i in (0..buf.len()).step_by(4096) {
                buf[i] = 0;
            }
        }
        self.work.src = src;
        self.work.dst = dst;
        let (addr_a, addr_b) = (*a.t.addr(), *b.t.addr());
        a.t.add_peer(addr_b);
        b.t.add_peer(addr_a);
        for _ in 0..self.work.posted.len() {
            let id =
                a.t.connect(0, addr_b)
                    .map_err(|err| PipeError::Verb { verb: "connect", err })?;
            self.work.conns.push(id);
        }
        self.service(0)?;
        self.service(1)?;
        Ok(())
    }

    #[inline]
    fn push(&mut self, t: u64, kind: u64, arg: u32) {
        self.seq += 1;
        debug_assert!(u64::from(arg) <= EV_ARG_MASK && self.seq < 1 << 40);
        self.heap.push(Ev {
            t,
            key: self.seq << 24 | kind << EV_ARG_BITS | u64::from(arg),
        });
    }

    #[inline]
    fn ser_ps(len: u32, ps_per_byte: f64) -> u64 {
        (((u64::from(len) + WIRE_OVERHEAD) as f64 * ps_per_byte).round() as u64).max(1)
    }

    /// Drain events, pull frames while a port is free, refresh the timer.
    fn service(&mut self, n: usize) -> Result<(), PipeError> {
        self.drain_events(n)?;
        self.pump(n)?;
        self.drain_events(n)?;
        let nic = &mut self.nics[n];
        nic.timer_ps = nic.t.poll_timeout().map(|ns| ns.saturating_mul(1000));
        Ok(())
    }

    fn drain_events(&mut self, n: usize) -> Result<(), PipeError> {
        let now = self.now_ps;
        let nic = &mut self.nics[n];
        while let Some(ev) = nic.t.poll_event() {
            self.work.on_event(n, nic.t.as_mut(), ev, now)?;
        }
        Ok(())
    }

    fn can_pull(&self, n: usize) -> bool {
        let ports = &self.nics[n].ports;
        ports.iter().any(|p| p.cur.is_none()) && ports.iter().all(|p| p.q.len() < NIC_PORT_QUEUE)
    }

    fn pump(&mut self, n: usize) -> Result<(), PipeError> {
        let now_ns = self.now_ps / 1000;
        while self.can_pull(n) {
            let id = self.pool.alloc();
            let Some(tx) = self.nics[n].t.poll_transmit(now_ns, &mut self.pool.bufs[id as usize]) else {
                self.pool.release(id);
                break;
            };
            if u32::from(tx.plane) >= self.planes {
                return Err(PipeError::Contract(format!(
                    "frame for plane {} on a NIC with {} planes",
                    tx.plane, self.planes
                )));
            }
            if tx.len > FRAME_BUF_LEN || tx.len < wire::ETH_LEN {
                return Err(PipeError::Contract(format!("frame of {} bytes", tx.len)));
            }
            self.pool.lens[id as usize] = tx.len as u32;
            self.stats.frames_tx += 1;
            let frame = self.pool.frame(id);
            if let Some(p) = self.pcap.as_mut() {
                p.write_packet(now_ns, frame).map_err(|err| PipeError::Pcap {
                    path: self.cfg.pcap.clone().unwrap_or_default(),
                    err,
                })?;
            }
            if n == 0 && self.work.any_posted && self.work.first_data_ps.is_none() {
                self.work.first_data_ps = Some(self.now_ps);
            }
            let lane = match self.cfg.ecmp {
                EcmpMode::PortMod => u32::from(port_of(frame)) % self.lanes,
                EcmpMode::Crc => ecmp_hash(frame) % self.lanes,
            };
            let plane = u32::from(tx.plane);
            self.pool.link[id as usize] = (n as u32 * self.planes + plane) * self.lanes + lane;
            let port = &mut self.nics[n].ports[plane as usize];
            if port.cur.is_none() {
                self.start_port(n, plane, id);
            } else {
                port.q.push_back(id);
            }
        }
        Ok(())
    }

    fn start_port(&mut self, n: usize, plane: u32, id: u32) {
        self.nics[n].ports[plane as usize].cur = Some(id);
        let t = self.now_ps + Self::ser_ps(self.pool.lens[id as usize], self.port_ps_per_byte);
        self.push(t, EV_PORT_DONE, (n as u32) << 3 | plane);
    }

    fn on_port_done(&mut self, n: usize, plane: u32) -> Result<(), PipeError> {
        let port = &mut self.nics[n].ports[plane as usize];
        let id = port.cur.take().expect("port done without a frame");
        let next = port.q.pop_front();
        self.enqueue_link(id);
        if let Some(next) = next {
            self.start_port(n, plane, next);
        }
        self.service(n)
    }

    fn enqueue_link(&mut self, id: u32) {
        let li = self.pool.link[id as usize] as usize;
        let len = u64::from(self.pool.lens[id as usize]);
        let link = &mut self.links[li];
        if link.bytes + len > self.cfg.queue_limit {
            self.stats.drops_queue += 1;
            self.pool.release(id);
            return;
        }
        if link.bytes > self.cfg.ecn_threshold {
            let buf = &mut self.pool.bufs[id as usize][..len as usize];
            if matches!(wire::frame_ecn(buf), Some(ecn::ECT0 | ecn::ECT1)) && wire::set_ecn(buf, ecn::CE).is_ok() {
                self.stats.ecn_marks += 1;
            }
        }
        link.bytes += len;
        link.q.push_back(id);
        if !link.busy {
            link.busy = true;
            let t = self.now_ps + Self::ser_ps(len as u32, self.lane_ps_per_byte);
            self.push(t, EV_LINK_DONE, li as u32);
        }
    }

    fn on_link_done(&mut self, li: usize) {
        let link = &mut self.links[li];
        let id = link.q.pop_front().expect("link done without a frame");
        let len = self.pool.lens[id as usize];
        link.bytes -= u64::from(len);
        if let Some(&next) = link.q.front() {
            let t = self.now_ps + Self::ser_ps(self.pool.lens[next as usize], self.lane_ps_per_byte);
            self.push(t, EV_LINK_DONE, li as u32);
        } else {
            link.busy = false;
        }
        // Impairments, in a fixed order so runs are reproducible.
        if self.loss.draw(&mut self.rng) {
            self.stats.drops_loss += 1;
            self.pool.release(id);
            return;
        }
        if self.corrupt.draw(&mut self.rng) {
            if let Some(p) = corrupt_position(&mut self.rng, len as usize) {
                let x = 1 + self.rng.below(255) as u8;
                self.pool.bufs[id as usize][p] ^= x;
                self.stats.corrupted += 1;
                if matches!(
                    wire::decode_frame(self.pool.frame(id)),
                    Err(wire::WireError::BadIcrc { .. })
                ) {
                    self.stats.corrupted_detectable += 1;
                }
            }
        }
        let copy = if self.dup.draw(&mut self.rng) {
            let c = self.pool.alloc();
            let (ci, ii) = (c as usize, id as usize);
            let l = len as usize;
            if ci != ii {
                let (src, dst) = if ii < ci {
                    let (lo, hi) = self.pool.bufs.split_at_mut(ci);
                    (&lo[ii], &mut hi[0])
                } else {
                    let (lo, hi) = self.pool.bufs.split_at_mut(ii);
                    (&hi[0], &mut lo[ci])
                };
                dst[..l].copy_from_slice(&src[..l]);
            }
            self.pool.lens[ci] = len;
            self.pool.link[ci] = self.pool.link[ii];
            self.stats.duplicated += 1;
            Some(c)
        } else {
            None
        };
        for f in core::iter::once(id).chain(copy) {
            let mut t = self.now_ps + self.delay_ps;
            if self.reorder.draw(&mut self.rng) {
                t += self.rng.below(self.reorder_delay_ps + 1);
                self.stats.reordered += 1;
            }
            self.push(t, EV_ARRIVE, f);
        }
    }

    fn on_arrive(&mut self, id: u32) -> Result<(), PipeError> {
        let li = self.pool.link[id as usize];
        let per_dir = self.planes * self.lanes;
        let dst = if li < per_dir { 1 } else { 0 };
        let plane = ((li % per_dir) / self.lanes) as u8;
        let frame = &self.pool.bufs[id as usize][..self.pool.lens[id as usize] as usize];
        self.stats.packets += 1;
        if frame.len() > wire::BTH_OFFSET && is_data_opcode(frame[wire::BTH_OFFSET]) {
            self.stats.data_packets += 1;
        }
        self.nics[dst].t.handle_frame(self.now_ps / 1000, plane, frame);
        self.pool.release(id);
        self.service(dst)
    }

    #[inline(never)]
    fn run_loop(&mut self) -> Result<(), PipeError> {
        let limit_ps = self.cfg.time_limit_ns.saturating_mul(1000);
        let mut stuck = 0u32;
        while !self.work.finished() {
            let ev_t = self.heap.peek().map(|e| e.t);
            let timer = match (self.nics[0].timer_ps, self.nics[1].timer_ps) {
                (Some(x), Some(y)) => Some(if y < x { (1, y) } else { (0, x) }),
                (Some(x), None) => Some((0, x)),
                (None, Some(y)) => Some((1, y)),
                (None, None) => None,
            };
            match (ev_t, timer) {
                (None, None) => {
                    self.work
                        .failure
                        .get_or_insert_with(|| "stalled: no event pending and no timer armed".into());
                    break;
                }
                (e, Some((n, tt))) if e.is_none_or(|e| tt <= e) => {
                    let t = tt.max(self.now_ps);
                    if t > limit_ps {
                        self.now_ps = limit_ps;
                        break;
                    }
                    if t == self.now_ps {
                        stuck += 1;
                        if stuck > TIMER_LIVELOCK_LIMIT {
                            return Err(PipeError::Contract(format!(
                                "NIC {}: poll_timeout stays at or before now ({} ns) after handle_timeout",
                                nic_name(n),
                                self.now_ps / 1000
                            )));
                        }
                    } else {
                        stuck = 0;
                    }
                    self.now_ps = t;
                    self.nics[n].t.handle_timeout(t / 1000);
                    self.service(n)?;
                }
                (Some(e), _) => {
                    if e > limit_ps {
                        self.now_ps = limit_ps;
                        break;
                    }
                    let ev = self.heap.pop().expect("peeked");
                    if ev.t != self.now_ps {
                        stuck = 0;
                    }
                    self.now_ps = ev.t;
                    match ev.kind() {
                        EV_PORT_DONE => self.on_port_done((ev.arg() >> 3) as usize, ev.arg() & 7)?,
                        EV_LINK_DONE => self.on_link_done(ev.arg() as usize),
                        _ => self.on_arrive(ev.arg())?,
                    }
                }
                (None, Some(_)) => unreachable!("timer arm matches when no event is pending"),
            }
        }
        Ok(())
    }

    /// "ok" iff complete and both source and destination equal the seeded data.
    fn integrity(&self) -> &'static str {
        if !self.work.complete() {
            return "incomplete";
        }
        let (Ok(src), Ok(dst)) = (
            self.nics[0].t.memory().region(self.work.src),
            self.nics[1].t.memory().region(self.work.dst),
        ) else {
            return "corrupt";
        };
        let mut rng = self.data_rng();
        let mut expect = vec![0u8; CHECK_CHUNK];
        for (s, d) in src.chunks(CHECK_CHUNK).zip(dst.chunks(CHECK_CHUNK)) {
            let e = &mut expect[..s.len()];
            rng.fill_bytes(e);
            if s != &*e || d != &*e {
                return "corrupt";
            }
        }
        if src.len() != dst.len() {
            return "corrupt";
        }
        "ok"
    }

    fn report(&self, integrity: &str, wall_s: f64, loop_s: f64) -> PipeReport {
        let counters = |n: usize| {
            self.nics[n]
                .t
                .counters()
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<BTreeMap<String, u64>>()
        };
        let (cs, cr) = (counters(0), counters(1));
        let pick = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| cs.get(*n).or_else(|| cr.get(*n)).copied())
                .unwrap_or(0)
        };
        let first = self.work.first_data_ps.unwrap_or(0);
        let last = if self.work.rx_done > 0 {
            self.work.last_rx_ps
        } else {
            self.now_ps
        };
        let span_ps = last.saturating_sub(first);
        let goodput = if span_ps > 0 {
            self.work.rx_bytes as f64 * 8.0 / (span_ps as f64 / 1000.0)
        } else {
            0.0
        };
        let per_s = |x: u64| if loop_s > 0.0 { x as f64 / loop_s } else { 0.0 };
        let w = &self.work;
        PipeReport {
            transport: self.nics[0].t.name().to_string(),
            loss: self.cfg.loss,
            reorder: self.cfg.reorder,
            dup: self.cfg.dup,
            corrupt: self.cfg.corrupt,
            paths: self.cfg.paths,
            lanes: self.cfg.lanes(),
            planes: self.cfg.planes,
            streams: self.cfg.streams,
            connections: w.conns.len() as u32,
            msg_size: self.cfg.msg_size,
            bytes: self.cfg.bytes,
            delivered_bytes: w.rx_bytes,
            messages: w.n_msgs,
            messages_completed: w.tx_ok,
            complete: w.complete(),
            goodput_gbps: goodput,
            retransmits: pick(&["retransmits", "tx_retransmits", "tx_retx", "retx"]),
            // mroce: retransmitted chunks the receiver already had; RoCEv2: requests the
            // responder had already received.
            spurious_retransmits: cr
                .get("duplicate_chunks")
                .copied()
                .unwrap_or_else(|| pick(&["spurious_retransmits", "tx_spurious_retransmits", "spurious_retx"])),
            integrity: integrity.to_string(),
            sim_time_us: self.now_ps as f64 / 1e6,
            first_data_us: first as f64 / 1e6,
            last_completion_us: w.last_rx_ps as f64 / 1e6,
            wall_s,
            wall_loop_s: loop_s,
            packets: self.stats.packets,
            data_packets: self.stats.data_packets,
            packets_per_s: per_s(self.stats.packets),
            data_packets_per_s: per_s(self.stats.data_packets),
            frames_tx: self.stats.frames_tx,
            drops_loss: self.stats.drops_loss,
            drops_queue: self.stats.drops_queue,
            ecn_marks: self.stats.ecn_marks,
            corrupted: self.stats.corrupted,
            corrupted_icrc_detectable: self.stats.corrupted_detectable,
            duplicated: self.stats.duplicated,
            reordered: self.stats.reordered,
            failed_completions: w.tx_failed,
            seed: self.cfg.seed,
            failure: w.failure.clone(),
            counters_sender: cs.clone(),
            counters_receiver: cr.clone(),
        }
    }
}

impl PipeReport {
    /// A copy with the wall-clock fields zeroed (for comparing runs).
    pub fn without_wall_times(&self) -> PipeReport {
        PipeReport {
            wall_s: 0.0,
            wall_loop_s: 0.0,
            packets_per_s: 0.0,
            data_packets_per_s: 0.0,
            ..self.clone()
        }
    }

    /// A short human-readable summary.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} over {} lanes x {} planes, loss {}: {} of {} delivered in {:.1} us sim ({:.2} Gb/s goodput), integrity {}\n",
            self.transport,
            self.lanes,
            self.planes,
            self.loss,
            crate::size::format_size(self.delivered_bytes),
            crate::size::format_size(self.bytes),
            self.sim_time_us,
            self.goodput_gbps,
            self.integrity
        );
        s += &format!(
            "  frames: {} sent, {} delivered ({} data); drops: {} loss, {} queue; {} ECN marks, {} corrupted, {} duplicated, {} reordered\n",
            self.frames_tx, self.packets, self.data_packets, self.drops_loss, self.drops_queue, self.ecn_marks, self.corrupted, self.duplicated, self.reordered
        );
        s += &format!(
            "  retransmits: {} ({} spurious); wall {:.3} s, {:.0} packets/s, {:.0} data packets/s\n",
            self.retransmits, self.spurious_retransmits, self.wall_s, self.packets_per_s, self.data_packets_per_s
        );
        if let Some(f) = &self.failure {
            s += &format!("  stopped: {f}\n");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_order_is_time_then_seq() {
        let mut h = BinaryHeap::new();
        for (t, seq, kind, arg) in [
            (5u64, 1u64, 2u64, 7u32),
            (3, 2, 1, 9),
            (5, 0, 0, 1),
            (3, 3, 2, 0x3F_FFFF),
        ] {
            h.push(Ev {
                t,
                key: seq << 24 | kind << EV_ARG_BITS | u64::from(arg),
            });
        }
        let order: Vec<(u64, u64, u64, u32)> =
            core::iter::from_fn(|| h.pop().map(|e| (e.t, e.key >> 24, e.kind(), e.arg()))).collect();
        assert_eq!(
            order,
            vec![(3, 2, 1, 9), (3, 3, 2, 0x3F_FFFF), (5, 0, 0, 1), (5, 1, 2, 7)]
        );
    }

    #[test]
    fn ecmp_hash_is_crc_of_five_tuple() {
        let mut f = [0u8; 64];
        f[12] = 0x08;
        f[14 + 9] = 17;
        f[14 + 12..14 + 16].copy_from_slice(&[10, 0, 0, 1]);
        f[14 + 16..14 + 20].copy_from_slice(&[10, 0, 0, 2]);
        f[34..36].copy_from_slice(&0xC001u16.to_be_bytes());
        f[36..38].copy_from_slice(&4791u16.to_be_bytes());
        let key = [10, 0, 0, 1, 10, 0, 0, 2, 0xC0, 0x01, 0x12, 0xB7, 17];
        assert_eq!(ecmp_hash(&f), crc32fast::hash(&key));
        f[35] = 2;
        assert_ne!(ecmp_hash(&f), crc32fast::hash(&key));
        assert_eq!(ecmp_hash(&f[..20]), 0);
    }

    #[test]
    fn corrupt_positions_avoid_masked_bytes() {
        let mut r = Xoshiro256::new(1);
        for _ in 0..10_000 {
            let p = corrupt_position(&mut r, 200).unwrap();
            assert!(
                p == 34 || p == 35 || ((wire::BTH_OFFSET..200).contains(&p) && p != wire::BTH_OFFSET + 4),
                "{p}"
            );
        }
    }

    #[test]
    fn bad_configs_are_rejected() {
        let ok = PipeConfig::default();
        assert!(ok.validate().is_ok());
        for bad in [
            PipeConfig {
                loss: 1.5,
                ..ok.clone()
            },
            PipeConfig {
                planes: 0,
                ..ok.clone()
            },
            PipeConfig {
                planes: 9,
                ..ok.clone()
            },
            PipeConfig { bytes: 0, ..ok.clone() },
            PipeConfig {
                msg_size: 0,
                ..ok.clone()
            },
            PipeConfig {
                streams: 0,
                ..ok.clone()
            },
            PipeConfig {
                gbps: 0.0,
                ..ok.clone()
            },
            PipeConfig {
                lanes: Some(0),
                ..ok.clone()
            },
        ] {
            assert!(matches!(bad.validate(), Err(PipeError::Config(_))), "{bad:?}");
        }
    }
}
