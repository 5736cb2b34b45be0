//! Fabric simulator physics on small seeded fabrics, for both transports: conservation of
//! bytes and frames, content integrity, determinism, ECMP determinism, and no delivery over a
//! dead plane.

use mroce_sim::engine::{self, RunConfig, RunReport};
use mroce_sim::fabric::{ecmp_pick, FabricConfig, FailTarget, Failure, LossScope};
use mroce_sim::model_factory as sim_factory;
use mroce_sim::rng::{derive_seed, Rng};
use mroce_sim::workload::Workload;
use mroce_sim::Kind;

fn small(planes: u8) -> FabricConfig {
    FabricConfig {
        hosts: 16,
        planes,
        leaves: 4,
        spines: 4,
        ..FabricConfig::default()
    }
}

fn run(cfg: &RunConfig, w: &Workload) -> RunReport {
    let mut f = sim_factory;
    engine::run(cfg, w, &mut f, None).expect("run")
}

fn permutation(cfg: &RunConfig, bytes: u64) -> Workload {
    let perm = Rng::new(derive_seed(cfg.seed, 1)).derangement(cfg.fabric.hosts);
    Workload::permutation(cfg.layout(), &perm, bytes, cfg.seed).unwrap()
}

/// Every frame a NIC sent is delivered, dropped (for a counted reason) or still in flight.
fn assert_frames_conserved(r: &RunReport) {
    let n = &r.net;
    assert_eq!(
        n.frames_tx,
        n.frames_delivered + n.drops_loss + n.drops_queue + n.drops_failure + n.drops_misroute + n.in_flight_end,
        "{}: frames not conserved: {n:?}",
        r.transport
    );
    // Every delivery is the arrival of a frame that a leaf's queue sent to the host, and every
    // arrival from a switch queue follows a counted hop: the htsim-equivalent event count
    // (events + switch_arrivals) rests on these.
    assert!(
        n.frames_delivered <= n.switch_arrivals && n.switch_arrivals <= n.hops,
        "{}: switch arrivals out of bounds: {n:?}",
        r.transport
    );
}

#[test]
fn bytes_and_frames_are_conserved_under_loss() {
    for kind in Kind::ALL {
        for scope in [LossScope::TorToHost, LossScope::All] {
            let f = FabricConfig {
                loss: 0.01,
                loss_scope: scope,
                ..small(2)
            };
            let cfg = RunConfig::new(f, kind, 11);
            let w = permutation(&cfg, 256 << 10);
            let r = run(&cfg, &w);
            assert!(r.complete, "{kind} {scope:?}: {:?}", r.failure);
            assert_eq!(r.integrity, "ok", "{kind} {scope:?}");
            assert_eq!(r.bytes_delivered, w.bytes, "{kind}: delivered != posted");
            // Each placed byte was placed once: the receivers' placement counters add up to
            // exactly the payload posted (duplicates are not placed twice).
            assert_eq!(r.counter("bytes_placed"), w.bytes, "{kind}: placed != posted");
            assert!(r.net.drops_loss > 0, "{kind}: 1% loss dropped nothing");
            assert!(r.counter("retransmits") > 0, "{kind}: losses without retransmissions");
            assert_frames_conserved(&r);
            // Every flow completed after it was posted, on both sides.
            for fl in &r.flows {
                let (p, s, v) = (fl.posted_ns.unwrap(), fl.sent_ns.unwrap(), fl.recv_ns.unwrap());
                assert!(p <= v && p <= s, "{kind}: flow completed before it was posted");
            }
        }
    }
}

