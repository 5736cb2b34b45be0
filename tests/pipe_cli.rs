//! The `mroce pipe` command line: JSON output, human output, and usage errors.

use std::process::Command;

fn mroce(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mroce"))
        .args(args)
        .output()
        .expect("run mroce")
}

fn first_available() -> Option<&'static str> {
    mroce::transports::TransportKind::ALL
        .into_iter()
        .find(|k| mroce::transports::is_available(*k))
        .map(|k| k.as_str())
}

#[test]
fn json_is_exactly_one_object() {
    let Some(t) = first_available() else { return };
    let out = mroce(&[
        "pipe",
        "--transport",
        t,
        "--paths",
        "16",
        "--loss",
        "0",
        "--bytes",
        "1MiB",
        "--seed",
        "7",
        "--json",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.trim_end().lines().count(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["transport"], t);
    assert_eq!(v["bytes"], 1 << 20);
    assert_eq!(v["integrity"], "ok");
    assert_eq!(v["seed"], 7);
}

#[test]
fn human_summary_without_json() {
    let Some(t) = first_available() else { return };
    let out = mroce(&[
        "pipe",
        "--transport",
        t,
        "--bytes",
        "256KiB",
        "--msg-size",
        "64KiB",
        "--streams",
        "2",
    ]);
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("integrity ok") && s.contains("Gb/s"), "{s}");
}

#[test]
fn usage_errors_exit_2_without_panicking() {
    for args in [
        &["pipe", "--bytes", "12QB"][..],
        &["pipe", "--bytes", "1.5"],
        &["pipe", "--transport", "tcp"],
        &["pipe", "--loss", "1.5"],
        &["pipe", "--loss", "abc"],
        &["pipe", "--planes", "9"],
        &["pipe", "--streams", "0"],
        &["pipe", "--msg-size", "0"],
        &["pipe", "--ecn-reroute", "sometimes"],
        &["nonsense"],
        &[],
    ] {
        let out = mroce(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.is_empty() && !err.contains("panicked"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn help_succeeds() {
    let out = mroce(&["pipe", "--help"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("--transport"));
}

/// `--ecn-reroute` reaches the transport: on lanes chosen by a CRC hash (paths collide), moving
/// every path the ECN verdict names drains paths often enough to cost goodput, while `one` and
/// `off` keep them in service. Every run delivers every byte intact (simulated time: the
/// figures are deterministic for the seed).
#[test]
fn ecn_reroute_policy_reaches_the_pipe() {
    if !mroce::transports::is_available(mroce::transports::TransportKind::Mroce) {
        return;
    }
    let goodput = |policy: &str| {
        let out = mroce(&[
            "pipe",
            "--ecmp",
            "crc",
            "--ecn-reroute",
            policy,
            "--bytes",
            "16MiB",
            "--seed",
            "1",
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{policy}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["integrity"], "ok", "{policy}");
        assert_eq!(v["complete"], true, "{policy}");
        v["goodput_gbps"].as_f64().unwrap()
    };
    let (every, one, off) = (goodput("every"), goodput("one"), goodput("off"));
    assert!(one > every && off > every, "every {every}, one {one}, off {off} Gb/s");
}
