//! Property tests (arbitrary + arbtest): wire round trip, decoding never panics, and the
//! invariants of the hardware-mapped components under arbitrary transaction streams.

use arbitrary::{Result, Unstructured};
use mroce_model::params::{ALPHA_ONE, CWND_FRAC_BITS, CWND_MAX_PKTS, CWND_MIN_PKTS, PATHS, SACK_BITS};
use mroce_model::path_selector::{Credit, PathHealth, PathSelector};
use mroce_model::rx_tracker::{RxPacket, RxTracker, RxVerdict};
use mroce_model::tx_scoreboard::TxScoreboard;
use mroce_model::wire::{self, *};

fn addrs(u: &mut Unstructured) -> Result<FrameAddrs> {
    Ok(FrameAddrs {
        dst_mac: u.arbitrary()?,
        src_mac: u.arbitrary()?,
        src_ip: u.arbitrary()?,
        dst_ip: u.arbitrary()?,
        src_port: u.arbitrary()?,
        dscp: u.int_in_range(0..=63)?,
        ecn: u.int_in_range(0..=3)?,
        ttl: u.arbitrary()?,
    })
}

fn mrh(u: &mut Unstructured) -> Result<Mrh> {
    Ok(Mrh {
        flags: u.int_in_range(0..=15)?,
        path: u.arbitrary()?,
        plane: u.arbitrary()?,
        psn: u.arbitrary()?,
        floor: u.arbitrary()?,
        ts: u.arbitrary()?,
    })
}

fn cmh(u: &mut Unstructured) -> Result<Cmh> {
    Ok(Cmh {
        src_conn: u.int_in_range(0..=0xFF_FFFF)?,
        isn: u.arbitrary()?,
        paths: u.arbitrary()?,
        planes: u.arbitrary()?,
        mtu: u.arbitrary()?,
        streams: u.arbitrary()?,
        reason: u.arbitrary()?,
        rx_capacity_mbps: u.arbitrary()?,
        nonce: u.arbitrary()?,
    })
}

#[test]
fn roundtrip_every_packet_type() {
    arbtest::arbtest(|u| {
        let payload_len = u.int_in_range(1..=600usize)?;
        let payload: Vec<u8> = (0..payload_len).map(|_| u.arbitrary()).collect::<Result<_>>()?;
        let offset: u32 = u.int_in_range(0..=1 << 20)?;
        let sdh = Sdh {
            stream: u.arbitrary()?,
            msg_seq: u.arbitrary()?,
            offset,
            msg_len: offset + payload_len as u32 + u.int_in_range(0..=5000)?,
        };
        let pkt = match u.int_in_range(0..=8)? {
            0 => MrPacket::Write {
                mrh: mrh(u)?,
                sdh,
                rph: Rph {
                    va: u.arbitrary()?,
                    rkey: u.arbitrary()?,
                },
                payload: &payload,
            },
            1 => MrPacket::Send {
                mrh: mrh(u)?,
                sdh,
                rsn: u.arbitrary()?,
                payload: &payload,
            },
            2 => MrPacket::Probe { mrh: mrh(u)? },
            3 => MrPacket::Ack(Akh {
                path: u.arbitrary()?,
                flags: u.arbitrary()?,
                ecn_count: u.arbitrary()?,
                pkt_count: u.arbitrary()?,
                base: u.arbitrary()?,
                cum: u.arbitrary()?,
                ts_echo: u.arbitrary()?,
                rate_hint_mbps: u.arbitrary()?,
                sack: u.arbitrary()?,
            }),
            4 => MrPacket::Nak(Nkh {
                syndrome: u.arbitrary()?,
                stream: u.arbitrary()?,
                msg_seq: u.arbitrary()?,
                offset: u.arbitrary()?,
            }),
            5 => MrPacket::Connect(cmh(u)?),
            6 => MrPacket::ConnectAck(cmh(u)?),
            7 => MrPacket::Disconnect(cmh(u)?),
            _ => MrPacket::DisconnectAck(cmh(u)?),
        };
        let a = addrs(u)?;
        let mut bth = Bth::new(0, u.int_in_range(0..=0xFF_FFFF)?, u.arbitrary()?);
        bth.ack_req = u.arbitrary()?;
        bth.se = u.arbitrary()?;
        let mut buf = vec![0u8; 2048];
        let n = encode_mroce(&mut buf, &a, &bth, &pkt).expect("encodes");
        let (f, p) = decode_mroce_frame(&buf[..n]).expect("decodes");
        assert_eq!(p, pkt);
        assert_eq!(f.addrs, a);
        assert_eq!(f.bth.dest_qp, bth.dest_qp);
        assert_eq!(f.bth.ack_req, bth.ack_req);
        Ok(())
    })
    .budget_ms(1500);
}

