//! §5: every packet type as the IUT emits it. Besides the per-case checks, every IUT frame is
//! checked on arrival by the harness (canonical encoding, §5.1 envelope table).

use mroce_model::transport::{Event, Status, WorkKind};
use mroce_model::wire::{opcode, Cmh};

use super::{case, Case};
use crate::harness::{lb, pattern, rb, Body, Data, Pkt, Tester, H, IUT_ISN, R, TESTER_CONN};
use crate::{check, check_eq, fail};

/// The cases of this area.
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "C-5.2-01",
            "§5.2",
            "WRITE frames: chunking, MRH/SDH/RPH fields, SE on the last chunk; AckReq on every chunk of the first flight (before any ACK), then on the last chunk only",
            &[],
            write,
        ),
        case(
            "C-5.3-01",
            "§5.3",
            "SEND frames: RQH carries the stream's SEND count, WRITEs take no RSN",
            &[],
            send_rsn,
        ),
        case(
            "C-5.4-01",
            "§5.4",
            "ACK frame: port of arrival, echoed source port, DestQP, DSCP 48",
            &[],
            ack_envelope,
        ),
        case(
            "C-5.5-01",
            "§5.5",
            "NAK frame: port of arrival, source port 0xC000, NKH of the failed packet",
            &[],
            nak_envelope,
        ),
        case(
            "C-5.6-02",
            "§5.6",
            "PROBE frame: MRH only, own PSN, AckReq, path entropy and plane",
            &[],
            probe,
        ),
        case(
            "C-5.7-01",
            "§5.7–5.10",
            "CONNECT from the connect verb: plane 0, DestQP 0, CMH values",
            &[],
            connect,
        ),
        case(
            "C-5.7-02",
            "§5.7–5.10",
            "DISCONNECT from the disconnect verb: DestQP = peer id, CMH of the connection",
            &[],
            disconnect,
        ),
        case(
            "C-5.7-03",
            "§5.7–5.10",
            "DISCONNECT_ACK: port of arrival, DestQP = SrcConn, CMH copied",
            &[],
            disconnect_ack,
        ),
    ]
}

/// Expect the three chunks of a 2,560-byte WRITE (MTU 1,024) of stream 5 from `src` offset 100
/// to `va`: message `msg_seq`, PSNs from `psn`, floor `floor`. AckReq on the last chunk, or on
/// every chunk while `first_flight` (§8.3 step 7).
fn write_chunks(t: &mut Tester<'_>, va: u64, msg_seq: u32, psn: u32, floor: u32, first_flight: bool) -> R<Vec<Pkt>> {
    let mut frames = Vec::new();
    for i in 0..3u32 {
        let f = t.expect_data(&format!("WRITE {msg_seq} chunk {i}"))?;
        let Body::Write { mrh, sdh, rph, payload } = &f.body else {
            fail!("expected a WRITE, got {}", f.describe())
        };
        check_eq!(format!("chunk {i} DestQP"), H(f.bth.dest_qp), H(TESTER_CONN));
        check_eq!(format!("chunk {i} MRH path"), mrh.path, 0);
        check_eq!(format!("chunk {i} MRH PSN"), H(mrh.psn), H(psn + i));
        check_eq!(format!("chunk {i} MRH floor"), H(mrh.floor), H(floor));
        check_eq!(format!("chunk {i} MRH flags"), mrh.flags, 0);
        check_eq!(format!("chunk {i} SDH stream"), sdh.stream, 5);
        check_eq!(format!("chunk {i} SDH MsgSeq"), sdh.msg_seq, msg_seq);
        check_eq!(format!("chunk {i} SDH Offset"), sdh.offset, 1024 * i);
        check_eq!(format!("chunk {i} SDH MsgLen"), sdh.msg_len, 2560);
        check_eq!(format!("chunk {i} RPH VA"), rph.va, va + 1024 * u64::from(i));
        check_eq!(format!("chunk {i} RPH R_Key"), H(rph.rkey), H(0x1234_56AB));
        let want_len = if i < 2 { 1024 } else { 512 };
        check_eq!(format!("chunk {i} payload length"), payload.len(), want_len);
        let off = 100 + 1024 * i as usize;
        check!(
            payload[..] == pattern(9, 4096)[off..off + want_len],
            "chunk {i} payload differs from the local buffer"
        );
        check_eq!(format!("chunk {i} SE"), f.bth.se, i == 2);
        check_eq!(format!("chunk {i} AckReq"), f.bth.ack_req, first_flight || i == 2);
        frames.push(f);
    }
    // Nothing more but, on a slow tester, a tail-loss probe.
    let extra = t.drain()?;
    check!(
        extra.iter().all(|f| f.opcode() == opcode::MR_PROBE),
        "only three chunks: {}",
        extra[0].describe()
    );
    frames.extend(extra);
    Ok(frames)
}

