//! §6.2, §8.2–§8.4 (sender side): PSN assignment and floors, gap-based loss detection and
//! exactly-once retransmission, tail-loss probes, RTO and backoff, entropy re-roll, path and
//! plane failure and recovery, validation of incoming ACKs, completion order, scheduling.

use mroce_model::memory::MrKey;
use mroce_model::rx_tracker::{RxPacket, RxTracker};
use mroce_model::transport::{Event, Status, VerbError, WorkKind};
use mroce_model::wire::{opcode, Akh};

use super::{case, Case};
use crate::adapter::Need;
use crate::harness::{lb, rb, Counters, Fail, Peer, Pkt, Tester, H, IUT_ISN, R};
use crate::{check, check_eq, fail};

const EXACT: &[Need] = &[Need::ExactTime];
/// Remote buffer the IUT writes to (the tester does not check placement).
const VA: u64 = 0x0000_7000_0000_0000;
const RKEY: u32 = 0x0000_0101;

/// The cases of this area.
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "C-8.3-01",
            "§8.3",
            "PSNs are consecutive per path from the ISN, never reused; Floor = una, sliding by whole words",
            &[],
            psns,
        ),
        case(
            "C-8.4-02",
            "§8.4",
            "A SACK gap declares the missing PSN lost; its chunk is retransmitted once, new PSN, RETX",
            &[],
            gap_loss,
        ),
        case(
            "C-8.3-02",
            "§8.3",
            "Exactly once: a repeated ACK does not retransmit again",
            &[],
            exactly_once,
        ),
        case(
            "C-6.2-01",
            "§6.2",
            "A late ACK of a PSN already declared lost is ignored (no second completion)",
            &[],
            late_ack,
        ),
        case(
            "C-8.4-03",
            "§8.4",
            "Tail-loss probe 2 x SRTT + ACK_DELAY_NS after the last send of a window-limited burst; its ACK recovers the tail",
            EXACT,
            tlp,
        ),
        case(
            "C-8.4-04",
            "§8.4",
            "Tail-loss probe one SRTT + ACK_DELAY_NS before the RTO; RTO at RTO_INIT_NS: probe at once on a new entropy, retransmission after the probe's ACK",
            EXACT,
            rto,
        ),
        case(
            "C-6.2-02",
            "§6.2",
            "RTO backoff doubles (200, 400, 800 us); PATH_DOWN_RTOS RTOs put the path Down",
            EXACT,
            backoff,
        ),
        case(
            "C-6.2-03",
            "§6.2",
            "An ACK that frees a PSN resets the backoff",
            EXACT,
            backoff_reset,
        ),
        case(
            "C-8.4-05",
            "§8.4",
            "After an RTO the path's UDP source port (entropy) changes, within 0xC000-0xFFFF",
            &[],
            reroll,
        ),
        case(
            "C-8.4-06",
            "§8.4",
            "Path failure: a silent path goes Down, data moves to the other path, probes continue",
            &[],
            path_down,
        ),
        case(
            "C-8.4-07",
            "§8.4",
            "Path recovery: an answered probe brings a Down path back up and data returns to it",
            &[],
            path_recovery,
        ),
        case(
            "C-8.4-08",
            "§8.4",
            "Plane failure and recovery: all paths of a plane Down marks the plane down",
            &[],
            plane_down,
        ),
        case("C-8.4-09", "§8.4", "A duplicate ACK changes nothing", &[], dup_ack),
        case(
            "C-8.4-10",
            "§8.4",
            "Forged ACK: Base not word-aligned with the window is dropped (forged_acks)",
            &[],
            forged_misaligned,
        ),
        case(
            "C-8.4-11",
            "§8.4",
            "Forged ACK: Base beyond the next PSN is dropped (forged_acks)",
            &[],
            forged_ahead,
        ),
        case(
            "C-8.4-12",
            "§8.4",
            "Forged ACK: Base more than 256 behind the floor is dropped (forged_acks)",
            &[],
            forged_behind,
        ),
        case(
            "C-8.4-13",
            "§8.4",
            "ACK for a path the connection does not have is dropped (forged_acks)",
            &[],
            forged_path,
        ),
        case(
            "C-8.4-14",
            "§8.4",
            "ACK bits for PSNs never sent are ignored and counted once (forged_ack_bits)",
            &[],
            forged_bits,
        ),
        case(
            "C-8.4-15",
            "§8.4",
            "One tail-loss probe per RTO period: data sent after it does not re-arm it (its trailing probe aside); the next probe is the RTO's",
            EXACT,
            one_tlp,
        ),
        case(
            "C-8.4-16",
            "§8.4",
            "Early tail-loss probe: an ACK of a frame sent more than ACK_DELAY_NS + min RTT / 4 after another path's newest frame (min RTT / 4 if that frame asked for an immediate ACK and nothing is queued) makes that path's probe due at once",
            EXACT,
            early_tlp,
        ),
        case(
            "C-8.4-17",
            "§8.4",
            "Trailing probe: when the send queue runs dry, a PROBE with AckReq follows the newest data frame of each path; its ACK recovers a lost tail at once, with a copy on the other path (tail hedge)",
            &[],
            trailing,
        ),
        case(
            "C-8.4-18",
            "§8.4",
            "Tail-loss probe SRTT + ACK_DELAY_NS after an unanswered trailing probe; its ACK recovers the tail",
            EXACT,
            tlp_trailing,
        ),
        case(
            "C-8.4-20",
            "§8.4",
            "RACK's reordering timer: in the tail, an ACK of a frame sent with another path's unanswered newest frame makes that path's probe due once that frame has been out the ACKed frame's round trip plus min RTT / 4",
            EXACT,
            rack_timer,
        ),
        case(
            "C-9.2-01",
            "§9.2",
            "ACK from an address that is not the peer's, or for an unknown DestQP: unknown_connection",
            &[],
            ack_wrong_peer,
        ),
        case(
            "C-8.2-01",
            "§8.2",
            "Verbs fail without side effects: bad stream, unregistered buffer, unknown or unestablished connection",
            &[],
            verbs,
        ),
        case(
            "C-8.2-02",
            "§8.2",
            "Sender completions are reported in stream order; streams are independent",
            &[],
            tx_order,
        ),
        case(
            "C-8.3-03",
            "§8.3",
            "Streams are served round robin, one packet at a time",
            &[],
            round_robin,
        ),
        case(
            "C-8.3-04",
            "§8.3",
            "Retransmissions are sent before new data",
            &[],
            retx_first,
        ),
        case(
            "C-8.3-05",
            "§8.3",
            "A chunk whose local buffer was deregistered is not sent: ConnectionFailed, local_access_errors",
            &[],
            local_deregistered,
        ),
    ]
}

/// Open a connection with `paths` paths and MTU 64 and a 64 KiB source region.
fn open(t: &mut Tester<'_>, paths: u8) -> R<(Peer, MrKey)> {
    let p = t.open(paths, 64)?;
    check_eq!("negotiated MTU", p.mtu, 64);
    let src = t.region(65536, false, |i| (i * 7) as u8)?;
    Ok((p, src))
}

