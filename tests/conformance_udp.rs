//! The conformance suite against the UDP runtime (`mroce_udp::Nic`) on loopback: every case
//! that applies passes; the others are n/a with a reason.
//!
//! Real sockets on a shared host: the IUT's timers keep running while the tester works, and
//! before its first RTT sample a path's tail-loss probe fires ~1 ms after a send (one
//! pre-sample SRTT, `rto_init_ns` / 2, before the adapter's 2 ms initial RTO), so a tester
//! descheduled longer can see an extra probe. A failed case is therefore run up to three more
//! times (the adapter's default, as `mroce conformance --target udp` does); a real fault fails
//! every time.

use mroce_conformance::udp::UdpAdapter;
use mroce_conformance::{run_retrying, Adapter, Verdict};

#[test]
fn udp_runtime_passes_every_applicable_case() {
    let mut a = UdpAdapter::new();
    let retries = a.default_retries();
    let (rows, s) = run_retrying(&mut a, None, retries);
    for r in &rows {
        if let Verdict::NotApplicable(why) = &r.verdict {
            assert!(!why.is_empty(), "{}: n/a without a reason", r.id);
        }
        for f in &r.earlier_failures {
            eprintln!("udp: {} failed on an earlier run: {f}", r.id);
        }
    }
    let bad: Vec<String> = rows
        .iter()
        .filter(|r| matches!(r.verdict, Verdict::Fail(_)))
        .map(|r| format!("{} ({}) {}: {:?}", r.id, r.section, r.title, r.verdict))
        .collect();
    eprintln!("udp: {s:?}");
    assert!(
        bad.is_empty(),
        "{} of {} cases failed on every run on the UDP runtime:\n{}",
        bad.len(),
        rows.len(),
        bad.join("\n")
    );
    assert!(s.passed >= 90, "only {} cases pass on the UDP runtime", s.passed);
}
