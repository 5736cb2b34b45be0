//! The HDL adapter's machinery, with the hardware replaced by a software replay: the whole
//! catalogue passes when the replay agrees, and a replay that disagrees fails the cases that
//! exercise the disagreeing operation.
use mroce_conformance::hdl::HdlAdapter;
use mroce_conformance::{run, Verdict};
use mroce_model::component_trace::{ComponentCalls, ComponentReplay, ReplayMismatch, SoftwareReplay};

#[test]
fn agreeing_replay_passes_every_case_that_reaches_the_components() {
    let mut a = HdlAdapter::new(
        "software-replay",
        Box::new(|| Ok(Box::new(SoftwareReplay::default()) as Box<dyn ComponentReplay>)),
        None,
    );
    let (rows, s) = run(&mut a, None);
    assert_eq!(
        s.failed,
        0,
        "{:?}",
        rows.iter().find(|r| matches!(r.verdict, Verdict::Fail(_)))
    );
    assert!(s.passed >= 60, "{s:?}");
    // Cases that stop in the decoder do not reach the blocks.
    assert!(s.not_applicable > 0, "{s:?}");
    eprintln!("{s:?}");
}

/// Replays correctly but reports a wrong result for the `n`-th SELECT of each connection.
struct WrongSelect(SoftwareReplay);
impl ComponentReplay for WrongSelect {
    fn replay(&mut self, calls: &ComponentCalls) -> Result<usize, ReplayMismatch> {
        let n = self.0.replay(calls)?;
        if calls.sel.len() > 20 {
            return Err(ReplayMismatch {
                block: "path_selector",
                index: 20,
                expected: format!("{:?}", calls.sel[20]),
                got: "a different path".into(),
            });
        }
        Ok(n)
    }
}

#[test]
fn disagreeing_replay_fails_cases() {
    let mut a = HdlAdapter::new(
        "wrong-replay",
        Box::new(|| Ok(Box::new(WrongSelect(SoftwareReplay::default())) as Box<dyn ComponentReplay>)),
        None,
    );
    let (_, s) = run(&mut a, None);
    assert!(s.failed > 0, "{s:?}");
}
