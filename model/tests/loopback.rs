//! End-to-end behaviour of two mroce NICs over a faulty link: loss of every packet type,
//! reordering, duplication, PSN wraparound, forged and duplicate ACKs, bad placement.

mod common;
use common::*;
use mroce_model::endpoint::EndpointConfig;
use mroce_model::memory::{Access, MrKey};
use mroce_model::transport::*;
use mroce_model::wire::{self, opcode};

#[test]
fn write_lossless() {
    let mut l = Link::simple(1, 0.0);
    write_transfer(&mut l, 2 << 20, 1);
    assert_eq!(l.a.stats().retransmits, 0);
    assert_eq!(l.b.stats().duplicate_chunks, 0);
}

#[test]
fn write_with_random_loss_both_directions() {
    let mut l = Link::simple(2, 0.05);
    write_transfer(&mut l, 2 << 20, 2);
    assert!(l.a.stats().retransmits > 0);
}

#[test]
fn write_with_heavy_loss() {
    let mut l = Link::simple(3, 0.2);
    write_transfer(&mut l, 1 << 20, 3);
}

#[test]
fn loss_of_each_packet_type() {
    // Drop the first k frames of each opcode, in turn: CONNECT, CONNECT_ACK, data, ACK, probe.
    for op in [
        opcode::MR_CONNECT,
        opcode::MR_CONNECT_ACK,
        opcode::MR_WRITE,
        opcode::MR_ACK,
        opcode::MR_PROBE,
    ] {
        let mut seen = 0u32;
        let inj: Injector = Box::new(move |_, f, _| {
            if opcode(f) == op {
                seen += 1;
                if seen <= 3 || seen.is_multiple_of(7) {
                    return Fate::Drop;
                }
            }
            Fate::Deliver
        });
        let mut l = Link::new(
            10 + op as u64,
            EndpointConfig::default(),
            EndpointConfig::default(),
            inj,
        );
        write_transfer(&mut l, 1 << 20, op as u64);
    }
}

#[test]
fn reordering_and_duplication_keep_integrity() {
    let inj: Injector = Box::new(|_, _, rng| {
        let r = unit(rng);
        if r < 0.05 {
            Fate::Duplicate
        } else if r < 0.15 {
            Fate::Delay((unit(rng) * 20_000.0) as u64)
        } else if r < 0.17 {
            Fate::Drop
        } else {
            Fate::Deliver
        }
    });
    let mut l = Link::new(4, EndpointConfig::default(), EndpointConfig::default(), inj);
    write_transfer(&mut l, 2 << 20, 4);
    let s = l.b.stats();
    assert!(
        s.duplicate_psn + s.duplicate_chunks > 0,
        "duplicates were seen and dropped"
    );
}

#[test]
fn psn_wraparound() {
    let cfg = EndpointConfig {
        fixed_isn: Some(u32::MAX - 20),
        ..Default::default()
    };
    let mut l = Link::new(5, cfg, cfg, random_loss(0.02));
    write_transfer(&mut l, 4 << 20, 5);
    let c = l.a.connection(1).unwrap();
    // Every path's PSN space wrapped past zero.
    for p in 0..16 {
        let st = c.scoreboard().path(p);
        assert!(st.next < 1 << 20, "path {p} next {}", st.next);
    }
}

