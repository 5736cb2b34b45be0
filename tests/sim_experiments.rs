//! Small seeded versions of every `mroce sim` experiment: the JSON contract of each summary,
//! both transports in the same run, and the physics each figure must obey.

use std::process::Command;

use mroce_model::endpoint::EcnReroute;
use mroce_sim::experiments::{self, Collective, Common, NoHooks, Summary};
use mroce_sim::fabric::FabricConfig;
use mroce_sim::model_factory as sim_factory;
use serde_json::Value;

fn common() -> Common {
    Common {
        fabric: FabricConfig {
            hosts: 16,
            planes: 2,
            leaves: 4,
            spines: 4,
            ..FabricConfig::default()
        },
        seed: 3,
        ..Common::default()
    }
}

/// The contract: experiment, seed, events_per_s, wall_s, results with `transport` and the
/// experiment's fields; both transports present.
fn contract(s: &Summary, name: &str, fields: &[&str]) {
    let v = serde_json::to_value(s).unwrap();
    assert_eq!(v["experiment"], name);
    assert_eq!(v["seed"], 3);
    assert!(v["events_per_s"].as_f64().unwrap() > 0.0);
    // CPU time of a thread is at most its wall time, so the per-CPU-second rate is at least
    // the wall-clock one
    let per_cpu = v["events_per_cpu_s"].as_f64().unwrap();
    assert!(
        per_cpu >= 0.99 * v["events_per_s"].as_f64().unwrap(),
        "{name}: {per_cpu}"
    );
    // htsim's count adds one event per switch hop to this simulator's
    let htsim = v["htsim_equivalent_events_per_cpu_s"].as_f64().unwrap();
    assert!(htsim > per_cpu, "{name}: {htsim} <= {per_cpu}");
    assert!(v["wall_s"].as_f64().unwrap() > 0.0);
    let rows = v["results"].as_array().unwrap();
    assert!(!rows.is_empty());
    for t in ["mroce", "rocev2"] {
        assert!(rows.iter().any(|r| r["transport"] == t), "{name}: no {t} row");
    }
    for r in rows {
        for f in fields {
            assert!(r.get(*f).is_some(), "{name}: row without {f}: {r}");
        }
    }
}

fn rows<'a>(s: &'a Summary, t: &str) -> Vec<&'a Value> {
    s.results.iter().filter(|r| r["transport"] == t).collect()
}

#[test]
fn loss_sweep_small() {
    let p = experiments::LossSweep {
        losses: vec![0.0, 0.01, 0.1],
        bytes_per_flow: 512 << 10,
        ..Default::default()
    };
    let s = experiments::loss_sweep(&common(), &p, &mut sim_factory, &mut NoHooks).unwrap();
    contract(&s, "loss-sweep", &["loss", "goodput_gbps", "retransmits"]);
    let cap = 16.0 * 400.0;
    for r in &s.results {
        let g = r["goodput_gbps"].as_f64().unwrap();
        assert!(g > 0.0 && g <= cap, "{r}");
        assert_eq!(r["integrity"], "ok", "{r}");
        assert_eq!(r["bytes_delivered"], r["bytes_posted"]);
        if r["loss"] == 0.0 {
            assert_eq!(r["relative_goodput"], 1.0);
            assert_eq!(r["drops_loss"], 0);
        } else {
            assert!(r["drops_loss"].as_u64().unwrap() > 0);
        }
    }
    // mroce's NICs count their frames: at least one data frame per MTU delivered, plus one
    // per retransmission; every lossy run also probes.
    for r in rows(&s, "mroce") {
        let min_frames = r["bytes_delivered"].as_u64().unwrap().div_ceil(4096) + r["retransmits"].as_u64().unwrap();
        assert!(r["tx_data"].as_u64().unwrap() >= min_frames, "{r}");
        assert!(r["tx_acks"].as_u64().unwrap() > 0, "{r}");
        if r["loss"] != 0.0 {
            assert!(r["probes_sent"].as_u64().unwrap() > 0, "{r}");
        }
    }
    // mroce keeps useful bandwidth at 10% loss.
    let m10 = rows(&s, "mroce").into_iter().find(|r| r["loss"] == 0.1).unwrap();
    assert!(m10["relative_mean_flow_goodput"].as_f64().unwrap() > 0.2, "{m10}");
}

