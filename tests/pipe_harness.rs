//! The pipe harness end to end: integrity under impairments for every wired transport,
//! pcap output, determinism, and the driver itself with a null transport.

mod pipe_support;

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use mroce::pipe::{self, PipeConfig, PipeError, PipeReport};
use mroce::transports::{is_available, TransportKind};
use mroce_model::wire;
use pipe_support::NullTransport;

/// Longest a single 4 MiB run may take in wall time before the test calls it a hang.
const WATCHDOG: Duration = Duration::from_secs(120);

/// Run `cfg` on a worker thread so that a transport stuck in an endless loop fails the test
/// instead of hanging the suite.
fn run_guarded(cfg: PipeConfig) -> Result<PipeReport, PipeError> {
    let (tx, rx) = mpsc::channel();
    let what = format!("{cfg:?}");
    std::thread::spawn(move || {
        let _ = tx.send(pipe::run(&cfg));
    });
    match rx.recv_timeout(WATCHDOG) {
        Ok(r) => r,
        Err(_) => panic!("pipe run did not finish within {WATCHDOG:?} of wall time (transport livelock?): {what}"),
    }
}

fn kinds() -> Vec<TransportKind> {
    let mut v = Vec::new();
    for k in TransportKind::ALL {
        if is_available(k) {
            v.push(k);
        } else {
            eprintln!("WARNING: transport {k} is not wired into make_transport; its pipe tests are skipped");
        }
    }
    v
}

fn base(kind: TransportKind) -> PipeConfig {
    PipeConfig {
        transport: kind,
        bytes: 4 << 20,
        msg_size: 256 << 10,
        seed: 7,
        ..PipeConfig::default()
    }
}

fn assert_ok(r: &PipeReport, what: &str) {
    assert_eq!(r.integrity, "ok", "{what}: {r:#?}");
    assert!(r.complete, "{what}");
    assert_eq!(r.delivered_bytes, r.bytes, "{what}");
    assert_eq!(r.failure, None, "{what}");
    assert!(r.goodput_gbps > 0.0, "{what}");
}

#[test]
fn lossless_transfer_is_intact() {
    for k in kinds() {
        let r = run_guarded(base(k)).unwrap();
        assert_ok(&r, &format!("{k} lossless"));
        assert_eq!(r.transport, k.as_str());
        assert_eq!(r.drops_loss, 0);
        assert_eq!(r.corrupted + r.duplicated + r.reordered, 0);
        assert!(r.packets <= r.frames_tx && r.data_packets > 0 && r.data_packets <= r.packets);
    }
}

#[test]
fn one_percent_loss_transfer_is_intact() {
    for k in kinds() {
        let r = run_guarded(PipeConfig { loss: 0.01, ..base(k) }).unwrap();
        assert_ok(&r, &format!("{k} 1% loss"));
        assert!(
            r.drops_loss > 0,
            "{k}: 1% loss over thousands of frames dropped nothing"
        );
        assert!(r.retransmits > 0, "{k}: losses but no retransmits counted");
    }
}

#[test]
fn reorder_dup_corrupt_transfer_is_intact() {
    for k in kinds() {
        let cfg = PipeConfig {
            loss: 0.01,
            reorder: 0.05,
            dup: 0.01,
            corrupt: 0.01,
            ..base(k)
        };
        let r = run_guarded(cfg).unwrap();
        assert_ok(&r, &format!("{k} reorder+dup+corrupt"));
        assert!(r.reordered > 0 && r.duplicated > 0 && r.corrupted > 0, "{r:#?}");
        // Every corruption lands where only the ICRC can catch it.
        assert_eq!(r.corrupted_icrc_detectable, r.corrupted);
        let icrc_rejects = r.counters_sender.get("bad_icrc").copied().unwrap_or(0)
            + r.counters_receiver.get("bad_icrc").copied().unwrap_or(0);
        if r.counters_receiver.contains_key("bad_icrc") {
            // Corrupted frames that were not also lost must be rejected by the ICRC.
            assert!(
                icrc_rejects > 0 && icrc_rejects <= r.corrupted,
                "{k}: {icrc_rejects} ICRC rejects for {} corruptions",
                r.corrupted
            );
        }
    }
}

