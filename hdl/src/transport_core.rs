//! `transport_core`: `rx_tracker`, `tx_scoreboard` and `path_selector` wired together, each
//! with its valid/ready operation stream in and record stream out, plus the CSR port of
//! `mroce_csr` (simple bus: `csr_addr`, `csr_wdata`, `csr_we`; `csr_rdata` the clock after).
//!
//! Wiring between the blocks: when `CONTROL` bit 0 is set, a SELECT operation takes its room
//! mask from the scoreboard's `room_mask` register (which reflects every scoreboard operation
//! [`crate::tx_scoreboard::TX_ROOM_LAG`] clocks after it was accepted). A write to `SEL_CMD`
//! queues one path-selector operation for the control core; it enters the selector ahead of
//! the `sel_in` stream (whose `ready` is low that clock). Reading `SEL_CMD` returns 1 in bit 31
//! while such an operation waits.
//!
//! Latencies and throughput are the blocks' own: II = 1 on every stream.

use crate::lutram::{kc, Wide32};
use crate::path_selector::{PathSelectorHw, SelOut, SEL_OP_SELECT};
use crate::rx_tracker::{RxOut, RxTrackerHw};
use crate::tx_scoreboard::{TxOut, TxScoreboardHw};
use mroce_csr as csr;
use rust_hdl::prelude::*;

/// The top block.
#[derive(LogicBlock)]
pub struct TransportCore {
    pub clock: Signal<In, Clock>,
    // receive tracker stream
    pub rx_in_valid: Signal<In, Bit>,
    pub rx_in_ready: Signal<Out, Bit>,
    pub rx_in_op: Signal<In, Bits<2>>,
    pub rx_in_path: Signal<In, Bits<4>>,
    pub rx_in_psn: Signal<In, Bits<32>>,
    pub rx_in_floor: Signal<In, Bits<32>>,
    pub rx_in_ce: Signal<In, Bit>,
    pub rx_in_ack_req: Signal<In, Bit>,
    pub rx_in_commit: Signal<In, Bit>,
    pub rx_out_valid: Signal<Out, Bit>,
    pub rx_out_ready: Signal<In, Bit>,
    pub rx_out: Signal<Out, RxOut>,
    pub rx_out_sack: [Signal<Out, Bits<32>>; 8],
    // transmit scoreboard stream
    pub tx_in_valid: Signal<In, Bit>,
    pub tx_in_ready: Signal<Out, Bit>,
    pub tx_in_op: Signal<In, Bits<3>>,
    pub tx_in_path: Signal<In, Bits<4>>,
    pub tx_in_psn: Signal<In, Bits<32>>,
    pub tx_in_mask: Signal<In, Bits<32>>,
    pub tx_in_lost_below: Signal<In, Bits<32>>,
    pub tx_in_now: Signal<In, Bits<32>>,
    pub tx_in_rto: Signal<In, Bits<32>>,
    pub tx_out_valid: Signal<Out, Bit>,
    pub tx_out_ready: Signal<In, Bit>,
    pub tx_out: Signal<Out, TxOut>,
    // path selector stream
    pub sel_in_valid: Signal<In, Bit>,
    pub sel_in_ready: Signal<Out, Bit>,
    pub sel_in_op: Signal<In, Bits<4>>,
    pub sel_in_path: Signal<In, Bits<4>>,
    pub sel_in_room: Signal<In, Bits<16>>,
    pub sel_in_a: Signal<In, Bits<16>>,
    pub sel_in_b: Signal<In, Bits<16>>,
    pub sel_in_c: Signal<In, Bits<16>>,
    pub sel_in_flag: Signal<In, Bit>,
    pub sel_out_valid: Signal<Out, Bit>,
    pub sel_out_ready: Signal<In, Bit>,
    pub sel_out: Signal<Out, SelOut>,
    // CSR bus
    pub csr_addr: Signal<In, Bits<8>>,
    pub csr_wdata: Signal<In, Bits<32>>,
    pub csr_we: Signal<In, Bit>,
    pub csr_rdata: Signal<Out, Bits<32>>,
    rx: RxTrackerHw,
    tx: TxScoreboardHw,
    sel: PathSelectorHw,
    control: DFF<Bits<32>>,
    scratch: DFF<Bits<32>>,
    cmd_arg: DFF<Bits<32>>,
    cmd: DFF<Bits<32>>,
    cmd_pending: DFF<Bit>,
    rx_ops: DFF<Bits<32>>,
    tx_ops: DFF<Bits<32>>,
    sel_ops: DFF<Bits<32>>,
    rdata: DFF<Bits<32>>,
    a_id: Constant<Bits<8>>,
    a_version: Constant<Bits<8>>,
    a_params: Constant<Bits<8>>,
    a_control: Constant<Bits<8>>,
    a_room: Constant<Bits<8>>,
    a_rx_ops: Constant<Bits<8>>,
    a_tx_ops: Constant<Bits<8>>,
    a_sel_ops: Constant<Bits<8>>,
    a_cmd_arg: Constant<Bits<8>>,
    a_cmd: Constant<Bits<8>>,
    a_scratch: Constant<Bits<8>>,
    v_id: Constant<Bits<32>>,
    v_version: Constant<Bits<32>>,
    v_params: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    z32: Constant<Bits<32>>,
    pend32: Constant<Bits<32>>,
    op_select: Constant<Bits<4>>,
    room32: Signal<Local, Bits<32>>,
    xroom: Signal<Local, Wide32>,
    z16: Constant<Bits<16>>,
    cmdv: Signal<Local, Bits<32>>,
    argv: Signal<Local, Bits<32>>,
}