/// `rocev2_rto_ns` reaches RoCEv2's NICs: with the RTO at 2 ms instead of 50 µs, a run that
/// times out waits the longer RTO (the lossy small sweep needs RTOs: tail losses have no
/// later packet to trigger a NAK), and mroce's run does not change.
#[test]
fn rocev2_rto_reaches_the_baseline() {
    let p = experiments::LossSweep {
        losses: vec![0.01],
        bytes_per_flow: 512 << 10,
        ..Default::default()
    };
    let run = |rto: Option<u64>| {
        let c = Common {
            rocev2_rto_ns: rto,
            ..common()
        };
        experiments::loss_sweep(&c, &p, &mut sim_factory, &mut NoHooks).unwrap()
    };
    let (short, long) = (run(None), run(Some(2_000_000)));
    let param = |s: &Summary| serde_json::to_value(s).unwrap()["params"]["rocev2_rto_ns"].clone();
    assert_eq!(param(&short), 50_000);
    assert_eq!(param(&long), 2_000_000);
    let (a, b) = (&short.runs[1].1, &long.runs[1].1);
    assert_eq!(a.transport, "rocev2");
    assert!(
        a.counter("timeouts") > 0,
        "no RoCEv2 timeout at 1 % loss: {:?}",
        a.counters
    );
    assert!(b.counter("timeouts") > 0);
    assert!(b.last_recv_ns >= 2_000_000, "{} ns", b.last_recv_ns);
    assert!(a.last_recv_ns < 2_000_000, "{} ns", a.last_recv_ns);
    assert_eq!(short.runs[0].1.last_recv_ns, long.runs[0].1.last_recv_ns);
    assert_eq!(short.runs[0].1.net, long.runs[0].1.net);
}

#[test]
fn collectives_small() {
    let p = experiments::Collectives {
        collectives: vec![Collective::AllToAll, Collective::AllReduceRing, Collective::AllReduceHd],
        a2a_bytes_per_pair: 64 << 10,
        allreduce_bytes: 1 << 20,
        ..Default::default()
    };
    let s = experiments::collectives(&common(), &p, &mut sim_factory, &mut NoHooks).unwrap();
    contract(&s, "collectives", &["collective", "cct_us", "ideal_us"]);
    for r in &s.results {
        assert_eq!(r["integrity"], "ok", "{r}");
        // No collective beats the bytes-over-bottleneck bound.
        assert!(r["cct_us"].as_f64().unwrap() >= r["ideal_us"].as_f64().unwrap(), "{r}");
    }
    assert_eq!(s.results.iter().filter(|r| r["collective"] == "all-reduce").count(), 4);
}

/// Halving-doubling with the nearest partner first computes the same reduction, and its
/// largest steps stay under one leaf (hosts are numbered leaf by leaf): fewer link traversals
/// per data frame than with the farthest partner first, whose largest steps cross the spines.
#[test]
fn halving_doubling_near_first_keeps_the_large_steps_under_a_leaf() {
    let p = experiments::Collectives {
        collectives: vec![Collective::AllReduceHd, Collective::AllReduceHdNear],
        allreduce_bytes: 1 << 20,
        ..Default::default()
    };
    let s = experiments::collectives(&common(), &p, &mut sim_factory, &mut NoHooks).unwrap();
    let hops_per_frame = |t: &str, alg: &str| {
        let r = s
            .results
            .iter()
            .find(|r| r["transport"] == t && r["algorithm"] == alg)
            .unwrap_or_else(|| panic!("no {t} {alg} row"));
        assert_eq!(r["integrity"], "ok", "{r}");
        assert!(r["cct_us"].as_f64().unwrap() >= r["ideal_us"].as_f64().unwrap(), "{r}");
        r["hops"].as_f64().unwrap() / r["frames_tx"].as_f64().unwrap()
    };
    for t in ["mroce", "rocev2"] {
        let (far, near) = (
            hops_per_frame(t, "halving-doubling"),
            hops_per_frame(t, "halving-doubling-near-first"),
        );
        // 16 hosts, 4 per leaf: far-first sends 3/4 of the bytes across the spines (4 hops, the
        // rest 2: 3.5 per frame), near-first 1/4 (2.5), ACKs and probes alike
        assert!(
            far > 3.2 && near < 2.8,
            "{t}: {far:.2} hops per frame far-first, {near:.2} near-first"
        );
    }
}

