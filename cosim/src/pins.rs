//! Typed pin-level wrappers of each block on two backends: [`Verilated`] (the generated C++ shim)
//! and [`RustHdl`] (rust-hdl's own simulator on the same `mroce-hdl` structs).
//!
//! Packed struct outputs (`out` records) are decoded with the field offsets rust-hdl's
//! `LogicStruct` derive itself generates (`get_my_offset_*`: first field at bit 0), so the
//! Verilated decode cannot drift from the layout the Verilog was generated with.
use crate::verilated::{self, ModelTable, Slot, VerilatedModel};
use crate::{Backend, CosimError};
use mroce_hdl::path_selector::{PathSelectorHw, SelOut};
use mroce_hdl::rx_tracker::{RxOut, RxTrackerHw};
use mroce_hdl::transport_core::TransportCore;
use mroce_hdl::tx_scoreboard::{TxOut, TxScoreboardHw};
use mroce_model::params::{PATHS, PATH_BITS, SACK_WORDS};
use rust_hdl::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Input and output pin sets of one block.
pub trait Pins {
    type In: Default + Clone + std::fmt::Debug;
    type Out: Clone + std::fmt::Debug + PartialEq;
}

/// Pins of a Verilated design: where each lives in the packed word buffers.
pub trait VerilatedPins: Pins {
    type Slots;
    /// The fast model, or the one built with `--trace`.
    fn table(traced: bool) -> Result<&'static ModelTable, CosimError>;
    fn slots(m: &VerilatedModel) -> Result<Self::Slots, CosimError>;
    fn write(s: &Self::Slots, buf: &mut [u32], i: &Self::In);
    fn read(s: &Self::Slots, buf: &[u32]) -> Self::Out;
}

/// Pins of the rust-hdl block.
pub trait RustHdlPins: Pins {
    type Hw: Block;
    /// Settle iterations allowed per evaluation.
    const ITERS: usize;
    fn hw() -> Box<Self::Hw>;
    fn clock(hw: &mut Self::Hw) -> &mut Signal<In, Clock>;
    fn write(hw: &mut Self::Hw, i: &Self::In);
    fn read(hw: &Self::Hw) -> Self::Out;
}

/// A block on Verilator.
pub struct Verilated<P: VerilatedPins> {
    model: VerilatedModel,
    slots: P::Slots,
}

impl<P: VerilatedPins> Verilated<P> {
    /// A fresh instance of the fast model (no VCD) in its power-up state.
    pub fn new() -> Result<Self, CosimError> {
        Self::with_trace_support(false)
    }
    /// A fresh instance of the model built with `--trace` (slower; VCD files).
    pub fn traced() -> Result<Self, CosimError> {
        Self::with_trace_support(true)
    }
    pub fn with_trace_support(traced: bool) -> Result<Self, CosimError> {
        let model = VerilatedModel::new(P::table(traced)?)?;
        let slots = P::slots(&model)?;
        Ok(Self { model, slots })
    }
    /// The untyped model (port-index access, VCD).
    pub fn model(&mut self) -> &mut VerilatedModel {
        &mut self.model
    }
}

impl<P: VerilatedPins> Backend for Verilated<P> {
    type In = P::In;
    type Out = P::Out;
    #[inline]
    fn set(&mut self, i: &P::In) {
        P::write(&self.slots, &mut self.model.inputs, i);
    }
    #[inline]
    fn eval(&mut self) -> P::Out {
        self.model.eval();
        P::read(&self.slots, &self.model.outputs)
    }
    #[inline]
    fn tick(&mut self) {
        self.model.posedge();
    }
    fn reset(&mut self) -> Result<(), CosimError> {
        self.model.reset()
    }
    fn trace(&mut self, path: &Path) -> Result<(), CosimError> {
        self.model.trace(path)
    }
}

/// A block on rust-hdl's simulator.
pub struct RustHdl<P: RustHdlPins> {
    hw: Box<P::Hw>,
}

impl<P: RustHdlPins> RustHdl<P> {
    pub fn new() -> Self {
        let mut hw = P::hw();
        hw.connect_all();
        simulate(&mut *hw, P::ITERS);
        Self { hw }
    }
}

