//! The registers that miss the target clock, from nextpnr's `--detailed-timing-report`.
//!
//! nextpnr prints one critical path per clock, and which path that is moves with the placement
//! seed. The detailed report gives the arrival time of every timing endpoint (flip-flop and
//! LUT-RAM write inputs, clock-to-Q and routing included; the worst equals the critical path).
//! Counting the endpoints that arrive after the period, grouped by the register they belong
//! to, says how much of a block misses the goal and where: a steadier measure than one path.

use serde::Serialize;
use serde_json::Value;

/// The endpoints of one register (or LUT RAM) that arrive after the period.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LateRegister {
    /// The register's name in the netlist (rust-hdl's hierarchy, e.g. `sel.inflight$3`).
    pub register: String,
    /// Its endpoints that arrive after the period (one per bit and port).
    pub late: u64,
    /// The latest arrival among them, ns.
    pub worst_ns: f64,
}

/// Every endpoint's arrival against one clock period.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LateSummary {
    /// The period the arrivals are compared with, ns.
    pub period_ns: f64,
    /// Timing endpoints in the report.
    pub endpoints: u64,
    /// Endpoints whose data arrives after the period.
    pub late_endpoints: u64,
    /// The registers with late endpoints, latest first.
    pub registers: Vec<LateRegister>,
}

/// The register a packed cell belongs to: nextpnr and yosys append the primitive's name
/// (`.q_TRELLIS_FF_Q_15`, `.mem.0.9$DPRAM_COMB0`) to the RTL name.
pub fn register_of(cell: &str) -> &str {
    let cut = [".q_TRELLIS", "_TRELLIS", ".mem.", "$DPRAM"]
        .iter()
        .filter_map(|m| cell.find(m))
        .min()
        .unwrap_or(cell.len());
    &cell[..cut]
}

/// Summarize a nextpnr `--report` JSON written with `--detailed-timing-report`. `None` when the
/// report has no per-net timing (written without that flag).
pub fn summarize(report: &Value, period_ns: f64) -> Option<LateSummary> {
    let nets = report.get("detailed_net_timings")?.as_array()?;
    let mut endpoints = 0u64;
    let mut late: std::collections::BTreeMap<String, (u64, f64)> = Default::default();
    for net in nets {
        let Some(ends) = net.get("endpoints").and_then(Value::as_array) else {
            continue;
        };
        for e in ends {
            // `delay` is [min, max] arrival; the setup check is against the max
            let arrival = e
                .get("delay")
                .and_then(Value::as_array)
                .and_then(|d| d.last())
                .and_then(Value::as_f64);
            let (Some(arrival), Some(cell)) = (arrival, e.get("cell").and_then(Value::as_str)) else {
                continue;
            };
            endpoints += 1;
            if arrival > period_ns {
                let g = late.entry(register_of(cell).to_string()).or_insert((0, 0.0));
                g.0 += 1;
                g.1 = g.1.max(arrival);
            }
        }
    }
    let mut registers: Vec<LateRegister> = late
        .into_iter()
        .map(|(register, (late, worst_ns))| LateRegister {
            register,
            late,
            worst_ns,
        })
        .collect();
    registers.sort_by(|a, b| b.worst_ns.total_cmp(&a.worst_ns).then(a.register.cmp(&b.register)));
    Some(LateSummary {
        period_ns,
        endpoints,
        late_endpoints: registers.iter().map(|r| r.late).sum(),
        registers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_names_drop_the_primitive() {
        assert_eq!(register_of("sel.inflight$3.q_TRELLIS_FF_Q_15"), "sel.inflight$3");
        assert_eq!(register_of("c_acked.ev$d_TRELLIS_FF_Q"), "c_acked.ev$d");
        assert_eq!(register_of("tx.fifo.mem.0.9$DPRAM_COMB0"), "tx.fifo");
        assert_eq!(register_of("plain"), "plain");
    }

    #[test]
    fn counts_late_endpoints_per_register_latest_first() {
        let r: Value = serde_json::from_str(
            r#"{"detailed_net_timings": [
                {"net": "a", "endpoints": [
                    {"cell": "rx.ds$5.q_TRELLIS_FF_Q_1", "port": "M", "delay": [2.0, 10.5]},
                    {"cell": "rx.ds$5.q_TRELLIS_FF_Q_2", "port": "M", "delay": [2.0, 10.9]},
                    {"cell": "sel.rr.q_TRELLIS_FF_Q_7", "port": "DI", "delay": [1.0, 9.0]}]},
                {"net": "b", "endpoints": [
                    {"cell": "sel.total.q_TRELLIS_FF_Q", "port": "CE", "delay": [3.0, 10.2]},
                    {"cell": "malformed", "port": "DI"}]},
                {"net": "c"}
            ]}"#,
        )
        .unwrap();
        let s = summarize(&r, 10.0).unwrap();
        assert_eq!(s.endpoints, 4);
        assert_eq!(s.late_endpoints, 3);
        assert_eq!(
            s.registers,
            vec![
                LateRegister {
                    register: "rx.ds$5".into(),
                    late: 2,
                    worst_ns: 10.9
                },
                LateRegister {
                    register: "sel.total".into(),
                    late: 1,
                    worst_ns: 10.2
                },
            ]
        );
        // a report written without --detailed-timing-report
        assert_eq!(summarize(&serde_json::json!({"fmax": {}}), 10.0), None);
    }
}