/// Post a WRITE of `chunks` × 64 bytes on `stream`.
fn post(t: &mut Tester<'_>, p: &Peer, src: MrKey, stream: u16, chunks: u32, wr_id: u64) -> R {
    t.post_write(p, stream, lb(src, 0, 64 * chunks), rb(VA, RKEY), wr_id)
}

/// Every pending frame: data frames, then the trailing probes (kept in `t.trailing`).
fn data_frames(t: &mut Tester<'_>) -> R<Vec<Pkt>> {
    t.data_burst()
}

/// No data frame pending. Probes are allowed: on real sockets the tester's own steps can
/// outlast a path's tail-loss probe timer (95 us before the first RTT sample).
fn expect_no_data(t: &mut Tester<'_>, why: &str) -> R {
    let data = t.data_burst()?;
    if let Some(f) = data.first() {
        fail!("expected no data frame ({why}), got {}", f.describe());
    }
    Ok(())
}

fn psn(f: &Pkt) -> u32 {
    f.mrh().map(|m| m.psn).unwrap_or(0)
}

fn chunk_off(f: &Pkt) -> u32 {
    f.data().map(|(_, s, _)| s.offset).unwrap_or(u32::MAX)
}

/// ACK every PSN of `acked` on `path` (base = the peer's rx_base), echoing `ts` exactly.
fn ack_exact(t: &mut Tester<'_>, p: &Peer, path: u8, acked: &[u32], ts: u32, plane: u8, sport: u16) -> R {
    let f = t.ack_frame(p, path, acked, ts, plane, sport);
    t.send(plane, &f)
}

/// RTT the tester reports in cases that do not check timers (TsEcho set back by this much):
/// the IUT's tail-loss probe and RTO then stay out of the scripted exchange, even on real
/// sockets (SRTT 4 ms: TLP 8 ms, RTO 10 ms).
const SLOW_RTT_NS: u32 = 4_000_000;

/// As [`ack_exact`], reporting an RTT of [`SLOW_RTT_NS`].
fn ack_set(t: &mut Tester<'_>, p: &Peer, path: u8, acked: &[u32], ts: u32, plane: u8, sport: u16) -> R {
    ack_exact(t, p, path, acked, ts.wrapping_sub(SLOW_RTT_NS), plane, sport)
}

fn psns(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    post(t, &p, src, 0, 40, 1)?;
    let mut next = IUT_ISN;
    let mut acked: Vec<u32> = Vec::new();
    let mut seen_floor_32 = false;
    for round in 0..10 {
        let v = data_frames(t)?;
        if v.is_empty() {
            break;
        }
        for f in &v {
            let m = f.mrh().unwrap();
            check_eq!(format!("round {round}: PSN"), H(m.psn), H(next));
            check_eq!(format!("round {round}: path"), m.path, 0);
            check!(
                !f.is_retx(),
                "round {round}: unexpected retransmission {}",
                f.describe()
            );
            // Floor is the sender's una: ISN until PSNs ISN..ISN+31 are all acknowledged and
            // at least 32 PSNs were sent when that ACK arrived.
            let una = if acked.len() >= 32 && seen_floor_32 {
                IUT_ISN + 32
            } else {
                IUT_ISN
            };
            check_eq!(format!("round {round}: Floor of {}", f.describe()), H(m.floor), H(una));
            next += 1;
        }
        acked.extend(v.iter().map(psn));
        let last = v.last().unwrap();
        let sent_32 = next.wrapping_sub(IUT_ISN) >= 32;
        ack_set(
            t,
            &p,
            0,
            &acked,
            last.mrh().unwrap().ts,
            last.plane,
            last.addrs.src_port,
        )?;
        if acked.len() >= 32 && sent_32 {
            seen_floor_32 = true;
        }
    }
    check_eq!("PSNs sent", next - IUT_ISN, 40);
    check!(seen_floor_32, "the floor never passed the first word");
    t.expect_completions(&[(WorkKind::Write, 0, 0, Status::Ok, 2560)])?;
    Ok(())
}

/// Send a 4-chunk WRITE on one path and ACK {0, 2, 3}: PSN 1 is lost. Returns the frames.
fn lose_second(t: &mut Tester<'_>) -> R<(Peer, Vec<Pkt>)> {
    let (p, src) = open(t, 1)?;
    post(t, &p, src, 0, 4, 9)?;
    let v = data_frames(t)?;
    check_eq!("chunks sent", v.len(), 4);
    let before = t.counters();
    let l = &v[3];
    ack_set(
        t,
        &p,
        0,
        &[psn(&v[0]), psn(&v[2]), psn(&v[3])],
        l.mrh().unwrap().ts,
        l.plane,
        l.addrs.src_port,
    )?;
    let r = t.expect_data("retransmission of chunk 1")?;
    let m = r.mrh().unwrap();
    check!(r.is_retx(), "retransmission must carry RETX: {}", r.describe());
    check_eq!("retransmitted chunk offset", chunk_off(&r), 64);
    // ISN + 4 is the trailing probe behind the four chunks.
    check_eq!(
        "trailing probe PSN",
        t.trailing.iter().map(psn).collect::<Vec<_>>(),
        vec![IUT_ISN + 4]
    );
    check_eq!("retransmission PSN (new)", H(m.psn), H(IUT_ISN + 5));
    check_eq!(
        "retransmission AckReq (retransmission queue and active list empty)",
        r.bth.ack_req,
        true
    );
    check_eq!("retransmission SE (not the last chunk)", r.bth.se, false);
    let pr = t.expect_op(opcode::MR_PROBE, "trailing probe behind the retransmission")?;
    check_eq!("its PSN", H(psn(&pr)), H(IUT_ISN + 6));
    t.expect_silence("exactly one retransmission")?;
    t.expect_counters(&before, &[("losses_detected", 1), ("retransmits", 1)])?;
    check_eq!("no completion yet", t.completions()?.len(), 0);
    let mut v = v;
    v.push(r);
    Ok((p, v))
}

fn gap_loss(t: &mut Tester<'_>) -> R {
    let (p, v) = lose_second(t)?;
    let r = &v[4];
    let all: Vec<u32> = [0, 2, 3, 4].iter().map(|&i| psn(&v[i])).collect();
    ack_set(t, &p, 0, &all, r.mrh().unwrap().ts, r.plane, r.addrs.src_port)?;
    t.expect_completions(&[(WorkKind::Write, 0, 0, Status::Ok, 256)])?;
    Ok(())
}

fn exactly_once(t: &mut Tester<'_>) -> R {
    let (p, v) = lose_second(t)?;
    let before = t.counters();
    let l = &v[3];
    for _ in 0..3 {
        ack_set(
            t,
            &p,
            0,
            &[psn(&v[0]), psn(&v[2]), psn(&v[3])],
            l.mrh().unwrap().ts,
            l.plane,
            l.addrs.src_port,
        )?;
        // The chunk is in flight again: no second retransmission (a tail-loss probe may come).
        for f in t.drain()? {
            check!(
                !f.is_data(),
                "second transmission after a repeated ACK: {}",
                f.describe()
            );
        }
    }
    t.expect_counters(&before, &[("losses_detected", 0), ("retransmits", 0)])?;
    Ok(())
}

