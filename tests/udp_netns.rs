//! Real kernel packet loss and ECN marking: `scripts/netns-loss.sh` builds its own network
//! namespaces and a veth pair, drops 1% of UDP 4791 datagrams in each direction with
//! nftables (or sets CE on the data of some source ports), and runs the listener and the
//! sender inside them. Runs only where the machine allows it (root, `ip netns`, nft);
//! elsewhere it prints why it skipped.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/netns-loss.sh")
}

/// Runs the script with `args` and returns its JSON lines, or `None` (after saying why) where
/// this machine cannot create namespaces.
fn run_script(test: &str, args: &[&str]) -> Option<(Vec<Value>, String)> {
    let probe = Command::new("bash")
        .arg(script())
        .arg("--probe")
        .output()
        .expect("run bash");
    if probe.status.code() == Some(77) {
        let why = String::from_utf8_lossy(&probe.stderr);
        println!("SKIP {test}: {}", why.trim());
        eprintln!("SKIP {test}: {}", why.trim());
        return None;
    }
    assert!(
        probe.status.success(),
        "probe: {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let out = Command::new("bash")
        .arg(script())
        .args(["--bin", env!("CARGO_BIN_EXE_mroce")])
        .args(args)
        .output()
        .expect("run netns-loss.sh");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let runs = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    Some((runs, format!("{text}\n{}", String::from_utf8_lossy(&out.stderr))))
}

#[test]
fn one_percent_kernel_loss_in_namespaces() {
    let Some((runs, text)) = run_script(
        "one_percent_kernel_loss_in_namespaces",
        &[
            "--loss-permille",
            "0,10",
            "--transport",
            "mroce,rocev2",
            "--bytes",
            "64MiB",
        ],
    ) else {
        return;
    };
    assert_eq!(runs.len(), 4, "{text}");
    let find = |loss: u64, t: &str| {
        runs.iter()
            .find(|r| r["loss_permille"] == loss && r["transport"] == t)
            .unwrap_or_else(|| panic!("{text}"))
    };
    for (loss, t) in [(0, "mroce"), (10, "mroce"), (0, "rocev2"), (10, "rocev2")] {
        let r = find(loss, t);
        assert_eq!(r["sender"]["integrity"], "ok", "{t} at {loss} per mille: {r}");
        assert_eq!(r["listener"]["integrity"], "ok", "{t} at {loss} per mille: {r}");
        if loss > 0 {
            // The kernel really dropped about 1% (both directions; the counters say so).
            let (seen, dropped) = (r["nft_seen"].as_f64().unwrap(), r["nft_dropped"].as_f64().unwrap());
            assert!(dropped > 0.003 * seen && dropped < 0.03 * seen, "{dropped} of {seen}");
        }
    }
    let g = |loss, t| find(loss, t)["sender"]["goodput_gbps"].as_f64().unwrap();
    println!(
        "netns, 64 MiB, 1% kernel loss: mroce {:.2} -> {:.2} Gb/s (ratio {:.2}); rocev2 {:.2} -> {:.2} Gb/s (ratio {:.2})",
        g(0, "mroce"),
        g(10, "mroce"),
        g(10, "mroce") / g(0, "mroce"),
        g(0, "rocev2"),
        g(10, "rocev2"),
        g(10, "rocev2") / g(0, "rocev2"),
    );
}

/// The kernel sets CE on the data of a quarter of the UDP source ports, as a congested switch
/// would on the routes those entropies hash to. The path selector's re-route verdicts move the
/// marked paths to fresh source ports until none is marked; with re-routing off they stay,
/// marked, at the floor of their windows. Asserted: every mark the kernel set reaches the
/// listener as CE and comes back in the ACKs, the moving policies move paths and `off` never
/// does, and every byte arrives intact.
#[test]
fn ce_marked_source_ports_are_left_in_namespaces() {
    let Some((runs, text)) = run_script(
        "ce_marked_source_ports_are_left_in_namespaces",
        &[
            "--loss-permille",
            "0",
            "--transport",
            "mroce",
            "--ce-port-mask",
            "3",
            "--ecn-reroute",
            "every,one,off",
            "--bytes",
            "128MiB",
        ],
    ) else {
        return;
    };
    assert_eq!(runs.len(), 3, "{text}");
    let mut marked_share = Vec::new();
    for (run, policy) in runs.iter().zip(["every", "one", "off"]) {
        assert_eq!(run["ecn_reroute"], policy, "{text}");
        assert_eq!(run["sender"]["integrity"], "ok", "{policy}: {run}");
        assert_eq!(run["listener"]["integrity"], "ok", "{policy}: {run}");
        let marked = run["nft_ce_marked"].as_u64().unwrap();
        let seen = run["nft_seen"].as_u64().unwrap();
        let ce_received = run["listener"]["counters"]["ce_received"].as_u64().unwrap();
        let echoes = run["sender"]["counters"]["ecn_echoes"].as_u64().unwrap();
        let reroutes = run["sender"]["counters"]["ecn_reroutes"].as_u64().unwrap();
        // Every frame the kernel marked reached the listener's transport as CE (the ICRC does
        // not cover the ECN bits), and the ACKs carried the count back.
        assert!(
            marked > 0 && ce_received > 0 && ce_received <= marked,
            "{policy}: {run}"
        );
        assert!(echoes > 0, "{policy}: {run}");
        if policy == "off" {
            assert_eq!(reroutes, 0, "{run}");
        } else {
            assert!(reroutes > 0, "{policy}: {run}");
        }
        marked_share.push(marked as f64 / seen as f64);
    }
    // The shares are printed, not compared. Until the per-path slow start (2026-12-06) `off`
    // left ~3 % of the datagrams marked against ~0.5 % for the moving policies. Since then, under
    // `off` the marked paths sit at the floor of their windows while the unmarked ones grow
    // to the largest window, so `off` itself leaves little marked, and how little varies
    // from run to run on real sockets: 0.0104-0.0498 in five runs, against 0.0027-0.0142 for
    // `every` and `one` (one CI run had `every` at 0.0099 and `off` at 0.0104). The
    // policies' effect is asserted without the kernel's timing: conformance C-6.3-01 (model,
    // UDP and HDL targets) and tests/pipe_cli.rs.
    println!(
        "netns, 128 MiB, CE on ports with (port & 3) == 0: share of datagrams marked: every {:.4}, one {:.4}, off {:.4}",
        marked_share[0], marked_share[1], marked_share[2]
    );
}
