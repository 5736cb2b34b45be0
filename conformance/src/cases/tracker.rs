//! §6.1 and §8.4 (receiver side): when ACKs are sent and what they say — coalescing, AckReq,
//! gaps, CE, delayed ACKs, the 256-PSN window at its edges, duplicates, window slides by
//! full words and by the sender's floor, and PSN wraparound.

use mroce_model::memory::MrKey;
use mroce_model::params::{ACK_DELAY_NS, SACK_BITS};

use super::{case, Case};
use crate::adapter::Need;
use crate::harness::{Data, Peer, Tester, H, R, TESTER_NONCE};
use crate::{check, check_eq};

const EXACT: &[Need] = &[Need::ExactTime];

/// The cases of this area.
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "C-6.1-01",
            "§6.1",
            "ACK_COALESCE: the 4th packet without AckReq triggers one ACK covering all four",
            EXACT,
            coalesce,
        ),
        case("C-6.1-02", "§6.1", "AckReq forces an immediate ACK", &[], ack_req),
        case(
            "C-6.1-03",
            "§6.1",
            "A PSN gap forces an immediate ACK; Cum stops at the hole",
            &[],
            gap,
        ),
        case(
            "C-6.1-04",
            "§6.1",
            "Window edge: Base + 255 is recorded (SACK word 7 bit 31), Base + 256 is out_of_window",
            &[],
            edges,
        ),
        case(
            "C-6.1-05",
            "§6.1",
            "A repeated PSN is a duplicate_psn with an immediate ACK and no second placement",
            &[],
            dup_psn,
        ),
        case(
            "C-6.1-06",
            "§6.1",
            "A PSN below the window base is a duplicate_psn",
            &[],
            below_window,
        ),
        case(
            "C-6.1-07",
            "§6.1",
            "A full head word slides the window by 32",
            &[],
            full_word,
        ),
        case(
            "C-6.1-08",
            "§6.1",
            "The sender's floor slides the window one word per packet past holes; a floor above the PSN is ignored",
            &[],
            floor_slide,
        ),
        case(
            "C-6.1-09",
            "§6.1",
            "PSN wraparound: a window spanning 2^32 records and acknowledges correctly",
            &[],
            wrap,
        ),
        case(
            "C-8.4-01",
            "§8.4",
            "Delayed ACK: ACK_DELAY_NS after the first unacknowledged packet, TsEcho of the last",
            EXACT,
            delayed,
        ),
        case(
            "C-6.1-10",
            "§6.1",
            "CE forces an immediate ACK with EcnCount; ce_received counts it",
            &[Need::EcnMarking],
            ce,
        ),
        case(
            "C-6.1-11",
            "§6.1",
            "Paths are independent: each ACK reports only its own path's window",
            &[],
            per_path,
        ),
        case(
            "C-5.6-03",
            "§5.6",
            "A PROBE is recorded like data and answered with an ACK flagged PROBE",
            &[],
            probe_recorded,
        ),
    ]
}

fn open(t: &mut Tester<'_>, paths: u8) -> R<(Peer, MrKey)> {
    let p = t.open(paths, 4096)?;
    let k = t.region(8192, true, |_| 0)?;
    Ok((p, k))
}

/// A one-byte WRITE of message `m` on stream 0 without AckReq (placement always succeeds).
fn w(k: MrKey, path: u8, m: u32) -> Data {
    Data {
        ack_req: false,
        ts: 5000 + m,
        ..Data::write(path, 0, m, k.va + u64::from(m % 8192), k.rkey, &[m as u8])
    }
}

fn coalesce(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 1)?;
    for m in 0..3 {
        t.data(&mut p, &w(k, 0, m))?;
        t.expect_silence("fewer than ACK_COALESCE packets, no trigger")?;
    }
    t.data(&mut p, &w(k, 0, 3))?;
    let (_, a) = t.expect_ack("ACK after the 4th packet")?;
    check_eq!("PktCount", a.pkt_count, 4);
    check_eq!("SACK word 0", H(a.sack[0]), H(0xF));
    check_eq!("Cum", H(a.cum), H(p.my_isn + 4));
    check_eq!("TsEcho (4th packet)", a.ts_echo, 5003);
    t.expect_silence("one ACK only")?;
    // The delayed-ACK timer was cancelled by the immediate ACK: nothing later.
    t.advance(2 * ACK_DELAY_NS)?;
    t.expect_silence("no delayed ACK after an immediate one")?;
    Ok(())
}