fn late_ack(t: &mut Tester<'_>) -> R {
    let (p, v) = lose_second(t)?;
    let r = &v[4];
    let all: Vec<u32> = [0, 2, 3, 4].iter().map(|&i| psn(&v[i])).collect();
    ack_set(t, &p, 0, &all, r.mrh().unwrap().ts, r.plane, r.addrs.src_port)?;
    t.expect_completions(&[(WorkKind::Write, 0, 0, Status::Ok, 256)])?;
    let before = t.counters();
    // The original transmission of chunk 1 shows up late.
    let all5: Vec<u32> = (0..5).map(|i| psn(&v[i])).collect();
    ack_set(t, &p, 0, &all5, r.mrh().unwrap().ts, r.plane, r.addrs.src_port)?;
    t.expect_silence("nothing to send")?;
    check_eq!("no second completion", t.completions()?.len(), 0);
    t.expect_counters(&before, &[("losses_detected", 0), ("redundant_acks", 0)])?;
    Ok(())
}

fn tlp(t: &mut Tester<'_>) -> R {
    // 12 chunks, a window of CWND_INIT_PKTS = 8 that slow start grew by the first exchange's
    // two ACKed packets to 10: the queue does not run dry, no trailing probe; the TLP comes at
    // 2 x SRTT + ACK_DELAY_NS = 25 us after the last send.
    tlp_after(t, 12, 10, 25_000)
}

fn tlp_trailing(t: &mut Tester<'_>) -> R {
    // 2 chunks: the queue runs dry and the trailing probe goes with them; it is lost as well,
    // so the TLP comes SRTT + ACK_DELAY_NS = 15 us after it.
    tlp_after(t, 2, 2, 15_000)
}

/// SRTT 10 us from a first exchange, then `chunks` chunks of which `sent` leave at once, all
/// lost (with any trailing probe): the tail-loss probe must come `delay` ns later, and its ACK
/// makes every sent chunk a retransmission.
fn tlp_after(t: &mut Tester<'_>, chunks: u32, sent: usize, delay: u64) -> R {
    let (p, src) = open(t, 1)?;
    post(t, &p, src, 0, 1, 1)?;
    let a = data_frames(t)?;
    let a1 = t.trailing.clone();
    check_eq!("trailing probes", a1.len(), 1);
    t.advance(10_000)?;
    ack_exact(
        t,
        &p,
        0,
        &[psn(&a[0]), psn(&a1[0])],
        a[0].mrh().unwrap().ts,
        a[0].plane,
        a[0].addrs.src_port,
    )?;
    t.completions()?;
    // SRTT = 10 us now (RTO = max(10 + 4 x 5, 50) = 50 us).
    post(t, &p, src, 0, chunks, 2)?;
    let t0 = t.now();
    let v = data_frames(t)?;
    check_eq!("chunks sent", v.len(), sent);
    let trailing = if sent == chunks as usize { 1 } else { 0 };
    check_eq!("trailing probes", t.trailing.len(), trailing);
    t.advance(delay - 1)?;
    t.expect_silence("before the tail-loss probe")?;
    t.advance(1)?;
    let pr = t.expect_op(opcode::MR_PROBE, "tail-loss PROBE")?;
    check_eq!("TLP time after the last send (ns)", pr.at - t0, delay);
    let next = IUT_ISN + 2 + (sent + trailing) as u32;
    check_eq!("PROBE PSN", H(psn(&pr)), H(next));
    let before = t.counters();
    // The probe's ACK: the probe arrived, nothing sent before it did.
    ack_exact(
        t,
        &p,
        0,
        &[psn(&a[0]), psn(&a1[0]), psn(&pr)],
        pr.mrh().unwrap().ts,
        pr.plane,
        pr.addrs.src_port,
    )?;
    let r = data_frames(t)?;
    check!(
        r.len() >= sent,
        "{} frames after the probe's ACK, expected {sent} retransmissions",
        r.len()
    );
    check!(
        r[..sent].iter().all(|f| f.is_retx()),
        "retransmissions must come first, with RETX"
    );
    t.expect_counters(
        &before,
        &[
            ("losses_detected", (sent + trailing) as u64),
            ("retransmits", sent as u64),
        ],
    )?;
    Ok(())
}

/// One path, one chunk and its trailing probe sent and never answered, up to the tail-loss
/// probe. No RTT sample yet:
/// SRTT counts as RTO_INIT_NS / 2 = 100 us, so the probe goes out at min(2 x 100 + 5,
/// 200 - 100 - 5) = 95 us, one SRTT and the ACK delay before the RTO.
struct Unanswered {
    p: Peer,
    src: MrKey,
    /// Time of the data send.
    t0: u64,
    data: Pkt,
    before: Counters,
}

fn until_tlp(t: &mut Tester<'_>) -> R<Unanswered> {
    let (p, src) = open(t, 1)?;
    post(t, &p, src, 0, 1, 1)?;
    let t0 = t.now();
    let mut d = data_frames(t)?;
    check_eq!("chunks", d.len(), 1);
    let before = t.counters();
    t.advance(94_999)?;
    t.expect_silence("before the tail-loss probe")?;
    t.advance(1)?;
    let tlp = t.expect_op(opcode::MR_PROBE, "tail-loss PROBE before the RTO")?;
    check_eq!("TLP time (ns after the send)", tlp.at - t0, 95_000);
    let data = d.remove(0);
    check_eq!("TLP on the path's entropy", tlp.addrs.src_port, data.addrs.src_port);
    Ok(Unanswered {
        p,
        src,
        t0,
        data,
        before,
    })
}

/// Silence until RTO_INIT_NS after the first send, then the RTO's probe on a new entropy.
fn expect_rto_probe(t: &mut Tester<'_>, u: &Unanswered, why: &str) -> R<Pkt> {
    t.advance((u.t0 + 199_999).saturating_sub(t.now()))?;
    t.expect_silence(why)?;
    t.advance(1)?;
    let pr = t.expect_op(opcode::MR_PROBE, "PROBE after the RTO (suspect path)")?;
    check_eq!("RTO time (ns after the first send)", pr.at - u.t0, 200_000);
    check!(
        pr.addrs.src_port != u.data.addrs.src_port,
        "the RTO must re-roll the path's entropy"
    );
    Ok(pr)
}

fn rto(t: &mut Tester<'_>) -> R {
    let u = until_tlp(t)?;
    // The probe is lost too.
    let pr = expect_rto_probe(t, &u, "before RTO_INIT_NS")?;
    t.expect_silence("the suspect path carries one packet: no retransmission before the probe is answered")?;
    t.expect_counters(
        &u.before,
        &[
            ("rtos", 1),
            // the chunk, its trailing probe and the tail-loss probe
            ("losses_detected", 3),
            ("entropy_rerolls", 1),
            ("probes_sent", 2),
            ("retransmits", 0),
        ],
    )?;
    ack_exact(
        t,
        &u.p,
        0,
        &[psn(&pr)],
        pr.mrh().unwrap().ts,
        pr.plane,
        pr.addrs.src_port,
    )?;
    let r = t.expect_data("retransmission after the probe's ACK")?;
    check!(r.is_retx(), "RETX flag");
    check_eq!("retransmission on the new entropy", r.addrs.src_port, pr.addrs.src_port);
    // ISN + 1: trailing probe, + 2: tail-loss probe, + 3: the RTO's probe
    check_eq!("retransmission PSN", H(psn(&r)), H(IUT_ISN + 4));
    Ok(())
}

