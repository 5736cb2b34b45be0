//! The tester: a scripted peer NIC that exchanges frames with the IUT through an [`Adapter`],
//! builds its frames with the reference encoder (`mroce_model::wire`), decodes everything the
//! IUT sends with the reference decoder, and checks expectations. Every check failure is a
//! [`Fail`] naming the first difference.
//!
//! Every frame the IUT emits is checked on arrival, whatever the case: it must decode, and
//! re-encoding the decoded fields with the reference encoder must give the same bytes (so
//! every field sits at its SPEC.md offset, reserved bits and pad are zero, lengths, IPv4
//! checksum and ICRC are exact); its envelope must follow the per-type table of SPEC.md §5.1
//! (DSCP, UDP source port, BTH PSN, ECN ECT(0), TTL 64, P_Key, DF).

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use mroce_model::endpoint::EndpointConfig;
use mroce_model::memory::MrKey;
use mroce_model::transport::{Completion, ConnId, Event, LocalBuf, NicAddr, RemoteBuf, Status, WorkKind};
use mroce_model::wire::{self, ecn, opcode, Akh, Bth, Cmh, FrameAddrs, MrPacket, Mrh, Nkh, Rph, Sdh};

use crate::adapter::{Adapter, Env, Need, Setup};

/// A failed expectation: the first difference found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fail(pub String);

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Result of a case step.
pub type R<T = ()> = Result<T, Fail>;

/// Fail with a formatted message.
#[macro_export]
macro_rules! fail {
    ($($t:tt)*) => { return Err($crate::harness::Fail(format!($($t)*))) };
}

/// Check `got == want`, failing with "what: expected want, got got".
#[macro_export]
macro_rules! check_eq {
    ($what:expr, $got:expr, $want:expr) => {{
        let (g, w) = (&$got, &$want);
        if g != w {
            return Err($crate::harness::Fail(format!(
                "{}: expected {:?}, got {:?}",
                $what, w, g
            )));
        }
    }};
}

/// Check a condition, failing with the message.
#[macro_export]
macro_rules! check {
    ($cond:expr, $($t:tt)*) => {{
        if !$cond {
            return Err($crate::harness::Fail(format!($($t)*)));
        }
    }};
}

/// A 32-bit value shown in hex in failure messages.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct H(pub u32);
impl fmt::Debug for H {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010x}", self.0)
    }
}

// ---------------------------------------------------------------------------------------
// Decoded IUT frames
// ---------------------------------------------------------------------------------------

/// An mroce packet, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// WRITE.
    Write {
        /// MRH.
        mrh: Mrh,
        /// SDH.
        sdh: Sdh,
        /// RPH.
        rph: Rph,
        /// Payload.
        payload: Vec<u8>,
    },
    /// SEND.
    Send {
        /// MRH.
        mrh: Mrh,
        /// SDH.
        sdh: Sdh,
        /// RQH.RSN.
        rsn: u32,
        /// Payload.
        payload: Vec<u8>,
    },
    /// PROBE.
    Probe {
        /// MRH.
        mrh: Mrh,
    },
    /// ACK.
    Ack(Akh),
    /// NAK.
    Nak(Nkh),
    /// CONNECT.
    Connect(Cmh),
    /// CONNECT_ACK.
    ConnectAck(Cmh),
    /// DISCONNECT.
    Disconnect(Cmh),
    /// DISCONNECT_ACK.
    DisconnectAck(Cmh),
}

impl Body {
    fn from(p: &MrPacket<'_>) -> Body {
        match *p {
            MrPacket::Write { mrh, sdh, rph, payload } => Body::Write {
                mrh,
                sdh,
                rph,
                payload: payload.to_vec(),
            },
            MrPacket::Send { mrh, sdh, rsn, payload } => Body::Send {
                mrh,
                sdh,
                rsn,
                payload: payload.to_vec(),
            },
            MrPacket::Probe { mrh } => Body::Probe { mrh },
            MrPacket::Ack(a) => Body::Ack(a),
            MrPacket::Nak(n) => Body::Nak(n),
            MrPacket::Connect(c) => Body::Connect(c),
            MrPacket::ConnectAck(c) => Body::ConnectAck(c),
            MrPacket::Disconnect(c) => Body::Disconnect(c),
            MrPacket::DisconnectAck(c) => Body::DisconnectAck(c),
        }
    }
}

/// A frame the IUT emitted, decoded by the reference decoder.
#[derive(Debug, Clone)]
pub struct Pkt {
    /// Emission time.
    pub at: u64,
    /// Port it left on.
    pub plane: u8,
    /// Raw bytes.
    pub bytes: Vec<u8>,
    /// Envelope.
    pub addrs: FrameAddrs,
    /// BTH.
    pub bth: Bth,
    /// mroce headers and payload.
    pub body: Body,
}

