//! `transport_core`: `rx_tracker`, `tx_scoreboard` and `path_selector` wired together, each
//! with its valid/ready operation stream in and record stream out, plus the CSR port of
//! `mroce_csr` (simple bus: `csr_addr`, `csr_wdata`, `csr_we`; `csr_rdata` the clock after).
//!
//! Wiring between the blocks: when `CONTROL` bit 0 is set, a SELECT operation takes its room
//! mask from the scoreboard's `room_mask` register (which reflects every scoreboard operation
//! [`CORE_TX_ROOM_LAG`] clocks after it was accepted). A write to `SEL_CMD`
//! queues one path-selector operation for the control core; it enters the selector ahead of
//! the `sel_in` stream (whose `ready` is low that clock). Reading `SEL_CMD` returns 1 in bit 31
//! while such an operation waits.
//!
//! Control-core view (map version 2): per-path counters and state derived from the block
//! streams, read through the `PATH_SEL` window; sticky per-path events (write 1 to clear) with a
//! summary and an `irq` output; a clock counter and a firmware fault register. Each per-path
//! register is a [`PathCounter`]: a LUT-RAM read-modify-write one clock after its registered
//! event, with a second LUT-RAM copy as the CSR read port; the scoreboard's `lost`/`freed`
//! masks are counted by a two-stage SWAR popcount. Nothing here back-pressures a stream.
//!
//! Latencies and throughput are the blocks' own: II = 1 on every stream. The ECP5
//! configurations take the pipelined blocks (100 MHz goal); the small configuration, built for
//! the iCE40 boards, the compact ones (`*_compact.rs`: the same ports and records, one-clock
//! read-modify-write, shorter latencies).

use crate::lutram::{kc, LutRam, Wide32};
use crate::path_selector::{SelOut, SEL_OP_CREDIT, SEL_OP_SELECT};
use crate::rx_tracker::{RxOut, RX_OP_PACKET};
use crate::tx_scoreboard::{TxOut, TX_OP_ACK_WORD, TX_OP_EXPIRE, TX_OP_TIMER};
use mroce_csr as csr;
use mroce_model::params::{PATHS, PATH_BITS, SACK_WORDS};
use rust_hdl::prelude::*;

/// Width of a path index.
const PB: usize = PATH_BITS as usize;
// The sticky event registers (EVT_RTO, EVT_LOSS, EVT_REROUTE) hold one bit per path in 16 bits.
const _: () = assert!(PATHS <= 16, "the CSR event masks are 16 bits wide");

/// The receive tracker of the ECP5 configurations: pipelined for 100 MHz.
#[cfg(not(feature = "config-small"))]
type RxBlock = crate::rx_tracker::RxTrackerHw;
/// The receive tracker of the small configuration (iCE40 boards, 25 MHz): the compact block,
/// the same ports and records with a one-clock read-modify-write.
#[cfg(feature = "config-small")]
type RxBlock = crate::rx_tracker_compact::RxTrackerCompact;

/// The transmit scoreboard of the ECP5 configurations: pipelined for 100 MHz.
#[cfg(not(feature = "config-small"))]
type TxBlock = crate::tx_scoreboard::TxScoreboardHw;
/// The transmit scoreboard of the small configuration: the compact block.
#[cfg(feature = "config-small")]
type TxBlock = crate::tx_scoreboard_compact::TxScoreboardCompact;
/// The path selector of the ECP5 configurations: pipelined for 100 MHz.
#[cfg(not(feature = "config-small"))]
type SelBlock = crate::path_selector::PathSelectorHw;
/// The path selector of the small configuration: the compact block.
#[cfg(feature = "config-small")]
type SelBlock = crate::path_selector_compact::PathSelectorCompact;
/// The path selector's latency in this configuration.
#[cfg(not(feature = "config-small"))]
pub const CORE_SEL_LATENCY: usize = crate::path_selector::SEL_LATENCY;
/// The path selector's latency in this configuration.
#[cfg(feature = "config-small")]
pub const CORE_SEL_LATENCY: usize = crate::path_selector_compact::SELC_LATENCY;
/// Clocks from a scoreboard operation's acceptance until `ROOM_MASK` and SELECT's room reflect
/// it: the scoreboard's own lag.
#[cfg(not(feature = "config-small"))]
pub const CORE_TX_ROOM_LAG: usize = crate::tx_scoreboard::TX_ROOM_LAG;
/// Clocks from a scoreboard operation's acceptance until `ROOM_MASK` and SELECT's room reflect
/// it: the scoreboard's own lag.
#[cfg(feature = "config-small")]
pub const CORE_TX_ROOM_LAG: usize = crate::tx_scoreboard_compact::TXC_ROOM_LAG;

