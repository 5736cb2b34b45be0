//! The SoC around `transport_core` (hdl/soc/mroce_soc.v): PicoRV32 running the firmware from
//! RAM, the CSR bridge, and the transport's streams as ports. This module assembles its Verilog:
//! the `MROCE_*` macros (from `mroce_csr` and the firmware's memory map, never re-typed), the SoC
//! module, `transport_core` and PicoRV32, whose source comes from PyPI's
//! `pythondata-cpu-picorv32` (found by [`find_picorv32`]; never committed).

use std::path::PathBuf;

/// The SoC module's source.
pub const SOC_VERILOG: &str = include_str!("../soc/mroce_soc.v");

/// Where the SoC's memory map puts things (the firmware's `memory_map`).
#[derive(Debug, Clone, Copy)]
pub struct SocMap {
    /// RAM bytes from address 0 (a power of two, at most 64 KiB: the bridge decodes 16 bits).
    pub ram_bytes: u32,
    /// Base of the CSR window (256-byte aligned).
    pub csr_base: u32,
    /// Top half of the firmware's heartbeat in `SCRATCH` (`mroce_firmware::soc_status`): a board
    /// starts its self-test at the first one (the connection is set up).
    pub heartbeat_tag: u32,
}

/// The `define`s the SoC module uses.
pub fn soc_defines(map: SocMap) -> String {
    format!(
        "`define MROCE_RAM_BYTES 32'h{:08X}\n`define MROCE_CSR_BASE 32'h{:08X}\n\
         `define MROCE_CSR_SEL_CMD 8'h{:02X}\n`define MROCE_CSR_CONTROL 8'h{:02X}\n\
         `define MROCE_CSR_CONTROL_ROOM 32'h{:08X}\n`define MROCE_CSR_SCRATCH 8'h{:02X}\n\
         `define MROCE_HEARTBEAT_TAG 16'h{:04X}\n",
        map.ram_bytes,
        map.csr_base,
        mroce_csr::SEL_CMD,
        mroce_csr::CONTROL,
        mroce_csr::CONTROL_ROOM_FROM_SCOREBOARD,
        mroce_csr::SCRATCH,
        map.heartbeat_tag >> 16
    )
}