#[test]
fn decode_of_arbitrary_bytes_never_panics() {
    arbtest::arbtest(|u| {
        let bytes: Vec<u8> = u.arbitrary()?;
        let _ = decode_mroce_frame(&bytes);
        let _ = decode_mroce(u.arbitrary()?, &bytes);
        Ok(())
    })
    .budget_ms(1500);
}

#[test]
fn decode_of_mutated_frames_never_panics_and_never_accepts_a_changed_payload() {
    arbtest::arbtest(|u| {
        let payload: Vec<u8> = (0..u.int_in_range(1..=200usize)?)
            .map(|_| u.arbitrary())
            .collect::<Result<_>>()?;
        let sdh = Sdh {
            stream: 1,
            msg_seq: 2,
            offset: 0,
            msg_len: payload.len() as u32,
        };
        let pkt = MrPacket::Send {
            mrh: mrh(u)?,
            sdh,
            rsn: 3,
            payload: &payload,
        };
        let mut buf = vec![0u8; 512];
        let n = encode_mroce(&mut buf, &addrs(u)?, &Bth::new(0, 5, 1), &pkt).unwrap();
        let mut f = buf[..n].to_vec();
        let pos = u.int_in_range(wire::BTH_OFFSET + 12..=n - 5)?;
        f[pos] ^= u.int_in_range(1..=255u8)?;
        assert!(
            decode_mroce_frame(&f).is_err(),
            "a flipped transport byte must fail the ICRC"
        );
        let cut = u.int_in_range(0..=n)?;
        let _ = decode_mroce_frame(&f[..cut]);
        Ok(())
    })
    .budget_ms(1000);
}

/// Under arbitrary (possibly forged) ACK words and RTOs, the scoreboard frees or loses each
/// sent PSN at most once, and every sent PSN is eventually freed or lost.
#[test]
fn scoreboard_never_frees_twice_never_loses() {
    arbtest::arbtest(|u| {
        let isn: u32 = u.arbitrary()?;
        let mut s = TxScoreboard::new(isn);
        let mut sent: std::collections::HashMap<(u8, u32), u8> = Default::default();
        for _ in 0..u.int_in_range(1..=400)? {
            let path = u.int_in_range(0..=3u8)?;
            match u.int_in_range(0..=3)? {
                0 | 1 => {
                    if let Some(psn) = s.send(path, 0, 1000) {
                        assert!(sent.insert((path, psn), 0).is_none(), "PSN reused");
                    }
                }
                2 => {
                    let st = *s.path(path);
                    let k: u32 = u.int_in_range(0..=9)?;
                    let wp = st.una.wrapping_add(32 * k).wrapping_sub(32);
                    let r = s.ack_word(
                        path,
                        wp,
                        u.arbitrary()?,
                        st.una.wrapping_add(u.int_in_range(0..=300)?),
                        0,
                        1000,
                    );
                    for b in 0..32 {
                        if (r.freed | r.lost) >> b & 1 == 1 {
                            let e = sent
                                .get_mut(&(path, r.word_psn.wrapping_add(b)))
                                .expect("freed a PSN never sent");
                            *e += 1;
                            assert_eq!(*e, 1, "freed or lost twice");
                        }
                    }
                }
                _ => {
                    for _ in 0..8 {
                        let r = s.expire_head(path);
                        for b in 0..32 {
                            if r.lost >> b & 1 == 1 {
                                let e = sent
                                    .get_mut(&(path, r.word_psn.wrapping_add(b)))
                                    .expect("lost a PSN never sent");
                                *e += 1;
                                assert_eq!(*e, 1);
                            }
                        }
                    }
                }
            }
        }
        for p in 0..4u8 {
            for _ in 0..8 {
                let r = s.expire_head(p);
                for b in 0..32 {
                    if r.lost >> b & 1 == 1 {
                        *sent.get_mut(&(p, r.word_psn.wrapping_add(b))).unwrap() += 1;
                    }
                }
            }
        }
        assert!(sent.values().all(|&v| v == 1), "every sent PSN resolved exactly once");
        Ok(())
    })
    .budget_ms(1500);
}

