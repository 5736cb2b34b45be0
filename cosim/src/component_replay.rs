//! The Verilated blocks as a [`ComponentReplay`]: a connection's recorded component
//! operations (`mroce_model::component_trace`) become one transaction stream per block, run
//! through the lockstep engine on fresh hardware with random valid/ready stalls. The
//! conformance suite's `hdl` target uses it, so every case's real protocol traffic is checked
//! on the hardware bit for bit.

use crate::bench::{health_code, RxBench, RxTxn, SelBench, SelTxn, TxBench, TxTxn};
use crate::engine::{run_stream, Mismatch, RunOpts};
use crate::pins::{PathSelectorPins, RxTrackerPins, TxScoreboardPins, Verilated};
use crate::CosimError;
use mroce_model::component_trace::{
    ComponentCalls, ComponentReplay, ReplayMismatch, RxCall, SelCall, SoftwareReplay, TxCall,
};
use mroce_model::params::PATHS;

/// Replays on the Verilated `rx_tracker`, `tx_scoreboard` and `path_selector`.
#[derive(Debug, Clone, Copy)]
pub struct VerilatedReplay {
    /// Seed of the valid/ready stall pattern.
    pub stall_seed: u64,
}

impl VerilatedReplay {
    /// A replay with stall pattern `stall_seed`; fails when Verilator was missing at build time.
    pub fn new(stall_seed: u64) -> Result<Self, CosimError> {
        // Build one model now so a missing Verilator is reported before any case runs.
        Verilated::<RxTrackerPins>::new()?;
        Ok(VerilatedReplay { stall_seed })
    }
}

/// The block operations of a recorded stream (a block initialisation becomes its resets).
pub fn rx_txns(calls: &[RxCall]) -> Vec<RxTxn> {
    let mut v = Vec::with_capacity(calls.len());
    for c in calls {
        match *c {
            RxCall::Init { isn } => v.extend((0..PATHS as u8).map(|path| RxTxn::Reset { path, isn })),
            RxCall::Packet { req, .. } => v.push(RxTxn::Packet {
                path: req.path,
                psn: req.psn,
                floor: req.floor,
                ce: req.ce,
                ack_req: req.ack_req,
                commit: req.commit,
            }),
            RxCall::Flush { path, .. } => v.push(RxTxn::Flush { path }),
        }
    }
    v
}

/// See [`rx_txns`].
pub fn tx_txns(calls: &[TxCall]) -> Vec<TxTxn> {
    let mut v = Vec::with_capacity(calls.len());
    for c in calls {
        match *c {
            TxCall::Init { isn } => v.extend((0..PATHS as u8).map(|path| TxTxn::Reset { path, isn })),
            TxCall::Send { path, now, rto_ns, .. } => v.push(TxTxn::Send { path, now, rto: rto_ns }),
            TxCall::AckWord {
                path,
                word_psn,
                mask,
                lost_below,
                now,
                rto_ns,
                ..
            } => v.push(TxTxn::AckWord {
                path,
                word_psn,
                mask,
                lost_below,
                now,
                rto: rto_ns,
            }),
            TxCall::ExpireHead { path, .. } => v.push(TxTxn::Expire { path }),
            TxCall::Timer { path, now, rto_ns, .. } => v.push(TxTxn::Timer { path, now, rto: rto_ns }),
            TxCall::ClearBackoff { path } => v.push(TxTxn::ClearBackoff { path }),
        }
    }
    v
}

/// See [`rx_txns`].
pub fn sel_txns(calls: &[SelCall]) -> Vec<SelTxn> {
    calls
        .iter()
        .map(|c| match *c {
            SelCall::Init { paths, planes } => SelTxn::Init { paths, planes },
            SelCall::Select { room_mask, .. } => SelTxn::Select { room: room_mask as u16 },
            SelCall::ChargeProbe { path } => SelTxn::ChargeProbe { path },
            SelCall::Credit { credit, .. } => SelTxn::Credit {
                path: credit.path,
                acked: credit.acked,
                lost: credit.lost,
                probes: credit.probes,
                ce: credit.ce,
            },
            SelCall::SetHealth { path, health } => SelTxn::SetHealth {
                path,
                health: health_code(health),
            },
            SelCall::ClearInflight { path } => SelTxn::ClearInflight { path },
            SelCall::RequestReroll { path, random } => SelTxn::RequestReroll { path, random },
            SelCall::Reroll { path, random } => SelTxn::Reroll { path, random },
            SelCall::SetPlaneUp { plane, up } => SelTxn::SetPlaneUp { plane, up },
            SelCall::SetConnLimit { pkts } => SelTxn::SetConnLimit { pkts },
        })
        .collect()
}

fn hw_mismatch(block: &'static str, m: Mismatch) -> ReplayMismatch {
    ReplayMismatch {
        block,
        index: m.index,
        expected: m.want.to_string(),
        got: format!("{} (hardware, cycle {})", m.got, m.cycle),
    }
}

fn setup_error(block: &'static str, e: CosimError) -> ReplayMismatch {
    ReplayMismatch {
        block,
        index: 0,
        expected: "a co-simulation run".into(),
        got: e.to_string(),
    }
}

impl ComponentReplay for VerilatedReplay {
    fn replay(&mut self, calls: &ComponentCalls) -> Result<usize, ReplayMismatch> {
        // The lockstep engine holds the hardware to fresh model components; holding those to
        // the recorded results closes the chain hardware == recording.
        let n = SoftwareReplay::default().replay(calls)?;
        let o = RunOpts {
            stall_seed: self.stall_seed,
            ..Default::default()
        };
        if !calls.rx.is_empty() {
            let mut hw = Verilated::<RxTrackerPins>::new().map_err(|e| setup_error("rx_tracker", e))?;
            let r =
                run_stream::<RxBench, _>(&mut hw, &rx_txns(&calls.rx), &o).map_err(|e| setup_error("rx_tracker", e))?;
            if let Some(m) = r.mismatch {
                return Err(hw_mismatch("rx_tracker", m));
            }
        }
        if !calls.tx.is_empty() {
            let mut hw = Verilated::<TxScoreboardPins>::new().map_err(|e| setup_error("tx_scoreboard", e))?;
            let r = run_stream::<TxBench, _>(&mut hw, &tx_txns(&calls.tx), &o)
                .map_err(|e| setup_error("tx_scoreboard", e))?;
            if let Some(m) = r.mismatch {
                return Err(hw_mismatch("tx_scoreboard", m));
            }
        }
        if !calls.sel.is_empty() {
            let mut hw = Verilated::<PathSelectorPins>::new().map_err(|e| setup_error("path_selector", e))?;
            let r = run_stream::<SelBench, _>(&mut hw, &sel_txns(&calls.sel), &o)
                .map_err(|e| setup_error("path_selector", e))?;
            if let Some(m) = r.mismatch {
                return Err(hw_mismatch("path_selector", m));
            }
        }
        Ok(n)
    }
}
