//! §8.1 and §8.7: connection management (acceptor and initiator checks, negotiation, retries,
//! duplicates, teardown) and the peer timeout, each error with its counter (§9.2).

use mroce_model::transport::{Event, Status, WorkKind};
use mroce_model::wire::{opcode, Cmh};

use super::{case, Case};
use crate::adapter::{Need, Setup};
use crate::harness::{default_setup, lb, rb, Data, Tester, H, R, TESTER_CONN, TESTER_NONCE};
use crate::{check, check_eq, fail};

/// The cases of this area.
pub fn cases() -> Vec<Case> {
    vec![
        case("C-8.1-01", "§8.1", "CONNECT from an address not in the neighbour table: dropped, unknown_peer", &[Need::NeighbourTable], unknown_peer),
        case("C-8.1-02", "§8.1", "CONNECT while not accepting connections: dropped, refused_connects", &[], refused)
            .with_setup(not_accepting),
        case("C-8.1-03", "§8.1", "CONNECT with Paths 0, Planes 0 or 9, or MTU < 64: dropped, invalid_requests", &[], invalid_connect),
        case("C-8.1-04", "§8.1", "Duplicate CONNECT: the same CONNECT_ACK again, one connection", &[], dup_connect),
        case("C-8.1-05", "§8.1", "CONNECT with a full connection table: dropped, table_full", &[], table_full).with_setup(one_conn),
        case("C-8.1-06", "§8.1", "Negotiation: paths, planes and MTU are the minimum of both ends, and data follows them", &[], negotiate)
            .with_setup(two_paths),
        case("C-8.1-07", "§8.1", "Initiator: CONNECT retried every CM_RETRY_NS, identical, CM_TRIES times, then ConnectFailed", &[Need::ExactTime], connect_retries),
        case("C-8.1-08", "§8.1", "CONNECT_ACK with a wrong nonce: invalid_requests; for no connection: unknown_connection", &[], bad_connect_ack),
        case("C-9.2-17", "§9.2", "Data for an unknown connection id or from a non-peer address: unknown_connection", &[], data_unknown_conn),
        case("C-8.1-09", "§8.1", "DISCONNECT from the peer: pending messages fail, Disconnected, DISCONNECT_ACK; for no connection: DISCONNECT_ACK", &[], peer_disconnect),
        case("C-8.1-10", "§8.1", "disconnect verb: pending messages fail at once, DISCONNECT retried until DISCONNECT_ACK", &[Need::ExactTime], local_disconnect),
        case("C-8.1-11", "§8.1", "CONNECT_ACK for a connection already Established is ignored", &[], late_connect_ack),
        case("C-8.1-12", "§8.1", "CONNECT_ACK from a non-peer address, or with Paths 0 or MTU < 64: invalid_requests", &[], connect_ack_checks),
        case("C-8.1-13", "§8.1", "DISCONNECT_ACK for a connection that is not Closing is ignored", &[], stray_disconnect_ack),
        case("C-8.7-01", "§8.7", "Peer timeout: pending messages fail, the connection is released, Disconnected", &[], peer_timeout)
            .with_setup(short_timeout),
    ]
}

fn not_accepting() -> Setup {
    let mut s = default_setup();
    s.cfg.accept_incoming = false;
    s
}

fn one_conn() -> Setup {
    let mut s = default_setup();
    s.cfg.max_connections = 1;
    s
}

fn two_paths() -> Setup {
    let mut s = default_setup();
    s.cfg.paths = 2;
    s.cfg.mtu = 2048;
    s
}

fn short_timeout() -> Setup {
    let mut s = default_setup();
    s.cfg.peer_timeout_ns = 3_000_000;
    s
}

fn unknown_peer(t: &mut Tester<'_>) -> R {
    let before = t.counters();
    let mut f = t.cm_frame(opcode::MR_CONNECT, 0, &Tester::connect_cmh(1, 2, 4096), 0);
    f[26..30].copy_from_slice(&t.env.stranger.ips[0]);
    f[6..12].copy_from_slice(&t.env.stranger.mac);
    super::fix_ip_checksum(&mut f);
    super::fix_icrc(&mut f);
    t.send(0, &f)?;
    t.expect_silence("dropped")?;
    t.expect_counters(&before, &[("unknown_peer", 1)])?;
    check_eq!("events", t.new_events()?.len(), 0);
    // DISCONNECT from a stranger: also unknown_peer, not answered.
    let mut g = t.cm_frame(opcode::MR_DISCONNECT, 1, &Tester::connect_cmh(1, 2, 4096), 0);
    g[26..30].copy_from_slice(&t.env.stranger.ips[0]);
    super::fix_ip_checksum(&mut g);
    super::fix_icrc(&mut g);
    t.send(0, &g)?;
    t.expect_silence("dropped")?;
    t.expect_counters(&before, &[("unknown_peer", 2)])?;
    Ok(())
}

