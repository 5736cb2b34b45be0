//! §3, §4 and §9.1: the receive checks of §3.8, each with its decode error and counter. Each
//! case opens a connection, hands in one bad frame, requires the IUT to stay silent and to
//! count exactly `rx_frames`, `bad_frames` and the error's counter (every other error counter
//! unchanged), then checks that the connection still works (a PROBE is answered).

use mroce_model::wire::{self, opcode, Akh, Bth, MrPacket, Nkh};

use super::{case, fix_icrc, fix_ip_checksum, with_udp_payload, Case};
use crate::adapter::Need;
use crate::harness::{Data, Peer, Tester, R};
use crate::{check_eq, fail};

const RAW: &[Need] = &[Need::RawEnvelope];

/// The catalogue of this area.
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "C-3.2-01",
            "§3.2",
            "EtherType other than 0x0800 (VLAN tag) is dropped: NotIpv4, malformed",
            RAW,
            ethertype,
        ),
        case(
            "C-3.3-01",
            "§3.3",
            "IPv4 header with options (IHL 6) is dropped: BadIpv4, malformed",
            RAW,
            ip_options,
        ),
        case(
            "C-3.3-02",
            "§3.3",
            "IPv4 fragment (MF set) is dropped: BadIpv4, malformed",
            RAW,
            ip_fragment,
        ),
        case(
            "C-3.3-03",
            "§3.3",
            "Wrong IPv4 header checksum is dropped: BadIpChecksum, malformed",
            RAW,
            ip_checksum,
        ),
        case(
            "C-3.3-04",
            "§3.3",
            "IPv4 protocol other than UDP is dropped: BadIpv4, malformed",
            RAW,
            ip_protocol,
        ),
        case(
            "C-3.3-05",
            "§3.3",
            "IPv4 total length below 28 is dropped: BadIpv4, malformed",
            RAW,
            ip_total_small,
        ),
        case(
            "C-3.8-01",
            "§3.8",
            "Frame shorter than 14 + IPv4 total length is dropped: Truncated",
            RAW,
            ip_total_large,
        ),
        case(
            "C-3.2-02",
            "§3.2",
            "Ethernet padding after the IPv4 datagram is ignored",
            RAW,
            eth_padding,
        ),
        case(
            "C-3.4-01",
            "§3.4",
            "UDP destination port other than 4791 is dropped: NotRoce, malformed",
            RAW,
            udp_port,
        ),
        case(
            "C-3.4-02",
            "§3.4",
            "UDP length inconsistent with IPv4 is dropped: BadUdpLength, malformed",
            RAW,
            udp_length,
        ),
        case(
            "C-3.7-01",
            "§3.7",
            "ICRC mismatch is dropped and counted in bad_icrc",
            &[],
            bad_icrc,
        ),
        case(
            "C-3.7-02",
            "§3.7",
            "DSCP, ECN, TTL, IPv4 checksum, UDP checksum and BTH byte 4 are outside the ICRC",
            RAW,
            icrc_masks,
        ),
        case(
            "C-3.5-01",
            "§3.5",
            "BTH TVer other than 0 is dropped: BadTver, malformed",
            &[],
            bad_tver,
        ),
        case(
            "C-3.6-01",
            "§3.6",
            "PadCnt larger than the body is dropped: BadField, malformed",
            &[],
            pad_exceeds,
        ),
        case(
            "C-3.8-02",
            "§3.8",
            "UDP payload shorter than BTH + ICRC is dropped: Truncated",
            &[],
            short_payload,
        ),
        case(
            "C-3.8-03",
            "§3.8",
            "Checks run in order: bad ICRC and bad TVer count only bad_icrc",
            &[],
            order_icrc_first,
        ),
        case(
            "C-3.8-04",
            "§3.8",
            "WRITE body shorter than MRH + SDH + RPH is dropped: Truncated",
            &[],
            write_truncated,
        ),
        case(
            "C-5.1-01",
            "§5.1",
            "Undefined opcode 0xC5 is dropped and counted in unknown_opcode",
            &[],
            opcode_c5,
        ),
        case(
            "C-5.1-02",
            "§5.1",
            "IBTA RC opcode (SEND Only 0x04) is dropped as unknown_opcode",
            &[],
            opcode_rc,
        ),
        case(
            "C-4.1-01",
            "§4.1",
            "MRH version 2 is dropped: BadVersion, malformed",
            &[],
            mrh_version,
        ),
        case(
            "C-4.1-02",
            "§4.1",
            "Non-zero MRH byte 3 is dropped: BadField, malformed",
            &[],
            mrh_reserved,
        ),
        case(
            "C-4.2-01",
            "§4.2",
            "Non-zero SDH bytes 2-3 are dropped: BadField, malformed",
            &[],
            sdh_reserved,
        ),
        case(
            "C-4.2-02",
            "§4.2",
            "Offset + payload beyond MsgLen is dropped: BadField, malformed",
            &[],
            sdh_overrun,
        ),
        case(
            "C-4.2-03",
            "§4.2",
            "Empty payload with MsgLen > 0 is dropped: BadField, malformed",
            &[],
            sdh_empty,
        ),
        case(
            "C-5.6-01",
            "§5.6",
            "PROBE carrying a payload is dropped: BadField, malformed",
            &[],
            probe_payload,
        ),
        case(
            "C-4.4-01",
            "§4.4",
            "ACK body shorter than the AKH is dropped: Truncated",
            &[],
            ack_short,
        ),
        case(
            "C-4.4-02",
            "§4.4",
            "ACK body longer than the AKH is dropped: BadField, malformed",
            &[],
            ack_long,
        ),
        case(
            "C-4.4-03",
            "§4.4",
            "Non-zero AKH bytes 6-7 are dropped: BadField, malformed",
            &[],
            akh_reserved,
        ),
        case(
            "C-4.5-01",
            "§4.5",
            "Non-zero NKH byte 1 is dropped: BadField, malformed",
            &[],
            nkh_reserved,
        ),
        case(
            "C-4.6-01",
            "§4.6",
            "Non-zero CMH byte 0 is dropped: BadField, malformed",
            &[],
            cmh_reserved,
        ),
    ]
}