/// The NIC's transmit order (SPEC.md §8.3): oldest-first serves the step that the later
/// steps of a pipelined halving-doubling wait for, so the collective ends sooner than under
/// round robin, with the same bytes delivered intact; RoCEv2 keeps round robin unless asked.
#[test]
fn oldest_first_transmit_order_shortens_the_pipelined_halving_doubling() {
    use mroce_model::tx_order::TxOrder;
    let run = |order: TxOrder| {
        let mut c = Common {
            tx_order: order,
            transports: vec![mroce_sim::Kind::Mroce],
            ..common()
        };
        c.fabric.planes = 4;
        let p = experiments::Collectives {
            collectives: vec![Collective::AllReduceHdNear],
            allreduce_bytes: 16 << 20,
            ..Default::default()
        };
        let s = experiments::collectives(&c, &p, &mut sim_factory, &mut NoHooks).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["params"]["tx_order"], order.as_str());
        assert_eq!(v["params"]["rocev2_tx_order"], "rr");
        let r = &s.results[0];
        assert_eq!(r["integrity"], "ok", "{r}");
        assert_eq!(r["bytes_delivered"], r["bytes_posted"], "{r}");
        r["cct_us"].as_f64().unwrap()
    };
    let (rr, oldest) = (run(TxOrder::RoundRobin), run(TxOrder::OldestFirst));
    // `mroce sim collectives --hosts 16 --leaves 4 --spines 4 --allreduce-bytes 16MiB
    // --collectives hd-near --transports mroce --tx-order rr|oldest`: 1.46 / 1.50 / 1.46 against
    // 1.29 / 1.29 / 1.29 × ideal on seeds 1 / 2 / 3
    assert!(oldest < 0.95 * rr, "oldest-first {oldest} µs, round robin {rr} µs");
}

/// Slicing the ring's steps pipelines them: each host forwards a slice as soon as it is
/// reduced, so a hop's latency is paid once instead of at each of the 2(N-1) steps.
#[test]
fn allreduce_slices_pipeline_the_steps() {
    let cct = |slices: usize| {
        let p = experiments::Collectives {
            collectives: vec![Collective::AllReduceRing],
            allreduce_bytes: 1 << 20,
            allreduce_slices: slices,
            loss: 0.0,
            ..Default::default()
        };
        let s = experiments::collectives(&common(), &p, &mut sim_factory, &mut NoHooks).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["params"]["allreduce_slices"], slices);
        s.results
            .iter()
            .map(|r| {
                assert_eq!(r["integrity"], "ok", "{r}");
                (
                    r["transport"].as_str().unwrap().to_string(),
                    r["cct_us"].as_f64().unwrap(),
                )
            })
            .collect::<Vec<_>>()
    };
    let (one, four) = (cct(1), cct(4));
    for ((t, a), (_, b)) in one.iter().zip(&four) {
        // 16 hosts, 30 steps of 8 KiB per rail: here 4 slices take ~3/4 of the time of 1
        assert!(*b < 0.9 * a, "{t}: {b} µs with 4 slices against {a} µs with 1");
    }
}

#[test]
fn planes_small() {
    let p = experiments::Planes {
        planes: vec![1, 2, 4],
        bytes_per_plane: 256 << 10,
        ..Default::default()
    };
    let s = experiments::planes(&common(), &p, &mut sim_factory, &mut NoHooks).unwrap();
    contract(&s, "planes", &["planes", "goodput_gbps"]);
    for r in &s.results {
        assert_eq!(r["integrity"], "ok");
        let frac = r["fraction_of_capacity"].as_f64().unwrap();
        assert!(frac > 0.0 && frac <= 1.0, "{r}");
        // The routing bound is a bracket of a rate no flow split can beat (ports cap it at 1).
        let (lo, up) = (
            r["route_bound_lower"].as_f64().unwrap(),
            r["route_bound_upper"].as_f64().unwrap(),
        );
        assert!(0.0 < lo && lo <= up && lo <= 1.0 + 1e-9 && up < 1.05, "{r}");
        // Spraying evenly, whatever the load, is one of the splits the bound ranges over.
        let even = r["route_even_split"].as_f64().unwrap();
        assert!(0.0 < even && even <= up + 1e-9, "{r}");
    }
    let m = rows(&s, "mroce");
    assert_eq!(m[0]["scaling_efficiency"], 1.0);
    // mroce moves data between planes and has more paths per plane than a RoCEv2 QP: its
    // routes allow more on every plane count (different draws, but far apart: ~1 against ≤ 0.5).
    let rv = rows(&s, "rocev2");
    for (a, b) in m.iter().zip(&rv) {
        assert!(
            a["route_bound_upper"].as_f64().unwrap() >= b["route_bound_lower"].as_f64().unwrap(),
            "{a} vs {b}"
        );
        assert_eq!(b["route_paths_per_plane"], 1);
    }
    // More planes carry more bytes per second.
    assert!(m[2]["goodput_gbps"].as_f64().unwrap() > m[0]["goodput_gbps"].as_f64().unwrap());
}