#[test]
fn multi_plane_transfer_is_intact() {
    for k in kinds() {
        let r = run_guarded(PipeConfig {
            planes: 4,
            loss: 0.01,
            ..base(k)
        })
        .unwrap();
        assert_ok(&r, &format!("{k} 4 planes"));
        assert_eq!(r.lanes, 4, "default lanes per plane = paths / planes");
    }
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mroce-{}-{}-{name}", std::process::id(), line!()))
}

struct Pcap {
    magic: u32,
    version: (u16, u16),
    snaplen: u32,
    linktype: u32,
    records: Vec<(u64, Vec<u8>)>,
}

fn parse_pcap(b: &[u8]) -> Pcap {
    let u32le = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let u16le = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap());
    assert!(b.len() >= 24, "no global header");
    let mut p = Pcap {
        magic: u32le(0),
        version: (u16le(4), u16le(6)),
        snaplen: u32le(16),
        linktype: u32le(20),
        records: Vec::new(),
    };
    assert_eq!(u32le(8), 0, "thiszone");
    assert_eq!(u32le(12), 0, "sigfigs");
    let mut o = 24;
    while o < b.len() {
        assert!(o + 16 <= b.len(), "truncated record header");
        let (sec, frac, incl, orig) = (u32le(o), u32le(o + 4), u32le(o + 8) as usize, u32le(o + 12) as usize);
        assert!(frac < 1_000_000_000);
        assert_eq!(incl, orig, "frames are never truncated");
        assert!(o + 16 + incl <= b.len(), "truncated record");
        p.records.push((
            u64::from(sec) * 1_000_000_000 + u64::from(frac),
            b[o + 16..o + 16 + incl].to_vec(),
        ));
        o += 16 + incl;
    }
    p
}

#[test]
fn pcap_records_every_transmitted_frame() {
    for k in kinds() {
        let path = temp_path(&format!("{k}.pcap"));
        let r = run_guarded(PipeConfig {
            loss: 0.01,
            corrupt: 0.01,
            pcap: Some(path.clone()),
            ..base(k)
        })
        .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let p = parse_pcap(&bytes);
        assert_eq!(p.magic, mroce::pcap::MAGIC_NANOS);
        assert_eq!(p.version, (2, 4));
        assert_eq!(p.linktype, mroce::pcap::LINKTYPE_ETHERNET);
        assert!(p.snaplen >= 65_535);
        assert_eq!(
            p.records.len() as u64,
            r.frames_tx,
            "{k}: one record per transmitted frame"
        );
        assert!(p.records.windows(2).all(|w| w[0].0 <= w[1].0), "timestamps go forward");
        let last_us = p.records.last().unwrap().0 as f64 / 1e3;
        assert!(last_us <= r.sim_time_us + 1e-3);
        // Captured before the link: none of them is corrupted.
        for (_, f) in &p.records {
            wire::decode_frame(f).unwrap_or_else(|e| panic!("{k}: captured frame does not decode: {e}"));
        }
    }
}

#[test]
fn same_seed_same_report() {
    for k in kinds() {
        let cfg = PipeConfig {
            loss: 0.02,
            reorder: 0.02,
            dup: 0.01,
            ..base(k)
        };
        let a = run_guarded(cfg.clone()).unwrap();
        let b = run_guarded(cfg.clone()).unwrap();
        assert_eq!(a.without_wall_times(), b.without_wall_times(), "{k}");
        let c = run_guarded(PipeConfig { seed: 8, ..cfg }).unwrap();
        assert_ne!(
            a.without_wall_times(),
            c.without_wall_times(),
            "{k}: the seed changes nothing"
        );
    }
}

