//! §8.2, §8.6 and §9.2: direct placement, stream completion order with out-of-order
//! placement, SEND matching by RSN, NAKs, and every placement error of the §9.2 table with its
//! counter (receiver side), plus NAK handling at the sender.

use mroce_model::memory::MrKey;
use mroce_model::transport::{Status, WorkKind};
use mroce_model::wire::{opcode, Bth, MrPacket, Nkh};

use super::{case, Case};
use crate::harness::{lb, rb, Data, Peer, Tester, H, IUT_ISN, R};
use crate::{check, check_eq};

/// The cases of this area.
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "C-8.6-01",
            "§8.6",
            "Out-of-order messages are placed on arrival; completions follow message order",
            &[],
            out_of_order,
        ),
        case(
            "C-8.2-03",
            "§8.2",
            "Streams are independent: a stream completes while another waits",
            &[],
            streams_independent,
        ),
        case(
            "C-8.6-02",
            "§8.6",
            "Chunks of one message placed in any order; one completion when all arrived",
            &[],
            chunks_any_order,
        ),
        case(
            "C-9.2-02",
            "§9.2",
            "WRITE with an unknown R_Key: NAK REMOTE_ACCESS, rkey_violations, not recorded",
            &[],
            rkey_unknown,
        ),
        case(
            "C-9.2-03",
            "§9.2",
            "WRITE to a region without remote write: NAK REMOTE_ACCESS, rkey_violations",
            &[],
            rkey_no_access,
        ),
        case(
            "C-9.2-04",
            "§9.2",
            "WRITE outside its region: NAK REMOTE_ACCESS, bounds_violations",
            &[],
            bounds,
        ),
        case(
            "C-9.2-05",
            "§9.2",
            "Stream >= 1024: NAK REMOTE_INVALID, invalid_requests",
            &[],
            stream_range,
        ),
        case(
            "C-9.2-06",
            "§9.2",
            "Malformed chunk (Offset not a multiple of the MTU): NAK REMOTE_INVALID, invalid_requests",
            &[],
            bad_offset,
        ),
        case(
            "C-9.2-07",
            "§9.2",
            "Short non-final chunk: NAK REMOTE_INVALID, invalid_requests",
            &[],
            short_chunk,
        ),
        case(
            "C-9.2-08",
            "§9.2",
            "MsgLen differing from earlier packets of the message: NAK REMOTE_INVALID",
            &[],
            inconsistent,
        ),
        case(
            "C-9.2-09",
            "§9.2",
            "SEND with no receive posted: rnr_drops, not recorded; placed once a receive is posted",
            &[],
            rnr,
        ),
        case(
            "C-9.2-10",
            "§9.2",
            "SEND longer than the posted receive: NAK REMOTE_INVALID, the receive completes failed",
            &[],
            send_too_long,
        ),
        case(
            "C-9.2-11",
            "§9.2",
            "SEND whose RSN was already consumed: NAK REMOTE_INVALID, invalid_requests",
            &[],
            rsn_consumed,
        ),
        case(
            "C-9.2-12",
            "§9.2",
            "SEND into a deregistered receive buffer: NAK REMOTE_INVALID, local_access_errors",
            &[],
            recv_deregistered,
        ),
        case(
            "C-8.6-03",
            "§8.6",
            "Retransmissions of a failed message are NAKed again from the failed-message memory",
            &[],
            nak_again,
        ),
        case(
            "C-9.2-13",
            "§9.2",
            "A chunk already placed, under a new PSN: duplicate_chunks, recorded, not placed again",
            &[],
            dup_chunk,
        ),
        case(
            "C-9.2-14",
            "§9.2",
            "MsgSeq at next + MAX_MSGS_AHEAD: rnr_drops, no NAK",
            &[],
            too_far_ahead,
        ),
        case(
            "C-9.2-15",
            "§9.2",
            "Data for a path the connection does not have: bad_path, no ACK",
            &[],
            bad_path,
        ),
        case(
            "C-8.6-04",
            "§8.6",
            "SENDs match receives by RSN across interleaved WRITEs and any arrival order",
            &[],
            send_matching,
        ),
        case(
            "C-8.6-05",
            "§8.6",
            "Zero-length WRITE: valid key required, completes with 0 bytes",
            &[],
            zero_length,
        ),
        case(
            "C-8.6-06",
            "§8.6",
            "NAK at the sender: the message completes with its status, later messages go on",
            &[],
            nak_at_sender,
        ),
        case(
            "C-9.2-16",
            "§9.2",
            "NAK for a message that is not pending: stale_naks",
            &[],
            stale_nak,
        ),
        case(
            "C-8.3-06",
            "§8.3",
            "An ACK for a chunk of a failed message counts redundant_acks",
            &[],
            redundant,
        ),
    ]
}