impl<P: RustHdlPins> Default for RustHdl<P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<P: RustHdlPins> Backend for RustHdl<P> {
    type In = P::In;
    type Out = P::Out;
    fn set(&mut self, i: &P::In) {
        P::write(&mut self.hw, i);
    }
    fn eval(&mut self) -> P::Out {
        simulate(&mut *self.hw, P::ITERS);
        P::read(&self.hw)
    }
    fn tick(&mut self) {
        P::clock(&mut self.hw).next = Clock { clk: true };
        simulate(&mut *self.hw, P::ITERS);
        P::clock(&mut self.hw).next = Clock { clk: false };
        simulate(&mut *self.hw, P::ITERS);
    }
    fn reset(&mut self) -> Result<(), CosimError> {
        *self = Self::new();
        Ok(())
    }
    fn trace(&mut self, _path: &Path) -> Result<(), CosimError> {
        Err(CosimError::TraceUnsupported)
    }
}

/// Mask of a path index (`in_path` ports are `PATH_BITS` wide: wider values would be illegal
/// for rust-hdl and leave stray bits in Verilator's input word).
const PATH_MASK: u64 = PATHS as u64 - 1;

fn bits<T: Synth>(_: &T) -> usize {
    T::BITS
}

/// (bit offset, width) of a struct field.
type Field = (usize, usize);

// ---------------------------------------------------------------- rx_tracker

/// Inputs of `rx_tracker` (and of `transport_core`'s `rx_` stream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxIn {
    pub valid: bool,
    pub op: u8,
    pub path: u8,
    pub psn: u32,
    pub floor: u32,
    pub ce: bool,
    pub ack_req: bool,
    pub commit: bool,
    pub out_ready: bool,
}

/// The `out` record of `rx_tracker` (`mroce_hdl::rx_tracker::RxOut`), as raw fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxRaw {
    pub op: u8,
    pub verdict: u8,
    pub ack: bool,
    pub path: u8,
    pub base: u32,
    pub cum: u32,
    pub ecn: u16,
    pub pkt: u16,
}

impl RxRaw {
    pub fn from_hdl(o: &RxOut) -> Self {
        Self {
            op: o.op.to_u64() as u8,
            verdict: o.verdict.to_u64() as u8,
            ack: o.ack,
            path: o.path.to_u64() as u8,
            base: o.base.to_u32(),
            cum: o.cum.to_u32(),
            ecn: o.ecn.to_u16(),
            pkt: o.pkt.to_u16(),
        }
    }
}

/// Outputs of `rx_tracker`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RxPinsOut {
    pub in_ready: bool,
    pub out_valid: bool,
    pub out: RxRaw,
    pub sack: [u32; SACK_WORDS],
}

/// Bit layout of `RxOut` (rust-hdl's derive).
#[derive(Clone, Copy, Debug)]
pub struct RxLayout {
    pub bits: usize,
    pub op: Field,
    pub verdict: Field,
    pub ack: Field,
    pub path: Field,
    pub base: Field,
    pub cum: Field,
    pub ecn: Field,
    pub pkt: Field,
}

impl RxLayout {
    pub fn new() -> Self {
        let d = RxOut::default();
        Self {
            bits: RxOut::BITS,
            op: (d.get_my_offset_op(), bits(&d.op)),
            verdict: (d.get_my_offset_verdict(), bits(&d.verdict)),
            ack: (d.get_my_offset_ack(), bits(&d.ack)),
            path: (d.get_my_offset_path(), bits(&d.path)),
            base: (d.get_my_offset_base(), bits(&d.base)),
            cum: (d.get_my_offset_cum(), bits(&d.cum)),
            ecn: (d.get_my_offset_ecn(), bits(&d.ecn)),
            pkt: (d.get_my_offset_pkt(), bits(&d.pkt)),
        }
    }
    pub fn decode(&self, s: Slot, buf: &[u32]) -> RxRaw {
        let f = |x: Field| s.field(buf, x.0, x.1);
        RxRaw {
            op: f(self.op) as u8,
            verdict: f(self.verdict) as u8,
            ack: f(self.ack) != 0,
            path: f(self.path) as u8,
            base: f(self.base) as u32,
            cum: f(self.cum) as u32,
            ecn: f(self.ecn) as u16,
            pkt: f(self.pkt) as u16,
        }
    }
}

impl Default for RxLayout {
    fn default() -> Self {
        Self::new()
    }
}

/// Slots of the rx stream in a Verilated design (`prefix` "" for the block, "rx_" in the core).
pub struct RxSlots {
    valid: Slot,
    op: Slot,
    path: Slot,
    psn: Slot,
    floor: Slot,
    ce: Slot,
    ack_req: Slot,
    commit: Slot,
    out_ready: Slot,
    in_ready: Slot,
    out_valid: Slot,
    out: Slot,
    sack: [Slot; SACK_WORDS],
    layout: RxLayout,
}

