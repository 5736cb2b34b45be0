//! Mapping between model frames and UDP datagrams.
//!
//! A model frame is Ethernet / IPv4 / UDP 4791 / BTH / ... / ICRC. Over a socket only the
//! UDP payload travels (`frame[BTH_OFFSET..]`: BTH to ICRC). The receiver rebuilds the
//! Ethernet, IPv4 and UDP headers in front of it, in place, exactly as the sender's frame had
//! them, so the ICRC (which covers the unmasked IPv4/UDP fields: version/IHL, total length,
//! identification, flags, protocol, addresses, ports, UDP length) checks out:
//!
//! | field | rebuilt from |
//! |---|---|
//! | MACs | [`mac_of`] the two IPv4 addresses (the convention both ends use; not in the ICRC) |
//! | IPv4 TOS (DSCP/ECN) | the datagram's TOS (`IP_RECVTOS`; the sender sets it per datagram) |
//! | IPv4 TTL | the datagram's TTL (`IP_RECVTTL`), else 64 |
//! | total length, UDP length | the datagram length |
//! | identification 0, DF, protocol 17 | constants, as `wire::finish_frame` writes them |
//! | source IPv4 / UDP source port | the datagram's source address: the sender bound one socket per source port |
//! | destination IPv4 | the local address of the socket (one per plane) |
//! | UDP destination port | 4791 (the frame's port, whatever service port the sockets use) |
//! | IPv4 header checksum | recomputed; UDP checksum 0 (as RoCEv2 sends it) |

use std::net::Ipv4Addr;

use mroce_model::params::{MAX_PLANES, ROCEV2_UDP_PORT};
use mroce_model::transport::NicAddr;
use mroce_model::wire::{self, BTH_OFFSET, ETHERTYPE_IPV4, ETH_LEN, IPPROTO_UDP, IPV4_LEN};

/// TTL used when the kernel does not report one.
pub const DEFAULT_TTL: u8 = 64;

/// Locally administered MAC derived from an IPv4 address: `02:00:a:b:c:d`.
pub fn mac_of(ip: Ipv4Addr) -> [u8; 6] {
    let o = ip.octets();
    [0x02, 0x00, o[0], o[1], o[2], o[3]]
}

/// Address of plane `i` of a NIC whose plane-0 address is `base`: the third octet plus `i`
/// (the model's `NicAddr::with_planes` convention, for any base). Both ends assume it for
/// each other.
pub fn plane_ip(base: Ipv4Addr, plane: u8) -> Ipv4Addr {
    let o = base.octets();
    Ipv4Addr::new(o[0], o[1], o[2].wrapping_add(plane), o[3])
}

/// The model address of a NIC with plane-0 address `base` and `planes` planes.
pub fn nic_addr(base: Ipv4Addr, planes: u8) -> NicAddr {
    let planes = planes.clamp(1, MAX_PLANES as u8);
    let mut ips = [[0u8; 4]; MAX_PLANES];
    for (i, ip) in ips.iter_mut().enumerate() {
        *ip = plane_ip(base, i as u8).octets();
    }
    NicAddr {
        mac: mac_of(base),
        ips,
        planes,
    }
}

/// UDP payload bytes of an mroce WRITE data datagram carrying `payload` bytes (BTH, headers,
/// payload, pad, ICRC): the datagram size a raw-UDP baseline should use.
pub fn write_datagram_len(payload: usize) -> usize {
    wire::WRITE_HEADERS - BTH_OFFSET + payload.next_multiple_of(4)
}

/// Addressing of a frame to transmit, read from its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxHeader {
    /// Source IPv4 (a local plane address).
    pub src_ip: Ipv4Addr,
    /// Destination IPv4.
    pub dst_ip: Ipv4Addr,
    /// UDP source port: the path's entropy.
    pub src_port: u16,
    /// IPv4 TOS byte.
    pub tos: u8,
    /// IPv4 TTL.
    pub ttl: u8,
}

/// Read the addressing of an outgoing frame; `None` if it is not an IPv4/UDP frame.
pub fn tx_header(frame: &[u8]) -> Option<TxHeader> {
    if frame.len() < BTH_OFFSET || frame[12..14] != ETHERTYPE_IPV4.to_be_bytes() {
        return None;
    }
    let ip = &frame[ETH_LEN..ETH_LEN + IPV4_LEN];
    if ip[9] != IPPROTO_UDP {
        return None;
    }
    let udp = &frame[ETH_LEN + IPV4_LEN..BTH_OFFSET];
    Some(TxHeader {
        src_ip: Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
        dst_ip: Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]),
        src_port: u16::from_be_bytes([udp[0], udp[1]]),
        tos: ip[1],
        ttl: ip[8],
    })
}

/// Everything needed to rebuild the headers of a received datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxHeader {
    /// Sender's IPv4 address.
    pub src_ip: Ipv4Addr,
    /// Sender's UDP source port.
    pub src_port: u16,
    /// Local address the datagram arrived on.
    pub dst_ip: Ipv4Addr,
    /// IPv4 TOS byte.
    pub tos: u8,
    /// IPv4 TTL.
    pub ttl: u8,
}

