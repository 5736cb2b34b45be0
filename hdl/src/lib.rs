//! mroce hardware blocks in RustHDL (issue 4): `rx_tracker`, `tx_scoreboard`, `path_selector`
//! and `transport_core`, each a transaction-level mirror of its `mroce_model` component.
pub mod fifo_bram;
pub mod fifo_occupancy;
pub mod lutram;
pub mod path_selector;
pub mod path_selector_compact;
pub mod record_fifo;
pub mod rx_tracker;
pub mod rx_tracker_compact;
pub mod soc;
pub mod transport_core;
pub mod tx_scoreboard;
pub mod tx_scoreboard_compact;
pub mod verilog;

/// One generated Verilog file.
pub struct VerilogFile {
    /// Block (and module, and file stem) name.
    pub name: &'static str,
    /// Verilog text.
    pub text: String,
}

/// Generate every block's Verilog file (one per block, the top last).
pub fn generate_all() -> Vec<VerilogFile> {
    let mut v = vec![];
    let mut rx = rx_tracker::RxTrackerHw::default();
    v.push(VerilogFile {
        name: "rx_tracker",
        text: verilog::generate(&mut rx, "rx_tracker", "receive tracker (mroce_model::rx_tracker)"),
    });
    let mut rxc = rx_tracker_compact::RxTrackerCompact::default();
    v.push(VerilogFile {
        name: "rx_tracker_compact",
        text: verilog::generate(
            &mut rxc,
            "rx_tracker_compact",
            "receive tracker for small FPGAs, one-clock read-modify-write (mroce_model::rx_tracker)",
        ),
    });
    let mut tx = tx_scoreboard::TxScoreboardHw::default();
    v.push(VerilogFile {
        name: "tx_scoreboard",
        text: verilog::generate(
            &mut tx,
            "tx_scoreboard",
            "transmit scoreboard (mroce_model::tx_scoreboard)",
        ),
    });
    let mut txc = tx_scoreboard_compact::TxScoreboardCompact::default();
    v.push(VerilogFile {
        name: "tx_scoreboard_compact",
        text: verilog::generate(
            &mut txc,
            "tx_scoreboard_compact",
            "transmit scoreboard for small FPGAs, one-clock read-modify-write (mroce_model::tx_scoreboard)",
        ),
    });
    let mut sel = path_selector::PathSelectorHw::default();
    v.push(VerilogFile {
        name: "path_selector",
        text: verilog::generate(&mut sel, "path_selector", "path selector (mroce_model::path_selector)"),
    });
    let mut selc = path_selector_compact::PathSelectorCompact::default();
    v.push(VerilogFile {
        name: "path_selector_compact",
        text: verilog::generate(
            &mut selc,
            "path_selector_compact",
            "path selector for small FPGAs, one-clock operations (mroce_model::path_selector)",
        ),
    });
    let mut top = transport_core::TransportCore::default();
    v.push(VerilogFile {
        name: "transport_core",
        text: verilog::generate(
            &mut top,
            "transport_core",
            "rx_tracker + tx_scoreboard + path_selector + CSR port (top)",
        ),
    });
    v
}