impl RxSlots {
    pub fn new(m: &VerilatedModel, p: &str) -> Result<Self, CosimError> {
        let layout = RxLayout::new();
        let mut sack = [Slot { offset: 0, width: 32 }; SACK_WORDS];
        for (k, s) in sack.iter_mut().enumerate() {
            *s = m.output(&format!("{p}out_sack${k}"), 32)?;
        }
        Ok(Self {
            valid: m.input(&format!("{p}in_valid"), 1)?,
            op: m.input(&format!("{p}in_op"), 2)?,
            path: m.input(&format!("{p}in_path"), PATH_BITS)?,
            psn: m.input(&format!("{p}in_psn"), 32)?,
            floor: m.input(&format!("{p}in_floor"), 32)?,
            ce: m.input(&format!("{p}in_ce"), 1)?,
            ack_req: m.input(&format!("{p}in_ack_req"), 1)?,
            commit: m.input(&format!("{p}in_commit"), 1)?,
            out_ready: m.input(&format!("{p}out_ready"), 1)?,
            in_ready: m.output(&format!("{p}in_ready"), 1)?,
            out_valid: m.output(&format!("{p}out_valid"), 1)?,
            out: m.output(&format!("{p}out"), layout.bits as u32)?,
            sack,
            layout,
        })
    }
    #[inline]
    pub fn write(&self, b: &mut [u32], i: &RxIn) {
        self.valid.put(b, i.valid as u64);
        self.op.put(b, u64::from(i.op & 3));
        self.path.put(b, u64::from(i.path) & PATH_MASK);
        self.psn.put(b, u64::from(i.psn));
        self.floor.put(b, u64::from(i.floor));
        self.ce.put(b, i.ce as u64);
        self.ack_req.put(b, i.ack_req as u64);
        self.commit.put(b, i.commit as u64);
        self.out_ready.put(b, i.out_ready as u64);
    }
    #[inline]
    pub fn read(&self, b: &[u32]) -> RxPinsOut {
        // the record is only decoded when valid (the engines look at nothing else)
        let out_valid = self.out_valid.get(b) != 0;
        let mut sack = [0u32; SACK_WORDS];
        let mut out = RxRaw::default();
        if out_valid {
            for (k, s) in sack.iter_mut().enumerate() {
                *s = self.sack[k].get(b) as u32;
            }
            out = self.layout.decode(self.out, b);
        }
        RxPinsOut {
            in_ready: self.in_ready.get(b) != 0,
            out_valid,
            out,
            sack,
        }
    }
}

macro_rules! rx_hdl_write {
    ($u:expr, $i:expr, $iv:ident, $op:ident, $path:ident, $psn:ident, $floor:ident, $ce:ident, $ar:ident, $cm:ident, $or:ident) => {{
        let i = $i;
        $u.$iv.next = i.valid;
        $u.$op.next = u64::from(i.op & 3).into();
        $u.$path.next = (u64::from(i.path) & PATH_MASK).into();
        $u.$psn.next = u64::from(i.psn).into();
        $u.$floor.next = u64::from(i.floor).into();
        $u.$ce.next = i.ce;
        $u.$ar.next = i.ack_req;
        $u.$cm.next = i.commit;
        $u.$or.next = i.out_ready;
    }};
}

/// `rx_tracker` as designed.
pub struct RxTrackerPins;
/// `rx_tracker` with the injected base-advance off-by-one (mutation test).
pub struct RxTrackerMutantPins;

impl Pins for RxTrackerPins {
    type In = RxIn;
    type Out = RxPinsOut;
}
impl Pins for RxTrackerMutantPins {
    type In = RxIn;
    type Out = RxPinsOut;
}