fn open(t: &mut Tester<'_>) -> R<(Peer, MrKey)> {
    let p = t.open(4, 1024)?;
    let k = t.region(16 * 1024, true, |_| 0)?;
    Ok((p, k))
}

fn one(k: MrKey, stream: u16, msg: u32, off: u64, payload: &[u8]) -> Data {
    Data::write(0, stream, msg, k.va + off, k.rkey, payload)
}

fn out_of_order(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    t.data(&mut p, &one(k, 2, 2, 200, b"two"))?;
    t.data(&mut p, &one(k, 2, 1, 100, b"one"))?;
    check_eq!("message 2 placed before 0", t.read(k, 200, 3)?, b"two".to_vec());
    check_eq!("message 1 placed before 0", t.read(k, 100, 3)?, b"one".to_vec());
    check_eq!("completions before message 0", t.completions()?.len(), 0);
    t.data(&mut p, &one(k, 2, 0, 0, b"zero"))?;
    t.expect_completions(&[
        (WorkKind::WriteReceived, 2, 0, Status::Ok, 4),
        (WorkKind::WriteReceived, 2, 1, Status::Ok, 3),
        (WorkKind::WriteReceived, 2, 2, Status::Ok, 3),
    ])?;
    Ok(())
}

fn streams_independent(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    t.data(&mut p, &one(k, 1, 1, 0, b"a"))?; // stream 1 waits for its message 0
    t.data(&mut p, &one(k, 3, 0, 10, b"b"))?;
    t.expect_completions(&[(WorkKind::WriteReceived, 3, 0, Status::Ok, 1)])?;
    t.data(&mut p, &one(k, 1, 0, 20, b"c"))?;
    t.expect_completions(&[
        (WorkKind::WriteReceived, 1, 0, Status::Ok, 1),
        (WorkKind::WriteReceived, 1, 1, Status::Ok, 1),
    ])?;
    Ok(())
}

fn chunks_any_order(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    let msg: Vec<u8> = (0..2500u32).map(|i| (i % 251) as u8).collect();
    for (i, off) in [2048usize, 0, 1024].into_iter().enumerate() {
        let end = (off + 1024).min(msg.len());
        let d = Data {
            offset: off as u32,
            msg_len: Some(2500),
            path: i as u8,
            ..Data::write(0, 0, 0, k.va + 4096 + off as u64, k.rkey, &msg[off..end])
        };
        t.data(&mut p, &d)?;
        check_eq!(
            format!("chunk at {off} placed on arrival"),
            t.read(k, 4096 + off as u64, (end - off) as u64)?,
            msg[off..end].to_vec()
        );
        if i < 2 {
            check_eq!("no completion before the last chunk", t.completions()?.len(), 0);
        }
    }
    t.expect_completions(&[(WorkKind::WriteReceived, 0, 0, Status::Ok, 2500)])?;
    Ok(())
}

