//! `mroce cosim`: the `mroce-hdl` blocks in lockstep with the model (crate `mroce-cosim`).
//!
//! - `mroce cosim --block B --transactions N --seed S [--json] [--vcd FILE] [--backend B]`:
//!   a seeded random stream through the Verilated block (or rust-hdl's simulator) and the model
//!   components, every record compared; prints `{block, transactions, mismatches, cycles,
//!   cycles_per_s, wall_s, ...}` with rust-hdl's figures on a prefix of the same stream. On a
//!   mismatch: the transaction, both records, a shrunk replay file and a VCD of its last cycles.
//! - `mroce cosim replay FILE [--vcd FILE]`: rerun a replay file.
//! - `mroce cosim plane-failure [--json]`: the host-built firmware drives the Verilated
//!   `transport_core` through a plane failure (and the software core model, compared).
//! - `mroce cosim --soc [--bytes N] [--json] [--vcd FILE]`: the same scenario with the firmware
//!   running on PicoRV32 inside the Verilated SoC.
//! - `mroce cosim --selftest [--loss P] [--json]`: the board self-test (BIST, lossy loopback,
//!   UART line) around the Verilated `transport_core`.
//!
//! Exit codes: 0 no mismatch, 1 mismatch, 2 the run could not be carried out.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use mroce_cosim::run::{self, BackendKind, BlockName, CosimConfig, CosimReport};

/// `mroce cosim` arguments.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct CosimArgs {
    #[command(subcommand)]
    cmd: Option<CosimCmd>,
    /// Block: rx_tracker, tx_scoreboard, path_selector or transport_core.
    #[arg(long)]
    block: Option<String>,
    /// Transactions in the random stream.
    #[arg(long, default_value_t = 100_000)]
    transactions: usize,
    /// Seed of the stream and of the valid/ready stalls [default: 1; with --soc, of the NICs
    /// and the data: 6].
    #[arg(long)]
    seed: Option<u64>,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
    /// Write a VCD of the whole run (Verilator backend; large for long runs).
    #[arg(long)]
    vcd: Option<PathBuf>,
    /// Simulator running the hardware.
    #[arg(long, value_enum, default_value_t = BackendArg::Verilator)]
    backend: BackendArg,
    /// Transactions of the same stream also run on rust-hdl's simulator for the speed
    /// comparison [default: min(transactions, 5000); 0: none].
    #[arg(long)]
    compare: Option<usize>,
    /// Directory for a mismatch's replay file and VCD.
    #[arg(long, default_value = "target/cosim-failures")]
    artifacts: PathBuf,
    /// Use the rx_tracker with the injected off-by-one (harness self-test; must mismatch).
    #[arg(long, hide = true)]
    mutant: bool,
    /// SoC co-simulation: the plane-failure scenario with the firmware image running on
    /// PicoRV32 next to transport_core (Verilated together); --block is not used.
    #[arg(long, conflicts_with = "block")]
    soc: bool,
    /// With --soc: the soft-core ELF [default: target/riscv32im-unknown-none-elf/release/mroce-firmware].
    #[arg(long, requires = "soc")]
    image: Option<PathBuf>,
    /// With --soc: bytes transferred [default: the scenario's 32 MiB].
    #[arg(long, requires = "soc")]
    bytes: Option<usize>,
    /// With --soc: plane that dies (0..4).
    #[arg(long, requires = "soc", default_value_t = 1)]
    fail_plane: u8,
    /// With --soc: when it dies, ns after the first WRITE.
    #[arg(long, requires = "soc", default_value_t = 30_000)]
    fail_after_ns: u64,
    /// With --soc: run N failure times, --fail-step-ns apart from --fail-after-ns, and print
    /// each run and the median, minimum and maximum of its delays (a poll lasts 10,000-20,000
    /// cycles: sweep more than one, so the failure falls at every point of the poll).
    #[arg(long, requires = "soc", value_name = "N")]
    fail_sweep: Option<u32>,
    /// With --fail-sweep: ns between two failure times.
    #[arg(long, requires = "fail_sweep", default_value_t = 5_000)]
    fail_step_ns: u64,
    /// Board self-test: the BIST engine drives transport_core through a lossy loopback channel
    /// until 4096 messages arrived intact; prints the counters and the UART line.
    #[arg(long, conflicts_with_all = ["block", "soc"])]
    selftest: bool,
    /// With --selftest: channel loss probability (0 <= loss < 1).
    #[arg(long, requires = "selftest", default_value_t = 0.01)]
    loss: f64,
    /// With --selftest: give up after this many clocks.
    #[arg(long, requires = "selftest", default_value_t = 50_000_000)]
    max_cycles: u64,
}

