//! transport_core: CSR bus, selector command injection, the scoreboard's room mask feeding
//! SELECT, and the pass-through of the three streams (checked against the model components).
use mroce_csr as csr;
use mroce_hdl::path_selector::*;
use mroce_hdl::rx_tracker::*;
use mroce_hdl::transport_core::TransportCore;
use mroce_hdl::tx_scoreboard::*;
use mroce_model::params::{PATHS, SACK_BITS, SACK_WORDS, SACK_WORD_BITS};
use mroce_model::path_selector::PathSelector;
use mroce_model::rx_tracker::{RxPacket, RxTracker, RxVerdict};
use mroce_model::tx_scoreboard::TxScoreboard;
use rust_hdl::prelude::*;

/// One clock. Inputs changed since the last `simulate` settle first, so the edge samples them
/// (otherwise an input changed together with the edge may be sampled stale).
fn tick(u: &mut TransportCore) {
    assert!(simulate(u, 300));
    u.clock.next = Clock { clk: true };
    assert!(simulate(u, 300));
    u.clock.next = Clock { clk: false };
    assert!(simulate(u, 300));
}

fn new_core() -> Box<TransportCore> {
    let mut u = Box::new(TransportCore::default());
    u.connect_all();
    simulate(&mut *u, 300);
    u.rx_out_ready.next = true;
    u.tx_out_ready.next = true;
    u.sel_out_ready.next = true;
    u
}

fn csr_read(u: &mut TransportCore, addr: u16) -> u32 {
    u.csr_addr.next = u64::from(addr).into();
    u.csr_we.next = false;
    tick(u);
    u.csr_rdata.val().to_u32()
}

fn csr_write(u: &mut TransportCore, addr: u16, v: u32) {
    u.csr_addr.next = u64::from(addr).into();
    u.csr_wdata.next = u64::from(v).into();
    u.csr_we.next = true;
    tick(u);
    u.csr_we.next = false;
}

#[test]
fn csr_map_reads_and_writes() {
    let mut u = new_core();
    assert_eq!(csr_read(&mut u, csr::ID), csr::ID_VALUE);
    assert_eq!(csr_read(&mut u, csr::VERSION), csr::MAP_VERSION);
    assert_eq!(csr_read(&mut u, csr::PARAMS), csr::PARAMS_VALUE);
    assert_eq!(csr_read(&mut u, csr::ROOM_MASK), (1 << PATHS) - 1);
    csr_write(&mut u, csr::SCRATCH, 0xDEAD_BEEF);
    assert_eq!(csr_read(&mut u, csr::SCRATCH), 0xDEAD_BEEF);
    csr_write(&mut u, csr::CONTROL, 1);
    assert_eq!(csr_read(&mut u, csr::CONTROL), 1);
    for r in csr::REGS {
        if r.access == csr::Access::Ro && r.reset != 0 {
            assert_eq!(csr_read(&mut u, r.offset), r.reset, "{}", r.name);
        }
    }
}

/// Fill path 0's window through the scoreboard, then SELECT with the room mask taken from the
/// scoreboard: the selector must skip path 0, exactly like `select(sb.room_mask())`.
#[test]
fn select_uses_scoreboard_room_and_csr_commands() {
    let mut u = new_core();
    let mut sb = TxScoreboard::new(0);
    let mut ps = PathSelector::default();
    csr_write(&mut u, csr::CONTROL, csr::CONTROL_ROOM_FROM_SCOREBOARD);
    // control core: PathSelector::new(3, 1) through SEL_CMD
    csr_write(&mut u, csr::SEL_CMD_ARG, 3 | (1 << 16));
    csr_write(&mut u, csr::SEL_CMD, SEL_OP_INIT as u32);
    ps = {
        let _ = ps;
        PathSelector::new(3, 1)
    };
    tick(&mut u);
    assert_eq!(csr_read(&mut u, csr::SEL_CMD) >> 31, 0, "command consumed");
    // SACK_BITS - SACK_WORD_BITS sends on path 0 close its window
    u.tx_in_valid.next = true;
    u.tx_in_op.next = TX_OP_SEND.into();
    u.tx_in_path.next = 0u64.into();
    u.tx_in_now.next = 0u64.into();
    u.tx_in_rto.next = 1000u64.into();
    let mut sent = 0;
    while sent < SACK_BITS - SACK_WORD_BITS {
        assert!(simulate(&mut *u, 300));
        if u.tx_in_ready.val() {
            sent += 1;
            sb.send(0, 0, 1000);
        }
        tick(&mut u);
    }
    u.tx_in_valid.next = false;
    for _ in 0..TX_ROOM_LAG + 2 {
        tick(&mut u);
    }
    assert_eq!(csr_read(&mut u, csr::ROOM_MASK), sb.room_mask() & 0xFFFF);
    assert_eq!(csr_read(&mut u, csr::TX_OPS), (SACK_BITS - SACK_WORD_BITS) as u32);
    // selects: the stream's own room field is ignored (CONTROL bit 0)
    let mut got = vec![];
    let mut want = vec![];
    u.sel_in_valid.next = true;
    u.sel_in_op.next = SEL_OP_SELECT.into();
    u.sel_in_room.next = 0u64.into();
    let mut offered = 0;
    let mut clocks = 0;
    while got.len() < 6 {
        clocks += 1;
        assert!(clocks < 100);
        u.sel_in_valid.next = offered < 6;
        assert!(simulate(&mut *u, 300));
        if offered < 6 && u.sel_in_ready.val() {
            offered += 1;
            want.push(ps.select(sb.room_mask()));
        }
        if u.sel_out_valid.val() {
            let o = u.sel_out.val();
            got.push(o.ok.then(|| o.path.to_u64() as u8));
        }
        tick(&mut u);
    }
    assert_eq!(got, want);
    assert!(want.iter().all(|p| *p != Some(0)));
}

