//! §8.5 and §6.3: congestion response as seen on the wire — the per-path window doubles per
//! window of ACKed packets until the first ECN echo halves it, then grows by one packet per
//! window and shrinks on ECN echoes, a path marked far more than its
//! siblings moves to a new entropy, receivers fill in the fair-share rate hint and senders
//! bound their packets in flight by it.

use mroce_model::memory::MrKey;
use mroce_model::wire::{Akh, AKH_FLAG_ANNOUNCE};

use super::{case, Case};
use crate::adapter::{Need, Setup};
use crate::harness::{default_setup, lb, rb, Data, Peer, Pkt, Tester, H, R};
use crate::{check, check_eq, fail};

/// The cases of this area.
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "C-8.5-01",
            "§8.5",
            "Slow start, then additive increase: a window ACKed without CE doubles it (8 -> 16 packets); a CE-marked ACK ends slow start and halves it (8, not below the initial window); then a window ACKed without CE adds one packet (9)",
            &[],
            grow,
        ),
        case(
            "C-8.5-02",
            "§8.5",
            "ECN response: an ACK with EcnCount > 0 of the first window ends slow start; its halving stops at the initial window (8 packets in flight, not 16)",
            &[],
            ecn_cut,
        ),
        case(
            "C-6.3-01",
            "§6.3",
            "ECN re-route: a path marked far above its siblings moves to a new entropy once drained",
            &[],
            ecn_reroute,
        ),
        case(
            "C-8.5-03",
            "§8.5",
            "Rate hint: capacity divided by the connections that sent data within hint_window_ns; a new sender makes it recount at once",
            &[Need::ExactTime],
            hint_share,
        ),
        case(
            "C-8.5-04",
            "§8.5",
            "Rate hint is 0 when the NIC has no inbound capacity configured",
            &[],
            hint_zero,
        )
        .with_setup(no_capacity),
        case(
            "C-8.5-05",
            "§8.5",
            "A received rate hint bounds the sender's packets in flight (R x 2 x min RTT / frame + 2)",
            &[],
            hint_applied,
        ),
        case(
            "C-8.5-06",
            "§8.5",
            "Fabric RTT: with fabric_rtt_ns configured, a hint below the peer's capacity sizes the limit from min(min RTT, fabric_rtt_ns)",
            &[],
            hint_fabric_rtt,
        )
        .with_setup(fabric_rtt),
        case(
            "C-8.5-07",
            "§8.5",
            "Fan-in announcement: a NIC with announce_fan_in sends a new peer an ACK flagged ANNOUNCE (path 0's state, its capacity over its connections); a sender with fabric_rtt_ns sizes its first flight from one, without immediate ACKs",
            &[],
            fan_in_announce,
        )
        .with_setup(announcing),
        case(
            "C-8.3-07",
            "§8.3",
            "First flight: with fabric_rtt_ns configured, once a fan-in announcement allows the whole initial limit, every packet before the first ACK carries AckReq; after it only the last chunk does",
            &[],
            first_flight_ack_req,
        )
        .with_setup(announcing),
        case(
            "C-8.5-08",
            "§8.5",
            "Marked share: with fabric_rtt_ns configured, a recount among several senders whose arrivals were mostly CE-marked lowers the hint by 8000 x frame / fabric_rtt_ns",
            &[Need::ExactTime, Need::EcnMarking],
            hint_marked,
        )
        .with_setup(fabric_rtt),
        case(
            "C-8.4-19",
            "§8.4",
            "Over-committed connection: a hint that drops the limit below the packets in flight sends each path's trailing probe, no data; a lost tail is retransmitted first as the held limit descends",
            &[],
            overcommit_probe,
        ),
    ]
}

fn no_capacity() -> Setup {
    let mut s = default_setup();
    s.cfg.rx_capacity_mbps = 0;
    s
}

/// `fabric_rtt_ns` = 10 µs (C-8.5-06).
fn fabric_rtt() -> Setup {
    let mut s = default_setup();
    s.cfg.fabric_rtt_ns = 10_000;
    s
}