#[test]
fn placement_outside_region_and_wrong_rkey_fail_cleanly() {
    let mut l = Link::simple(6, 0.1);
    let c = l.connect();
    let (src, dst) = regions(&mut l, 64 << 10, 6);
    // 1: past the end of the region. 2: unknown R_Key. 3: a good one after them on the same stream.
    l.a.post_write(
        c,
        0,
        LocalBuf {
            key: src,
            offset: 0,
            len: 8192,
        },
        RemoteBuf {
            va: dst.va + (60 << 10),
            rkey: dst.rkey,
        },
        1,
    )
    .unwrap();
    l.a.post_write(
        c,
        0,
        LocalBuf {
            key: src,
            offset: 0,
            len: 100,
        },
        RemoteBuf {
            va: dst.va,
            rkey: dst.rkey ^ 0x55,
        },
        2,
    )
    .unwrap();
    l.a.post_write(
        c,
        0,
        LocalBuf {
            key: src,
            offset: 0,
            len: 4096,
        },
        RemoteBuf {
            va: dst.va,
            rkey: dst.rkey,
        },
        3,
    )
    .unwrap();
    assert!(l.run_until(1_000_000_000, |l| l.completions_a().len() == 3));
    let st: Vec<(u64, Status)> = l.completions_a().iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(
        st,
        vec![
            (1, Status::RemoteAccessError),
            (2, Status::RemoteAccessError),
            (3, Status::Ok)
        ]
    );
    let s = l.b.stats();
    assert!(s.bounds_violations > 0 && s.rkey_violations > 0);
    // Placement is per packet: the in-bounds first packet of write 1 may land (as on any
    // RDMA NIC before the error), the out-of-bounds one never does; write 2 lands nowhere.
    assert!(l.b.memory().region(dst).unwrap()[4096..60 << 10]
        .iter()
        .all(|&x| x == 0));
    assert_eq!(
        &l.b.memory().region(dst).unwrap()[..4096],
        &l.a.memory().region(src).unwrap()[..4096]
    );
}

#[test]
fn send_waits_for_posted_receive() {
    let mut l = Link::simple(7, 0.02);
    let c = l.connect();
    let bc = l.b_conn();
    let src = l.a.memory_mut().register(3 * 5000, Access { remote_write: false });
    for (i, x) in
        l.a.memory_mut()
            .local_mut(src, 0, 15000)
            .unwrap()
            .iter_mut()
            .enumerate()
    {
        *x = (i * 7) as u8;
    }
    let dst = l.b.memory_mut().register(3 * 8192, Access { remote_write: false });
    for i in 0..3u64 {
        l.a.post_send(
            c,
            9,
            LocalBuf {
                key: src,
                offset: i * 5000,
                len: 5000,
            },
            100 + i,
        )
        .unwrap();
    }
    // No receive posted yet: SENDs are refused (and retransmitted), nothing completes.
    l.run_until(l.now + 300_000, |_| false);
    assert!(l.completions_a().is_empty());
    assert!(l.b.stats().rnr_drops > 0);
    for i in 0..3u64 {
        l.b.post_recv(
            bc,
            9,
            LocalBuf {
                key: dst,
                offset: i * 8192,
                len: 8192,
            },
            200 + i,
        )
        .unwrap();
    }
    assert!(l.run_until(l.now + 1_000_000_000, |l| l.completions_a().len() == 3
        && l.completions_b().len() == 3));
    let rx = l.completions_b();
    assert_eq!(
        rx.iter().map(|c| (c.wr_id, c.kind, c.bytes)).collect::<Vec<_>>(),
        vec![
            (200, WorkKind::Recv, 5000),
            (201, WorkKind::Recv, 5000),
            (202, WorkKind::Recv, 5000)
        ]
    );
    for i in 0..3usize {
        assert_eq!(
            &l.b.memory().region(dst).unwrap()[i * 8192..i * 8192 + 5000],
            &l.a.memory().region(src).unwrap()[i * 5000..i * 5000 + 5000]
        );
    }
}

#[test]
fn send_larger_than_receive_is_rejected() {
    let mut l = Link::simple(8, 0.0);
    let c = l.connect();
    let bc = l.b_conn();
    let src = l.a.memory_mut().register(10000, Access { remote_write: false });
    let dst = l.b.memory_mut().register(4096, Access { remote_write: false });
    l.b.post_recv(
        bc,
        0,
        LocalBuf {
            key: dst,
            offset: 0,
            len: 4096,
        },
        1,
    )
    .unwrap();
    l.a.post_send(
        c,
        0,
        LocalBuf {
            key: src,
            offset: 0,
            len: 10000,
        },
        2,
    )
    .unwrap();
    assert!(l.run_until(100_000_000, |l| l.completions_a().len() == 1
        && l.completions_b().len() == 1));
    assert_eq!(l.completions_a()[0].status, Status::RemoteInvalid);
    assert_eq!(l.completions_b()[0].status, Status::RemoteInvalid);
}