/// The top block.
#[derive(LogicBlock)]
pub struct TransportCore {
    pub clock: Signal<In, Clock>,
    // receive tracker stream
    pub rx_in_valid: Signal<In, Bit>,
    pub rx_in_ready: Signal<Out, Bit>,
    pub rx_in_op: Signal<In, Bits<2>>,
    pub rx_in_path: Signal<In, Bits<PB>>,
    pub rx_in_psn: Signal<In, Bits<32>>,
    pub rx_in_floor: Signal<In, Bits<32>>,
    pub rx_in_ce: Signal<In, Bit>,
    pub rx_in_ack_req: Signal<In, Bit>,
    pub rx_in_commit: Signal<In, Bit>,
    pub rx_out_valid: Signal<Out, Bit>,
    pub rx_out_ready: Signal<In, Bit>,
    pub rx_out: Signal<Out, RxOut>,
    pub rx_out_sack: [Signal<Out, Bits<32>>; SACK_WORDS],
    // transmit scoreboard stream
    pub tx_in_valid: Signal<In, Bit>,
    pub tx_in_ready: Signal<Out, Bit>,
    pub tx_in_op: Signal<In, Bits<3>>,
    pub tx_in_path: Signal<In, Bits<PB>>,
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
    pub sel_in_path: Signal<In, Bits<PB>>,
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
    /// Interrupt request: an enabled `EVT_SUMMARY` bit is set (registered).
    pub irq: Signal<Out, Bit>,
    rx: RxBlock,
    tx: TxBlock,
    sel: SelBlock,
    control: DFF<Bits<32>>,
    scratch: DFF<Bits<32>>,
    cmd_arg: DFF<Bits<32>>,
    cmd: DFF<Bits<32>>,
    cmd_pending: DFF<Bit>,
    rx_ops: DFF<Bits<32>>,
    tx_ops: DFF<Bits<32>>,
    sel_ops: DFF<Bits<32>>,
    rdata: DFF<Bits<32>>,
    ctx: DFF<Bits<32>>,
    cycles: DFF<Bits<32>>,
    fault: DFF<Bits<32>>,
    evt_rto: DFF<Bits<16>>,
    evt_loss: DFF<Bits<16>>,
    evt_reroute: DFF<Bits<16>>,
    irq_en: DFF<Bits<32>>,
    irq_r: DFF<Bit>,
    path_sel: DFF<Bits<32>>,
    t1: DFF<TxEvent>,
    t2: DFF<TxEvent>,
    t3: DFF<TxEvent>,
    c_selected: PathCounter,
    c_rtos: PathCounter,
    c_rto_lost: PathCounter,
    c_sack_lost: PathCounter,
    c_acked: PathCounter,
    c_ecn: PathCounter,
    c_rx_ce: PathCounter,
    c_last_ack: PathCounter,
    c_state: PathCounter,
    pc_lost: Popcount32,
    pc_freed: Popcount32,
    a_caps: Constant<Bits<8>>,
    a_ctx: Constant<Bits<8>>,
    a_cycles: Constant<Bits<8>>,
    a_fault: Constant<Bits<8>>,
    a_evt_rto: Constant<Bits<8>>,
    a_evt_loss: Constant<Bits<8>>,
    a_evt_reroute: Constant<Bits<8>>,
    a_evt_summary: Constant<Bits<8>>,
    a_irq_en: Constant<Bits<8>>,
    a_path_sel: Constant<Bits<8>>,
    a_p: [Constant<Bits<8>>; 9],
    v_caps: Constant<Bits<32>>,
    v_contexts: Constant<Bits<32>>,
    one16: Constant<Bits<16>>,
    z9: Constant<Bits<9>>,
    z29: Constant<Bits<29>>,
    op_credit: Constant<Bits<4>>,
    tx_timer: Constant<Bits<3>>,
    tx_expire: Constant<Bits<3>>,
    tx_ack: Constant<Bits<3>>,
    rx_packet: Constant<Bits<2>>,
    set_rto: Signal<Local, Bits<16>>,
    clr_rto: Signal<Local, Bits<16>>,
    set_loss: Signal<Local, Bits<16>>,
    clr_loss: Signal<Local, Bits<16>>,
    set_reroute: Signal<Local, Bits<16>>,
    clr_reroute: Signal<Local, Bits<16>>,
    sel_rec: Signal<Local, SelOut>,
    sel_take: Signal<Local, Bit>,
    summary: Signal<Local, Summary32>,
    pstate: Signal<Local, PathStateWord>,
    x_rto: Signal<Local, Wide32>,
    x_loss: Signal<Local, Wide32>,
    x_reroute: Signal<Local, Wide32>,
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
    xroom: Signal<Local, RoomWord>,
    z_pad: Constant<Bits<{ 32 - PATHS }>>,
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
                    z_pad: kc(0),
                    pend32: kc(1 << 31),
                    op_select: kc(SEL_OP_SELECT),
                    a_caps: kc(u64::from(csr::CAPS)),
                    a_ctx: kc(u64::from(csr::CTX_SEL)),
                    a_cycles: kc(u64::from(csr::CYCLES)),
                    a_fault: kc(u64::from(csr::FAULT)),
                    a_evt_rto: kc(u64::from(csr::EVT_RTO)),
                    a_evt_loss: kc(u64::from(csr::EVT_LOSS)),
                    a_evt_reroute: kc(u64::from(csr::EVT_REROUTE)),
                    a_evt_summary: kc(u64::from(csr::EVT_SUMMARY)),
                    a_irq_en: kc(u64::from(csr::IRQ_ENABLE)),
                    a_path_sel: kc(u64::from(csr::PATH_SEL)),
                    a_p: core::array::from_fn(|i| kc(u64::from(csr::PATH_WINDOW[i]))),
                    v_caps: kc(u64::from(csr::CAPS_VALUE)),
                    v_contexts: kc(u64::from(csr::CONTEXTS)),
                    one16: kc(1),
                    z9: kc(0),
                    z29: kc(0),
                    op_credit: kc(SEL_OP_CREDIT),
                    tx_timer: kc(TX_OP_TIMER),
                    tx_expire: kc(TX_OP_EXPIRE),
                    tx_ack: kc(TX_OP_ACK_WORD),
                    rx_packet: kc(RX_OP_PACKET),
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
            argv,
            irq,
            ctx,
            cycles,
            fault,
            evt_rto,
            evt_loss,
            evt_reroute,
            irq_en,
            irq_r,
            path_sel,
            t1,
            t2,
            t3,
            c_selected,
            c_rtos,
            c_rto_lost,
            c_sack_lost,
            c_acked,
            c_ecn,
            c_rx_ce,
            c_last_ack,
            c_state,
            pc_lost,
            pc_freed,
            set_rto,
            clr_rto,
            set_loss,
            clr_loss,
            set_reroute,
            clr_reroute,
            sel_rec,
            sel_take,
            summary,
            pstate,
            x_rto,
            x_loss,
            x_reroute
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
            rdata,
            ctx,
            cycles,
            fault,
            evt_rto,
            evt_loss,
            evt_reroute,
            irq_en,
            irq_r,
            path_sel,
            t1,
            t2,
            t3
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
        for i in 0..SACK_WORDS {
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
        // the scoreboard's room mask, zero-extended (ROOM_MASK, and SELECT's room)
        self.xroom.next.mask = self.tx.room_mask.val();
        self.xroom.next.pad = self.z_pad.val();
        self.room32.next = self.xroom.val().into();
        // path selector: a queued CSR command goes first
        self.cmdv.next = self.cmd.q.val();
        self.argv.next = self.cmd_arg.q.val();
        self.sel.in_valid.next = self.sel_in_valid.val();
        self.sel_in_ready.next = self.sel.in_ready.val();
        self.sel.in_op.next = self.sel_in_op.val();
        self.sel.in_path.next = self.sel_in_path.val();
        self.sel.in_room.next = self.sel_in_room.val();
        if self.control.q.val().get_bit(0) && (self.sel_in_op.val() == self.op_select.val()) {
            self.sel.in_room.next = self.room32.val().get_bits::<16>(0);
        }
        self.sel.in_a.next = self.sel_in_a.val();
        self.sel.in_b.next = self.sel_in_b.val();
        self.sel.in_c.next = self.sel_in_c.val();
        self.sel.in_flag.next = self.sel_in_flag.val();
        if self.cmd_pending.q.val() {
            self.sel.in_valid.next = true;
            self.sel_in_ready.next = false;
            self.sel.in_op.next = self.cmdv.val().get_bits::<4>(0);
            self.sel.in_path.next = self.cmdv.val().get_bits::<PB>(4);
            self.sel.in_flag.next = self.cmdv.val().get_bit(8);
            self.sel.in_a.next = self.argv.val().get_bits::<16>(0);
            self.sel.in_b.next = self.argv.val().get_bits::<16>(16);
            self.sel.in_c.next = self.argv.val().get_bits::<16>(0);
            self.sel.in_room.next = self.room32.val().get_bits::<16>(0);
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
            if (self.csr_addr.val() == self.a_cmd.val()) && (self.ctx.q.val() < self.v_contexts.val()) {
                self.cmd.d.next = self.csr_wdata.val();
                self.cmd_pending.d.next = true;
            }
            if self.csr_addr.val() == self.a_ctx.val() {
                self.ctx.d.next = self.csr_wdata.val();
            }
            if self.csr_addr.val() == self.a_fault.val() {
                self.fault.d.next = self.csr_wdata.val();
            }
            if self.csr_addr.val() == self.a_irq_en.val() {
                self.irq_en.d.next = self.csr_wdata.val();
            }
            if self.csr_addr.val() == self.a_path_sel.val() {
                self.path_sel.d.next = self.csr_wdata.val();
            }
        }
        self.cycles.d.next = self.cycles.q.val() + self.one32.val();
        // scoreboard records: register (t1), popcount `lost` and `freed` (two stages; t3 aligned)
        self.t1.d.next.v_timer = false;
        self.t1.d.next.v_expire = false;
        self.t1.d.next.v_ack = false;
        if self.tx.out_valid.val() && self.tx_out_ready.val() {
            self.t1.d.next.v_timer = (self.tx.out.val().op == self.tx_timer.val()) && self.tx.out.val().ok;
            self.t1.d.next.v_expire = self.tx.out.val().op == self.tx_expire.val();
            self.t1.d.next.v_ack = self.tx.out.val().op == self.tx_ack.val();
        }
        self.t1.d.next.path = self.tx.out.val().path;
        self.t1.d.next.lost = self.tx.out.val().lost;
        self.t1.d.next.freed = self.tx.out.val().freed;
        self.pc_lost.clock.next = self.clock.val();
        self.pc_freed.clock.next = self.clock.val();
        self.pc_lost.x.next = self.t1.q.val().lost;
        self.pc_freed.x.next = self.t1.q.val().freed;
        self.t2.d.next = self.t1.q.val();
        self.t3.d.next = self.t2.q.val();
        // selector records (as the downstream takes them)
        self.sel_rec.next = self.sel.out.val();
        self.sel_take.next = self.sel.out_valid.val() && self.sel_out_ready.val();
        self.pstate.next.entropy = self.sel_rec.val().entropy;
        self.pstate.next.plane = self.sel_rec.val().plane;
        self.pstate.next.pad1 = false;
        self.pstate.next.health = self.sel_rec.val().health;
        self.pstate.next.pad2 = self.z9.val();
        self.pstate.next.known = true;
        // per-path counters
        self.c_selected.clock.next = self.clock.val();
        self.c_selected.ev_valid.next =
            self.sel_take.val() && (self.sel_rec.val().op == self.op_select.val()) && self.sel_rec.val().ok;
        self.c_selected.ev_path.next = self.sel_rec.val().path;
        self.c_selected.ev_value.next = self.one32.val();
        self.c_selected.ev_set.next = false;
        self.c_state.clock.next = self.clock.val();
        self.c_state.ev_valid.next =
            self.sel_take.val() && (self.sel_rec.val().ok || (self.sel_rec.val().op != self.op_select.val()));
        self.c_state.ev_path.next = self.sel_rec.val().path;
        self.c_state.ev_value.next = self.pstate.val().into();
        self.c_state.ev_set.next = true;
        self.c_rtos.clock.next = self.clock.val();
        self.c_rtos.ev_valid.next = self.t3.q.val().v_timer;
        self.c_rtos.ev_path.next = self.t3.q.val().path;
        self.c_rtos.ev_value.next = self.one32.val();
        self.c_rtos.ev_set.next = false;
        self.c_rto_lost.clock.next = self.clock.val();
        self.c_rto_lost.ev_valid.next = self.t3.q.val().v_expire;
        self.c_rto_lost.ev_path.next = self.t3.q.val().path;
        self.c_rto_lost.ev_value.next = self.pc_lost.count.val();
        self.c_rto_lost.ev_set.next = false;
        self.c_sack_lost.clock.next = self.clock.val();
        self.c_sack_lost.ev_valid.next = self.t3.q.val().v_ack;
        self.c_sack_lost.ev_path.next = self.t3.q.val().path;
        self.c_sack_lost.ev_value.next = self.pc_lost.count.val();
        self.c_sack_lost.ev_set.next = false;
        self.c_acked.clock.next = self.clock.val();
        self.c_acked.ev_valid.next = self.t3.q.val().v_ack;
        self.c_acked.ev_path.next = self.t3.q.val().path;
        self.c_acked.ev_value.next = self.pc_freed.count.val();
        self.c_acked.ev_set.next = false;
        self.c_ecn.clock.next = self.clock.val();
        self.c_ecn.ev_valid.next = self.sel.in_valid.val()
            && self.sel.in_ready.val()
            && (self.sel.in_op.val() == self.op_credit.val())
            && self.sel.in_flag.val();
        self.c_ecn.ev_path.next = self.sel.in_path.val();
        self.c_ecn.ev_value.next = self.one32.val();
        self.c_ecn.ev_set.next = false;
        self.c_rx_ce.clock.next = self.clock.val();
        self.c_rx_ce.ev_valid.next = self.rx_in_valid.val()
            && self.rx.in_ready.val()
            && (self.rx_in_op.val() == self.rx_packet.val())
            && self.rx_in_ce.val();
        self.c_rx_ce.ev_path.next = self.rx_in_path.val();
        self.c_rx_ce.ev_value.next = self.one32.val();
        self.c_rx_ce.ev_set.next = false;
        self.c_last_ack.clock.next = self.clock.val();
        self.c_last_ack.ev_valid.next =
            self.tx_in_valid.val() && self.tx.in_ready.val() && (self.tx_in_op.val() == self.tx_ack.val());
        self.c_last_ack.ev_path.next = self.tx_in_path.val();
        self.c_last_ack.ev_value.next = self.tx_in_now.val();
        self.c_last_ack.ev_set.next = true;
        self.c_selected.rd_path.next = self.path_sel.q.val().get_bits::<PB>(0);
        self.c_rtos.rd_path.next = self.path_sel.q.val().get_bits::<PB>(0);
        self.c_rto_lost.rd_path.next = self.path_sel.q.val().get_bits::<PB>(0);
        self.c_sack_lost.rd_path.next = self.path_sel.q.val().get_bits::<PB>(0);
        self.c_acked.rd_path.next = self.path_sel.q.val().get_bits::<PB>(0);
        self.c_ecn.rd_path.next = self.path_sel.q.val().get_bits::<PB>(0);
        self.c_rx_ce.rd_path.next = self.path_sel.q.val().get_bits::<PB>(0);
        self.c_last_ack.rd_path.next = self.path_sel.q.val().get_bits::<PB>(0);
        self.c_state.rd_path.next = self.path_sel.q.val().get_bits::<PB>(0);
        // sticky events: a set wins over a clear in the same clock
        self.set_rto.next = self.z16.val();
        if self.t1.q.val().v_timer {
            self.set_rto.next = self.one16.val() << self.t1.q.val().path;
        }
        self.set_loss.next = self.z16.val();
        if (self.t1.q.val().v_expire || self.t1.q.val().v_ack) && self.t1.q.val().lost.any() {
            self.set_loss.next = self.one16.val() << self.t1.q.val().path;
        }
        self.set_reroute.next = self.z16.val();
        if self.sel_take.val() && (self.sel_rec.val().op == self.op_credit.val()) && self.sel_rec.val().ok {
            self.set_reroute.next = self.one16.val() << self.sel_rec.val().path;
        }
        self.clr_rto.next = self.z16.val();
        self.clr_loss.next = self.z16.val();
        self.clr_reroute.next = self.z16.val();
        if self.csr_we.val() {
            if self.csr_addr.val() == self.a_evt_rto.val() {
                self.clr_rto.next = self.csr_wdata.val().get_bits::<16>(0);
            }
            if self.csr_addr.val() == self.a_evt_loss.val() {
                self.clr_loss.next = self.csr_wdata.val().get_bits::<16>(0);
            }
            if self.csr_addr.val() == self.a_evt_reroute.val() {
                self.clr_reroute.next = self.csr_wdata.val().get_bits::<16>(0);
            }
        }
        self.evt_rto.d.next = (self.evt_rto.q.val() & !self.clr_rto.val()) | self.set_rto.val();
        self.evt_loss.d.next = (self.evt_loss.q.val() & !self.clr_loss.val()) | self.set_loss.val();
        self.evt_reroute.d.next = (self.evt_reroute.q.val() & !self.clr_reroute.val()) | self.set_reroute.val();
        self.summary.next.rto = self.evt_rto.q.val().any();
        self.summary.next.loss = self.evt_loss.q.val().any();
        self.summary.next.reroute = self.evt_reroute.q.val().any();
        self.summary.next.pad = self.z29.val();
        self.irq_r.d.next = (self.summary.val().rto && self.irq_en.q.val().get_bit(0))
            || (self.summary.val().loss && self.irq_en.q.val().get_bit(1))
            || (self.summary.val().reroute && self.irq_en.q.val().get_bit(2));
        self.irq.next = self.irq_r.q.val();
        self.x_rto.next.lo = self.evt_rto.q.val();
        self.x_rto.next.hi = self.z16.val();
        self.x_loss.next.lo = self.evt_loss.q.val();
        self.x_loss.next.hi = self.z16.val();
        self.x_reroute.next.lo = self.evt_reroute.q.val();
        self.x_reroute.next.hi = self.z16.val();
        // CSR reads (registered)
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
        if self.csr_addr.val() == self.a_caps.val() {
            self.rdata.d.next = self.v_caps.val();
        }
        if self.csr_addr.val() == self.a_ctx.val() {
            self.rdata.d.next = self.ctx.q.val();
        }
        if self.csr_addr.val() == self.a_cycles.val() {
            self.rdata.d.next = self.cycles.q.val();
        }
        if self.csr_addr.val() == self.a_fault.val() {
            self.rdata.d.next = self.fault.q.val();
        }
        if self.csr_addr.val() == self.a_evt_rto.val() {
            self.rdata.d.next = self.x_rto.val().into();
        }
        if self.csr_addr.val() == self.a_evt_loss.val() {
            self.rdata.d.next = self.x_loss.val().into();
        }
        if self.csr_addr.val() == self.a_evt_reroute.val() {
            self.rdata.d.next = self.x_reroute.val().into();
        }
        if self.csr_addr.val() == self.a_evt_summary.val() {
            self.rdata.d.next = self.summary.val().into();
        }
        if self.csr_addr.val() == self.a_irq_en.val() {
            self.rdata.d.next = self.irq_en.q.val();
        }
        if self.csr_addr.val() == self.a_path_sel.val() {
            self.rdata.d.next = self.path_sel.q.val();
        }
        if self.csr_addr.val() == self.a_p[0].val() {
            self.rdata.d.next = self.c_selected.rd_data.val();
        }
        if self.csr_addr.val() == self.a_p[1].val() {
            self.rdata.d.next = self.c_rtos.rd_data.val();
        }
        if self.csr_addr.val() == self.a_p[2].val() {
            self.rdata.d.next = self.c_rto_lost.rd_data.val();
        }
        if self.csr_addr.val() == self.a_p[3].val() {
            self.rdata.d.next = self.c_sack_lost.rd_data.val();
        }
        if self.csr_addr.val() == self.a_p[4].val() {
            self.rdata.d.next = self.c_acked.rd_data.val();
        }
        if self.csr_addr.val() == self.a_p[5].val() {
            self.rdata.d.next = self.c_ecn.rd_data.val();
        }
        if self.csr_addr.val() == self.a_p[6].val() {
            self.rdata.d.next = self.c_rx_ce.rd_data.val();
        }
        if self.csr_addr.val() == self.a_p[7].val() {
            self.rdata.d.next = self.c_last_ack.rd_data.val();
        }
        if self.csr_addr.val() == self.a_p[8].val() {
            self.rdata.d.next = self.c_state.rd_data.val();
        }
        self.csr_rdata.next = self.rdata.q.val();
    }
}