/// `announce_fan_in` on and `fabric_rtt_ns` = 10 µs (C-8.5-07).
fn announcing() -> Setup {
    let mut s = fabric_rtt();
    s.cfg.announce_fan_in = true;
    s
}

const VA: u64 = 0x0000_7000_0000_0000;

fn open(t: &mut Tester<'_>, paths: u8) -> R<(Peer, MrKey)> {
    let p = t.open(paths, 64)?;
    let src = t.region(1 << 20, false, |i| i as u8)?;
    Ok((p, src))
}

fn data(t: &mut Tester<'_>) -> R<Vec<Pkt>> {
    let v = t.drain()?;
    for f in &v {
        check!(f.is_data(), "expected data frames, got {}", f.describe());
    }
    Ok(v)
}

/// ACK all of `v` (one path) in one ACK, with `ecn` marks and `hint`.
fn ack_all(t: &mut Tester<'_>, p: &Peer, v: &[Pkt], ecn: u16, hint: u32) -> R {
    ack_all_rtt(t, p, v, ecn, hint, 0)
}

/// RTT the ECN re-route case reports (TsEcho set back by this much): on a loaded machine's
/// real sockets a tail-loss probe or an RTO (which re-rolls the entropy too) would otherwise
/// fire while the tester works. SRTT 4 ms: TLP 8 ms, RTO 10 ms.
const SLOW_RTT_NS: u32 = 4_000_000;

/// As [`ack_all`], with TsEcho set back by `ts_back` ns.
fn ack_all_rtt(t: &mut Tester<'_>, p: &Peer, v: &[Pkt], ecn: u16, hint: u32, ts_back: u32) -> R {
    let l = v.last().expect("frames");
    let m = l.mrh().unwrap();
    let base = p.rx_base[m.path as usize];
    let mut sack = [0u32; 8];
    for f in v {
        let d = f.mrh().unwrap().psn.wrapping_sub(base);
        sack[(d / 32) as usize] |= 1 << (d % 32);
    }
    let akh = Akh {
        path: m.path,
        flags: 0,
        ecn_count: ecn,
        pkt_count: v.len() as u16,
        base,
        cum: base.wrapping_add(sack[0].trailing_ones()),
        ts_echo: m.ts.wrapping_sub(ts_back),
        rate_hint_mbps: hint,
        sack,
    };
    let f = t.ack_raw(p, &akh, l.plane, l.addrs.src_port);
    t.send(l.plane, &f)
}

fn grow(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    t.post_write(&p, 0, lb(src, 0, 64 * 80), rb(VA, 0x101), 1)?;
    let v = data(t)?;
    check_eq!("initial window (CWND_INIT_PKTS)", v.len(), 8);
    ack_all(t, &p, &v, 0, 0)?;
    let w = data(t)?;
    check_eq!("packets after one window ACKed without CE (slow start)", w.len(), 16);
    // The mark that ends slow start halves the window (16 -> 8 packets, the initial window).
    ack_all(t, &p, &w, 1, 0)?;
    let x = data(t)?;
    check_eq!("packets after a CE-marked ACK of the window", x.len(), 8);
    ack_all(t, &p, &x, 0, 0)?;
    let y = data(t)?;
    check_eq!(
        "packets after one window ACKed without CE (additive increase)",
        y.len(),
        9
    );
    Ok(())
}

fn ecn_cut(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    t.post_write(&p, 0, lb(src, 0, 64 * 40), rb(VA, 0x101), 1)?;
    let v = data(t)?;
    check_eq!("initial window", v.len(), 8);
    let before = t.counters();
    ack_all(t, &p, &v, 1, 0)?;
    let w = data(t)?;
    // The first mark ends slow start and halves the window, not below the initial 8 packets
    // (16 without the mark).
    check_eq!("packets after an ECN-marked ACK of the window", w.len(), 8);
    t.expect_counters(&before, &[("ecn_echoes", 1), ("losses_detected", 0)])?;
    Ok(())
}

