//! transport_core: CSR bus, selector command injection, the scoreboard's room mask feeding
//! SELECT, and the pass-through of the three streams (checked against the model components).
use mroce_csr as csr;
use mroce_hdl::path_selector::*;
use mroce_hdl::rx_tracker::*;
use mroce_hdl::transport_core::TransportCore;
use mroce_hdl::tx_scoreboard::*;
use mroce_model::path_selector::PathSelector;
use mroce_model::rx_tracker::{RxPacket, RxTracker, RxVerdict};
use mroce_model::tx_scoreboard::TxScoreboard;
use rust_hdl::prelude::*;

fn tick(u: &mut TransportCore) {
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
    assert_eq!(csr_read(&mut u, csr::ROOM_MASK), 0xFFFF);
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
    // 224 sends on path 0 close its window
    u.tx_in_valid.next = true;
    u.tx_in_op.next = TX_OP_SEND.into();
    u.tx_in_path.next = 0u64.into();
    u.tx_in_now.next = 0u64.into();
    u.tx_in_rto.next = 1000u64.into();
    let mut sent = 0;
    while sent < 224 {
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
    assert_eq!(csr_read(&mut u, csr::TX_OPS), 224);
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
    let mut ops: Vec<(u64, u8, u32)> = (0..16).map(|p| (RX_OP_RESET, p, 0)).collect();
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
    let want: Vec<(u64, u64, bool, u32)> = ops[16..]
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
    let got: Vec<_> = got[16..]
        .iter()
        .map(|&(op, v, ack, cum)| (op, v, ack, if ack { cum } else { 0 }))
        .collect();
    assert_eq!(got, want);
    assert_eq!(csr_read(&mut u, csr::RX_OPS), ops.len() as u32);
}
