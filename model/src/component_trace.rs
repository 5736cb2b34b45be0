//! Traced hardware-mapped components: every operation a connection applies to its
//! [`RxTracker`], [`TxScoreboard`] and [`PathSelector`], with the model's result, can be
//! recorded in order. A driver replays the record on a second implementation of the same
//! components (the Verilated hardware, issue 5/9) and compares the results bit for bit, so the
//! hardware is checked on the exact operation stream of real protocol traffic.
//!
//! The wrappers give read access through `Deref` but no `DerefMut`: a mutation that bypasses
//! the trace does not compile, so the record is complete by construction.

use crate::path_selector::{Credit, PathHealth, PathSelector};
use crate::rx_tracker::{AckSnapshot, RxPacket, RxResponse, RxTracker};
use crate::tx_scoreboard::{TimerResult, TxScoreboard, WordResult};
use alloc::vec::Vec;
use core::ops::Deref;

/// One receive-tracker operation and the model's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RxCall {
    /// `RxTracker::new(isn)`: every path re-initialised at `isn`.
    Init {
        /// Initial PSN of every path.
        isn: u32,
    },
    /// `RxTracker::packet`.
    Packet {
        /// The request.
        req: RxPacket,
        /// The model's response.
        resp: RxResponse,
    },
    /// `RxTracker::flush`.
    Flush {
        /// Path flushed.
        path: u8,
        /// The model's snapshot.
        snap: AckSnapshot,
    },
}

/// One transmit-scoreboard operation and the model's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxCall {
    /// `TxScoreboard::new(isn)`.
    Init {
        /// Initial PSN of every path.
        isn: u32,
    },
    /// `TxScoreboard::send`.
    Send {
        /// Path.
        path: u8,
        /// Time (ns, 32-bit wrapping).
        now: u32,
        /// RTO (ns).
        rto_ns: u32,
        /// PSN assigned, or `None` (window full).
        psn: Option<u32>,
    },
    /// `TxScoreboard::ack_word`.
    AckWord {
        /// Path.
        path: u8,
        /// PSN of bit 0 of `mask`.
        word_psn: u32,
        /// Acknowledged PSNs.
        mask: u32,
        /// Outstanding PSNs below this one are lost.
        lost_below: u32,
        /// Time.
        now: u32,
        /// RTO (ns).
        rto_ns: u32,
        /// The model's result.
        result: WordResult,
    },
    /// `TxScoreboard::expire_head`.
    ExpireHead {
        /// Path.
        path: u8,
        /// The model's result.
        result: WordResult,
    },
    /// `TxScoreboard::timer`.
    Timer {
        /// Path.
        path: u8,
        /// Time.
        now: u32,
        /// RTO (ns).
        rto_ns: u32,
        /// The model's result.
        result: TimerResult,
    },
    /// `TxScoreboard::clear_backoff`.
    ClearBackoff {
        /// Path.
        path: u8,
    },
}

/// One path-selector operation and the model's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SelCall {
    /// `PathSelector::new(paths, planes)`.
    Init {
        /// Paths in use.
        paths: u8,
        /// Planes.
        planes: u8,
    },
    /// `PathSelector::select`.
    Select {
        /// Paths with window room (bit per path).
        room_mask: u32,
        /// The model's choice.
        path: Option<u8>,
    },
    /// `PathSelector::charge_probe`.
    ChargeProbe {
        /// Path.
        path: u8,
    },
    /// `PathSelector::credit`.
    Credit {
        /// The credit.
        credit: Credit,
        /// The model's result (re-route requested).
        reroute: bool,
    },
    /// `PathSelector::set_health`.
    SetHealth {
        /// Path.
        path: u8,
        /// New health.
        health: PathHealth,
    },
    /// `PathSelector::clear_inflight`.
    ClearInflight {
        /// Path.
        path: u8,
    },
    /// `PathSelector::request_reroll`.
    RequestReroll {
        /// Path.
        path: u8,
        /// Random input.
        random: u16,
    },
    /// `PathSelector::reroll`.
    Reroll {
        /// Path.
        path: u8,
        /// Random input.
        random: u16,
    },
    /// `PathSelector::set_plane_up`.
    SetPlaneUp {
        /// Plane.
        plane: u8,
        /// Up or down.
        up: bool,
    },
    /// `PathSelector::set_conn_limit`.
    SetConnLimit {
        /// Packets.
        pkts: u16,
    },
}

