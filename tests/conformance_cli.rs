//! `mroce conformance`: rows, summary, JSON and exit status.

use std::process::Command;

fn mroce(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mroce"))
        .args(args)
        .output()
        .expect("run mroce");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn model_target_passes_with_json_summary() {
    let (code, out) = mroce(&["conformance", "--target", "model", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object");
    let s = &v["summary"];
    assert_eq!(s["target"], "model");
    assert_eq!(s["failed"], 0);
    assert_eq!(s["not_applicable"], 0);
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 60);
    assert_eq!(s["passed"].as_u64().unwrap() as usize, cases.len());
    assert!(cases
        .iter()
        .all(|c| c["verdict"] == "pass" && c["section"].as_str().unwrap().starts_with('§')));
}

#[test]
fn one_case_table_and_hdl_cases() {
    let (code, out) = mroce(&["conformance", "--target", "model", "--case", "C-3.7-01"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("C-3.7-01") && lines[0].contains(" pass "), "{out}");
    assert_eq!(
        lines[1],
        r#"{"target":"model","passed":1,"failed":0,"not_applicable":0}"#
    );
    // The hdl target replays every component operation of the case on the Verilated blocks
    // (or, built without Verilator, reports every case n/a with the install hint).
    let (code, out) = mroce(&["conformance", "--target", "hdl", "--case", "C-6.1"]);
    assert_eq!(code, 0, "{out}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("C-")).collect();
    assert!(!rows.is_empty(), "{out}");
    if out.contains("Verilator was not found") {
        assert!(rows.iter().all(|l| l.contains(" n/a ")), "{out}");
    } else {
        assert!(rows.iter().all(|l| l.contains(" pass ")), "{out}");
        assert!(out.contains(r#""failed":0,"not_applicable":0"#), "{out}");
    }
}

#[test]
fn unknown_case_is_a_usage_error() {
    let (code, _) = mroce(&["conformance", "--case", "C-99.9-01"]);
    assert_eq!(code, 2);
}