#[test]
fn forged_and_duplicate_acks_are_harmless() {
    // Duplicate every ACK and inject forged ACKs claiming PSNs that were never sent.
    let inj: Injector = Box::new(|to_b, f, _| {
        if !to_b && opcode(f) == opcode::MR_ACK {
            Fate::Duplicate
        } else {
            Fate::Deliver
        }
    });
    let mut l = Link::new(9, EndpointConfig::default(), EndpointConfig::default(), inj);
    let c = l.connect();
    let (src, dst) = regions(&mut l, 1 << 20, 9);
    let n = post_writes(&mut l, c, src, dst, 1 << 20, 128 << 10, 2);
    let mut buf = vec![0u8; 256];
    let peer_conn = 1; // A's connection id, as B addresses it
    for k in 0..200u32 {
        l.step();
        if k % 10 == 0 {
            let a = l.a.connection(c).unwrap();
            let st = *a.scoreboard().path((k as usize % mroce_model::params::PATHS) as u8);
            // All ones from the current floor: claims PSNs far beyond what was sent.
            let akh = wire::Akh {
                path: (k as usize % mroce_model::params::PATHS) as u8,
                base: st.una,
                cum: st.una,
                sack: [u32::MAX; mroce_model::params::SACK_WORDS],
                ..Default::default()
            };
            let addrs = wire::FrameAddrs {
                src_mac: addr_b().mac,
                dst_mac: addr_a().mac,
                src_ip: addr_b().ips[0],
                dst_ip: addr_a().ips[0],
                src_port: 0xC000,
                ttl: 64,
                ..Default::default()
            };
            let mut bth = wire::Bth::new(0, peer_conn, 0);
            bth.opcode = opcode::MR_ACK;
            let len = wire::encode_mroce(&mut buf, &addrs, &bth, &wire::MrPacket::Ack(akh)).unwrap();
            l.inject_frame(false, 0, buf[..len].to_vec());
            // A misaligned base is rejected outright.
            let akh2 = wire::Akh {
                base: st.una.wrapping_add(3),
                ..akh
            };
            let len = wire::encode_mroce(&mut buf, &addrs, &bth, &wire::MrPacket::Ack(akh2)).unwrap();
            l.inject_frame(false, 0, buf[..len].to_vec());
        }
    }
    let done = l.run_until(2_000_000_000, |l| {
        l.completions_a().len() == n && l.completions_b().len() == n
    });
    let s = l.a.stats();
    assert!(s.forged_acks > 0 && s.forged_ack_bits > 0, "{s:?}");
    // A forged ACK may wrongly free PSNs that were really sent (no authentication on the
    // wire), but it can never corrupt data: whatever completes is byte-exact.
    assert!(done);
    let ok = l.completions_a().iter().all(|c| c.status == Status::Ok);
    if ok {
        assert_eq!(l.a.memory().region(src).unwrap(), l.b.memory().region(dst).unwrap());
    }
}

#[test]
fn garbage_frames_are_counted_drops() {
    let mut l = Link::simple(11, 0.0);
    let _c = l.connect();
    let mut r = mroce_model::Rng::new(5);
    let mut good = vec![0u8; 256];
    let addrs = wire::FrameAddrs {
        src_mac: addr_a().mac,
        dst_mac: addr_b().mac,
        src_ip: addr_a().ips[0],
        dst_ip: addr_b().ips[0],
        src_port: 0xC001,
        ttl: 64,
        ..Default::default()
    };
    let n = wire::encode_mroce(
        &mut good,
        &addrs,
        &wire::Bth::new(opcode::MR_PROBE, l.b_conn(), 0),
        &wire::MrPacket::Probe {
            mrh: Default::default(),
        },
    )
    .unwrap();
    good.truncate(n);
    let before = l.b.stats().bad_frames;
    for i in 0..2000usize {
        let mut f = good.clone();
        match i % 4 {
            0 => f.truncate(i % n),
            1 => f[(r.next_u32() as usize) % n] ^= 1 << (i % 8),
            2 => f = (0..(r.next_u32() % 300)).map(|_| r.next_u32() as u8).collect(),
            _ => f[wire::BTH_OFFSET] = 0xE0 + (i % 16) as u8,
        }
        l.b.handle_frame(l.now, 0, &f);
    }
    let s = l.b.stats();
    assert!(s.bad_frames - before >= 1500, "{s:?}");
    assert!(s.bad_icrc > 0 && s.truncated > 0);
}

