//! `mroce cosim`: the `mroce-hdl` blocks in lockstep with the model (crate `mroce-cosim`).
//!
//! - `mroce cosim --block B --transactions N --seed S [--json] [--vcd FILE] [--backend B]`:
//!   a seeded random stream through the Verilated block (or rust-hdl's simulator) and the model
//!   components, every record compared; prints `{block, transactions, mismatches, cycles,
//!   cycles_per_s, wall_s, ...}` with rust-hdl's figures on a prefix of the same stream. On a
//!   mismatch: the transaction, both records, a shrunk replay file and a VCD of its last cycles.
//! - `mroce cosim replay FILE [--vcd FILE]`: rerun a replay file.
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
    /// Seed of the stream and of the valid/ready stalls.
    #[arg(long, default_value_t = 1)]
    seed: u64,
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
}

#[derive(Subcommand, Debug)]
enum CosimCmd {
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

/// Run `mroce cosim`.
pub fn run(a: &CosimArgs) -> ExitCode {
    let result = match &a.cmd {
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
            let mut cfg = CosimConfig::new(block, a.transactions, a.seed);
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