#[test]
fn nothing_beats_the_wire() {
    // A single flow can never complete faster than serialising its frames over its host port.
    for kind in Kind::ALL {
        let f = small(1);
        let cfg = RunConfig::new(f.clone(), kind, 3);
        let w = Workload::permutation(
            cfg.layout(),
            &[1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14],
            1 << 20,
            3,
        )
        .unwrap();
        let r = run(&cfg, &w);
        assert!(r.complete);
        let frames = (1u64 << 20).div_ceil(4096);
        let min_ns = (frames * (4096 + 60 + 24)) as f64 * 8.0 / f.host_port_gbps();
        for fl in &r.flows {
            let fct = (fl.recv_ns.unwrap() - fl.posted_ns.unwrap()) as f64;
            assert!(
                fct >= min_ns,
                "{kind}: FCT {fct} ns below the serialisation bound {min_ns} ns"
            );
        }
        // And goodput stays below the aggregate host capacity.
        let g = r.bytes_delivered as f64 * 8.0 / r.last_recv_ns as f64;
        assert!(g <= f.host_gbps * f.hosts as f64, "{kind}: {g} Gb/s over capacity");
    }
}

#[test]
fn same_seed_same_run_other_seed_other_run() {
    for kind in Kind::ALL {
        let f = FabricConfig {
            loss: 0.005,
            ..small(2)
        };
        let a = RunConfig::new(f.clone(), kind, 5);
        let w = permutation(&a, 128 << 10);
        let (r1, r2) = (run(&a, &w), run(&a, &w));
        assert_eq!(r1.flows, r2.flows, "{kind}: flows differ between identical runs");
        assert_eq!(r1.counters, r2.counters, "{kind}: counters differ");
        assert_eq!(r1.net, r2.net, "{kind}: network counters differ");
        assert_eq!(r1.events, r2.events);
        let b = RunConfig::new(f, kind, 6);
        let r3 = run(&b, &w);
        assert!(
            r3.flows != r1.flows || r3.net != r1.net,
            "{kind}: another seed changed nothing"
        );
    }
}

#[test]
fn ecmp_is_a_function_of_the_five_tuple() {
    for kind in Kind::ALL {
        let mut cfg = RunConfig::new(small(2), kind, 9);
        cfg.trace_ecmp = true;
        let w = Workload::all_to_all(cfg.layout(), 64 << 10, 9).unwrap();
        let r = run(&cfg, &w);
        assert!(r.complete && r.integrity == "ok");
        assert!(r.ecmp_trace.len() > 100, "{kind}: too few 5-tuples traced");
        let mut spines_used = 0u64;
        for (&(plane, src, dst, sport), &mask) in &r.ecmp_trace {
            assert_eq!(
                mask.count_ones(),
                1,
                "{kind}: 5-tuple {src:x}->{dst:x}:{sport} took several spines"
            );
            // Recompute the switch's choice independently: CRC-32 of the 13-byte key.
            let mut key = Vec::new();
            key.extend_from_slice(&src.to_be_bytes());
            key.extend_from_slice(&dst.to_be_bytes());
            key.extend_from_slice(&sport.to_be_bytes());
            key.extend_from_slice(&4791u16.to_be_bytes());
            key.push(17);
            let spine = ecmp_pick(crc32fast::hash(&key), cfg.fabric.spines);
            assert_eq!(mask, 1 << spine, "{kind}: plane {plane} tuple routed off its hash");
            spines_used |= mask;
        }
        assert_eq!(
            spines_used,
            (1 << cfg.fabric.spines) - 1,
            "{kind}: some spine never used"
        );
    }
}

