//! RoCEv2 baseline: InfiniBand RC over UDP 4791 with go-back-N, one path per QP.
//!
//! This is the comparison point for mroce (design notes §2): the real IBTA RC wire format
//! (BTH, RETH, AETH, ICRC, CNP) on a single path, a 24-bit PSN, go-back-N on a
//! PSN-sequence-error NAK or a timeout, and a DCQCN-lite congestion window driven by CNPs.
//! It implements the same sans-IO [`Transport`] interface as mroce, so every driver and
//! harness runs both unchanged.
//!
//! Structure of the file:
//! - configuration, counters and wire constants;
//! - [`RoceEndpoint`], the NIC: QP table, peer table, control queue, timers;
//! - requester (sending WRITE/SEND, ACK/NAK/CNP processing, RTO, RNR wait);
//! - responder (in-order placement, ACK/NAK/CNP generation);
//! - connection management (mroce's CM packets, shared so drivers stay identical);
//! - the [`Transport`] implementation.
//!
//! Deliberate choices that keep the comparison fair (not a strawman):
//! - the default RTO equals mroce's [`RTO_MIN_NS`] (50 µs), far below the IB default;
//! - the outstanding window is capped at `window_pkts` (an IRN-style BDP cap), so a loss
//!   costs at most one window of go-back-N retransmissions;
//! - the requester asks for an ACK whenever its window would otherwise stall.
//!
//! IBTA semantics kept as they are: a remote access error or invalid request NAK is fatal
//! to the QP (the failing WR completes with its error, every other outstanding WR and
//! posted receive with [`Status::ConnectionFailed`], and the connection is torn down);
//! RNR NAKs are retried forever (`rnr_retry = 7`). There are no streams on the wire: all
//! streams share the one ordered QP and one receive queue; `WriteReceived` completions
//! report stream 0.

use alloc::collections::{BTreeMap, BinaryHeap, VecDeque};
use alloc::vec::Vec;
use core::cmp::Reverse;

use crate::memory::Memory;
use crate::params::{DEFAULT_MTU_PAYLOAD, MAX_STREAMS, RTO_MIN_NS};
use crate::transport::{
    Completion, ConnId, Event, LocalBuf, Nanos, NicAddr, RemoteBuf, Status, Transmit, Transport, VerbError, WorkKind,
};
use crate::tx_order::{self, TxKey, TxOrder};
use crate::wire::{
    self, ecn, opcode, Bth, Cmh, FrameAddrs, MrPacket, RoceFrame, BTH_LEN, BTH_OFFSET, DEFAULT_PKEY, FRAME_OVERHEAD,
};

// ---------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------

/// Bytes of the RDMA Extended Transport Header (VA 64 | R_Key 32 | DMA length 32).
pub const RETH_LEN: usize = 16;
/// Bytes of the ACK Extended Transport Header (syndrome 8 | MSN 24).
pub const AETH_LEN: usize = 4;
/// Bytes of the (reserved, zero) body of a RoCEv2 CNP.
pub const CNP_BODY_LEN: usize = 16;

/// AETH syndromes (IBTA Table 42): bits 6..5 select ACK / RNR NAK / NAK.
pub mod syndrome {
    /// ACK with the credit count in the low 5 bits.
    pub const ACK: u8 = 0x00;
    /// ACK whose credit field is "invalid" (no end-to-end credits): what this model sends.
    pub const ACK_NO_CREDITS: u8 = 0x1F;
    /// RNR NAK; the low 5 bits are the RNR timer code.
    pub const RNR_NAK: u8 = 0x20;
    /// NAK: PSN sequence error (go-back-N trigger).
    pub const NAK_PSN_SEQ: u8 = 0x60;
    /// NAK: invalid request (fatal).
    pub const NAK_INVALID_REQUEST: u8 = 0x61;
    /// NAK: remote access error (fatal).
    pub const NAK_REMOTE_ACCESS: u8 = 0x62;
    /// NAK: remote operational error (fatal).
    pub const NAK_REMOTE_OP: u8 = 0x63;
}

/// RNR timer code the responder puts in its RNR NAKs: code 1 = 10 µs.
pub const RNR_TIMER_CODE: u8 = 1;
/// Interval between CONNECT / DISCONNECT retries.
pub const CM_RETRY_NS: Nanos = 1_000_000;
/// CONNECT / DISCONNECT transmissions before giving up.
pub const CM_TRIES: u8 = 8;
/// The responder sends at most one CNP per QP per this interval.
pub const CNP_INTERVAL_NS: Nanos = 50_000;
/// The requester halves its window at most once per this interval ("an RTT or so").
pub const CWND_CUT_INTERVAL_NS: Nanos = 50_000;
/// Maximum RTO backoff exponent (×64).
pub const MAX_BACKOFF: u8 = 6;
/// DSCP of every frame.
pub const DSCP: u8 = 26;
/// IPv4 TTL of every frame.
pub const TTL: u8 = 64;
/// Largest payload per packet: every frame must fit one IPv4 datagram.
pub const MAX_MTU: u16 = 65_000;
/// Largest window (half the 24-bit PSN space, well beyond any useful value).
pub const MAX_WINDOW: u32 = 1 << 22;
/// DISCONNECT reason: a fatal NAK (remote access error, invalid request) ended the QP.
pub const REASON_FATAL_NAK: u16 = 1;
/// DISCONNECT reason: `retry_limit` timeouts without progress.
pub const REASON_RETRY_EXCEEDED: u16 = 2;
/// DISCONNECT reason: a local source buffer became unreadable.
pub const REASON_LOCAL_ERROR: u16 = 3;
/// Largest message in packets (keeps every outstanding PSN within half the PSN space).
pub const MAX_MSG_PKTS: u64 = 1 << 22;

const PSN_MASK: u32 = 0xFF_FFFF;
const PSN_HALF: u32 = 0x80_0000;
/// Bits of a connection id that index the QP table; the bits above are a generation.
const SLOT_BITS: u32 = 16;
const MAX_SLOTS: usize = 1 << SLOT_BITS;

/// IBTA RNR timer encoding (Table 45), in nanoseconds.
const RNR_TIMER_NS: [Nanos; 32] = [
    655_360_000,
    10_000,
    20_000,
    30_000,
    40_000,
    60_000,
    80_000,
    120_000,
    160_000,
    240_000,
    320_000,
    480_000,
    640_000,
    960_000,
    1_280_000,
    1_920_000,
    2_560_000,
    3_840_000,
    5_120_000,
    7_680_000,
    10_240_000,
    15_360_000,
    20_480_000,
    30_720_000,
    40_960_000,
    61_440_000,
    81_920_000,
    122_880_000,
    163_840_000,
    245_760_000,
    327_680_000,
    491_520_000,
];

/// `a + n` in the 24-bit PSN space.
#[inline]
fn psn_add(a: u32, n: u32) -> u32 {
    a.wrapping_add(n) & PSN_MASK
}

/// `a - b` in the 24-bit PSN space (a value >= `PSN_HALF` means `a` is behind `b`).
#[inline]
fn psn_diff(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & PSN_MASK
}

/// `a < b` in 24-bit serial arithmetic.
#[inline]
fn psn_lt(a: u32, b: u32) -> bool {
    let d = psn_diff(b, a);
    d != 0 && d < PSN_HALF
}

/// Retransmission deadline: `rto << backoff` after `now`, saturating.
#[inline]
fn rto_deadline(now: Nanos, rto: Nanos, backoff: u8) -> Nanos {
    now.saturating_add(rto.saturating_mul(1 << backoff))
}

/// Big-endian u32 of 4 bytes.
#[inline]
fn be32(b: [u8; 4]) -> u32 {
    u32::from_be_bytes(b)
}

// ---------------------------------------------------------------------------------------
// Configuration, counters, randomness
// ---------------------------------------------------------------------------------------

/// Configuration of a RoCEv2 endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceConfig {
    /// Local addresses; only plane 0 is used.
    pub addr: NicAddr,
    /// Payload bytes per packet (path MTU); the connection uses the smaller of both ends.
    /// Clamped to `1..=MAX_MTU`.
    pub mtu: u16,
    /// Maximum outstanding PSNs per QP (an IRN-style BDP cap); also the DCQCN-lite ceiling.
    pub window_pkts: u32,
    /// Retransmission timeout. The default equals mroce's `RTO_MIN_NS` (50 µs), so the
    /// comparison is not a strawman (IB's local ACK timeout is ~4 µs × 2^n, typically ms).
    pub rto_ns: Nanos,
    /// Timeouts without progress tolerated; on the next one the QP errors and every
    /// outstanding WR completes with [`Status::ConnectionFailed`].
    pub retry_limit: u32,
    /// Accept incoming CONNECTs.
    pub accept_incoming: bool,
    /// The requester sets AckReq at least every `ack_coalesce` packets.
    pub ack_coalesce: u32,
    /// DCQCN-lite: data is ECT(0), the responder answers CE with CNPs and the requester
    /// halves its window on a CNP. Off: data is Not-ECT and CNPs are ignored.
    pub ecn: bool,
    /// The order in which the NIC serves its QPs at a transmit opportunity. The default is
    /// round robin, as commodity RNICs arbitrate QPs of one traffic class; oldest-first is
    /// mroce's default (SPEC.md §8.3), offered here to compare the two under one policy.
    pub tx_order: TxOrder,
}

impl Default for RoceConfig {
    fn default() -> Self {
        RoceConfig {
            addr: NicAddr::default(),
            mtu: DEFAULT_MTU_PAYLOAD,
            window_pkts: 64,
            rto_ns: RTO_MIN_NS,
            retry_limit: 7,
            accept_incoming: true,
            ack_coalesce: 4,
            ecn: true,
            tx_order: TxOrder::RoundRobin,
        }
    }
}

/// Counters of a RoCEv2 endpoint (also listed by [`Transport::counters`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RoceCounters {
    /// Frames handed in.
    pub rx_frames: u64,
    /// Frames handed out.
    pub tx_frames: u64,
    /// Frames that failed to decode (truncation, IPv4/UDP errors, bad ICRC, bad P_Key,
    /// unknown opcode, malformed ACK/CNP/CM body).
    pub bad_frames: u64,
    /// Of `bad_frames`: frames whose ICRC did not match.
    pub bad_icrc: u64,
    /// Of `bad_frames`: frames shorter than their headers.
    pub truncated: u64,
    /// Frames whose destination IP is not ours.
    pub misaddressed: u64,
    /// Frames from a known peer for a QP that does not exist or is not established.
    pub unknown_connection: u64,
    /// Frames from an address not in the peer table.
    pub unknown_peer: u64,
    /// Duplicate data packets and duplicate CM requests (responder side).
    pub duplicates: u64,
    /// Data packets ahead of the expected PSN (dropped).
    pub out_of_sequence: u64,
    /// NAKs sent (PSN sequence, RNR and fatal).
    pub naks_sent: u64,
    /// NAKs received (PSN sequence, RNR and fatal).
    pub naks_received: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// ACKs received.
    pub acks_received: u64,
    /// ACKs or NAKs naming PSNs never sent (ignored).
    pub invalid_acks: u64,
    /// Data packets sent, first transmissions and retransmissions.
    pub data_sent: u64,
    /// Data packets received on established QPs (any PSN).
    pub data_received: u64,
    /// Data packets received with ECN = CE.
    pub ce_received: u64,
    /// Payload bytes placed into memory (WRITE and SEND).
    pub bytes_placed: u64,
    /// Data packets sent again (go-back-N).
    pub retransmits: u64,
    /// Retransmitted packets the responder had already received (counted at the responder).
    pub spurious_retransmits: u64,
    /// WRITEs refused for R_Key, bounds or access (responder side).
    pub rkey_violations: u64,
    /// Requests refused as invalid: opcode sequence, lengths, SEND larger than the receive.
    pub invalid_requests: u64,
    /// RNR NAKs sent (a SEND found no posted receive).
    pub rnr_naks: u64,
    /// RNR NAKs received (the requester waits and retries).
    pub rnr_naks_received: u64,
    /// CNPs sent.
    pub cnps_sent: u64,
    /// CNPs received.
    pub cnps_received: u64,
    /// Window halvings caused by CNPs.
    pub cwnd_cuts: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// QPs that hit `retry_limit`.
    pub retry_exceeded: u64,
    /// CONNECTs refused because `accept_incoming` is off.
    pub refused_connects: u64,
    /// CONNECTs dropped because the QP table is full.
    pub table_full: u64,
    /// Frames not sent because the caller's buffer was too small.
    pub tx_encode_errors: u64,
    /// Local buffers that became unreadable after posting (QP errored).
    pub local_access_errors: u64,
}

/// SplitMix64: the tiny deterministic generator behind ISNs, nonces and source ports.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    /// Next 64 random bits.
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

// ---------------------------------------------------------------------------------------
// Queue pair state
// ---------------------------------------------------------------------------------------

/// Connection state of a QP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QpState {
    /// CONNECT sent, waiting for CONNECT_ACK.
    Connecting,
    /// Ready to send and receive (RTS).
    Established,
    /// DISCONNECT sent, waiting for DISCONNECT_ACK; data is ignored.
    Closing,
}

/// A posted SEND or WRITE.
#[derive(Debug, Clone, Copy)]
struct SendWr {
    /// `WorkKind::Write` or `WorkKind::Send`.
    kind: WorkKind,
    /// Stream it was posted on (echoed in the completion).
    stream: u16,
    /// Per-stream message sequence number.
    msg_seq: u32,
    /// Caller's id.
    wr_id: u64,
    /// Source buffer.
    local: LocalBuf,
    /// Destination of a WRITE.
    remote: RemoteBuf,
    /// Packets of the message (1 for a zero-length message).
    npkts: u32,
    /// PSN of the first packet; valid once the WR is assigned (see `Requester::assigned`).
    first_psn: u32,
    /// Endpoint time of the post (the WR's rank under [`TxOrder::OldestFirst`]).
    posted_at: Nanos,
}

