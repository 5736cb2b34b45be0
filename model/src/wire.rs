//! Wire format: Ethernet II / IPv4 / UDP 4791 / BTH / mroce headers / payload / ICRC.
//!
//! Byte-exact definition in SPEC.md §3–§5. Every decoder returns a typed [`WireError`];
//! nothing here panics on input. Encoders write into a caller buffer and return the frame
//! length, so the hot path allocates nothing.

use crate::params::ROCEV2_UDP_PORT;

/// Bytes of the Ethernet II header.
pub const ETH_LEN: usize = 14;
/// Bytes of an IPv4 header without options.
pub const IPV4_LEN: usize = 20;
/// Bytes of the UDP header.
pub const UDP_LEN: usize = 8;
/// Bytes of the InfiniBand Base Transport Header.
pub const BTH_LEN: usize = 12;
/// Bytes of the invariant CRC trailer.
pub const ICRC_LEN: usize = 4;
/// Offset of the BTH inside a frame.
pub const BTH_OFFSET: usize = ETH_LEN + IPV4_LEN + UDP_LEN;
/// Ethertype of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;
/// Default partition key (full membership, default partition).
pub const DEFAULT_PKEY: u16 = 0xFFFF;

/// mroce header version carried in the MRH.
pub const MRH_VERSION: u8 = 1;
/// Bytes of the mroce routing header (data and probe packets).
pub const MRH_LEN: usize = 16;
/// Bytes of the stream header (SEND and WRITE).
pub const SDH_LEN: usize = 16;
/// Bytes of the remote placement extension (WRITE only).
pub const RPH_LEN: usize = 12;
/// Bytes of the receive queue header (SEND only).
pub const RQH_LEN: usize = 4;
/// Bytes of the ACK header including the 256-bit SACK bitmap.
pub const AKH_LEN: usize = 56;
/// Bytes of the NAK header.
pub const NKH_LEN: usize = 12;
/// Bytes of the connection-management header.
pub const CMH_LEN: usize = 28;

/// Fixed bytes of a frame around the BTH payload (Eth + IPv4 + UDP + BTH + ICRC).
pub const FRAME_OVERHEAD: usize = BTH_OFFSET + BTH_LEN + ICRC_LEN;
/// Header bytes of an mroce WRITE data frame (everything but payload and pad).
pub const WRITE_HEADERS: usize = FRAME_OVERHEAD + MRH_LEN + SDH_LEN + RPH_LEN;
/// Header bytes of an mroce SEND data frame.
pub const SEND_HEADERS: usize = FRAME_OVERHEAD + MRH_LEN + SDH_LEN + RQH_LEN;

/// ECN codepoints of the IPv4 header (RFC 3168).
pub mod ecn {
    /// Not ECN-capable transport.
    pub const NOT_ECT: u8 = 0b00;
    /// ECN-capable transport (1).
    pub const ECT1: u8 = 0b01;
    /// ECN-capable transport (0), used by mroce senders.
    pub const ECT0: u8 = 0b10;
    /// Congestion experienced: set by a switch instead of dropping.
    pub const CE: u8 = 0b11;
}

/// BTH opcodes. RoCEv2 baseline opcodes are IBTA RC opcodes; mroce uses the
/// manufacturer-specific range 0xC0–0xFF so the two can never be confused on the wire.
pub mod opcode {
    /// RC SEND First.
    pub const RC_SEND_FIRST: u8 = 0x00;
    /// RC SEND Middle.
    pub const RC_SEND_MIDDLE: u8 = 0x01;
    /// RC SEND Last.
    pub const RC_SEND_LAST: u8 = 0x02;
    /// RC SEND Only.
    pub const RC_SEND_ONLY: u8 = 0x04;
    /// RC RDMA WRITE First (carries RETH).
    pub const RC_WRITE_FIRST: u8 = 0x06;
    /// RC RDMA WRITE Middle.
    pub const RC_WRITE_MIDDLE: u8 = 0x07;
    /// RC RDMA WRITE Last.
    pub const RC_WRITE_LAST: u8 = 0x08;
    /// RC RDMA WRITE Only (carries RETH).
    pub const RC_WRITE_ONLY: u8 = 0x0A;
    /// RC Acknowledge (carries AETH).
    pub const RC_ACK: u8 = 0x11;
    /// RoCEv2 Congestion Notification Packet.
    pub const CNP: u8 = 0x81;