fn write(t: &mut Tester<'_>) -> R {
    let mut p = t.open(1, 1024)?;
    check_eq!("negotiated MTU", p.mtu, 1024);
    let src = t.region(4096, false, |i| pattern(9, 4096)[i])?;
    let va = 0x0000_7000_0000_0100u64;
    // The connection's first flight: every chunk asks for an immediate ACK.
    t.post_write(&p, 5, lb(src, 100, 2560), rb(va, 0x1234_56AB), 77)?;
    let mut seen = write_chunks(t, va, 0, IUT_ISN, IUT_ISN, true)?;
    let next = seen.iter().map(|f| f.mrh().unwrap().psn).max().unwrap() + 1;
    t.ack_pkts(&p, &seen.iter().collect::<Vec<_>>(), &[])?;
    t.expect_completions(&[(WorkKind::Write, 5, 0, Status::Ok, 2560)])?;
    // After an ACK only the last chunk asks for one.
    t.post_write(&p, 5, lb(src, 100, 2560), rb(va, 0x1234_56AB), 78)?;
    // The floor slides by whole words only (C-8.3-01): still the ISN.
    seen.extend(write_chunks(t, va, 1, next, IUT_ISN, false)?);
    let next = seen.iter().map(|f| f.mrh().unwrap().psn).max().unwrap() + 1;
    t.ack_pkts(&p, &seen.iter().collect::<Vec<_>>(), &[])?;
    t.expect_completions(&[(WorkKind::Write, 5, 1, Status::Ok, 2560)])?;
    // Zero-length WRITE: one empty chunk, SE and AckReq set.
    t.post_write(&p, 5, lb(src, 0, 0), rb(va, 0x1234_56AB), 79)?;
    let f = t.expect_data("zero-length WRITE")?;
    let (mrh, sdh, payload) = f.data().unwrap();
    check_eq!("empty chunk MsgLen", sdh.msg_len, 0);
    check_eq!("empty chunk payload", payload.len(), 0);
    check_eq!("empty chunk MsgSeq", sdh.msg_seq, 2);
    check!(f.bth.se && f.bth.ack_req, "empty chunk must carry SE and AckReq");
    check_eq!("PSN (next on the path)", H(mrh.psn), H(next));
    seen.push(f);
    t.ack_pkts(&p, &seen.iter().collect::<Vec<_>>(), &[])?;
    t.expect_completions(&[(WorkKind::Write, 5, 2, Status::Ok, 0)])?;
    let _ = &mut p;
    Ok(())
}

fn send_rsn(t: &mut Tester<'_>) -> R {
    let p = t.open(1, 4096)?;
    let src = t.region(64, false, |i| i as u8)?;
    t.post_send(&p, 3, lb(src, 0, 8), 1)?;
    t.post_write(&p, 3, lb(src, 8, 8), rb(0x1000, 0x101), 2)?;
    t.post_send(&p, 3, lb(src, 16, 8), 3)?;
    t.post_send(&p, 4, lb(src, 24, 8), 4)?;
    let mut want = vec![
        (opcode::MR_SEND, 3u16, 0u32, Some(0u32)),
        (opcode::MR_WRITE, 3, 1, None),
    ];
    want.push((opcode::MR_SEND, 3, 2, Some(1)));
    want.push((opcode::MR_SEND, 4, 0, Some(0)));
    let mut got = Vec::new();
    let frames = t.data_burst()?;
    check_eq!("data frames", frames.len(), 4);
    for f in frames {
        let (_, sdh, _) = f.data().unwrap();
        let rsn = match &f.body {
            Body::Send { rsn, .. } => Some(*rsn),
            _ => None,
        };
        got.push((f.opcode(), sdh.stream, sdh.msg_seq, rsn));
    }
    // Streams are served round robin, one packet each: order stream 3, 4, 3, 3 is allowed too,
    // so compare per stream.
    got.sort_by_key(|x| (x.1, x.2));
    want.sort_by_key(|x| (x.1, x.2));
    check_eq!("(opcode, stream, MsgSeq, RSN)", got, want);
    Ok(())
}