fn one_tlp(t: &mut Tester<'_>) -> R {
    // the tail-loss probe at 95 us (C-8.4-04), unanswered
    let u = until_tlp(t)?;
    // new data on the same path before any ACK: it does not re-arm the TLP
    t.advance(1_000)?;
    post(t, &u.p, u.src, 0, 1, 2)?;
    let d2 = data_frames(t)?;
    check_eq!("second message's chunks", d2.len(), 1);
    check_eq!("its trailing probe", t.trailing.len(), 1);
    expect_rto_probe(t, &u, "no second tail-loss probe before the RTO")?;
    // probes: the tail-loss probe, the second trailing probe, the RTO's; lost at the RTO:
    // both chunks, both trailing probes and the tail-loss probe
    t.expect_counters(&u.before, &[("rtos", 1), ("probes_sent", 3), ("losses_detected", 5)])?;
    Ok(())
}

fn early_tlp(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 2)?;
    post(t, &p, src, 0, 1, 1)?;
    let a = data_frames(t)?;
    check_eq!("first message's chunks", a.len(), 1);
    // 10 us later a second chunk goes on the other path (round robin)
    t.advance(10_000)?;
    post(t, &p, src, 0, 1, 2)?;
    let b = data_frames(t)?;
    check_eq!("second message's chunks", b.len(), 1);
    let (pa, pb) = (a[0].mrh().unwrap().path, b[0].mrh().unwrap().path);
    check!(pa != pb, "the second chunk must take the other path");
    t.advance(2_000)?;
    t.expect_silence("no probe before any evidence (the timer TLP is at 95 us)")?;
    let before = t.counters();
    // B arrived after 2 us (the path's min RTT): A left 10 us before B, more than
    // ACK_DELAY_NS + 2 us / 4, and is unanswered, so A's path is probed now
    let t_ack = t.now();
    ack_exact(
        t,
        &p,
        pb,
        &[psn(&b[0])],
        b[0].mrh().unwrap().ts,
        b[0].plane,
        b[0].addrs.src_port,
    )?;
    let pr = t.expect_op(opcode::MR_PROBE, "early tail-loss PROBE")?;
    check_eq!("probe time (ns after the ACK)", pr.at - t_ack, 0);
    check_eq!("probe path", pr.mrh().unwrap().path, pa);
    check_eq!("probe on the path's entropy", pr.addrs.src_port, a[0].addrs.src_port);
    // its ACK: the probe arrived, A and its trailing probe did not
    ack_exact(
        t,
        &p,
        pa,
        &[psn(&pr)],
        pr.mrh().unwrap().ts,
        pr.plane,
        pr.addrs.src_port,
    )?;
    // The same ACK is evidence against B's path: B's trailing probe left 2 us before the probe
    // that arrived and is unanswered. More than min RTT / 4 (0.5 us) but less than
    // ACK_DELAY_NS + 0.5 us: it is probed at once only because that probe asked for an
    // immediate ACK and nothing was queued when the ACK came.
    let pb2 = t.expect_op(opcode::MR_PROBE, "early tail-loss PROBE of B's path (no ACK delay)")?;
    check_eq!("probe path", pb2.mrh().unwrap().path, pb);
    let r = t.expect_data("retransmission after the probe's ACK")?;
    check!(r.is_retx(), "RETX flag");
    // nothing else is queued: its copy follows on the other path (tail hedge, §8.3)
    let h = t.expect_data("the retransmission's copy (tail hedge)")?;
    check!(h.is_retx(), "the copy's RETX flag");
    check_eq!("the copy's chunk", chunk_off(&h), chunk_off(&r));
    check!(
        h.mrh().unwrap().path != r.mrh().unwrap().path,
        "the copy must take the other path"
    );
    t.expect_op(opcode::MR_PROBE, "trailing probe behind the retransmission")?;
    t.expect_op(opcode::MR_PROBE, "trailing probe behind the copy")?;
    t.expect_counters(
        &before,
        &[
            ("probes_sent", 4),
            ("losses_detected", 2),
            ("retransmits", 1),
            ("tail_hedges", 1),
        ],
    )?;
    Ok(())
}

fn rack_timer(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 2)?;
    post(t, &p, src, 0, 2, 1)?;
    let v = data_frames(t)?;
    check_eq!("chunks", v.len(), 2);
    let tr = t.trailing.clone();
    check_eq!("trailing probes (one per path)", tr.len(), 2);
    let on = |path: u8| v.iter().find(|f| f.mrh().unwrap().path == path);
    let (Some(a), Some(b)) = (on(0), on(1)) else {
        fail!("the two chunks must take both paths")
    };
    let probe_of = |path: u8| tr.iter().find(|f| f.mrh().unwrap().path == path);
    let (Some(ta), Some(tb)) = (probe_of(0), probe_of(1)) else {
        fail!("one trailing probe per path")
    };
    check_eq!(
        "the trailing probes leave together",
        ta.mrh().unwrap().ts,
        tb.mrh().unwrap().ts
    );
    // Path 1's chunk and probe arrive 8 us later (its min RTT: reo = 2 us). Path 0's newest
    // frame left with that probe, so the test against it waits 2 us.
    t.advance(8_000)?;
    let t_ack = t.now();
    ack_exact(
        t,
        &p,
        1,
        &[psn(b), psn(tb)],
        tb.mrh().unwrap().ts,
        tb.plane,
        tb.addrs.src_port,
    )?;
    t.completions()?;
    t.advance(2_000)?;
    t.expect_silence("no probe within the reordering window")?;
    t.advance(1)?;
    let pr = t.expect_op(opcode::MR_PROBE, "PROBE when the reordering window has passed")?;
    check_eq!("probe time (ns after the ACK)", pr.at - t_ack, 2_001);
    check_eq!("probe path", pr.mrh().unwrap().path, 0);
    let before = t.counters();
    // its ACK: the probe arrived, path 0's chunk and trailing probe did not
    ack_exact(t, &p, 0, &[psn(&pr)], pr.mrh().unwrap().ts, pr.plane, pr.addrs.src_port)?;
    let r = t.expect_data("retransmission after the probe's ACK")?;
    check!(r.is_retx(), "RETX flag");
    check_eq!("retransmitted chunk", chunk_off(&r), chunk_off(a));
    t.expect_counters(&before, &[("losses_detected", 2), ("retransmits", 1)])?;
    Ok(())
}