macro_rules! rx_block_pins {
    ($t:ty, $table:expr, $traced:expr, $ctor:expr) => {
        impl VerilatedPins for $t {
            type Slots = RxSlots;
            fn table(traced: bool) -> Result<&'static ModelTable, CosimError> {
                Ok(if traced { &$traced } else { &$table })
            }
            fn slots(m: &VerilatedModel) -> Result<RxSlots, CosimError> {
                RxSlots::new(m, "")
            }
            fn write(s: &RxSlots, b: &mut [u32], i: &RxIn) {
                s.write(b, i)
            }
            fn read(s: &RxSlots, b: &[u32]) -> RxPinsOut {
                s.read(b)
            }
        }
        impl RustHdlPins for $t {
            type Hw = RxTrackerHw;
            const ITERS: usize = 200;
            fn hw() -> Box<RxTrackerHw> {
                Box::new($ctor)
            }
            fn clock(hw: &mut RxTrackerHw) -> &mut Signal<In, Clock> {
                &mut hw.clock
            }
            fn write(u: &mut RxTrackerHw, i: &RxIn) {
                rx_hdl_write!(u, i, in_valid, in_op, in_path, in_psn, in_floor, in_ce, in_ack_req, in_commit, out_ready)
            }
            fn read(u: &RxTrackerHw) -> RxPinsOut {
                let mut sack = [0u32; SACK_WORDS];
                for (k, s) in sack.iter_mut().enumerate() {
                    *s = u.out_sack[k].val().to_u32();
                }
                RxPinsOut {
                    in_ready: u.in_ready.val(),
                    out_valid: u.out_valid.val(),
                    out: RxRaw::from_hdl(&u.out.val()),
                    sack,
                }
            }
        }
    };
}
rx_block_pins!(
    RxTrackerPins,
    verilated::RX_TRACKER,
    verilated::RX_TRACKER__TRACED,
    RxTrackerHw::default()
);
rx_block_pins!(
    RxTrackerMutantPins,
    verilated::RX_TRACKER_MUTANT,
    verilated::RX_TRACKER_MUTANT__TRACED,
    RxTrackerHw::with_base_advance_mutation()
);

// ---------------------------------------------------------------- tx_scoreboard

/// Inputs of `tx_scoreboard` (and of `transport_core`'s `tx_` stream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxIn {
    pub valid: bool,
    pub op: u8,
    pub path: u8,
    pub psn: u32,
    pub mask: u32,
    pub lost_below: u32,
    pub now: u32,
    pub rto: u32,
    pub out_ready: bool,
}

/// The `out` record of `tx_scoreboard` (`TxOut`), as raw fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxRaw {
    pub op: u8,
    pub path: u8,
    pub ok: bool,
    pub psn: u32,
    pub freed: u32,
    pub lost: u32,
    pub forged: bool,
    pub backoff: u8,
    pub armed: bool,
    pub deadline: u32,
    pub empty: bool,
    pub room: bool,
}

impl TxRaw {
    pub fn from_hdl(o: &TxOut) -> Self {
        Self {
            op: o.op.to_u64() as u8,
            path: o.path.to_u64() as u8,
            ok: o.ok,
            psn: o.psn.to_u32(),
            freed: o.freed.to_u32(),
            lost: o.lost.to_u32(),
            forged: o.forged,
            backoff: o.backoff.to_u64() as u8,
            armed: o.armed,
            deadline: o.deadline.to_u32(),
            empty: o.empty,
            room: o.room,
        }
    }
}

/// Outputs of `tx_scoreboard` (`room_mask` is 0 in `transport_core`, which has no such port).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxPinsOut {
    pub in_ready: bool,
    pub out_valid: bool,
    pub out: TxRaw,
    pub room_mask: u16,
}

/// Bit layout of `TxOut`.
#[derive(Clone, Copy, Debug)]
pub struct TxLayout {
    pub bits: usize,
    f: [Field; 12],
}

impl TxLayout {
    pub fn new() -> Self {
        let d = TxOut::default();
        Self {
            bits: TxOut::BITS,
            f: [
                (d.get_my_offset_op(), bits(&d.op)),
                (d.get_my_offset_path(), bits(&d.path)),
                (d.get_my_offset_ok(), bits(&d.ok)),
                (d.get_my_offset_psn(), bits(&d.psn)),
                (d.get_my_offset_freed(), bits(&d.freed)),
                (d.get_my_offset_lost(), bits(&d.lost)),
                (d.get_my_offset_forged(), bits(&d.forged)),
                (d.get_my_offset_backoff(), bits(&d.backoff)),
                (d.get_my_offset_armed(), bits(&d.armed)),
                (d.get_my_offset_deadline(), bits(&d.deadline)),
                (d.get_my_offset_empty(), bits(&d.empty)),
                (d.get_my_offset_room(), bits(&d.room)),
            ],
        }
    }
    pub fn decode(&self, s: Slot, b: &[u32]) -> TxRaw {
        let g = |k: usize| s.field(b, self.f[k].0, self.f[k].1);
        TxRaw {
            op: g(0) as u8,
            path: g(1) as u8,
            ok: g(2) != 0,
            psn: g(3) as u32,
            freed: g(4) as u32,
            lost: g(5) as u32,
            forged: g(6) != 0,
            backoff: g(7) as u8,
            armed: g(8) != 0,
            deadline: g(9) as u32,
            empty: g(10) != 0,
            room: g(11) != 0,
        }
    }
}