fn ack_envelope(t: &mut Tester<'_>) -> R {
    let mut p = t.open(4, 4096)?;
    let k = t.region(64, true, |_| 0)?;
    // Path 3 arrives on plane 1 from source port 0xC123.
    t.data(&mut p, &Data::write(3, 0, 0, k.va, k.rkey, b"abc"))?;
    let (f, a) = t.expect_ack("ACK")?;
    check_eq!("ACK port", f.plane, 1);
    check_eq!("ACK UDP source port", f.addrs.src_port, 0xC123);
    check_eq!("ACK source address", f.addrs.src_ip, t.env.iut.ips[1]);
    check_eq!("ACK destination address", f.addrs.dst_ip, t.env.tester.ips[1]);
    check_eq!("ACK destination MAC", f.addrs.dst_mac, t.env.tester.mac);
    check_eq!("ACK DestQP", H(f.bth.dest_qp), H(TESTER_CONN));
    check_eq!("AKH path", a.path, 3);
    check_eq!("AKH SACK word 0", a.sack[0], 1);
    check_eq!("AKH Cum", H(a.cum), H(p.my_isn + 1));
    check_eq!("AKH TsEcho", a.ts_echo, 1000);
    // The same path arriving on the other port: the ACK follows the port of arrival.
    let d = Data {
        plane: Some(0),
        ts: 2000,
        ..Data::write(3, 0, 1, k.va + 3, k.rkey, b"d")
    };
    t.data(&mut p, &d)?;
    let (f, a) = t.expect_ack("ACK")?;
    check_eq!("ACK port follows the port of arrival", f.plane, 0);
    check_eq!("AKH TsEcho", a.ts_echo, 2000);
    Ok(())
}

fn nak_envelope(t: &mut Tester<'_>) -> R {
    let mut p = t.open(4, 4096)?;
    let k = t.region(64, true, |_| 0)?;
    let d = Data {
        msg_len: Some(3),
        ..Data::write(1, 9, 0, k.va, k.rkey ^ 0x10, b"abc")
    };
    t.data(&mut p, &d)?;
    let (f, n) = t.expect_nak("NAK")?;
    check_eq!("NAK port (port of arrival)", f.plane, 1);
    check_eq!("NAK DestQP", H(f.bth.dest_qp), H(TESTER_CONN));
    check_eq!("NKH Syndrome (REMOTE_ACCESS)", n.syndrome, 1);
    check_eq!("NKH Stream", n.stream, 9);
    check_eq!("NKH MsgSeq", n.msg_seq, 0);
    check_eq!("NKH Offset", n.offset, 0);
    Ok(())
}

fn probe(t: &mut Tester<'_>) -> R {
    let p = t.open(1, 4096)?;
    let src = t.region(64, false, |_| 1)?;
    t.post_write(&p, 0, lb(src, 0, 8), rb(0x1000, 0x101), 1)?;
    let d = t.expect_data("WRITE")?;
    // No ACK: a probe (tail-loss probe or RTO probe) follows on the path.
    let ok = t.advance_until(5_000_000, 10_000, |t| {
        t.pending().iter().any(|f| f.opcode() == opcode::MR_PROBE)
    })?;
    check!(ok, "no PROBE within 5 ms of an unacknowledged WRITE");
    let f = loop {
        let f = t.next("PROBE")?;
        if f.opcode() == opcode::MR_PROBE {
            break f;
        }
    };
    let Body::Probe { mrh } = f.body else { unreachable!() };
    let dm = d.mrh().unwrap();
    check_eq!("PROBE path", mrh.path, 0);
    check!(mrh.psn != dm.psn, "PROBE must take a new PSN");
    check_eq!("PROBE DestQP", H(f.bth.dest_qp), H(TESTER_CONN));
    check_eq!("PROBE PSN (next on the path)", H(mrh.psn), H(dm.psn + 1));
    Ok(())
}