fn ack_req(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 1)?;
    t.data(
        &mut p,
        &Data {
            ack_req: true,
            ..w(k, 0, 0)
        },
    )?;
    let (_, a) = t.expect_ack("immediate ACK")?;
    check_eq!("PktCount", a.pkt_count, 1);
    check_eq!("SACK word 0", a.sack[0], 1);
    Ok(())
}

fn gap(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 1)?;
    t.data(
        &mut p,
        &Data {
            ack_req: true,
            ..w(k, 0, 0)
        },
    )?;
    t.expect_ack("ACK (AckReq)")?;
    p.next_psn[0] += 1; // PSN ISN + 1 is lost
    t.data(&mut p, &w(k, 0, 1))?;
    let (_, a) = t.expect_ack("ACK triggered by the gap (no AckReq)")?;
    check_eq!("SACK word 0 (ISN and ISN + 2)", H(a.sack[0]), H(0b101));
    check_eq!("Cum stops at the hole", H(a.cum), H(p.my_isn + 1));
    check_eq!("PktCount", a.pkt_count, 1);
    Ok(())
}

fn edges(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 1)?;
    let isn = p.my_isn;
    t.data(
        &mut p,
        &Data {
            psn: Some(isn + 255),
            ..w(k, 0, 0)
        },
    )?;
    let (f, a) = t.expect_ack("ACK (gap)")?;
    check_eq!("SACK (only word 7 bit 31)", a.sack, [0, 0, 0, 0, 0, 0, 0, 0x8000_0000]);
    check_eq!(
        "the byte at AKH offset 52 (frame 106) holds Base + 255 in bit 7",
        f.bytes[54 + 24 + 28],
        0x80
    );
    check_eq!("Base", H(a.base), H(isn));
    let before = t.counters();
    t.data(
        &mut p,
        &Data {
            psn: Some(isn + SACK_BITS as u32),
            ..w(k, 0, 1)
        },
    )?;
    let (_, a) = t.expect_ack("immediate ACK for an out-of-window PSN")?;
    check_eq!("SACK unchanged", a.sack, [0, 0, 0, 0, 0, 0, 0, 0x8000_0000]);
    t.expect_counters(&before, &[("out_of_window", 1), ("rx_data", 1), ("bytes_placed", 0)])?;
    t.data(
        &mut p,
        &Data {
            psn: Some(isn),
            ..w(k, 0, 2)
        },
    )?;
    let (_, a) = t.expect_ack("ACK (gap)")?;
    check_eq!("SACK word 0 bit 0 (the byte at offset 27, bit 0)", a.sack[0], 1);
    check_eq!("Cum", H(a.cum), H(isn + 1));
    Ok(())
}

fn dup_psn(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 1)?;
    let d = Data {
        ack_req: true,
        ..w(k, 0, 0)
    };
    let (plane, f) = t.data_frame(&mut p, &d);
    t.send(plane, &f)?;
    t.expect_ack("first ACK")?;
    let before = t.counters();
    t.send(plane, &f)?;
    let (_, a) = t.expect_ack("ACK of the duplicate")?;
    check_eq!("SACK word 0", a.sack[0], 1);
    t.expect_counters(
        &before,
        &[
            ("duplicate_psn", 1),
            ("rx_data", 1),
            ("bytes_placed", 0),
            ("duplicate_chunks", 0),
        ],
    )?;
    let c = t.completions()?;
    check_eq!("one completion for the message", c.len(), 1);
    Ok(())
}

