//! §5.11: the golden frames of SPEC.md, taken from its hex dumps. With the scenario addresses
//! (the model target) the CONNECT goes in and the ACK comes out byte for byte; on targets with
//! other addresses the frames are re-addressed (same fields, new Ethernet/IPv4 addresses and
//! ICRC). The WRITE and SEND carry the IUT's connection id in DestQP (and the WRITE the IUT's
//! R_Key and VA), which the IUT chooses.

use mroce_model::transport::{Status, WorkKind};
use mroce_model::wire::{self, opcode, Akh, Bth, Cmh, MrPacket, Rph};

use super::{case, Case};
use crate::adapter::Need;
use crate::harness::{lb, Data, Peer, Tester, H, IUT_ISN, R, TESTER_CONN, TESTER_NONCE};
use crate::model::scenario_addr;
use crate::{check, check_eq, fail};

const SPEC: &str = include_str!("../../../SPEC.md");

/// The cases of this area.
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "C-5.11-01",
            "§5.11.3",
            "Golden CONNECT is accepted: CONNECT_ACK with the negotiated values, Accepted",
            &[],
            connect,
        ),
        case(
            "C-5.11-02",
            "§5.11.1",
            "Golden WRITE is placed at its VA on arrival and acknowledged at once",
            &[],
            write,
        ),
        case(
            "C-5.11-03",
            "§5.11.2",
            "Golden ACK: the receiver's ACK after the §5.11.2 packet sequence equals the golden frame",
            &[Need::ExactTime, Need::EcnMarking],
            ack,
        ),
        case(
            "C-5.11-04",
            "§5.11.4",
            "Golden SEND (RSN 3) lands in the fourth receive of its stream",
            &[],
            send,
        ),
    ]
}