fn ecn_reroute(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 4)?;
    for i in 0..8u64 {
        t.post_write(&p, i as u16, lb(src, 0, 64 * 100), rb(VA, 0x101), i)?;
    }
    // ACK every packet at once, cumulatively per path; path 0's ACKs carry CE.
    let mut acked: [Vec<Pkt>; 4] = Default::default();
    let mut sport0 = None;
    let mut before = t.counters();
    for _ in 0..2000 {
        let v = t.drain()?;
        if v.is_empty() {
            t.advance(1_000)?;
            continue;
        }
        for f in v {
            let m = f.mrh().unwrap();
            let path = m.path as usize;
            check!(path < 4, "path {path}");
            if path == 0 {
                match sport0 {
                    None => sport0 = Some(f.addrs.src_port),
                    Some(s) if s != f.addrs.src_port => {
                        let c = t.counters();
                        if !t.timers_exact()
                            && c["ecn_reroutes"] == before["ecn_reroutes"]
                            && c["entropy_rerolls"] > before["entropy_rerolls"]
                        {
                            // On a loaded host's sockets an RTO re-rolled the path (before the
                            // first ACK its RTO is 200 us): watch the new route from here.
                            sport0 = Some(f.addrs.src_port);
                            before = c;
                            acked[path].push(f);
                            let all = &acked[path];
                            ack_all_rtt(t, &p, all, 1, 0, SLOW_RTT_NS)?;
                            continue;
                        }
                        check!(
                            c["ecn_reroutes"] > before["ecn_reroutes"],
                            "entropy changed without an ECN re-route"
                        );
                        if t.timers_exact() {
                            check_eq!(
                                "entropy_rerolls (RTO re-rolls only)",
                                c["entropy_rerolls"] - before["entropy_rerolls"],
                                0
                            );
                        }
                        check!(f.addrs.src_port >= 0xC000, "new entropy {:#x}", f.addrs.src_port);
                        check!(c["ecn_echoes"] > before["ecn_echoes"], "ECN echoes counted");
                        return Ok(());
                    }
                    _ => {}
                }
            }
            acked[path].push(f);
            let all = &acked[path];
            ack_all_rtt(t, &p, all, u16::from(path == 0), 0, SLOW_RTT_NS)?;
        }
    }
    fail!(
        "path 0 kept its entropy under persistent ECN marks (ecn_reroutes {})",
        t.counter("ecn_reroutes")
    )
}

/// Open a second connection from the tester (another SrcConn and nonce).
fn second(t: &mut Tester<'_>) -> R<Peer> {
    let mut c = Tester::connect_cmh(1, 2, 4096);
    c.src_conn = 0x124;
    c.nonce ^= 0xFF;
    t.open_with(&c)
}

fn hint_of(t: &mut Tester<'_>, p: &mut Peer, k: MrKey, msg: u32) -> R<u32> {
    t.data(p, &Data::write(0, 0, msg, k.va, k.rkey, b"h"))?;
    let (_, a) = t.expect_ack("ACK")?;
    Ok(a.rate_hint_mbps)
}

fn hint_share(t: &mut Tester<'_>) -> R {
    let mut a = t.open(1, 4096)?;
    let mut b = second(t)?;
    let k = t.region(64, true, |_| 0)?;
    // The hint is recomputed when data arrives, at most every hint_window_ns / 2 (10 us), from
    // the connections whose last data arrived within hint_window_ns (20 us) before, the
    // arriving one included; a connection that was not active makes it recount at once.
    check_eq!("hint, no connection active before", hint_of(t, &mut a, k, 0)?, 400_000);
    check_eq!(
        "hint at a second sender's first frame",
        hint_of(t, &mut b, k, 0)?,
        200_000
    );
    t.advance(15_000)?;
    check_eq!("hint with two active senders", hint_of(t, &mut a, k, 1)?, 200_000);
    t.advance(7_000)?;
    // b's last data is 22 us old, but the last recount was 7 us ago
    check_eq!("hint, not recomputed within 10 us", hint_of(t, &mut a, k, 2)?, 200_000);
    t.advance(4_000)?;
    check_eq!("hint after b went idle", hint_of(t, &mut a, k, 3)?, 400_000);
    t.advance(25_000)?;
    check_eq!("hint after both went idle", hint_of(t, &mut b, k, 1)?, 400_000);
    Ok(())
}