    /// mroce RDMA WRITE data packet: MRH + SDH + RPH + payload.
    pub const MR_WRITE: u8 = 0xC0;
    /// mroce SEND data packet: MRH + SDH + RQH + payload.
    pub const MR_SEND: u8 = 0xC1;
    /// mroce per-path ACK: AKH (base, cumulative, 256-bit SACK, ECN echo, rate hint).
    pub const MR_ACK: u8 = 0xC2;
    /// mroce negative acknowledgement of a message: NKH.
    pub const MR_NAK: u8 = 0xC3;
    /// mroce path probe: MRH only; consumes a PSN and always requests an ACK.
    pub const MR_PROBE: u8 = 0xC4;
    /// Connection request: CMH.
    pub const MR_CONNECT: u8 = 0xC8;
    /// Connection accept: CMH.
    pub const MR_CONNECT_ACK: u8 = 0xC9;
    /// Disconnect request: CMH.
    pub const MR_DISCONNECT: u8 = 0xCA;
    /// Disconnect confirmation: CMH.
    pub const MR_DISCONNECT_ACK: u8 = 0xCB;
}

/// Why a frame could not be decoded. Each maps to a receive counter (SPEC.md §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The frame ends before a header it must contain.
    #[error("truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes required.
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// Ethertype is not IPv4.
    #[error("not IPv4 (ethertype {0:#06x})")]
    NotIpv4(u16),
    /// IPv4 version, IHL, fragmentation or protocol is not supported.
    #[error("unsupported IPv4 header: {0}")]
    BadIpv4(&'static str),
    /// IPv4 header checksum mismatch.
    #[error("IPv4 header checksum mismatch")]
    BadIpChecksum,
    /// UDP destination port is not 4791.
    #[error("not RoCEv2 (UDP destination port {0})")]
    NotRoce(u16),
    /// UDP length disagrees with the IPv4 length.
    #[error("UDP length {udp} inconsistent with IPv4 payload {ip}")]
    BadUdpLength {
        /// UDP length field.
        udp: u16,
        /// IPv4 payload length.
        ip: usize,
    },
    /// Invariant CRC mismatch.
    #[error("ICRC mismatch (computed {computed:#010x}, carried {carried:#010x})")]
    BadIcrc {
        /// CRC computed over the masked frame.
        computed: u32,
        /// CRC carried in the trailer.
        carried: u32,
    },
    /// BTH transport version is not 0.
    #[error("unsupported BTH transport version {0}")]
    BadTver(u8),
    /// Opcode not defined by this specification.
    #[error("unknown opcode {0:#04x}")]
    UnknownOpcode(u8),
    /// mroce header version not supported.
    #[error("unsupported mroce header version {0}")]
    BadVersion(u8),
    /// A field holds a value the specification forbids.
    #[error("invalid field: {0}")]
    BadField(&'static str),
    /// The caller's buffer is too small for the frame being encoded.
    #[error("buffer too small: need {need} bytes, have {have}")]
    BufferTooSmall {
        /// Bytes required.
        need: usize,
        /// Bytes available.
        have: usize,
    },
}

/// Link, network and UDP addressing of one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct FrameAddrs {
    /// Destination MAC.
    pub dst_mac: [u8; 6],
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// Source IPv4 address.
    pub src_ip: [u8; 4],
    /// Destination IPv4 address.
    pub dst_ip: [u8; 4],
    /// UDP source port: the path's ECMP entropy.
    pub src_port: u16,
    /// DSCP (6 bits).
    pub dscp: u8,
    /// ECN codepoint (2 bits).
    pub ecn: u8,
    /// IPv4 TTL.
    pub ttl: u8,
}

/// InfiniBand Base Transport Header (IBTA layout, 12 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Bth {
    /// Opcode.
    pub opcode: u8,
    /// Solicited event.
    pub se: bool,
    /// Migration request.
    pub mig: bool,
    /// Pad bytes (0–3) between payload and ICRC.
    pub pad: u8,
    /// Transport header version (must be 0).
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Reserved byte (masked in the ICRC: FECN/BECN live here on IB).
    pub resv8: u8,
    /// Destination QP / connection id (24 bits).
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// Reserved 7 bits.
    pub resv7: u8,
    /// Packet sequence number (24 bits).
    pub psn: u32,
}

impl Bth {
    /// A BTH with defaults for the given opcode, destination and PSN.
    pub fn new(opcode: u8, dest_qp: u32, psn: u32) -> Self {
        Bth {
            opcode,
            pkey: DEFAULT_PKEY,
            dest_qp: dest_qp & 0xFF_FFFF,
            psn: psn & 0xFF_FFFF,
            ..Default::default()
        }
    }

    fn write(&self, b: &mut [u8]) {
        b[0] = self.opcode;
        b[1] = ((self.se as u8) << 7) | ((self.mig as u8) << 6) | ((self.pad & 3) << 4) | (self.tver & 0xF);
        b[2..4].copy_from_slice(&self.pkey.to_be_bytes());
        b[4] = self.resv8;
        b[5..8].copy_from_slice(&(self.dest_qp & 0xFF_FFFF).to_be_bytes()[1..]);
        b[8] = ((self.ack_req as u8) << 7) | (self.resv7 & 0x7F);
        b[9..12].copy_from_slice(&(self.psn & 0xFF_FFFF).to_be_bytes()[1..]);
    }