/// Hand in `d`; expect a NAK with `syndrome` and an ACK without its PSN, and the counters.
fn nak_case(t: &mut Tester<'_>, p: &mut Peer, d: &Data, syndrome: u8, counters: &[(&str, u64)]) -> R<Nkh> {
    let before = t.counters();
    let psn = p.next_psn[d.path as usize];
    t.data(p, d)?;
    let (f, n) = t.expect_nak("NAK")?;
    check_eq!("NAK port", f.plane, p.plane_of(d.path));
    check_eq!("NKH Syndrome", n.syndrome, syndrome);
    check_eq!("NKH Stream", n.stream, d.stream);
    check_eq!("NKH MsgSeq", n.msg_seq, d.msg_seq);
    check_eq!("NKH Offset", n.offset, d.offset);
    let (_, a) = t.expect_ack("immediate ACK (the packet is refused)")?;
    let bit = psn.wrapping_sub(a.base);
    check!(
        bit >= 256 || a.sack[(bit / 32) as usize] & (1 << (bit % 32)) == 0,
        "the NAKed PSN must not be recorded"
    );
    let mut c = vec![("naks_sent", 1), ("rx_data", 1), ("bytes_placed", 0)];
    c.extend_from_slice(counters);
    t.expect_counters(&before, &c)?;
    Ok(n)
}

fn rkey_unknown(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    let d = one(k, 0, 0, 0, b"xyz");
    let d = Data {
        kind: crate::harness::DataKind::Write(k.va, k.rkey ^ 0x0000_0100),
        ..d
    };
    nak_case(t, &mut p, &d, 1, &[("rkey_violations", 1)])?;
    // The failed message completes at the receiver, in order, with its status.
    t.expect_completions(&[(WorkKind::WriteReceived, 0, 0, Status::RemoteAccessError, 3)])?;
    check_eq!("memory untouched", t.read(k, 0, 3)?, vec![0u8; 3]);
    Ok(())
}

fn rkey_no_access(t: &mut Tester<'_>) -> R {
    let (mut p, _) = open(t)?;
    let ro = t.region(64, false, |_| 0)?;
    nak_case(t, &mut p, &one(ro, 0, 0, 0, b"xyz"), 1, &[("rkey_violations", 1)])?;
    Ok(())
}

fn bounds(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    nak_case(
        t,
        &mut p,
        &one(k, 0, 0, 16 * 1024 - 2, b"xyz"),
        1,
        &[("bounds_violations", 1)],
    )?;
    let below = Data {
        kind: crate::harness::DataKind::Write(k.va - 1, k.rkey),
        ..one(k, 0, 1, 0, b"x")
    };
    nak_case(t, &mut p, &below, 1, &[("bounds_violations", 1)])?;
    Ok(())
}

fn stream_range(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    nak_case(t, &mut p, &one(k, 1024, 0, 0, b"xyz"), 2, &[("invalid_requests", 1)])?;
    check_eq!("completions", t.completions()?.len(), 0);
    Ok(())
}

fn bad_offset(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    let d = Data {
        offset: 100,
        msg_len: Some(2048),
        ..one(k, 0, 0, 100, &[1; 512])
    };
    nak_case(t, &mut p, &d, 2, &[("invalid_requests", 1)])?;
    t.expect_completions(&[(WorkKind::WriteReceived, 0, 0, Status::RemoteInvalid, 2048)])?;
    Ok(())
}

fn short_chunk(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    let d = Data {
        msg_len: Some(4096),
        ..one(k, 0, 0, 0, &[1; 512])
    };
    nak_case(t, &mut p, &d, 2, &[("invalid_requests", 1)])?;
    Ok(())
}

fn inconsistent(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    let d = Data {
        msg_len: Some(2048),
        ..one(k, 0, 0, 0, &[1; 1024])
    };
    t.data(&mut p, &d)?;
    t.expect_ack("ACK of the first chunk")?;
    let d2 = Data {
        offset: 1024,
        msg_len: Some(3072),
        ..one(k, 0, 0, 1024, &[2; 1024])
    };
    nak_case(t, &mut p, &d2, 2, &[("invalid_requests", 1)])?;
    check_eq!("first chunk stays placed", t.read(k, 0, 4)?, vec![1u8; 4]);
    t.expect_completions(&[(WorkKind::WriteReceived, 0, 0, Status::RemoteInvalid, 2048)])?;
    Ok(())
}