/// Open a one-path connection and a region the tester may write.
fn setup(t: &mut Tester<'_>) -> R<(Peer, mroce_model::memory::MrKey)> {
    let p = t.open(1, 4096)?;
    let k = t.region(4096, true, |_| 0)?;
    Ok((p, k))
}

/// A valid single-chunk WRITE frame of 6 bytes on path 0.
fn good_write(t: &Tester<'_>, p: &mut Peer, k: mroce_model::memory::MrKey) -> (u8, Vec<u8>) {
    t.data_frame(p, &Data::write(0, 0, 0, k.va, k.rkey, b"mroce!"))
}

/// Hand in `f`, then require silence, the counter deltas, no placement, and a live connection.
fn dropped(t: &mut Tester<'_>, p: &mut Peer, plane: u8, f: &[u8], counter: &str) -> R {
    let before = t.counters();
    t.send(plane, f)?;
    t.expect_silence("the frame must be dropped")?;
    let mut d = vec![
        ("rx_frames", 1),
        ("bad_frames", 1),
        ("rx_data", 0),
        ("rx_acks", 0),
        ("bytes_placed", 0),
    ];
    d.push((counter, 1));
    t.expect_counters(&before, &d)?;
    check_eq!("completions after a dropped frame", t.completions()?.len(), 0);
    alive(t, p)
}

/// The connection still answers a PROBE.
fn alive(t: &mut Tester<'_>, p: &mut Peer) -> R {
    t.probe(p, 0, 77)?;
    let (_, a) = t.expect_ack("ACK of a PROBE after the bad frame")?;
    check_eq!("ACK flags (PROBE)", a.flags, 1);
    Ok(())
}

fn ethertype(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, f) = good_write(t, &mut p, k);
    let mut g = f[..12].to_vec();
    g.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]); // 802.1Q tag, VLAN 5
    g.extend_from_slice(&f[12..]);
    dropped(t, &mut p, plane, &g, "malformed")
}

fn ip_options(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[14] = 0x46;
    fix_ip_checksum(&mut f);
    dropped(t, &mut p, plane, &f, "malformed")
}

fn ip_fragment(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[20] = 0x20; // MF
    fix_ip_checksum(&mut f);
    dropped(t, &mut p, plane, &f, "malformed")
}

fn ip_checksum(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[25] ^= 0x01;
    dropped(t, &mut p, plane, &f, "malformed")
}

fn ip_protocol(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[23] = 6;
    fix_ip_checksum(&mut f);
    dropped(t, &mut p, plane, &f, "malformed")
}

fn ip_total_small(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[16..18].copy_from_slice(&27u16.to_be_bytes());
    fix_ip_checksum(&mut f);
    dropped(t, &mut p, plane, &f, "malformed")
}