fn trailing(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 2)?;
    post(t, &p, src, 0, 4, 1)?;
    let v = data_frames(t)?;
    check_eq!("chunks", v.len(), 4);
    // One probe behind each path's newest data frame. On real sockets a path's tail-loss probe
    // (95 us before its first RTT sample) may add one behind it.
    let all = t.trailing.clone();
    let on = |path: u8| -> Vec<&Pkt> { v.iter().filter(|f| f.mrh().unwrap().path == path).collect() };
    let mut tr = Vec::new();
    for path in 0..2u8 {
        let Some(newest) = on(path).last().copied() else {
            fail!("path {path} carried no data")
        };
        let Some(pr) = all.iter().find(|f| {
            f.mrh()
                .is_some_and(|m| m.path == path && m.psn == psn(newest).wrapping_add(1))
        }) else {
            fail!(
                "no trailing probe behind path {path}'s newest frame (PSN {:#x})",
                psn(newest)
            )
        };
        check_eq!("probe on the path's entropy", pr.addrs.src_port, newest.addrs.src_port);
        check_eq!("probe on the path's plane", pr.plane, newest.plane);
        check!(pr.bth.ack_req, "the trailing probe must request an ACK");
        tr.push(pr.clone());
    }
    if !t.timers_exact() {
        check!(all.len() <= 4, "{} probes after a burst on 2 paths", all.len());
    } else {
        check_eq!("trailing probes (one per path)", all.len(), 2);
    }
    // On real sockets a path's tail-loss probe (95 us before its first RTT sample) may fire
    // while the tester works: probes are tolerated below, data is not.
    expect_no_data(t, "one trailing probe per path")?;
    let before = t.counters();
    // Path 0: its probe arrives, its newest data frame did not.
    let (d0, pr0) = (on(0), tr.iter().find(|f| f.mrh().unwrap().path == 0).unwrap());
    check!(d0.len() >= 2, "path 0 carried {} chunks, expected 2", d0.len());
    let lost = d0[d0.len() - 1];
    let mut acked: Vec<u32> = d0[..d0.len() - 1].iter().map(|f| psn(f)).collect();
    acked.push(psn(pr0));
    ack_set(t, &p, 0, &acked, pr0.mrh().unwrap().ts, pr0.plane, pr0.addrs.src_port)?;
    // the retransmission, and (nothing else queued) its copy on the other path (§8.3)
    let w = data_frames(t)?;
    check_eq!("data frames at the probe's ACK", w.len(), 2);
    for r in &w {
        check!(r.is_retx(), "RETX flag");
        check_eq!("retransmitted chunk", chunk_off(r), chunk_off(lost));
        let rp = r.mrh().unwrap();
        check!(
            t.trailing.iter().any(|f| f
                .mrh()
                .is_some_and(|m| m.path == rp.path && m.psn == rp.psn.wrapping_add(1))),
            "no trailing probe behind the retransmission (path {}, PSN {:#x})",
            rp.path,
            rp.psn.wrapping_add(1)
        );
    }
    check!(
        w[0].mrh().unwrap().path != w[1].mrh().unwrap().path,
        "the copy must take the other path"
    );
    // Path 1: everything arrived.
    let (d1, pr1) = (on(1), tr.iter().find(|f| f.mrh().unwrap().path == 1).unwrap());
    let mut acked1: Vec<u32> = d1.iter().map(|f| psn(f)).collect();
    acked1.push(psn(pr1));
    ack_set(t, &p, 1, &acked1, pr1.mrh().unwrap().ts, pr1.plane, pr1.addrs.src_port)?;
    expect_no_data(t, "nothing else to send")?;
    t.expect_counters(
        &before,
        &[("losses_detected", 1), ("retransmits", 1), ("tail_hedges", 1)],
    )?;
    Ok(())
}

fn backoff(t: &mut Tester<'_>) -> R {
    let (_p, src) = open(t, 1)?;
    post(t, &_p, src, 0, 1, 1)?;
    let t0 = t.now();
    data_frames(t)?;
    let before = t.counters();
    // The tail-loss probe at 95 us (C-8.4-04), RTO 1 at 200 us, RTO 2 at 200 + 400, RTO 3 at
    // 600 + 800: a probe at the first two, the path Down at the third, its first Down-path
    // probe PROBE_INTERVAL_NS later.
    let mut probes = Vec::new();
    let mut down_at = None;
    while t.now() < t0 + 1_550_000 {
        t.advance(1_000)?;
        for f in t.drain()? {
            check_eq!(format!("frame at {} ns", f.at - t0), f.opcode(), opcode::MR_PROBE);
            probes.push(f.at - t0);
        }
        for e in t.new_events()? {
            if let Event::PathHealth { path: 0, up: false, .. } = e {
                down_at.get_or_insert(t.now() - t0);
            }
        }
    }
    check_eq!(
        "probe times (ns after the send)",
        probes,
        vec![95_000, 200_000, 600_000, 1_500_000]
    );
    check_eq!(
        "PathHealth down (within the 1 us step of the third RTO)",
        down_at,
        Some(1_400_000)
    );
    t.expect_counters(
        &before,
        &[
            ("rtos", 3),
            ("paths_down", 1),
            ("planes_down", 1),
            ("entropy_rerolls", 3),
            ("probes_sent", 4),
        ],
    )?;
    Ok(())
}

fn backoff_reset(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    post(t, &p, src, 0, 1, 1)?;
    let t0 = t.now();
    data_frames(t)?;
    t.advance(95_000)?;
    t.expect_op(opcode::MR_PROBE, "tail-loss PROBE (C-8.4-04)")?;
    t.advance(105_000)?;
    let pr = t.expect_op(opcode::MR_PROBE, "PROBE after RTO 1")?;
    check_eq!("RTO 1", pr.at - t0, 200_000);
    // Answer the probe as if it took 20 us: SRTT 20 us, RTTVAR 10 us, RTO 60 us, TLP 35 us
    // (one SRTT + ACK delay before the RTO); the TLP is not answered.
    let ts = pr.mrh().unwrap().ts.wrapping_sub(20_000);
    ack_exact(t, &p, 0, &[psn(&pr)], ts, pr.plane, pr.addrs.src_port)?;
    let r = t.expect_data("retransmission")?;
    let t1 = r.at;
    let rtos = t.counter("rtos");
    t.advance(59_999)?;
    check_eq!("RTOs before 60 us", t.counter("rtos"), rtos);
    t.advance(1)?;
    check_eq!(
        "RTO 2 at 60 us (backoff reset; 120 us otherwise)",
        t.counter("rtos"),
        rtos + 1
    );
    check_eq!("time of RTO 2 after the retransmission", t.now() - t1, 60_000);
    Ok(())
}

fn reroll(t: &mut Tester<'_>) -> R {
    let (_p, src) = open(t, 1)?;
    post(t, &_p, src, 0, 1, 1)?;
    let d = data_frames(t)?;
    // No ACKs: wait for the RTO (tail-loss probes before it keep the old entropy).
    let mut frames = Vec::new();
    let end = t.now() + 100_000_000;
    while t.counter("rtos") == 0 && t.now() < end {
        t.advance(10_000)?;
        frames.extend(t.drain()?);
    }
    check!(t.counter("rtos") > 0, "no RTO within 100 ms without ACKs");
    frames.extend(t.drain()?);
    let Some(pr) = frames.iter().rev().find(|f| f.opcode() == opcode::MR_PROBE) else {
        fail!("no probe after the RTO")
    };
    check!(
        pr.addrs.src_port >= 0xC000,
        "entropy {:#x} outside 0xC000-0xFFFF",
        pr.addrs.src_port
    );
    check!(
        pr.addrs.src_port != d[0].addrs.src_port,
        "entropy not re-rolled after the RTO ({:#x})",
        pr.addrs.src_port
    );
    check_eq!("entropy_rerolls", t.counter("entropy_rerolls"), 1);
    Ok(())
}