/// The scoreboard's room mask (one bit per path) as a 32-bit word.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct RoomWord {
    pub mask: Bits<PATHS>,
    pub pad: Bits<{ 32 - PATHS }>,
}

/// A scoreboard record as the counters need it.
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct TxEvent {
    pub v_timer: Bit,
    pub v_expire: Bit,
    pub v_ack: Bit,
    pub path: Bits<PB>,
    pub lost: Bits<32>,
    pub freed: Bits<32>,
}

/// `EVT_SUMMARY` as a 32-bit word (fields from bit 0).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct Summary32 {
    pub rto: Bit,
    pub loss: Bit,
    pub reroute: Bit,
    pub pad: Bits<29>,
}

/// `P_STATE` as a 32-bit word (fields from bit 0).
#[derive(Copy, Clone, Debug, PartialEq, Default, LogicStruct)]
pub struct PathStateWord {
    pub entropy: Bits<16>,
    pub plane: Bits<3>,
    pub pad1: Bit,
    pub health: Bits<2>,
    pub pad2: Bits<9>,
    pub known: Bit,
}

/// One per-path register: an event (`ev_valid`, `ev_path`, `ev_value`) is registered (E), its
/// new word computed from the LUT RAM's old word (asynchronous read) and registered (W), then
/// written; the word in W is forwarded to an event on the same path in E (the compare is made
/// a clock early and registered), so back-to-back events on one path are exact. `ev_set` writes `ev_value` instead of adding it. A second LUT
/// RAM takes the same writes and serves `rd_path` (the CSR window).
#[derive(LogicBlock, Default)]
pub struct PathCounter {
    pub clock: Signal<In, Clock>,
    pub ev_valid: Signal<In, Bit>,
    pub ev_path: Signal<In, Bits<PB>>,
    pub ev_value: Signal<In, Bits<32>>,
    pub ev_set: Signal<In, Bit>,
    pub rd_path: Signal<In, Bits<PB>>,
    pub rd_data: Signal<Out, Bits<32>>,
    ev: DFF<Bit>,
    evp: DFF<Bits<PB>>,
    evv: DFF<Bits<32>>,
    evs: DFF<Bit>,
    /// The event entering E is on the path of the event now in E (which will be in W): use W's word.
    fwd: DFF<Bit>,
    wv: DFF<Bit>,
    wp: DFF<Bits<PB>>,
    ww: DFF<Bits<32>>,
    ram: LutRam<Bits<32>, PB>,
    port: LutRam<Bits<32>, PB>,
    old: Signal<Local, Bits<32>>,
}