/// Name of an opcode.
pub fn op_name(op: u8) -> &'static str {
    match op {
        opcode::MR_WRITE => "WRITE",
        opcode::MR_SEND => "SEND",
        opcode::MR_ACK => "ACK",
        opcode::MR_NAK => "NAK",
        opcode::MR_PROBE => "PROBE",
        opcode::MR_CONNECT => "CONNECT",
        opcode::MR_CONNECT_ACK => "CONNECT_ACK",
        opcode::MR_DISCONNECT => "DISCONNECT",
        opcode::MR_DISCONNECT_ACK => "DISCONNECT_ACK",
        _ => "?",
    }
}

impl Pkt {
    /// Decode and check one IUT frame (reference decoder, canonical re-encoding, §5.1 table).
    pub fn decode(at: u64, plane: u8, bytes: Vec<u8>) -> R<Pkt> {
        let (f, p) = match wire::decode_mroce_frame(&bytes) {
            Ok(x) => x,
            Err(e) => fail!(
                "the IUT emitted a frame the reference decoder rejects ({e}): {}",
                hex(&bytes)
            ),
        };
        let pkt = Pkt {
            at,
            plane,
            addrs: f.addrs,
            bth: f.bth,
            body: Body::from(&p),
            bytes: bytes.clone(),
        };
        // Canonical encoding: the reference encoder gives the same bytes for the same fields.
        let mut buf = vec![0u8; bytes.len() + 64];
        let n = wire::encode_mroce(&mut buf, &f.addrs, &f.bth, &p).map_err(|e| Fail(format!("re-encode: {e}")))?;
        if buf[..n] != bytes[..] {
            let at = buf[..n]
                .iter()
                .zip(&bytes)
                .position(|(a, b)| a != b)
                .unwrap_or(n.min(bytes.len()));
            fail!(
                "{} from the IUT is not canonically encoded: first difference at byte {at} (IUT {:02x?}, reference {:02x?}), lengths {} / {}",
                pkt.describe(),
                bytes.get(at),
                buf.get(at),
                bytes.len(),
                n
            );
        }
        pkt.check_envelope()?;
        Ok(pkt)
    }

    /// BTH opcode.
    pub fn opcode(&self) -> u8 {
        self.bth.opcode
    }

    /// One-line description for failure messages.
    pub fn describe(&self) -> String {
        match &self.body {
            Body::Write { mrh, sdh, payload, .. } | Body::Send { mrh, sdh, payload, .. } => format!(
                "{} path {} psn {:#x} floor {:#x} stream {} msg {} off {} len {}{}",
                op_name(self.opcode()),
                mrh.path,
                mrh.psn,
                mrh.floor,
                sdh.stream,
                sdh.msg_seq,
                sdh.offset,
                payload.len(),
                if mrh.flags & 1 != 0 { " RETX" } else { "" }
            ),
            Body::Probe { mrh } => format!("PROBE path {} psn {:#x}", mrh.path, mrh.psn),
            Body::Ack(a) => format!(
                "ACK path {} base {:#x} cum {:#x} sack {:x?} ecn {} pkts {}",
                a.path, a.base, a.cum, a.sack, a.ecn_count, a.pkt_count
            ),
            Body::Nak(k) => format!(
                "NAK syndrome {} stream {} msg {} off {}",
                k.syndrome, k.stream, k.msg_seq, k.offset
            ),
            Body::Connect(c) | Body::ConnectAck(c) | Body::Disconnect(c) | Body::DisconnectAck(c) => {
                format!(
                    "{} src_conn {:#x} dest_qp {:#x}",
                    op_name(self.opcode()),
                    c.src_conn,
                    self.bth.dest_qp
                )
            }
        }
    }

