//! `mroce udp listen|send|blast` as two processes over loopback: JSON reports, content
//! checks, the raw-UDP baseline, impairment on both ends, pcap files, and the errors a user
//! sees when the listener is missing or disappears.
//!
//! Each test uses its own 127.x.y.z addresses; the tests run one at a time (two busy
//! processes per test are enough for the machine).

use std::io::Read;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::thread::sleep;
use std::time::{Duration, Instant};

use serde_json::Value;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn mroce() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mroce"))
}

fn listener(bind: &str, extra: &[&str]) -> Child {
    let c = mroce()
        .args(["udp", "listen", "--bind", bind, "--json", "--exit-after-s", "60"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the listener");
    sleep(Duration::from_millis(150));
    c
}

fn send(to: &str, extra: &[&str]) -> Output {
    mroce()
        .args(["udp", "send", "--to", to, "--json"])
        .args(extra)
        .output()
        .expect("run the sender")
}

fn json_lines(s: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(s)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn finish(c: Child) -> Output {
    let out = c.wait_with_output().expect("listener exits");
    assert!(
        out.status.success(),
        "listener failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn send_reports_goodput_integrity_and_the_blast_baseline() {
    let _g = serial();
    let l = listener("127.71.0.1:4791", &[]);
    let out = send(
        "127.71.0.1:4791",
        &["--bytes", "32MiB", "--paths", "16", "--compare-blast"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = &json_lines(&out.stdout)[0];
    for k in [
        "transport",
        "bytes",
        "goodput_gbps",
        "retransmits",
        "integrity",
        "wall_s",
    ] {
        assert!(v.get(k).is_some(), "missing {k}: {v}");
    }
    assert_eq!(v["transport"], "mroce");
    assert_eq!(v["bytes"], 32 << 20);
    assert_eq!(v["integrity"], "ok");
    assert_eq!(v["checked_bytes"], 32 << 20);
    assert!(v["goodput_gbps"].as_f64().unwrap() > 0.0);
    let blast = v["blast_gbps"].as_f64().expect("the listener answered the blast");
    assert_eq!(
        v["blast"]["received"], v["blast"]["datagrams"],
        "loopback loses nothing here: {v}"
    );
    println!(
        "loopback 32 MiB: mroce {:.2} Gb/s, raw UDP blast {:.2} Gb/s, ratio {:.2}",
        v["goodput_gbps"].as_f64().unwrap(),
        blast,
        v["ratio_to_blast"].as_f64().unwrap_or(0.0)
    );
    let lo = finish(l);
    let lines = json_lines(&lo.stdout);
    assert_eq!(lines.len(), 2, "one blast and one transfer: {lines:?}");
    assert_eq!(lines[0]["kind"], "blast");
    assert_eq!(lines[1]["integrity"], "ok");
    assert_eq!(lines[1]["delivered_bytes"], 32 << 20);
    assert_eq!(lines[1]["peer"], "127.71.0.2");
}

#[test]
fn rocev2_between_processes() {
    let _g = serial();
    let l = listener("127.72.0.1:4791", &["--transport", "rocev2"]);
    let out = send("127.72.0.1:4791", &["--bytes", "8MiB", "--transport", "rocev2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = &json_lines(&out.stdout)[0];
    assert_eq!(v["transport"], "rocev2");
    assert_eq!(v["integrity"], "ok");
    assert_eq!(json_lines(&finish(l).stdout)[0]["integrity"], "ok");
}

#[test]
fn loss_reordering_and_duplication_on_both_ends() {
    let _g = serial();
    let imp = ["--loss", "0.05", "--reorder", "0.05", "--dup", "0.05"];
    let l = listener("127.73.0.1:4791", &imp);
    let mut args = vec!["--bytes", "16MiB", "--paths", "16"];
    args.extend(imp);
    let out = send("127.73.0.1:4791", &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = &json_lines(&out.stdout)[0];
    assert_eq!(v["integrity"], "ok");
    assert!(v["retransmits"].as_u64().unwrap() > 0);
    assert!(v["runtime"]["impair_lost"].as_u64().unwrap() > 0);
    let lv = &json_lines(&finish(l).stdout)[0];
    assert_eq!(lv["integrity"], "ok");
    assert!(lv["runtime"]["impair_duplicated"].as_u64().unwrap() > 0);
    assert!(lv["runtime"]["impair_reordered"].as_u64().unwrap() > 0);
}

/// Records of a classic pcap file with nanosecond timestamps.
fn pcap_records(path: &std::path::Path) -> Vec<Vec<u8>> {
    let mut b = Vec::new();
    std::fs::File::open(path).unwrap().read_to_end(&mut b).unwrap();
    assert_eq!(&b[0..4], &0xA1B2_3C4Du32.to_le_bytes());
    let mut off = 24;
    let mut out = Vec::new();
    while off + 16 <= b.len() {
        let incl = u32::from_le_bytes(b[off + 8..off + 12].try_into().unwrap()) as usize;
        out.push(b[off + 16..off + 16 + incl].to_vec());
        off += 16 + incl;
    }
    out
}

#[test]
fn pcap_on_both_ends_holds_valid_frames() {
    let _g = serial();
    let dir = std::env::temp_dir().join(format!("mroce-udp-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (lp, sp) = (dir.join("listen.pcap"), dir.join("send.pcap"));
    let l = listener("127.74.0.1:4791", &["--pcap", lp.to_str().unwrap()]);
    let out = send("127.74.0.1:4791", &["--bytes", "1MiB", "--pcap", sp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    finish(l);
    for p in [&lp, &sp] {
        let recs = pcap_records(p);
        assert!(recs.len() > 256, "{}: {} frames", p.display(), recs.len());
        for f in &recs {
            mroce_model::wire::decode_frame(f).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn no_listener_is_a_clear_error() {
    let _g = serial();
    let t0 = Instant::now();
    let out = send("127.75.0.1:4791", &["--bytes", "1MiB", "--connect-timeout-s", "0.5"]);
    assert_eq!(out.status.code(), Some(1));
    let v = &json_lines(&out.stdout)[0];
    assert!(
        v["error"].as_str().unwrap().contains("no answer from 127.75.0.1:4791"),
        "{v}"
    );
    assert_eq!(v["integrity"], "incomplete");
    assert!(t0.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_listener_that_disappears_ends_the_transfer_with_an_error() {
    let _g = serial();
    let mut l = listener("127.76.0.1:4791", &[]);
    let sender = mroce()
        .args([
            "udp",
            "send",
            "--to",
            "127.76.0.1:4791",
            "--json",
            "--bytes",
            "1GiB",
            "--peer-timeout-s",
            "1",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the listener once data is landing in its memory (its resident size grows).
    let status = format!("/proc/{}/status", l.id());
    let t0 = Instant::now();
    loop {
        let rss_kb = std::fs::read_to_string(&status)
            .ok()
            .and_then(|s| s.lines().find(|x| x.starts_with("VmRSS:")).map(str::to_string))
            .and_then(|x| x.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()))
            .unwrap_or(0);
        if rss_kb > 64 << 10 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "the transfer never started");
        sleep(Duration::from_millis(5));
    }
    l.kill().unwrap();
    let _ = l.wait();
    let t_kill = Instant::now();
    let out = sender.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(t_kill.elapsed() < Duration::from_secs(5), "the sender noticed late");
    let v = &json_lines(&out.stdout)[0];
    let e = v["error"].as_str().unwrap();
    assert!(
        e.contains("stopped answering") || e.contains("closed it") || e.contains("sent nothing"),
        "{e}"
    );
    assert_eq!(v["integrity"], "incomplete");
}