#[test]
fn unknown_connection_and_peer() {
    let mut l = Link::simple(12, 0.0);
    let _c = l.connect();
    let mut buf = vec![0u8; 256];
    let addrs = wire::FrameAddrs {
        src_mac: [9; 6],
        dst_mac: addr_b().mac,
        src_ip: [10, 9, 9, 9],
        dst_ip: addr_b().ips[0],
        src_port: 0xC001,
        ttl: 64,
        ..Default::default()
    };
    let n = wire::encode_mroce(
        &mut buf,
        &addrs,
        &wire::Bth::new(0, 77, 0),
        &wire::MrPacket::Probe {
            mrh: Default::default(),
        },
    )
    .unwrap();
    l.b.handle_frame(0, 0, &buf[..n]);
    assert_eq!(l.b.stats().unknown_connection, 1);
    let n = wire::encode_mroce(
        &mut buf,
        &addrs,
        &wire::Bth::new(0, 0, 0),
        &wire::MrPacket::Connect(wire::Cmh {
            paths: 4,
            planes: 1,
            mtu: 4096,
            ..Default::default()
        }),
    )
    .unwrap();
    l.b.handle_frame(0, 0, &buf[..n]);
    assert_eq!(l.b.stats().unknown_peer, 1);
}

#[test]
fn peer_disappears() {
    let mut l = Link::simple(13, 0.0);
    let c = l.connect();
    l.inject = Box::new(|_, _, _| Fate::Drop);
    let (src, dst) = regions(&mut l, 64 << 10, 13);
    post_writes(&mut l, c, src, dst, 64 << 10, 64 << 10, 1);
    assert!(l.run_until(1_000_000_000, |l| l.events_a.contains(&Event::Disconnected(c))));
    assert_eq!(l.completions_a()[0].status, Status::ConnectionFailed);
    assert_eq!(l.a.stats().peer_timeouts, 1);
}

#[test]
fn disconnect_is_clean() {
    let mut l = Link::simple(14, 0.1);
    let c = l.connect();
    l.a.disconnect(l.now, c).unwrap();
    assert!(
        l.run_until(l.now + 100_000_000, |l| l.events_a.contains(&Event::Disconnected(c))
            && l.events_b.iter().any(|e| matches!(e, Event::Disconnected(_))))
    );
    assert_eq!(l.a.connection_count(), 0);
    assert_eq!(l.b.connection_count(), 0);
}

#[test]
fn out_of_window_psn_is_a_counted_drop() {
    let mut l = Link::simple(15, 0.0);
    let _c = l.connect();
    let bc = l.b_conn();
    let a_conn = 1;
    let mut buf = vec![0u8; 512];
    let addrs = wire::FrameAddrs {
        src_mac: addr_a().mac,
        dst_mac: addr_b().mac,
        src_ip: addr_a().ips[0],
        dst_ip: addr_b().ips[0],
        src_port: 0xC001,
        ttl: 64,
        ..Default::default()
    };
    let base = l.b.connection(bc).unwrap().tracker().path(0).base;
    // A probe 300 PSNs ahead of the window (which spans 256) and one far behind, both
    // carrying the sender's true floor. (A floor ahead of the window does slide it, one word
    // per packet: that is how a receiver catches up after the sender abandoned a window.)
    for psn in [base.wrapping_add(300), base.wrapping_sub(1000)] {
        let mrh = wire::Mrh {
            path: 0,
            psn,
            floor: base,
            ..Default::default()
        };
        let n = wire::encode_mroce(
            &mut buf,
            &addrs,
            &wire::Bth::new(0, bc, psn),
            &wire::MrPacket::Probe { mrh },
        )
        .unwrap();
        l.b.handle_frame(l.now, 0, &buf[..n]);
    }
    let s = l.b.stats();
    assert_eq!(s.out_of_window, 1);
    assert_eq!(s.duplicate_psn, 1);
    assert_eq!(
        l.b.connection(bc).unwrap().tracker().path(0).base,
        base,
        "window unchanged"
    );
    let _ = a_conn;
}