    fn read(b: &[u8]) -> Self {
        Bth {
            opcode: b[0],
            se: b[1] & 0x80 != 0,
            mig: b[1] & 0x40 != 0,
            pad: (b[1] >> 4) & 3,
            tver: b[1] & 0xF,
            pkey: u16::from_be_bytes([b[2], b[3]]),
            resv8: b[4],
            dest_qp: u32::from_be_bytes([0, b[5], b[6], b[7]]),
            ack_req: b[8] & 0x80 != 0,
            resv7: b[8] & 0x7F,
            psn: u32::from_be_bytes([0, b[9], b[10], b[11]]),
        }
    }
}

/// A decoded frame: addressing, BTH, and the transport body (headers after the BTH and
/// the payload, without pad and ICRC). Borrowed from the input bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoceFrame<'a> {
    /// Addressing (MACs, IPs, UDP source port, ECN, TTL).
    pub addrs: FrameAddrs,
    /// Base transport header.
    pub bth: Bth,
    /// Bytes after the BTH, up to (excluding) the pad bytes and the ICRC.
    pub body: &'a [u8],
}

fn need(have: usize, need: usize) -> Result<(), WireError> {
    if have < need {
        Err(WireError::Truncated { need, have })
    } else {
        Ok(())
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

/// RFC 1071 Internet checksum of an IPv4 header.
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    let mut i = 0;
    while i + 1 < hdr.len() {
        sum += u32::from(be16(hdr, i));
        i += 2;
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// RoCEv2 invariant CRC over a complete frame without its trailer (`frame` ends where the
/// ICRC starts). Masks, as RoCEv2 defines: 8 bytes of 1s for the absent LRH, IPv4 DSCP/ECN,
/// TTL and header checksum, UDP checksum and the BTH reserved byte set to 1s.
pub fn icrc(frame: &[u8]) -> u32 {
    // One masked 48-byte prefix (LRH stand-in, IPv4, UDP, BTH), then the rest as is.
    let mut pre = [0xFFu8; 8 + IPV4_LEN + UDP_LEN + BTH_LEN];
    pre[8..].copy_from_slice(&frame[ETH_LEN..BTH_OFFSET + BTH_LEN]);
    let ip = 8;
    pre[ip + 1] = 0xFF; // DSCP + ECN
    pre[ip + 8] = 0xFF; // TTL
    pre[ip + 10] = 0xFF; // header checksum
    pre[ip + 11] = 0xFF;
    let udp = ip + IPV4_LEN;
    pre[udp + 6] = 0xFF; // UDP checksum
    pre[udp + 7] = 0xFF;
    pre[udp + UDP_LEN + 4] = 0xFF; // BTH reserved 8 bits (FECN/BECN on IB)
    let mut h = crc32fast::Hasher::new();
    h.update(&pre);
    h.update(&frame[BTH_OFFSET + BTH_LEN..]);
    h.finalize()
}

/// Decode the Ethernet/IPv4/UDP/BTH envelope and check the IPv4 checksum and the ICRC.
pub fn decode_frame(frame: &[u8]) -> Result<RoceFrame<'_>, WireError> {
    need(frame.len(), ETH_LEN)?;
    let ethertype = be16(frame, 12);
    if ethertype != ETHERTYPE_IPV4 {
        return Err(WireError::NotIpv4(ethertype));
    }
    need(frame.len(), ETH_LEN + IPV4_LEN)?;
    let ip = &frame[ETH_LEN..ETH_LEN + IPV4_LEN];
    if ip[0] != 0x45 {
        return Err(WireError::BadIpv4("version must be 4 and IHL 5 (no options)"));
    }
    if ip[9] != IPPROTO_UDP {
        return Err(WireError::BadIpv4("protocol is not UDP"));
    }
    if be16(ip, 6) & 0x3FFF != 0 {
        return Err(WireError::BadIpv4("fragmented"));
    }
    if ipv4_checksum(ip) != 0 {
        return Err(WireError::BadIpChecksum);
    }
    let total = be16(ip, 2) as usize;
    if total < IPV4_LEN + UDP_LEN {
        return Err(WireError::BadIpv4("total length too small"));
    }
    need(frame.len(), ETH_LEN + total)?;
    // Ethernet may pad short frames; everything past the IPv4 total length is ignored.
    let frame = &frame[..ETH_LEN + total];
    let udp = &frame[ETH_LEN + IPV4_LEN..BTH_OFFSET];
    let dport = be16(udp, 2);
    if dport != ROCEV2_UDP_PORT {
        return Err(WireError::NotRoce(dport));
    }
    let ulen = be16(udp, 4);
    if ulen as usize != total - IPV4_LEN {
        return Err(WireError::BadUdpLength {
            udp: ulen,
            ip: total - IPV4_LEN,
        });
    }
    need(frame.len(), BTH_OFFSET + BTH_LEN + ICRC_LEN)?;
    let split = frame.len() - ICRC_LEN;
    let carried = u32::from_le_bytes([frame[split], frame[split + 1], frame[split + 2], frame[split + 3]]);
    let computed = icrc(&frame[..split]);
    if carried != computed {
        return Err(WireError::BadIcrc { computed, carried });
    }
    let bth = Bth::read(&frame[BTH_OFFSET..BTH_OFFSET + BTH_LEN]);
    if bth.tver != 0 {
        return Err(WireError::BadTver(bth.tver));
    }
    let body_end = split - bth.pad as usize;
    if body_end < BTH_OFFSET + BTH_LEN {
        return Err(WireError::BadField("pad count exceeds body"));
    }
    let mut src_mac = [0u8; 6];
    src_mac.copy_from_slice(&frame[6..12]);
    let mut dst_mac = [0u8; 6];
    dst_mac.copy_from_slice(&frame[0..6]);
    let addrs = FrameAddrs {
        dst_mac,
        src_mac,
        src_ip: [ip[12], ip[13], ip[14], ip[15]],
        dst_ip: [ip[16], ip[17], ip[18], ip[19]],
        src_port: be16(udp, 0),
        dscp: ip[1] >> 2,
        ecn: ip[1] & 3,
        ttl: ip[8],
    };
    Ok(RoceFrame {
        addrs,
        bth,
        body: &frame[BTH_OFFSET + BTH_LEN..body_end],
    })
}

/// Write the envelope around a body that the caller has already placed at
/// `buf[BTH_OFFSET + BTH_LEN ..][..body_len]`: Ethernet, IPv4 (with checksum), UDP, BTH
/// (with the pad count filled in), pad bytes and ICRC. Returns the frame length.
pub fn finish_frame(buf: &mut [u8], addrs: &FrameAddrs, bth: &Bth, body_len: usize) -> Result<usize, WireError> {
    let pad = (4 - body_len % 4) % 4;
    let len = BTH_OFFSET + BTH_LEN + body_len + pad + ICRC_LEN;
    if buf.len() < len {
        return Err(WireError::BufferTooSmall {
            need: len,
            have: buf.len(),
        });
    }
    if len - ETH_LEN > u16::MAX as usize {
        return Err(WireError::BadField("frame longer than an IPv4 datagram"));
    }
    buf[0..6].copy_from_slice(&addrs.dst_mac);
    buf[6..12].copy_from_slice(&addrs.src_mac);
    buf[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let total = (len - ETH_LEN) as u16;
    {
        let ip = &mut buf[ETH_LEN..ETH_LEN + IPV4_LEN];
        ip[0] = 0x45;
        ip[1] = ((addrs.dscp & 0x3F) << 2) | (addrs.ecn & 3);
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip[4..6].copy_from_slice(&[0, 0]); // identification: DF is set, never fragmented
        ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
        ip[8] = addrs.ttl;
        ip[9] = IPPROTO_UDP;
        ip[10..12].copy_from_slice(&[0, 0]);
        ip[12..16].copy_from_slice(&addrs.src_ip);
        ip[16..20].copy_from_slice(&addrs.dst_ip);
        let c = ipv4_checksum(ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
    }
    {
        let udp = &mut buf[ETH_LEN + IPV4_LEN..BTH_OFFSET];
        udp[0..2].copy_from_slice(&addrs.src_port.to_be_bytes());
        udp[2..4].copy_from_slice(&ROCEV2_UDP_PORT.to_be_bytes());
        udp[4..6].copy_from_slice(&(total - IPV4_LEN as u16).to_be_bytes());
        udp[6..8].copy_from_slice(&[0, 0]); // RoCEv2 sends a zero UDP checksum
    }
    let mut b = *bth;
    b.pad = pad as u8;
    b.write(&mut buf[BTH_OFFSET..BTH_OFFSET + BTH_LEN]);
    let body_end = BTH_OFFSET + BTH_LEN + body_len;
    buf[body_end..body_end + pad].fill(0);
    let split = len - ICRC_LEN;
    let crc = icrc(&buf[..split]);
    buf[split..len].copy_from_slice(&crc.to_le_bytes());
    Ok(len)
}

/// Rewrite the ECN field of an encoded frame in place (what a switch does when it marks
/// CE), fixing the IPv4 header checksum. The ICRC is unaffected: ECN is masked.
pub fn set_ecn(frame: &mut [u8], ecn_bits: u8) -> Result<(), WireError> {
    need(frame.len(), ETH_LEN + IPV4_LEN)?;
    let ip = &mut frame[ETH_LEN..ETH_LEN + IPV4_LEN];
    ip[1] = (ip[1] & !3) | (ecn_bits & 3);
    ip[10] = 0;
    ip[11] = 0;
    let c = ipv4_checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// Recompute the IPv4 header checksum and the ICRC of a complete frame whose bytes were
/// changed in place, so that it passes [`decode_frame`]'s envelope checks and reaches the
/// protocol. For fault injection and fuzzing: forged ACKs, out-of-window PSNs, bad keys.
pub fn reseal(frame: &mut [u8]) -> Result<(), WireError> {
    need(frame.len(), FRAME_OVERHEAD)?;
    let ip = &mut frame[ETH_LEN..ETH_LEN + IPV4_LEN];
    ip[10] = 0;
    ip[11] = 0;
    let c = ipv4_checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let split = frame.len() - ICRC_LEN;
    let crc = icrc(&frame[..split]);
    frame[split..].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// Read the ECN field of a frame without decoding it.
pub fn frame_ecn(frame: &[u8]) -> Option<u8> {
    frame.get(ETH_LEN + 1).map(|b| b & 3)
}

// ---------------------------------------------------------------------------------------
// mroce headers
// ---------------------------------------------------------------------------------------

/// MRH flag: this transmission carries data already sent before (a retransmission).
pub const MRH_FLAG_RETX: u8 = 0x1;

/// AKH flag: this ACK was generated by the arrival of a PROBE.
pub const AKH_FLAG_PROBE: u8 = 0x1;
/// AKH flag: a fan-in announcement (SPEC.md §8.5): only RateHint is meant, sent to a peer
/// whether or not it sent data; the rest is the path's state, so the ACK stays well formed.
pub const AKH_FLAG_ANNOUNCE: u8 = 0x2;

/// mroce Routing Header: present in data and probe packets (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Mrh {
    /// Flags (4 bits): bit 0 = retransmission.
    pub flags: u8,
    /// Path index within the connection.
    pub path: u8,
    /// Plane the sender put the packet on.
    pub plane: u8,
    /// Per-path packet sequence number (32 bits, never reused).
    pub psn: u32,
    /// Every PSN below this on this path is acknowledged or abandoned by the sender.
    pub floor: u32,
    /// Sender timestamp (ns, low 32 bits), echoed in the ACK for RTT.
    pub ts: u32,
}

impl Mrh {
    fn write(&self, b: &mut [u8]) {
        b[0] = (MRH_VERSION << 4) | (self.flags & 0xF);
        b[1] = self.path;
        b[2] = self.plane;
        b[3] = 0;
        b[4..8].copy_from_slice(&self.psn.to_be_bytes());
        b[8..12].copy_from_slice(&self.floor.to_be_bytes());
        b[12..16].copy_from_slice(&self.ts.to_be_bytes());
    }
    fn read(b: &[u8]) -> Result<Self, WireError> {
        need(b.len(), MRH_LEN)?;
        let v = b[0] >> 4;
        if v != MRH_VERSION {
            return Err(WireError::BadVersion(v));
        }
        if b[3] != 0 {
            return Err(WireError::BadField("MRH reserved byte is not zero"));
        }
        Ok(Mrh {
            flags: b[0] & 0xF,
            path: b[1],
            plane: b[2],
            psn: be32(b, 4),
            floor: be32(b, 8),
            ts: be32(b, 12),
        })
    }
}

/// Stream Data Header: the data identity of a SEND or WRITE packet (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Sdh {
    /// Stream within the connection.
    pub stream: u16,
    /// Message sequence number within the stream.
    pub msg_seq: u32,
    /// Byte offset of this payload within the message.
    pub offset: u32,
    /// Total message length in bytes.
    pub msg_len: u32,
}

impl Sdh {
    fn write(&self, b: &mut [u8]) {
        b[0..2].copy_from_slice(&self.stream.to_be_bytes());
        b[2..4].copy_from_slice(&[0, 0]);
        b[4..8].copy_from_slice(&self.msg_seq.to_be_bytes());
        b[8..12].copy_from_slice(&self.offset.to_be_bytes());
        b[12..16].copy_from_slice(&self.msg_len.to_be_bytes());
    }
    fn read(b: &[u8]) -> Result<Self, WireError> {
        need(b.len(), SDH_LEN)?;
        if b[2] != 0 || b[3] != 0 {
            return Err(WireError::BadField("SDH reserved bytes are not zero"));
        }
        Ok(Sdh {
            stream: be16(b, 0),
            msg_seq: be32(b, 4),
            offset: be32(b, 8),
            msg_len: be32(b, 12),
        })
    }
}

/// Remote Placement Header: where a WRITE payload lands (12 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Rph {
    /// Remote virtual address of the first payload byte of this packet.
    pub va: u64,
    /// Remote key of the target memory region.
    pub rkey: u32,
}

/// Number of bytes of the SACK bitmap.
pub const SACK_BYTES: usize = crate::params::SACK_BITS / 8;

/// ACK header: per-path acknowledgement with a 256-bit SACK bitmap (56 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Akh {
    /// Path being acknowledged.
    pub path: u8,
    /// Flags ([`AKH_FLAG_PROBE`], [`AKH_FLAG_ANNOUNCE`]).
    pub flags: u8,
    /// Data packets on this path that arrived CE-marked since the previous ACK.
    pub ecn_count: u16,
    /// Data packets on this path that arrived since the previous ACK.
    pub pkt_count: u16,
    /// Receive window base: bit i of the bitmap is PSN base + i.
    pub base: u32,
    /// Cumulative ACK: every PSN below it is received or abandoned.
    pub cum: u32,
    /// Echo of the MRH timestamp of the packet that triggered this ACK.
    pub ts_echo: u32,
    /// Receiver fair-share rate hint for this connection, Mb/s (0 = no limit).
    pub rate_hint_mbps: u32,
    /// SACK bitmap words: word k covers PSN base + 32k .. base + 32k + 31; bit j of a word
    /// (LSB = 0) is PSN base + 32k + j.
    pub sack: [u32; crate::params::SACK_WORDS],
}

/// NAK syndromes.
pub mod nak {
    /// R_Key unknown, or placement outside the region, or access not permitted.
    pub const REMOTE_ACCESS: u8 = 1;
    /// SEND longer than the posted receive buffer, or inconsistent message fields.
    pub const REMOTE_INVALID: u8 = 2;
}

/// NAK header: a message could not be placed (12 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Nkh {
    /// Syndrome (see [`nak`]).
    pub syndrome: u8,
    /// Stream of the failed message.
    pub stream: u16,
    /// Message sequence number of the failed message.
    pub msg_seq: u32,
    /// Offset of the offending packet.
    pub offset: u32,
}

/// Connection-management header (CONNECT, CONNECT_ACK, DISCONNECT, DISCONNECT_ACK; 28 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Cmh {
    /// Sender's own connection id (24 bits): the peer puts it in BTH.DestQP.
    pub src_conn: u32,
    /// Initial PSN of every path in the sender's direction.
    pub isn: u32,
    /// Paths the sender will use (1..=PATHS).
    pub paths: u8,
    /// Planes of the sender's NIC (1..=MAX_PLANES).
    pub planes: u8,
    /// Maximum payload bytes per packet.
    pub mtu: u16,
    /// Streams the sender may open.
    pub streams: u16,
    /// Reason code for DISCONNECT (0 = normal).
    pub reason: u16,
    /// Sender's inbound capacity, Mb/s (for fair-share hints).
    pub rx_capacity_mbps: u32,
    /// Connection request nonce, echoed in the reply.
    pub nonce: u64,
}