#[test]
fn rx_stream_passes_through() {
    let mut u = new_core();
    let mut m = RxTracker::new(0);
    // reset every path to ISN 0 (the model's RxTracker::new(0)), then packets on path 1
    let mut ops: Vec<(u64, u8, u32)> = (0..PATHS as u8).map(|p| (RX_OP_RESET, p, 0)).collect();
    for psn in [0u32, 1, 3, 3, 2, 300, 4] {
        ops.push((RX_OP_PACKET, 1, psn));
    }
    let mut i = 0;
    let mut got = vec![];
    let mut clocks = 0;
    while got.len() < ops.len() {
        clocks += 1;
        assert!(clocks < 500);
        u.rx_in_valid.next = i < ops.len();
        if i < ops.len() {
            let (op, p, psn) = ops[i];
            u.rx_in_op.next = op.into();
            u.rx_in_path.next = u64::from(p).into();
            u.rx_in_psn.next = u64::from(psn).into();
            u.rx_in_floor.next = 0u64.into();
            u.rx_in_commit.next = true;
        }
        assert!(simulate(&mut *u, 300));
        if i < ops.len() && u.rx_in_ready.val() {
            i += 1;
        }
        if u.rx_out_valid.val() {
            let o = u.rx_out.val();
            got.push((o.op.to_u64(), o.verdict.to_u64(), o.ack, o.cum.to_u32()));
        }
        tick(&mut u);
    }
    let want: Vec<(u64, u64, bool, u32)> = ops[PATHS..]
        .iter()
        .map(|&(_, p, psn)| {
            let r = m.packet(&RxPacket {
                path: p,
                psn,
                floor: 0,
                ce: false,
                ack_req: false,
                commit: true,
            });
            let v = match r.verdict {
                RxVerdict::New => RX_NEW,
                RxVerdict::Duplicate => RX_DUPLICATE,
                RxVerdict::OutOfWindow => RX_OUT_OF_WINDOW,
                RxVerdict::Refused => RX_REFUSED,
            };
            (RX_OP_PACKET, v, r.ack.is_some(), r.ack.map_or(0, |a| a.cum))
        })
        .collect();
    let got: Vec<_> = got[PATHS..]
        .iter()
        .map(|&(op, v, ack, cum)| (op, v, ack, if ack { cum } else { 0 }))
        .collect();
    assert_eq!(got, want);
    assert_eq!(csr_read(&mut u, csr::RX_OPS), ops.len() as u32);
}

/// Offer one operation on the scoreboard stream and wait until it is accepted.
#[allow(clippy::too_many_arguments)]
fn tx_op(u: &mut TransportCore, op: u64, path: u8, psn: u32, mask: u32, below: u32, now: u32, rto: u32) {
    u.tx_in_valid.next = true;
    u.tx_in_op.next = op.into();
    u.tx_in_path.next = u64::from(path).into();
    u.tx_in_psn.next = u64::from(psn).into();
    u.tx_in_mask.next = u64::from(mask).into();
    u.tx_in_lost_below.next = u64::from(below).into();
    u.tx_in_now.next = u64::from(now).into();
    u.tx_in_rto.next = u64::from(rto).into();
    for _ in 0..20 {
        assert!(simulate(u, 300));
        let ready = u.tx_in_ready.val();
        tick(u);
        if ready {
            u.tx_in_valid.next = false;
            return;
        }
    }
    panic!("scoreboard operation not accepted");
}