#[test]
fn lost_naks_and_disconnects_are_recovered() {
    let mut naks = 0;
    let mut discs = 0;
    let inj: Injector = Box::new(move |_, f, _| match opcode(f) {
        opcode::MR_NAK => {
            naks += 1;
            if naks <= 3 {
                Fate::Drop
            } else {
                Fate::Deliver
            }
        }
        opcode::MR_DISCONNECT | opcode::MR_DISCONNECT_ACK => {
            discs += 1;
            if discs <= 2 {
                Fate::Drop
            } else {
                Fate::Deliver
            }
        }
        _ => Fate::Deliver,
    });
    let mut l = Link::new(16, EndpointConfig::default(), EndpointConfig::default(), inj);
    let c = l.connect();
    let (src, dst) = regions(&mut l, 16 << 10, 16);
    l.a.post_write(
        c,
        0,
        LocalBuf {
            key: src,
            offset: 0,
            len: 100,
        },
        RemoteBuf {
            va: dst.va,
            rkey: dst.rkey ^ 1,
        },
        1,
    )
    .unwrap();
    assert!(l.run_until(1_000_000_000, |l| l.completions_a().len() == 1));
    assert_eq!(
        l.completions_a()[0].status,
        Status::RemoteAccessError,
        "a lost NAK never turns into success"
    );
    assert!(l.b.stats().naks_sent >= 4);
    l.a.disconnect(l.now, c).unwrap();
    assert!(l.run_until(l.now + 100_000_000, |l| l.a.connection_count() == 0
        && l.b.connection_count() == 0));
}

#[test]
fn fewer_paths_at_the_acceptor_are_negotiated() {
    use mroce_model::params::PATHS;
    // the initiator offers every path, the acceptor takes a quarter (path PATHS/4 is the first refused)
    let a = EndpointConfig {
        paths: PATHS as u8,
        ..Default::default()
    };
    let b = EndpointConfig {
        paths: (PATHS / 4) as u8,
        ..Default::default()
    };
    let mut l = Link::new(17, a, b, random_loss(0.01));
    write_transfer(&mut l, 1 << 20, 17);
    assert_eq!(l.b.stats().bad_path, 0);
    assert_eq!(
        l.a.connection(1).unwrap().selector().path((PATHS / 4) as u8).health,
        mroce_model::path_selector::PathHealth::Disabled
    );
}

#[test]
fn sends_match_receives_by_rsn_even_mixed_with_writes() {
    // WRITE, SEND, WRITE, SEND on one stream, with the first packets lost: each SEND must
    // land in its own receive (the n-th SEND in the n-th receive).
    let mut dropped = 0;
    let inj: Injector = Box::new(move |to_b, f, _| {
        if to_b && matches!(opcode(f), opcode::MR_WRITE | opcode::MR_SEND) && dropped < 2 {
            dropped += 1;
            return Fate::Drop;
        }
        Fate::Deliver
    });
    let mut l = Link::new(18, EndpointConfig::default(), EndpointConfig::default(), inj);
    let c = l.connect();
    let bc = l.b_conn();
    let src = l.a.memory_mut().register(4 * 6000, Access { remote_write: false });
    for (i, x) in
        l.a.memory_mut()
            .local_mut(src, 0, 24000)
            .unwrap()
            .iter_mut()
            .enumerate()
    {
        *x = (i % 251) as u8;
    }
    let wdst = l.b.memory_mut().register(2 * 6000, Access { remote_write: true });
    let rdst = l.b.memory_mut().register(2 * 8192, Access { remote_write: false });
    for i in 0..2u64 {
        l.b.post_recv(
            bc,
            3,
            LocalBuf {
                key: rdst,
                offset: i * 8192,
                len: 8192,
            },
            500 + i,
        )
        .unwrap();
    }
    for i in 0..4u64 {
        let local = LocalBuf {
            key: src,
            offset: i * 6000,
            len: 6000,
        };
        if i % 2 == 0 {
            l.a.post_write(
                c,
                3,
                local,
                RemoteBuf {
                    va: wdst.va + (i / 2) * 6000,
                    rkey: wdst.rkey,
                },
                i,
            )
            .unwrap();
        } else {
            l.a.post_send(c, 3, local, i).unwrap();
        }
    }
    assert!(l.run_until(100_000_000, |l| l.completions_a().len() == 4
        && l.completions_b().len() == 4));
    let rx: Vec<(WorkKind, u64)> = l.completions_b().iter().map(|c| (c.kind, c.wr_id)).collect();
    assert_eq!(
        rx,
        vec![
            (WorkKind::WriteReceived, 0),
            (WorkKind::Recv, 500),
            (WorkKind::WriteReceived, 0),
            (WorkKind::Recv, 501)
        ]
    );
    let a = l.a.memory().region(src).unwrap().to_vec();
    let r = l.b.memory().region(rdst).unwrap();
    assert_eq!(&r[..6000], &a[6000..12000], "SEND 1 in receive 0");
    assert_eq!(&r[8192..8192 + 6000], &a[18000..24000], "SEND 3 in receive 1");
    let w = l.b.memory().region(wdst).unwrap();
    assert_eq!(&w[..6000], &a[..6000]);
    assert_eq!(&w[6000..], &a[12000..18000]);
}