fn rnr(t: &mut Tester<'_>) -> R {
    let (mut p, _) = open(t)?;
    let rx = t.region(64, false, |_| 0)?;
    let before = t.counters();
    let psn = p.next_psn[0];
    t.data(&mut p, &Data::send(0, 4, 0, 0, b"early"))?;
    let (_, a) = t.expect_ack("immediate ACK (refused)")?;
    check_eq!("SACK (not recorded)", a.sack[0], 0);
    t.expect_counters(&before, &[("rnr_drops", 1), ("naks_sent", 0), ("rx_data", 1)])?;
    t.post_recv(&p, 4, lb(rx, 0, 64), 555)?;
    // The sender retransmits under a new PSN.
    let d = Data {
        flags: 1,
        ..Data::send(0, 4, 0, 0, b"early")
    };
    t.data(&mut p, &d)?;
    let (_, a) = t.expect_ack("ACK of the retransmission")?;
    check_eq!(
        "SACK word 0 (only the retransmission)",
        H(a.sack[0]),
        H(1 << (psn + 1 - a.base))
    );
    check_eq!("receive buffer", t.read(rx, 0, 5)?, b"early".to_vec());
    let c = t.completions()?;
    check_eq!(
        "completion",
        c.iter()
            .map(|c| (c.kind, c.wr_id, c.bytes, c.status))
            .collect::<Vec<_>>(),
        vec![(WorkKind::Recv, 555, 5, Status::Ok)]
    );
    Ok(())
}

fn send_too_long(t: &mut Tester<'_>) -> R {
    let (mut p, _) = open(t)?;
    let rx = t.region(64, false, |_| 0)?;
    t.post_recv(&p, 0, lb(rx, 0, 4), 9)?;
    nak_case(
        t,
        &mut p,
        &Data::send(0, 0, 0, 0, b"too long"),
        2,
        &[("invalid_requests", 1)],
    )?;
    let c = t.completions()?;
    let g: Vec<_> = c.iter().map(|c| (c.kind, c.wr_id, c.status)).collect();
    check_eq!(
        "completion (the receive is consumed, failed)",
        g,
        vec![(WorkKind::Recv, 9, Status::RemoteInvalid)]
    );
    Ok(())
}

fn rsn_consumed(t: &mut Tester<'_>) -> R {
    let (mut p, _) = open(t)?;
    let rx = t.region(64, false, |_| 0)?;
    t.post_recv(&p, 0, lb(rx, 0, 16), 1)?;
    t.post_recv(&p, 0, lb(rx, 16, 16), 2)?;
    t.data(&mut p, &Data::send(0, 0, 0, 0, b"first"))?;
    let _ = t.drain()?;
    t.completions()?;
    nak_case(
        t,
        &mut p,
        &Data::send(0, 0, 1, 0, b"again"),
        2,
        &[("invalid_requests", 1)],
    )?;
    check_eq!("second receive untouched", t.read(rx, 16, 5)?, vec![0u8; 5]);
    Ok(())
}

fn recv_deregistered(t: &mut Tester<'_>) -> R {
    let (mut p, _) = open(t)?;
    let rx = t.region(64, false, |_| 0)?;
    t.post_recv(&p, 0, lb(rx, 0, 64), 1)?;
    t.deregister(rx)?;
    nak_case(
        t,
        &mut p,
        &Data::send(0, 0, 0, 0, b"lost"),
        2,
        &[("local_access_errors", 1)],
    )?;
    Ok(())
}

fn nak_again(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    let bad = Data {
        kind: crate::harness::DataKind::Write(k.va, k.rkey ^ 0x100),
        ..one(k, 5, 0, 0, b"abc")
    };
    nak_case(t, &mut p, &bad, 1, &[("rkey_violations", 1)])?;
    // The NAK was lost; the sender retransmits (new PSN, RETX): NAKed again from the memory.
    let retx = Data { flags: 1, ..bad };
    nak_case(t, &mut p, &retx, 1, &[("rkey_violations", 0)])?;
    Ok(())
}