impl SendWr {
    /// Message length in bytes.
    fn len(&self) -> u32 {
        self.local.len
    }
}

/// A posted receive.
#[derive(Debug, Clone, Copy)]
struct RecvWr {
    /// Stream it was posted on (echoed in the completion).
    stream: u16,
    /// Per-stream sequence number of the receive.
    msg_seq: u32,
    /// Caller's id.
    wr_id: u64,
    /// Where the SEND lands.
    local: LocalBuf,
}

/// Requester (send queue) state of a QP.
#[derive(Debug)]
struct Requester {
    /// Posted, not yet completed WRs in order.
    wrs: VecDeque<SendWr>,
    /// `wrs[..assigned]` have PSNs; PSNs are assigned when a WR is first transmitted, so
    /// the PSN range in use never exceeds the window plus one message.
    assigned: usize,
    /// Index in `wrs` of the WR holding `nxt` (`assigned` when `nxt == end`).
    cursor: usize,
    /// Oldest unacknowledged PSN.
    una: u32,
    /// Next PSN to transmit (moves back on go-back-N).
    nxt: u32,
    /// Next PSN to assign.
    end: u32,
    /// One past the highest PSN ever transmitted.
    sent_hi: u32,
    /// Packets since the last AckReq.
    since_ackreq: u32,
    /// DCQCN-lite window in packets.
    cwnd: u32,
    /// Packets acknowledged since the window last grew.
    acked_since_grow: u32,
    /// When the window was last halved.
    last_cut: Option<Nanos>,
    /// Retransmission deadline.
    rto_at: Option<Nanos>,
    /// Current backoff exponent.
    backoff: u8,
    /// Consecutive timeouts without progress.
    retries: u32,
    /// Sending is paused by an RNR NAK until this time.
    rnr_until: Option<Nanos>,
    /// Next per-stream message sequence number, indexed by stream (grown on demand).
    msg_seqs: Vec<u32>,
}

impl Requester {
    /// A requester whose first PSN is `isn`.
    fn new(isn: u32, cwnd: u32) -> Self {
        Requester {
            wrs: VecDeque::new(),
            assigned: 0,
            cursor: 0,
            una: isn,
            nxt: isn,
            end: isn,
            sent_hi: isn,
            since_ackreq: 0,
            cwnd,
            acked_since_grow: 0,
            last_cut: None,
            rto_at: None,
            backoff: 0,
            retries: 0,
            rnr_until: None,
            msg_seqs: Vec::new(),
        }
    }

    /// Something is left to transmit.
    fn has_data(&self) -> bool {
        self.nxt != self.end || self.assigned < self.wrs.len()
    }

    /// Packets sent and not acknowledged.
    fn outstanding(&self) -> u32 {
        psn_diff(self.sent_hi, self.una)
    }

    /// Move the transmit point to `psn` (in `una..=end`), locating the WR that holds it.
    fn seek(&mut self, psn: u32) {
        self.nxt = psn;
        let mut i = 0;
        while i < self.assigned {
            match self.wrs.get(i) {
                Some(w) if psn_diff(psn, w.first_psn) >= w.npkts => i += 1,
                _ => break,
            }
        }
        self.cursor = i;
    }
}

/// A message being received (between a First and its Last).
#[derive(Debug, Clone, Copy)]
enum InMsg {
    /// RDMA WRITE: where the next payload byte lands.
    Write {
        /// R_Key from the RETH.
        rkey: u32,
        /// Address of the next byte.
        va: u64,
        /// Bytes still expected.
        remaining: u32,
        /// DMA length from the RETH.
        total: u32,
    },
    /// SEND: the receive it consumes and the bytes placed so far.
    Send {
        /// Consumed receive.
        recv: RecvWr,
        /// Bytes placed.
        offset: u32,
    },
}

/// Responder (receive side) state of a QP.
#[derive(Debug)]
struct Responder {
    /// Expected PSN.
    epsn: u32,
    /// Message sequence number: messages completed (24 bits).
    msn: u32,
    /// A NAK (sequence or RNR) was sent for the current gap: drop silently until `epsn`.
    nak_sent: bool,
    /// Message in progress.
    cur: Option<InMsg>,
    /// Posted receives in order (one queue for every stream).
    recvs: VecDeque<RecvWr>,
    /// Next per-stream receive sequence number, indexed by stream.
    recv_seqs: Vec<u32>,
    /// WRITE messages received (msg_seq of `WriteReceived`).
    writes_received: u32,
    /// When the last CNP was queued.
    last_cnp: Option<Nanos>,
    /// An ACK / status frame is already queued.
    ack_queued: bool,
    /// Fatal error (syndrome, PSN): every further request is answered with this NAK.
    fatal: Option<(u8, u32)>,
}

/// One queue pair: a connection.
#[derive(Debug)]
struct Qp {
    /// Our QPN (the BTH DestQP the peer uses).
    id: ConnId,
    /// Connection state.
    state: QpState,
    /// The peer's QPN.
    remote_qpn: u32,
    /// Peer plane-0 address.
    peer_ip: [u8; 4],
    /// Data frame addressing (ECT(0) when DCQCN is on).
    data_addrs: FrameAddrs,
    /// Control frame addressing (Not-ECT).
    ctrl_addrs: FrameAddrs,
    /// Negotiated payload bytes per packet.
    mtu: u32,
    /// Our initial PSN (carried in CM packets).
    isn: u32,
    /// CM nonce (ours for outgoing, the peer's for accepted connections).
    nonce: u64,
    /// Accepted (rather than initiated) connection: registered in `incoming`.
    accepted: bool,
    /// Next CONNECT / DISCONNECT retry.
    cm_at: Option<Nanos>,
    /// CM transmissions so far.
    cm_tries: u8,
    /// DISCONNECT reason.
    reason: u16,
    /// `Event::Disconnected` already reported.
    notified: bool,
    /// Queued in `Shared::active`.
    in_active: bool,
    /// Time of this QP's registered entry in the timer heap.
    heap_at: Option<Nanos>,
    /// Send side.
    rq: Requester,
    /// Receive side.
    rs: Responder,
}

impl Qp {
    /// Earliest timer of the QP.
    fn next_deadline(&self) -> Option<Nanos> {
        [self.cm_at, self.rq.rto_at, self.rq.rnr_until]
            .into_iter()
            .flatten()
            .min()
    }

    /// Rank under [`TxOrder::OldestFirst`]: a requester going back over lost packets has
    /// only retransmissions to send and goes first; else the post time of the WR it sends
    /// from next.
    fn tx_key(&self) -> TxKey {
        let next = self.rq.wrs.get(self.rq.cursor).map(|w| w.posted_at);
        let fresh = !psn_lt(self.rq.nxt, self.rq.sent_hi) && next.is_some();
        tx_order::tx_key(fresh, next.unwrap_or(0))
    }

    /// The requester may transmit a data packet now.
    fn can_send(&self) -> bool {
        self.state == QpState::Established
            && self.rq.rnr_until.is_none()
            && self.rq.has_data()
            && psn_diff(self.rq.nxt, self.rq.una) < self.rq.cwnd
    }

    /// A CM frame from this QP to its peer.
    fn cm(&self, op: u8) -> Ctrl {
        let dest_qp = if op == opcode::MR_CONNECT { 0 } else { self.remote_qpn };
        Ctrl::Cm {
            addrs: self.ctrl_addrs,
            dest_qp,
            op,
            cmh: Cmh {
                src_conn: self.id,
                isn: self.isn,
                paths: 1,
                planes: 1,
                mtu: self.mtu as u16,
                streams: MAX_STREAMS,
                reason: self.reason,
                rx_capacity_mbps: 0,
                nonce: self.nonce,
            },
        }
    }
}

/// A control frame waiting in the transmit queue (sent before any data).
#[derive(Debug, Clone, Copy)]
enum Ctrl {
    /// The responder's status: an ACK of `epsn - 1`, or its fatal NAK.
    Ack(ConnId),
    /// A PSN-sequence-error or RNR NAK.
    Nak {
        /// QP.
        conn: ConnId,
        /// AETH syndrome.
        syndrome: u8,
        /// PSN named by the NAK.
        psn: u32,
    },
    /// A congestion notification for the peer's requester.
    Cnp(ConnId),
    /// A CM packet, fully addressed.
    Cm {
        /// Addressing.
        addrs: FrameAddrs,
        /// BTH DestQP.
        dest_qp: u32,
        /// CM opcode.
        op: u8,
        /// CM header.
        cmh: Cmh,
    },
}

/// Per-connection slot of the QP table.
#[derive(Debug)]
struct Slot {
    /// Generation: the upper 8 bits of the connection id, bumped on reuse.
    gen: u8,
    /// The QP, if the slot is in use.
    qp: Option<Qp>,
}

/// QP table: ids are `gen << 16 | index`, so a stale id never reaches a reused slot and no
/// id is 0 or 1 (the IB special QPs; 0 is the DestQP of CONNECT).
#[derive(Debug, Default)]
struct QpTable {
    /// Slots.
    slots: Vec<Slot>,
    /// Free slot indices.
    free: Vec<u16>,
    /// QPs in use.
    live: usize,
}

impl QpTable {
    /// Split an id into slot index and generation.
    fn split(id: ConnId) -> (usize, u8) {
        ((id & ((1 << SLOT_BITS) - 1)) as usize, (id >> SLOT_BITS) as u8)
    }

    /// The QP with this id.
    fn get(&self, id: ConnId) -> Option<&Qp> {
        let (idx, gen) = Self::split(id);
        self.slots.get(idx).filter(|s| s.gen == gen).and_then(|s| s.qp.as_ref())
    }

    /// The QP with this id, mutable.
    fn get_mut(&mut self, id: ConnId) -> Option<&mut Qp> {
        let (idx, gen) = Self::split(id);
        self.slots
            .get_mut(idx)
            .filter(|s| s.gen == gen)
            .and_then(|s| s.qp.as_mut())
    }

    /// Insert the QP `make` builds for a fresh id; `None` when the table is full.
    fn insert_with(&mut self, make: impl FnOnce(ConnId) -> Qp) -> Option<ConnId> {
        let idx = match self.free.pop() {
            Some(i) => i as usize,
            None if self.slots.len() < MAX_SLOTS => {
                self.slots.push(Slot { gen: 1, qp: None });
                self.slots.len() - 1
            }
            None => return None,
        };
        let slot = self.slots.get_mut(idx)?;
        let id = (u32::from(slot.gen) << SLOT_BITS) | idx as u32;
        slot.qp = Some(make(id));
        self.live += 1;
        Some(id)
    }

    /// Remove a QP; its slot comes back with the next generation.
    fn remove(&mut self, id: ConnId) -> Option<Qp> {
        let (idx, gen) = Self::split(id);
        let slot = self.slots.get_mut(idx).filter(|s| s.gen == gen)?;
        let qp = slot.qp.take()?;
        slot.gen = if slot.gen == u8::MAX { 1 } else { slot.gen + 1 };
        self.free.push(idx as u16);
        self.live -= 1;
        Some(qp)
    }
}

/// State every QP handler writes to: queues, timers and counters.
#[derive(Debug, Default)]
struct Shared {
    /// Control frames, sent before data.
    ctrl: VecDeque<Ctrl>,
    /// Events for the driver.
    events: VecDeque<Event>,
    /// QPs that may have data to send, round-robin.
    active: VecDeque<ConnId>,
    /// The latest time a driver passed in: the time of a post, which takes none.
    clock: Nanos,
    /// Scratch space of `poll_transmit` under [`TxOrder::OldestFirst`].
    tx_visit: Vec<(TxKey, u32)>,
    /// Timer heap with lazy deletion: each QP keeps one registered entry no later than
    /// its earliest deadline (`Qp::heap_at`); other entries are stale and skipped.
    timers: BinaryHeap<Reverse<(Nanos, ConnId)>>,
    /// Counters.
    c: RoceCounters,
}

impl Shared {
    /// Queue a QP for transmission if it is not queued.
    fn wake(&mut self, qp: &mut Qp) {
        if !qp.in_active {
            qp.in_active = true;
            self.active.push_back(qp.id);
        }
    }

    /// Make sure the heap holds an entry no later than the QP's earliest deadline.
    fn sync_timer(&mut self, qp: &mut Qp) {
        if let Some(d) = qp.next_deadline() {
            if qp.heap_at.is_none_or(|h| d < h) {
                qp.heap_at = Some(d);
                self.timers.push(Reverse((d, qp.id)));
            }
        }
    }

    /// Report a completion.
    #[allow(clippy::too_many_arguments)]
    fn complete(
        &mut self,
        conn: ConnId,
        stream: u16,
        msg_seq: u32,
        wr_id: u64,
        kind: WorkKind,
        status: Status,
        bytes: u32,
    ) {
        self.events.push_back(Event::Completion(Completion {
            conn,
            stream,
            msg_seq,
            wr_id,
            kind,
            status,
            bytes,
        }));
    }

    /// Queue the responder's status frame (ACK or fatal NAK) once.
    fn queue_status(&mut self, qp: &mut Qp) {
        if !qp.rs.ack_queued {
            qp.rs.ack_queued = true;
            self.ctrl.push_back(Ctrl::Ack(qp.id));
        }
    }