fn ip_total_large(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, f) = good_write(t, &mut p, k);
    dropped(t, &mut p, plane, &f[..f.len() - 4], "truncated")
}

fn eth_padding(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f.extend_from_slice(&[0xEE; 10]);
    let before = t.counters();
    t.send(plane, &f)?;
    let (_, a) = t.expect_ack("ACK of the padded WRITE")?;
    check_eq!("SACK word 0 (the WRITE's PSN recorded)", a.sack[0], 1);
    t.expect_counters(&before, &[("rx_frames", 1), ("rx_data", 1), ("bytes_placed", 6)])?;
    check_eq!("placed bytes", t.read(k, 0, 6)?, b"mroce!".to_vec());
    Ok(())
}

fn udp_port(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[36..38].copy_from_slice(&4792u16.to_be_bytes());
    dropped(t, &mut p, plane, &f, "malformed")
}

fn udp_length(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    let l = u16::from_be_bytes([f[38], f[39]]) - 4;
    f[38..40].copy_from_slice(&l.to_be_bytes());
    dropped(t, &mut p, plane, &f, "malformed")
}

fn bad_icrc(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    let n = f.len();
    f[n - 8] ^= 0x20; // a payload byte
    dropped(t, &mut p, plane, &f, "bad_icrc")?;
    check_eq!("memory after a bad-ICRC WRITE", t.read(k, 0, 6)?, vec![0u8; 6]);
    Ok(())
}

fn icrc_masks(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[15] = (46 << 2) | 1; // DSCP 46, ECT(1)
    f[22] = 3; // TTL
    fix_ip_checksum(&mut f);
    f[40] = 0xAB; // UDP checksum (not verified)
    f[41] = 0xCD;
    f[46] = 0x5A; // BTH reserved byte (masked)
    let before = t.counters();
    t.send(plane, &f)?;
    let (_, a) = t.expect_ack("ACK of the re-marked WRITE")?;
    check_eq!("SACK word 0", a.sack[0], 1);
    t.expect_counters(
        &before,
        &[
            ("rx_frames", 1),
            ("rx_data", 1),
            ("bytes_placed", 6),
            ("ce_received", 0),
        ],
    )?;
    Ok(())
}

fn bad_tver(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[43] |= 0x01;
    fix_icrc(&mut f);
    dropped(t, &mut p, plane, &f, "malformed")
}

/// A frame from a hand-made UDP payload (BTH, body, pad), with a valid ICRC.
fn raw_frame(t: &Tester<'_>, p: &Peer, opcode: u8, pad: u8, body: &[u8]) -> Vec<u8> {
    let mut bth = Bth::new(opcode, p.iut_conn, 0);
    bth.pad = pad;
    let mut u = vec![opcode, pad << 4, 0xFF, 0xFF, 0];
    u.extend_from_slice(&p.iut_conn.to_be_bytes()[1..]);
    u.extend_from_slice(&[0, 0, 0, 0]);
    u.extend_from_slice(body);
    u.extend_from_slice(&[0; 4]);
    let base = Tester::encode(&t.addrs(0, 0xC000, 48), &bth, &MrPacket::Nak(Nkh::default()));
    with_udp_payload(&base, &u, true)
}

fn pad_exceeds(t: &mut Tester<'_>) -> R {
    let (mut p, _) = setup(t)?;
    let f = raw_frame(t, &p, opcode::MR_NAK, 3, &[0, 0]);
    dropped(t, &mut p, 0, &f, "malformed")
}

fn short_payload(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, f) = good_write(t, &mut p, k);
    let g = with_udp_payload(&f, &f[42..52], false);
    dropped(t, &mut p, plane, &g, "truncated")
}

fn order_icrc_first(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[43] |= 0x01; // TVer 1, ICRC not fixed
    dropped(t, &mut p, plane, &f, "bad_icrc")
}

fn write_truncated(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, f) = good_write(t, &mut p, k);
    // BTH (pad 0) + MRH + SDH only: 32 of the 44 header bytes.
    let mut u = f[42..42 + 12 + 32].to_vec();
    u[1] &= !0x30;
    u.extend_from_slice(&[0; 4]);
    let g = with_udp_payload(&f, &u, true);
    dropped(t, &mut p, plane, &g, "truncated")
}

fn opcode_c5(t: &mut Tester<'_>) -> R {
    let (mut p, _) = setup(t)?;
    let f = raw_frame(t, &p, 0xC5, 0, &[0; 16]);
    dropped(t, &mut p, 0, &f, "unknown_opcode")
}