/// Drive a busy connection whose frames on `dead` paths are never answered; every other data
/// or probe frame is acknowledged at once by a conforming receiver (the reference receive
/// tracker, fed the frames the tester lets through). Every completed message is replaced by a
/// new one, so data never runs out. Runs `ns` in steps of 5 us; returns the frames and the
/// events seen.
struct Drive {
    rt: RxTracker,
    src: MrKey,
    posted: u64,
}

impl Drive {
    fn new(t: &mut Tester<'_>, p: &Peer, src: MrKey) -> R<Drive> {
        let mut d = Drive {
            rt: RxTracker::new(p.iut_isn),
            src,
            posted: 0,
        };
        for _ in 0..16 {
            d.post(t, p)?;
        }
        Ok(d)
    }

    fn post(&mut self, t: &mut Tester<'_>, p: &Peer) -> R {
        post(t, p, self.src, (self.posted % 4) as u16, 64, self.posted)?;
        self.posted += 1;
        Ok(())
    }

    fn run(&mut self, t: &mut Tester<'_>, p: &Peer, dead: &dyn Fn(&Pkt) -> bool, ns: u64) -> R<(Vec<Pkt>, Vec<Event>)> {
        self.run_until(t, p, dead, ns, &mut |_| false)
    }

    /// As `run`, stopping early once `stop` holds for an event.
    fn run_until(
        &mut self,
        t: &mut Tester<'_>,
        p: &Peer,
        dead: &dyn Fn(&Pkt) -> bool,
        ns: u64,
        stop: &mut dyn FnMut(&[Event]) -> bool,
    ) -> R<(Vec<Pkt>, Vec<Event>)> {
        let end = t.now() + ns;
        let mut seen = Vec::new();
        let mut events = Vec::new();
        loop {
            for f in t.drain()? {
                let Some(m) = f.mrh() else {
                    fail!("unexpected {}", f.describe())
                };
                if !dead(&f) {
                    let req = RxPacket {
                        path: m.path,
                        psn: m.psn,
                        floor: m.floor,
                        ce: false,
                        ack_req: true,
                        commit: true,
                    };
                    let s = self.rt.packet(&req).ack.expect("AckReq forces an ACK");
                    let akh = Akh {
                        path: s.path,
                        flags: 0,
                        ecn_count: 0,
                        pkt_count: s.pkt_count,
                        base: s.base,
                        cum: s.cum,
                        ts_echo: m.ts,
                        rate_hint_mbps: 0,
                        sack: s.sack,
                    };
                    let g = t.ack_raw(p, &akh, f.plane, f.addrs.src_port);
                    t.send(f.plane, &g)?;
                }
                seen.push(f);
            }
            for e in t.new_events()? {
                if let Event::Completion(c) = e {
                    check_eq!("completion status", c.status, Status::Ok);
                    self.post(t, p)?;
                }
                events.push(e);
            }
            if t.now() >= end || stop(&events) {
                return Ok((seen, events));
            }
            t.advance(5_000)?;
        }
    }
}

fn path_down(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 2)?;
    let mut d = Drive::new(t, &p, src)?;
    let before = t.counters();
    let dead = |f: &Pkt| f.mrh().is_some_and(|m| m.path == 1);
    let down1 = |ev: &[Event]| {
        ev.iter()
            .any(|e| matches!(e, Event::PathHealth { path: 1, up: false, .. }))
    };
    let (_, ev) = d.run_until(t, &p, &dead, 100_000_000, &mut |ev| down1(ev))?;
    check!(down1(&ev), "path 1 never reported Down");
    let c = t.counters();
    check_eq!("paths_down", c["paths_down"] - before["paths_down"], 1);
    check_eq!(
        "planes_down (path 1 is plane 1's only path)",
        c["planes_down"] - before["planes_down"],
        1
    );
    check!(c["rtos"] - before["rtos"] >= 3, "fewer than PATH_DOWN_RTOS RTOs");
    // From now on: data only on path 0, probes only on path 1.
    let (frames, _) = d.run(t, &p, &dead, 1_000_000)?;
    let data_on_1 = frames
        .iter()
        .filter(|f| f.is_data() && f.mrh().unwrap().path == 1)
        .count();
    let data_on_0 = frames
        .iter()
        .filter(|f| f.is_data() && f.mrh().unwrap().path == 0)
        .count();
    let probes_1 = frames
        .iter()
        .filter(|f| f.opcode() == opcode::MR_PROBE && f.mrh().unwrap().path == 1)
        .count();
    check_eq!("data frames on the Down path", data_on_1, 0);
    check!(data_on_0 > 0, "data must keep flowing on path 0");
    check!(probes_1 >= 1, "probes must continue on the Down path");
    Ok(())
}

fn path_recovery(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 2)?;
    let mut d = Drive::new(t, &p, src)?;
    let dead = |f: &Pkt| f.mrh().is_some_and(|m| m.path == 1);
    let down1 = |ev: &[Event]| {
        ev.iter()
            .any(|e| matches!(e, Event::PathHealth { path: 1, up: false, .. }))
    };
    let (_, ev) = d.run_until(t, &p, &dead, 100_000_000, &mut |ev| down1(ev))?;
    check!(down1(&ev), "path 1 never went Down");
    let before = t.counters();
    // Path 1 heals: answer everything. The next probe on it comes after its backed-off RTO
    // (at most RTO x 2^RTO_MAX_BACKOFF).
    let up1 = |ev: &[Event]| {
        ev.iter()
            .any(|e| matches!(e, Event::PathHealth { path: 1, up: true, .. }))
    };
    let (_, ev) = d.run_until(t, &p, &|_| false, 100_000_000, &mut |ev| up1(ev))?;
    check!(up1(&ev), "no PathHealth up for path 1 within 100 ms");
    let (frames, _) = d.run(t, &p, &|_| false, 1_000_000)?;
    let c = t.counters();
    check_eq!("paths_recovered", c["paths_recovered"] - before["paths_recovered"], 1);
    let data_on_1 = frames
        .iter()
        .filter(|f| f.is_data() && f.mrh().unwrap().path == 1)
        .count();
    check!(data_on_1 > 0, "data must return to path 1 after recovery");
    Ok(())
}