    /// Complete every WR and receive of a QP: the first WR with `first` if given, the rest
    /// with `ConnectionFailed`; the requester is left idle.
    fn flush(&mut self, qp: &mut Qp, first: Option<Status>) {
        let mut first = first;
        while let Some(w) = qp.rq.wrs.pop_front() {
            let st = first.take().unwrap_or(Status::ConnectionFailed);
            self.complete(qp.id, w.stream, w.msg_seq, w.wr_id, w.kind, st, 0);
        }
        if let Some(InMsg::Send { recv, .. }) = qp.rs.cur.take() {
            self.complete(
                qp.id,
                recv.stream,
                recv.msg_seq,
                recv.wr_id,
                WorkKind::Recv,
                Status::ConnectionFailed,
                0,
            );
        }
        while let Some(r) = qp.rs.recvs.pop_front() {
            self.complete(
                qp.id,
                r.stream,
                r.msg_seq,
                r.wr_id,
                WorkKind::Recv,
                Status::ConnectionFailed,
                0,
            );
        }
        let rq = &mut qp.rq;
        rq.assigned = 0;
        rq.cursor = 0;
        rq.una = rq.end;
        rq.nxt = rq.end;
        rq.sent_hi = rq.end;
        rq.rto_at = None;
        rq.rnr_until = None;
    }
}

/// Next sequence number of `stream` in a lazily grown per-stream table.
fn next_seq(table: &mut Vec<u32>, stream: u16) -> u32 {
    let s = stream as usize;
    if table.len() <= s {
        table.resize(s + 1, 0);
    }
    match table.get_mut(s) {
        Some(v) => {
            let seq = *v;
            *v = v.wrapping_add(1);
            seq
        }
        None => 0,
    }
}

/// Completion status for a fatal NAK code.
fn nak_status(code: u8) -> Status {
    match code {
        2 => Status::RemoteAccessError,
        _ => Status::RemoteInvalid,
    }
}

// ---------------------------------------------------------------------------------------
// The endpoint
// ---------------------------------------------------------------------------------------

/// A RoCEv2 NIC: RC queue pairs with go-back-N over a single path each.
///
/// Sans-IO and deterministic: time comes in through the [`Transport`] calls and
/// randomness (ISNs, CM nonces, UDP source ports) from the seed given to [`Self::new`].
#[derive(Debug)]
pub struct RoceEndpoint {
    /// Configuration (normalised).
    cfg: RoceConfig,
    /// Random source.
    rng: SplitMix64,
    /// Registered memory.
    memory: Memory,
    /// Neighbour table: every plane IP of every peer.
    peers: BTreeMap<[u8; 4], NicAddr>,
    /// Queue pairs.
    table: QpTable,
    /// Accepted connections by (peer IP, peer QPN), to recognise repeated CONNECTs.
    incoming: BTreeMap<([u8; 4], u32), ConnId>,
    /// Queues, timers, counters.
    sh: Shared,
    /// Initial PSN for new QPs instead of a random one (tests, conformance).
    isn_override: Option<u32>,
}

impl RoceEndpoint {
    /// A NIC with configuration `cfg`; `seed` drives every random choice.
    pub fn new(cfg: RoceConfig, seed: u64) -> Self {
        let mut cfg = cfg;
        cfg.mtu = cfg.mtu.clamp(1, MAX_MTU);
        cfg.window_pkts = cfg.window_pkts.clamp(1, MAX_WINDOW);
        cfg.rto_ns = cfg.rto_ns.max(1);
        cfg.ack_coalesce = cfg.ack_coalesce.max(1);
        let mut rng = SplitMix64(seed);
        let salt = rng.next_u64() as u8;
        RoceEndpoint {
            cfg,
            rng,
            memory: Memory::new(salt),
            peers: BTreeMap::new(),
            table: QpTable::default(),
            incoming: BTreeMap::new(),
            sh: Shared::default(),
            isn_override: None,
        }
    }

    /// Counters as a struct.
    pub fn counters_struct(&self) -> &RoceCounters {
        &self.sh.c
    }

    /// The configuration in force (after clamping).
    pub fn config(&self) -> &RoceConfig {
        &self.cfg
    }

    /// Start QPs created from now on at `psn` instead of a random PSN (`None` restores
    /// random ISNs). For tests of PSN wraparound and for conformance runs.
    pub fn set_initial_psn(&mut self, psn: Option<u32>) {
        self.isn_override = psn.map(|p| p & PSN_MASK);
    }

    /// Connections in the table (any state).
    pub fn connection_count(&self) -> usize {
        self.table.live
    }

    /// Current DCQCN-lite window of a connection, in packets.
    pub fn cwnd(&self, conn: ConnId) -> Option<u32> {
        self.table.get(conn).map(|qp| qp.rq.cwnd)
    }

    /// Build a QP (not yet in the table) towards `peer`.
    fn new_qp(&mut self, id: ConnId, peer: &NicAddr, state: QpState) -> Qp {
        let isn = self
            .isn_override
            .unwrap_or_else(|| self.rng.next_u64() as u32 & PSN_MASK);
        let src_port = 0xC000 | (self.rng.next_u64() as u16 & 0x3FFF);
        let ctrl_addrs = FrameAddrs {
            dst_mac: peer.mac,
            src_mac: self.cfg.addr.mac,
            src_ip: self.cfg.addr.ips[0],
            dst_ip: peer.ips[0],
            src_port,
            dscp: DSCP,
            ecn: ecn::NOT_ECT,
            ttl: TTL,
        };
        let data_ecn = if self.cfg.ecn { ecn::ECT0 } else { ecn::NOT_ECT };
        Qp {
            id,
            state,
            remote_qpn: 0,
            peer_ip: peer.ips[0],
            data_addrs: FrameAddrs {
                ecn: data_ecn,
                ..ctrl_addrs
            },
            ctrl_addrs,
            mtu: u32::from(self.cfg.mtu),
            isn,
            nonce: 0,
            accepted: false,
            cm_at: None,
            cm_tries: 0,
            reason: 0,
            notified: false,
            in_active: false,
            heap_at: None,
            rq: Requester::new(isn, self.cfg.window_pkts),
            rs: Responder {
                epsn: 0,
                msn: 0,
                nak_sent: false,
                cur: None,
                recvs: VecDeque::new(),
                recv_seqs: Vec::new(),
                writes_received: 0,
                last_cnp: None,
                ack_queued: false,
                fatal: None,
            },
        }
    }

    /// Allocate a QP built by `new_qp`.
    fn alloc_qp(&mut self, peer: &NicAddr, state: QpState) -> Option<ConnId> {
        // Draw the QP's random values first: the id is only known inside the table.
        let proto = self.new_qp(0, peer, state);
        self.table.insert_with(|id| Qp { id, ..proto })
    }

    /// Remove a QP and its `incoming` entry.
    fn remove_qp(&mut self, id: ConnId) {
        if let Some(qp) = self.table.remove(id) {
            if qp.accepted {
                self.incoming.remove(&(qp.peer_ip, qp.remote_qpn));
            }
        }
    }

    /// Move an established QP to error: flush its WRs (the first with `first`), report
    /// `Disconnected` now and tell the peer with DISCONNECT (retried).
    fn fail_qp(&mut self, now: Nanos, id: ConnId, first: Option<Status>, reason: u16) {
        let Some(qp) = self.table.get_mut(id) else { return };
        if qp.state != QpState::Established {
            return;
        }
        self.sh.flush(qp, first);
        self.sh.events.push_back(Event::Disconnected(id));
        qp.notified = true;
        qp.reason = reason;
        Self::start_closing(&mut self.sh, qp, now);
    }

    /// Enter `Closing`: send DISCONNECT and arm its retry.
    fn start_closing(sh: &mut Shared, qp: &mut Qp, now: Nanos) {
        qp.state = QpState::Closing;
        qp.cm_tries = 1;
        qp.cm_at = Some(now.saturating_add(CM_RETRY_NS));
        sh.ctrl.push_back(qp.cm(opcode::MR_DISCONNECT));
        sh.sync_timer(qp);
    }

    /// Common checks and bookkeeping of `post_write` / `post_send`.
    fn post(
        &mut self,
        conn: ConnId,
        stream: u16,
        local: LocalBuf,
        remote: RemoteBuf,
        wr_id: u64,
        kind: WorkKind,
    ) -> Result<(), VerbError> {
        if stream >= MAX_STREAMS {
            return Err(VerbError::BadStream(stream));
        }
        let qp = self.table.get_mut(conn).ok_or(VerbError::UnknownConnection(conn))?;
        if qp.state != QpState::Established {
            return Err(VerbError::NotConnected(conn));
        }
        self.memory.check_local(local.key, local.offset, u64::from(local.len))?;
        let npkts = u64::from(local.len).div_ceil(u64::from(qp.mtu)).max(1);
        if npkts > MAX_MSG_PKTS {
            return Err(VerbError::TooLarge(u64::from(local.len)));
        }
        let msg_seq = next_seq(&mut qp.rq.msg_seqs, stream);
        qp.rq.wrs.push_back(SendWr {
            kind,
            stream,
            msg_seq,
            wr_id,
            local,
            remote,
            npkts: npkts as u32,
            first_psn: 0,
            posted_at: self.sh.clock,
        });
        self.sh.wake(qp);
        Ok(())
    }

    /// Dispatch a decoded frame addressed to a QP (data, ACK/NAK, CNP).
    fn on_qp_frame(&mut self, now: Nanos, f: &RoceFrame<'_>) {
        let id = f.bth.dest_qp;
        let Some(qp) = self
            .table
            .get_mut(id)
            .filter(|qp| qp.state == QpState::Established && qp.peer_ip == f.addrs.src_ip)
        else {
            if self.peers.contains_key(&f.addrs.src_ip) {
                self.sh.c.unknown_connection += 1;
            } else {
                self.sh.c.unknown_peer += 1;
            }
            return;
        };
        let fatal = match f.bth.opcode {
            opcode::RC_ACK => on_aeth(qp, &mut self.sh, &self.cfg, now, f),
            opcode::CNP => {
                on_cnp(qp, &mut self.sh, &self.cfg, now, f);
                None
            }
            _ => {
                on_request(qp, &mut self.memory, &mut self.sh, &self.cfg, now, f);
                None
            }
        };
        self.sh.sync_timer(qp);
        if let Some(status) = fatal {
            self.fail_qp(now, id, Some(status), REASON_FATAL_NAK);
        }
    }

    /// Run the due timers of one QP.
    fn run_qp_timers(&mut self, now: Nanos, id: ConnId) {
        let Some(qp) = self.table.get_mut(id) else { return };
        let cm_due = qp.cm_at.is_some_and(|t| t <= now);
        match qp.state {
            QpState::Connecting if cm_due => {
                if qp.cm_tries < CM_TRIES {
                    qp.cm_tries += 1;
                    qp.cm_at = Some(now.saturating_add(CM_RETRY_NS));
                    self.sh.ctrl.push_back(qp.cm(opcode::MR_CONNECT));
                } else {
                    self.sh.events.push_back(Event::ConnectFailed(id));
                    self.remove_qp(id);
                    return;
                }
            }
            QpState::Closing if cm_due => {
                if qp.cm_tries < CM_TRIES {
                    qp.cm_tries += 1;
                    qp.cm_at = Some(now.saturating_add(CM_RETRY_NS));
                    self.sh.ctrl.push_back(qp.cm(opcode::MR_DISCONNECT));
                } else {
                    if !qp.notified {
                        self.sh.events.push_back(Event::Disconnected(id));
                    }
                    self.remove_qp(id);
                    return;
                }
            }
            QpState::Established => {
                if qp.rq.rnr_until.is_some_and(|t| t <= now) {
                    qp.rq.rnr_until = None;
                    self.sh.wake(qp);
                }
                if qp.rq.rto_at.is_some_and(|t| t <= now) && on_rto(qp, &mut self.sh, &self.cfg, now) {
                    self.sh.c.retry_exceeded += 1;
                    self.fail_qp(now, id, None, REASON_RETRY_EXCEEDED);
                }
            }
            _ => {}
        }
        if let Some(qp) = self.table.get_mut(id) {
            self.sh.sync_timer(qp);
        }
    }

