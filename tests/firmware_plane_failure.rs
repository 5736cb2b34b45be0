//! Issue 6 co-simulation test: the firmware (host build, through its `Csr` trait) drives the
//! transport core while a 32 MiB WRITE transfer runs over a 4-plane, 16-path link; plane 1
//! dies; the firmware detects it from the core's per-path counters, declares it down and moves
//! its paths to the live planes; the transfer completes with every byte intact. The same
//! scenario on the software golden model of the core and on the Verilated `transport_core`
//! gives the same outcome (firmware commands, transfer, counters).

use mroce::plane_failure::{run, CoreCsrModel, PinsCore, ScenarioConfig, ScenarioReport};
use mroce_cosim::pins::{RustHdl, TransportCorePins, Verilated};
use mroce_cosim::CosimError;
use mroce_csr as csr;
use mroce_firmware::memory_map::CYCLES_PER_US;

fn check_repaired(r: &ScenarioReport) {
    let cfg = &r.config;
    assert!(r.completed, "transfer incomplete: {r:#?}");
    assert!(r.data_intact, "data corrupted");
    assert!(r.frames_dropped > 0, "the failure dropped nothing");
    assert_eq!(r.fault_register, 0, "firmware fault");
    assert_eq!(r.fw_faults, 0);
    assert_eq!(r.fw_planes_down, 1, "plane not declared down exactly once");
    assert_eq!(
        r.planes_up & (1 << cfg.fail_plane),
        0,
        "dead plane still up in the selector"
    );
    assert_eq!(
        r.fw_paths_down,
        u32::from(cfg.paths / cfg.planes),
        "every path of the plane down"
    );
    // re-balance: all but the sentinel moved off the dead plane, spread over the live ones
    let per_plane = cfg.paths / cfg.planes;
    assert_eq!(
        r.paths_per_plane[usize::from(cfg.fail_plane)],
        1,
        "{:?}",
        r.paths_per_plane
    );
    assert_eq!(
        r.paths_per_plane.iter().map(|&x| u32::from(x)).sum::<u32>(),
        u32::from(cfg.paths)
    );
    for (k, &n) in r.paths_per_plane.iter().enumerate() {
        if k != usize::from(cfg.fail_plane) {
            assert_eq!(n, per_plane + 1, "plane {k}: {:?}", r.paths_per_plane);
        }
    }
    let (d, f) = (
        r.detect_cycles.expect("no detection"),
        r.repair_cycles.expect("no repair"),
    );
    assert!(d > 0 && d <= f, "detect {d} repair {f}");
    let down = r
        .commands
        .iter()
        .position(|c| c.op == csr::sel_op::SET_PLANE_UP && !c.flag && c.a == u16::from(cfg.fail_plane))
        .expect("no SET_PLANE_UP(down)");
    assert!(r.commands[down].cycle >= r.fail_cycle);
    let moves = r.commands[down..]
        .iter()
        .filter(|c| c.op == csr::sel_op::SET_PLANE && c.a != u16::from(cfg.fail_plane))
        .count();
    assert_eq!(moves, usize::from(per_plane - 1), "paths moved off the dead plane");
    // the telemetry export (the core's counters): RTOs on the dead plane's paths; the moved
    // paths carried data after the move (the transfer runs about as long again after the repair)
    let word = |p: u8, k: usize| r.telemetry[5 + 7 * usize::from(p) + k];
    let on_dead = |p: u8| p % cfg.planes == cfg.fail_plane;
    let live: Vec<u32> = (0..cfg.paths).filter(|&p| !on_dead(p)).map(|p| word(p, 0)).collect();
    let mean = live.iter().sum::<u32>() / live.len() as u32;
    for p in (0..cfg.paths).filter(|&p| on_dead(p)) {
        assert!(word(p, 3) >= 3, "path {p} on the dead plane: {} RTOs", word(p, 3));
        if p != cfg.fail_plane {
            assert!(
                word(p, 0) >= mean / 4,
                "moved path {p}: {} packets, live mean {mean}",
                word(p, 0)
            );
        }
    }
}