impl Default for TxLayout {
    fn default() -> Self {
        Self::new()
    }
}

/// Slots of the tx stream in a Verilated design.
pub struct TxSlots {
    valid: Slot,
    op: Slot,
    path: Slot,
    psn: Slot,
    mask: Slot,
    lost_below: Slot,
    now: Slot,
    rto: Slot,
    out_ready: Slot,
    in_ready: Slot,
    out_valid: Slot,
    out: Slot,
    room_mask: Option<Slot>,
    layout: TxLayout,
}

impl TxSlots {
    pub fn new(m: &VerilatedModel, p: &str, with_room: bool) -> Result<Self, CosimError> {
        let layout = TxLayout::new();
        Ok(Self {
            valid: m.input(&format!("{p}in_valid"), 1)?,
            op: m.input(&format!("{p}in_op"), 3)?,
            path: m.input(&format!("{p}in_path"), PATH_BITS)?,
            psn: m.input(&format!("{p}in_psn"), 32)?,
            mask: m.input(&format!("{p}in_mask"), 32)?,
            lost_below: m.input(&format!("{p}in_lost_below"), 32)?,
            now: m.input(&format!("{p}in_now"), 32)?,
            rto: m.input(&format!("{p}in_rto"), 32)?,
            out_ready: m.input(&format!("{p}out_ready"), 1)?,
            in_ready: m.output(&format!("{p}in_ready"), 1)?,
            out_valid: m.output(&format!("{p}out_valid"), 1)?,
            out: m.output(&format!("{p}out"), layout.bits as u32)?,
            room_mask: if with_room {
                // one bit per path
                Some(m.output(&format!("{p}room_mask"), PATHS as u32)?)
            } else {
                None
            },
            layout,
        })
    }
    #[inline]
    pub fn write(&self, b: &mut [u32], i: &TxIn) {
        self.valid.put(b, i.valid as u64);
        self.op.put(b, u64::from(i.op & 7));
        self.path.put(b, u64::from(i.path) & PATH_MASK);
        self.psn.put(b, u64::from(i.psn));
        self.mask.put(b, u64::from(i.mask));
        self.lost_below.put(b, u64::from(i.lost_below));
        self.now.put(b, u64::from(i.now));
        self.rto.put(b, u64::from(i.rto));
        self.out_ready.put(b, i.out_ready as u64);
    }
    #[inline]
    pub fn read(&self, b: &[u32]) -> TxPinsOut {
        let out_valid = self.out_valid.get(b) != 0;
        TxPinsOut {
            in_ready: self.in_ready.get(b) != 0,
            out_valid,
            out: if out_valid {
                self.layout.decode(self.out, b)
            } else {
                TxRaw::default()
            },
            room_mask: self.room_mask.map_or(0, |s| s.get(b) as u16),
        }
    }
}

macro_rules! tx_hdl_write {
    ($u:expr, $i:expr, $iv:ident, $op:ident, $path:ident, $psn:ident, $mask:ident, $lb:ident, $now:ident, $rto:ident, $or:ident) => {{
        let i = $i;
        $u.$iv.next = i.valid;
        $u.$op.next = u64::from(i.op & 7).into();
        $u.$path.next = (u64::from(i.path) & PATH_MASK).into();
        $u.$psn.next = u64::from(i.psn).into();
        $u.$mask.next = u64::from(i.mask).into();
        $u.$lb.next = u64::from(i.lost_below).into();
        $u.$now.next = u64::from(i.now).into();
        $u.$rto.next = u64::from(i.rto).into();
        $u.$or.next = i.out_ready;
    }};
}

/// `tx_scoreboard`.
pub struct TxScoreboardPins;

impl Pins for TxScoreboardPins {
    type In = TxIn;
    type Out = TxPinsOut;
}

impl VerilatedPins for TxScoreboardPins {
    type Slots = TxSlots;
    fn table(traced: bool) -> Result<&'static ModelTable, CosimError> {
        Ok(if traced {
            &verilated::TX_SCOREBOARD__TRACED
        } else {
            &verilated::TX_SCOREBOARD
        })
    }
    fn slots(m: &VerilatedModel) -> Result<TxSlots, CosimError> {
        TxSlots::new(m, "", true)
    }
    fn write(s: &TxSlots, b: &mut [u32], i: &TxIn) {
        s.write(b, i)
    }
    fn read(s: &TxSlots, b: &[u32]) -> TxPinsOut {
        s.read(b)
    }
}