    /// Encode one control frame; `None` when it is obsolete or does not fit.
    fn encode_ctrl(&mut self, c: Ctrl, buf: &mut [u8]) -> Option<usize> {
        let res = match c {
            Ctrl::Ack(id) => {
                let qp = self.table.get_mut(id).filter(|qp| qp.state == QpState::Established)?;
                qp.rs.ack_queued = false;
                let (syn, psn) = match qp.rs.fatal {
                    Some(f) => {
                        self.sh.c.naks_sent += 1;
                        f
                    }
                    None => {
                        self.sh.c.acks_sent += 1;
                        (syndrome::ACK_NO_CREDITS, psn_add(qp.rs.epsn, PSN_MASK))
                    }
                };
                encode_aeth(buf, &qp.ctrl_addrs, qp.remote_qpn, psn, syn, qp.rs.msn)
            }
            Ctrl::Nak { conn, syndrome, psn } => {
                let qp = self.table.get(conn).filter(|qp| qp.state == QpState::Established)?;
                self.sh.c.naks_sent += 1;
                encode_aeth(buf, &qp.ctrl_addrs, qp.remote_qpn, psn, syndrome, qp.rs.msn)
            }
            Ctrl::Cnp(conn) => {
                let qp = self.table.get(conn).filter(|qp| qp.state == QpState::Established)?;
                self.sh.c.cnps_sent += 1;
                encode_cnp(buf, &qp.ctrl_addrs, qp.remote_qpn)
            }
            Ctrl::Cm {
                addrs,
                dest_qp,
                op,
                cmh,
            } => {
                let pkt = match op {
                    opcode::MR_CONNECT => MrPacket::Connect(cmh),
                    opcode::MR_CONNECT_ACK => MrPacket::ConnectAck(cmh),
                    opcode::MR_DISCONNECT => MrPacket::Disconnect(cmh),
                    _ => MrPacket::DisconnectAck(cmh),
                };
                wire::encode_mroce(buf, &addrs, &Bth::new(op, dest_qp, 0), &pkt)
            }
        };
        match res {
            Ok(n) => Some(n),
            Err(_) => {
                self.sh.c.tx_encode_errors += 1;
                None
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Frame encoders
// ---------------------------------------------------------------------------------------

/// Encode an RC ACK / NAK: BTH + AETH.
fn encode_aeth(
    buf: &mut [u8],
    addrs: &FrameAddrs,
    dest_qp: u32,
    psn: u32,
    syn: u8,
    msn: u32,
) -> Result<usize, wire::WireError> {
    let start = BTH_OFFSET + BTH_LEN;
    let m = msn.to_be_bytes();
    let body = [syn, m[1], m[2], m[3]];
    let need = start + AETH_LEN;
    let have = buf.len();
    let dst = buf
        .get_mut(start..need)
        .ok_or(wire::WireError::BufferTooSmall { need, have })?;
    dst.copy_from_slice(&body);
    wire::finish_frame(buf, addrs, &Bth::new(opcode::RC_ACK, dest_qp, psn), AETH_LEN)
}

/// Encode a RoCEv2 CNP: BTH (PSN 0) + 16 reserved zero bytes.
fn encode_cnp(buf: &mut [u8], addrs: &FrameAddrs, dest_qp: u32) -> Result<usize, wire::WireError> {
    let start = BTH_OFFSET + BTH_LEN;
    let need = start + CNP_BODY_LEN;
    let have = buf.len();
    let dst = buf
        .get_mut(start..need)
        .ok_or(wire::WireError::BufferTooSmall { need, have })?;
    dst.fill(0);
    wire::finish_frame(buf, addrs, &Bth::new(opcode::CNP, dest_qp, 0), CNP_BODY_LEN)
}

// ---------------------------------------------------------------------------------------
// Requester
// ---------------------------------------------------------------------------------------

/// Why a data packet could not be produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TxError {
    /// Nothing to send (never expected after `can_send`).
    Idle,
    /// The caller's buffer cannot hold the frame.
    Buffer,
    /// The local source buffer is no longer readable.
    Local,
}

/// Write the data packet at `rq.nxt` straight into `buf` and advance the requester.
fn transmit_data(
    qp: &mut Qp,
    memory: &Memory,
    sh: &mut Shared,
    cfg: &RoceConfig,
    now: Nanos,
    buf: &mut [u8],
) -> Result<usize, TxError> {
    let mtu = u64::from(qp.mtu);
    let rq = &mut qp.rq;
    if rq.cursor == rq.assigned {
        // First transmission of the next WR: give it its PSNs.
        let w = rq.wrs.get_mut(rq.assigned).ok_or(TxError::Idle)?;
        w.first_psn = rq.end;
        rq.end = psn_add(rq.end, w.npkts);
        rq.assigned += 1;
    }
    let w = *rq.wrs.get(rq.cursor).ok_or(TxError::Idle)?;
    let k = psn_diff(rq.nxt, w.first_psn);
    let off = u64::from(k) * mtu;
    let len = u64::from(w.len()).saturating_sub(off).min(mtu) as usize;
    let first = k == 0;
    let last = k + 1 >= w.npkts;
    let is_write = w.kind == WorkKind::Write;
    let op = match (is_write, first, last) {
        (true, true, true) => opcode::RC_WRITE_ONLY,
        (true, true, false) => opcode::RC_WRITE_FIRST,
        (true, false, false) => opcode::RC_WRITE_MIDDLE,
        (true, false, true) => opcode::RC_WRITE_LAST,
        (false, true, true) => opcode::RC_SEND_ONLY,
        (false, true, false) => opcode::RC_SEND_FIRST,
        (false, false, false) => opcode::RC_SEND_MIDDLE,
        (false, false, true) => opcode::RC_SEND_LAST,
    };
    let hdr = if is_write && first { RETH_LEN } else { 0 };
    let start = BTH_OFFSET + BTH_LEN;
    let body_len = hdr + len;
    if buf.len() < FRAME_OVERHEAD + body_len + 3 {
        return Err(TxError::Buffer);
    }
    let body = buf.get_mut(start..start + body_len).ok_or(TxError::Buffer)?;
    if hdr != 0 {
        body[0..8].copy_from_slice(&w.remote.va.to_be_bytes());
        body[8..12].copy_from_slice(&w.remote.rkey.to_be_bytes());
        body[12..16].copy_from_slice(&w.len().to_be_bytes());
    }
    let src = memory
        .local(w.local.key, w.local.offset.saturating_add(off), len as u64)
        .map_err(|_| TxError::Local)?;
    body[hdr..].copy_from_slice(src);
    let ack_req = last || rq.since_ackreq + 1 >= cfg.ack_coalesce || psn_diff(rq.nxt, rq.una) + 1 >= rq.cwnd;
    let mut bth = Bth::new(op, qp.remote_qpn, rq.nxt);
    bth.ack_req = ack_req;
    let n = wire::finish_frame(buf, &qp.data_addrs, &bth, body_len).map_err(|_| TxError::Buffer)?;

    // Committed: the frame is in `buf`.
    if psn_lt(rq.nxt, rq.sent_hi) {
        sh.c.retransmits += 1;
    } else {
        rq.sent_hi = psn_add(rq.nxt, 1);
    }
    sh.c.data_sent += 1;
    rq.nxt = psn_add(rq.nxt, 1);
    if last {
        rq.cursor += 1;
    }
    rq.since_ackreq = if ack_req { 0 } else { rq.since_ackreq + 1 };
    if rq.rto_at.is_none() {
        rq.rto_at = Some(rto_deadline(now, cfg.rto_ns, rq.backoff));
    }
    Ok(n)
}

/// `new` more PSNs are acknowledged: complete finished WRs, reset the RTO and grow the
/// window.
fn advance(qp: &mut Qp, sh: &mut Shared, cfg: &RoceConfig, now: Nanos, new: u32) {
    let id = qp.id;
    let rq = &mut qp.rq;
    rq.una = psn_add(rq.una, new);
    while rq.assigned > 0 {
        let Some(w) = rq.wrs.front() else { break };
        let d = psn_diff(rq.una, w.first_psn);
        if d >= PSN_HALF || d < w.npkts {
            break;
        }
        let w = *w;
        rq.wrs.pop_front();
        rq.assigned -= 1;
        rq.cursor = rq.cursor.saturating_sub(1);
        sh.complete(id, w.stream, w.msg_seq, w.wr_id, w.kind, Status::Ok, w.len());
    }
    if psn_lt(rq.nxt, rq.una) {
        let una = rq.una;
        rq.seek(una);
    }
    rq.backoff = 0;
    rq.retries = 0;
    rq.rto_at = if rq.una != rq.sent_hi {
        Some(rto_deadline(now, cfg.rto_ns, 0))
    } else {
        None
    };
    if cfg.ecn && rq.cwnd < cfg.window_pkts {
        rq.acked_since_grow += new;
        if rq.acked_since_grow >= rq.cwnd {
            rq.acked_since_grow -= rq.cwnd;
            rq.cwnd += 1;
        }
    }
    sh.wake(qp);
}

/// Process an ACK or NAK. Returns the completion status of a fatal NAK (the caller
/// fails the QP).
fn on_aeth(qp: &mut Qp, sh: &mut Shared, cfg: &RoceConfig, now: Nanos, f: &RoceFrame<'_>) -> Option<Status> {
    let Some(&[syn, ..]) = f.body.first_chunk::<AETH_LEN>().filter(|_| f.body.len() == AETH_LEN) else {
        sh.c.bad_frames += 1;
        return None;
    };
    let psn = f.bth.psn;
    let outstanding = qp.rq.outstanding();
    match syn >> 5 {
        0 => {
            sh.c.acks_received += 1;
            let new = psn_diff(psn_add(psn, 1), qp.rq.una);
            if new == 0 || new >= PSN_HALF {
                return None; // duplicate or stale ACK
            }
            if new > outstanding {
                sh.c.invalid_acks += 1;
                return None;
            }
            advance(qp, sh, cfg, now, new);
            None
        }
        1 | 3 => {
            sh.c.naks_received += 1;
            // A NAK names the PSN the responder expects: everything before it is acked.
            let d = psn_diff(psn, qp.rq.una);
            if d >= PSN_HALF {
                return None; // stale
            }
            if d >= outstanding {
                sh.c.invalid_acks += 1;
                return None;
            }
            if d > 0 {
                advance(qp, sh, cfg, now, d);
            }
            if syn >> 5 == 1 {
                sh.c.rnr_naks_received += 1;
                qp.rq.seek(psn);
                qp.rq.rto_at = None;
                qp.rq.rnr_until = Some(now.saturating_add(RNR_TIMER_NS[usize::from(syn & 0x1F)]));
                return None;
            }
            match syn & 0x1F {
                0 => {
                    // PSN sequence error: go back to the NAK'd PSN.
                    qp.rq.seek(psn);
                    qp.rq.rto_at = Some(rto_deadline(now, cfg.rto_ns, qp.rq.backoff));
                    sh.wake(qp);
                    None
                }
                code => Some(nak_status(code)),
            }
        }
        _ => {
            sh.c.bad_frames += 1;
            None
        }
    }
}

/// Process a CNP: halve the window, at most once per `CWND_CUT_INTERVAL_NS`.
fn on_cnp(qp: &mut Qp, sh: &mut Shared, cfg: &RoceConfig, now: Nanos, f: &RoceFrame<'_>) {
    if f.body.len() != CNP_BODY_LEN {
        sh.c.bad_frames += 1;
        return;
    }
    sh.c.cnps_received += 1;
    let rq = &mut qp.rq;
    if cfg.ecn
        && rq
            .last_cut
            .is_none_or(|t| now.saturating_sub(t) >= CWND_CUT_INTERVAL_NS)
    {
        rq.last_cut = Some(now);
        rq.cwnd = (rq.cwnd / 2).max(1);
        rq.acked_since_grow = 0;
        sh.c.cwnd_cuts += 1;
    }
}

/// Retransmission timeout: go back to the oldest unacknowledged PSN with doubled RTO.
/// Returns true when the retry limit is exceeded (the caller fails the QP).
fn on_rto(qp: &mut Qp, sh: &mut Shared, cfg: &RoceConfig, now: Nanos) -> bool {
    let rq = &mut qp.rq;
    if rq.una == rq.sent_hi {
        rq.rto_at = None;
        return false;
    }
    sh.c.timeouts += 1;
    rq.retries += 1;
    if rq.retries > cfg.retry_limit {
        return true;
    }
    rq.backoff = (rq.backoff + 1).min(MAX_BACKOFF);
    let una = rq.una;
    rq.seek(una);
    rq.rto_at = Some(rto_deadline(now, cfg.rto_ns, rq.backoff));
    sh.wake(qp);
    false
}

// ---------------------------------------------------------------------------------------
// Responder
// ---------------------------------------------------------------------------------------

/// What happened to an in-sequence request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Placed; the expected PSN advances.
    Accepted,
    /// SEND without a posted receive: RNR NAK, the PSN does not advance.
    Rnr,
    /// Fatal error with this AETH syndrome.
    Fatal(u8),
}

/// Process a request packet (WRITE or SEND) at the responder.
fn on_request(qp: &mut Qp, memory: &mut Memory, sh: &mut Shared, cfg: &RoceConfig, now: Nanos, f: &RoceFrame<'_>) {
    sh.c.data_received += 1;
    let ce = f.addrs.ecn == ecn::CE;
    sh.c.ce_received += u64::from(ce);
    if cfg.ecn && ce && qp.rs.last_cnp.is_none_or(|t| now.saturating_sub(t) >= CNP_INTERVAL_NS) {
        qp.rs.last_cnp = Some(now);
        sh.ctrl.push_back(Ctrl::Cnp(qp.id));
    }
    if qp.rs.fatal.is_some() {
        sh.queue_status(qp);
        return;
    }
    let psn = f.bth.psn;
    let d = psn_diff(psn, qp.rs.epsn);
    if d != 0 {
        if d < PSN_HALF {
            sh.c.out_of_sequence += 1;
            if !qp.rs.nak_sent {
                qp.rs.nak_sent = true;
                sh.ctrl.push_back(Ctrl::Nak {
                    conn: qp.id,
                    syndrome: syndrome::NAK_PSN_SEQ,
                    psn: qp.rs.epsn,
                });
            }
        } else {
            sh.c.duplicates += 1;
            sh.c.spurious_retransmits += 1;
            sh.queue_status(qp);
        }
        return;
    }
    match place(qp, memory, sh, f) {
        Verdict::Accepted => {
            let reth = matches!(f.bth.opcode, opcode::RC_WRITE_FIRST | opcode::RC_WRITE_ONLY);
            sh.c.bytes_placed += f.body.len().saturating_sub(if reth { RETH_LEN } else { 0 }) as u64;
            qp.rs.epsn = psn_add(psn, 1);
            qp.rs.nak_sent = false;
            if f.bth.ack_req {
                sh.queue_status(qp);
            }
        }
        Verdict::Rnr => {
            sh.c.rnr_naks += 1;
            qp.rs.nak_sent = true;
            sh.ctrl.push_back(Ctrl::Nak {
                conn: qp.id,
                syndrome: syndrome::RNR_NAK | RNR_TIMER_CODE,
                psn,
            });
        }
        Verdict::Fatal(syn) => {
            qp.rs.fatal = Some((syn, psn));
            sh.queue_status(qp);
        }
    }
}

/// Place an in-sequence request: check opcode sequence, lengths and access, write the
/// payload to its final location and report finished messages.
fn place(qp: &mut Qp, memory: &mut Memory, sh: &mut Shared, f: &RoceFrame<'_>) -> Verdict {
    let id = qp.id;
    let mtu = qp.mtu as usize;
    let rs = &mut qp.rs;
    let body = f.body;
    let op = f.bth.opcode;
    let invalid = |sh: &mut Shared| {
        sh.c.invalid_requests += 1;
        Verdict::Fatal(syndrome::NAK_INVALID_REQUEST)
    };
    match (op, rs.cur) {
        (opcode::RC_WRITE_FIRST | opcode::RC_WRITE_ONLY, None) => {
            let Some(reth) = body.first_chunk::<RETH_LEN>() else {
                return invalid(sh);
            };
            let mut va = [0u8; 8];
            va.copy_from_slice(&reth[0..8]);
            let va = u64::from_be_bytes(va);
            let rkey = be32([reth[8], reth[9], reth[10], reth[11]]);
            let total = be32([reth[12], reth[13], reth[14], reth[15]]);
            let payload = &body[RETH_LEN..];
            let n = payload.len();
            let only = op == opcode::RC_WRITE_ONLY;
            let len_ok = if only {
                n as u64 == u64::from(total) && n <= mtu
            } else {
                n == mtu && total as usize > mtu
            };
            if !len_ok {
                return invalid(sh);
            }
            // IBTA: a zero-length WRITE checks no R_Key.
            if total > 0 && memory.check_remote_write(rkey, va, u64::from(total)).is_err() {
                sh.c.rkey_violations += 1;
                return Verdict::Fatal(syndrome::NAK_REMOTE_ACCESS);
            }
            if n > 0 && memory.remote_write(rkey, va, payload).is_err() {
                sh.c.rkey_violations += 1;
                return Verdict::Fatal(syndrome::NAK_REMOTE_ACCESS);
            }
            if only {
                finish_write(id, rs, sh, total);
            } else {
                rs.cur = Some(InMsg::Write {
                    rkey,
                    va: va + n as u64,
                    remaining: total - n as u32,
                    total,
                });
            }
            Verdict::Accepted
        }
        (
            opcode::RC_WRITE_MIDDLE | opcode::RC_WRITE_LAST,
            Some(InMsg::Write {
                rkey,
                va,
                remaining,
                total,
            }),
        ) => {
            let n = body.len();
            let last = op == opcode::RC_WRITE_LAST;
            let len_ok = if last {
                n > 0 && n == remaining as usize && n <= mtu
            } else {
                n == mtu && remaining as usize > mtu
            };
            if !len_ok {
                return invalid(sh);
            }
            if memory.remote_write(rkey, va, body).is_err() {
                sh.c.rkey_violations += 1;
                return Verdict::Fatal(syndrome::NAK_REMOTE_ACCESS);
            }
            if last {
                rs.cur = None;
                finish_write(id, rs, sh, total);
            } else {
                rs.cur = Some(InMsg::Write {
                    rkey,
                    va: va + n as u64,
                    remaining: remaining - n as u32,
                    total,
                });
            }
            Verdict::Accepted
        }
        (opcode::RC_SEND_FIRST | opcode::RC_SEND_ONLY, None) => {
            let n = body.len();
            let only = op == opcode::RC_SEND_ONLY;
            if (only && n > mtu) || (!only && n != mtu) {
                return invalid(sh);
            }
            let Some(recv) = rs.recvs.pop_front() else {
                return Verdict::Rnr;
            };
            if let Err(v) = place_send(memory, sh, id, &recv, 0, body) {
                return v;
            }
            if only {
                finish_send(id, rs, sh, &recv, n as u32);
            } else {
                rs.cur = Some(InMsg::Send { recv, offset: n as u32 });
            }
            Verdict::Accepted
        }
        (opcode::RC_SEND_MIDDLE | opcode::RC_SEND_LAST, Some(InMsg::Send { recv, offset })) => {
            let n = body.len();
            let last = op == opcode::RC_SEND_LAST;
            if (last && (n == 0 || n > mtu)) || (!last && n != mtu) {
                return invalid(sh);
            }
            if let Err(v) = place_send(memory, sh, id, &recv, offset, body) {
                rs.cur = None;
                return v;
            }
            let offset = offset + n as u32;
            if last {
                rs.cur = None;
                finish_send(id, rs, sh, &recv, offset);
            } else {
                rs.cur = Some(InMsg::Send { recv, offset });
            }
            Verdict::Accepted
        }
        _ => invalid(sh),
    }
}

/// Copy SEND payload into the receive buffer at `offset`; on failure the receive
/// completes with an error and the request is fatal.
fn place_send(
    memory: &mut Memory,
    sh: &mut Shared,
    id: ConnId,
    recv: &RecvWr,
    offset: u32,
    body: &[u8],
) -> Result<(), Verdict> {
    let end = u64::from(offset) + body.len() as u64;
    let verdict = if end > u64::from(recv.local.len) {
        sh.c.invalid_requests += 1;
        Verdict::Fatal(syndrome::NAK_INVALID_REQUEST)
    } else {
        match memory.local_mut(recv.local.key, recv.local.offset + u64::from(offset), body.len() as u64) {
            Ok(dst) => {
                dst.copy_from_slice(body);
                return Ok(());
            }
            Err(_) => Verdict::Fatal(syndrome::NAK_REMOTE_OP),
        }
    };
    sh.complete(
        id,
        recv.stream,
        recv.msg_seq,
        recv.wr_id,
        WorkKind::Recv,
        Status::RemoteInvalid,
        0,
    );
    Err(verdict)
}

/// A WRITE message finished: count it and report `WriteReceived`.
fn finish_write(id: ConnId, rs: &mut Responder, sh: &mut Shared, total: u32) {
    rs.msn = psn_add(rs.msn, 1);
    let seq = rs.writes_received;
    rs.writes_received = seq.wrapping_add(1);
    sh.complete(id, 0, seq, 0, WorkKind::WriteReceived, Status::Ok, total);
}

/// A SEND message finished: complete its receive.
fn finish_send(id: ConnId, rs: &mut Responder, sh: &mut Shared, recv: &RecvWr, bytes: u32) {
    rs.msn = psn_add(rs.msn, 1);
    sh.complete(
        id,
        recv.stream,
        recv.msg_seq,
        recv.wr_id,
        WorkKind::Recv,
        Status::Ok,
        bytes,
    );
}

// ---------------------------------------------------------------------------------------
// Connection management (mroce's CM packets)
// ---------------------------------------------------------------------------------------

impl RoceEndpoint {
    /// Handle CONNECT, CONNECT_ACK, DISCONNECT and DISCONNECT_ACK.
    fn on_cm(&mut self, f: &RoceFrame<'_>) {
        let Ok(pkt) = wire::decode_mroce(f.bth.opcode, f.body) else {
            self.sh.c.bad_frames += 1;
            return;
        };
        let Some(peer) = self.peers.get(&f.addrs.src_ip).copied() else {
            self.sh.c.unknown_peer += 1;
            return;
        };
        match pkt {
            MrPacket::Connect(cmh) => self.on_connect(&peer, f, cmh),
            MrPacket::ConnectAck(cmh) => {
                let Some(qp) = self
                    .table
                    .get_mut(f.bth.dest_qp)
                    .filter(|qp| qp.peer_ip == f.addrs.src_ip)
                else {
                    self.sh.c.unknown_connection += 1;
                    return;
                };
                match qp.state {
                    QpState::Connecting if cmh.nonce == qp.nonce && cmh.mtu > 0 => {
                        qp.state = QpState::Established;
                        qp.remote_qpn = cmh.src_conn & PSN_MASK;
                        qp.mtu = qp.mtu.min(u32::from(cmh.mtu));
                        qp.rs.epsn = cmh.isn & PSN_MASK;
                        qp.cm_at = None;
                        self.sh.events.push_back(Event::Connected(qp.id));
                    }
                    QpState::Established if cmh.nonce == qp.nonce && cmh.src_conn == qp.remote_qpn => {
                        self.sh.c.duplicates += 1;
                    }
                    _ => self.sh.c.unknown_connection += 1,
                }
            }
            MrPacket::Disconnect(cmh) => {
                let id = f.bth.dest_qp;
                let matches = self.table.get(id).is_some_and(|qp| {
                    qp.peer_ip == f.addrs.src_ip && qp.remote_qpn == cmh.src_conn && qp.state != QpState::Connecting
                });
                let port = match self.table.get_mut(id) {
                    Some(qp) if matches => {
                        if !qp.notified {
                            self.sh.flush(qp, None);
                            self.sh.events.push_back(Event::Disconnected(id));
                        }
                        let port = qp.ctrl_addrs.src_port;
                        self.remove_qp(id);
                        port
                    }
                    // Our DISCONNECT_ACK was lost and the QP is gone: answer again.
                    _ => {
                        self.sh.c.duplicates += 1;
                        0xC000 | (cmh.src_conn as u16 & 0x3FFF)
                    }
                };
                let addrs = FrameAddrs {
                    dst_mac: peer.mac,
                    src_mac: self.cfg.addr.mac,
                    src_ip: self.cfg.addr.ips[0],
                    dst_ip: f.addrs.src_ip,
                    src_port: port,
                    dscp: DSCP,
                    ecn: ecn::NOT_ECT,
                    ttl: TTL,
                };
                let reply = Cmh {
                    src_conn: id,
                    reason: 0,
                    ..cmh
                };
                self.sh.ctrl.push_back(Ctrl::Cm {
                    addrs,
                    dest_qp: cmh.src_conn,
                    op: opcode::MR_DISCONNECT_ACK,
                    cmh: reply,
                });
            }
            MrPacket::DisconnectAck(cmh) => {
                let id = f.bth.dest_qp;
                match self.table.get(id) {
                    Some(qp)
                        if qp.state == QpState::Closing
                            && qp.peer_ip == f.addrs.src_ip
                            && qp.remote_qpn == cmh.src_conn =>
                    {
                        if !qp.notified {
                            self.sh.events.push_back(Event::Disconnected(id));
                        }
                        self.remove_qp(id);
                    }
                    _ => self.sh.c.unknown_connection += 1,
                }
            }
            _ => self.sh.c.bad_frames += 1,
        }
    }

    /// Handle a CONNECT: accept it (once per peer QP and nonce) or answer a repeat.
    fn on_connect(&mut self, peer: &NicAddr, f: &RoceFrame<'_>, cmh: Cmh) {
        let remote_qpn = cmh.src_conn & PSN_MASK;
        if cmh.mtu == 0 || remote_qpn == 0 {
            self.sh.c.bad_frames += 1;
            return;
        }
        let key = (f.addrs.src_ip, remote_qpn);
        if let Some(&id) = self.incoming.get(&key) {
            if let Some(qp) = self.table.get(id) {
                if qp.nonce == cmh.nonce {
                    // Our CONNECT_ACK was lost: send it again.
                    self.sh.c.duplicates += 1;
                    if qp.state == QpState::Established {
                        self.sh.ctrl.push_back(qp.cm(opcode::MR_CONNECT_ACK));
                    }
                    return;
                }
            }
            // The peer reused its QPN for a new connection: the old one is dead.
            if let Some(qp) = self.table.get_mut(id) {
                if !qp.notified {
                    self.sh.flush(qp, None);
                    self.sh.events.push_back(Event::Disconnected(id));
                }
            }
            self.remove_qp(id);
        }
        if !self.cfg.accept_incoming {
            self.sh.c.refused_connects += 1;
            return;
        }
        let Some(id) = self.alloc_qp(peer, QpState::Established) else {
            self.sh.c.table_full += 1;
            return;
        };
        let Some(qp) = self.table.get_mut(id) else { return };
        qp.remote_qpn = remote_qpn;
        qp.nonce = cmh.nonce;
        qp.accepted = true;
        qp.mtu = qp.mtu.min(u32::from(cmh.mtu));
        qp.rs.epsn = cmh.isn & PSN_MASK;
        self.sh.ctrl.push_back(qp.cm(opcode::MR_CONNECT_ACK));
        self.sh.events.push_back(Event::Accepted(id));
        self.incoming.insert(key, id);
    }
}

// ---------------------------------------------------------------------------------------
// Transport
// ---------------------------------------------------------------------------------------

impl Transport for RoceEndpoint {
    fn name(&self) -> &'static str {
        "rocev2"
    }

    fn addr(&self) -> &NicAddr {
        &self.cfg.addr
    }

    fn memory(&self) -> &Memory {
        &self.memory
    }

    fn memory_mut(&mut self) -> &mut Memory {
        &mut self.memory
    }

    fn add_peer(&mut self, peer: NicAddr) {
        for ip in peer.ips.iter().take(usize::from(peer.planes.max(1))) {
            self.peers.insert(*ip, peer);
        }
    }

    /// Open a QP to `peer` (added to the peer table if unknown) over plane 0.
    fn connect(&mut self, now: Nanos, peer: NicAddr) -> Result<ConnId, VerbError> {
        self.sh.clock = self.sh.clock.max(now);
        if !self.peers.contains_key(&peer.ips[0]) {
            self.add_peer(peer);
        }
        let id = self.alloc_qp(&peer, QpState::Connecting).ok_or(VerbError::TableFull)?;
        let nonce = self.rng.next_u64();
        let qp = self.table.get_mut(id).ok_or(VerbError::TableFull)?;
        qp.nonce = nonce;
        qp.cm_tries = 1;
        qp.cm_at = Some(now.saturating_add(CM_RETRY_NS));
        self.sh.ctrl.push_back(qp.cm(opcode::MR_CONNECT));
        self.sh.sync_timer(qp);
        Ok(id)
    }

    /// Close a QP. Outstanding WRs and receives complete with `ConnectionFailed`;
    /// `Disconnected` follows once the peer confirms (or after the CM retries).
    fn disconnect(&mut self, now: Nanos, conn: ConnId) -> Result<(), VerbError> {
        self.sh.clock = self.sh.clock.max(now);
        let qp = self.table.get_mut(conn).ok_or(VerbError::UnknownConnection(conn))?;
        match qp.state {
            QpState::Connecting => {
                self.sh.events.push_back(Event::Disconnected(conn));
                self.remove_qp(conn);
            }
            QpState::Established => {
                self.sh.flush(qp, None);
                qp.reason = 0;
                Self::start_closing(&mut self.sh, qp, now);
            }
            QpState::Closing => {}
        }
        Ok(())
    }

    fn post_write(
        &mut self,
        conn: ConnId,
        stream: u16,
        local: LocalBuf,
        remote: RemoteBuf,
        wr_id: u64,
    ) -> Result<(), VerbError> {
        self.post(conn, stream, local, remote, wr_id, WorkKind::Write)
    }

    fn post_send(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        self.post(conn, stream, local, RemoteBuf { va: 0, rkey: 0 }, wr_id, WorkKind::Send)
    }

    /// Post a receive. All streams share the QP's single receive queue: SENDs consume
    /// receives in posting order; the completion echoes the stream given here.
    fn post_recv(&mut self, conn: ConnId, stream: u16, local: LocalBuf, wr_id: u64) -> Result<(), VerbError> {
        if stream >= MAX_STREAMS {
            return Err(VerbError::BadStream(stream));
        }
        let qp = self.table.get_mut(conn).ok_or(VerbError::UnknownConnection(conn))?;
        if qp.state != QpState::Established {
            return Err(VerbError::NotConnected(conn));
        }
        self.memory.check_local(local.key, local.offset, u64::from(local.len))?;
        let msg_seq = next_seq(&mut qp.rs.recv_seqs, stream);
        qp.rs.recvs.push_back(RecvWr {
            stream,
            msg_seq,
            wr_id,
            local,
        });
        Ok(())
    }

    fn handle_frame(&mut self, now: Nanos, _plane: u8, frame: &[u8]) {
        self.sh.clock = self.sh.clock.max(now);
        self.sh.c.rx_frames += 1;
        let f = match wire::decode_frame(frame) {
            Ok(f) => f,
            Err(e) => {
                self.sh.c.bad_frames += 1;
                match e {
                    wire::WireError::BadIcrc { .. } => self.sh.c.bad_icrc += 1,
                    wire::WireError::Truncated { .. } => self.sh.c.truncated += 1,
                    _ => {}
                }
                return;
            }
        };
        if f.bth.pkey != DEFAULT_PKEY {
            self.sh.c.bad_frames += 1;
            return;
        }
        if self.cfg.addr.plane_of(f.addrs.dst_ip).is_none() {
            self.sh.c.misaddressed += 1;
            return;
        }
        match f.bth.opcode {
            opcode::RC_SEND_FIRST
            | opcode::RC_SEND_MIDDLE
            | opcode::RC_SEND_LAST
            | opcode::RC_SEND_ONLY
            | opcode::RC_WRITE_FIRST
            | opcode::RC_WRITE_MIDDLE
            | opcode::RC_WRITE_LAST
            | opcode::RC_WRITE_ONLY
            | opcode::RC_ACK
            | opcode::CNP => self.on_qp_frame(now, &f),
            opcode::MR_CONNECT | opcode::MR_CONNECT_ACK | opcode::MR_DISCONNECT | opcode::MR_DISCONNECT_ACK => {
                self.on_cm(&f)
            }
            _ => self.sh.c.bad_frames += 1,
        }
    }

    /// Control frames (CM, ACK/NAK, CNP) first, then data round-robin over QPs. Every
    /// frame leaves on plane 0. Returns `None` (counting `tx_encode_errors`) when `buf` cannot
    /// hold the next frame.
    fn poll_transmit(&mut self, now: Nanos, buf: &mut [u8]) -> Option<Transmit> {
        self.sh.clock = self.sh.clock.max(now);
        while let Some(c) = self.sh.ctrl.pop_front() {
            if let Some(len) = self.encode_ctrl(c, buf) {
                self.sh.c.tx_frames += 1;
                return Some(Transmit { len, plane: 0 });
            }
        }
        // Under oldest-first the QPs are tried in rank order; each leaves the list when tried
        // and re-enters at the back if it still has something to send, as in round robin.
        let mut visit = core::mem::take(&mut self.sh.tx_visit);
        visit.clear();
        if self.cfg.tx_order == TxOrder::OldestFirst {
            let table = &self.table;
            let key = |id: ConnId| table.get(id).map_or((u8::MAX, 0), Qp::tx_key);
            tx_order::visit_order(self.sh.active.iter().map(|&id| key(id)), &mut visit);
        }
        let mut order: Vec<ConnId> = Vec::new();
        order.extend(
            visit
                .iter()
                .filter_map(|&(_, pos)| self.sh.active.get(pos as usize).copied()),
        );
        self.sh.tx_visit = visit;
        for i in 0..self.sh.active.len() {
            let id = match order.get(i) {
                Some(&id) => {
                    self.sh.active.retain(|&x| x != id);
                    id
                }
                None => self.sh.active.pop_front()?,
            };
            let Some(qp) = self.table.get_mut(id) else { continue };
            qp.in_active = false;
            if !qp.can_send() {
                continue;
            }
            match transmit_data(qp, &self.memory, &mut self.sh, &self.cfg, now, buf) {
                Ok(len) => {
                    if qp.can_send() {
                        self.sh.wake(qp);
                    }
                    self.sh.sync_timer(qp);
                    self.sh.c.tx_frames += 1;
                    return Some(Transmit { len, plane: 0 });
                }
                Err(TxError::Buffer) => {
                    self.sh.c.tx_encode_errors += 1;
                    self.sh.wake(qp);
                    return None;
                }
                Err(TxError::Idle) => {}
                Err(TxError::Local) => {
                    self.sh.c.local_access_errors += 1;
                    self.fail_qp(now, id, Some(Status::ConnectionFailed), REASON_LOCAL_ERROR);
                }
            }
        }
        None
    }

    /// Earliest RTO, RNR wait or CM retry. May be early (a deadline that moved later);
    /// `handle_timeout` then does nothing but re-arm.
    fn poll_timeout(&self) -> Option<Nanos> {
        self.sh.timers.peek().map(|Reverse((t, _))| *t)
    }

    fn handle_timeout(&mut self, now: Nanos) {
        self.sh.clock = self.sh.clock.max(now);
        while let Some(&Reverse((t, id))) = self.sh.timers.peek() {
            if t > now {
                break;
            }
            self.sh.timers.pop();
            match self.table.get_mut(id) {
                Some(qp) if qp.heap_at == Some(t) => qp.heap_at = None,
                _ => continue, // stale entry
            }
            self.run_qp_timers(now, id);
        }
    }

    fn poll_event(&mut self) -> Option<Event> {
        self.sh.events.pop_front()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.sh.c;
        alloc::vec![
            ("rx_frames", c.rx_frames),
            ("tx_frames", c.tx_frames),
            ("bad_frames", c.bad_frames),
            ("bad_icrc", c.bad_icrc),
            ("truncated", c.truncated),
            ("misaddressed", c.misaddressed),
            ("unknown_connection", c.unknown_connection),
            ("unknown_peer", c.unknown_peer),
            ("duplicates", c.duplicates),
            ("out_of_sequence", c.out_of_sequence),
            ("naks_sent", c.naks_sent),
            ("naks_received", c.naks_received),
            ("acks_sent", c.acks_sent),
            ("acks_received", c.acks_received),
            ("invalid_acks", c.invalid_acks),
            ("data_sent", c.data_sent),
            ("data_received", c.data_received),
            ("ce_received", c.ce_received),
            ("bytes_placed", c.bytes_placed),
            ("retransmits", c.retransmits),
            ("spurious_retransmits", c.spurious_retransmits),
            ("rkey_violations", c.rkey_violations),
            ("invalid_requests", c.invalid_requests),
            ("rnr_naks", c.rnr_naks),
            ("rnr_naks_received", c.rnr_naks_received),
            ("cnps_sent", c.cnps_sent),
            ("cnps_received", c.cnps_received),
            ("cwnd_cuts", c.cwnd_cuts),
            ("timeouts", c.timeouts),
            ("retry_exceeded", c.retry_exceeded),
            ("refused_connects", c.refused_connects),
            ("table_full", c.table_full),
            ("tx_encode_errors", c.tx_encode_errors),
            ("local_access_errors", c.local_access_errors),
        ]
    }
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{Access, MrKey};
    use alloc::vec;

    /// A one-plane NIC address numbered `n`.
    fn nic(n: u8) -> NicAddr {
        NicAddr::with_planes([2, 0, 0, 0, 0, n], [10, 0, 0, n], 1)
    }

    /// Default configuration for NIC `n`.
    fn cfg(n: u8) -> RoceConfig {
        RoceConfig {
            addr: nic(n),
            ..Default::default()
        }
    }

    /// Two endpoints joined by a lossy, zero-latency link; 1 µs per step, up to 16 frames
    /// per direction per step.
    struct Net {
        a: RoceEndpoint,
        b: RoceEndpoint,
        now: Nanos,
        rng: SplitMix64,
        /// Drop probability per frame, parts per million, each direction.
        drop_ppm: u64,
        /// CE-mark probability of a→b frames, parts per million.
        ce_ppm: u64,
        ev_a: Vec<Event>,
        ev_b: Vec<Event>,
        buf: Vec<u8>,
    }

    impl Net {
        fn new(ca: RoceConfig, cb: RoceConfig, seed: u64) -> Self {
            let mut a = RoceEndpoint::new(ca, seed);
            let mut b = RoceEndpoint::new(cb, seed ^ 0x5555);
            a.add_peer(cb.addr);
            b.add_peer(ca.addr);
            Net {
                a,
                b,
                now: 1_000_000,
                rng: SplitMix64(seed ^ 0xD1CE),
                drop_ppm: 0,
                ce_ppm: 0,
                ev_a: Vec::new(),
                ev_b: Vec::new(),
                buf: vec![0u8; 9000],
            }
        }

        fn pair() -> Self {
            Self::new(cfg(1), cfg(2), 7)
        }

        fn roll(&mut self, ppm: u64) -> bool {
            ppm > 0 && self.rng.next_u64() % 1_000_000 < ppm
        }

        fn step(&mut self) {
            let mut frames: Vec<(bool, Vec<u8>)> = Vec::new();
            for from_a in [true, false] {
                for _ in 0..16 {
                    let ep = if from_a { &mut self.a } else { &mut self.b };
                    let Some(t) = ep.poll_transmit(self.now, &mut self.buf) else {
                        break;
                    };
                    assert_eq!(t.plane, 0);
                    let mut fr = self.buf[..t.len].to_vec();
                    if self.roll(self.drop_ppm) {
                        continue;
                    }
                    if from_a && self.roll(self.ce_ppm) {
                        wire::set_ecn(&mut fr, ecn::CE).unwrap();
                    }
                    frames.push((from_a, fr));
                }
            }
            for (from_a, fr) in frames {
                let ep = if from_a { &mut self.b } else { &mut self.a };
                ep.handle_frame(self.now, 0, &fr);
            }
            self.now += 1_000;
            for ep in [&mut self.a, &mut self.b] {
                if ep.poll_timeout().is_some_and(|t| t <= self.now) {
                    ep.handle_timeout(self.now);
                    assert!(
                        ep.poll_timeout().is_none_or(|t| t > self.now),
                        "handle_timeout left a due timer"
                    );
                }
            }
            while let Some(e) = self.a.poll_event() {
                self.ev_a.push(e);
            }
            while let Some(e) = self.b.poll_event() {
                self.ev_b.push(e);
            }
        }

        fn run_until(&mut self, steps: usize, done: impl Fn(&Net) -> bool) -> bool {
            for _ in 0..steps {
                if done(self) {
                    return true;
                }
                self.step();
            }
            done(self)
        }

        /// Connect a to b; returns (a's id, b's id).
        fn connect(&mut self) -> (ConnId, ConnId) {
            let ca = self.a.connect(self.now, self.b.cfg.addr).unwrap();
            assert!(self.run_until(100_000, |n| n.ev_a.contains(&Event::Connected(ca))));
            let cb = self
                .ev_b
                .iter()
                .find_map(|e| if let Event::Accepted(c) = e { Some(*c) } else { None })
                .unwrap();
            (ca, cb)
        }
    }

    fn completions(ev: &[Event]) -> Vec<Completion> {
        ev.iter()
            .filter_map(|e| if let Event::Completion(c) = e { Some(*c) } else { None })
            .collect()
    }

    fn find_wr(ev: &[Event], wr_id: u64, kind: WorkKind) -> Option<Completion> {
        completions(ev).into_iter().find(|c| c.wr_id == wr_id && c.kind == kind)
    }

    fn pattern(i: usize, salt: u8) -> u8 {
        (i as u8).wrapping_mul(31) ^ ((i >> 11) as u8) ^ salt
    }

    /// Register a filled source region on `ep`.
    fn source(ep: &mut RoceEndpoint, len: usize, salt: u8) -> MrKey {
        let k = ep.memory_mut().register(len, Access { remote_write: false });
        for (i, b) in ep
            .memory_mut()
            .local_mut(k, 0, len as u64)
            .unwrap()
            .iter_mut()
            .enumerate()
        {
            *b = pattern(i, salt);
        }
        k
    }

    /// Post a WRITE of a fresh 1 MiB pattern from a to b and run it to completion.
    fn write_mib(net: &mut Net, ca: ConnId) {
        const LEN: usize = 1 << 20;
        let src = source(&mut net.a, LEN, 0x5A);
        let dst = net.b.memory_mut().register(LEN, Access { remote_write: true });
        let local = LocalBuf {
            key: src,
            offset: 0,
            len: LEN as u32,
        };
        net.a
            .post_write(
                ca,
                3,
                local,
                RemoteBuf {
                    va: dst.va,
                    rkey: dst.rkey,
                },
                42,
            )
            .unwrap();
        assert!(net.run_until(200_000, |n| find_wr(&n.ev_a, 42, WorkKind::Write).is_some()));
        let c = find_wr(&net.ev_a, 42, WorkKind::Write).unwrap();
        assert_eq!((c.status, c.bytes, c.stream, c.conn), (Status::Ok, LEN as u32, 3, ca));
        assert!(net.run_until(1_000, |n| completions(&n.ev_b)
            .iter()
            .any(|c| c.kind == WorkKind::WriteReceived)));
        let r = completions(&net.ev_b)
            .into_iter()
            .find(|c| c.kind == WorkKind::WriteReceived)
            .unwrap();
        assert_eq!((r.status, r.bytes), (Status::Ok, LEN as u32));
        let got = net.b.memory().region(dst).unwrap();
        assert!(
            got.iter().enumerate().all(|(i, b)| *b == pattern(i, 0x5A)),
            "data mismatch"
        );
    }

    /// Steps until each of two 1 MiB WRITEs completes: the first on QP 1, the second posted
    /// on QP 2 one step later; both must arrive intact.
    fn two_qps(order: TxOrder) -> [usize; 2] {
        const LEN: usize = 1 << 20;
        let mut net = Net::new(
            RoceConfig {
                tx_order: order,
                ..cfg(1)
            },
            cfg(2),
            7,
        );
        let qps = [net.connect().0, net.connect().0];
        let mut dsts = Vec::new();
        let mut done = [0usize; 2];
        for (i, &q) in qps.iter().enumerate() {
            let src = source(&mut net.a, LEN, i as u8);
            let dst = net.b.memory_mut().register(LEN, Access { remote_write: true });
            dsts.push(dst);
            let local = LocalBuf {
                key: src,
                offset: 0,
                len: LEN as u32,
            };
            let remote = RemoteBuf {
                va: dst.va,
                rkey: dst.rkey,
            };
            net.a.post_write(q, 0, local, remote, i as u64).unwrap();
            net.step();
        }
        for step in 1..200_000 {
            for (i, d) in done.iter_mut().enumerate() {
                if *d == 0 && find_wr(&net.ev_a, i as u64, WorkKind::Write).is_some() {
                    *d = step;
                }
            }
            if done.iter().all(|&d| d > 0) {
                break;
            }
            net.step();
        }
        for (i, dst) in dsts.into_iter().enumerate() {
            let got = net.b.memory().region(dst).unwrap();
            assert!(
                got.iter().enumerate().all(|(j, b)| *b == pattern(j, i as u8)),
                "{order:?}: data of QP {i}"
            );
        }
        done
    }

    #[test]
    fn oldest_first_serves_the_qp_busy_longest() {
        assert_eq!(RoceConfig::default().tx_order, TxOrder::RoundRobin);
        let rr = two_qps(TxOrder::RoundRobin);
        let oldest = two_qps(TxOrder::OldestFirst);
        assert!(
            rr.iter().chain(&oldest).all(|&d| d > 0),
            "incomplete: {rr:?} {oldest:?}"
        );
        // round robin shares the link: both finish together; oldest-first finishes QP 1 first
        assert!(rr[0].abs_diff(rr[1]) <= 2, "round robin: {rr:?}");
        assert!(oldest[0] + 8 < oldest[1], "oldest-first: {oldest:?}");
        assert!(
            oldest[0] < rr[0],
            "QP 1 sooner under oldest-first: {oldest:?} against {rr:?}"
        );
    }

    #[test]
    fn rocev2_write_1mib_lossless() {
        let mut net = Net::pair();
        let (ca, _) = net.connect();
        write_mib(&mut net, ca);
        let (a, b) = (net.a.counters_struct(), net.b.counters_struct());
        assert_eq!(a.data_sent, 256);
        assert_eq!(
            (a.retransmits, a.timeouts, b.duplicates, b.out_of_sequence),
            (0, 0, 0, 0)
        );
        assert_eq!(b.bytes_placed, 1 << 20);
        assert_eq!(net.a.name(), "rocev2");
    }

    #[test]
    fn rocev2_write_1mib_with_two_percent_loss() {
        for seed in 1..=4 {
            let mut net = Net::new(cfg(1), cfg(2), seed);
            let (ca, _) = net.connect();
            net.drop_ppm = 20_000;
            write_mib(&mut net, ca);
            let (a, b) = (net.a.counters_struct(), net.b.counters_struct());
            assert!(a.retransmits > 0, "seed {seed}: {a:?}");
            assert!(
                b.out_of_sequence > 0 && b.naks_sent > 0 && a.naks_received > 0,
                "seed {seed}"
            );
            assert_eq!(b.bytes_placed, 1 << 20);
        }
    }

    #[test]
    fn rocev2_psn_wraparound() {
        let mut net = Net::pair();
        net.a.set_initial_psn(Some(0xFF_FFF0));
        net.b.set_initial_psn(Some(0xFF_FFFE));
        let (ca, _) = net.connect();
        net.drop_ppm = 10_000;
        write_mib(&mut net, ca);
        let qp = net.a.table.get(ca).unwrap();
        assert_eq!(qp.rq.una, 0xF0, "256 packets from 0xFFFFF0 end at 0xF0");
        assert_eq!(qp.rq.una, qp.rq.sent_hi);
        // And back the other way, so b's PSNs cross zero as well.
        const LEN: usize = 3 * 4096 + 5;
        let src = source(&mut net.b, LEN, 9);
        let dst = net.a.memory_mut().register(LEN, Access { remote_write: true });
        let cb = completions(&net.ev_b)[0].conn;
        net.b
            .post_write(
                cb,
                0,
                LocalBuf {
                    key: src,
                    offset: 0,
                    len: LEN as u32,
                },
                RemoteBuf {
                    va: dst.va,
                    rkey: dst.rkey,
                },
                5,
            )
            .unwrap();
        assert!(net.run_until(100_000, |n| find_wr(&n.ev_b, 5, WorkKind::Write).is_some()));
        assert_eq!(find_wr(&net.ev_b, 5, WorkKind::Write).unwrap().status, Status::Ok);
        assert!(net
            .a
            .memory()
            .region(dst)
            .unwrap()
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(i, 9)));
        assert_eq!(net.b.table.get(cb).unwrap().rq.una, 2);
    }