/// A golden frame's bytes from the SPEC.md hex dump `<!-- golden:NAME -->`.
pub fn spec_frame(name: &str) -> Vec<u8> {
    let marker = format!("<!-- golden:{name} -->");
    let at = SPEC.find(&marker).unwrap_or_else(|| panic!("SPEC.md has no {marker}"));
    let rest = &SPEC[at..];
    let open = rest.find("```hex\n").expect("hex block") + 7;
    let close = open + rest[open..].find("```").expect("closed hex block");
    rest[open..close]
        .lines()
        .flat_map(|l| {
            l.split_whitespace()
                .skip(1)
                .map(|t| u8::from_str_radix(t, 16).expect("hex"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Whether the run uses the §5.11 scenario addresses (tester = A, IUT = B).
fn scenario(t: &Tester<'_>) -> bool {
    let planes = t.env.iut.planes;
    t.env.tester == scenario_addr(1, planes) && t.env.iut == scenario_addr(2, planes)
}

/// The tester's CONNECT of §5.11.3.
fn golden_cmh() -> Cmh {
    let g = spec_frame("connect");
    match wire::decode_mroce_frame(&g) {
        Ok((_, MrPacket::Connect(c))) => c,
        _ => panic!("SPEC.md golden CONNECT does not decode"),
    }
}

fn connect(t: &mut Tester<'_>) -> R {
    let g = spec_frame("connect");
    let f = if scenario(t) {
        g.clone()
    } else {
        t.cm_frame(opcode::MR_CONNECT, 0, &golden_cmh(), 0)
    };
    if scenario(t) {
        check_eq!(
            "tester CONNECT = SPEC.md §5.11.3 bytes",
            t.cm_frame(opcode::MR_CONNECT, 0, &golden_cmh(), 0),
            g
        );
    }
    t.send(0, &f)?;
    let (pkt, c) = t.expect_cm(opcode::MR_CONNECT_ACK, "CONNECT_ACK to the golden CONNECT")?;
    check_eq!("CONNECT_ACK port", pkt.plane, 0);
    check_eq!("CONNECT_ACK DestQP", H(pkt.bth.dest_qp), H(TESTER_CONN));
    check_eq!("CONNECT_ACK source address", pkt.addrs.src_ip, t.env.iut.ips[0]);
    check_eq!("CONNECT_ACK destination address", pkt.addrs.dst_ip, t.env.tester.ips[0]);
    check!(
        c.src_conn != 0 && c.src_conn <= 0xFF_FFFE,
        "CONNECT_ACK SrcConn {:#x} out of 1..=0xFFFFFE",
        c.src_conn
    );
    check_eq!("CONNECT_ACK ISN (fixed ISN of the IUT)", H(c.isn), H(IUT_ISN));
    check_eq!("CONNECT_ACK Paths", c.paths, 16);
    check_eq!("CONNECT_ACK Planes", c.planes, 2);
    check_eq!("CONNECT_ACK MTU", c.mtu, 4096);
    check_eq!("CONNECT_ACK RxCapacity", c.rx_capacity_mbps, 400_000);
    check_eq!("CONNECT_ACK Nonce", c.nonce, TESTER_NONCE);
    let ev = t.new_events()?;
    check!(
        ev.iter()
            .any(|e| matches!(e, mroce_model::transport::Event::Accepted(_))),
        "no Accepted event (events {ev:?})"
    );
    Ok(())
}

/// Re-encode a golden data frame for this IUT: DestQP (and, for a WRITE, the RPH) replaced.
fn golden_data(t: &Tester<'_>, p: &Peer, name: &str, rph: Option<Rph>) -> R<(u8, Vec<u8>)> {
    let g = spec_frame(name);
    let (f, pkt) = match wire::decode_mroce_frame(&g) {
        Ok(x) => x,
        Err(e) => fail!("SPEC.md golden {name}: {e}"),
    };
    let mut bth: Bth = f.bth;
    bth.dest_qp = p.iut_conn;
    let pkt = match (pkt, rph) {
        (MrPacket::Write { mrh, sdh, payload, .. }, Some(r)) => MrPacket::Write {
            mrh,
            sdh,
            rph: r,
            payload,
        },
        (other, _) => other,
    };
    let mrh = match pkt {
        MrPacket::Write { mrh, .. } | MrPacket::Send { mrh, .. } => mrh,
        _ => fail!("golden {name} is not a data frame"),
    };
    let addrs = t.addrs(mrh.plane, f.addrs.src_port, f.addrs.dscp);
    Ok((mrh.plane, Tester::encode(&addrs, &bth, &pkt)))
}

fn write(t: &mut Tester<'_>) -> R {
    let mut p = t.open_with(&golden_cmh())?;
    let k = t.region(0x1000, true, |_| 0)?;
    let (plane, f) = golden_data(
        t,
        &p,
        "write",
        Some(Rph {
            va: k.va + 0x40,
            rkey: k.rkey,
        }),
    )?;
    check_eq!("golden WRITE arrives on plane", plane, 1);
    let before = t.counters();
    t.send(plane, &f)?;
    // Placed on arrival, although messages 0-4 of stream 7 have not arrived.
    check_eq!("bytes at VA + 0x40", t.read(k, 0x40, 6)?, b"mroce!".to_vec());
    let (a_pkt, a) = t.expect_ack("immediate ACK (AckReq, PSN gap)")?;
    check_eq!("ACK port (port of arrival)", a_pkt.plane, 1);
    check_eq!("ACK UDP source port (echo)", a_pkt.addrs.src_port, 0xC123);
    check_eq!("ACK DestQP", H(a_pkt.bth.dest_qp), H(TESTER_CONN));
    check_eq!("AKH Path", a.path, 3);
    check_eq!("AKH Flags", a.flags, 0);
    // Floor 0x89ABCDE0 is past the first word: the window slid once, to ISN + 32.
    check_eq!("AKH Base", H(a.base), H(0x89AB_CD20));
    check_eq!("AKH Cum", H(a.cum), H(0x89AB_CD20));
    check_eq!("AKH SACK", a.sack, [0, 0, 0, 0, 0, 0, 1 << 15, 0]);
    check_eq!("AKH PktCount", a.pkt_count, 1);
    check_eq!("AKH EcnCount", a.ecn_count, 0);
    check_eq!("AKH TsEcho", a.ts_echo, 123_456);
    check_eq!("AKH RateHint", a.rate_hint_mbps, 400_000);
    t.expect_counters(&before, &[("rx_data", 1), ("bytes_placed", 6)])?;
    check_eq!("completions (message 5 waits for 0-4)", t.completions()?.len(), 0);
    // Messages 0-4 arrive: the stream completes 0..5 in order.
    for m in 0..5 {
        let d = Data {
            ack_req: false,
            ..Data::write(4, 7, m, k.va + u64::from(m), k.rkey, &[m as u8])
        };
        t.data(&mut p, &d)?;
    }
    let want: Vec<_> = (0..6)
        .map(|m| (WorkKind::WriteReceived, 7, m, Status::Ok, if m == 5 { 6 } else { 1 }))
        .collect();
    t.expect_completions(&want)?;
    Ok(())
}

fn ack(t: &mut Tester<'_>) -> R {
    let mut p = t.open_with(&golden_cmh())?;
    let k = t.region(0x1000, true, |_| 0)?;
    let base = 0x89AB_CDE0u32;
    p.next_psn[3] = base;
    p.floor[3] = base;
    // Base .. Base + 10: probes whose floor moves the window to Base, one word per packet.
    for i in 0..11u32 {
        t.probe(&mut p, 3, 100_000 + i)?;
        let (_, a) = t.expect_ack("ACK of a probe")?;
        check_eq!("probe ACK flags", a.flags, 1);
        let want_base = 0x89AB_CD00u32.wrapping_add(32 * (i + 1).min(7));
        check_eq!(format!("window base after probe {i}"), H(a.base), H(want_base));
    }
    // Base + 11 .. Base + 13: messages 0-2 of stream 7, no AckReq: no ACK yet.
    for m in 0..3u32 {
        let d = Data {
            ack_req: false,
            ts: 120_000 + m,
            ..Data::write(3, 7, m, k.va + 0x100 + u64::from(m), k.rkey, &[m as u8])
        };
        t.data(&mut p, &d)?;
    }
    t.expect_silence("three packets without AckReq, below ACK_COALESCE")?;
    // Base + 15: the golden WRITE, CE-marked on the way (Base + 14 is missing).
    let (plane, mut f) = golden_data(
        t,
        &p,
        "write",
        Some(Rph {
            va: k.va + 0x40,
            rkey: k.rkey,
        }),
    )?;
    wire::set_ecn(&mut f, wire::ecn::CE).expect("IPv4 frame");
    t.send(plane, &f)?;
    let (pkt, a) = t.expect_ack("immediate ACK (gap, CE)")?;
    let golden = spec_frame("ack");
    if scenario(t) {
        check_eq!(
            "ACK bytes = SPEC.md §5.11.2",
            crate::harness::hex(&pkt.bytes),
            crate::harness::hex(&golden)
        );
    }
    let want = match wire::decode_mroce_frame(&golden) {
        Ok((_, MrPacket::Ack(a))) => a,
        _ => fail!("SPEC.md golden ACK does not decode"),
    };
    let want = Akh { ..want };
    check_eq!("AKH (all fields)", a, want);
    check_eq!("ACK port", pkt.plane, 1);
    check_eq!("ACK UDP source port", pkt.addrs.src_port, 0xC123);
    let c = t.completions()?;
    check_eq!("completions of messages 0-2", c.len(), 3);
    Ok(())
}

fn send(t: &mut Tester<'_>) -> R {
    let mut p = t.open_with(&golden_cmh())?;
    let rx = t.region(64, false, |_| 0)?;
    for i in 0..4u64 {
        t.post_recv(&p, 7, lb(rx, 16 * i, 16), 100 + i)?;
    }
    let (plane, f) = golden_data(t, &p, "send", None)?;
    check_eq!("golden SEND arrives on plane", plane, 0);
    let before = t.counters();
    t.send(plane, &f)?;
    check_eq!("fourth receive buffer", t.read(rx, 48, 5)?, b"hello".to_vec());
    check_eq!(
        "first three receive buffers untouched",
        t.read(rx, 0, 48)?,
        vec![0u8; 48]
    );
    let (a_pkt, a) = t.expect_ack("immediate ACK (AckReq)")?;
    check_eq!("ACK port", a_pkt.plane, 0);
    check_eq!("ACK UDP source port", a_pkt.addrs.src_port, 0xC124);
    check_eq!("AKH Path", a.path, 4);
    check_eq!("AKH Base", H(a.base), H(0x89AB_CD00));
    check_eq!("AKH SACK word 0 (PSN ISN + 17)", H(a.sack[0]), H(1 << 17));
    check_eq!("AKH TsEcho", a.ts_echo, 123_500);
    t.expect_counters(&before, &[("rx_data", 1), ("bytes_placed", 5)])?;
    check_eq!("completions (message 6 waits)", t.completions()?.len(), 0);
    // The rest of the §5.11.4 scenario: messages 0, 2, 4 are SENDs (RSN 0, 1, 2), 1, 3, 5 WRITEs.
    let w = t.region(64, true, |_| 0)?;
    for m in (0..6u32).rev() {
        let d = if m % 2 == 0 {
            Data::send(4, 7, m, m / 2, &[b'a' + m as u8])
        } else {
            Data::write(4, 7, m, w.va + u64::from(m), w.rkey, &[m as u8])
        };
        t.data(&mut p, &Data { ack_req: false, ..d })?;
    }
    let got = t.completions()?;
    let g: Vec<_> = got.iter().map(|c| (c.kind, c.msg_seq, c.wr_id, c.bytes)).collect();
    let want = vec![
        (WorkKind::Recv, 0, 100, 1),
        (WorkKind::WriteReceived, 1, 0, 1),
        (WorkKind::Recv, 2, 101, 1),
        (WorkKind::WriteReceived, 3, 0, 1),
        (WorkKind::Recv, 4, 102, 1),
        (WorkKind::WriteReceived, 5, 0, 1),
        (WorkKind::Recv, 6, 103, 5),
    ];
    check_eq!("stream 7 completions (kind, msg, wr_id, bytes)", g, want);
    check_eq!("receive buffers", t.read(rx, 0, 53)?, {
        let mut v = vec![0u8; 53];
        v[0] = b'a';
        v[16] = b'c';
        v[32] = b'e';
        v[48..53].copy_from_slice(b"hello");
        v
    });
    Ok(())
}