/// Rebuild the Ethernet/IPv4/UDP headers in `slot[..BTH_OFFSET]` in front of a datagram of
/// `len` bytes at `slot[BTH_OFFSET..]`. Returns the frame length (`BTH_OFFSET + len`), or
/// `None` if the frame would exceed an IPv4 datagram.
pub fn rebuild(slot: &mut [u8], len: usize, h: &RxHeader) -> Option<usize> {
    let total = IPV4_LEN + wire::UDP_LEN + len;
    if total > u16::MAX as usize || slot.len() < BTH_OFFSET + len {
        return None;
    }
    slot[0..6].copy_from_slice(&mac_of(h.dst_ip));
    slot[6..12].copy_from_slice(&mac_of(h.src_ip));
    slot[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    {
        let ip = &mut slot[ETH_LEN..ETH_LEN + IPV4_LEN];
        ip[0] = 0x45;
        ip[1] = h.tos;
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&[0, 0]);
        ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
        ip[8] = h.ttl;
        ip[9] = IPPROTO_UDP;
        ip[10..12].copy_from_slice(&[0, 0]);
        ip[12..16].copy_from_slice(&h.src_ip.octets());
        ip[16..20].copy_from_slice(&h.dst_ip.octets());
        let c = wire::ipv4_checksum(ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
    }
    let udp = &mut slot[ETH_LEN + IPV4_LEN..BTH_OFFSET];
    udp[0..2].copy_from_slice(&h.src_port.to_be_bytes());
    udp[2..4].copy_from_slice(&ROCEV2_UDP_PORT.to_be_bytes());
    udp[4..6].copy_from_slice(&((wire::UDP_LEN + len) as u16).to_be_bytes());
    udp[6..8].copy_from_slice(&[0, 0]);
    Some(BTH_OFFSET + len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mroce_model::wire::{Bth, FrameAddrs, MrPacket};

    #[test]
    fn rebuilt_frame_equals_the_sent_frame() {
        let a = Ipv4Addr::new(127, 0, 0, 2);
        let b = Ipv4Addr::new(127, 0, 0, 1);
        let addrs = FrameAddrs {
            dst_mac: mac_of(b),
            src_mac: mac_of(a),
            src_ip: a.octets(),
            dst_ip: b.octets(),
            src_port: 0xC123,
            dscp: 26,
            ecn: wire::ecn::ECT0,
            ttl: 64,
        };
        let pkt = MrPacket::Ack(wire::Akh {
            path: 3,
            base: 64,
            cum: 70,
            sack: [0x5A; 8],
            ..Default::default()
        });
        let mut sent = vec![0u8; 1024];
        let n = wire::encode_mroce(&mut sent, &addrs, &Bth::new(0, 5, 9), &pkt).unwrap();
        let h = tx_header(&sent[..n]).unwrap();
        assert_eq!(
            (h.src_ip, h.dst_ip, h.src_port, h.tos, h.ttl),
            (a, b, 0xC123, 26 << 2 | 2, 64)
        );
        let mut slot = vec![0xEEu8; 2048];
        slot[BTH_OFFSET..n].copy_from_slice(&sent[BTH_OFFSET..n]);
        let rh = RxHeader {
            src_ip: a,
            src_port: 0xC123,
            dst_ip: b,
            tos: h.tos,
            ttl: 64,
        };
        let m = rebuild(&mut slot, n - BTH_OFFSET, &rh).unwrap();
        assert_eq!(&slot[..m], &sent[..n]);
        assert!(wire::decode_mroce_frame(&slot[..m]).is_ok());
        // TOS and TTL are masked by the ICRC: a network that changes them breaks nothing.
        let rh2 = RxHeader {
            tos: 0x03,
            ttl: 1,
            ..rh
        };
        let m = rebuild(&mut slot, n - BTH_OFFSET, &rh2).unwrap();
        assert!(wire::decode_mroce_frame(&slot[..m]).is_ok());
        // The source port is not: a datagram from another port fails the ICRC.
        let rh3 = RxHeader { src_port: 0xC124, ..rh };
        let m = rebuild(&mut slot, n - BTH_OFFSET, &rh3).unwrap();
        assert!(matches!(
            wire::decode_frame(&slot[..m]),
            Err(wire::WireError::BadIcrc { .. })
        ));
    }

    #[test]
    fn plane_addresses() {
        let n = nic_addr(Ipv4Addr::new(10, 77, 0, 2), 3);
        assert_eq!(n.planes, 3);
        assert_eq!(n.ips[0], [10, 77, 0, 2]);
        assert_eq!(n.ips[2], [10, 77, 2, 2]);
        assert_eq!(
            n,
            NicAddr::with_planes(mac_of(Ipv4Addr::new(10, 77, 0, 2)), [10, 77, 0, 2], 3)
        );
    }
}