fn hint_zero(t: &mut Tester<'_>) -> R {
    let (p, _) = (t.open(1, 4096)?, ());
    let mut p = p;
    let k = t.region(64, true, |_| 0)?;
    check_eq!("RateHint without capacity", hint_of(t, &mut p, k, 0)?, 0);
    Ok(())
}

fn hint_applied(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    t.post_write(&p, 0, lb(src, 0, 64 * 40), rb(VA, 0x101), 1)?;
    let v = data(t)?;
    check_eq!("initial window", v.len(), 8);
    t.advance(10_000)?;
    // ACK the first packet with a hint of 1 Mb/s: with a 10 us RTT the share is
    // 1 x 10000 / 8000 = 1 byte: limit = 2 / 166 + 2 = 2 packets in flight.
    ack_all(t, &p, &v[..1], 0, 1)?;
    // (over-committed: the path's trailing probe goes, C-8.4-19; data does not)
    let w = t.data_burst()?;
    check_eq!("packets sent with 7 in flight and a limit of 2", w.len(), 0);
    // ACK everything (no hint: the previous limit stays).
    ack_all(t, &p, &v, 0, 0)?;
    let w = t.data_burst()?;
    check_eq!("packets in flight under the hint", w.len(), 2);
    Ok(())
}

/// C-8.5-08: `fabric_rtt_ns` = 10 µs, MTU 4096: two frames' rate over it is
/// 8000 x 4198 / 10000 = 3358 Mb/s. The recount at b's first frame (two active senders, both
/// frames since the last recount CE-marked) gives 200000 - 3358; 15 µs later an unmarked frame
/// recounts to the plain share. A sole sender's marked frame leaves the whole capacity.
fn hint_marked(t: &mut Tester<'_>) -> R {
    let mut a = t.open(1, 4096)?;
    let mut b = second(t)?;
    let k = t.region(64, true, |_| 0)?;
    let marked = |msg: u32| Data {
        ce: true,
        ..Data::write(0, 0, msg, k.va, k.rkey, b"h")
    };
    let hint = |t: &mut Tester<'_>, p: &mut Peer, d: Data| -> R<u32> {
        t.data(p, &d)?;
        let (_, ack) = t.expect_ack("ACK")?;
        Ok(ack.rate_hint_mbps)
    };
    let d = marked(0);
    check_eq!("hint, one sender, marked", hint(t, &mut a, d)?, 400_000);
    let d = marked(0);
    check_eq!(
        "hint at a second sender's first frame, both marked",
        hint(t, &mut b, d)?,
        200_000 - 3358
    );
    t.advance(15_000)?;
    check_eq!("hint after an unmarked frame", hint_of(t, &mut a, k, 1)?, 200_000);
    Ok(())
}

/// C-8.5-06: the tester reports a 4 ms RTT and a hint of 266 Mb/s, below its 400 Gb/s
/// RxCapacity. From the RTT the limit would be 266 x 4 ms / 8000 x 2 / 166 + 2 = 1604; from
/// `fabric_rtt_ns` = 10 µs it is 266 x 10000 / 8000 = 332 bytes, x 2 / 166 + 2 = 6 packets.
fn hint_fabric_rtt(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    t.post_write(&p, 0, lb(src, 0, 64 * 40), rb(VA, 0x101), 1)?;
    let v = data(t)?;
    check_eq!("initial window", v.len(), 8);
    ack_all_rtt(t, &p, &v[..1], 0, 266, SLOW_RTT_NS)?;
    // (over-committed: the path's trailing probe goes, C-8.4-19; data does not)
    let w = t.data_burst()?;
    check_eq!("packets sent with 7 in flight and a limit of 6", w.len(), 0);
    ack_all_rtt(t, &p, &v, 0, 0, SLOW_RTT_NS)?;
    let w = t.data_burst()?;
    check_eq!(
        "packets in flight under the hint (limit from fabric_rtt_ns)",
        w.len(),
        6
    );
    Ok(())
}