impl Logic for PathCounter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, ev, evp, evv, evs, fwd, wv, wp, ww);
        self.ram.clock.next = self.clock.val();
        self.port.clock.next = self.clock.val();
        self.ev.d.next = self.ev_valid.val();
        // the path and value load only with an event: a register loaded every clock from a
        // block's input would equal that block's own input register, and yosys would merge the
        // two into one flip-flop placed between both blocks (the core's critical path started
        // at such a merged register)
        self.evp.d.next = self.evp.q.val();
        self.evv.d.next = self.evv.q.val();
        if self.ev_valid.val() {
            self.evp.d.next = self.ev_path.val();
            self.evv.d.next = self.ev_value.val();
        }
        self.evs.d.next = self.ev_set.val();
        self.fwd.d.next = self.ev.q.val() && (self.ev_path.val() == self.evp.q.val());
        self.ram.read_address.next = self.evp.q.val();
        self.old.next = self.ram.read_data.val();
        if self.fwd.q.val() {
            self.old.next = self.ww.q.val();
        }
        self.wv.d.next = self.ev.q.val();
        self.wp.d.next = self.evp.q.val();
        self.ww.d.next = self.old.val() + self.evv.q.val();
        if self.evs.q.val() {
            self.ww.d.next = self.evv.q.val();
        }
        self.ram.write_address.next = self.wp.q.val();
        self.ram.write_data.next = self.ww.q.val();
        self.ram.write_enable.next = self.wv.q.val();
        self.port.write_address.next = self.wp.q.val();
        self.port.write_data.next = self.ww.q.val();
        self.port.write_enable.next = self.wv.q.val();
        self.port.read_address.next = self.rd_path.val();
        self.rd_data.next = self.port.read_data.val();
    }
}