/// A component wrapped with an optional operation record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traced<T, C> {
    inner: T,
    log: Option<Vec<C>>,
}

impl<T, C> Deref for Traced<T, C> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T, C> Traced<T, C> {
    /// Wrap `inner`, recording operations when `trace` is set.
    pub fn new(inner: T, trace: bool) -> Self {
        Traced {
            inner,
            log: trace.then(Vec::new),
        }
    }

    /// Whether operations are recorded.
    pub fn is_traced(&self) -> bool {
        self.log.is_some()
    }

    /// Take the operations recorded since the last call.
    pub fn take_log(&mut self) -> Vec<C> {
        match &mut self.log {
            Some(l) => core::mem::take(l),
            None => Vec::new(),
        }
    }

    /// Apply `f` to the component without recording it: for an operation another agent already
    /// executed on the replaying implementation (the control core's `SEL_CMD`, which the
    /// hardware applies itself), so a replay must not apply it twice.
    pub fn apply_unrecorded<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.inner)
    }

    fn record(&mut self, c: C) {
        if let Some(l) = &mut self.log {
            l.push(c);
        }
    }
}

/// Traced receive tracker.
pub type TracedRxTracker = Traced<RxTracker, RxCall>;
/// Traced transmit scoreboard.
pub type TracedTxScoreboard = Traced<TxScoreboard, TxCall>;
/// Traced path selector.
pub type TracedPathSelector = Traced<PathSelector, SelCall>;

impl Traced<RxTracker, RxCall> {
    /// Replace the tracker by `RxTracker::new(isn)`.
    pub fn reinit(&mut self, isn: u32) {
        self.inner = RxTracker::new(isn);
        self.record(RxCall::Init { isn });
    }

    /// `RxTracker::packet`.
    pub fn packet(&mut self, req: &RxPacket) -> RxResponse {
        let resp = self.inner.packet(req);
        self.record(RxCall::Packet { req: *req, resp });
        resp
    }

    /// `RxTracker::flush`.
    pub fn flush(&mut self, path: u8) -> AckSnapshot {
        let snap = self.inner.flush(path);
        self.record(RxCall::Flush { path, snap });
        snap
    }
}

impl Traced<TxScoreboard, TxCall> {
    /// Replace the scoreboard by `TxScoreboard::new(isn)`.
    pub fn reinit(&mut self, isn: u32) {
        self.inner = TxScoreboard::new(isn);
        self.record(TxCall::Init { isn });
    }

    /// `TxScoreboard::send`.
    pub fn send(&mut self, path: u8, now: u32, rto_ns: u32) -> Option<u32> {
        let psn = self.inner.send(path, now, rto_ns);
        self.record(TxCall::Send { path, now, rto_ns, psn });
        psn
    }

    /// `TxScoreboard::ack_word`.
    pub fn ack_word(
        &mut self,
        path: u8,
        word_psn: u32,
        mask: u32,
        lost_below: u32,
        now: u32,
        rto_ns: u32,
    ) -> WordResult {
        let result = self.inner.ack_word(path, word_psn, mask, lost_below, now, rto_ns);
        self.record(TxCall::AckWord {
            path,
            word_psn,
            mask,
            lost_below,
            now,
            rto_ns,
            result,
        });
        result
    }

    /// `TxScoreboard::expire_head`.
    pub fn expire_head(&mut self, path: u8) -> WordResult {
        let result = self.inner.expire_head(path);
        self.record(TxCall::ExpireHead { path, result });
        result
    }

    /// `TxScoreboard::timer`.
    pub fn timer(&mut self, path: u8, now: u32, rto_ns: u32) -> TimerResult {
        let result = self.inner.timer(path, now, rto_ns);
        self.record(TxCall::Timer {
            path,
            now,
            rto_ns,
            result,
        });
        result
    }