    #[test]
    fn rocev2_send_matches_receives_in_order_with_rnr() {
        let mut net = Net::pair();
        let (ca, cb) = net.connect();
        let src = source(&mut net.a, 20_000, 1);
        net.a
            .post_send(
                ca,
                4,
                LocalBuf {
                    key: src,
                    offset: 0,
                    len: 10_000,
                },
                1,
            )
            .unwrap();
        // No receive posted: RNR NAKs, retried every 10 µs, nothing completes.
        net.run_until(200, |_| false);
        assert!(net.b.counters_struct().rnr_naks >= 5, "{:?}", net.b.counters_struct());
        assert!(net.a.counters_struct().rnr_naks_received >= 5);
        assert!(completions(&net.ev_a).is_empty() && completions(&net.ev_b).is_empty());
        assert_eq!(
            net.a.counters_struct().timeouts,
            0,
            "the RTO is suspended during the RNR wait"
        );

        let dst = net.b.memory_mut().register(32_768, Access { remote_write: false });
        net.b
            .post_recv(
                cb,
                5,
                LocalBuf {
                    key: dst,
                    offset: 0,
                    len: 16_384,
                },
                11,
            )
            .unwrap();
        net.b
            .post_recv(
                cb,
                6,
                LocalBuf {
                    key: dst,
                    offset: 16_384,
                    len: 4096,
                },
                12,
            )
            .unwrap();
        net.b
            .post_recv(
                cb,
                5,
                LocalBuf {
                    key: dst,
                    offset: 20_480,
                    len: 0,
                },
                13,
            )
            .unwrap();
        net.a
            .post_send(
                ca,
                4,
                LocalBuf {
                    key: src,
                    offset: 10_000,
                    len: 100,
                },
                2,
            )
            .unwrap();
        net.a
            .post_send(
                ca,
                9,
                LocalBuf {
                    key: src,
                    offset: 0,
                    len: 0,
                },
                3,
            )
            .unwrap();
        assert!(net.run_until(10_000, |n| completions(&n.ev_b).len() == 3
            && completions(&n.ev_a).len() == 3));

        let ra = completions(&net.ev_a);
        assert_eq!(
            ra.iter()
                .map(|c| (c.wr_id, c.kind, c.status, c.stream, c.msg_seq, c.bytes))
                .collect::<Vec<_>>(),
            [
                (1, WorkKind::Send, Status::Ok, 4, 0, 10_000),
                (2, WorkKind::Send, Status::Ok, 4, 1, 100),
                (3, WorkKind::Send, Status::Ok, 9, 0, 0),
            ]
        );
        let rb = completions(&net.ev_b);
        assert_eq!(
            rb.iter()
                .map(|c| (c.wr_id, c.kind, c.status, c.stream, c.msg_seq, c.bytes))
                .collect::<Vec<_>>(),
            [
                (11, WorkKind::Recv, Status::Ok, 5, 0, 10_000),
                (12, WorkKind::Recv, Status::Ok, 6, 0, 100),
                (13, WorkKind::Recv, Status::Ok, 5, 1, 0),
            ]
        );
        let mem = net.b.memory().region(dst).unwrap();
        assert!(mem[..10_000].iter().enumerate().all(|(i, b)| *b == pattern(i, 1)));
        assert!(mem[16_384..16_484]
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(10_000 + i, 1)));
    }

    #[test]
    fn rocev2_send_longer_than_receive_is_remote_invalid() {
        let mut net = Net::pair();
        let (ca, cb) = net.connect();
        let src = source(&mut net.a, 9000, 1);
        let dst = net.b.memory_mut().register(9000, Access { remote_write: false });
        net.b
            .post_recv(
                cb,
                0,
                LocalBuf {
                    key: dst,
                    offset: 0,
                    len: 5000,
                },
                11,
            )
            .unwrap();
        net.a
            .post_send(
                ca,
                0,
                LocalBuf {
                    key: src,
                    offset: 0,
                    len: 9000,
                },
                1,
            )
            .unwrap();
        assert!(net.run_until(10_000, |n| n.ev_a.contains(&Event::Disconnected(ca))
            && n.ev_b.contains(&Event::Disconnected(cb))));
        assert_eq!(
            find_wr(&net.ev_a, 1, WorkKind::Send).unwrap().status,
            Status::RemoteInvalid
        );
        assert_eq!(
            find_wr(&net.ev_b, 11, WorkKind::Recv).unwrap().status,
            Status::RemoteInvalid
        );
        assert_eq!(net.b.counters_struct().invalid_requests, 1);
        assert!(net.run_until(100, |n| n.a.connection_count() + n.b.connection_count() == 0));
    }

    #[test]
    fn rocev2_wrong_rkey_is_remote_access_error() {
        let mut net = Net::pair();
        let (ca, cb) = net.connect();
        let src = source(&mut net.a, 20_000, 1);
        let dst = net.b.memory_mut().register(20_000, Access { remote_write: true });
        let local = LocalBuf {
            key: src,
            offset: 0,
            len: 20_000,
        };
        net.a
            .post_write(
                ca,
                1,
                local,
                RemoteBuf {
                    va: dst.va,
                    rkey: dst.rkey ^ 0x100,
                },
                7,
            )
            .unwrap();
        net.a
            .post_write(
                ca,
                1,
                local,
                RemoteBuf {
                    va: dst.va,
                    rkey: dst.rkey,
                },
                8,
            )
            .unwrap();
        assert!(net.run_until(10_000, |n| find_wr(&n.ev_a, 8, WorkKind::Write).is_some()));
        assert_eq!(
            find_wr(&net.ev_a, 7, WorkKind::Write).unwrap().status,
            Status::RemoteAccessError
        );
        // IBTA: a remote access error is fatal to the QP; later WRs are flushed.
        assert_eq!(
            find_wr(&net.ev_a, 8, WorkKind::Write).unwrap().status,
            Status::ConnectionFailed
        );
        assert_eq!(net.b.counters_struct().rkey_violations, 1);
        assert!(net.a.counters_struct().naks_received >= 1);
        assert!(
            net.b.memory().region(dst).unwrap().iter().all(|b| *b == 0),
            "nothing placed"
        );
        assert!(net.run_until(10_000, |n| n.ev_b.contains(&Event::Disconnected(cb))));
        assert!(net.ev_a.contains(&Event::Disconnected(ca)));
        assert!(net.run_until(100, |n| n.a.connection_count() == 0));
        assert_eq!(
            net.a.post_write(
                ca,
                1,
                local,
                RemoteBuf {
                    va: dst.va,
                    rkey: dst.rkey
                },
                9
            ),
            Err(VerbError::UnknownConnection(ca))
        );

        // Out of bounds with a valid key is an access error too.
        let (ca, _) = net.connect();
        net.a
            .post_write(
                ca,
                1,
                local,
                RemoteBuf {
                    va: dst.va + 1,
                    rkey: dst.rkey,
                },
                10,
            )
            .unwrap();
        assert!(net.run_until(10_000, |n| find_wr(&n.ev_a, 10, WorkKind::Write).is_some()));
        assert_eq!(
            find_wr(&net.ev_a, 10, WorkKind::Write).unwrap().status,
            Status::RemoteAccessError
        );
        assert_eq!(net.b.counters_struct().rkey_violations, 2);
    }

    #[test]
    fn rocev2_retry_limit_fails_the_qp() {
        let mut net = Net::pair();
        let (ca, _) = net.connect();
        let src = source(&mut net.a, 100, 1);
        let dst = net.b.memory_mut().register(100, Access { remote_write: true });
        net.drop_ppm = 1_000_000;
        net.a
            .post_write(
                ca,
                0,
                LocalBuf {
                    key: src,
                    offset: 0,
                    len: 100,
                },
                RemoteBuf {
                    va: dst.va,
                    rkey: dst.rkey,
                },
                1,
            )
            .unwrap();
        assert!(net.run_until(100_000, |n| find_wr(&n.ev_a, 1, WorkKind::Write).is_some()));
        assert_eq!(
            find_wr(&net.ev_a, 1, WorkKind::Write).unwrap().status,
            Status::ConnectionFailed
        );
        assert!(net.ev_a.contains(&Event::Disconnected(ca)));
        let c = net.a.counters_struct();
        assert_eq!((c.timeouts, c.retry_exceeded, c.retransmits), (8, 1, 7));
        // 50 µs × (1 + 2 + 4 + 8 + 16 + 32 + 64 + 64) with backoff capped at 64×.
        assert!(net.now >= 1_000_000 + 9_550_000);
    }

    #[test]
    fn rocev2_connect_retries_then_fails() {
        let mut net = Net::pair();
        net.drop_ppm = 1_000_000;
        let ca = net.a.connect(net.now, net.b.cfg.addr).unwrap();
        assert!(net.run_until(20_000, |n| n.ev_a.contains(&Event::ConnectFailed(ca))));
        assert_eq!(net.a.counters_struct().tx_frames, u64::from(CM_TRIES));
        assert_eq!(net.a.connection_count(), 0);
        assert_eq!(net.a.poll_timeout(), None);
    }

    #[test]
    fn rocev2_refuses_and_disconnects() {
        let mut net = Net::new(
            cfg(1),
            RoceConfig {
                accept_incoming: false,
                ..cfg(2)
            },
            3,
        );
        let ca = net.a.connect(net.now, net.b.cfg.addr).unwrap();
        assert!(net.run_until(20_000, |n| n.ev_a.contains(&Event::ConnectFailed(ca))));
        assert_eq!(net.b.counters_struct().refused_connects, u64::from(CM_TRIES));

        let mut net = Net::pair();
        let (ca, cb) = net.connect();
        let dst = net.b.memory_mut().register(100, Access { remote_write: false });
        net.b
            .post_recv(
                cb,
                0,
                LocalBuf {
                    key: dst,
                    offset: 0,
                    len: 100,
                },
                77,
            )
            .unwrap();
        net.a.disconnect(net.now, ca).unwrap();
        assert!(net.run_until(10_000, |n| n.ev_a.contains(&Event::Disconnected(ca))));
        assert!(net.ev_b.contains(&Event::Disconnected(cb)));
        assert_eq!(
            find_wr(&net.ev_b, 77, WorkKind::Recv).unwrap().status,
            Status::ConnectionFailed
        );
        assert_eq!(net.a.connection_count() + net.b.connection_count(), 0);
    }

    #[test]
    fn rocev2_cnp_halves_the_window() {
        let mut net = Net::pair();
        let (ca, _) = net.connect();
        net.ce_ppm = 1_000_000;
        write_mib(&mut net, ca);
        let (a, b) = (net.a.counters_struct(), net.b.counters_struct());
        assert!(b.cnps_sent > 0 && a.cnps_received == b.cnps_sent && a.cwnd_cuts > 0);
        assert!(net.a.cwnd(ca).unwrap() < 64, "cwnd {:?}", net.a.cwnd(ca));
        // CNPs are rate limited: at most one per 50 µs.
        assert!(b.cnps_sent <= (net.now - 1_000_000) / CNP_INTERVAL_NS + 1);

        // Without DCQCN, CE marks are ignored and data is not ECN-capable.
        let mut net = Net::new(
            RoceConfig { ecn: false, ..cfg(1) },
            RoceConfig { ecn: false, ..cfg(2) },
            1,
        );
        let (ca, _) = net.connect();
        net.ce_ppm = 1_000_000;
        write_mib(&mut net, ca);
        assert_eq!((net.b.counters_struct().cnps_sent, net.a.cwnd(ca)), (0, Some(64)));
    }

    #[test]
    fn rocev2_many_messages_streams_and_determinism() {
        let run = |seed: u64| {
            let mut net = Net::new(cfg(1), cfg(2), seed);
            let (ca, _) = net.connect();
            net.drop_ppm = 30_000;
            let src = source(&mut net.a, 1 << 16, 3);
            let dst = net.b.memory_mut().register(1 << 16, Access { remote_write: true });
            for i in 0..64u64 {
                let len = (i as u32 * 997) % 9000;
                let off = (i * 1024) % 32_768;
                let local = LocalBuf {
                    key: src,
                    offset: off,
                    len,
                };
                let remote = RemoteBuf {
                    va: dst.va + off,
                    rkey: dst.rkey,
                };
                net.a.post_write(ca, (i % 3) as u16, local, remote, i).unwrap();
            }
            assert!(net.run_until(200_000, |n| completions(&n.ev_a).len() == 64));
            let ca_ev = completions(&net.ev_a);
            assert!(ca_ev
                .iter()
                .enumerate()
                .all(|(i, c)| c.wr_id == i as u64 && c.status == Status::Ok));
            assert!(ca_ev
                .iter()
                .enumerate()
                .all(|(i, c)| c.stream == (i % 3) as u16 && c.msg_seq == (i / 3) as u32));
            assert!(net.run_until(1000, |n| completions(&n.ev_b).len() == 64));
            (net.now, *net.a.counters_struct(), *net.b.counters_struct())
        };
        assert_eq!(run(11), run(11));
    }

    #[test]
    fn rocev2_garbage_is_counted_never_panics() {
        let mut net = Net::pair();
        let (ca, cb) = net.connect();
        // Capture real frames of a transfer for mutation.
        let src = source(&mut net.a, 20_000, 1);
        let dst = net.b.memory_mut().register(20_000, Access { remote_write: true });
        net.a
            .post_write(
                ca,
                0,
                LocalBuf {
                    key: src,
                    offset: 0,
                    len: 20_000,
                },
                RemoteBuf {
                    va: dst.va,
                    rkey: dst.rkey,
                },
                1,
            )
            .unwrap();
        let mut samples = Vec::new();
        let mut buf = vec![0u8; 9000];
        while let Some(t) = net.a.poll_transmit(net.now, &mut buf) {
            samples.push(buf[..t.len].to_vec());
        }
        for s in &samples {
            net.b.handle_frame(net.now, 0, s);
        }
        let t = net.b.poll_transmit(net.now, &mut buf).unwrap();
        samples.push(buf[..t.len].to_vec()); // an ACK
        let mut rng = SplitMix64(99);
        let mut garbage = vec![0u8; 6000];

        // 1. Random bytes.
        let before = net.b.counters_struct().bad_frames;
        for i in 0..20_000 {
            let len = (rng.next_u64() % if i % 2 == 0 { 120 } else { 6000 }) as usize;
            for b in garbage[..len].iter_mut() {
                *b = rng.next_u64() as u8;
            }
            if i % 3 == 0 && len > 14 {
                garbage[12] = 0x08; // IPv4 ethertype, to get further into the decoder
                garbage[13] = 0x00;
            }
            net.b.handle_frame(net.now, 0, &garbage[..len]);
            net.a.handle_frame(net.now, 0, &garbage[..len]);
        }
        assert_eq!(net.b.counters_struct().bad_frames - before, 20_000);

        // 2. Every truncation of every captured frame.
        let (before, trunc) = (net.b.counters_struct().bad_frames, net.b.counters_struct().truncated);
        let mut n = 0;
        for s in &samples {
            for cut in 0..s.len() {
                net.b.handle_frame(net.now, 0, &s[..cut]);
                n += 1;
            }
        }
        assert_eq!(net.b.counters_struct().bad_frames - before, n);
        assert!(net.b.counters_struct().truncated > trunc);

        // 3. Single bit flips past the IPv4 header: bad ICRC.
        let before = net.b.counters_struct().bad_icrc;
        let mut flips = 0;
        for s in &samples {
            for _ in 0..200 {
                let mut f = s.clone();
                let mut at = wire::BTH_OFFSET + (rng.next_u64() as usize % (f.len() - wire::BTH_OFFSET));
                if at == wire::BTH_OFFSET + 4 {
                    at += 1; // the BTH reserved byte is masked out of the ICRC (FECN/BECN)
                }
                f[at] ^= 1 << (rng.next_u64() % 8);
                net.b.handle_frame(net.now, 0, &f);
                flips += 1;
            }
        }
        assert_eq!(net.b.counters_struct().bad_icrc - before, flips);

        // 4. Well-formed envelopes with random opcodes, PSNs and bodies, aimed at the live QPs.
        let (qa, qb) = (net.a.table.get(ca).unwrap(), net.b.table.get(cb).unwrap());
        let (to_b, to_a) = (qa.data_addrs, qb.data_addrs);
        let (qpn_b, qpn_a, epsn) = (cb, ca, qb.rs.epsn);
        let ops = [
            0x00, 0x01, 0x02, 0x04, 0x06, 0x07, 0x08, 0x0A, 0x11, 0x81, 0xC8, 0xC9, 0xCA, 0xCB, 0x05, 0xFF,
        ];
        for i in 0..20_000u64 {
            let op = ops[(rng.next_u64() % ops.len() as u64) as usize];
            let psn = if i % 2 == 0 {
                psn_add(epsn, (rng.next_u64() % 4) as u32)
            } else {
                rng.next_u64() as u32
            };
            let len = (rng.next_u64() % 64) as usize;
            let start = wire::BTH_OFFSET + wire::BTH_LEN;
            for b in buf[start..start + len].iter_mut() {
                *b = rng.next_u64() as u8;
            }
            let (addrs, qpn, ep) = if i % 4 == 3 {
                (to_a, qpn_a, &mut net.a)
            } else {
                (to_b, qpn_b, &mut net.b)
            };
            let mut bth = Bth::new(op, qpn, psn);
            bth.ack_req = i % 5 == 0;
            let n = wire::finish_frame(&mut buf, &addrs, &bth, len).unwrap();
            ep.handle_frame(net.now, 0, &buf[..n]);
            while ep.poll_transmit(net.now, &mut garbage).is_some() {}
            if i % 64 == 0 {
                net.step();
            }
        }
        // Every frame was handed in and counted; the forged requests broke the QP (IBTA: an
        // invalid request is fatal), and both ends still tear it down cleanly.
        let c = net.b.counters_struct();
        assert!(c.rx_frames >= 20_000 + n + flips + 15_000, "{c:?}");
        assert!(c.invalid_requests + c.rkey_violations > 0, "{c:?}");
        net.run_until(50_000, |n| n.a.table.get(ca).is_none() && n.b.table.get(cb).is_none());
        assert!(net.a.table.get(ca).is_none() && net.b.table.get(cb).is_none());
        assert!(net.ev_a.contains(&Event::Disconnected(ca)) && net.ev_b.contains(&Event::Disconnected(cb)));
    }

    #[test]
    fn rocev2_small_buffer_and_unknown_sources() {
        let mut net = Net::pair();
        let (ca, _) = net.connect();
        let src = source(&mut net.a, 8192, 1);
        let dst = net.b.memory_mut().register(8192, Access { remote_write: true });
        net.a
            .post_write(
                ca,
                0,
                LocalBuf {
                    key: src,
                    offset: 0,
                    len: 8192,
                },
                RemoteBuf {
                    va: dst.va,
                    rkey: dst.rkey,
                },
                1,
            )
            .unwrap();
        let mut small = [0u8; 100];
        assert_eq!(net.a.poll_transmit(net.now, &mut small), None);
        assert_eq!(net.a.counters_struct().tx_encode_errors, 1);
        // The data is still there for a proper buffer.
        let mut buf = vec![0u8; 9000];
        let t = net.a.poll_transmit(net.now, &mut buf).unwrap();
        // From an unknown peer: counted, not processed.
        let mut stranger = RoceEndpoint::new(cfg(9), 1);
        stranger.add_peer(nic(2));
        let _ = stranger.connect(0, nic(2)).unwrap();
        let s = stranger.poll_transmit(0, &mut small).unwrap();
        net.b.handle_frame(net.now, 0, &small[..s.len]);
        assert_eq!(net.b.counters_struct().unknown_peer, 1);
        // A data frame for a QP that does not exist, from a known peer.
        let mut f = buf[..t.len].to_vec();
        f[wire::BTH_OFFSET + 7] ^= 0x40; // DestQP
        let n = f.len() - wire::ICRC_LEN;
        let crc = wire::icrc(&f[..n]);
        f[n..].copy_from_slice(&crc.to_le_bytes());
        net.b.handle_frame(net.now, 0, &f);
        assert_eq!(net.b.counters_struct().unknown_connection, 1);
        net.b.handle_frame(net.now, 0, &buf[..t.len]);
        assert!(net.run_until(1000, |n| find_wr(&n.ev_a, 1, WorkKind::Write).is_some()));
        assert!(net
            .b
            .memory()
            .region(dst)
            .unwrap()
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(i, 1)));
    }
}
