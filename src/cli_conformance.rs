//! `mroce conformance --target model|udp|hdl [--case ID] [--json] [--list]`: runs the
//! conformance suite (`mroce_conformance`) against one implementation.
//!
//! Text output: one row per case — `pass`, `fail` with the first difference, or `n/a` with
//! the reason — then the summary `{target, passed, failed, not_applicable}` as JSON. With
//! `--json`, one JSON object `{cases: [...], summary: {...}}` on stdout. On the udp target
//! (real clock) a failed case is run up to three more times by default (`--retries`); the
//! failures of the earlier attempts are printed under the case's row.
//!
//! Exit codes: 0 when no case failed, 1 when at least one failed, 2 for usage errors (unknown
//! target or case id).

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use mroce_conformance::{cases, runner, Verdict};

/// Implementation under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// The reference model on a virtual clock.
    Model,
    /// The UDP runtime (`mroce_udp::Nic`) over real loopback sockets.
    Udp,
    /// The co-simulated HDL transport core.
    Hdl,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Model => "model",
            Target::Udp => "udp",
            Target::Hdl => "hdl",
        }
    }
}

/// `mroce conformance` arguments.
#[derive(Args, Debug)]
pub struct ConformanceArgs {
    /// Implementation to test.
    #[arg(long, value_enum, default_value_t = Target::Model)]
    target: Target,
    /// Run only this case (an id such as C-3.7-01, or an id prefix such as C-6.1).
    #[arg(long = "case", value_name = "ID")]
    case: Option<String>,
    /// Print one JSON object (cases and summary) instead of the table.
    #[arg(long)]
    json: bool,
    /// Retry a failed case this many times [default: 3 for udp (real clock), 0 otherwise];
    /// earlier failures are printed with the case.
    #[arg(long)]
    retries: Option<u32>,
    /// List the catalogue (id, section, title) and exit.
    #[arg(long)]
    list: bool,
}

/// Run `mroce conformance`.
pub fn run(a: &ConformanceArgs) -> ExitCode {
    let all = cases::all();
    // Write errors (a closed pipe) are ignored: the exit status still reports the verdict.
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if a.list {
        for c in &all {
            let _ = writeln!(out, "{:<10} {:<10} {}", c.id, c.section, c.title);
        }
        let _ = writeln!(out, "{} cases", all.len());
        return ExitCode::SUCCESS;
    }
    if let Some(id) = &a.case {
        if !all
            .iter()
            .any(|c| c.id.eq_ignore_ascii_case(id) || c.id.starts_with(id.as_str()))
        {
            eprintln!("mroce conformance: no case {id:?} (see --list)");
            return ExitCode::from(2);
        }
    }
    let Some(mut adapter) = mroce_conformance::adapter_for(a.target.name()) else {
        eprintln!("mroce conformance: unknown target {}", a.target.name());
        return ExitCode::from(2);
    };
    let filter = a
        .case
        .as_deref()
        .map(|id| all.iter().find(|c| c.id.eq_ignore_ascii_case(id)).map_or(id, |c| c.id));
    let retries = a.retries.unwrap_or_else(|| adapter.default_retries());
    let (rows, summary) = runner::run_retrying(adapter.as_mut(), filter, retries);
    if a.json {
        let v = serde_json::json!({ "cases": rows, "summary": summary });
        let _ = writeln!(out, "{v}");
    } else {
        for r in &rows {
            let (word, detail) = match &r.verdict {
                Verdict::Pass => ("pass", String::new()),
                Verdict::Fail(d) => ("fail", format!(": {d}")),
                Verdict::NotApplicable(d) => ("n/a", format!(": {d}")),
            };
            let _ = writeln!(out, "{:<10} {:<10} {:<5} {}{}", r.id, r.section, word, r.title, detail);
            for f in &r.earlier_failures {
                let _ = writeln!(out, "{:<10} {:<10} {:<5} earlier attempt failed: {f}", "", "", "");
            }
        }
        match serde_json::to_string(&summary) {
            Ok(s) => {
                let _ = writeln!(out, "{s}");
            }
            Err(e) => eprintln!("mroce conformance: cannot serialise the summary: {e}"),
        }
    }
    if summary.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