    /// `TxScoreboard::clear_backoff`.
    pub fn clear_backoff(&mut self, path: u8) {
        self.inner.clear_backoff(path);
        self.record(TxCall::ClearBackoff { path });
    }
}

impl Traced<PathSelector, SelCall> {
    /// Replace the selector by `PathSelector::new(paths, planes)`.
    pub fn reinit(&mut self, paths: u8, planes: u8) {
        self.inner = PathSelector::new(paths, planes);
        self.record(SelCall::Init { paths, planes });
    }

    /// `PathSelector::select`.
    pub fn select(&mut self, room_mask: u32) -> Option<u8> {
        let path = self.inner.select(room_mask);
        self.record(SelCall::Select { room_mask, path });
        path
    }

    /// `PathSelector::charge_probe`.
    pub fn charge_probe(&mut self, path: u8) {
        self.inner.charge_probe(path);
        self.record(SelCall::ChargeProbe { path });
    }

    /// `PathSelector::credit`.
    pub fn credit(&mut self, credit: &Credit) -> bool {
        let reroute = self.inner.credit(credit);
        self.record(SelCall::Credit {
            credit: *credit,
            reroute,
        });
        reroute
    }

    /// `PathSelector::set_health`.
    pub fn set_health(&mut self, path: u8, health: PathHealth) {
        self.inner.set_health(path, health);
        self.record(SelCall::SetHealth { path, health });
    }

    /// `PathSelector::clear_inflight`.
    pub fn clear_inflight(&mut self, path: u8) {
        self.inner.clear_inflight(path);
        self.record(SelCall::ClearInflight { path });
    }

    /// `PathSelector::request_reroll`.
    pub fn request_reroll(&mut self, path: u8, random: u16) {
        self.inner.request_reroll(path, random);
        self.record(SelCall::RequestReroll { path, random });
    }

    /// `PathSelector::reroll`.
    pub fn reroll(&mut self, path: u8, random: u16) {
        self.inner.reroll(path, random);
        self.record(SelCall::Reroll { path, random });
    }

    /// `PathSelector::set_plane_up`.
    pub fn set_plane_up(&mut self, plane: u8, up: bool) {
        self.inner.set_plane_up(plane, up);
        self.record(SelCall::SetPlaneUp { plane, up });
    }

    /// `PathSelector::set_conn_limit`.
    pub fn set_conn_limit(&mut self, pkts: u16) {
        self.inner.set_conn_limit(pkts);
        self.record(SelCall::SetConnLimit { pkts });
    }
}

/// Every operation recorded on one connection's components since the last drain, per block
/// in the order applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComponentCalls {
    /// Receive-tracker operations.
    pub rx: Vec<RxCall>,
    /// Transmit-scoreboard operations.
    pub tx: Vec<TxCall>,
    /// Path-selector operations.
    pub sel: Vec<SelCall>,
}

/// The first operation whose replayed result differed from the recorded one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayMismatch {
    /// Block: "rx_tracker", "tx_scoreboard" or "path_selector".
    pub block: &'static str,
    /// Index of the operation in that block's list.
    pub index: usize,
    /// The operation with the model's result.
    pub expected: alloc::string::String,
    /// What the replaying implementation returned.
    pub got: alloc::string::String,
}

impl core::fmt::Display for ReplayMismatch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} operation {}: model {}, replay gave {}",
            self.block, self.index, self.expected, self.got
        )
    }
}

/// A second implementation of one connection's components that replays its recorded
/// operations and checks every result (the co-simulated hardware, or [`SoftwareReplay`]).
pub trait ComponentReplay {
    /// Apply `calls` in order (each block's list in its own order) and compare every result.
    /// Returns the number of operations checked.
    fn replay(&mut self, calls: &ComponentCalls) -> Result<usize, ReplayMismatch>;
}

/// Replay on fresh software components: the reference the hardware replay is held to, and a
/// check that the trace is complete.
#[derive(Debug, Clone, Default)]
pub struct SoftwareReplay {
    rt: RxTracker,
    sb: TxScoreboard,
    sel: PathSelector,
}

