//! Real kernel packet loss: `scripts/netns-loss.sh` builds its own network namespaces and a
//! veth pair, drops 1% of UDP 4791 datagrams in each direction with nftables, and runs the
//! listener and the sender inside them. Runs only where the machine allows it (root, `ip
//! netns`, nft); elsewhere it prints why it skipped.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/netns-loss.sh")
}

#[test]
fn one_percent_kernel_loss_in_namespaces() {
    let probe = Command::new("bash")
        .arg(script())
        .arg("--probe")
        .output()
        .expect("run bash");
    if probe.status.code() == Some(77) {
        let why = String::from_utf8_lossy(&probe.stderr);
        println!("SKIP one_percent_kernel_loss_in_namespaces: {}", why.trim());
        eprintln!("SKIP one_percent_kernel_loss_in_namespaces: {}", why.trim());
        return;
    }
    assert!(
        probe.status.success(),
        "probe: {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let out = Command::new("bash")
        .arg(script())
        .args(["--bin", env!("CARGO_BIN_EXE_mroce")])
        .args([
            "--loss-permille",
            "0,10",
            "--transport",
            "mroce,rocev2",
            "--bytes",
            "64MiB",
        ])
        .output()
        .expect("run netns-loss.sh");
    let text = String::from_utf8_lossy(&out.stdout);
    let runs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(runs.len(), 4, "{text}\n{}", String::from_utf8_lossy(&out.stderr));
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