#[test]
fn plane_failure_small() {
    let p = experiments::PlaneFailure {
        bytes: 128 << 10,
        bin_ns: 2_000,
        ..Default::default()
    };
    let s = experiments::plane_failure(&common(), &p, &mut sim_factory, &mut NoHooks).unwrap();
    contract(
        &s,
        "plane-failure",
        &[
            "planes",
            "recovery_us",
            "bytes_lost",
            "messages_completed",
            "messages_expected",
        ],
    );
    let m = rows(&s, "mroce")[0];
    assert_eq!(m["messages_completed"], m["messages_expected"], "{m}");
    assert_eq!(m["integrity"], "ok");
    assert!(m["bytes_lost"].as_u64().unwrap() > 0);
    assert!(m["cct_us"].as_f64().unwrap() >= m["cct_no_failure_us"].as_f64().unwrap() * 0.9);
    let r = rows(&s, "rocev2")[0];
    assert!(r["messages_completed"].as_u64().unwrap() < r["messages_expected"].as_u64().unwrap());
}

#[test]
fn incast_small() {
    let p = experiments::Incast {
        senders: vec![8],
        bytes: 512 << 10,
        ..Default::default()
    };
    let s = experiments::incast(&common(), &p, &mut sim_factory, &mut NoHooks).unwrap();
    contract(&s, "incast", &["senders", "converge_rtts", "peak_queue_bytes", "drops"]);
    let f = &common().fabric;
    let limit = (f.buffer_us * f.host_port_gbps() * 1000.0 / 8.0) as u64;
    for r in &s.results {
        assert_eq!(r["integrity"], "ok");
        assert!(r["peak_queue_bytes"].as_u64().unwrap() <= limit, "{r}");
        // every drop at the receiver's ports is some sender's frame; drops elsewhere on the
        // way add to the senders' counts but never exceed the fabric's queue drops
        let by_sender: Vec<u64> = r["drops_by_sender"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        let sum: u64 = by_sender.iter().sum();
        assert_eq!(by_sender.len(), 8, "{r}");
        // RoCEv2's first flights overflow the port (mroce's are sized to the fan-in)
        if r["transport"] == "rocev2" {
            assert!(r["drops"].as_u64().unwrap() > 0, "{r}");
        }
        assert!(sum >= r["drops"].as_u64().unwrap(), "{r}");
        assert!(sum <= r["drops_total"].as_u64().unwrap(), "{r}");
        assert!(
            r["completion_us"].as_f64().unwrap() >= r["ideal_completion_us"].as_f64().unwrap(),
            "{r}"
        );
    }
}

#[test]
fn connections_small() {
    let p = experiments::Connections {
        connections: vec![512],
        bytes: 32 << 10,
        ..Default::default()
    };
    let s = experiments::connections(&common(), &p, &mut sim_factory, &mut NoHooks).unwrap();
    contract(
        &s,
        "connections",
        &[
            "connections",
            "jain_fairness",
            "goodput_gbps",
            "state_bytes_per_connection",
        ],
    );
    for r in &s.results {
        assert_eq!(r["connections"], 512);
        assert_eq!(r["integrity"], "ok");
        let j = r["jain_fairness"].as_f64().unwrap();
        assert!(j > 0.0 && j <= 1.0 + 1e-9);
    }
}

#[test]
fn cli_prints_the_summary_on_the_last_line_and_writes_files() {
    let dir = std::env::temp_dir().join(format!("mroce-sim-cli-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_mroce"))
        .args([
            "sim", "incast", "--hosts", "8", "--leaves", "2", "--spines", "2", "--planes", "2",
        ])
        .args(["--senders", "4", "--bytes", "128KiB", "--seed", "3", "--json", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = stdout.lines().last().unwrap();
    let v: Value = serde_json::from_str(last).unwrap();
    assert_eq!(v["experiment"], "incast");
    assert_eq!(v["seed"], 3);
    assert_eq!(v["results"].as_array().unwrap().len(), 2);
    for f in [
        "summary.json",
        "results.jsonl",
        "results.csv",
        "flows.csv",
        "timeline.csv",
    ] {
        assert!(dir.join(f).exists(), "{f} missing");
    }
    let svgs = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "svg"));
    assert!(svgs.count() >= 2);
    let jl = std::fs::read_to_string(dir.join("results.jsonl")).unwrap();
    assert_eq!(jl.lines().count(), 2);
    let _ = std::fs::remove_dir_all(&dir);
    // A bad parameter is a usage error with a message, not a panic.
    for (args, says) in [
        (&["sim", "planes", "--hosts", "1"][..], "hosts must be at least 2"),
        (&["sim", "planes", "--plane-counts", "0"][..], "planes must be 1..=8"),
        (
            &["sim", "connections", "--connections", "0"][..],
            "connections must be at least 1",
        ),
    ] {
        let bad = Command::new(env!("CARGO_BIN_EXE_mroce")).args(args).output().unwrap();
        assert_eq!(bad.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&bad.stderr).contains(says), "{args:?}");
    }
}