impl RustHdlPins for TxScoreboardPins {
    type Hw = TxScoreboardHw;
    const ITERS: usize = 200;
    fn hw() -> Box<TxScoreboardHw> {
        Box::default()
    }
    fn clock(hw: &mut TxScoreboardHw) -> &mut Signal<In, Clock> {
        &mut hw.clock
    }
    fn write(u: &mut TxScoreboardHw, i: &TxIn) {
        tx_hdl_write!(
            u,
            i,
            in_valid,
            in_op,
            in_path,
            in_psn,
            in_mask,
            in_lost_below,
            in_now,
            in_rto,
            out_ready
        )
    }
    fn read(u: &TxScoreboardHw) -> TxPinsOut {
        TxPinsOut {
            in_ready: u.in_ready.val(),
            out_valid: u.out_valid.val(),
            out: TxRaw::from_hdl(&u.out.val()),
            room_mask: u.room_mask.val().to_u64() as u16,
        }
    }
}

// ---------------------------------------------------------------- path_selector

/// Inputs of `path_selector` (and of `transport_core`'s `sel_` stream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelIn {
    pub valid: bool,
    pub op: u8,
    pub path: u8,
    pub room: u16,
    pub a: u16,
    pub b: u16,
    pub c: u16,
    pub flag: bool,
    pub out_ready: bool,
}

/// The `out` record of `path_selector` (`SelOut`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelRaw {
    pub op: u8,
    pub ok: bool,
    pub path: u8,
    pub entropy: u16,
    pub plane: u8,
    pub health: u8,
}

impl SelRaw {
    pub fn from_hdl(o: &SelOut) -> Self {
        Self {
            op: o.op.to_u64() as u8,
            ok: o.ok,
            path: o.path.to_u64() as u8,
            entropy: o.entropy.to_u64() as u16,
            plane: o.plane.to_u64() as u8,
            health: o.health.to_u64() as u8,
        }
    }
}

/// Outputs of `path_selector`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelPinsOut {
    pub in_ready: bool,
    pub out_valid: bool,
    pub out: SelRaw,
}

/// Bit layout of `SelOut`.
#[derive(Clone, Copy, Debug)]
pub struct SelLayout {
    pub bits: usize,
    f: [Field; 6],
}

impl SelLayout {
    pub fn new() -> Self {
        let d = SelOut::default();
        Self {
            bits: SelOut::BITS,
            f: [
                (d.get_my_offset_op(), bits(&d.op)),
                (d.get_my_offset_ok(), bits(&d.ok)),
                (d.get_my_offset_path(), bits(&d.path)),
                (d.get_my_offset_entropy(), bits(&d.entropy)),
                (d.get_my_offset_plane(), bits(&d.plane)),
                (d.get_my_offset_health(), bits(&d.health)),
            ],
        }
    }
    pub fn decode(&self, s: Slot, b: &[u32]) -> SelRaw {
        let g = |k: usize| s.field(b, self.f[k].0, self.f[k].1);
        SelRaw {
            op: g(0) as u8,
            ok: g(1) != 0,
            path: g(2) as u8,
            entropy: g(3) as u16,
            plane: g(4) as u8,
            health: g(5) as u8,
        }
    }
}

impl Default for SelLayout {
    fn default() -> Self {
        Self::new()
    }
}

/// Slots of the sel stream in a Verilated design.
pub struct SelSlots {
    valid: Slot,
    op: Slot,
    path: Slot,
    room: Slot,
    a: Slot,
    b: Slot,
    c: Slot,
    flag: Slot,
    out_ready: Slot,
    in_ready: Slot,
    out_valid: Slot,
    out: Slot,
    layout: SelLayout,
}