#[test]
fn a_dead_plane_carries_nothing_and_mroce_loses_no_message() {
    let bin = 2_000;
    let fail_at = 40_000;
    let mut f = small(2);
    f.failures.push(Failure {
        target: FailTarget::Plane { plane: 1 },
        at_ns: fail_at,
        until_ns: None,
    });
    for kind in Kind::ALL {
        let mut cfg = RunConfig::new(f.clone(), kind, 4);
        cfg.sample_ns = bin;
        cfg.time_limit_ns = 20_000_000;
        let w = Workload::all_to_all(cfg.layout(), 128 << 10, 4).unwrap();
        let r = run(&cfg, &w);
        assert!(r.net.drops_failure > 0, "{kind}: the failure dropped nothing");
        assert!(r.net.data_bytes_lost_failure > 0);
        assert_frames_conserved(&r);
        // From the first whole bin after the failure, no data arrives over plane 1 ...
        let first = (fail_at / bin) as usize + 1;
        assert!(r.timeline.plane_rx.len() > first);
        for (i, b) in r.timeline.plane_rx.iter().enumerate().skip(first) {
            assert_eq!(b[1], 0, "{kind}: data arrived over the dead plane in bin {i}");
        }
        // ... while plane 0 keeps carrying traffic.
        assert!(
            r.timeline.plane_rx.iter().skip(first).any(|b| b[0] > 0),
            "{kind}: plane 0 idle"
        );
        match kind {
            Kind::Mroce => {
                assert!(r.complete, "mroce lost messages: {:?}", r.failure);
                assert_eq!(r.integrity, "ok");
                assert_eq!(r.bytes_delivered, w.bytes);
                // The dead paths were noticed: RTOs moved their data elsewhere (they may finish
                // before PATH_DOWN_RTOS consecutive timeouts declare them down).
                let rtos = r.counters.get("rtos").copied().unwrap_or(0);
                assert!(
                    r.net.path_down_events > 0 || rtos > 0,
                    "mroce never noticed the dead paths"
                );
            }
            Kind::Rocev2 => {
                // The QPs of the dead rail cannot complete: the application loses those messages.
                assert!(!r.complete, "rocev2 completed over a dead plane");
            }
        }
    }
}

#[test]
fn link_and_spine_failures_are_routed_around() {
    // A leaf-spine cable fails and is repaired; flows keep completing with intact content.
    let mut f = small(1);
    f.failures.push(Failure {
        target: FailTarget::LeafSpine {
            plane: 0,
            leaf: 0,
            spine: 1,
        },
        at_ns: 10_000,
        until_ns: Some(200_000),
    });
    f.failures.push(Failure {
        target: FailTarget::Spine { plane: 0, spine: 2 },
        at_ns: 20_000,
        until_ns: None,
    });
    let mut cfg = RunConfig::new(f, Kind::Mroce, 8);
    cfg.time_limit_ns = 50_000_000;
    let w = Workload::all_to_all(cfg.layout(), 256 << 10, 8).unwrap();
    let r = run(&cfg, &w);
    assert!(r.complete, "{:?}", r.failure);
    assert_eq!(r.integrity, "ok");
    assert!(r.net.drops_failure > 0);
    assert!(
        r.counter("entropy_rerolls") > 0,
        "mroce did not move paths off the dead routes"
    );
    assert_frames_conserved(&r);
}

#[test]
fn ecn_marks_and_queue_limits_hold() {
    // 8 -> 1 incast: the receiver's queue never exceeds its drop-tail limit and marks CE.
    let f = small(1);
    let senders: Vec<usize> = (1..9).collect();
    for kind in Kind::ALL {
        let mut cfg = RunConfig::new(f.clone(), kind, 2);
        cfg.observe_host = Some(0);
        cfg.sample_ns = 1_000;
        let w = Workload::incast(cfg.layout(), &senders, 0, 512 << 10, 2).unwrap();
        let r = run(&cfg, &w);
        assert!(r.complete && r.integrity == "ok", "{kind}: {:?}", r.failure);
        let limit = (f.buffer_us * f.host_port_gbps() * 1000.0 / 8.0) as u64;
        assert!(
            r.observed_peak_queue <= limit,
            "{kind}: queue {} over its limit {limit}",
            r.observed_peak_queue
        );
        assert!(r.observed_peak_queue > 0);
        assert!(r.net.ecn_marks > 0, "{kind}: an 8:1 incast marked nothing");
        // The receiver's host link is the bottleneck: total arrivals never exceed its rate.
        for b in &r.timeline.observed_rx {
            let bytes: u64 = b.iter().sum();
            assert!(
                bytes as f64 <= f.host_gbps / 8.0 * 1_000.0 * 1.05 + 5000.0,
                "{kind}: {bytes} B in one µs"
            );
        }
    }
}