/// A decoded mroce packet (the part after the BTH).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MrPacket<'a> {
    /// RDMA WRITE data.
    Write {
        /// Routing header.
        mrh: Mrh,
        /// Stream data header.
        sdh: Sdh,
        /// Placement.
        rph: Rph,
        /// Payload bytes.
        payload: &'a [u8],
    },
    /// SEND data.
    Send {
        /// Routing header.
        mrh: Mrh,
        /// Stream data header.
        sdh: Sdh,
        /// Receive sequence number (RQH): this SEND is the `rsn`-th SEND of its stream and
        /// lands in the `rsn`-th receive posted on that stream.
        rsn: u32,
        /// Payload bytes.
        payload: &'a [u8],
    },
    /// Path probe.
    Probe {
        /// Routing header.
        mrh: Mrh,
    },
    /// Per-path ACK.
    Ack(Akh),
    /// Message NAK.
    Nak(Nkh),
    /// Connection request.
    Connect(Cmh),
    /// Connection accept.
    ConnectAck(Cmh),
    /// Disconnect request.
    Disconnect(Cmh),
    /// Disconnect confirmation.
    DisconnectAck(Cmh),
}

/// Decode the body of an mroce frame according to its BTH opcode.
pub fn decode_mroce<'a>(opcode: u8, body: &'a [u8]) -> Result<MrPacket<'a>, WireError> {
    use opcode::*;
    match opcode {
        MR_WRITE => {
            let mrh = Mrh::read(body)?;
            need(body.len(), MRH_LEN + SDH_LEN + RPH_LEN)?;
            let sdh = Sdh::read(&body[MRH_LEN..])?;
            let r = &body[MRH_LEN + SDH_LEN..];
            let rph = Rph {
                va: be64(r, 0),
                rkey: be32(r, 8),
            };
            let payload = &body[MRH_LEN + SDH_LEN + RPH_LEN..];
            check_payload(&sdh, payload.len())?;
            Ok(MrPacket::Write { mrh, sdh, rph, payload })
        }
        MR_SEND => {
            let mrh = Mrh::read(body)?;
            let sdh = Sdh::read(&body[MRH_LEN..])?;
            need(body.len(), MRH_LEN + SDH_LEN + RQH_LEN)?;
            let rsn = be32(body, MRH_LEN + SDH_LEN);
            let payload = &body[MRH_LEN + SDH_LEN + RQH_LEN..];
            check_payload(&sdh, payload.len())?;
            Ok(MrPacket::Send { mrh, sdh, rsn, payload })
        }
        MR_PROBE => {
            let mrh = Mrh::read(body)?;
            if body.len() != MRH_LEN {
                return Err(WireError::BadField("probe carries no payload"));
            }
            Ok(MrPacket::Probe { mrh })
        }
        MR_ACK => {
            need(body.len(), AKH_LEN)?;
            if body.len() != AKH_LEN {
                return Err(WireError::BadField("ACK length"));
            }
            let mut sack = [0u32; crate::params::SACK_WORDS];
            for (k, w) in sack.iter_mut().enumerate() {
                *w = be32(body, 24 + 4 * k);
            }
            if body[6] != 0 || body[7] != 0 {
                return Err(WireError::BadField("AKH reserved bytes are not zero"));
            }
            Ok(MrPacket::Ack(Akh {
                path: body[0],
                flags: body[1],
                ecn_count: be16(body, 2),
                pkt_count: be16(body, 4),
                base: be32(body, 8),
                cum: be32(body, 12),
                ts_echo: be32(body, 16),
                rate_hint_mbps: be32(body, 20),
                sack,
            }))
        }
        MR_NAK => {
            need(body.len(), NKH_LEN)?;
            if body.len() != NKH_LEN || body[1] != 0 {
                return Err(WireError::BadField("NAK length or reserved byte"));
            }
            Ok(MrPacket::Nak(Nkh {
                syndrome: body[0],
                stream: be16(body, 2),
                msg_seq: be32(body, 4),
                offset: be32(body, 8),
            }))
        }
        MR_CONNECT | MR_CONNECT_ACK | MR_DISCONNECT | MR_DISCONNECT_ACK => {
            need(body.len(), CMH_LEN)?;
            if body.len() != CMH_LEN {
                return Err(WireError::BadField("CMH length"));
            }
            if body[0] != 0 {
                return Err(WireError::BadField("CMH reserved byte is not zero"));
            }
            let c = Cmh {
                src_conn: be32(body, 0),
                isn: be32(body, 4),
                paths: body[8],
                planes: body[9],
                mtu: be16(body, 10),
                streams: be16(body, 12),
                reason: be16(body, 14),
                rx_capacity_mbps: be32(body, 16),
                nonce: be64(body, 20),
            };
            Ok(match opcode {
                MR_CONNECT => MrPacket::Connect(c),
                MR_CONNECT_ACK => MrPacket::ConnectAck(c),
                MR_DISCONNECT => MrPacket::Disconnect(c),
                _ => MrPacket::DisconnectAck(c),
            })
        }
        other => Err(WireError::UnknownOpcode(other)),
    }
}