/// `--ecn-reroute off`: mroce ignores its path selector's re-route verdicts, so no path moves
/// for ECN; `every` (the default) moves some on a permutation over a collided fabric, and `one`
/// (one path of a connection draining for a move at a time) fewer. The choice is recorded in the
/// summary's params.
#[test]
fn ecn_reroute_policies() {
    let p = experiments::LossSweep {
        losses: vec![0.0],
        // 1 MiB flows end before any queue marks; 4 MiB ones collide long enough
        bytes_per_flow: 4 << 20,
        ..Default::default()
    };
    let reroutes = |policy: EcnReroute| {
        let c = Common {
            ecn_reroute: policy,
            transports: vec![mroce_sim::Kind::Mroce],
            ..common()
        };
        let s = experiments::loss_sweep(&c, &p, &mut sim_factory, &mut NoHooks).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["params"]["ecn_reroute"], policy.as_str());
        assert_eq!(s.runs.len(), 1);
        let r = &s.runs[0].1;
        assert!(r.complete);
        r.counter("ecn_reroutes")
    };
    let (every, one) = (reroutes(EcnReroute::Every), reroutes(EcnReroute::One));
    assert!(one > 0 && every > one, "every {every}, one {one}");
    assert_eq!(reroutes(EcnReroute::Off), 0);
}

/// The connection limit before the first rate hint reaches the NICs: a smaller first flight
/// into the same incast leaves less for the receiver's queues to drop, and everything
/// arrives intact either way.
#[test]
fn initial_limit_caps_the_first_flight() {
    let p = experiments::Incast {
        senders: vec![8],
        bytes: 512 << 10,
        ..Default::default()
    };
    let drops = |limit: u16| {
        // (without announcements, which would size both first flights to the fan-in)
        let c = Common {
            initial_conn_limit: limit,
            announce_fan_in: false,
            transports: vec![mroce_sim::Kind::Mroce],
            ..common()
        };
        let s = experiments::incast(&c, &p, &mut sim_factory, &mut NoHooks).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["params"]["initial_conn_limit"], limit);
        let r = &s.results[0];
        assert_eq!(r["integrity"], "ok", "{r}");
        r["drops"].as_u64().unwrap()
    };
    let (none, small) = (drops(u16::MAX), drops(16));
    assert!(small < none, "limit 16: {small} drops, no limit: {none}");
}