fn dup_chunk(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    let d = Data {
        msg_len: Some(2048),
        ..one(k, 0, 0, 0, &[7; 1024])
    };
    t.data(&mut p, &d)?;
    let _ = t.drain()?;
    let before = t.counters();
    let psn = p.next_psn[0];
    // A spurious retransmission of the same chunk, new PSN.
    t.data(&mut p, &Data { flags: 1, ..d.clone() })?;
    let (_, a) = t.expect_ack("ACK (AckReq)")?;
    let bit = psn - a.base;
    check!(
        a.sack[(bit / 32) as usize] & (1 << (bit % 32)) != 0,
        "the new PSN must be recorded"
    );
    t.expect_counters(&before, &[("duplicate_chunks", 1), ("bytes_placed", 0), ("rx_data", 1)])?;
    check_eq!("no completion (message incomplete)", t.completions()?.len(), 0);
    Ok(())
}

fn too_far_ahead(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    let before = t.counters();
    t.data(&mut p, &one(k, 0, 65_536, 0, b"far"))?;
    let (_, a) = t.expect_ack("immediate ACK (refused)")?;
    check_eq!("SACK", a.sack[0], 0);
    t.expect_counters(
        &before,
        &[("rnr_drops", 1), ("naks_sent", 0), ("rx_data", 1), ("bytes_placed", 0)],
    )?;
    t.data(&mut p, &one(k, 0, 65_535, 0, b"ok"))?;
    let (_, a) = t.expect_ack("ACK")?;
    check!(a.sack[0] != 0, "MsgSeq next + 65535 is accepted");
    Ok(())
}

fn bad_path(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    check_eq!("negotiated paths", p.paths, 4);
    let before = t.counters();
    t.data(
        &mut p,
        &Data {
            path: 4,
            ..one(k, 0, 0, 0, b"p4")
        },
    )?;
    t.expect_silence("no ACK for a bad path")?;
    t.expect_counters(&before, &[("bad_path", 1), ("rx_data", 1), ("bytes_placed", 0)])?;
    Ok(())
}

fn send_matching(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    let rx = t.region(64, false, |_| 0)?;
    for i in 0..3u64 {
        t.post_recv(&p, 6, lb(rx, 16 * i, 16), 40 + i)?;
    }
    // Stream 6: S(rsn 0), W, S(rsn 1), W, S(rsn 2); arriving last to first.
    let msgs: Vec<Data> = vec![
        Data::send(1, 6, 0, 0, b"s0"),
        one(k, 6, 1, 0, b"w1"),
        Data::send(2, 6, 2, 1, b"s1"),
        one(k, 6, 3, 8, b"w3"),
        Data::send(3, 6, 4, 2, b"s2"),
    ];
    for d in msgs.iter().rev() {
        t.data(&mut p, d)?;
    }
    check_eq!("receive 0", t.read(rx, 0, 2)?, b"s0".to_vec());
    check_eq!("receive 1", t.read(rx, 16, 2)?, b"s1".to_vec());
    check_eq!("receive 2", t.read(rx, 32, 2)?, b"s2".to_vec());
    let c = t.completions()?;
    let g: Vec<_> = c.iter().map(|c| (c.kind, c.msg_seq, c.wr_id)).collect();
    let want = vec![
        (WorkKind::Recv, 0, 40),
        (WorkKind::WriteReceived, 1, 0),
        (WorkKind::Recv, 2, 41),
        (WorkKind::WriteReceived, 3, 0),
        (WorkKind::Recv, 4, 42),
    ];
    check_eq!("completions (kind, msg, wr_id)", g, want);
    Ok(())
}

fn zero_length(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t)?;
    t.data(&mut p, &one(k, 0, 0, 16 * 1024, b""))?; // VA at the region end: allowed
    t.expect_ack("ACK")?;
    t.expect_completions(&[(WorkKind::WriteReceived, 0, 0, Status::Ok, 0)])?;
    let bad = Data {
        kind: crate::harness::DataKind::Write(k.va, 0),
        ..one(k, 0, 1, 0, b"")
    };
    nak_case(t, &mut p, &bad, 1, &[("rkey_violations", 1)])?;
    Ok(())
}