fn below_window(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 1)?;
    let isn = p.my_isn;
    for m in 0..32 {
        t.data(&mut p, &w(k, 0, m))?;
    }
    let acks = t.drain()?;
    check!(!acks.is_empty(), "no ACK for 32 packets");
    let before = t.counters();
    t.data(
        &mut p,
        &Data {
            psn: Some(isn + 3),
            ack_req: false,
            ..w(k, 0, 99)
        },
    )?;
    let (_, a) = t.expect_ack("immediate ACK for a PSN below the window")?;
    check_eq!("Base (slid past the first full word)", H(a.base), H(isn + 32));
    t.expect_counters(&before, &[("duplicate_psn", 1), ("rx_data", 1), ("bytes_placed", 0)])?;
    Ok(())
}

fn full_word(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 1)?;
    let isn = p.my_isn;
    for m in 0..31 {
        t.data(&mut p, &w(k, 0, m))?;
    }
    let _ = t.drain()?;
    t.data(
        &mut p,
        &Data {
            ack_req: true,
            ..w(k, 0, 31)
        },
    )?;
    let (_, a) = t.expect_ack("ACK of the 32nd packet")?;
    check_eq!("Base after the head word filled", H(a.base), H(isn + 32));
    check_eq!("SACK all clear", a.sack, [0; 8]);
    check_eq!("Cum", H(a.cum), H(isn + 32));
    Ok(())
}

fn floor_slide(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 1)?;
    let isn = p.my_isn;
    // PSNs 1 and 33 arrive; ISN, 2..31 are "abandoned" by a sender floor of ISN + 64.
    t.data(
        &mut p,
        &Data {
            psn: Some(isn + 1),
            ack_req: true,
            ..w(k, 0, 0)
        },
    )?;
    let (_, a) = t.expect_ack("ACK")?;
    check_eq!("Base", H(a.base), H(isn));
    // A floor above the packet's own PSN is ignored.
    t.data(
        &mut p,
        &Data {
            psn: Some(isn + 2),
            floor: Some(isn + 64),
            ack_req: true,
            ..w(k, 0, 1)
        },
    )?;
    let (_, a) = t.expect_ack("ACK")?;
    check_eq!("Base (floor above PSN ignored)", H(a.base), H(isn));
    t.data(
        &mut p,
        &Data {
            psn: Some(isn + 65),
            floor: Some(isn + 64),
            ack_req: true,
            ..w(k, 0, 2)
        },
    )?;
    let (_, a) = t.expect_ack("ACK")?;
    check_eq!(
        "Base after one floor slide (one word per packet)",
        H(a.base),
        H(isn + 32)
    );
    t.data(
        &mut p,
        &Data {
            psn: Some(isn + 66),
            floor: Some(isn + 64),
            ack_req: true,
            ..w(k, 0, 3)
        },
    )?;
    let (_, a) = t.expect_ack("ACK")?;
    check_eq!("Base after the second floor slide", H(a.base), H(isn + 64));
    check_eq!("SACK word 0 (ISN + 65, + 66)", H(a.sack[0]), H(0b110));
    check_eq!("Cum", H(a.cum), H(isn + 64));
    Ok(())
}

fn wrap(t: &mut Tester<'_>) -> R {
    let isn = 0xFFFF_FFF0u32;
    let mut cmh = Tester::connect_cmh(1, 2, 4096);
    cmh.isn = isn;
    cmh.nonce = TESTER_NONCE ^ 1;
    let mut p = t.open_with(&cmh)?;
    let k = t.region(8192, true, |_| 0)?;
    for m in 0..31u32 {
        if m == 20 {
            p.next_psn[0] = p.next_psn[0].wrapping_add(1); // PSN 0x00000004 is lost
        }
        t.data(&mut p, &w(k, 0, m))?;
    }
    let _ = t.drain()?;
    t.data(
        &mut p,
        &Data {
            ack_req: true,
            ..w(k, 0, 31)
        },
    )?;
    let (_, a) = t.expect_ack("ACK across the wrap")?;
    check_eq!("Base", H(a.base), H(isn));
    check_eq!("SACK word 0 (all but 0x00000004)", H(a.sack[0]), H(!(1u32 << 20)));
    check_eq!("SACK word 1 (0x00000010)", H(a.sack[1]), H(1));
    check_eq!("Cum", H(a.cum), H(4));
    // The hole is filled: the head word is complete and the window slides across 2^32.
    t.data(
        &mut p,
        &Data {
            psn: Some(4),
            ack_req: true,
            ..w(k, 0, 32)
        },
    )?;
    let (_, a) = t.expect_ack("ACK after the hole is filled")?;
    check_eq!("Base after the slide", H(a.base), H(0x10));
    check_eq!("SACK word 0", H(a.sack[0]), H(1));
    check_eq!("Cum", H(a.cum), H(0x11));
    Ok(())
}