#[test]
fn json_report_has_the_documented_fields() {
    let k = kinds().into_iter().next().expect("no transport is wired");
    let r = run_guarded(PipeConfig {
        bytes: 1 << 20,
        ..base(k)
    })
    .unwrap();
    let v: serde_json::Value = serde_json::to_value(&r).unwrap();
    for f in [
        "transport",
        "loss",
        "paths",
        "lanes",
        "bytes",
        "delivered_bytes",
        "goodput_gbps",
        "retransmits",
        "spurious_retransmits",
        "integrity",
        "sim_time_us",
        "wall_s",
        "packets",
        "packets_per_s",
        "data_packets_per_s",
        "drops_loss",
        "drops_queue",
        "ecn_marks",
        "corrupted",
        "seed",
        "counters_sender",
        "counters_receiver",
    ] {
        assert!(v.get(f).is_some(), "missing {f}");
    }
    assert!(v["counters_sender"].is_object());
}

fn null_cfg() -> PipeConfig {
    // One lane per plane: the null transport has no congestion control, so the lane must
    // keep up with the port.
    PipeConfig {
        lanes: Some(1),
        bytes: 8 << 20,
        msg_size: 1 << 20,
        streams: 4,
        ..PipeConfig::default()
    }
}

#[test]
fn driver_alone_with_null_transport() {
    let mut factory =
        |addr, _seed| Ok(Box::new(NullTransport::new(addr)) as Box<dyn mroce_model::transport::Transport>);
    let r = pipe::run_with(&null_cfg(), &mut factory).unwrap();
    assert!(r.complete, "{r:#?}");
    assert_eq!(r.transport, "null");
    // Destination memory is never written by the null transport: content check says so.
    assert_eq!(r.integrity, "corrupt");
    assert_eq!(r.frames_tx, 2048);
    assert_eq!(r.packets, 2048);
    assert_eq!(r.data_packets, 2048);
    assert_eq!(r.drops_queue, 0);
    // 8 MiB of 4 KiB frames at 400 Gb/s: the port is the bottleneck.
    let line = (4166.0 + 24.0) * 2048.0 * 8.0 / 400e3; // µs: 66 header + 4096 + 4 trailer bytes, plus wire overhead
    assert!(
        r.sim_time_us > line && r.sim_time_us < line + 10.0,
        "{} vs {line}",
        r.sim_time_us
    );
    eprintln!("driver alone: {:.0} frames/s of wall time", r.packets_per_s);
}

#[test]
fn queue_drops_and_ecn_marks_happen_under_overload() {
    // The null transport blasts at 400 Gb/s with 16 entropies into 32 lanes of 12.5 Gb/s:
    // at most half the lanes carry traffic, so their queues overflow.
    let cfg = PipeConfig {
        lanes: Some(32),
        time_limit_ns: 2_000_000,
        ..null_cfg()
    };
    let mut factory =
        |addr, _seed| Ok(Box::new(NullTransport::new(addr)) as Box<dyn mroce_model::transport::Transport>);
    let r = pipe::run_with(&cfg, &mut factory).unwrap();
    assert!(r.drops_queue > 0, "{r:#?}");
    assert_eq!(r.ecn_marks, 0, "null frames are Not-ECT and must never be marked");
    assert_eq!(r.integrity, "incomplete");
}

#[test]
fn factory_errors_propagate() {
    let mut factory = |_addr, _seed| -> Result<Box<dyn mroce_model::transport::Transport>, PipeError> {
        Err(PipeError::Config("nope".into()))
    };
    assert!(matches!(
        pipe::run_with(&null_cfg(), &mut factory),
        Err(PipeError::Config(_))
    ));
    let bad = PipeConfig {
        loss: 2.0,
        ..null_cfg()
    };
    let mut factory =
        |addr, _seed| Ok(Box::new(NullTransport::new(addr)) as Box<dyn mroce_model::transport::Transport>);
    assert!(matches!(pipe::run_with(&bad, &mut factory), Err(PipeError::Config(_))));
}