/// C-8.5-07: the connection the tester opens is the IUT's only one (fan-in 1), so the
/// announcement that follows the CONNECT_ACK carries the IUT's whole capacity and path 0's
/// untouched state. The tester then announces 266 Mb/s: over `fabric_rtt_ns` = 10 µs that is
/// 266 x 10000 / 8000 = 332 bytes, x 2 / 166 + 2 = 6 packets, below the path's initial
/// window of 8; the IUT's first flight is those 6.
fn fan_in_announce(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    let (pkt, a) = t.expect_ack("fan-in announcement after the CONNECT_ACK")?;
    check_eq!(
        "AKH Flags (ANNOUNCE)",
        H(u32::from(a.flags)),
        H(u32::from(AKH_FLAG_ANNOUNCE))
    );
    check_eq!("AKH Path", a.path, 0);
    check_eq!(
        "AKH Base (path 0's receive base: the tester's ISN)",
        H(a.base),
        H(p.my_isn)
    );
    check_eq!("AKH Cum", H(a.cum), H(p.my_isn));
    check_eq!("AKH SACK", a.sack, [0u32; 8]);
    check_eq!("AKH EcnCount, PktCount", (a.ecn_count, a.pkt_count), (0, 0));
    check_eq!("AKH TsEcho", a.ts_echo, 0);
    check_eq!("AKH RateHint (capacity / fan-in 1)", a.rate_hint_mbps, 400_000);
    check_eq!(
        "UDP source port (connection management's)",
        H(u32::from(pkt.addrs.src_port)),
        H(0xC000)
    );
    check_eq!(
        "port (IUT connection id mod planes)",
        u32::from(pkt.plane),
        p.iut_conn % u32::from(p.planes)
    );
    let v = announce_then_write(t, &p, src, 266)?;
    check_eq!("first flight under the announced share (initial window 8)", v.len(), 6);
    // A shared port: rate hints from immediate ACKs could lift that limit (§8.3 step 7).
    for (i, f) in v.iter().enumerate() {
        check_eq!(format!("frame {i} AckReq (a shared port)"), f.bth.ack_req, false);
    }
    Ok(())
}

/// The tester announces `mbps` to the IUT (an ACK of path 0 flagged ANNOUNCE, §5.4), which
/// applies it; then the IUT posts a 40-chunk WRITE, and its first flight is returned.
fn announce_then_write(t: &mut Tester<'_>, p: &Peer, src: MrKey, mbps: u32) -> R<Vec<Pkt>> {
    let before = t.counters();
    let base = p.rx_base[0];
    let akh = Akh {
        path: 0,
        flags: AKH_FLAG_ANNOUNCE,
        base,
        cum: base,
        rate_hint_mbps: mbps,
        ..Akh::default()
    };
    let f = t.ack_raw(p, &akh, 0, 0xC000);
    t.send(0, &f)?;
    t.expect_counters(&before, &[("announces_applied", 1), ("rx_acks", 1)])?;
    t.post_write(p, 0, lb(src, 0, 64 * 40), rb(VA, 0x101), 1)?;
    data(t)
}

/// C-8.3-07: the tester announces its whole capacity, 400 Gb/s: over `fabric_rtt_ns` = 10 µs
/// that limit is far above the initial one, so the IUT's first flight (one path's initial
/// window, 8 of 40 chunks) asks for an immediate ACK of every packet. The tester ACKs them;
/// the next window carries AckReq on none of its packets (none is a message's last chunk).
fn first_flight_ack_req(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    t.expect_ack("fan-in announcement after the CONNECT_ACK")?;
    let v = announce_then_write(t, &p, src, 400_000)?;
    check_eq!("first flight (initial window 8)", v.len(), 8);
    for (i, f) in v.iter().enumerate() {
        check_eq!(format!("first-flight frame {i} AckReq"), f.bth.ack_req, true);
    }
    ack_all(t, &p, &v, 0, 0)?;
    let w = data(t)?;
    check!(!w.is_empty(), "nothing sent after the first ACK");
    for (i, f) in w.iter().enumerate() {
        check_eq!(format!("frame {i} after the first ACK: AckReq"), f.bth.ack_req, false);
    }
    Ok(())
}