impl Default for TransportCore {
    fn default() -> Self {
        macro_rules! d {
            ($($f:ident),*) => {
                Self {
                    $($f: Default::default(),)*
                    a_id: kc(u64::from(csr::ID)),
                    a_version: kc(u64::from(csr::VERSION)),
                    a_params: kc(u64::from(csr::PARAMS)),
                    a_control: kc(u64::from(csr::CONTROL)),
                    a_room: kc(u64::from(csr::ROOM_MASK)),
                    a_rx_ops: kc(u64::from(csr::RX_OPS)),
                    a_tx_ops: kc(u64::from(csr::TX_OPS)),
                    a_sel_ops: kc(u64::from(csr::SEL_OPS)),
                    a_cmd_arg: kc(u64::from(csr::SEL_CMD_ARG)),
                    a_cmd: kc(u64::from(csr::SEL_CMD)),
                    a_scratch: kc(u64::from(csr::SCRATCH)),
                    v_id: kc(u64::from(csr::ID_VALUE)),
                    v_version: kc(u64::from(csr::MAP_VERSION)),
                    v_params: kc(u64::from(csr::PARAMS_VALUE)),
                    one32: kc(1),
                    z32: kc(0),
                    z16: kc(0),
                    pend32: kc(1 << 31),
                    op_select: kc(SEL_OP_SELECT),
                }
            };
        }
        d!(
            clock,
            rx_in_valid,
            rx_in_ready,
            rx_in_op,
            rx_in_path,
            rx_in_psn,
            rx_in_floor,
            rx_in_ce,
            rx_in_ack_req,
            rx_in_commit,
            rx_out_valid,
            rx_out_ready,
            rx_out,
            rx_out_sack,
            tx_in_valid,
            tx_in_ready,
            tx_in_op,
            tx_in_path,
            tx_in_psn,
            tx_in_mask,
            tx_in_lost_below,
            tx_in_now,
            tx_in_rto,
            tx_out_valid,
            tx_out_ready,
            tx_out,
            sel_in_valid,
            sel_in_ready,
            sel_in_op,
            sel_in_path,
            sel_in_room,
            sel_in_a,
            sel_in_b,
            sel_in_c,
            sel_in_flag,
            sel_out_valid,
            sel_out_ready,
            sel_out,
            csr_addr,
            csr_wdata,
            csr_we,
            csr_rdata,
            rx,
            tx,
            sel,
            control,
            scratch,
            cmd_arg,
            cmd,
            cmd_pending,
            rx_ops,
            tx_ops,
            sel_ops,
            rdata,
            room32,
            xroom,
            cmdv,
            argv
        )
    }
}