fn summary(name: &str, r: &ScenarioReport) {
    let us = |c: u64| c as f64 / f64::from(CYCLES_PER_US);
    eprintln!(
        "{name}: plane {} dead at cycle {}; detected +{} cycles ({:.1} us), plane down and paths moved +{} \
         cycles ({:.1} us), {} polls; transfer {} us, {} frames dropped, {} RTOs, {} firmware commands, \
         {} core ops, {} cycles",
        r.config.fail_plane,
        r.fail_cycle,
        r.detect_cycles.unwrap_or(0),
        us(r.detect_cycles.unwrap_or(0)),
        r.repair_cycles.unwrap_or(0),
        us(r.repair_cycles.unwrap_or(0)),
        r.polls_to_repair.unwrap_or(0),
        r.transfer_ns / 1000,
        r.frames_dropped,
        r.rtos,
        r.commands.len(),
        r.core_ops,
        r.cycles
    );
}

#[test]
fn firmware_repairs_a_dead_plane_on_the_software_core() {
    let cfg = ScenarioConfig::default();
    let r = run(&cfg, CoreCsrModel::new()).expect("scenario");
    summary("software core", &r);
    check_repaired(&r);
    let again = run(&cfg, CoreCsrModel::new()).expect("scenario");
    assert_eq!(again, r, "not deterministic");
}

fn hardware_matches_software(cfg: &ScenarioConfig) {
    let sw = run(cfg, CoreCsrModel::new()).expect("software scenario");
    // The Verilated transport_core; without Verilator, rust-hdl's simulation of the same
    // design (about 20 s instead of 0.3 s), so the hardware is never skipped.
    let (name, hw) = match Verilated::<TransportCorePins>::new() {
        Ok(dut) => ("verilated core", run(cfg, PinsCore::new(dut))),
        Err(CosimError::VerilatorMissing) => (
            "rust-hdl core",
            run(cfg, PinsCore::new(RustHdl::<TransportCorePins>::new())),
        ),
        Err(e) => panic!("cannot build the Verilated transport_core: {e}"),
    };
    let hw = hw.expect("hardware scenario");
    summary("software core", &sw);
    summary(name, &hw);
    check_repaired(&hw);
    if let Err(e) = sw.same_outcome(&hw) {
        panic!("{name} and software core disagree: {e}");
    }
    // every poll started on its clock (the core had drained the data path by then), so the
    // commands carry the same cycle stamps and detection and repair take the same clocks
    assert_eq!(hw.late_polls, 0, "{name}: polls started late");
    // (setup's P_STATE read-backs wait for the hardware's record latency: only their stamps differ)
    assert_eq!(sw.setup_commands, hw.setup_commands);
    let polled = |r: &ScenarioReport| r.commands[r.setup_commands..].to_vec();
    assert_eq!(polled(&sw), polled(&hw), "{name}: command timing");
    assert_eq!(
        (sw.detect_cycles, sw.repair_cycles),
        (hw.detect_cycles, hw.repair_cycles)
    );
}

#[test]
fn hardware_core_gives_the_same_outcome_as_the_software_core() {
    hardware_matches_software(&ScenarioConfig::default());
}

#[test]
fn hardware_core_agrees_on_other_failures() {
    for (seed, fail_plane, fail_after_ns) in [(7, 3, 80_000), (8, 0, 5_000)] {
        hardware_matches_software(&ScenarioConfig {
            seed,
            fail_plane,
            fail_after_ns,
            ..ScenarioConfig::default()
        });
    }
}

#[test]
fn a_disagreeing_core_is_caught() {
    // the comparison is not vacuous: a different failure gives a different outcome
    let cfg = ScenarioConfig::default();
    let a = run(&cfg, CoreCsrModel::new()).expect("scenario");
    let b = run(&ScenarioConfig { fail_plane: 2, ..cfg }, CoreCsrModel::new()).expect("scenario");
    check_repaired(&b);
    assert!(a.same_outcome(&b).is_err());
}

#[test]
fn the_model_policy_alone_also_completes() {
    // reference: the same scenario with the model connection's own health policy, no firmware
    let cfg = ScenarioConfig {
        firmware: false,
        ..ScenarioConfig::default()
    };
    let r = run(&cfg, CoreCsrModel::new()).expect("scenario");
    eprintln!(
        "model policy: transfer {} us, {} frames dropped, {} RTOs",
        r.transfer_ns / 1000,
        r.frames_dropped,
        r.rtos
    );
    assert!(r.completed && r.data_intact, "{r:#?}");
    assert!(r.frames_dropped > 0);
    assert!(r.commands.is_empty());
    assert_eq!(
        r.planes_up & (1 << cfg.fail_plane),
        0,
        "the model did not take the plane down"
    );
}
