//! Running the catalogue against an adapter: one verdict per case, and a summary.

use std::panic::{catch_unwind, AssertUnwindSafe};

use serde::Serialize;

use crate::adapter::Adapter;
use crate::cases::{self, Case};
use crate::harness::Tester;

/// Verdict of one case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", content = "detail", rename_all = "lowercase")]
pub enum Verdict {
    /// Every expectation held.
    Pass,
    /// The first difference.
    Fail(String),
    /// The target cannot run the case; the reason.
    #[serde(rename = "n/a")]
    NotApplicable(String),
}

/// One row of the report.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    /// Case id, e.g. `C-3.7-01`.
    pub id: &'static str,
    /// SPEC.md section it checks.
    pub section: &'static str,
    /// What it checks.
    pub title: &'static str,
    /// Outcome.
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Failures of earlier attempts when the case was retried (real-time targets only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub earlier_failures: Vec<String>,
}

/// Totals of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Target name.
    pub target: String,
    /// Cases passed.
    pub passed: usize,
    /// Cases failed.
    pub failed: usize,
    /// Cases not applicable to the target.
    pub not_applicable: usize,
}

/// Run one case.
pub fn run_case(a: &mut dyn Adapter, case: &Case) -> CaseResult {
    run_case_retrying(a, case, 0)
}

/// Run one case; a failure is retried up to `retries` times, the earlier failures kept.
pub fn run_case_retrying(a: &mut dyn Adapter, case: &Case, retries: u32) -> CaseResult {
    let mut earlier_failures = Vec::new();
    let mut verdict = verdict_of(a, case);
    while let Verdict::Fail(f) = &verdict {
        if earlier_failures.len() as u32 >= retries {
            break;
        }
        earlier_failures.push(f.clone());
        verdict = verdict_of(a, case);
    }
    CaseResult {
        id: case.id,
        section: case.section,
        title: case.title,
        verdict,
        earlier_failures,
    }
}

fn verdict_of(a: &mut dyn Adapter, case: &Case) -> Verdict {
    if let Some(why) = a.unavailable() {
        return Verdict::NotApplicable(why);
    }
    for need in case.needs {
        if let Some(why) = a.lacks(*need) {
            return Verdict::NotApplicable(why);
        }
    }
    let setup = (case.setup)();
    let r = catch_unwind(AssertUnwindSafe(|| {
        let mut t = Tester::start(a, &setup)?;
        (case.run)(&mut t)
    }));
    match r {
        Ok(Ok(())) => match a.verify() {
            Ok(Some(0)) => Verdict::NotApplicable(
                "no operation of the hardware-mapped components in this case (handled before the data path)".into(),
            ),
            Ok(_) => Verdict::Pass,
            Err(e) => Verdict::Fail(e),
        },
        Ok(Err(f)) => Verdict::Fail(f.0),
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            Verdict::Fail(format!("panicked: {msg}"))
        }
    }
}

/// Run the catalogue (or the cases whose id starts with `filter`).
pub fn run(a: &mut dyn Adapter, filter: Option<&str>) -> (Vec<CaseResult>, Summary) {
    run_retrying(a, filter, 0)
}

/// As [`run`], retrying a failed case up to `retries` times (for targets on a real clock,
/// where a descheduled tester can let an IUT timer interleave a scripted exchange; every
/// earlier failure is reported with the case).
pub fn run_retrying(a: &mut dyn Adapter, filter: Option<&str>, retries: u32) -> (Vec<CaseResult>, Summary) {
    let mut rows = Vec::new();
    let mut s = Summary {
        target: a.target().to_string(),
        ..Default::default()
    };
    for case in cases::all() {
        if filter.is_some_and(|f| !case.id.eq_ignore_ascii_case(f) && !case.id.starts_with(f)) {
            continue;
        }
        let r = run_case_retrying(a, &case, retries);
        match r.verdict {
            Verdict::Pass => s.passed += 1,
            Verdict::Fail(_) => s.failed += 1,
            Verdict::NotApplicable(_) => s.not_applicable += 1,
        }
        rows.push(r);
    }
    (rows, s)
}