impl SelSlots {
    pub fn new(m: &VerilatedModel, p: &str) -> Result<Self, CosimError> {
        let layout = SelLayout::new();
        Ok(Self {
            valid: m.input(&format!("{p}in_valid"), 1)?,
            op: m.input(&format!("{p}in_op"), 4)?,
            path: m.input(&format!("{p}in_path"), PATH_BITS)?,
            room: m.input(&format!("{p}in_room"), 16)?,
            a: m.input(&format!("{p}in_a"), 16)?,
            b: m.input(&format!("{p}in_b"), 16)?,
            c: m.input(&format!("{p}in_c"), 16)?,
            flag: m.input(&format!("{p}in_flag"), 1)?,
            out_ready: m.input(&format!("{p}out_ready"), 1)?,
            in_ready: m.output(&format!("{p}in_ready"), 1)?,
            out_valid: m.output(&format!("{p}out_valid"), 1)?,
            out: m.output(&format!("{p}out"), layout.bits as u32)?,
            layout,
        })
    }
    #[inline]
    pub fn write(&self, b: &mut [u32], i: &SelIn) {
        self.valid.put(b, i.valid as u64);
        self.op.put(b, u64::from(i.op & 15));
        self.path.put(b, u64::from(i.path) & PATH_MASK);
        self.room.put(b, u64::from(i.room));
        self.a.put(b, u64::from(i.a));
        self.b.put(b, u64::from(i.b));
        self.c.put(b, u64::from(i.c));
        self.flag.put(b, i.flag as u64);
        self.out_ready.put(b, i.out_ready as u64);
    }
    #[inline]
    pub fn read(&self, b: &[u32]) -> SelPinsOut {
        let out_valid = self.out_valid.get(b) != 0;
        SelPinsOut {
            in_ready: self.in_ready.get(b) != 0,
            out_valid,
            out: if out_valid {
                self.layout.decode(self.out, b)
            } else {
                SelRaw::default()
            },
        }
    }
}

macro_rules! sel_hdl_write {
    ($u:expr, $i:expr, $iv:ident, $op:ident, $path:ident, $room:ident, $a:ident, $b:ident, $c:ident, $flag:ident, $or:ident) => {{
        let i = $i;
        $u.$iv.next = i.valid;
        $u.$op.next = u64::from(i.op & 15).into();
        $u.$path.next = (u64::from(i.path) & PATH_MASK).into();
        $u.$room.next = u64::from(i.room).into();
        $u.$a.next = u64::from(i.a).into();
        $u.$b.next = u64::from(i.b).into();
        $u.$c.next = u64::from(i.c).into();
        $u.$flag.next = i.flag;
        $u.$or.next = i.out_ready;
    }};
}

/// `path_selector`.
pub struct PathSelectorPins;

impl Pins for PathSelectorPins {
    type In = SelIn;
    type Out = SelPinsOut;
}

impl VerilatedPins for PathSelectorPins {
    type Slots = SelSlots;
    fn table(traced: bool) -> Result<&'static ModelTable, CosimError> {
        Ok(if traced {
            &verilated::PATH_SELECTOR__TRACED
        } else {
            &verilated::PATH_SELECTOR
        })
    }
    fn slots(m: &VerilatedModel) -> Result<SelSlots, CosimError> {
        SelSlots::new(m, "")
    }
    fn write(s: &SelSlots, b: &mut [u32], i: &SelIn) {
        s.write(b, i)
    }
    fn read(s: &SelSlots, b: &[u32]) -> SelPinsOut {
        s.read(b)
    }
}

impl RustHdlPins for PathSelectorPins {
    type Hw = PathSelectorHw;
    const ITERS: usize = 200;
    fn hw() -> Box<PathSelectorHw> {
        Box::default()
    }
    fn clock(hw: &mut PathSelectorHw) -> &mut Signal<In, Clock> {
        &mut hw.clock
    }
    fn write(u: &mut PathSelectorHw, i: &SelIn) {
        sel_hdl_write!(u, i, in_valid, in_op, in_path, in_room, in_a, in_b, in_c, in_flag, out_ready)
    }
    fn read(u: &PathSelectorHw) -> SelPinsOut {
        SelPinsOut {
            in_ready: u.in_ready.val(),
            out_valid: u.out_valid.val(),
            out: SelRaw::from_hdl(&u.out.val()),
        }
    }
}

// ---------------------------------------------------------------- transport_core

/// Inputs of `transport_core`: the three streams and the CSR bus.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreIn {
    pub rx: RxIn,
    pub tx: TxIn,
    pub sel: SelIn,
    pub csr_addr: u16,
    pub csr_wdata: u32,
    pub csr_we: bool,
}

/// Outputs of `transport_core`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreOut {
    pub rx: RxPinsOut,
    pub tx: TxPinsOut,
    pub sel: SelPinsOut,
    pub csr_rdata: u32,
}

/// Slots of `transport_core`.
pub struct CoreSlots {
    rx: RxSlots,
    tx: TxSlots,
    sel: SelSlots,
    addr: Slot,
    wdata: Slot,
    we: Slot,
    rdata: Slot,
}