fn opcode_rc(t: &mut Tester<'_>) -> R {
    let (mut p, _) = setup(t)?;
    let f = raw_frame(t, &p, opcode::RC_SEND_ONLY, 0, b"RoCEv2 baseline!");
    dropped(t, &mut p, 0, &f, "unknown_opcode")
}

fn mrh_version(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[54] = 0x20;
    fix_icrc(&mut f);
    dropped(t, &mut p, plane, &f, "malformed")
}

fn mrh_reserved(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[57] = 0x80;
    fix_icrc(&mut f);
    dropped(t, &mut p, plane, &f, "malformed")
}

fn sdh_reserved(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let (plane, mut f) = good_write(t, &mut p, k);
    f[73] = 0x01;
    fix_icrc(&mut f);
    dropped(t, &mut p, plane, &f, "malformed")
}

fn sdh_overrun(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let d = Data {
        msg_len: Some(5),
        ..Data::write(0, 0, 0, k.va, k.rkey, b"mroce!")
    };
    let (plane, f) = t.data_frame(&mut p, &d);
    dropped(t, &mut p, plane, &f, "malformed")
}

fn sdh_empty(t: &mut Tester<'_>) -> R {
    let (mut p, k) = setup(t)?;
    let d = Data {
        msg_len: Some(16),
        ..Data::write(0, 0, 0, k.va, k.rkey, b"")
    };
    let (plane, f) = t.data_frame(&mut p, &d);
    dropped(t, &mut p, plane, &f, "malformed")
}

fn probe_payload(t: &mut Tester<'_>) -> R {
    let (mut p, _) = setup(t)?;
    let (plane, f) = t.probe_frame(&mut p, 0, 5);
    let mut u = f[42..f.len() - 4].to_vec();
    u.extend_from_slice(b"junk");
    u.extend_from_slice(&[0; 4]);
    let g = with_udp_payload(&f, &u, true);
    dropped(t, &mut p, plane, &g, "malformed")
}

fn ack_body(t: &Tester<'_>, p: &Peer, len: usize) -> Vec<u8> {
    let mut body = vec![0u8; 56];
    body[8..12].copy_from_slice(&p.rx_base[0].to_be_bytes());
    body[12..16].copy_from_slice(&p.rx_base[0].to_be_bytes());
    body.resize(len, 0);
    raw_frame(t, p, opcode::MR_ACK, 0, &body)
}

fn ack_short(t: &mut Tester<'_>) -> R {
    let (mut p, _) = setup(t)?;
    let f = ack_body(t, &p, 40);
    dropped(t, &mut p, 0, &f, "truncated")
}

fn ack_long(t: &mut Tester<'_>) -> R {
    let (mut p, _) = setup(t)?;
    let f = ack_body(t, &p, 60);
    dropped(t, &mut p, 0, &f, "malformed")
}

fn akh_reserved(t: &mut Tester<'_>) -> R {
    let (mut p, _) = setup(t)?;
    let akh = Akh {
        path: 0,
        base: p.rx_base[0],
        cum: p.rx_base[0],
        ..Default::default()
    };
    let mut f = t.ack_raw(&p, &akh, 0, 0xC000);
    f[61] = 0x02;
    fix_icrc(&mut f);
    dropped(t, &mut p, 0, &f, "malformed")
}

fn nkh_reserved(t: &mut Tester<'_>) -> R {
    let (mut p, _) = setup(t)?;
    let nkh = Nkh {
        syndrome: 1,
        stream: 0,
        msg_seq: 0,
        offset: 0,
    };
    let mut f = Tester::encode(
        &t.addrs(0, 0xC000, 48),
        &Bth::new(0, p.iut_conn, 0),
        &MrPacket::Nak(nkh),
    );
    f[55] = 0x01;
    fix_icrc(&mut f);
    dropped(t, &mut p, 0, &f, "malformed")
}

fn cmh_reserved(t: &mut Tester<'_>) -> R {
    let (mut p, _) = setup(t)?;
    let mut cmh = Tester::connect_cmh(1, 2, 4096);
    cmh.src_conn = 0x777;
    cmh.nonce = 42;
    let mut f = t.cm_frame(opcode::MR_CONNECT, 0, &cmh, 0);
    f[54] = 0x01;
    fix_icrc(&mut f);
    if wire::decode_mroce_frame(&f).is_ok() {
        fail!("test frame unexpectedly valid");
    }
    dropped(t, &mut p, 0, &f, "malformed")
}