/// Offer one operation on the selector stream and wait until it is accepted.
fn sel_op(u: &mut TransportCore, op: u64, path: u8, a: u16, b: u16, flag: bool) {
    u.sel_in_valid.next = true;
    u.sel_in_op.next = op.into();
    u.sel_in_path.next = u64::from(path).into();
    u.sel_in_room.next = 0xFFFFu64.into();
    u.sel_in_a.next = u64::from(a).into();
    u.sel_in_b.next = u64::from(b).into();
    u.sel_in_c.next = 0u64.into();
    u.sel_in_flag.next = flag;
    for _ in 0..20 {
        assert!(simulate(u, 300));
        let ready = u.sel_in_ready.val();
        tick(u);
        if ready {
            u.sel_in_valid.next = false;
            return;
        }
    }
    panic!("selector operation not accepted");
}

/// One receive-tracker PACKET with the CE flag as given.
fn rx_packet(u: &mut TransportCore, path: u8, psn: u32, ce: bool) {
    u.rx_in_valid.next = true;
    u.rx_in_op.next = RX_OP_PACKET.into();
    u.rx_in_path.next = u64::from(path).into();
    u.rx_in_psn.next = u64::from(psn).into();
    u.rx_in_floor.next = 0u64.into();
    u.rx_in_ce.next = ce;
    u.rx_in_commit.next = true;
    for _ in 0..20 {
        assert!(simulate(u, 300));
        let ready = u.rx_in_ready.val();
        tick(u);
        if ready {
            u.rx_in_valid.next = false;
            return;
        }
    }
    panic!("receive operation not accepted");
}

fn sel_cmd(u: &mut TransportCore, op: u64, path: u8, a: u16, b: u16, flag: bool) {
    csr_write(u, csr::SEL_CMD_ARG, u32::from(a) | (u32::from(b) << 16));
    csr_write(
        u,
        csr::SEL_CMD,
        op as u32 | (u32::from(path) << 4) | (u32::from(flag) << 8),
    );
    for _ in 0..4 {
        tick(u);
    }
}

fn settle(u: &mut TransportCore) {
    for _ in 0..24 {
        tick(u);
    }
}

fn read_path(u: &mut TransportCore, path: u8, reg: u16) -> u32 {
    csr_write(u, csr::PATH_SEL, u32::from(path));
    csr_read(u, reg)
}

fn health_code(h: mroce_model::path_selector::PathHealth) -> u32 {
    use mroce_model::path_selector::PathHealth::*;
    match h {
        Up => 0,
        Suspect => 1,
        Down => 2,
        Disabled => 3,
    }
}