fn refused(t: &mut Tester<'_>) -> R {
    let before = t.counters();
    let f = t.cm_frame(opcode::MR_CONNECT, 0, &Tester::connect_cmh(1, 2, 4096), 0);
    t.send(0, &f)?;
    t.expect_silence("refused")?;
    t.expect_counters(&before, &[("refused_connects", 1)])?;
    Ok(())
}

fn invalid_connect(t: &mut Tester<'_>) -> R {
    let before = t.counters();
    let bad = [(0u8, 2u8, 4096u16), (1, 0, 4096), (1, 9, 4096), (1, 2, 63)];
    for (i, (paths, planes, mtu)) in bad.into_iter().enumerate() {
        let mut c = Tester::connect_cmh(paths, planes, mtu);
        c.nonce = 1000 + i as u64;
        let f = t.cm_frame(opcode::MR_CONNECT, 0, &c, 0);
        t.send(0, &f)?;
        t.expect_silence("invalid CONNECT dropped")?;
    }
    t.expect_counters(&before, &[("invalid_requests", 4)])?;
    check_eq!("events", t.new_events()?.len(), 0);
    // MTU 64 and 16 paths with 8 planes are valid.
    let mut c = Tester::connect_cmh(16, 8, 64);
    c.nonce = 77;
    t.open_with(&c)?;
    Ok(())
}

fn dup_connect(t: &mut Tester<'_>) -> R {
    let c = Tester::connect_cmh(4, 2, 4096);
    let f = t.cm_frame(opcode::MR_CONNECT, 0, &c, 0);
    t.send(0, &f)?;
    let (a1, _) = t.expect_cm(opcode::MR_CONNECT_ACK, "CONNECT_ACK")?;
    let before = t.counters();
    t.send(0, &f)?;
    let (a2, _) = t.expect_cm(opcode::MR_CONNECT_ACK, "CONNECT_ACK to the duplicate")?;
    check_eq!(
        "second CONNECT_ACK",
        crate::harness::hex(&a2.bytes),
        crate::harness::hex(&a1.bytes)
    );
    let accepted = t
        .new_events()?
        .iter()
        .filter(|e| matches!(e, Event::Accepted(_)))
        .count();
    check_eq!("Accepted events", accepted, 1);
    t.expect_counters(&before, &[])?;
    Ok(())
}

fn table_full(t: &mut Tester<'_>) -> R {
    t.open(1, 4096)?;
    let before = t.counters();
    let mut c = Tester::connect_cmh(1, 2, 4096);
    c.src_conn = 0x124;
    c.nonce = 5;
    let f = t.cm_frame(opcode::MR_CONNECT, 0, &c, 0);
    t.send(0, &f)?;
    t.expect_silence("table full")?;
    t.expect_counters(&before, &[("table_full", 1)])?;
    // The connect verb fails the same way, sending nothing.
    let stranger = t.env.stranger;
    let e = t.adapter().connect(stranger);
    check_eq!(
        "connect verb with a full table",
        e,
        Err(mroce_model::transport::VerbError::TableFull)
    );
    t.expect_silence("nothing sent")?;
    Ok(())
}