fn check_payload(sdh: &Sdh, len: usize) -> Result<(), WireError> {
    if len == 0 && sdh.msg_len != 0 {
        return Err(WireError::BadField("empty payload in a non-empty message"));
    }
    if u64::from(sdh.offset) + len as u64 > u64::from(sdh.msg_len) {
        return Err(WireError::BadField("payload extends past the message length"));
    }
    Ok(())
}

/// Body bytes an mroce packet needs after the BTH (payload excluded).
pub fn mroce_header_len(opcode: u8) -> Option<usize> {
    use opcode::*;
    Some(match opcode {
        MR_WRITE => MRH_LEN + SDH_LEN + RPH_LEN,
        MR_SEND => MRH_LEN + SDH_LEN + RQH_LEN,
        MR_PROBE => MRH_LEN,
        MR_ACK => AKH_LEN,
        MR_NAK => NKH_LEN,
        MR_CONNECT | MR_CONNECT_ACK | MR_DISCONNECT | MR_DISCONNECT_ACK => CMH_LEN,
        _ => return None,
    })
}

/// Write the headers of an mroce packet (after the BTH) into `b`; the payload, if any,
/// follows at `b[mroce_header_len(opcode)..]` and is written by the caller. Returns the
/// header length.
pub fn write_mroce_headers(b: &mut [u8], pkt: &MrPacket<'_>) -> Result<usize, WireError> {
    let n = mroce_header_len(packet_opcode(pkt)).unwrap_or(0);
    if b.len() < n {
        return Err(WireError::BufferTooSmall { need: n, have: b.len() });
    }
    match pkt {
        MrPacket::Write { mrh, sdh, rph, .. } => {
            mrh.write(b);
            sdh.write(&mut b[MRH_LEN..]);
            let r = &mut b[MRH_LEN + SDH_LEN..];
            r[0..8].copy_from_slice(&rph.va.to_be_bytes());
            r[8..12].copy_from_slice(&rph.rkey.to_be_bytes());
        }
        MrPacket::Send { mrh, sdh, rsn, .. } => {
            mrh.write(b);
            sdh.write(&mut b[MRH_LEN..]);
            b[MRH_LEN + SDH_LEN..MRH_LEN + SDH_LEN + RQH_LEN].copy_from_slice(&rsn.to_be_bytes());
        }
        MrPacket::Probe { mrh } => mrh.write(b),
        MrPacket::Ack(a) => {
            b[0] = a.path;
            b[1] = a.flags;
            b[2..4].copy_from_slice(&a.ecn_count.to_be_bytes());
            b[4..6].copy_from_slice(&a.pkt_count.to_be_bytes());
            b[6..8].copy_from_slice(&[0, 0]);
            b[8..12].copy_from_slice(&a.base.to_be_bytes());
            b[12..16].copy_from_slice(&a.cum.to_be_bytes());
            b[16..20].copy_from_slice(&a.ts_echo.to_be_bytes());
            b[20..24].copy_from_slice(&a.rate_hint_mbps.to_be_bytes());
            for (k, w) in a.sack.iter().enumerate() {
                b[24 + 4 * k..28 + 4 * k].copy_from_slice(&w.to_be_bytes());
            }
        }
        MrPacket::Nak(k) => {
            b[0] = k.syndrome;
            b[1] = 0;
            b[2..4].copy_from_slice(&k.stream.to_be_bytes());
            b[4..8].copy_from_slice(&k.msg_seq.to_be_bytes());
            b[8..12].copy_from_slice(&k.offset.to_be_bytes());
        }
        MrPacket::Connect(c) | MrPacket::ConnectAck(c) | MrPacket::Disconnect(c) | MrPacket::DisconnectAck(c) => {
            b[0..4].copy_from_slice(&(c.src_conn & 0xFF_FFFF).to_be_bytes());
            b[4..8].copy_from_slice(&c.isn.to_be_bytes());
            b[8] = c.paths;
            b[9] = c.planes;
            b[10..12].copy_from_slice(&c.mtu.to_be_bytes());
            b[12..14].copy_from_slice(&c.streams.to_be_bytes());
            b[14..16].copy_from_slice(&c.reason.to_be_bytes());
            b[16..20].copy_from_slice(&c.rx_capacity_mbps.to_be_bytes());
            b[20..28].copy_from_slice(&c.nonce.to_be_bytes());
        }
    }
    Ok(n)
}