    /// SPEC.md §5.1 "common envelope values per type", and §3.3 / §3.5 constants.
    fn check_envelope(&self) -> R {
        let what = self.describe();
        let a = &self.addrs;
        let b = &self.bth;
        check_eq!(format!("{what}: ECN"), a.ecn, ecn::ECT0);
        check_eq!(format!("{what}: TTL"), a.ttl, 64);
        check_eq!(format!("{what}: P_Key"), b.pkey, 0xFFFF);
        check_eq!(format!("{what}: BTH M"), b.mig, false);
        check_eq!(format!("{what}: BTH reserved byte"), b.resv8, 0);
        check_eq!(format!("{what}: BTH reserved 7 bits"), b.resv7, 0);
        check_eq!(
            format!("{what}: IPv4 flags/fragment (DF only)"),
            &self.bytes[20..22],
            &[0x40u8, 0][..]
        );
        match &self.body {
            Body::Write { mrh, .. } | Body::Send { mrh, .. } | Body::Probe { mrh } => {
                check_eq!(format!("{what}: DSCP"), a.dscp, 26);
                check!(
                    a.src_port >= 0xC000,
                    "{what}: UDP source port {:#x} is not a path entropy (0xC000-0xFFFF)",
                    a.src_port
                );
                check_eq!(format!("{what}: BTH PSN"), H(b.psn), H(mrh.psn & 0xFF_FFFF));
                check!(
                    !mroce_model::seq::lt(mrh.psn, mrh.floor),
                    "{what}: MRH floor {:#x} above its PSN (§4.1: a sender MUST NOT send Floor > PSN)",
                    mrh.floor
                );
                check_eq!(format!("{what}: MRH flag bits 1-3"), mrh.flags & 0xE, 0);
                check_eq!(format!("{what}: MRH plane = port sent on"), mrh.plane, self.plane);
                if let Body::Probe { .. } = self.body {
                    check_eq!(format!("{what}: AckReq"), b.ack_req, true);
                    check_eq!(format!("{what}: SE"), b.se, false);
                    check_eq!(format!("{what}: MRH flags"), mrh.flags, 0);
                }
            }
            Body::Ack(k) => {
                check_eq!(format!("{what}: DSCP"), a.dscp, 48);
                check_eq!(format!("{what}: BTH PSN"), b.psn, 0);
                check_eq!(format!("{what}: AckReq"), b.ack_req, false);
                check_eq!(format!("{what}: SE"), b.se, false);
                check_eq!(format!("{what}: AKH flag bits 2-7"), k.flags & 0xFC, 0);
                check!(
                    k.flags != wire::AKH_FLAG_PROBE | wire::AKH_FLAG_ANNOUNCE,
                    "{what}: an announcement answers no probe (AKH flags 0x03)"
                );
                check_eq!(
                    format!("{what}: Cum (Base + trailing ones of word 0)"),
                    H(k.cum),
                    H(k.base.wrapping_add(k.sack[0].trailing_ones()))
                );
            }
            _ => {
                check_eq!(format!("{what}: DSCP"), a.dscp, 48);
                check_eq!(format!("{what}: UDP source port"), a.src_port, 0xC000);
                check_eq!(format!("{what}: BTH PSN"), b.psn, 0);
                check_eq!(format!("{what}: AckReq"), b.ack_req, false);
                check_eq!(format!("{what}: SE"), b.se, false);
            }
        }
        if let Body::Connect(c) | Body::ConnectAck(c) | Body::Disconnect(c) = &self.body {
            check_eq!(format!("{what}: CMH Streams"), c.streams, 1024);
            check_eq!(format!("{what}: CMH Reason"), c.reason, 0);
        }
        Ok(())
    }

    /// The MRH of a data or probe frame.
    pub fn mrh(&self) -> Option<Mrh> {
        match &self.body {
            Body::Write { mrh, .. } | Body::Send { mrh, .. } | Body::Probe { mrh } => Some(*mrh),
            _ => None,
        }
    }

    /// (MRH, SDH, payload) of a WRITE or SEND.
    pub fn data(&self) -> Option<(Mrh, Sdh, &[u8])> {
        match &self.body {
            Body::Write { mrh, sdh, payload, .. } | Body::Send { mrh, sdh, payload, .. } => Some((*mrh, *sdh, payload)),
            _ => None,
        }
    }

    /// Whether this is a WRITE or SEND.
    pub fn is_data(&self) -> bool {
        self.data().is_some()
    }

    /// Whether the RETX flag is set.
    pub fn is_retx(&self) -> bool {
        self.mrh().is_some_and(|m| m.flags & wire::MRH_FLAG_RETX != 0)
    }
}

/// Hex string of bytes.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

// ---------------------------------------------------------------------------------------
// The tester's view of one connection
// ---------------------------------------------------------------------------------------

/// The tester's connection id (SrcConn of its CONNECT; SPEC.md §5.11: A's id).
pub const TESTER_CONN: u32 = 0x00_0123;
/// The tester's transmit ISN (SPEC.md §5.11: A's ISN).
pub const TESTER_ISN: u32 = 0x89AB_CD00;
/// The tester's CONNECT nonce (SPEC.md §5.11.3).
pub const TESTER_NONCE: u64 = 0x0123_4567_89AB_CDEF;
/// The IUT's fixed ISN in the default setup.
pub const IUT_ISN: u32 = 0x4000_0000;
/// Entropy base of the tester's paths (SPEC.md §5.11: 0xC120 + path).
pub const TESTER_ENTROPY: u16 = 0xC120;

/// One connection between the tester and the IUT, as the tester sees it.
#[derive(Debug, Clone)]
pub struct Peer {
    /// Tester's connection id (the IUT puts it in BTH.DestQP).
    pub my_conn: u32,
    /// IUT's connection id (the tester puts it in BTH.DestQP).
    pub iut_conn: u32,
    /// The id the IUT's verbs use for this connection.
    pub conn: ConnId,
    /// Tester's transmit ISN.
    pub my_isn: u32,
    /// IUT's transmit ISN.
    pub iut_isn: u32,
    /// Negotiated paths, planes, MTU.
    pub paths: u8,
    /// Negotiated planes.
    pub planes: u8,
    /// Negotiated MTU.
    pub mtu: u16,
    /// Tester's next PSN per path.
    pub next_psn: [u32; 16],
    /// Floor the tester puts in its MRHs, per path.
    pub floor: [u32; 16],
    /// ACK base the tester reports per path (as a receiver of the IUT's data).
    pub rx_base: [u32; 16],
    /// Nonce of the connection.
    pub nonce: u64,
}

impl Peer {
    /// Tester entropy (UDP source port) of a path.
    pub fn sport(&self, path: u8) -> u16 {
        TESTER_ENTROPY + u16::from(path)
    }