fn negotiate(t: &mut Tester<'_>) -> R {
    // The IUT is configured for 2 paths and MTU 2048; the tester asks 16 paths, 1 plane, MTU 4096.
    let mut c = Tester::connect_cmh(16, 1, 4096);
    c.nonce = 3;
    let p = t.open_with(&c)?;
    check_eq!("negotiated paths", p.paths, 2);
    check_eq!("negotiated planes", p.planes, 1);
    check_eq!("negotiated MTU", p.mtu, 2048);
    let src = t.region(8192, false, |i| i as u8)?;
    t.post_write(&p, 0, lb(src, 0, 5000), rb(0x9000, 0x55), 1)?;
    let v: Vec<_> = t.drain()?.into_iter().filter(|f| f.is_data()).collect();
    check_eq!("chunks of 5000 bytes at MTU 2048", v.len(), 3);
    for f in &v {
        let (m, s, pl) = f.data().unwrap();
        check!(m.path < 2, "path {} beyond the negotiated 2", m.path);
        check_eq!("plane (one plane negotiated)", f.plane, 0);
        check!(pl.len() <= 2048, "payload {} above the MTU", pl.len());
        check_eq!("offset is a multiple of the MTU", s.offset % 2048, 0);
    }
    Ok(())
}

fn connect_retries(t: &mut Tester<'_>) -> R {
    let tester = t.env.tester;
    let t0 = t.now();
    let conn = t
        .adapter()
        .connect(tester)
        .map_err(|e| crate::harness::Fail(format!("connect: {e}")))?;
    let (first, _) = t.expect_cm(opcode::MR_CONNECT, "CONNECT")?;
    let mut times = vec![first.at - t0];
    for _ in 0..20 {
        t.advance(500_000)?;
        for f in t.drain()? {
            check_eq!(
                "retry is identical",
                crate::harness::hex(&f.bytes),
                crate::harness::hex(&first.bytes)
            );
            times.push(f.at - t0);
        }
    }
    let want: Vec<u64> = (0..8).map(|i| i * 1_000_000).collect();
    check_eq!("CONNECT times (ns)", times, want);
    let ev = t.new_events()?;
    check!(ev.contains(&Event::ConnectFailed(conn)), "no ConnectFailed ({ev:?})");
    Ok(())
}

fn bad_connect_ack(t: &mut Tester<'_>) -> R {
    let tester = t.env.tester;
    let conn = t
        .adapter()
        .connect(tester)
        .map_err(|e| crate::harness::Fail(format!("connect: {e}")))?;
    let (_, c) = t.expect_cm(opcode::MR_CONNECT, "CONNECT")?;
    let before = t.counters();
    let reply = Cmh {
        src_conn: TESTER_CONN,
        nonce: c.nonce ^ 1,
        ..c
    };
    let f = t.cm_frame(opcode::MR_CONNECT_ACK, c.src_conn, &reply, 0);
    t.send(0, &f)?;
    let f = t.cm_frame(
        opcode::MR_CONNECT_ACK,
        c.src_conn + 77,
        &Cmh {
            nonce: c.nonce,
            ..reply
        },
        0,
    );
    t.send(0, &f)?;
    t.expect_silence("both dropped")?;
    t.expect_counters(&before, &[("invalid_requests", 1), ("unknown_connection", 1)])?;
    check!(
        !t.new_events()?.contains(&Event::Connected(conn)),
        "connected by a bad CONNECT_ACK"
    );
    let f = t.cm_frame(
        opcode::MR_CONNECT_ACK,
        c.src_conn,
        &Cmh {
            nonce: c.nonce,
            ..reply
        },
        0,
    );
    t.send(0, &f)?;
    check!(
        t.new_events()?.contains(&Event::Connected(conn)),
        "the good CONNECT_ACK must connect"
    );
    Ok(())
}

fn data_unknown_conn(t: &mut Tester<'_>) -> R {
    let mut p = t.open(1, 4096)?;
    let k = t.region(64, true, |_| 0)?;
    let before = t.counters();
    let mut q = p.clone();
    q.iut_conn = p.iut_conn + 9;
    t.data(&mut q, &Data::write(0, 0, 0, k.va, k.rkey, b"x"))?;
    let (plane, mut f) = t.data_frame(&mut p, &Data::write(0, 0, 0, k.va, k.rkey, b"x"));
    f[26..30].copy_from_slice(&t.env.stranger.ips[plane as usize]);
    super::fix_ip_checksum(&mut f);
    super::fix_icrc(&mut f);
    t.send(plane, &f)?;
    t.expect_silence("dropped")?;
    t.expect_counters(
        &before,
        &[("unknown_connection", 2), ("rx_data", 0), ("bytes_placed", 0)],
    )?;
    Ok(())
}