fn connect(t: &mut Tester<'_>) -> R {
    let tester = t.env.tester;
    let _ = t
        .adapter()
        .connect(tester)
        .map_err(|e| crate::harness::Fail(format!("connect: {e}")))?;
    let (f, c) = t.expect_cm(opcode::MR_CONNECT, "CONNECT")?;
    check_eq!("CONNECT port", f.plane, 0);
    check_eq!("CONNECT DestQP", f.bth.dest_qp, 0);
    check_eq!("CONNECT source address", f.addrs.src_ip, t.env.iut.ips[0]);
    check_eq!("CONNECT destination address", f.addrs.dst_ip, t.env.tester.ips[0]);
    check!(
        c.src_conn >= 1 && c.src_conn <= 0xFF_FFFE,
        "CONNECT SrcConn {:#x}",
        c.src_conn
    );
    check_eq!("CONNECT ISN", H(c.isn), H(IUT_ISN));
    check_eq!("CONNECT Paths", c.paths, 16);
    check_eq!("CONNECT Planes", c.planes, 2);
    check_eq!("CONNECT MTU", c.mtu, 4096);
    check_eq!("CONNECT RxCapacity", c.rx_capacity_mbps, 400_000);
    Ok(())
}

fn disconnect(t: &mut Tester<'_>) -> R {
    let p = t.open(2, 4096)?;
    t.adapter()
        .disconnect(p.conn)
        .map_err(|e| crate::harness::Fail(format!("disconnect: {e}")))?;
    let (f, c) = t.expect_cm(opcode::MR_DISCONNECT, "DISCONNECT")?;
    check_eq!("DISCONNECT port", f.plane, 0);
    check_eq!("DISCONNECT DestQP", H(f.bth.dest_qp), H(TESTER_CONN));
    check_eq!("DISCONNECT SrcConn", H(c.src_conn), H(p.iut_conn));
    check_eq!("DISCONNECT ISN", H(c.isn), H(p.iut_isn));
    check_eq!("DISCONNECT Paths", c.paths, 2);
    check_eq!("DISCONNECT Planes", c.planes, p.planes);
    check_eq!("DISCONNECT MTU", c.mtu, 4096);
    check_eq!("DISCONNECT Nonce", c.nonce, p.nonce);
    let reply = Cmh {
        src_conn: p.iut_conn,
        ..c
    };
    let g = t.cm_frame(opcode::MR_DISCONNECT_ACK, c.src_conn, &reply, 0);
    t.send(0, &g)?;
    let ev = t.new_events()?;
    check!(
        ev.contains(&Event::Disconnected(p.conn)),
        "no Disconnected event after DISCONNECT_ACK ({ev:?})"
    );
    Ok(())
}

fn disconnect_ack(t: &mut Tester<'_>) -> R {
    let p = t.open(2, 4096)?;
    let c = Cmh {
        src_conn: p.my_conn,
        isn: p.my_isn,
        paths: 2,
        planes: 2,
        mtu: 4096,
        streams: 1024,
        reason: 0,
        rx_capacity_mbps: 123,
        nonce: p.nonce,
    };
    let f = t.cm_frame(opcode::MR_DISCONNECT, p.iut_conn, &c, 1);
    t.send(1, &f)?;
    let (g, r) = t.expect_cm(opcode::MR_DISCONNECT_ACK, "DISCONNECT_ACK")?;
    check_eq!("DISCONNECT_ACK port (port of arrival)", g.plane, 1);
    check_eq!(
        "DISCONNECT_ACK DestQP (= DISCONNECT.SrcConn)",
        H(g.bth.dest_qp),
        H(p.my_conn)
    );
    check_eq!(
        "DISCONNECT_ACK CMH (copied, SrcConn = DISCONNECT.DestQP)",
        r,
        Cmh {
            src_conn: p.iut_conn,
            ..c
        }
    );
    let ev = t.new_events()?;
    check!(
        ev.contains(&Event::Disconnected(p.conn)),
        "no Disconnected event ({ev:?})"
    );
    Ok(())
}