/// The BTH opcode of an mroce packet.
pub fn packet_opcode(pkt: &MrPacket<'_>) -> u8 {
    use opcode::*;
    match pkt {
        MrPacket::Write { .. } => MR_WRITE,
        MrPacket::Send { .. } => MR_SEND,
        MrPacket::Probe { .. } => MR_PROBE,
        MrPacket::Ack(_) => MR_ACK,
        MrPacket::Nak(_) => MR_NAK,
        MrPacket::Connect(_) => MR_CONNECT,
        MrPacket::ConnectAck(_) => MR_CONNECT_ACK,
        MrPacket::Disconnect(_) => MR_DISCONNECT,
        MrPacket::DisconnectAck(_) => MR_DISCONNECT_ACK,
    }
}

/// Encode a complete mroce frame (headers, payload, pad, ICRC). Returns its length.
pub fn encode_mroce(buf: &mut [u8], addrs: &FrameAddrs, bth: &Bth, pkt: &MrPacket<'_>) -> Result<usize, WireError> {
    let start = BTH_OFFSET + BTH_LEN;
    if buf.len() < start {
        return Err(WireError::BufferTooSmall {
            need: start,
            have: buf.len(),
        });
    }
    let hl = write_mroce_headers(&mut buf[start..], pkt)?;
    let payload: &[u8] = match pkt {
        MrPacket::Write { payload, .. } | MrPacket::Send { payload, .. } => payload,
        _ => &[],
    };
    let end = start + hl + payload.len();
    if buf.len() < end {
        return Err(WireError::BufferTooSmall {
            need: end + ICRC_LEN,
            have: buf.len(),
        });
    }
    buf[start + hl..end].copy_from_slice(payload);
    let mut b = *bth;
    b.opcode = packet_opcode(pkt);
    finish_frame(buf, addrs, &b, hl + payload.len())
}

/// Decode a complete mroce frame.
pub fn decode_mroce_frame(frame: &[u8]) -> Result<(RoceFrame<'_>, MrPacket<'_>), WireError> {
    let f = decode_frame(frame)?;
    let p = decode_mroce(f.bth.opcode, f.body)?;
    Ok((f, p))
}