/// The per-path counters, the sticky events and the interrupt follow the scoreboard's records
/// exactly as the model's results predict (popcounts of `freed` / `lost`, RTO expiries).
#[test]
fn per_path_scoreboard_counters_and_events() {
    // paths 2 and P5 carry traffic, P_IDLE none (all distinct in every configuration)
    const P5: u8 = (5 % PATHS) as u8;
    const P_IDLE: u8 = (PATHS - 1) as u8;
    let mut u = new_core();
    let mut sb = TxScoreboard::new(0);
    let (rto, mut acked2, mut sack_lost2, mut rto_lost5, mut rtos5) = (1000u32, 0u32, 0u32, 0u32, 0u32);
    for _ in 0..40 {
        tx_op(&mut u, TX_OP_SEND, 2, 0, 0, 0, 0, rto);
        sb.send(2, 0, rto);
    }
    for _ in 0..10 {
        tx_op(&mut u, TX_OP_SEND, P5, 0, 0, 0, 0, rto);
        sb.send(P5, 0, rto);
    }
    // a SACK word with a gap (lost) and a second word (freed)
    for (wp, mask, below, now) in [(0u32, 0xFFFF_0FFFu32, 32u32, 300u32), (32, 0x1, 33, 777)] {
        tx_op(&mut u, TX_OP_ACK_WORD, 2, wp, mask, below, now, rto);
        let r = sb.ack_word(2, wp, mask, below, now, rto);
        acked2 += r.freed.count_ones();
        sack_lost2 += r.lost.count_ones();
    }
    assert!(acked2 > 0 && sack_lost2 == 4, "the scenario exercises both masks");
    // path P5 times out: TIMER expires, then the window is expired word by word
    tx_op(&mut u, TX_OP_TIMER, P5, 0, 0, 0, 2000, rto);
    if let mroce_model::tx_scoreboard::TimerResult::Expired { .. } = sb.timer(P5, 2000, rto) {
        rtos5 += 1;
    }
    for _ in 0..SACK_WORDS {
        tx_op(&mut u, TX_OP_EXPIRE, P5, 0, 0, 0, 2000, rto);
        rto_lost5 += sb.expire_head(P5).lost.count_ones();
    }
    // a timer that is not due counts nothing
    tx_op(&mut u, TX_OP_TIMER, 2, 0, 0, 0, 800, rto);
    assert_eq!(sb.timer(2, 800, rto), mroce_model::tx_scoreboard::TimerResult::Idle);
    settle(&mut u);
    assert_eq!((rtos5, rto_lost5), (1, 10));
    assert_eq!(read_path(&mut u, 2, csr::P_ACKED), acked2);
    assert_eq!(read_path(&mut u, 2, csr::P_SACK_LOST), sack_lost2);
    assert_eq!(read_path(&mut u, 2, csr::P_RTOS), 0);
    assert_eq!(read_path(&mut u, 2, csr::P_LAST_ACK), 777);
    assert_eq!(read_path(&mut u, P5, csr::P_RTOS), rtos5);
    assert_eq!(read_path(&mut u, P5, csr::P_RTO_LOST), rto_lost5);
    assert_eq!(read_path(&mut u, P5, csr::P_ACKED), 0);
    assert_eq!(read_path(&mut u, P_IDLE, csr::P_RTO_LOST), 0);
    // events: RTO on path P5, losses on paths 2 and P5
    assert_eq!(csr_read(&mut u, csr::EVT_RTO), 1 << P5);
    assert_eq!(csr_read(&mut u, csr::EVT_LOSS), (1 << 2) | (1 << P5));
    assert_eq!(csr_read(&mut u, csr::EVT_REROUTE), 0);
    assert_eq!(csr_read(&mut u, csr::EVT_SUMMARY), csr::EVT_BIT_RTO | csr::EVT_BIT_LOSS);
    assert!(!u.irq.val());
    csr_write(&mut u, csr::IRQ_ENABLE, csr::EVT_BIT_RTO);
    tick(&mut u);
    assert!(u.irq.val(), "an enabled pending event raises irq");
    // write 1 to clear: only the bits written clear
    csr_write(&mut u, csr::EVT_LOSS, 1 << 2);
    assert_eq!(csr_read(&mut u, csr::EVT_LOSS), 1 << P5);
    csr_write(&mut u, csr::EVT_RTO, 1 << P5);
    assert_eq!(csr_read(&mut u, csr::EVT_RTO), 0);
    tick(&mut u);
    assert!(!u.irq.val(), "irq drops once the enabled events are cleared");
    assert_eq!(csr_read(&mut u, csr::EVT_SUMMARY), csr::EVT_BIT_LOSS);
}