/// `define`s of the transport's stream encodings for hand-written Verilog around
/// `transport_core` (the board self-test): operation codes, and each output record field as
/// `MROCE_<REC>_<FIELD>` = `hi:lo` (offsets from rust-hdl's `LogicStruct` derive, first field at
/// bit 0), so nothing re-types the layouts.
pub fn stream_defines() -> String {
    use crate::path_selector as sel;
    use crate::rx_tracker as rx;
    use crate::tx_scoreboard as tx;
    use rust_hdl::prelude::Synth;
    let mut s = String::new();
    let mut field = |rec: &str, name: &str, lo: usize, bits: usize| {
        s.push_str(&format!(
            "`define MROCE_{rec}_{} {}:{}\n",
            name.to_uppercase(),
            lo + bits - 1,
            lo
        ));
    };
    fn w<T: Synth>(_: &T) -> usize {
        T::BITS
    }
    let r = rx::RxOut::default();
    field("RX", "op", r.get_my_offset_op(), w(&r.op));
    field("RX", "verdict", r.get_my_offset_verdict(), w(&r.verdict));
    field("RX", "ack", r.get_my_offset_ack(), w(&r.ack));
    field("RX", "path", r.get_my_offset_path(), w(&r.path));
    field("RX", "base", r.get_my_offset_base(), w(&r.base));
    let t = tx::TxOut::default();
    field("TX", "op", t.get_my_offset_op(), w(&t.op));
    field("TX", "path", t.get_my_offset_path(), w(&t.path));
    field("TX", "ok", t.get_my_offset_ok(), w(&t.ok));
    field("TX", "psn", t.get_my_offset_psn(), w(&t.psn));
    field("TX", "freed", t.get_my_offset_freed(), w(&t.freed));
    field("TX", "lost", t.get_my_offset_lost(), w(&t.lost));
    field("TX", "empty", t.get_my_offset_empty(), w(&t.empty));
    field("TX", "room", t.get_my_offset_room(), w(&t.room));
    let l = sel::SelOut::default();
    field("SEL", "op", l.get_my_offset_op(), w(&l.op));
    field("SEL", "ok", l.get_my_offset_ok(), w(&l.ok));
    field("SEL", "path", l.get_my_offset_path(), w(&l.path));
    for (name, v) in [
        ("RX_OP_PACKET", rx::RX_OP_PACKET),
        ("RX_OP_RESET", rx::RX_OP_RESET),
        ("RX_NEW", rx::RX_NEW),
        ("TX_OP_SEND", tx::TX_OP_SEND),
        ("TX_OP_ACK_WORD", tx::TX_OP_ACK_WORD),
        ("TX_OP_EXPIRE", tx::TX_OP_EXPIRE),
        ("TX_OP_TIMER", tx::TX_OP_TIMER),
        ("TX_OP_RESET", tx::TX_OP_RESET),
        ("SEL_OP_SELECT", sel::SEL_OP_SELECT),
        ("SEL_OP_CREDIT", sel::SEL_OP_CREDIT),
        ("SEL_OP_INIT", sel::SEL_OP_INIT),
    ] {
        s.push_str(&format!("`define MROCE_{name} {v}\n"));
    }
    use mroce_model::params as p;
    s.push_str(&format!(
        "`define MROCE_PATHS {}\n`define MROCE_SACK_WORDS {}\n`define MROCE_CWND_MAX_PKTS {}\n",
        p::PATHS,
        p::SACK_WORDS,
        p::CWND_MAX_PKTS
    ));
    // the hardware configuration's widths (mroce_model::params), for the self-test's registers
    for (name, v) in [
        ("PATH_BITS", p::PATH_BITS as usize),
        ("SACK_BITS", p::SACK_BITS),
        ("SACK_WORD_INDEX_BITS", p::SACK_WORD_INDEX_BITS as usize),
        ("SACK_INDEX_BITS", p::SACK_INDEX_BITS as usize),
        ("RX_OUT_BITS", rx::RxOut::BITS),
        ("TX_OUT_BITS", tx::TxOut::BITS),
        ("SEL_OUT_BITS", sel::SelOut::BITS),
    ] {
        s.push_str(&format!("`define MROCE_{name} {v}\n"));
    }
    s.push_str(&format!("`define MROCE_CONFIG \"{}\"\n", p::CONFIG_NAME));
    s
}

/// The generated `transport_core` Verilog.
fn core_verilog() -> String {
    crate::generate_all()
        .into_iter()
        .find(|f| f.name == "transport_core")
        .map(|f| f.text)
        .unwrap_or_default()
}

/// `transport_core`'s stream ports (every port but the clock, the CSR bus and `irq`) as
/// (`[hi:lo] ` or empty, name), in port order, read from the generated Verilog `core`.
pub fn core_stream_ports(core: &str) -> Vec<(String, String)> {
    core_stream_port_decls(core)
        .into_iter()
        .map(|(_, w, n)| (w, n))
        .collect()
}

/// [`core_stream_ports`] with each port's direction (`input` or `output`).
fn core_stream_port_decls(core: &str) -> Vec<(&'static str, String, String)> {
    let Some(start) = core.find("module transport_core(") else {
        return Vec::new();
    };
    let body = &core[start..];
    let body = &body[..body.find("endmodule").unwrap_or(body.len())];
    body.lines()
        .map(str::trim)
        .filter_map(|l| {
            let (dir, rest) = match l.strip_prefix("input wire") {
                Some(r) => ("input", r),
                None => (
                    "output",
                    l.strip_prefix("output wire").or_else(|| l.strip_prefix("output reg"))?,
                ),
            };
            let decl = rest.trim().trim_end_matches(';').trim();
            let (width, name) = match decl.rsplit_once(' ') {
                Some((w, n)) => (format!("{} ", w.trim()), n.to_string()),
                None => (String::new(), decl.to_string()),
            };
            let stream = ["rx_", "tx_", "sel_"].iter().any(|p| name.starts_with(p));
            stream.then_some((dir, width, name))
        })
        .collect()
}