fn plane_down(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 4)?;
    check_eq!("planes", p.planes, 2);
    let mut d = Drive::new(t, &p, src)?;
    let before = t.counters();
    let dead = |f: &Pkt| f.plane == 1;
    let downs = |ev: &[Event]| {
        ev.iter()
            .filter(|e| matches!(e, Event::PathHealth { up: false, .. }))
            .count()
            >= 2
    };
    let (_, ev) = d.run_until(t, &p, &dead, 100_000_000, &mut |ev| downs(ev))?;
    check!(downs(&ev), "paths 1 and 3 did not both go Down");
    let c = t.counters();
    check_eq!("paths_down (paths 1 and 3)", c["paths_down"] - before["paths_down"], 2);
    check_eq!("planes_down", c["planes_down"] - before["planes_down"], 1);
    let (frames, _) = d.run(t, &p, &dead, 1_000_000)?;
    let data_plane_1 = frames.iter().filter(|f| f.is_data() && f.plane == 1).count();
    let data_plane_0 = frames.iter().filter(|f| f.is_data() && f.plane == 0).count();
    check_eq!("data frames on the down plane", data_plane_1, 0);
    check!(data_plane_0 > 0, "data must flow on plane 0");
    // Recovery: plane 1 answers again; its paths come back at their next probe.
    let both = |ev: &[Event]| {
        ev.iter()
            .filter(|e| matches!(e, Event::PathHealth { up: true, .. }))
            .count()
            >= 2
    };
    let (_, ev) = d.run_until(t, &p, &|_| false, 100_000_000, &mut |ev| both(ev))?;
    check!(both(&ev), "paths 1 and 3 did not both recover within 100 ms");
    let (frames, _) = d.run(t, &p, &|_| false, 1_000_000)?;
    let c2 = t.counters();
    check_eq!("paths_recovered", c2["paths_recovered"] - c["paths_recovered"], 2);
    let data_plane_1 = frames.iter().filter(|f| f.is_data() && f.plane == 1).count();
    check!(data_plane_1 > 0, "data must return to plane 1 after recovery");
    Ok(())
}

/// Send a 4-chunk WRITE on one path; returns the frames.
fn four(t: &mut Tester<'_>) -> R<(Peer, Vec<Pkt>)> {
    let (p, src) = open(t, 1)?;
    post(t, &p, src, 0, 4, 3)?;
    let v = data_frames(t)?;
    check_eq!("chunks", v.len(), 4);
    Ok((p, v))
}

fn dup_ack(t: &mut Tester<'_>) -> R {
    let (p, v) = four(t)?;
    let before = t.counters();
    let l = &v[1];
    for _ in 0..2 {
        ack_set(
            t,
            &p,
            0,
            &[psn(&v[0]), psn(&v[1])],
            l.mrh().unwrap().ts,
            l.plane,
            l.addrs.src_port,
        )?;
        t.expect_silence("nothing lost")?;
    }
    check_eq!("completions", t.completions()?.len(), 0);
    let all: Vec<u32> = v.iter().map(psn).collect();
    let l = &v[3];
    ack_set(t, &p, 0, &all, l.mrh().unwrap().ts, l.plane, l.addrs.src_port)?;
    ack_set(t, &p, 0, &all, l.mrh().unwrap().ts, l.plane, l.addrs.src_port)?;
    t.expect_completions(&[(WorkKind::Write, 0, 0, Status::Ok, 256)])?;
    t.expect_counters(&before, &[("losses_detected", 0), ("retransmits", 0), ("rx_acks", 4)])?;
    Ok(())
}

/// Hand the IUT a crafted ACK; it must be dropped as forged with no effect.
fn forged(t: &mut Tester<'_>, p: &Peer, v: &[Pkt], akh: &Akh, counter: &str) -> R {
    let before = t.counters();
    let f = t.ack_raw(p, akh, v[0].plane, v[0].addrs.src_port);
    t.send(v[0].plane, &f)?;
    expect_no_data(t, "a forged ACK has no effect")?;
    check_eq!("completions", t.completions()?.len(), 0);
    t.expect_counters(&before, &[(counter, 1), ("rx_acks", 1), ("losses_detected", 0)])?;
    // The connection is intact: a genuine ACK completes the message.
    let all: Vec<u32> = v.iter().map(psn).collect();
    let l = &v[3];
    let g = t.ack_frame(p, 0, &all, l.mrh().unwrap().ts, l.plane, l.addrs.src_port);
    t.send(l.plane, &g)?;
    t.expect_completions(&[(WorkKind::Write, 0, 0, Status::Ok, 256)])?;
    Ok(())
}

fn full_sack_akh(base: u32) -> Akh {
    Akh {
        path: 0,
        base,
        cum: base.wrapping_add(32),
        sack: [u32::MAX, 0, 0, 0, 0, 0, 0, 0],
        pkt_count: 4,
        ..Default::default()
    }
}

fn forged_misaligned(t: &mut Tester<'_>) -> R {
    let (p, v) = four(t)?;
    forged(t, &p, &v, &full_sack_akh(IUT_ISN + 1), "forged_acks")
}

fn forged_ahead(t: &mut Tester<'_>) -> R {
    let (p, v) = four(t)?;
    forged(t, &p, &v, &full_sack_akh(IUT_ISN + 32), "forged_acks")
}

fn forged_behind(t: &mut Tester<'_>) -> R {
    let (p, v) = four(t)?;
    forged(t, &p, &v, &full_sack_akh(IUT_ISN.wrapping_sub(288)), "forged_acks")
}

fn forged_path(t: &mut Tester<'_>) -> R {
    let (p, v) = four(t)?;
    forged(
        t,
        &p,
        &v,
        &Akh {
            path: 1,
            ..full_sack_akh(IUT_ISN)
        },
        "forged_acks",
    )
}

fn forged_bits(t: &mut Tester<'_>) -> R {
    let (p, v) = four(t)?;
    let before = t.counters();
    let mut psns: Vec<u32> = v.iter().map(psn).collect();
    psns.push(IUT_ISN + 9); // never sent
    let l = &v[3];
    ack_set(t, &p, 0, &psns, l.mrh().unwrap().ts, l.plane, l.addrs.src_port)?;
    t.expect_completions(&[(WorkKind::Write, 0, 0, Status::Ok, 256)])?;
    t.expect_counters(&before, &[("forged_ack_bits", 1), ("forged_acks", 0), ("rx_acks", 1)])?;
    Ok(())
}

fn ack_wrong_peer(t: &mut Tester<'_>) -> R {
    let (p, v) = four(t)?;
    let before = t.counters();
    let all: Vec<u32> = v.iter().map(psn).collect();
    let l = &v[3];
    let mut f = t.ack_frame(&p, 0, &all, l.mrh().unwrap().ts, l.plane, l.addrs.src_port);
    // From the stranger's address (IPv4 source), ICRC and checksum recomputed.
    f[26..30].copy_from_slice(&t.env.stranger.ips[l.plane as usize]);
    f[6..12].copy_from_slice(&t.env.stranger.mac);
    super::fix_ip_checksum(&mut f);
    super::fix_icrc(&mut f);
    t.send(l.plane, &f)?;
    // For a connection id the IUT does not have.
    let mut q = p.clone();
    q.iut_conn = p.iut_conn + 100;
    let g = t.ack_frame(&q, 0, &all, l.mrh().unwrap().ts, l.plane, l.addrs.src_port);
    t.send(l.plane, &g)?;
    expect_no_data(t, "dropped")?;
    check_eq!("completions", t.completions()?.len(), 0);
    t.expect_counters(&before, &[("unknown_connection", 2), ("rx_acks", 0)])?;
    Ok(())
}