fn delayed(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 1)?;
    t.data(&mut p, &w(k, 0, 0))?;
    t.advance(2_000)?;
    t.data(&mut p, &w(k, 0, 1))?;
    t.advance(ACK_DELAY_NS - 2_000 - 1)?;
    t.expect_silence("before ACK_DELAY_NS")?;
    let t0 = t.now() + 1;
    t.advance(1)?;
    let (f, a) = t.expect_ack("delayed ACK")?;
    check_eq!(
        "delayed ACK time (ns after the first packet)",
        f.at - (t0 - ACK_DELAY_NS),
        ACK_DELAY_NS
    );
    check_eq!("PktCount", a.pkt_count, 2);
    check_eq!("TsEcho (last packet)", a.ts_echo, 5001);
    check_eq!("Flags", a.flags, 0);
    t.advance(10 * ACK_DELAY_NS)?;
    t.expect_silence("nothing pending: no further ACK")?;
    Ok(())
}

fn ce(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 1)?;
    t.data(
        &mut p,
        &Data {
            ack_req: true,
            ..w(k, 0, 0)
        },
    )?;
    t.expect_ack("ACK (AckReq)")?;
    let before = t.counters();
    t.data(&mut p, &Data { ce: true, ..w(k, 0, 1) })?;
    let (_, a) = t.expect_ack("immediate ACK (CE, no AckReq)")?;
    check_eq!("EcnCount", a.ecn_count, 1);
    check_eq!("PktCount", a.pkt_count, 1);
    t.expect_counters(&before, &[("ce_received", 1), ("rx_data", 1)])?;
    t.data(
        &mut p,
        &Data {
            ack_req: true,
            ..w(k, 0, 2)
        },
    )?;
    let (_, a) = t.expect_ack("next ACK")?;
    check_eq!("EcnCount restarts after an ACK", a.ecn_count, 0);
    Ok(())
}

fn per_path(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 4)?;
    let r = |m| Data {
        ack_req: true,
        ..w(k, 1, m)
    };
    t.data(&mut p, &r(0))?;
    t.expect_ack("ACK of path 1")?;
    t.data(&mut p, &r(1))?;
    t.expect_ack("ACK of path 1")?;
    t.data(
        &mut p,
        &Data {
            ack_req: true,
            ..w(k, 2, 2)
        },
    )?;
    let (f, a) = t.expect_ack("ACK of path 2")?;
    check_eq!("AKH path", a.path, 2);
    check_eq!("ACK port (path 2 arrives on plane 0)", f.plane, 0);
    check_eq!("SACK of path 2 only", a.sack, [1, 0, 0, 0, 0, 0, 0, 0]);
    t.data(&mut p, &r(3))?;
    let (f, a) = t.expect_ack("ACK of path 1")?;
    check_eq!("AKH path", a.path, 1);
    check_eq!("ACK port", f.plane, 1);
    check_eq!("SACK of path 1", H(a.sack[0]), H(0b111));
    Ok(())
}

fn probe_recorded(t: &mut Tester<'_>) -> R {
    let (mut p, k) = open(t, 1)?;
    t.data(
        &mut p,
        &Data {
            ack_req: true,
            ..w(k, 0, 0)
        },
    )?;
    t.expect_ack("ACK of the data")?;
    let before = t.counters();
    t.probe(&mut p, 0, 4242)?;
    let (_, a) = t.expect_ack("ACK of the probe")?;
    check_eq!("Flags (PROBE)", a.flags, 1);
    check_eq!("SACK word 0 (data and probe)", H(a.sack[0]), H(0b11));
    check_eq!("TsEcho", a.ts_echo, 4242);
    t.expect_counters(&before, &[("rx_data", 1), ("bytes_placed", 0)])?;
    Ok(())
}