/// `transport_core`.
pub struct TransportCorePins;

impl Pins for TransportCorePins {
    type In = CoreIn;
    type Out = CoreOut;
}

impl VerilatedPins for TransportCorePins {
    type Slots = CoreSlots;
    fn table(traced: bool) -> Result<&'static ModelTable, CosimError> {
        Ok(if traced {
            &verilated::TRANSPORT_CORE__TRACED
        } else {
            &verilated::TRANSPORT_CORE
        })
    }
    fn slots(m: &VerilatedModel) -> Result<CoreSlots, CosimError> {
        let aw = m.ports().iter().find(|p| p.name == "csr_addr").map_or(8, |p| p.width);
        Ok(CoreSlots {
            rx: RxSlots::new(m, "rx_")?,
            tx: TxSlots::new(m, "tx_", false)?,
            sel: SelSlots::new(m, "sel_")?,
            addr: m.input("csr_addr", aw)?,
            wdata: m.input("csr_wdata", 32)?,
            we: m.input("csr_we", 1)?,
            rdata: m.output("csr_rdata", 32)?,
        })
    }
    #[inline]
    fn write(s: &CoreSlots, b: &mut [u32], i: &CoreIn) {
        s.rx.write(b, &i.rx);
        s.tx.write(b, &i.tx);
        s.sel.write(b, &i.sel);
        let amask = if s.addr.width >= 32 {
            u64::MAX
        } else {
            (1u64 << s.addr.width) - 1
        };
        s.addr.put(b, u64::from(i.csr_addr) & amask);
        s.wdata.put(b, u64::from(i.csr_wdata));
        s.we.put(b, i.csr_we as u64);
    }
    #[inline]
    fn read(s: &CoreSlots, b: &[u32]) -> CoreOut {
        CoreOut {
            rx: s.rx.read(b),
            tx: s.tx.read(b),
            sel: s.sel.read(b),
            csr_rdata: s.rdata.get(b) as u32,
        }
    }
}

impl RustHdlPins for TransportCorePins {
    type Hw = TransportCore;
    const ITERS: usize = 300;
    fn hw() -> Box<TransportCore> {
        Box::default()
    }
    fn clock(hw: &mut TransportCore) -> &mut Signal<In, Clock> {
        &mut hw.clock
    }
    fn write(u: &mut TransportCore, i: &CoreIn) {
        rx_hdl_write!(
            u,
            &i.rx,
            rx_in_valid,
            rx_in_op,
            rx_in_path,
            rx_in_psn,
            rx_in_floor,
            rx_in_ce,
            rx_in_ack_req,
            rx_in_commit,
            rx_out_ready
        );
        tx_hdl_write!(
            u,
            &i.tx,
            tx_in_valid,
            tx_in_op,
            tx_in_path,
            tx_in_psn,
            tx_in_mask,
            tx_in_lost_below,
            tx_in_now,
            tx_in_rto,
            tx_out_ready
        );
        sel_hdl_write!(
            u,
            &i.sel,
            sel_in_valid,
            sel_in_op,
            sel_in_path,
            sel_in_room,
            sel_in_a,
            sel_in_b,
            sel_in_c,
            sel_in_flag,
            sel_out_ready
        );
        u.csr_addr.next = u64::from(i.csr_addr).into();
        u.csr_wdata.next = u64::from(i.csr_wdata).into();
        u.csr_we.next = i.csr_we;
    }
    fn read(u: &TransportCore) -> CoreOut {
        let mut sack = [0u32; SACK_WORDS];
        for (k, s) in sack.iter_mut().enumerate() {
            *s = u.rx_out_sack[k].val().to_u32();
        }
        CoreOut {
            rx: RxPinsOut {
                in_ready: u.rx_in_ready.val(),
                out_valid: u.rx_out_valid.val(),
                out: RxRaw::from_hdl(&u.rx_out.val()),
                sack,
            },
            tx: TxPinsOut {
                in_ready: u.tx_in_ready.val(),
                out_valid: u.tx_out_valid.val(),
                out: TxRaw::from_hdl(&u.tx_out.val()),
                room_mask: 0,
            },
            sel: SelPinsOut {
                in_ready: u.sel_in_ready.val(),
                out_valid: u.sel_out_valid.val(),
                out: SelRaw::from_hdl(&u.sel_out.val()),
            },
            csr_rdata: u.csr_rdata.val().to_u32(),
        }
    }
}