/// Macros that wire `transport_core`'s stream ports in hand-written tops (Verilog-2005 has no
/// interfaces), generated from the core so no top re-types the list:
/// - `MROCE_CORE_STREAM_WIRES`: one `wire` per stream port, the core's width and name;
/// - `MROCE_CORE_STREAM_PORTS`: `.p(p)` for each, for the `transport_core` instance;
/// - `MROCE_BIST_STREAM_PORTS`: the same for `mroce_bist`, whose SACK input is one vector
///   (`rx_out_sack$k` concatenated, word 0 lowest);
/// - `MROCE_CORE_STREAM_NAMES` and `MROCE_CORE_STREAM_DECLS`: the names (comma-separated) and
///   the core's own port declarations, for a module that passes the streams through (`mroce_soc`).
pub fn core_stream_defines(core: &str) -> String {
    let decls = core_stream_port_decls(core);
    let ports = core_stream_ports(core);
    let join = |items: Vec<String>, sep: &str| items.join(&format!("{sep} \\\n    "));
    let wires = join(ports.iter().map(|(w, n)| format!("wire {w}{n};")).collect(), "");
    let core_ports = join(ports.iter().map(|(_, n)| format!(".{n}({n})")).collect(), ",");
    let mut sack = Vec::new();
    let mut bist = Vec::new();
    for (_, n) in &ports {
        match n.strip_prefix("rx_out_sack$") {
            Some(_) => {
                if sack.is_empty() {
                    bist.push(String::from("SACK"));
                }
                sack.push(n.clone());
            }
            None => bist.push(format!(".{n}({n})")),
        }
    }
    sack.reverse();
    let sack_port = format!(".rx_out_sack({{{}}})", sack.join(", "));
    let bist = bist
        .into_iter()
        .map(|b| if b == "SACK" { sack_port.clone() } else { b })
        .collect();
    let names = join(decls.iter().map(|(_, _, n)| n.clone()).collect(), ",");
    let port_decls = join(decls.iter().map(|(d, w, n)| format!("{d} wire {w}{n};")).collect(), "");
    format!(
        "`define MROCE_CORE_STREAM_WIRES \\\n    {wires}\n`define MROCE_CORE_STREAM_PORTS \\\n    {core_ports}\n\
         `define MROCE_BIST_STREAM_PORTS \\\n    {}\n`define MROCE_CORE_STREAM_NAMES \\\n    {names}\n\
         `define MROCE_CORE_STREAM_DECLS \\\n    {port_decls}\n",
        join(bist, ",")
    )
}

/// Everything hand-written Verilog around the blocks includes (`mroce_defines.vh`): the SoC
/// memory map and CSR offsets ([`soc_defines`]), the stream encodings ([`stream_defines`]) and
/// the stream wiring of `transport_core` ([`core_stream_defines`]).
pub fn board_defines(map: SocMap) -> String {
    board_defines_for(map, &core_verilog())
}

/// [`board_defines`] for the generated `transport_core` text `core`.
fn board_defines_for(map: SocMap, core: &str) -> String {
    format!(
        "// mroce_defines.vh: generated by mroce-hdl {}; do not edit.\n{}{}{}",
        env!("CARGO_PKG_VERSION"),
        soc_defines(map),
        stream_defines(),
        core_stream_defines(core)
    )
}