fn mismatch<T: core::fmt::Debug, U: core::fmt::Debug>(
    block: &'static str,
    index: usize,
    expected: &T,
    got: &U,
) -> ReplayMismatch {
    ReplayMismatch {
        block,
        index,
        expected: alloc::format!("{expected:?}"),
        got: alloc::format!("{got:?}"),
    }
}

impl ComponentReplay for SoftwareReplay {
    fn replay(&mut self, calls: &ComponentCalls) -> Result<usize, ReplayMismatch> {
        for (i, c) in calls.rx.iter().enumerate() {
            match *c {
                RxCall::Init { isn } => self.rt = RxTracker::new(isn),
                RxCall::Packet { req, resp } => {
                    let got = self.rt.packet(&req);
                    if got != resp {
                        return Err(mismatch("rx_tracker", i, c, &got));
                    }
                }
                RxCall::Flush { path, snap } => {
                    let got = self.rt.flush(path);
                    if got != snap {
                        return Err(mismatch("rx_tracker", i, c, &got));
                    }
                }
            }
        }
        for (i, c) in calls.tx.iter().enumerate() {
            let ok = match *c {
                TxCall::Init { isn } => {
                    self.sb = TxScoreboard::new(isn);
                    Ok(())
                }
                TxCall::Send { path, now, rto_ns, psn } => {
                    let got = self.sb.send(path, now, rto_ns);
                    if got == psn {
                        Ok(())
                    } else {
                        Err(alloc::format!("{got:?}"))
                    }
                }
                TxCall::AckWord {
                    path,
                    word_psn,
                    mask,
                    lost_below,
                    now,
                    rto_ns,
                    result,
                } => {
                    let got = self.sb.ack_word(path, word_psn, mask, lost_below, now, rto_ns);
                    if got == result {
                        Ok(())
                    } else {
                        Err(alloc::format!("{got:?}"))
                    }
                }
                TxCall::ExpireHead { path, result } => {
                    let got = self.sb.expire_head(path);
                    if got == result {
                        Ok(())
                    } else {
                        Err(alloc::format!("{got:?}"))
                    }
                }
                TxCall::Timer {
                    path,
                    now,
                    rto_ns,
                    result,
                } => {
                    let got = self.sb.timer(path, now, rto_ns);
                    if got == result {
                        Ok(())
                    } else {
                        Err(alloc::format!("{got:?}"))
                    }
                }
                TxCall::ClearBackoff { path } => {
                    self.sb.clear_backoff(path);
                    Ok(())
                }
            };
            if let Err(got) = ok {
                return Err(ReplayMismatch {
                    block: "tx_scoreboard",
                    index: i,
                    expected: alloc::format!("{c:?}"),
                    got,
                });
            }
        }
        for (i, c) in calls.sel.iter().enumerate() {
            match *c {
                SelCall::Init { paths, planes } => self.sel = PathSelector::new(paths, planes),
                SelCall::Select { room_mask, path } => {
                    let got = self.sel.select(room_mask);
                    if got != path {
                        return Err(mismatch("path_selector", i, c, &got));
                    }
                }
                SelCall::ChargeProbe { path } => self.sel.charge_probe(path),
                SelCall::Credit { credit, reroute } => {
                    let got = self.sel.credit(&credit);
                    if got != reroute {
                        return Err(mismatch("path_selector", i, c, &got));
                    }
                }
                SelCall::SetHealth { path, health } => self.sel.set_health(path, health),
                SelCall::ClearInflight { path } => self.sel.clear_inflight(path),
                SelCall::RequestReroll { path, random } => self.sel.request_reroll(path, random),
                SelCall::Reroll { path, random } => self.sel.reroll(path, random),
                SelCall::SetPlaneUp { plane, up } => self.sel.set_plane_up(plane, up),
                SelCall::SetConnLimit { pkts } => self.sel.set_conn_limit(pkts),
            }
        }
        Ok(calls.rx.len() + calls.tx.len() + calls.sel.len())
    }
}