fn verbs(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    let before = t.counters();
    let e = t.adapter().post_write(p.conn, 1024, lb(src, 0, 8), rb(VA, RKEY), 1);
    check_eq!("post_write on stream 1024", e, Err(VerbError::BadStream(1024)));
    let e = t.adapter().post_send(p.conn, 0, lb(src, 65530, 8), 1);
    check!(
        matches!(e, Err(VerbError::Local(_))),
        "post_send beyond the region: {e:?}"
    );
    let e = t.adapter().post_recv(p.conn, 0, lb(src, 65530, 8), 1);
    check!(
        matches!(e, Err(VerbError::Local(_))),
        "post_recv beyond the region: {e:?}"
    );
    let e = t.adapter().post_write(p.conn + 50, 0, lb(src, 0, 8), rb(VA, RKEY), 1);
    check_eq!(
        "post_write on an unknown connection",
        e,
        Err(VerbError::UnknownConnection(p.conn + 50))
    );
    let stranger = t.env.stranger;
    t.adapter().add_peer(stranger);
    let c = t
        .adapter()
        .connect(stranger)
        .map_err(|e| Fail(format!("connect: {e}")))?;
    let e = t.adapter().post_write(c, 0, lb(src, 0, 8), rb(VA, RKEY), 1);
    check_eq!("post_write while Connecting", e, Err(VerbError::NotConnected(c)));
    let f = t.drain()?;
    check!(
        f.len() == 1 && f[0].opcode() == opcode::MR_CONNECT,
        "only the CONNECT may be sent, got {}",
        f.len()
    );
    check_eq!("completions", t.completions()?.len(), 0);
    t.expect_counters(&before, &[("tx_data", 0)])?;
    Ok(())
}

fn tx_order(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    post(t, &p, src, 0, 2, 10)?; // stream 0, message 0: 2 chunks
    post(t, &p, src, 0, 1, 11)?; // stream 0, message 1
    post(t, &p, src, 1, 1, 12)?; // stream 1, message 0
    let v = data_frames(t)?;
    check_eq!("frames", v.len(), 4);
    let find = |s: u16, m: u32| {
        v.iter()
            .find(|f| f.data().is_some_and(|(_, d, _)| d.stream == s && d.msg_seq == m))
            .unwrap()
    };
    // Acknowledge stream 0 message 1 and stream 1 message 0 only.
    let (a, b) = (find(0, 1), find(1, 0));
    let base_psns = vec![psn(a), psn(b)];
    // ACK without the two chunks of message 0: they are lost (gap) and resent.
    ack_set(t, &p, 0, &base_psns, b.mrh().unwrap().ts, b.plane, b.addrs.src_port)?;
    let c = t.completions()?;
    let g: Vec<_> = c.iter().map(|c| (c.stream, c.msg_seq, c.wr_id)).collect();
    check_eq!(
        "completions: stream 1 only (stream 0 waits for message 0)",
        g,
        vec![(1, 0, 12)]
    );
    let r = data_frames(t)?;
    check_eq!("retransmissions of message 0", r.len(), 2);
    let mut all = base_psns;
    all.extend(v.iter().map(psn));
    all.extend(r.iter().map(psn));
    let l = r.last().unwrap();
    ack_set(t, &p, 0, &all, l.mrh().unwrap().ts, l.plane, l.addrs.src_port)?;
    let c = t.completions()?;
    let g: Vec<_> = c
        .iter()
        .map(|c| (c.stream, c.msg_seq, c.wr_id, c.kind, c.status))
        .collect();
    check_eq!(
        "completions of stream 0 in order",
        g,
        vec![
            (0, 0, 10, WorkKind::Write, Status::Ok),
            (0, 1, 11, WorkKind::Write, Status::Ok)
        ]
    );
    Ok(())
}

fn round_robin(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    post(t, &p, src, 0, 8, 1)?; // fills the initial window of 8 packets
    let v = data_frames(t)?;
    check_eq!("initial window", v.len(), 8);
    post(t, &p, src, 1, 3, 2)?;
    post(t, &p, src, 2, 3, 3)?;
    expect_no_data(t, "window full")?;
    let all: Vec<u32> = v.iter().map(psn).collect();
    let l = &v[7];
    ack_set(t, &p, 0, &all, l.mrh().unwrap().ts, l.plane, l.addrs.src_port)?;
    let w = data_frames(t)?;
    let order: Vec<(u16, u32)> = w
        .iter()
        .map(|f| f.data().map(|(_, s, _)| (s.stream, s.offset)).unwrap())
        .collect();
    check_eq!(
        "(stream, offset) order",
        order,
        vec![(1, 0), (2, 0), (1, 64), (2, 64), (1, 128), (2, 128)]
    );
    Ok(())
}

fn retx_first(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    post(t, &p, src, 0, 8, 1)?;
    let v = data_frames(t)?;
    post(t, &p, src, 1, 4, 2)?; // queued behind the full window
    check_eq!("data frames with the window full", data_frames(t)?.len(), 0);
    // ACK all but PSN 2: it is lost; the freed window carries the retransmission first.
    let acked: Vec<u32> = v
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, f)| psn(f))
        .collect();
    let l = &v[7];
    ack_set(t, &p, 0, &acked, l.mrh().unwrap().ts, l.plane, l.addrs.src_port)?;
    let w = data_frames(t)?;
    check!(!w.is_empty(), "nothing sent after the ACK");
    check!(
        w[0].is_retx() && chunk_off(&w[0]) == 128,
        "first frame must be the retransmission, got {}",
        w[0].describe()
    );
    check!(w[1..].iter().all(|f| !f.is_retx()), "one retransmission only");
    Ok(())
}

fn local_deregistered(t: &mut Tester<'_>) -> R {
    let (p, src) = open(t, 1)?;
    post(t, &p, src, 0, 8, 1)?; // fills the window
    let v = data_frames(t)?;
    let tmp = t.region(256, false, |_| 5)?;
    t.post_write(&p, 0, lb(tmp, 0, 256), rb(VA, RKEY), 2)?; // message 1: queued
    post(t, &p, src, 0, 1, 3)?; // message 2: queued
    t.deregister(tmp)?;
    let before = t.counters();
    let all: Vec<u32> = v.iter().map(psn).collect();
    let l = &v[7];
    ack_set(t, &p, 0, &all, l.mrh().unwrap().ts, l.plane, l.addrs.src_port)?;
    let w = data_frames(t)?;
    let msgs: Vec<u32> = w.iter().map(|f| f.data().unwrap().1.msg_seq).collect();
    check_eq!("messages sent after the ACK (message 1 skipped)", msgs, vec![2]);
    let c = t.completions()?;
    let g: Vec<_> = c.iter().map(|c| (c.msg_seq, c.status)).collect();
    check_eq!("completions", g, vec![(0, Status::Ok), (1, Status::ConnectionFailed)]);
    t.expect_counters(&before, &[("local_access_errors", 1)])?;
    Ok(())
}