/// Selector-side counters (packets sprayed per path, ECN-echo credits), the path-state
/// readback (entropy, plane, health), the re-route event, the receive CE counter, the context
/// gate on SEL_CMD, the clock counter and the fault register.
#[test]
fn per_path_selector_counters_state_and_control() {
    let mut u = new_core();
    assert_eq!(csr_read(&mut u, csr::CAPS), csr::CAPS_VALUE);
    // PathSelector::new(4, 2), then moves: path 3 to plane 1 -> plane 0, path 1 re-rolled
    let mut ps = PathSelector::new(4, 2);
    sel_cmd(&mut u, SEL_OP_INIT, 0, 4, 2, false);
    sel_cmd(&mut u, SEL_OP_SET_PLANE, 3, 0, 0, false);
    ps.set_plane(3, 0);
    sel_cmd(&mut u, SEL_OP_REROLL, 1, 0x1234, 0, false);
    ps.reroll(1, 0x1234);
    sel_cmd(&mut u, SEL_OP_SET_HEALTH, 2, HEALTH_SUSPECT as u16, 0, false);
    ps.set_health(2, mroce_model::path_selector::PathHealth::Suspect);
    let mut selected = [0u32; PATHS];
    for _ in 0..10 {
        sel_op(&mut u, SEL_OP_SELECT, 0, 0, 0, false);
        if let Some(p) = ps.select(0xFFFF) {
            selected[p as usize] += 1;
        }
    }
    // ECN-echo credits on path 0 until the model asks for a re-route
    let mut ecn0 = 0;
    let mut rerouted = false;
    for _ in 0..40 {
        ps.charge(0);
        sel_op(&mut u, SEL_OP_CHARGE, 0, 0, 0, false);
        sel_op(&mut u, SEL_OP_CREDIT, 0, 1, 0, true);
        ecn0 += 1;
        if ps.credit(&mroce_model::path_selector::Credit {
            path: 0,
            acked: 1,
            lost: 0,
            probes: 0,
            ce: true,
        }) {
            rerouted = true;
            break;
        }
    }
    settle(&mut u);
    for p in 0..4u8 {
        assert_eq!(read_path(&mut u, p, csr::P_SELECTED), selected[p as usize], "path {p}");
        let st = ps.path(p);
        let want =
            u32::from(st.entropy) | (u32::from(st.plane) << 16) | (health_code(st.health) << 20) | csr::P_STATE_KNOWN;
        if p != 0 || !rerouted {
            assert_eq!(read_path(&mut u, p, csr::P_STATE), want, "path {p}");
        }
    }
    assert!(selected.iter().sum::<u32>() > 0);
    assert_eq!(read_path(&mut u, 0, csr::P_ECN), ecn0);
    assert_eq!(read_path(&mut u, 1, csr::P_ECN), 0);
    if PATHS > 4 {
        let p = (PATHS - 1) as u8;
        assert_eq!(read_path(&mut u, p, csr::P_STATE), 0, "no record of path {p} yet");
    }
    assert_eq!(csr_read(&mut u, csr::EVT_REROUTE), if rerouted { 1 } else { 0 });
    assert!(rerouted, "the scenario reaches a re-route");
    // received CE marks
    for (psn, ce) in [(0u32, true), (1, false), (2, true), (2, true)] {
        rx_packet(&mut u, 3, psn, ce);
    }
    // back-to-back events on one path (the counter forwards its write-back word)
    for psn in 0..20u32 {
        rx_packet(&mut u, 1, psn, true);
    }
    settle(&mut u);
    assert_eq!(read_path(&mut u, 3, csr::P_RX_CE), 3);
    assert_eq!(read_path(&mut u, 1, csr::P_RX_CE), 20);
    // SEL_CMD is ignored for a context the core does not have
    let ops = csr_read(&mut u, csr::SEL_OPS);
    csr_write(&mut u, csr::CTX_SEL, csr::CONTEXTS);
    assert_eq!(csr_read(&mut u, csr::CTX_SEL), csr::CONTEXTS);
    sel_cmd(&mut u, SEL_OP_SET_CONN_LIMIT, 0, 5, 0, false);
    assert_eq!(csr_read(&mut u, csr::SEL_OPS), ops);
    csr_write(&mut u, csr::CTX_SEL, 0);
    sel_cmd(&mut u, SEL_OP_SET_CONN_LIMIT, 0, 5, 0, false);
    assert_eq!(csr_read(&mut u, csr::SEL_OPS), ops + 1);
    // the clock counter advances one per clock; the fault register holds what is written
    let c0 = csr_read(&mut u, csr::CYCLES);
    let c1 = csr_read(&mut u, csr::CYCLES);
    assert_eq!(c1.wrapping_sub(c0), 1);
    csr_write(&mut u, csr::FAULT, 0xABCD_EF02);
    assert_eq!(csr_read(&mut u, csr::FAULT), 0xABCD_EF02);
}

/// The CSR crate's selector codes (what the firmware uses) are the block's.
#[test]
fn csr_selector_codes_match_the_block() {
    use csr::{health, sel_op};
    let pairs = [
        (sel_op::SELECT, SEL_OP_SELECT),
        (sel_op::CHARGE, SEL_OP_CHARGE),
        (sel_op::CREDIT, SEL_OP_CREDIT),
        (sel_op::SET_HEALTH, SEL_OP_SET_HEALTH),
        (sel_op::CLEAR_INFLIGHT, SEL_OP_CLEAR_INFLIGHT),
        (sel_op::REQUEST_REROLL, SEL_OP_REQUEST_REROLL),
        (sel_op::REROLL, SEL_OP_REROLL),
        (sel_op::SET_PLANE, SEL_OP_SET_PLANE),
        (sel_op::SET_PLANE_UP, SEL_OP_SET_PLANE_UP),
        (sel_op::SET_CONN_LIMIT, SEL_OP_SET_CONN_LIMIT),
        (sel_op::INIT, SEL_OP_INIT),
        (sel_op::CHARGE_PROBE, SEL_OP_CHARGE_PROBE),
        (health::UP, HEALTH_UP),
        (health::SUSPECT, HEALTH_SUSPECT),
        (health::DOWN, HEALTH_DOWN),
        (health::DISABLED, HEALTH_DISABLED),
    ];
    for (a, b) in pairs {
        assert_eq!(u64::from(a), b);
    }
    assert_eq!(csr::sel_cmd_word(sel_op::SET_PLANE, 5, true), 7 | (5 << 4) | (1 << 8));
}