fn peer_disconnect(t: &mut Tester<'_>) -> R {
    let p = t.open(1, 4096)?;
    let src = t.region(64, false, |_| 1)?;
    t.post_write(&p, 0, lb(src, 0, 8), rb(0x9000, 0x55), 31)?;
    let _ = t.drain()?;
    let c = Cmh {
        src_conn: p.my_conn,
        isn: p.my_isn,
        paths: 1,
        planes: 2,
        mtu: 4096,
        streams: 1024,
        reason: 0,
        rx_capacity_mbps: 1,
        nonce: p.nonce,
    };
    let f = t.cm_frame(opcode::MR_DISCONNECT, p.iut_conn, &c, 0);
    t.send(0, &f)?;
    let (g, _) = t.expect_cm(opcode::MR_DISCONNECT_ACK, "DISCONNECT_ACK")?;
    check_eq!("DISCONNECT_ACK DestQP", H(g.bth.dest_qp), H(p.my_conn));
    let ev = t.new_events()?;
    let comps: Vec<_> = ev
        .iter()
        .filter_map(|e| {
            if let Event::Completion(c) = e {
                Some((c.wr_id, c.status))
            } else {
                None
            }
        })
        .collect();
    check_eq!("pending message fails", comps, vec![(31, Status::ConnectionFailed)]);
    check!(ev.contains(&Event::Disconnected(p.conn)), "no Disconnected ({ev:?})");
    // Repeated (our DISCONNECT_ACK was lost): still answered, no second event.
    t.send(0, &f)?;
    t.expect_cm(opcode::MR_DISCONNECT_ACK, "DISCONNECT_ACK for a released connection")?;
    check_eq!("events", t.new_events()?.len(), 0);
    // The connection is gone: data for it is unknown_connection.
    let before = t.counters();
    let mut q = p.clone();
    let k = t.region(8, true, |_| 0)?;
    t.data(&mut q, &Data::write(0, 0, 0, k.va, k.rkey, b"x"))?;
    t.expect_silence("dropped")?;
    t.expect_counters(&before, &[("unknown_connection", 1)])?;
    Ok(())
}

fn local_disconnect(t: &mut Tester<'_>) -> R {
    let p = t.open(1, 4096)?;
    let src = t.region(64, false, |_| 1)?;
    t.post_write(&p, 0, lb(src, 0, 8), rb(0x9000, 0x55), 32)?;
    let _ = t.drain()?;
    let t0 = t.now();
    t.adapter()
        .disconnect(p.conn)
        .map_err(|e| crate::harness::Fail(format!("disconnect: {e}")))?;
    let (d, c) = t.expect_cm(opcode::MR_DISCONNECT, "DISCONNECT")?;
    t.expect_completions(&[(WorkKind::Write, 0, 0, Status::ConnectionFailed, 8)])?;
    t.advance(1_000_000)?;
    let (r, _) = t.expect_cm(opcode::MR_DISCONNECT, "retried DISCONNECT")?;
    check_eq!("retry after CM_RETRY_NS", r.at - t0, 1_000_000);
    check_eq!(
        "retry identical",
        crate::harness::hex(&r.bytes),
        crate::harness::hex(&d.bytes)
    );
    let f = t.cm_frame(
        opcode::MR_DISCONNECT_ACK,
        c.src_conn,
        &Cmh {
            src_conn: c.src_conn,
            ..c
        },
        0,
    );
    t.send(0, &f)?;
    check!(
        t.new_events()?.contains(&Event::Disconnected(p.conn)),
        "no Disconnected after DISCONNECT_ACK"
    );
    t.advance(3_000_000)?;
    t.expect_silence("no more retries")?;
    Ok(())
}

fn late_connect_ack(t: &mut Tester<'_>) -> R {
    let p = t.open_from_iut(1, 4096)?;
    let before = t.counters();
    let reply = Cmh {
        src_conn: TESTER_CONN,
        isn: 1,
        paths: 1,
        planes: 2,
        mtu: 4096,
        streams: 1024,
        reason: 0,
        rx_capacity_mbps: 0,
        nonce: p.nonce,
    };
    let f = t.cm_frame(opcode::MR_CONNECT_ACK, p.iut_conn, &reply, 0);
    t.send(0, &f)?;
    t.expect_silence("ignored")?;
    t.expect_counters(&before, &[])?;
    check_eq!("events", t.new_events()?.len(), 0);
    // Still established with the first ISN: our data at TESTER_ISN is recorded.
    let mut p = p;
    let k = t.region(8, true, |_| 0)?;
    t.data(&mut p, &Data::write(0, 0, 0, k.va, k.rkey, b"x"))?;
    let (_, a) = t.expect_ack("ACK")?;
    check_eq!("SACK word 0", a.sack[0], 1);
    let _ = TESTER_NONCE;
    Ok(())
}