/// The fabric's unloaded RTT reaches the NICs and bounds a shared hint's limit (SPEC.md §8.5):
/// with a first flight sized to the fan-in (112 / 12 packets), 12 senders converge within 3
/// RTTs, where limits computed from queue-inflated RTT samples overflow the receiver's queues.
/// The first flight's immediate ACKs are off in both runs: with them, and no fabric RTT, the
/// first samples are taken before the queue builds.
#[test]
fn fabric_rtt_lets_a_fan_in_sized_start_converge() {
    let p = experiments::Incast {
        senders: vec![12],
        bytes: 1 << 20,
        ..Default::default()
    };
    let run = |fabric_rtt: bool| {
        let c = Common {
            initial_conn_limit: 9,
            fabric_rtt,
            announce_fan_in: false,
            first_flight_ack_req: false,
            transports: vec![mroce_sim::Kind::Mroce],
            ..common()
        };
        let s = experiments::incast(&c, &p, &mut sim_factory, &mut NoHooks).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        let want = if fabric_rtt { c.fabric.unloaded_rtt_ns(c.mtu) } else { 0 };
        assert_eq!(v["params"]["fabric_rtt_ns"], want);
        let r = s.results[0].clone();
        assert_eq!(r["integrity"], "ok", "{r}");
        (
            r["converge_rtts"].as_f64().unwrap_or(f64::INFINITY),
            r["drops"].as_u64().unwrap(),
        )
    };
    let (on, on_drops) = run(true);
    let (off, off_drops) = run(false);
    assert!(on <= 3.0, "with the fabric RTT: {on} RTTs ({on_drops} drops)");
    assert!(
        off > on && off_drops > on_drops,
        "measured RTTs only: {off} RTTs ({off_drops} drops)"
    );
}

/// Fan-in announcements reach the NICs (SPEC.md §8.5): with them, 12 senders that start with
/// the default first flight (112 packets each) converge within 3 RTTs and drop less than
/// without; each sender's connection applied at least one.
#[test]
fn fan_in_announcements_size_the_first_flights() {
    let p = experiments::Incast {
        senders: vec![12],
        bytes: 1 << 20,
        ..Default::default()
    };
    let run = |announce: bool| {
        let c = Common {
            announce_fan_in: announce,
            transports: vec![mroce_sim::Kind::Mroce],
            ..common()
        };
        assert!(c.fabric_rtt, "the experiments' default");
        let s = experiments::incast(&c, &p, &mut sim_factory, &mut NoHooks).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["params"]["announce_fan_in"], announce);
        let r = s.results[0].clone();
        assert_eq!(r["integrity"], "ok", "{r}");
        assert_eq!(r["bytes_delivered"], r["bytes_posted"], "{r}");
        r
    };
    let (on, off) = (run(true), run(false));
    let n = |r: &Value, k: &str| r[k].as_u64().unwrap();
    assert!(n(&on, "announces_applied") >= 12, "{on}");
    assert!(n(&on, "tx_announces") >= n(&on, "announces_applied"), "{on}");
    assert_eq!(n(&off, "tx_announces"), 0, "{off}");
    let rtts = |r: &Value| r["converge_rtts"].as_f64().unwrap_or(f64::INFINITY);
    assert!(rtts(&on) <= 3.0, "with announcements: {on}");
    assert!(
        n(&on, "drops") < n(&off, "drops"),
        "on: {} drops, off: {}",
        n(&on, "drops"),
        n(&off, "drops")
    );
}

/// The tail hedge reaches the NICs: at 10 % loss the flows' last chunks get second copies
/// (counted apart from retransmissions, and sent as data frames), none without it, and
/// everything arrives intact either way.
/// The first flight's immediate ACKs (SPEC.md §8.3 step 7): a lone 2 MiB flow, whose first
/// flight is the initial limit spread over 16 paths, finishes sooner with them than when it
/// waits for every path's 4th packet, and they cost at most one extra ACK per packet of that
/// flight.
#[test]
fn first_flight_acks_start_the_ack_clock() {
    let p = experiments::Incast {
        senders: vec![1],
        bytes: 2 << 20,
        ..Default::default()
    };
    let run = |on: bool| {
        let c = Common {
            first_flight_ack_req: on,
            transports: vec![mroce_sim::Kind::Mroce],
            ..common()
        };
        let s = experiments::incast(&c, &p, &mut sim_factory, &mut NoHooks).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["params"]["first_flight_ack_req"], on);
        let r = s.results[0].clone();
        assert_eq!(r["integrity"], "ok", "{r}");
        assert_eq!(r["bytes_delivered"], r["bytes_posted"], "{r}");
        (r["fct_max_us"].as_f64().unwrap(), r["tx_acks"].as_u64().unwrap())
    };
    let (on, on_acks) = run(true);
    let (off, off_acks) = run(false);
    assert!(on < off, "with immediate ACKs {on} us, without {off} us");
    let first_flight = u64::from(mroce_model::params::CONN_LIMIT_INIT_PKTS);
    assert!(
        on_acks > off_acks && on_acks <= off_acks + first_flight,
        "ACKs: {on_acks} with, {off_acks} without"
    );
}