/// Sources of the board self-test (fpga-boards/common): the BIST engine, the UART reporter and
/// `mroce_selftest`, which wires them to `transport_core`.
pub const SELFTEST_VERILOG: [(&str, &str); 3] = [
    ("mroce_bist.v", include_str!("../../fpga-boards/common/mroce_bist.v")),
    (
        "mroce_uart_report.v",
        include_str!("../../fpga-boards/common/mroce_uart_report.v"),
    ),
    (
        "mroce_selftest.v",
        include_str!("../../fpga-boards/common/mroce_selftest.v"),
    ),
];

/// What an ECP5 board top with the control core instantiates (fpga-boards/common): the SoC, the
/// self-test and the UART reporter wired together, pins aside.
pub const SOC_BOARD_VERILOG: (&str, &str) = (
    "mroce_soc_board.v",
    include_str!("../../fpga-boards/common/mroce_soc_board.v"),
);

/// The ECP5 boards' clock (fpga-boards/common): 50 MHz from their 25 MHz oscillator through
/// EHXPLLL, gated until lock; under Verilator the input clock passes through.
pub const ECP5_PLL_VERILOG: (&str, &str) = (
    "mroce_ecp5_pll.v",
    include_str!("../../fpga-boards/common/mroce_ecp5_pll.v"),
);

/// UART clocks per bit of the ECP5 board tops: 115200 baud at the 50 MHz of
/// [`ECP5_PLL_VERILOG`]. The tops pass it to `mroce_soc_board`; the co-simulation's UART
/// receiver decodes their status line with it.
pub const ECP5_BOARD_CLKS_PER_BIT: u32 = 434;

/// `mroce_soc.v` with its stream port list and declarations expanded for the generated
/// `transport_core` text `core` (the co-simulation's shim generator reads port lines).
pub fn soc_source(core: &str) -> String {
    let decls = core_stream_port_decls(core);
    let names: Vec<_> = decls.iter().map(|(_, _, n)| n.as_str()).collect();
    let lines: Vec<_> = decls.iter().map(|(d, w, n)| format!("{d} wire {w}{n};")).collect();
    SOC_VERILOG
        .replace("`MROCE_CORE_STREAM_NAMES", &names.join(","))
        .replace("`MROCE_CORE_STREAM_DECLS", &lines.join("\n    "))
}

/// The self-test (`mroce_selftest` and `transport_core`) as one Verilog text.
pub fn selftest_verilog(map: SocMap) -> String {
    let core = core_verilog();
    let mut s = board_defines_for(map, &core);
    for (_, text) in SELFTEST_VERILOG {
        s.push_str(text);
        s.push('\n');
    }
    s.push_str(&core);
    s
}

/// The whole SoC as one Verilog text: macros, `mroce_soc`, `transport_core` (generated) and
/// the PicoRV32 source given.
pub fn soc_verilog(map: SocMap, picorv32: &str) -> String {
    let core = core_verilog();
    format!(
        "// mroce_soc.v: generated by mroce-hdl {} (PicoRV32 from pythondata-cpu-picorv32); do not edit.\n{}{}\n{}\n{}\n{}\n",
        env!("CARGO_PKG_VERSION"),
        soc_defines(map),
        core_stream_defines(&core),
        soc_source(&core),
        core,
        picorv32
    )
}

/// A board top for simulation: everything it instantiates, and a wrapper `<top>_sim` with a
/// `clock` input (the shim's clock) around `top` whose `FIRMWARE_HEX` parameter is `hex` (an
/// absolute path read when the model starts). The top's ports other than its clock, named
/// `clk_25mhz`, pass through.
pub fn board_verilog(map: SocMap, picorv32: &str, top: &str, top_text: &str, hex: &str) -> String {
    let mut s = selftest_verilog(map);
    s.push_str(&soc_source(&core_verilog()));
    s.push('\n');
    s.push_str(SOC_BOARD_VERILOG.1);
    s.push('\n');
    s.push_str(ECP5_PLL_VERILOG.1);
    s.push('\n');
    s.push_str(picorv32);
    s.push('\n');
    s.push_str(top_text);
    s.push_str(&format!(
        "\n// simulation wrapper of {top}\nmodule {top}_sim(clock, led, ftdi_rxd);\n    input wire  clock;\n    \
         output wire [7:0] led;\n    output wire ftdi_rxd;\n    {top} #(.FIRMWARE_HEX(\"{hex}\")) top(.clk_25mhz(clock), \
         .led(led), .ftdi_rxd(ftdi_rxd));\nendmodule\n"
    ));
    s
}