#[derive(Subcommand, Debug)]
enum CosimCmd {
    /// Firmware in the loop: the control core's firmware (host build) drives transport_core
    /// over its CSR port while a transfer runs over 4 planes; a plane dies; the firmware
    /// detects it from the hardware counters and repairs the paths. Runs on the software core
    /// model and on the Verilated transport_core and compares the outcomes.
    PlaneFailure {
        /// Seed of both NICs and of the data.
        #[arg(long, default_value_t = 6)]
        seed: u64,
        /// Plane that dies (0..4).
        #[arg(long, default_value_t = 1)]
        fail_plane: u8,
        /// When it dies, ns after the first WRITE.
        #[arg(long, default_value_t = 30_000)]
        fail_after_ns: u64,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Rerun a replay file written at a mismatch.
    Replay {
        /// The replay file (JSON).
        file: PathBuf,
        /// Write a VCD of the replay.
        #[arg(long)]
        vcd: Option<PathBuf>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum BackendArg {
    Verilator,
    Rusthdl,
}

fn print(rep: &CosimReport, json: bool) {
    if json {
        match serde_json::to_string_pretty(rep) {
            Ok(s) => println!("{s}"),
            Err(e) => eprintln!("error: {e}"),
        }
        return;
    }
    println!(
        "{}: {} transactions, {} mismatches, {} cycles, {:.0} cycles/s ({:.2} s wall{})",
        rep.block,
        rep.transactions,
        rep.mismatches,
        rep.cycles,
        rep.cycles_per_s,
        rep.wall_s,
        rep.cycles_per_cpu_s
            .map_or(String::new(), |c| format!(", {c:.0} cycles per CPU second"))
    );
    if let Some(h) = &rep.rusthdl {
        println!(
            "rust-hdl simulator on the first {} transactions: {:.0} cycles/s, {} mismatches; ratio {:.1}x",
            h.transactions, h.cycles_per_s, h.mismatches, h.speedup
        );
    }
    if let Some(h) = &rep.hardware_only {
        println!(
            "Verilated model alone on the same {} cycles of input: {:.0} cycles/s{}",
            h.cycles,
            h.cycles_per_s,
            h.cycles_per_cpu_s
                .map_or(String::new(), |c| format!(" ({c:.0} cycles per CPU second)"))
        );
    }
    if let Some(m) = &rep.mismatch {
        println!("{m}");
    }
    if let Some(f) = &rep.replay_file {
        println!("replay file: {}", f.display());
    }
    if let Some(f) = &rep.vcd_file {
        println!("vcd: {}", f.display());
    }
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "none".into(), |v| v.to_string())
}

/// `mroce cosim plane-failure`: both backends, same scenario, outcomes compared.
fn plane_failure(seed: u64, fail_plane: u8, fail_after_ns: u64, json: bool) -> ExitCode {
    use mroce::plane_failure::{run as scenario, CoreCsrModel, PinsCore, ScenarioConfig};
    use mroce_cosim::pins::{TransportCorePins, Verilated};
    use mroce_firmware::memory_map::CYCLES_PER_US;
    if fail_plane >= 4 {
        eprintln!("error: --fail-plane must be below 4 (the scenario has 4 planes)");
        return ExitCode::from(2);
    }
    let cfg = ScenarioConfig {
        seed,
        fail_plane,
        fail_after_ns,
        ..ScenarioConfig::default()
    };
    let t0 = std::time::Instant::now();
    let sw = match scenario(&cfg, CoreCsrModel::new()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: software core: {e}");
            return ExitCode::from(1);
        }
    };
    let sw_s = t0.elapsed().as_secs_f64();
    let dut = match Verilated::<TransportCorePins>::new() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let t1 = std::time::Instant::now();
    let hw = match scenario(&cfg, PinsCore::new(dut)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: Verilated core: {e}");
            return ExitCode::from(1);
        }
    };
    let hw_s = t1.elapsed().as_secs_f64();
    let agree = hw.same_outcome(&sw);
    let ok = agree.is_ok() && hw.completed && hw.data_intact && hw.repair_cycles.is_some();
    if json {
        let v = serde_json::json!({
            "scenario": "plane-failure",
            "cycles_per_us": CYCLES_PER_US,
            "same_outcome": agree.as_ref().map(|_| true).unwrap_or(false),
            "difference": agree.as_ref().err(),
            "verilated": {
                "completed": hw.completed, "data_intact": hw.data_intact, "transfer_us": hw.transfer_ns as f64 / 1e3,
                "detect_cycles": hw.detect_cycles, "repair_cycles": hw.repair_cycles,
                "polls_to_repair": hw.polls_to_repair, "frames_dropped": hw.frames_dropped,
                "firmware_commands": hw.commands.len(), "core_ops": hw.core_ops, "cycles": hw.cycles, "wall_s": hw_s,
            },
            "software": {
                "completed": sw.completed, "data_intact": sw.data_intact, "transfer_us": sw.transfer_ns as f64 / 1e3,
                "detect_cycles": sw.detect_cycles, "repair_cycles": sw.repair_cycles,
                "polls_to_repair": sw.polls_to_repair, "firmware_commands": sw.commands.len(), "wall_s": sw_s,
            },
        });
        println!("{v}");
    } else {
        println!(
            "plane {} dies {} us after the first WRITE; Verilated core: detected +{} cycles, repaired +{} cycles \
             ({} polls), transfer {:.1} us, complete {}, intact {}; same outcome as the software core: {}",
            fail_plane,
            fail_after_ns / 1000,
            opt(hw.detect_cycles),
            opt(hw.repair_cycles),
            opt(hw.polls_to_repair),
            hw.transfer_ns as f64 / 1e3,
            hw.completed,
            hw.data_intact,
            agree.as_ref().map_or_else(|e| e.clone(), |_| "yes".into())
        );
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `mroce cosim --soc`.
fn soc(a: &CosimArgs) -> ExitCode {
    use mroce::plane_failure::ScenarioConfig;
    use mroce::soc_scenario::{default_image_path, run_soc, SocImage};
    if a.fail_plane >= 4 {
        eprintln!("error: --fail-plane must be below 4 (the scenario has 4 planes)");
        return ExitCode::from(2);
    }
    let path = a.image.clone().unwrap_or_else(default_image_path);
    let image = match SocImage::from_file(&path) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut cfg = ScenarioConfig {
        seed: a.seed.unwrap_or(6),
        fail_plane: a.fail_plane,
        fail_after_ns: a.fail_after_ns,
        ..ScenarioConfig::default()
    };
    if let Some(b) = a.bytes {
        if b == 0 {
            eprintln!("error: --bytes must be above 0");
            return ExitCode::from(2);
        }
        cfg.bytes = b;
    }
    if let Some(n) = a.fail_sweep {
        return soc_sweep(a, &cfg, &image, n);
    }
    let t0 = std::time::Instant::now();
    let rep = match run_soc(&cfg, &image, a.vcd.as_deref()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let wall_s = t0.elapsed().as_secs_f64();
    let ok = rep.completed && rep.data_intact && rep.repair_cycles.is_some() && rep.fault_register == 0;
    if a.json {
        let mut v = serde_json::to_value(&rep).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("scenario".into(), "plane-failure-soc".into());
            o.insert("image".into(), path.display().to_string().into());
            o.insert("wall_s".into(), wall_s.into());
            o.insert("cycles_per_s".into(), (rep.cycles as f64 / wall_s).into());
            o.insert("ok".into(), ok.into());
        }
        println!("{v}");
    } else {
        println!(
            "SoC (PicoRV32 + transport_core, Verilated): boot and setup {} cycles ({} instructions, {} commands); \
             plane {} dies {} us after the first WRITE: detected +{} cycles, plane down +{} cycles, paths moved +{} \
             cycles, poll done +{} cycles ({} polls, {} instructions); transfer {:.1} us, complete {}, intact {}; \
             FAULT {:#x}; \
             {} cycles in {:.1} s",
            rep.boot_cycles,
            rep.boot_instructions,
            rep.setup_commands,
            cfg.fail_plane,
            cfg.fail_after_ns / 1000,
            opt(rep.detect_cycles),
            opt(rep.plane_down_cycle.map(|c| c.saturating_sub(rep.fail_cycle))),
            opt(rep.paths_moved_cycles),
            opt(rep.repair_cycles),
            opt(rep.polls_to_repair),
            opt(rep.instructions_to_repair),
            rep.transfer_ns as f64 / 1e3,
            rep.completed,
            rep.data_intact,
            rep.fault_register,
            rep.cycles,
            wall_s
        );
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `mroce cosim --soc --fail-sweep N`: the scenario at N failure times; per run and summary.
fn soc_sweep(
    a: &CosimArgs,
    base: &mroce::plane_failure::ScenarioConfig,
    image: &mroce::soc_scenario::SocImage,
    n: u32,
) -> ExitCode {
    use mroce::soc_scenario::run_soc;
    if n == 0 || a.fail_step_ns == 0 || a.vcd.is_some() {
        eprintln!("error: --fail-sweep needs N > 0 and --fail-step-ns > 0, and no --vcd");
        return ExitCode::from(2);
    }
    // (name, value per run): the delays after the failure, in SoC cycles
    const FIELDS: [&str; 5] = [
        "detect_cycles",
        "plane_down_cycles",
        "paths_moved_cycles",
        "repair_cycles",
        "cycles_per_poll",
    ];
    let mut runs = Vec::new();
    let mut cols: Vec<Vec<u64>> = vec![Vec::new(); FIELDS.len()];
    let mut ok = true;
    if !a.json {
        println!("fail_after_ns  detect  plane_down  paths_moved  poll_done  cycles/poll");
    }
    for k in 0..u64::from(n) {
        let cfg = mroce::plane_failure::ScenarioConfig {
            fail_after_ns: base.fail_after_ns + k * a.fail_step_ns,
            ..*base
        };
        let rep = match run_soc(&cfg, image, None) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: failure at {} ns: {e}", cfg.fail_after_ns);
                return ExitCode::from(2);
            }
        };
        ok &= rep.completed && rep.data_intact && rep.paths_moved_cycles.is_some() && rep.fault_register == 0;
        let vals = [
            rep.detect_cycles,
            rep.plane_down_cycle.map(|c| c.saturating_sub(rep.fail_cycle)),
            rep.paths_moved_cycles,
            rep.repair_cycles,
            rep.cycles_per_poll,
        ];
        for (col, v) in cols.iter_mut().zip(vals) {
            col.extend(v);
        }
        if !a.json {
            println!(
                "{:>13}  {:>6}  {:>10}  {:>11}  {:>9}  {:>11}",
                cfg.fail_after_ns,
                opt(vals[0]),
                opt(vals[1]),
                opt(vals[2]),
                opt(vals[3]),
                opt(vals[4])
            );
        }
        let mut row = serde_json::Map::new();
        row.insert("fail_after_ns".into(), cfg.fail_after_ns.into());
        for (name, v) in FIELDS.iter().zip(vals) {
            row.insert((*name).into(), v.into());
        }
        row.insert("complete_and_intact".into(), (rep.completed && rep.data_intact).into());
        runs.push(serde_json::Value::Object(row));
    }
    /// Median (the middle run; the upper one of two for an even count), minimum, maximum.
    type Spread = (u64, u64, u64);
    let stat = |col: &[u64]| -> Option<Spread> {
        let mut v = col.to_vec();
        v.sort_unstable();
        Some((*v.get(v.len() / 2)?, *v.first()?, *v.last()?))
    };
    let summary: Vec<(&str, Option<Spread>)> = FIELDS.iter().copied().zip(cols.iter().map(|c| stat(c))).collect();
    if a.json {
        let mut med = serde_json::Map::new();
        for (name, st) in &summary {
            med.insert(
                (*name).into(),
                st.map_or(
                    serde_json::Value::Null,
                    |(m, lo, hi)| serde_json::json!({"median": m, "min": lo, "max": hi}),
                ),
            );
        }
        let v = serde_json::json!({
            "scenario": "plane-failure-soc-sweep",
            "runs": runs,
            "summary": med,
            "ok": ok,
        });
        println!("{v}");
    } else {
        for (name, st) in &summary {
            match st {
                Some((m, lo, hi)) => println!("{name}: median {m} (min {lo}, max {hi})"),
                None => println!("{name}: none"),
            }
        }
        println!("{n} runs; every transfer complete and intact, paths moved, FAULT 0: {ok}");
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// `mroce cosim --selftest`.
fn selftest(a: &CosimArgs) -> ExitCode {
    if !(0.0..1.0).contains(&a.loss) {
        eprintln!("error: --loss must be in [0, 1)");
        return ExitCode::from(2);
    }
    let thresh = (a.loss * 65536.0).round().min(65535.0) as u16;
    let t0 = std::time::Instant::now();
    let r = match mroce_cosim::selftest::run_selftest(thresh, a.max_cycles) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let wall_s = t0.elapsed().as_secs_f64();
    if a.json {
        let mut v = serde_json::to_value(&r).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("loss".into(), (f64::from(thresh) / 65536.0).into());
            o.insert("wall_s".into(), wall_s.into());
        }
        println!("{v}");
    } else {
        println!(
            "self-test at {:.2}% loss: {} of 4096 messages delivered in {} clocks, {} sent ({} retransmissions, \
             {} dropped, {} duplicates, {} RTOs), {} data errors; pass {}\nUART: {}",
            100.0 * f64::from(thresh) / 65536.0,
            r.delivered,
            r.cycles,
            r.sent,
            r.retransmits,
            r.dropped,
            r.duplicates,
            r.rtos,
            r.data_errors,
            r.pass,
            r.uart_line
        );
    }
    if r.pass {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Run `mroce cosim`.
pub fn run(a: &CosimArgs) -> ExitCode {
    if a.soc {
        return soc(a);
    }
    if a.selftest {
        return selftest(a);
    }
    let seed = a.seed.unwrap_or(1);
    let result = match &a.cmd {
        Some(CosimCmd::PlaneFailure {
            seed,
            fail_plane,
            fail_after_ns,
            json,
        }) => return plane_failure(*seed, *fail_plane, *fail_after_ns, *json),
        Some(CosimCmd::Replay { file, vcd, json }) => run::replay(file, vcd.clone()).map(|r| (r, *json)),
        None => {
            let Some(block) = a.block.as_deref() else {
                eprintln!("error: --block is required (rx_tracker, tx_scoreboard, path_selector, transport_core)");
                return ExitCode::from(2);
            };
            let block: BlockName = match block.parse() {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let bar = if a.transactions >= 200_000 {
                let b = ProgressBar::new(a.transactions as u64);
                if let Ok(s) = ProgressStyle::with_template("{bar:40} {pos}/{len} transactions ({per_sec}, eta {eta})")
                {
                    b.set_style(s);
                }
                Some(b)
            } else {
                None
            };
            let tick = |n: u64| {
                if let Some(b) = &bar {
                    b.set_position(n);
                }
            };
            let mut cfg = CosimConfig::new(block, a.transactions, seed);
            cfg.backend = match a.backend {
                BackendArg::Verilator => BackendKind::Verilator,
                BackendArg::Rusthdl => BackendKind::Rusthdl,
            };
            cfg.vcd = a.vcd.clone();
            cfg.compare_prefix = a.compare.unwrap_or(a.transactions.min(5000));
            cfg.artifacts = a.artifacts.clone();
            cfg.mutant = a.mutant;
            cfg.progress = Some(&tick);
            let r = run::run(&cfg);
            if let Some(b) = &bar {
                b.finish_and_clear();
            }
            r.map(|r| (r, a.json))
        }
    };
    match result {
        Ok((rep, json)) => {
            print(&rep, json);
            if rep.mismatches == 0 {
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