/// The tracker reports New at most once per PSN and never for a PSN outside the window.
#[test]
fn tracker_new_at_most_once() {
    arbtest::arbtest(|u| {
        let isn: u32 = u.arbitrary()?;
        let mut t = RxTracker::new(isn);
        let mut seen = std::collections::HashSet::new();
        let mut floor = [isn; PATHS];
        for _ in 0..u.int_in_range(1..=500)? {
            let path = u.int_in_range(0..=2u8)?;
            let psn = isn.wrapping_add(u.int_in_range(0..=600u32)?);
            if u.ratio(1, 10)? {
                floor[path as usize] = floor[path as usize].wrapping_add(32).min(psn);
            }
            let base = t.path(path).base;
            let r = t.packet(&RxPacket {
                path,
                psn,
                floor: floor[path as usize],
                ce: u.arbitrary()?,
                ack_req: u.arbitrary()?,
                commit: u.ratio(9, 10)?,
            });
            if r.verdict == RxVerdict::New {
                assert!(seen.insert((path, psn)), "New twice");
                assert!((psn.wrapping_sub(base) as usize) < SACK_BITS);
            }
            if let Some(a) = r.ack {
                assert!(a.pkt_count > 0);
                assert_eq!(t.pending(path), 0);
            }
        }
        Ok(())
    })
    .budget_ms(1500);
}

/// The selector takes any operation with any arguments (the whole range of each field, not
/// what a connection sends): no overflow (this file also runs in a debug build, see
/// scripts/test.sh), the window stays within its bounds, alpha within 0..=1, and a chosen path
/// was eligible and the connection below its limit.
#[test]
fn selector_takes_any_operation_stream() {
    arbtest::arbtest(|u| {
        let mut s = PathSelector::new(u.arbitrary()?, u.arbitrary()?);
        for _ in 0..u.int_in_range(1..=400)? {
            // mostly three paths, so that operations meet on a path
            let path: u8 = if u.ratio(3, 4)? {
                u.int_in_range(0..=2)?
            } else {
                u.arbitrary()?
            };
            match u.int_in_range(0..=10u8)? {
                0..=2 => {
                    let room: u32 = u.arbitrary()?;
                    let mask = s.eligible_mask(room);
                    let below = s.total_inflight() < s.conn_limit();
                    // SELECT tests the windows as they were before the previous operation, and
                    // everything else as it is now (SPEC.md §6.3): a SELECT that finds none while
                    // `mask` is not empty is followed by one that finds a path of `mask`.
                    let usable = |s: &PathSelector, p: u8| {
                        let st = s.path(p);
                        matches!(st.health, PathHealth::Up | PathHealth::Suspect)
                            && !st.reroll_pending
                            && s.planes_up() & (1 << st.plane) != 0
                            && room & (1 << p) != 0
                    };
                    match s.select(room) {
                        Some(p) => {
                            assert!(below && usable(&s, p), "path {p} chosen, not eligible");
                        }
                        None if mask != 0 => {
                            let p = s.select(room).expect("the second SELECT sees the windows of now");
                            assert!(mask & (1 << p) != 0, "path {p} chosen outside mask {mask:#x}");
                        }
                        None => {}
                    }
                }
                3 => s.charge(path),
                4 => s.charge_probe(path),
                5 | 6 => {
                    s.credit(&Credit {
                        path,
                        acked: u.arbitrary()?,
                        lost: u.arbitrary()?,
                        probes: u.arbitrary()?,
                        ce: u.arbitrary()?,
                    });
                }
                7 => {
                    let h = [
                        PathHealth::Up,
                        PathHealth::Suspect,
                        PathHealth::Down,
                        PathHealth::Disabled,
                    ];
                    s.set_health(path, h[usize::from(u.int_in_range(0..=3u8)?)]);
                }
                8 => s.clear_inflight(path),
                9 => s.request_reroll(path, u.arbitrary()?),
                _ => s.set_conn_limit(u.arbitrary()?),
            }
            for p in 0..PATHS as u8 {
                let st = s.path(p);
                assert!(st.cwnd >= CWND_MIN_PKTS << CWND_FRAC_BITS && st.cwnd <= CWND_MAX_PKTS << CWND_FRAC_BITS);
                assert!(u32::from(st.alpha) <= ALPHA_ONE);
                assert!(st.entropy >= 0xC000);
            }
        }
        Ok(())
    })
    .budget_ms(1500);
}