/// Why PicoRV32's source was not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picorv32Missing(pub String);

impl std::fmt::Display for Picorv32Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PicoRV32 source not found ({}): pip install pythondata-cpu-picorv32 (or bash scripts/setup.sh), \
             or set MROCE_PICORV32 to a picorv32.v",
            self.0
        )
    }
}

/// `picorv32.v`: `$MROCE_PICORV32` if set, else the one of the `pythondata_cpu_picorv32`
/// Python package (asked of `python3`).
pub fn find_picorv32() -> Result<PathBuf, Picorv32Missing> {
    if let Some(p) = std::env::var_os("MROCE_PICORV32") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(Picorv32Missing(format!("MROCE_PICORV32={} is not a file", p.display())))
        };
    }
    let out = std::process::Command::new("python3")
        .args(["-c", "import pythondata_cpu_picorv32 as p; print(p.data_location)"])
        .output()
        .map_err(|e| Picorv32Missing(format!("python3: {e}")))?;
    if !out.status.success() {
        return Err(Picorv32Missing("python3 cannot import pythondata_cpu_picorv32".into()));
    }
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("picorv32.v");
    if p.is_file() {
        Ok(p)
    } else {
        Err(Picorv32Missing(format!("{} is missing", p.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Port declarations (`input`/`output` lines) of `module name(` in `text`, direction and
    /// width normalised.
    fn ports(text: &str, name: &str) -> Vec<String> {
        let start = text.find(&format!("module {name}(")).expect("module");
        let body = &text[start..];
        let body = &body[..body.find("endmodule").expect("endmodule")];
        body.lines()
            .map(str::trim)
            .filter(|l| l.starts_with("input") || l.starts_with("output"))
            .map(|l| {
                l.replace("output reg ", "output wire")
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn soc_stream_ports_are_transport_core_ports() {
        let core = crate::generate_all()
            .into_iter()
            .find(|f| f.name == "transport_core")
            .expect("transport_core")
            .text;
        let soc = ports(&soc_source(&core), "mroce_soc");
        let mut n = 0;
        for p in ports(&core, "transport_core") {
            if p.contains("clock;") || p.contains("csr_") || p.ends_with(" irq;") {
                continue;
            }
            assert!(soc.contains(&p), "mroce_soc lacks transport_core's port `{p}`");
            n += 1;
        }
        // 36 ports besides the SACK words
        assert_eq!(n, 36 + mroce_model::params::SACK_WORDS, "stream ports");
    }

    /// The board tops wire transport_core's streams only through the generated macros, and the
    /// macros carry every stream port of the core with its width.
    #[test]
    fn board_tops_wire_the_streams_through_the_generated_macros() {
        let core = core_verilog();
        let defs = core_stream_defines(&core);
        let flat = defs.replace("\\\n", " ");
        let macro_body = |name: &str| -> String {
            let start = flat.find(&format!("`define {name} ")).expect(name) + name.len() + 9;
            flat[start..].lines().next().unwrap_or("").to_string()
        };
        let wires = macro_body("MROCE_CORE_STREAM_WIRES");
        let core_ports = macro_body("MROCE_CORE_STREAM_PORTS");
        let bist_ports = macro_body("MROCE_BIST_STREAM_PORTS");
        let mut n = 0;
        for p in ports(&core, "transport_core") {
            if p.contains("clock;") || p.contains("csr_") || p.ends_with(" irq;") {
                continue;
            }
            n += 1;
            let decl = p.replacen("input wire", "wire", 1).replacen("output wire", "wire", 1);
            assert!(
                wires
                    .split(';')
                    .any(|w| format!("{};", w.split_whitespace().collect::<Vec<_>>().join(" ")) == decl),
                "MROCE_CORE_STREAM_WIRES lacks `{decl}`"
            );
            let name = decl.trim_end_matches(';').rsplit(' ').next().unwrap_or("");
            assert!(
                core_ports.contains(&format!(".{name}({name})")),
                "MROCE_CORE_STREAM_PORTS lacks {name}"
            );
            assert!(bist_ports.contains(name), "MROCE_BIST_STREAM_PORTS lacks {name}");
        }
        // 36 ports besides the SACK words
        assert_eq!(n, 36 + mroce_model::params::SACK_WORDS, "stream ports");
        let top = mroce_model::params::SACK_WORDS - 1;
        assert!(
            bist_ports.contains(&format!(".rx_out_sack({{rx_out_sack${top}, rx_out_sack${}", top - 1)),
            "{bist_ports}"
        );
        let tops = [
            ("mroce_selftest.v", SELFTEST_VERILOG[2].1, 2),
            (SOC_BOARD_VERILOG.0, SOC_BOARD_VERILOG.1, 2),
            (
                "mroce_ulx3s.v",
                include_str!("../../fpga-boards/ulx3s/mroce_ulx3s.v"),
                0,
            ),
            (
                "mroce_colorlight_i5.v",
                include_str!("../../fpga-boards/colorlight-i5/mroce_colorlight_i5.v"),
                0,
            ),
            ("mroce_soc.v", SOC_VERILOG, 1),
        ];
        for (name, text, uses) in tops {
            let used =
                text.matches("`MROCE_CORE_STREAM_PORTS").count() + text.matches("`MROCE_BIST_STREAM_PORTS").count();
            assert!(used >= uses, "{name} wires the streams by hand");
            assert!(
                !text.contains(".rx_in_valid(rx_in_valid)"),
                "{name} repeats the stream port list"
            );
        }
    }

    #[test]
    fn ecp5_tops_run_on_the_pll_and_time_the_uart_for_it() {
        for (name, text) in [
            ("mroce_ulx3s.v", include_str!("../../fpga-boards/ulx3s/mroce_ulx3s.v")),
            (
                "mroce_colorlight_i5.v",
                include_str!("../../fpga-boards/colorlight-i5/mroce_colorlight_i5.v"),
            ),
        ] {
            assert!(text.contains("mroce_ecp5_pll pll("), "{name} does not run on the PLL");
            assert!(
                text.contains(&format!(".CLKS_PER_BIT({ECP5_BOARD_CLKS_PER_BIT})")),
                "{name}: UART not timed for the PLL's clock"
            );
        }
        // 115200 baud at the PLL's 50 MHz, within 0.1 %
        assert_eq!(50_000_000 / 115_200, ECP5_BOARD_CLKS_PER_BIT);
        assert!(ECP5_PLL_VERILOG.1.contains("FREQUENCY_PIN_CLKOP=\"50\""));
    }

    #[test]
    fn defines_come_from_the_csr_map() {
        let d = soc_defines(SocMap {
            ram_bytes: 0x1_0000,
            csr_base: 0x1000_0000,
            heartbeat_tag: 0x4842_0000,
        });
        assert!(d.contains(&format!("`define MROCE_CSR_SEL_CMD 8'h{:02X}", mroce_csr::SEL_CMD)));
        assert!(d.contains("`define MROCE_CSR_BASE 32'h10000000"));
        for m in ["MROCE_RAM_BYTES", "MROCE_CSR_CONTROL", "MROCE_CSR_CONTROL_ROOM"] {
            assert!(SOC_VERILOG.contains(&format!("`{m}")), "{m} unused");
            assert!(d.contains(&format!("`define {m} ")), "{m} undefined");
        }
    }
}