/// C-8.4-19: two paths, 40 chunks queued; the first ACK brings a hint whose limit (8) is below
/// the 16 in flight (15 once that ACK is counted). Each path's newest frame is data and nothing
/// follows it, so each gets its trailing probe (SPEC.md §8.3 step 5, §8.4). Path 1's probe
/// arrives and its newest data frame did not: the loss is found and retransmitted before new
/// data, within the limit held since the cut (§8.5). The tester reports a 4 ms RTT, so no tail-loss probe or RTO of the IUT's own
/// interferes on real sockets (the limit is then 1 Mb/s x 4 ms x 2 / 166-byte frames + 2 = 8).
fn overcommit_probe(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 2)?;
    t.post_write(&p, 0, lb(src, 0, 64 * 40), rb(VA, 0x101), 1)?;
    let v = t.data_burst()?;
    check_eq!("initial windows (2 paths x CWND_INIT_PKTS)", v.len(), 16);
    let on = |path: u8| -> Vec<Pkt> {
        v.iter()
            .filter(|f| f.mrh().is_some_and(|m| m.path == path))
            .cloned()
            .collect()
    };
    let (v0, v1) = (on(0), on(1));
    check!(
        v0.len() == 8 && v1.len() == 8,
        "expected 8 frames per path, got {} and {}",
        v0.len(),
        v1.len()
    );
    let before = t.counters();
    // a hint of 1 Mb/s: limit 8 packets, 15 in flight
    ack_all_rtt(t, &p, &v0[..1], 0, 1, SLOW_RTT_NS)?;
    let w = t.data_burst()?;
    check_eq!("data frames while over-committed", w.len(), 0);
    let tr = t.trailing.clone();
    let mut probes = Vec::new();
    for d in [&v0, &v1] {
        let newest = d.last().expect("frames");
        let m = newest.mrh().expect("MRH");
        let Some(pr) = tr.iter().find(|f| {
            f.mrh()
                .is_some_and(|x| x.path == m.path && x.psn == m.psn.wrapping_add(1))
        }) else {
            fail!(
                "no trailing probe behind path {}'s newest frame (PSN {:#x})",
                m.path,
                m.psn
            )
        };
        check_eq!("probe on the path's entropy", pr.addrs.src_port, newest.addrs.src_port);
        probes.push(pr.clone());
    }
    // Path 1: its probe arrived, its newest data frame did not: 8 delivered (one before), 1
    // lost, 7 in flight. The limit is held from the 16 in flight at the cut (§8.5): 16 - 9 +
    // 8 delivered x 8 / 16 = 11, so 4 frames go: the lost chunk first, then new data.
    let mut got1: Vec<Pkt> = v1[..7].to_vec();
    got1.push(probes[1].clone());
    ack_all_rtt(t, &p, &got1, 0, 0, SLOW_RTT_NS)?;
    let w = t.data_burst()?;
    check_eq!("data frames with 7 in flight and a held limit of 11", w.len(), 4);
    check!(w[0].is_retx(), "expected the retransmission, got {}", w[0].describe());
    let off = |f: &Pkt| f.data().map(|(_, s, _)| s.offset);
    check_eq!("retransmitted chunk", off(&w[0]), off(&v1[7]));
    check!(
        w[1..].iter().all(|f| !f.is_retx()),
        "expected new data after the retransmission"
    );
    t.expect_counters(&before, &[("losses_detected", 1), ("retransmits", 1)])?;
    Ok(())
}