    /// Port a path's frames arrive on at the IUT (tester convention: path p on plane p mod planes).
    pub fn plane_of(&self, path: u8) -> u8 {
        path % self.planes.max(1)
    }
}

/// A data packet the tester sends (fields not set take the defaults of [`Data::write`]).
#[derive(Debug, Clone)]
pub struct Data {
    /// Path.
    pub path: u8,
    /// PSN (default: the path's next PSN, which then advances).
    pub psn: Option<u32>,
    /// Floor (default: the peer's floor of the path).
    pub floor: Option<u32>,
    /// MRH timestamp.
    pub ts: u32,
    /// MRH flags.
    pub flags: u8,
    /// SDH.
    pub stream: u16,
    /// SDH.
    pub msg_seq: u32,
    /// SDH.
    pub offset: u32,
    /// SDH MsgLen (default: offset + payload length).
    pub msg_len: Option<u32>,
    /// Payload.
    pub payload: Vec<u8>,
    /// WRITE target (VA, R_Key), or SEND with RSN.
    pub kind: DataKind,
    /// BTH AckReq.
    pub ack_req: bool,
    /// BTH SE (default: AckReq).
    pub se: Option<bool>,
    /// Mark CE.
    pub ce: bool,
    /// Port of arrival (default: the path's plane).
    pub plane: Option<u8>,
}

/// WRITE or SEND.
#[derive(Debug, Clone, Copy)]
pub enum DataKind {
    /// WRITE to (VA of the first payload byte, R_Key).
    Write(u64, u32),
    /// SEND with this RSN.
    Send(u32),
}

impl Data {
    /// A WRITE of `payload` to `va` under `rkey`, message (`stream`, `msg_seq`), single chunk,
    /// AckReq set.
    pub fn write(path: u8, stream: u16, msg_seq: u32, va: u64, rkey: u32, payload: &[u8]) -> Data {
        Data {
            path,
            psn: None,
            floor: None,
            ts: 1000,
            flags: 0,
            stream,
            msg_seq,
            offset: 0,
            msg_len: None,
            payload: payload.to_vec(),
            kind: DataKind::Write(va, rkey),
            ack_req: true,
            se: None,
            ce: false,
            plane: None,
        }
    }

    /// A SEND of `payload` with receive sequence number `rsn`.
    pub fn send(path: u8, stream: u16, msg_seq: u32, rsn: u32, payload: &[u8]) -> Data {
        Data {
            kind: DataKind::Send(rsn),
            ..Data::write(path, stream, msg_seq, 0, 0, payload)
        }
    }
}

// ---------------------------------------------------------------------------------------
// Counters
// ---------------------------------------------------------------------------------------

/// Counters that only move on bad input or failures (SPEC.md §9). `expect_counters` requires
/// every one not named to stay unchanged.
pub const ERROR_COUNTERS: &[&str] = &[
    "bad_frames",
    "bad_icrc",
    "truncated",
    "unknown_opcode",
    "malformed",
    "unknown_connection",
    "unknown_peer",
    "refused_connects",
    "table_full",
    "bad_path",
    "duplicate_psn",
    "out_of_window",
    "duplicate_chunks",
    "rnr_drops",
    "rkey_violations",
    "bounds_violations",
    "invalid_requests",
    "naks_sent",
    "stale_naks",
    "forged_acks",
    "forged_ack_bits",
    "redundant_acks",
    "local_access_errors",
    "peer_timeouts",
    "tx_encode_errors",
];

/// A counter snapshot.
pub type Counters = BTreeMap<&'static str, u64>;

// ---------------------------------------------------------------------------------------
// The tester
// ---------------------------------------------------------------------------------------

/// Default IUT configuration of the suite: the reference defaults with a fixed ISN.
pub fn default_setup() -> Setup {
    Setup {
        cfg: EndpointConfig {
            fixed_isn: Some(IUT_ISN),
            ..EndpointConfig::default()
        },
        planes: 2,
        tester_known: true,
    }
}

/// One run of one case against one adapter.
pub struct Tester<'a> {
    a: &'a mut dyn Adapter,
    /// Addresses of the run.
    pub env: Env,
    pending: VecDeque<Pkt>,
    events: Vec<Event>,
    ev_read: usize,
    /// The trailing probes of the last [`Tester::data_burst`].
    pub trailing: Vec<Pkt>,
}

impl<'a> Tester<'a> {
    /// Start the IUT with `setup` and return a tester for it.
    pub fn start(a: &'a mut dyn Adapter, setup: &Setup) -> R<Tester<'a>> {
        let env = a
            .start(setup)
            .map_err(|e| Fail(format!("adapter could not start the IUT: {e}")))?;
        Ok(Tester {
            a,
            env,
            pending: VecDeque::new(),
            events: Vec::new(),
            ev_read: 0,
            trailing: Vec::new(),
        })
    }

    /// Target name.
    pub fn target(&self) -> &'static str {
        self.a.target()
    }