/// The IUT sends messages 0 and 1 (1 chunk each) on stream 2; returns their frames.
fn two_messages(t: &mut Tester<'_>) -> R<(Peer, Vec<crate::harness::Pkt>)> {
    let p = t.open(1, 1024)?;
    let src = t.region(4096, false, |i| i as u8)?;
    t.post_write(&p, 2, lb(src, 0, 3000), rb(0x5000, 0x77), 1)?; // 3 chunks
    t.post_write(&p, 2, lb(src, 0, 10), rb(0x5000, 0x77), 2)?;
    let v = t.data_burst()?;
    check_eq!("data frames", v.len(), 4);
    Ok((p, v))
}

fn nak_frame(t: &Tester<'_>, p: &Peer, syndrome: u8, stream: u16, msg: u32) -> Vec<u8> {
    let n = Nkh {
        syndrome,
        stream,
        msg_seq: msg,
        offset: 0,
    };
    Tester::encode(
        &t.addrs(0, 0xC000, 48),
        &Bth::new(opcode::MR_NAK, p.iut_conn, 0),
        &MrPacket::Nak(n),
    )
}

fn nak_at_sender(t: &mut Tester<'_>) -> R {
    let (p, v) = two_messages(t)?;
    let before = t.counters();
    let f = nak_frame(t, &p, 1, 2, 0);
    t.send(0, &f)?;
    let c = t.completions()?;
    let g: Vec<_> = c.iter().map(|c| (c.msg_seq, c.wr_id, c.status)).collect();
    check_eq!("completion of message 0", g, vec![(0, 1, Status::RemoteAccessError)]);
    t.expect_counters(&before, &[("naks_received", 1), ("stale_naks", 0)])?;
    // Message 1 still completes normally.
    let psns: Vec<u32> = v.iter().map(|f| f.mrh().unwrap().psn).collect();
    let l = &v[3];
    let a = t.ack_frame(&p, 0, &psns, l.mrh().unwrap().ts, l.plane, l.addrs.src_port);
    t.send(l.plane, &a)?;
    let c = t.completions()?;
    let g: Vec<_> = c.iter().map(|c| (c.msg_seq, c.status)).collect();
    check_eq!("completion of message 1", g, vec![(1, Status::Ok)]);
    // A syndrome other than 1 or 2 is treated as REMOTE_INVALID.
    let src = t.region(64, false, |_| 0)?;
    t.post_write(&p, 3, lb(src, 0, 8), rb(0x5000, 0x77), 3)?;
    let _ = t.drain()?;
    let f = nak_frame(t, &p, 9, 3, 0);
    t.send(0, &f)?;
    let c = t.completions()?;
    check_eq!(
        "status for syndrome 9",
        c.iter().map(|c| c.status).collect::<Vec<_>>(),
        vec![Status::RemoteInvalid]
    );
    Ok(())
}

fn stale_nak(t: &mut Tester<'_>) -> R {
    let (p, _) = two_messages(t)?;
    let before = t.counters();
    for (stream, msg) in [(2u16, 7u32), (9, 0)] {
        let f = nak_frame(t, &p, 2, stream, msg);
        t.send(0, &f)?;
    }
    let f = nak_frame(t, &p, 2, 2, 1);
    t.send(0, &f)?;
    let f = nak_frame(t, &p, 2, 2, 1); // already failed
    t.send(0, &f)?;
    t.expect_counters(&before, &[("naks_received", 4), ("stale_naks", 3)])?;
    check_eq!(
        "no completion (message 1 waits for message 0)",
        t.completions()?.len(),
        0
    );
    Ok(())
}

fn redundant(t: &mut Tester<'_>) -> R {
    let (p, v) = two_messages(t)?;
    let f = nak_frame(t, &p, 2, 2, 0);
    t.send(0, &f)?;
    t.completions()?;
    let before = t.counters();
    // The three chunks of the failed message were placed after all: their ACK frees them.
    let psns: Vec<u32> = v[..3].iter().map(|f| f.mrh().unwrap().psn).collect();
    check_eq!("first PSN", H(psns[0]), H(IUT_ISN));
    let l = &v[2];
    let a = t.ack_frame(&p, 0, &psns, l.mrh().unwrap().ts, l.plane, l.addrs.src_port);
    t.send(l.plane, &a)?;
    t.expect_counters(&before, &[("redundant_acks", 3)])?;
    Ok(())
}