fn peer_timeout(t: &mut Tester<'_>) -> R {
    let p = t.open(1, 4096)?;
    let src = t.region(64, false, |_| 1)?;
    t.post_write(&p, 0, lb(src, 0, 8), rb(0x9000, 0x55), 33)?;
    let before = t.counters();
    let ok = t.advance_until(20_000_000, 100_000, |t| {
        t.events().contains(&Event::Disconnected(p.conn))
    })?;
    check!(ok, "no Disconnected within 20 ms (peer_timeout_ns 3 ms)");
    let ev = t.new_events()?;
    let comps: Vec<_> = ev
        .iter()
        .filter_map(|e| {
            if let Event::Completion(c) = e {
                Some((c.wr_id, c.status))
            } else {
                None
            }
        })
        .collect();
    check_eq!("pending message fails", comps, vec![(33, Status::ConnectionFailed)]);
    let c = t.counters();
    check_eq!("peer_timeouts", c["peer_timeouts"] - before["peer_timeouts"], 1);
    // No DISCONNECT is sent on a peer timeout.
    let frames = t.drain()?;
    if frames.iter().any(|f| f.opcode() == opcode::MR_DISCONNECT) {
        fail!("a peer timeout must not send DISCONNECT");
    }
    Ok(())
}

fn connect_ack_checks(t: &mut Tester<'_>) -> R {
    let tester = t.env.tester;
    let conn = t
        .adapter()
        .connect(tester)
        .map_err(|e| crate::harness::Fail(format!("connect: {e}")))?;
    let (_, c) = t.expect_cm(opcode::MR_CONNECT, "CONNECT")?;
    let good = Cmh {
        src_conn: TESTER_CONN,
        ..c
    };
    let before = t.counters();
    // From the stranger's address.
    let mut f = t.cm_frame(opcode::MR_CONNECT_ACK, c.src_conn, &good, 0);
    f[26..30].copy_from_slice(&t.env.stranger.ips[0]);
    super::fix_ip_checksum(&mut f);
    super::fix_icrc(&mut f);
    t.send(0, &f)?;
    for bad in [
        Cmh { paths: 0, ..good },
        Cmh { planes: 0, ..good },
        Cmh { mtu: 63, ..good },
    ] {
        let f = t.cm_frame(opcode::MR_CONNECT_ACK, c.src_conn, &bad, 0);
        t.send(0, &f)?;
    }
    t.expect_silence("all dropped")?;
    t.expect_counters(&before, &[("invalid_requests", 4)])?;
    check!(
        !t.new_events()?.contains(&Event::Connected(conn)),
        "connected by an invalid CONNECT_ACK"
    );
    let f = t.cm_frame(opcode::MR_CONNECT_ACK, c.src_conn, &good, 0);
    t.send(0, &f)?;
    check!(
        t.new_events()?.contains(&Event::Connected(conn)),
        "the valid CONNECT_ACK must connect"
    );
    Ok(())
}

fn stray_disconnect_ack(t: &mut Tester<'_>) -> R {
    let mut p = t.open(1, 4096)?;
    let before = t.counters();
    let c = Cmh {
        src_conn: p.iut_conn,
        isn: 0,
        paths: 1,
        planes: 2,
        mtu: 4096,
        streams: 1024,
        reason: 0,
        rx_capacity_mbps: 0,
        nonce: p.nonce,
    };
    let f = t.cm_frame(opcode::MR_DISCONNECT_ACK, p.iut_conn, &c, 0);
    t.send(0, &f)?;
    t.expect_silence("ignored")?;
    t.expect_counters(&before, &[])?;
    check_eq!("events", t.new_events()?.len(), 0);
    // Still Established.
    let k = t.region(8, true, |_| 0)?;
    t.data(&mut p, &Data::write(0, 0, 0, k.va, k.rkey, b"x"))?;
    let (_, a) = t.expect_ack("ACK")?;
    check_eq!("SACK word 0", a.sack[0], 1);
    Ok(())
}