impl Logic for TransportCore {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            control,
            scratch,
            cmd_arg,
            cmd,
            cmd_pending,
            rx_ops,
            tx_ops,
            sel_ops,
            rdata
        );
        self.rx.clock.next = self.clock.val();
        self.tx.clock.next = self.clock.val();
        self.sel.clock.next = self.clock.val();
        // receive tracker
        self.rx.in_valid.next = self.rx_in_valid.val();
        self.rx_in_ready.next = self.rx.in_ready.val();
        self.rx.in_op.next = self.rx_in_op.val();
        self.rx.in_path.next = self.rx_in_path.val();
        self.rx.in_psn.next = self.rx_in_psn.val();
        self.rx.in_floor.next = self.rx_in_floor.val();
        self.rx.in_ce.next = self.rx_in_ce.val();
        self.rx.in_ack_req.next = self.rx_in_ack_req.val();
        self.rx.in_commit.next = self.rx_in_commit.val();
        self.rx_out_valid.next = self.rx.out_valid.val();
        self.rx.out_ready.next = self.rx_out_ready.val();
        self.rx_out.next = self.rx.out.val();
        for i in 0..8 {
            self.rx_out_sack[i].next = self.rx.out_sack[i].val();
        }
        // transmit scoreboard
        self.tx.in_valid.next = self.tx_in_valid.val();
        self.tx_in_ready.next = self.tx.in_ready.val();
        self.tx.in_op.next = self.tx_in_op.val();
        self.tx.in_path.next = self.tx_in_path.val();
        self.tx.in_psn.next = self.tx_in_psn.val();
        self.tx.in_mask.next = self.tx_in_mask.val();
        self.tx.in_lost_below.next = self.tx_in_lost_below.val();
        self.tx.in_now.next = self.tx_in_now.val();
        self.tx.in_rto.next = self.tx_in_rto.val();
        self.tx_out_valid.next = self.tx.out_valid.val();
        self.tx.out_ready.next = self.tx_out_ready.val();
        self.tx_out.next = self.tx.out.val();
        // path selector: a queued CSR command goes first
        self.cmdv.next = self.cmd.q.val();
        self.argv.next = self.cmd_arg.q.val();
        self.sel.in_valid.next = self.sel_in_valid.val();
        self.sel_in_ready.next = self.sel.in_ready.val();
        self.sel.in_op.next = self.sel_in_op.val();
        self.sel.in_path.next = self.sel_in_path.val();
        self.sel.in_room.next = self.sel_in_room.val();
        if self.control.q.val().get_bit(0) && (self.sel_in_op.val() == self.op_select.val()) {
            self.sel.in_room.next = self.tx.room_mask.val();
        }
        self.sel.in_a.next = self.sel_in_a.val();
        self.sel.in_b.next = self.sel_in_b.val();
        self.sel.in_c.next = self.sel_in_c.val();
        self.sel.in_flag.next = self.sel_in_flag.val();
        if self.cmd_pending.q.val() {
            self.sel.in_valid.next = true;
            self.sel_in_ready.next = false;
            self.sel.in_op.next = self.cmdv.val().get_bits::<4>(0);
            self.sel.in_path.next = self.cmdv.val().get_bits::<4>(4);
            self.sel.in_flag.next = self.cmdv.val().get_bit(8);
            self.sel.in_a.next = self.argv.val().get_bits::<16>(0);
            self.sel.in_b.next = self.argv.val().get_bits::<16>(16);
            self.sel.in_c.next = self.argv.val().get_bits::<16>(0);
            self.sel.in_room.next = self.tx.room_mask.val();
            if self.sel.in_ready.val() {
                self.cmd_pending.d.next = false;
            }
        }
        self.sel_out_valid.next = self.sel.out_valid.val();
        self.sel.out_ready.next = self.sel_out_ready.val();
        self.sel_out.next = self.sel.out.val();
        // operation counters
        if self.rx_in_valid.val() && self.rx.in_ready.val() {
            self.rx_ops.d.next = self.rx_ops.q.val() + self.one32.val();
        }
        if self.tx_in_valid.val() && self.tx.in_ready.val() {
            self.tx_ops.d.next = self.tx_ops.q.val() + self.one32.val();
        }
        if self.sel.in_valid.val() && self.sel.in_ready.val() {
            self.sel_ops.d.next = self.sel_ops.q.val() + self.one32.val();
        }
        // CSR writes
        if self.csr_we.val() {
            if self.csr_addr.val() == self.a_control.val() {
                self.control.d.next = self.csr_wdata.val();
            }
            if self.csr_addr.val() == self.a_scratch.val() {
                self.scratch.d.next = self.csr_wdata.val();
            }
            if self.csr_addr.val() == self.a_cmd_arg.val() {
                self.cmd_arg.d.next = self.csr_wdata.val();
            }
            if self.csr_addr.val() == self.a_cmd.val() {
                self.cmd.d.next = self.csr_wdata.val();
                self.cmd_pending.d.next = true;
            }
        }
        // CSR reads (registered)
        self.xroom.next.lo = self.tx.room_mask.val();
        self.xroom.next.hi = self.z16.val();
        self.room32.next = self.xroom.val().into();
        self.rdata.d.next = self.z32.val();
        if self.csr_addr.val() == self.a_id.val() {
            self.rdata.d.next = self.v_id.val();
        }
        if self.csr_addr.val() == self.a_version.val() {
            self.rdata.d.next = self.v_version.val();
        }
        if self.csr_addr.val() == self.a_params.val() {
            self.rdata.d.next = self.v_params.val();
        }
        if self.csr_addr.val() == self.a_control.val() {
            self.rdata.d.next = self.control.q.val();
        }
        if self.csr_addr.val() == self.a_room.val() {
            self.rdata.d.next = self.room32.val();
        }
        if self.csr_addr.val() == self.a_rx_ops.val() {
            self.rdata.d.next = self.rx_ops.q.val();
        }
        if self.csr_addr.val() == self.a_tx_ops.val() {
            self.rdata.d.next = self.tx_ops.q.val();
        }
        if self.csr_addr.val() == self.a_sel_ops.val() {
            self.rdata.d.next = self.sel_ops.q.val();
        }
        if self.csr_addr.val() == self.a_cmd_arg.val() {
            self.rdata.d.next = self.cmd_arg.q.val();
        }
        if (self.csr_addr.val() == self.a_cmd.val()) && self.cmd_pending.q.val() {
            self.rdata.d.next = self.pend32.val();
        }
        if self.csr_addr.val() == self.a_scratch.val() {
            self.rdata.d.next = self.scratch.q.val();
        }
        self.csr_rdata.next = self.rdata.q.val();
    }
}