#[test]
fn failed_write_does_not_consume_a_receive() {
    let mut l = Link::simple(19, 0.0);
    let c = l.connect();
    let bc = l.b_conn();
    let src = l.a.memory_mut().register(4096, Access { remote_write: false });
    let dst = l.b.memory_mut().register(4096, Access { remote_write: true });
    l.b.post_recv(
        bc,
        0,
        LocalBuf {
            key: dst,
            offset: 0,
            len: 4096,
        },
        77,
    )
    .unwrap();
    l.a.post_write(
        c,
        0,
        LocalBuf {
            key: src,
            offset: 0,
            len: 64,
        },
        RemoteBuf {
            va: dst.va,
            rkey: 0xBAD,
        },
        1,
    )
    .unwrap();
    l.a.post_send(
        c,
        0,
        LocalBuf {
            key: src,
            offset: 0,
            len: 64,
        },
        2,
    )
    .unwrap();
    assert!(l.run_until(100_000_000, |l| l.completions_a().len() == 2
        && l.completions_b().len() == 2));
    let rx: Vec<(WorkKind, u64, Status)> = l.completions_b().iter().map(|c| (c.kind, c.wr_id, c.status)).collect();
    assert_eq!(
        rx,
        vec![
            (WorkKind::WriteReceived, 0, Status::RemoteAccessError),
            (WorkKind::Recv, 77, Status::Ok)
        ]
    );
}

#[test]
fn idle_connection_does_not_time_out_when_work_resumes() {
    let mut l = Link::simple(20, 0.0);
    let c = l.connect();
    let (src, dst) = regions(&mut l, 64 << 10, 20);
    // Idle for longer than the peer timeout (100 ms), then transfer.
    l.run_until(l.now + 150_000_000, |_| false);
    post_writes(&mut l, c, src, dst, 64 << 10, 16 << 10, 2);
    assert!(l.run_until(l.now + 100_000_000, |l| l.completions_a().len() == 4));
    assert!(l.completions_a().iter().all(|c| c.status == Status::Ok));
    assert_eq!(l.a.stats().peer_timeouts, 0);
}

#[test]
fn streams_are_served_round_robin() {
    let mut l = Link::simple(21, 0.0);
    let c = l.connect();
    let (src, dst) = regions(&mut l, 8 << 20, 21);
    l.a.post_write(
        c,
        0,
        LocalBuf {
            key: src,
            offset: 0,
            len: 8 << 20,
        },
        RemoteBuf {
            va: dst.va,
            rkey: dst.rkey,
        },
        1,
    )
    .unwrap();
    l.a.post_write(
        c,
        1,
        LocalBuf {
            key: src,
            offset: 0,
            len: 4096,
        },
        RemoteBuf {
            va: dst.va,
            rkey: dst.rkey,
        },
        2,
    )
    .unwrap();
    assert!(l.run_until(1_000_000_000, |l| l.completions_a().len() == 2));
    assert_eq!(
        l.completions_a()[0].wr_id,
        2,
        "the small message on stream 1 is not stuck behind stream 0"
    );
}