#[test]
fn tail_hedge_copies_doubtful_tail_chunks() {
    let p = experiments::LossSweep {
        losses: vec![0.1],
        bytes_per_flow: 512 << 10,
        ..Default::default()
    };
    let run = |hedge: bool| {
        let c = Common {
            tail_hedge: hedge,
            transports: vec![mroce_sim::Kind::Mroce],
            ..common()
        };
        let s = experiments::loss_sweep(&c, &p, &mut sim_factory, &mut NoHooks).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["params"]["tail_hedge"], hedge);
        let r = s.results[0].clone();
        assert_eq!(r["integrity"], "ok", "{r}");
        assert_eq!(r["bytes_delivered"], r["bytes_posted"], "{r}");
        let n = |k: &str| r[k].as_u64().unwrap();
        let frames = n("bytes_delivered").div_ceil(4096) + n("retransmits") + n("tail_hedges");
        assert!(n("tx_data") >= frames, "{r}");
        n("tail_hedges")
    };
    assert!(run(true) > 0, "no copies at 10 % loss");
    assert_eq!(run(false), 0);
}

/// Skipping the polls of port-blocked connections (`blocked_polls_skipped`) changes no frame:
/// the same runs with every poll made (component tracing turns the skip off) give the same
/// results, to the last counter.
#[test]
fn skipped_blocked_polls_change_nothing() {
    use mroce_model::endpoint::Endpoint;
    use mroce_sim::{mroce_config, Kind, NicAddr, Transport, TransportParams};
    let mut every_poll =
        |kind: Kind, addr: NicAddr, seed: u64, p: &TransportParams| -> Result<Box<dyn Transport>, String> {
            if kind != Kind::Mroce {
                return sim_factory(kind, addr, seed, p);
            }
            let mut cfg = mroce_config(addr, p);
            cfg.trace_components = true;
            Ok(Box::new(Endpoint::new(cfg, seed)))
        };
    // what may differ: timings, and the skip's own counter
    let strip = |s: &Summary| -> Vec<Value> {
        s.results
            .iter()
            .filter(|r| r["transport"] == "mroce")
            .map(|r| {
                let mut r = r.clone();
                let o = r.as_object_mut().unwrap();
                o.retain(|k, _| !k.contains("per_s") && !k.contains("wall") && !k.contains("cpu"));
                assert!(o.remove("blocked_polls_skipped").is_some());
                r
            })
            .collect()
    };
    let c = Common {
        transports: vec![Kind::Mroce],
        ..common()
    };
    let pf = experiments::PlaneFailure {
        bytes: 128 << 10,
        bin_ns: 2_000,
        ..Default::default()
    };
    let skip = experiments::plane_failure(&c, &pf, &mut sim_factory, &mut NoHooks).unwrap();
    let all = experiments::plane_failure(&c, &pf, &mut every_poll, &mut NoHooks).unwrap();
    let skipped = |s: &Summary| rows(s, "mroce")[0]["blocked_polls_skipped"].as_u64().unwrap();
    assert!(
        skipped(&skip) > 0,
        "the plane failure leaves blocked connections to skip"
    );
    assert_eq!(skipped(&all), 0);
    assert_eq!(strip(&skip), strip(&all));
    let ls = experiments::LossSweep {
        losses: vec![0.01],
        bytes_per_flow: 256 << 10,
        ..Default::default()
    };
    let skip = experiments::loss_sweep(&c, &ls, &mut sim_factory, &mut NoHooks).unwrap();
    let all = experiments::loss_sweep(&c, &ls, &mut every_poll, &mut NoHooks).unwrap();
    assert_eq!(strip(&skip), strip(&all));
}