/// Population count of a 32-bit word, SWAR, in two registered stages (2-bit and 4-bit field
/// sums, then byte sums and their total): `count` is valid two clocks after `x`.
#[derive(LogicBlock)]
pub struct Popcount32 {
    pub clock: Signal<In, Clock>,
    pub x: Signal<In, Bits<32>>,
    pub count: Signal<Out, Bits<32>>,
    s2: DFF<Bits<32>>,
    out: DFF<Bits<32>>,
    s1: Signal<Local, Bits<32>>,
    s3: Signal<Local, Bits<32>>,
    s4: Signal<Local, Bits<32>>,
    s5: Signal<Local, Bits<32>>,
    m55: Constant<Bits<32>>,
    m33: Constant<Bits<32>>,
    m0f: Constant<Bits<32>>,
    m3f: Constant<Bits<32>>,
    k1: Constant<Bits<5>>,
    k2: Constant<Bits<5>>,
    k4: Constant<Bits<5>>,
    k8: Constant<Bits<5>>,
    k16: Constant<Bits<5>>,
}

impl Default for Popcount32 {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            x: Default::default(),
            count: Default::default(),
            s2: Default::default(),
            out: Default::default(),
            s1: Default::default(),
            s3: Default::default(),
            s4: Default::default(),
            s5: Default::default(),
            m55: kc(0x5555_5555),
            m33: kc(0x3333_3333),
            m0f: kc(0x0F0F_0F0F),
            m3f: kc(0x3F),
            k1: kc(1),
            k2: kc(2),
            k4: kc(4),
            k8: kc(8),
            k16: kc(16),
        }
    }
}

impl Logic for Popcount32 {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, s2, out);
        self.s1.next = self.x.val() - ((self.x.val() >> self.k1.val()) & self.m55.val());
        self.s2.d.next = (self.s1.val() & self.m33.val()) + ((self.s1.val() >> self.k2.val()) & self.m33.val());
        self.s3.next = (self.s2.q.val() + (self.s2.q.val() >> self.k4.val())) & self.m0f.val();
        self.s4.next = self.s3.val() + (self.s3.val() >> self.k8.val());
        self.s5.next = self.s4.val() + (self.s4.val() >> self.k16.val());
        self.out.d.next = self.s5.val() & self.m3f.val();
        self.count.next = self.out.q.val();
    }
}