/// `set_ready_planes`: data goes only to paths on planes whose port can take it; with no plane
/// ready nothing is sent, yet the connection keeps its turn and resumes as soon as a port frees
/// up (no ACK or timer needed).
#[test]
fn data_goes_only_to_planes_whose_port_is_ready() {
    use std::cell::RefCell;
    use std::rc::Rc;
    // data frames A sent, by plane (the source address is 10.0.<plane>.1)
    let seen = Rc::new(RefCell::new([0u64; 2]));
    let s2 = seen.clone();
    let inj: Injector = Box::new(move |to_b, f, _| {
        if to_b && opcode(f) == opcode::MR_WRITE {
            let plane = f[wire::ETH_LEN + 14] as usize;
            s2.borrow_mut()[plane.min(1)] += 1;
        }
        Fate::Deliver
    });
    let mut l = Link::new(41, EndpointConfig::default(), EndpointConfig::default(), inj);
    let c = l.connect();
    let (src, dst) = regions(&mut l, 256 << 10, 41);
    // only plane 1's port is ready
    l.a.set_ready_planes(0b10);
    let n = post_writes(&mut l, c, src, dst, 128 << 10, 64 << 10, 1);
    assert!(l.run_until(l.now + 50_000_000, |l| l.completions_a().len() == n));
    let [p0, p1] = *seen.borrow();
    assert_eq!(p0, 0, "data sent on plane 0 while its port was busy");
    assert!(p1 >= 32, "{p1} data frames on plane 1");
    // no port ready: nothing goes out, and the connection keeps its turn
    l.a.set_ready_planes(0);
    let m = post_writes(&mut l, c, src, dst, 64 << 10, 64 << 10, 1);
    let mut buf = vec![0u8; 9000];
    assert!(l.a.poll_transmit(l.now, &mut buf).is_none());
    let before = seen.borrow()[0] + seen.borrow()[1];
    l.a.set_ready_planes(u8::MAX);
    let t =
        l.a.poll_transmit(l.now, &mut buf)
            .expect("data as soon as a port is ready");
    assert_eq!(opcode(&buf[..t.len]), opcode::MR_WRITE);
    l.a.set_ready_planes(0b01);
    assert!(l.run_until(l.now + 50_000_000, |l| l.completions_a().len() == n + m));
    assert!(seen.borrow()[0] > 0 && seen.borrow()[0] + seen.borrow()[1] > before);
}

/// A connection that has sent `frames` data frames of a 256 KiB WRITE (lost: nothing is
/// delivered) and is then left with no port ready: its polls come back blocked and the
/// repeats are skipped (`blocked_polls_skipped`). Returns the link and the source region.
fn blocked_after(seed: u64, frames: usize) -> (Link, MrKey) {
    let mut l = Link::simple(seed, 0.0);
    let c = l.connect();
    let (src, dst) = regions(&mut l, 256 << 10, seed);
    post_writes(&mut l, c, src, dst, 256 << 10, 256 << 10, 1);
    let mut buf = vec![0u8; 9000];
    for _ in 0..frames {
        let t = l.a.poll_transmit(l.now, &mut buf).expect("data");
        assert_eq!(opcode(&buf[..t.len]), opcode::MR_WRITE);
    }
    l.a.set_ready_planes(0);
    assert!(l.a.poll_transmit(l.now, &mut buf).is_none());
    assert!(l.a.poll_transmit(l.now, &mut buf).is_none());
    assert!(l.a.stats().blocked_polls_skipped >= 1, "{:?}", l.a.stats());
    (l, src)
}

/// A blocked connection is not polled again until something could change that, but a TLP
/// that falls due is still sent at once, on the next poll, even before any timer has run on it.
#[test]
fn blocked_connection_still_sends_its_due_tail_probe() {
    // the data frames sent owe TLPs on their paths
    let (mut l, _) = blocked_after(43, 4);
    let mut buf = vec![0u8; 9000];
    // much later, still no port ready and no timer run: the due TLP goes out all the same
    let t =
        l.a.poll_transmit(l.now + 10_000_000, &mut buf)
            .expect("the due tail-loss probe");
    assert_eq!(opcode(&buf[..t.len]), opcode::MR_PROBE);
}

/// A blocked connection whose buffer is deregistered meanwhile is polled again: the pending
/// message fails at once, as it would without the skipped polls.
#[test]
fn blocked_connection_sees_a_deregistered_buffer() {
    let (mut l, src) = blocked_after(44, 1);
    l.a.memory_mut().deregister(src).unwrap();
    // (what goes out then, if anything, is a trailing probe behind the data already sent)
    let mut buf = vec![0u8; 9000];
    let _ = l.a.poll_transmit(l.now, &mut buf);
    assert_eq!(l.a.stats().local_access_errors, 1, "{:?}", l.a.stats());
}