    fn collect(&mut self) -> R {
        for f in self.a.frames_out() {
            let p = Pkt::decode(f.at, f.plane, f.bytes)?;
            self.pending.push_back(p);
        }
        self.events.extend(self.a.events());
        Ok(())
    }

    /// Current IUT time.
    pub fn now(&self) -> u64 {
        self.a.now()
    }

    /// The IUT's clock moves only as the case says ([`Need::ExactTime`]): no timer of its own
    /// fires while the tester works. Cases that run everywhere use it to be strict where they
    /// can.
    pub fn timers_exact(&self) -> bool {
        self.a.lacks(Need::ExactTime).is_none()
    }

    /// Hand a frame to the IUT on port `plane`.
    pub fn send(&mut self, plane: u8, frame: &[u8]) -> R {
        self.a.frame_in(plane, frame);
        self.collect()
    }

    /// Let time pass.
    pub fn advance(&mut self, ns: u64) -> R {
        self.a.advance(ns);
        self.collect()
    }

    /// Let time pass in steps of `step` until `pred` holds on the pending frames or events,
    /// at most `limit` ns. Returns whether it held.
    pub fn advance_until(&mut self, limit: u64, step: u64, mut pred: impl FnMut(&Tester<'_>) -> bool) -> R<bool> {
        let end = self.now() + limit;
        while self.now() < end {
            if pred(self) {
                return Ok(true);
            }
            self.advance(step.min(end - self.now()))?;
        }
        Ok(pred(self))
    }

    /// Every pending frame: data frames and probes (SPEC.md §8.4: the trailing probe behind
    /// the newest data frame of each path when the send queue runs dry; on real sockets also
    /// a tail-loss probe whose timer ran while the tester worked). Returns the data frames;
    /// the probes, each with AckReq, are kept in `trailing`. C-8.4-17 checks the trailing
    /// probes themselves.
    pub fn data_burst(&mut self) -> R<Vec<Pkt>> {
        let mut data = Vec::new();
        let mut probes = Vec::new();
        for f in self.drain()? {
            if f.is_data() {
                data.push(f);
            } else if f.opcode() == opcode::MR_PROBE && f.bth.ack_req {
                probes.push(f);
            } else {
                fail!("expected data frames and probes, got {}", f.describe());
            }
        }
        self.trailing = probes;
        Ok(data)
    }

    /// Frames the IUT emitted that no expectation consumed yet.
    pub fn pending(&self) -> &VecDeque<Pkt> {
        &self.pending
    }

    /// Take every pending frame.
    pub fn drain(&mut self) -> R<Vec<Pkt>> {
        self.collect()?;
        Ok(self.pending.drain(..).collect())
    }

    /// The next frame the IUT emitted.
    pub fn next(&mut self, what: &str) -> R<Pkt> {
        self.collect()?;
        match self.pending.pop_front() {
            Some(p) => Ok(p),
            None => fail!("expected {what}, but the IUT sent nothing"),
        }
    }

    /// The next frame, which must have opcode `op`.
    pub fn expect_op(&mut self, op: u8, what: &str) -> R<Pkt> {
        let p = self.next(what)?;
        if p.opcode() != op {
            fail!("expected {what} ({}), got {}", op_name(op), p.describe());
        }
        Ok(p)
    }

    /// The next frame must be an ACK.
    pub fn expect_ack(&mut self, what: &str) -> R<(Pkt, Akh)> {
        let p = self.expect_op(opcode::MR_ACK, what)?;
        let Body::Ack(a) = p.body else { unreachable!() };
        Ok((p, a))
    }

    /// The next frame must be a NAK.
    pub fn expect_nak(&mut self, what: &str) -> R<(Pkt, Nkh)> {
        let p = self.expect_op(opcode::MR_NAK, what)?;
        let Body::Nak(k) = p.body else { unreachable!() };
        Ok((p, k))
    }

    /// The next frame must be a CM frame with opcode `op`.
    pub fn expect_cm(&mut self, op: u8, what: &str) -> R<(Pkt, Cmh)> {
        let p = self.expect_op(op, what)?;
        match p.body {
            Body::Connect(c) | Body::ConnectAck(c) | Body::Disconnect(c) | Body::DisconnectAck(c) => Ok((p, c)),
            _ => unreachable!(),
        }
    }

    /// The next frame must be a WRITE or SEND.
    pub fn expect_data(&mut self, what: &str) -> R<Pkt> {
        let p = self.next(what)?;
        if !p.is_data() {
            fail!("expected {what} (WRITE or SEND), got {}", p.describe());
        }
        Ok(p)
    }

    /// No frame pending.
    pub fn expect_silence(&mut self, why: &str) -> R {
        self.collect()?;
        if let Some(p) = self.pending.front() {
            fail!("expected no frame ({why}), got {}", p.describe());
        }
        Ok(())
    }

    /// Events since the start.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Events not read yet by `new_events`.
    pub fn new_events(&mut self) -> R<Vec<Event>> {
        self.collect()?;
        let v = self.events[self.ev_read..].to_vec();
        self.ev_read = self.events.len();
        Ok(v)
    }

    /// New completion events.
    pub fn completions(&mut self) -> R<Vec<Completion>> {
        Ok(self
            .new_events()?
            .into_iter()
            .filter_map(|e| if let Event::Completion(c) = e { Some(c) } else { None })
            .collect())
    }

    /// The next completions must be exactly these (kind, stream, msg_seq, status, bytes).
    pub fn expect_completions(&mut self, want: &[(WorkKind, u16, u32, Status, u32)]) -> R<Vec<Completion>> {
        let got = self.completions()?;
        let g: Vec<_> = got
            .iter()
            .map(|c| (c.kind, c.stream, c.msg_seq, c.status, c.bytes))
            .collect();
        check_eq!("completions (kind, stream, msg_seq, status, bytes)", g, want.to_vec());
        Ok(got)
    }

    /// Counter snapshot.
    pub fn counters(&mut self) -> Counters {
        self.a.counters().into_iter().collect()
    }

    /// One counter.
    pub fn counter(&mut self, name: &str) -> u64 {
        self.counters().get(name).copied().unwrap_or(0)
    }

    /// Counter changes since `before`: the named ones must have moved by exactly the given
    /// amounts, and every error counter not named must not have moved.
    pub fn expect_counters(&mut self, before: &Counters, deltas: &[(&str, u64)]) -> R {
        let now = self.counters();
        for (name, want) in deltas {
            let (b, n) = (before.get(name).copied(), now.get(name).copied());
            let Some(n) = n else {
                fail!("the IUT has no counter {name}")
            };
            let d = n.wrapping_sub(b.unwrap_or(0));
            check_eq!(format!("counter {name} increase"), d, *want);
        }
        for name in ERROR_COUNTERS {
            if deltas.iter().any(|(n, _)| n == name) {
                continue;
            }
            let d = now
                .get(name)
                .copied()
                .unwrap_or(0)
                .wrapping_sub(before.get(name).copied().unwrap_or(0));
            check!(d == 0, "counter {name} moved by {d}, expected no change");
        }
        Ok(())
    }

    // -------------------------------------------------------------------------------------
    // Verbs
    // -------------------------------------------------------------------------------------

    /// Register a region filled with `fill(i)`.
    pub fn region(&mut self, len: usize, remote_write: bool, fill: impl Fn(usize) -> u8) -> R<MrKey> {
        let k = self.a.register(len, remote_write);
        if len > 0 {
            let data: Vec<u8> = (0..len).map(fill).collect();
            self.a.write_mem(k, 0, &data).map_err(Fail)?;
        }
        Ok(k)
    }

    /// Deregister a region.
    pub fn deregister(&mut self, k: MrKey) -> R {
        self.a.deregister(k).map_err(Fail)
    }

    /// Read IUT memory.
    pub fn read(&mut self, k: MrKey, off: u64, len: u64) -> R<Vec<u8>> {
        self.a.read_mem(k, off, len).map_err(Fail)
    }

    /// post_write.
    pub fn post_write(&mut self, p: &Peer, stream: u16, local: LocalBuf, remote: RemoteBuf, wr_id: u64) -> R {
        self.a
            .post_write(p.conn, stream, local, remote, wr_id)
            .map_err(|e| Fail(format!("post_write: {e}")))?;
        self.collect()
    }

    /// post_send.
    pub fn post_send(&mut self, p: &Peer, stream: u16, local: LocalBuf, wr_id: u64) -> R {
        self.a
            .post_send(p.conn, stream, local, wr_id)
            .map_err(|e| Fail(format!("post_send: {e}")))?;
        self.collect()
    }

    /// post_recv.
    pub fn post_recv(&mut self, p: &Peer, stream: u16, local: LocalBuf, wr_id: u64) -> R {
        self.a
            .post_recv(p.conn, stream, local, wr_id)
            .map_err(|e| Fail(format!("post_recv: {e}")))?;
        self.collect()
    }

    /// Implementation state (diagnostics).
    pub fn debug_state(&mut self) -> String {
        self.a.debug_state()
    }

    /// The adapter, for verbs the helpers do not wrap.
    pub fn adapter(&mut self) -> &mut dyn Adapter {
        self.a
    }

    // -------------------------------------------------------------------------------------
    // Frame builders (tester → IUT)
    // -------------------------------------------------------------------------------------

    /// Envelope of a tester frame on `plane`.
    pub fn addrs(&self, plane: u8, sport: u16, dscp: u8) -> FrameAddrs {
        let p = plane as usize;
        FrameAddrs {
            dst_mac: self.env.iut.mac,
            src_mac: self.env.tester.mac,
            src_ip: self.env.tester.ips[p],
            dst_ip: self.env.iut.ips[p],
            src_port: sport,
            dscp,
            ecn: ecn::ECT0,
            ttl: 64,
        }
    }

    /// Encode a frame.
    pub fn encode(addrs: &FrameAddrs, bth: &Bth, pkt: &MrPacket<'_>) -> Vec<u8> {
        let mut buf = vec![0u8; 70_000];
        let n = wire::encode_mroce(&mut buf, addrs, bth, pkt).expect("tester frame encodes");
        buf.truncate(n);
        buf
    }

    /// A data frame of connection `p` (advances the path's PSN unless `d.psn` is set).
    /// Returns (port of arrival, frame).
    pub fn data_frame(&self, p: &mut Peer, d: &Data) -> (u8, Vec<u8>) {
        let path = d.path;
        let pi = path as usize % 16;
        let psn = d.psn.unwrap_or_else(|| {
            let x = p.next_psn[pi];
            p.next_psn[pi] = x.wrapping_add(1);
            x
        });
        let plane = d.plane.unwrap_or(p.plane_of(path));
        let mrh = Mrh {
            flags: d.flags,
            path,
            plane,
            psn,
            floor: d.floor.unwrap_or(p.floor[pi]),
            ts: d.ts,
        };
        let sdh = Sdh {
            stream: d.stream,
            msg_seq: d.msg_seq,
            offset: d.offset,
            msg_len: d.msg_len.unwrap_or(d.offset + d.payload.len() as u32),
        };
        let mut bth = Bth::new(0, p.iut_conn, psn);
        bth.ack_req = d.ack_req;
        bth.se = d.se.unwrap_or(d.ack_req);
        let pkt = match d.kind {
            DataKind::Write(va, rkey) => MrPacket::Write {
                mrh,
                sdh,
                rph: Rph { va, rkey },
                payload: &d.payload,
            },
            DataKind::Send(rsn) => MrPacket::Send {
                mrh,
                sdh,
                rsn,
                payload: &d.payload,
            },
        };
        let mut f = Self::encode(&self.addrs(plane, p.sport(path), 26), &bth, &pkt);
        if d.ce {
            wire::set_ecn(&mut f, ecn::CE).expect("frame has an IPv4 header");
        }
        (plane, f)
    }

    /// Send a data frame.
    pub fn data(&mut self, p: &mut Peer, d: &Data) -> R {
        let (plane, f) = self.data_frame(p, d);
        self.send(plane, &f)
    }

    /// A PROBE frame on `path` (next PSN of the path, the peer's floor).
    pub fn probe_frame(&self, p: &mut Peer, path: u8, ts: u32) -> (u8, Vec<u8>) {
        let pi = path as usize;
        let psn = p.next_psn[pi];
        p.next_psn[pi] = psn.wrapping_add(1);
        let plane = p.plane_of(path);
        let mrh = Mrh {
            flags: 0,
            path,
            plane,
            psn,
            floor: p.floor[pi],
            ts,
        };
        let mut bth = Bth::new(0, p.iut_conn, psn);
        bth.ack_req = true;
        (
            plane,
            Self::encode(&self.addrs(plane, p.sport(path), 26), &bth, &MrPacket::Probe { mrh }),
        )
    }

    /// Send a PROBE.
    pub fn probe(&mut self, p: &mut Peer, path: u8, ts: u32) -> R {
        let (plane, f) = self.probe_frame(p, path, ts);
        self.send(plane, &f)
    }

    /// An ACK frame for the IUT's data on `path`: SACK relative to the peer's `rx_base` with
    /// the given PSNs set, echoing `ts` and answering on `plane` from `sport`.
    pub fn ack_frame(&self, p: &Peer, path: u8, psns: &[u32], ts: u32, plane: u8, sport: u16) -> Vec<u8> {
        let base = p.rx_base[path as usize % 16];
        let mut sack = [0u32; 8];
        for &x in psns {
            let d = x.wrapping_sub(base);
            if d < 256 {
                sack[(d / 32) as usize] |= 1 << (d % 32);
            }
        }
        let akh = Akh {
            path,
            flags: 0,
            ecn_count: 0,
            pkt_count: psns.len() as u16,
            base,
            cum: base.wrapping_add(sack[0].trailing_ones()),
            ts_echo: ts,
            rate_hint_mbps: 0,
            sack,
        };
        self.ack_raw(p, &akh, plane, sport)
    }

    /// An ACK frame with explicit AKH fields.
    pub fn ack_raw(&self, p: &Peer, akh: &Akh, plane: u8, sport: u16) -> Vec<u8> {
        Self::encode(
            &self.addrs(plane, sport, 48),
            &Bth::new(0, p.iut_conn, 0),
            &MrPacket::Ack(*akh),
        )
    }

    /// Acknowledge IUT data frames (all on one path): SACK of their PSNs (plus `also`),
    /// echoing the last one's timestamp, on the port and source port it used.
    pub fn ack_pkts(&mut self, p: &Peer, pkts: &[&Pkt], also: &[u32]) -> R {
        let Some(last) = pkts.last() else { return Ok(()) };
        let m = last.mrh().expect("data or probe");
        let mut psns: Vec<u32> = pkts.iter().filter_map(|x| x.mrh()).map(|x| x.psn).collect();
        psns.extend_from_slice(also);
        let f = self.ack_frame(p, m.path, &psns, m.ts, last.plane, last.addrs.src_port);
        self.send(last.plane, &f)
    }

    /// A CM frame from the tester.
    pub fn cm_frame(&self, op: u8, dest_qp: u32, cmh: &Cmh, plane: u8) -> Vec<u8> {
        let pkt = match op {
            opcode::MR_CONNECT => MrPacket::Connect(*cmh),
            opcode::MR_CONNECT_ACK => MrPacket::ConnectAck(*cmh),
            opcode::MR_DISCONNECT => MrPacket::Disconnect(*cmh),
            _ => MrPacket::DisconnectAck(*cmh),
        };
        Self::encode(&self.addrs(plane, 0xC000, 48), &Bth::new(0, dest_qp, 0), &pkt)
    }

    /// The tester's CMH for a CONNECT asking for `paths`, `planes`, `mtu`.
    pub fn connect_cmh(paths: u8, planes: u8, mtu: u16) -> Cmh {
        Cmh {
            src_conn: TESTER_CONN,
            isn: TESTER_ISN,
            paths,
            planes,
            mtu,
            streams: 1024,
            reason: 0,
            rx_capacity_mbps: 400_000,
            nonce: TESTER_NONCE,
        }
    }

    /// Open a connection with the tester as initiator: CONNECT → CONNECT_ACK → Accepted.
    pub fn open(&mut self, paths: u8, mtu: u16) -> R<Peer> {
        let planes = self.env.iut.planes;
        self.open_with(&Self::connect_cmh(paths, planes, mtu))
    }

    /// Open a connection with an explicit CONNECT header.
    pub fn open_with(&mut self, cmh: &Cmh) -> R<Peer> {
        let f = self.cm_frame(opcode::MR_CONNECT, 0, cmh, 0);
        self.send(0, &f)?;
        let (pkt, ack) = self.expect_cm(opcode::MR_CONNECT_ACK, "CONNECT_ACK")?;
        check_eq!("CONNECT_ACK port", pkt.plane, 0);
        check_eq!(
            "CONNECT_ACK DestQP (= CONNECT.SrcConn)",
            H(pkt.bth.dest_qp),
            H(cmh.src_conn)
        );
        check_eq!("CONNECT_ACK nonce", ack.nonce, cmh.nonce);
        let accepted = self
            .new_events()?
            .into_iter()
            .find_map(|e| if let Event::Accepted(c) = e { Some(c) } else { None });
        let Some(conn) = accepted else {
            fail!("no Accepted event after CONNECT_ACK")
        };
        let planes = ack.planes.max(1);
        let iut_isn = ack.isn;
        Ok(Peer {
            my_conn: cmh.src_conn,
            iut_conn: ack.src_conn,
            conn,
            my_isn: cmh.isn,
            iut_isn,
            paths: ack.paths,
            planes,
            mtu: ack.mtu,
            next_psn: [cmh.isn; 16],
            floor: [cmh.isn; 16],
            rx_base: [iut_isn; 16],
            nonce: cmh.nonce,
        })
    }

    /// Open a connection with the IUT as initiator: connect verb → CONNECT → the tester's
    /// CONNECT_ACK (with `paths`, `mtu`) → Connected.
    pub fn open_from_iut(&mut self, paths: u8, mtu: u16) -> R<Peer> {
        let tester = self.env.tester;
        let conn = self.a.connect(tester).map_err(|e| Fail(format!("connect verb: {e}")))?;
        self.collect()?;
        let (pkt, c) = self.expect_cm(opcode::MR_CONNECT, "CONNECT")?;
        check_eq!("CONNECT port", pkt.plane, 0);
        check_eq!("CONNECT DestQP", pkt.bth.dest_qp, 0);
        let reply = Cmh {
            src_conn: TESTER_CONN,
            isn: TESTER_ISN,
            paths: paths.min(c.paths),
            planes: c.planes,
            mtu: mtu.min(c.mtu),
            streams: 1024,
            reason: 0,
            rx_capacity_mbps: 400_000,
            nonce: c.nonce,
        };
        let f = self.cm_frame(opcode::MR_CONNECT_ACK, c.src_conn, &reply, 0);
        self.send(0, &f)?;
        let ok = self.new_events()?.contains(&Event::Connected(conn));
        check!(ok, "no Connected event after CONNECT_ACK");
        Ok(Peer {
            my_conn: TESTER_CONN,
            iut_conn: c.src_conn,
            conn,
            my_isn: TESTER_ISN,
            iut_isn: c.isn,
            paths: reply.paths,
            planes: reply.planes,
            mtu: reply.mtu,
            next_psn: [TESTER_ISN; 16],
            floor: [TESTER_ISN; 16],
            rx_base: [c.isn; 16],
            nonce: c.nonce,
        })
    }
}

/// A local buffer covering a whole region or part of it.
pub fn lb(key: MrKey, offset: u64, len: u32) -> LocalBuf {
    LocalBuf { key, offset, len }
}

/// A remote buffer.
pub fn rb(va: u64, rkey: u32) -> RemoteBuf {
    RemoteBuf { va, rkey }
}

/// Deterministic test bytes.
pub fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Whether `a` is the NIC address `n` (helper for address checks).
pub fn same_nic(a: &NicAddr, b: &NicAddr) -> bool {
    a.mac == b.mac && a.ips[..a.planes as usize] == b.ips[..b.planes as usize]
}
