//! Every control-plane function against the register-bank model of `transport_core`.
use mroce_csr as csr;
use mroce_csr::{health, sel_op};
use mroce_firmware::bank::{RegBank, SelCommand};
use mroce_firmware::control::TELEMETRY_WORDS;
use mroce_firmware::{CcParams, Config, ConnId, ConnRequest, ConnTable, Error, Firmware};
use mroce_model::path_selector::{entropy_from, PathHealth};

fn req(paths: u8, planes: u8) -> ConnRequest {
    ConnRequest {
        peer: 0x0A00_0002,
        paths,
        planes,
        cc: CcParams {
            conn_limit: 100,
            rto_min_ns: 50_000,
            rto_init_ns: 200_000,
        },
    }
}

fn cmds(b: &RegBank<4>, op: u32) -> Vec<SelCommand> {
    b.commands().iter().copied().filter(|c| c.op == op).collect()
}

#[test]
fn boot_checks_identity_and_bus() {
    let mut t = ConnTable::<4>::new();
    let mut bank = RegBank::<4>::new();
    let fw = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).expect("boot");
    assert_eq!(fw.contexts(), 4);
    assert_eq!(bank.read_reg(csr::CONTROL), csr::CONTROL_ROOM_FROM_SCOREBOARD);
    assert_eq!(bank.fault(), 0);

    let mut bank = RegBank::<4>::new();
    bank.version = 1;
    let e = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).err();
    assert_eq!(
        e,
        Some(Error::BadIdentity {
            offset: csr::VERSION,
            read: 1
        })
    );
    assert_eq!(bank.fault(), csr::fault::BAD_IDENTITY | (u32::from(csr::VERSION) << 8));

    // a bus bit stuck: SCRATCH reads back wrong
    let mut bank = RegBank::<4>::new();
    bank.corrupt = Some((csr::SCRATCH, 1 << 7));
    let e = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).err();
    assert!(
        matches!(
            e,
            Some(Error::Readback {
                offset: csr::SCRATCH,
                ..
            })
        ),
        "{e:?}"
    );
    assert_eq!(bank.fault() & 0xFF, csr::fault::READBACK);
}

trait ReadReg {
    fn read_reg(&mut self, o: u16) -> u32;
}
impl<const C: usize> ReadReg for RegBank<C> {
    fn read_reg(&mut self, o: u16) -> u32 {
        mroce_firmware::Csr::read(self, o)
    }
}

#[test]
fn setup_assigns_planes_entropies_and_programs_the_selector() {
    let mut t = ConnTable::<4>::new();
    let mut bank = RegBank::<4>::new();
    let mut fw = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).unwrap();
    let id = fw.setup(&req(8, 4)).expect("setup");
    for p in 0..8 {
        assert_eq!(fw.path_plane(id, p), Ok(p % 4));
        assert_eq!(fw.path_health(id, p), Ok(health::UP));
    }
    assert_eq!(fw.planes_up(id), Ok(0b1111));
    let sel = &bank.ctx[0].selector;
    let inits = cmds(&bank, sel_op::INIT);
    assert_eq!((inits.len(), inits[0].a, inits[0].b), (1, 8, 4));
    // consecutive entropies within a plane, from one random base per plane (SPEC.md §8.1)
    let rerolls = cmds(&bank, sel_op::REROLL);
    assert_eq!(rerolls.len(), 8);
    for r in &rerolls {
        assert_eq!(sel.path(r.path).entropy, entropy_from(r.a));
        if r.path >= 4 {
            let base = rerolls[usize::from(r.path - 4)].a;
            assert_eq!(r.a, base.wrapping_add(1), "path {} vs {}", r.path, r.path - 4);
        }
    }
    for p in 0..16u8 {
        let s = sel.path(p);
        if p < 8 {
            assert_eq!((s.plane, s.health), (p % 4, PathHealth::Up));
        } else {
            assert_eq!(s.health, PathHealth::Disabled);
        }
    }
    let lim = cmds(&bank, sel_op::SET_CONN_LIMIT);
    assert_eq!(lim.last().map(|c| c.a), Some(100));
    assert_eq!(bank.fault(), 0);
}

#[test]
fn setup_refuses_bad_parameters_full_table_and_missing_contexts() {
    let mut t = ConnTable::<2>::new();
    let mut bank = RegBank::<4>::new();
    let mut fw = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).unwrap();
    assert_eq!(fw.setup(&req(0, 1)), Err(Error::BadParameter));
    assert_eq!(fw.setup(&req(17, 1)), Err(Error::BadParameter));
    assert_eq!(fw.setup(&req(4, 9)), Err(Error::BadParameter));
    assert_eq!(fw.hw().fault(), csr::fault::BAD_PARAMETER);
    fw.setup(&req(4, 2)).unwrap();
    fw.setup(&req(4, 2)).unwrap();
    assert_eq!(fw.setup(&req(4, 2)), Err(Error::TableFull));
    assert_eq!(fw.hw().fault(), csr::fault::TABLE_FULL);
    assert_eq!(fw.connections(), 2);
    assert_eq!(fw.stats.faults, 4);

    // one hardware context (this core): the second connection has none
    let mut t = ConnTable::<8>::new();
    let mut bank = RegBank::<1>::new();
    let mut fw = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).unwrap();
    let a = fw.setup(&req(16, 4)).unwrap();
    assert_eq!(fw.setup(&req(16, 4)), Err(Error::NoContext));
    fw.teardown(a).unwrap();
    fw.setup(&req(16, 4)).expect("the context is free again");
}

#[test]
fn teardown_frees_and_refuses_unknown_or_stale_ids() {
    let mut t = ConnTable::<4>::new();
    let mut bank = RegBank::<4>::new();
    let mut fw = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).unwrap();
    let id = fw.setup(&req(4, 2)).unwrap();
    fw.teardown(id).unwrap();
    assert_eq!(fw.connections(), 0);
    assert_eq!(fw.teardown(id), Err(Error::UnknownConnection), "stale id");
    assert_eq!(fw.hw().fault(), csr::fault::UNKNOWN_CONNECTION);
    assert_eq!(
        fw.teardown(ConnId {
            slot: 200,
            generation: 1
        }),
        Err(Error::UnknownConnection)
    );
    assert_eq!(fw.telemetry(id).err(), Some(Error::UnknownConnection));
    assert_eq!(fw.set_cc(id, CcParams::default()), Err(Error::UnknownConnection));
    let id2 = fw.setup(&req(4, 2)).unwrap();
    assert_eq!(id2.slot, id.slot);
    assert_ne!(id2.generation, id.generation, "a reused slot has a new generation");
    for p in 0..16 {
        // the torn-down connection disabled every path before the new one re-initialised
        assert!(bank
            .commands()
            .iter()
            .any(|c| c.op == sel_op::SET_HEALTH && c.path == p && u32::from(c.a) == health::DISABLED));
    }
}

#[test]
fn cc_parameters_and_telemetry() {
    let mut t = ConnTable::<4>::new();
    let mut bank = RegBank::<4>::new();
    let mut fw = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).unwrap();
    let id = fw.setup(&req(4, 2)).unwrap();
    fw.set_cc(
        id,
        CcParams {
            conn_limit: 0,
            rto_min_ns: 80_000,
            rto_init_ns: 300_000,
        },
    )
    .unwrap();
    fw.hw().set_counter(0, 2, csr::P_ACKED, 1234);
    fw.hw().set_counter(0, 2, csr::P_SACK_LOST, 5);
    fw.hw().set_counter(0, 2, csr::P_RTO_LOST, 7);
    fw.hw().set_counter(0, 2, csr::P_RX_CE, 9);
    let tm = fw.telemetry(id).unwrap();
    assert_eq!(tm.cc.rto_min_ns, 80_000);
    assert_eq!((tm.path[2].acked, tm.path[2].lost, tm.path[2].rx_ce), (1234, 12, 9));
    assert_eq!(tm.path[2].state >> 31, 1);
    assert_eq!((tm.path[2].state >> 16) & 7, 0, "path 2 on plane 0");
    let w = tm.to_words();
    assert_eq!(w.len(), TELEMETRY_WORDS);
    assert_eq!(w[0], 0x0A00_0002);
    assert_eq!(w[1], 4 | (2 << 8) | (0b11 << 16));
    assert_eq!(w[5 + 7 * 2 + 1], 1234);
    assert_eq!(
        cmds(&bank, sel_op::SET_CONN_LIMIT).last().map(|c| c.a),
        Some(u16::MAX),
        "0 = no limit"
    );
}

#[test]
fn rto_makes_a_path_suspect_then_down_with_new_entropies() {
    let mut t = ConnTable::<4>::new();
    let mut bank = RegBank::<4>::new();
    let mut fw = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).unwrap();
    let id = fw.setup(&req(8, 2)).unwrap();
    let e0 = fw.hw().ctx[0].selector.path(3).entropy;
    fw.hw().add_counter(0, 3, csr::P_RTOS, 1);
    fw.hw().raise(csr::EVT_RTO, 3);
    let r = fw.poll().unwrap();
    assert_eq!(r.rto_paths, 1);
    assert_eq!(fw.path_health(id, 3), Ok(health::SUSPECT));
    assert_eq!(fw.hw().ctx[0].selector.path(3).health, PathHealth::Suspect);
    assert_ne!(fw.hw().ctx[0].selector.path(3).entropy, e0, "re-rolled");
    assert_eq!(fw.hw().events[0], 0, "the RTO event was cleared");
    // two more RTOs in a row: Down
    fw.hw().add_counter(0, 3, csr::P_RTOS, 2);
    let r = fw.poll().unwrap();
    assert_eq!(r.paths_down, 1);
    assert_eq!(fw.hw().ctx[0].selector.path(3).health, PathHealth::Down);
    assert_eq!(fw.stats.paths_down, 1);
    // an ACK that frees PSNs brings it back
    fw.hw().add_counter(0, 3, csr::P_ACKED, 4);
    let r = fw.poll().unwrap();
    assert_eq!(r.paths_recovered, 1);
    assert_eq!(fw.path_health(id, 3), Ok(health::UP));
    assert_eq!(fw.hw().ctx[0].selector.path(3).health, PathHealth::Up);
    // quiet poll: nothing to do
    let n = fw.hw().commands().len();
    assert_eq!(
        fw.poll().unwrap(),
        mroce_firmware::PollReport {
            connections: 1,
            ..Default::default()
        }
    );
    assert_eq!(fw.hw().commands().len(), n);
}

#[test]
fn plane_failure_is_detected_rebalanced_probed_and_repaired() {
    let mut t = ConnTable::<4>::new();
    let mut bank = RegBank::<4>::new();
    let cfg = Config {
        probe_interval_cycles: 1000,
        ..Config::DEFAULT
    };
    let mut fw = Firmware::boot(&mut bank, cfg, &mut t).unwrap();
    let id = fw.setup(&req(8, 2)).unwrap();
    // plane 1 (paths 1, 3, 5, 7) fails: every path on it times out 3 times
    let mut polls = 0;
    loop {
        for p in [1u8, 3, 5, 7] {
            fw.hw().add_counter(0, p, csr::P_RTOS, 1);
        }
        for p in [0u8, 2, 4, 6] {
            fw.hw().add_counter(0, p, csr::P_ACKED, 50);
        }
        polls += 1;
        let r = fw.poll().unwrap();
        if r.planes_down != 0 {
            assert_eq!(r.planes_down, 0b10);
            break;
        }
        assert!(polls < 5);
    }
    assert_eq!(polls, 3, "down after PATH_DOWN_RTOS RTOs in a row");
    assert_eq!(fw.planes_up(id), Ok(0b01));
    assert_eq!(
        fw.hw().ctx[0].selector.planes_up(),
        0b01,
        "SET_PLANE_UP(1, down) reached the selector"
    );
    // re-balanced: path 1 stays on plane 1 as the sentinel (Down), 3/5/7 move to plane 0
    assert_eq!(fw.path_plane(id, 1), Ok(1));
    assert_eq!(fw.path_health(id, 1), Ok(health::DOWN));
    for p in [3u8, 5, 7] {
        assert_eq!(fw.path_plane(id, p), Ok(0));
        assert_eq!(fw.hw().ctx[0].selector.path(p).plane, 0);
        assert_eq!(fw.path_health(id, p), Ok(health::SUSPECT));
    }
    // traffic keeps flowing on the live paths: the selector sprays over 7 paths, none on plane 1
    {
        let sel = &mut fw.hw().ctx[0].selector;
        let mut used = 0u32;
        for _ in 0..64 {
            if let Some(p) = sel.select(u32::MAX) {
                used |= 1 << p;
                sel.credit(&mroce_model::path_selector::Credit {
                    path: p,
                    acked: 1,
                    ..Default::default()
                });
            }
        }
        assert_eq!(used, 0b1111_1101, "every path but the sentinel carries data");
    }
    // probe rounds: the sentinel gets a new entropy each interval
    let e = fw.hw().ctx[0].selector.path(1).entropy;
    fw.hw().cycles_per_access = 100;
    let mut rounds = 0;
    for _ in 0..4 {
        fw.poll().unwrap();
        rounds = fw.stats.probe_rounds;
    }
    assert!(rounds >= 1);
    assert_ne!(fw.hw().ctx[0].selector.path(1).entropy, e);
    // a probe answered on the sentinel: plane 1 back, its paths go home
    fw.hw().add_counter(0, 1, csr::P_ACKED, 1);
    let r = fw.poll().unwrap();
    assert_eq!((r.planes_up, r.paths_recovered), (0b10, 1));
    assert_eq!(fw.planes_up(id), Ok(0b11));
    assert_eq!(fw.hw().ctx[0].selector.planes_up(), 0b11);
    for p in [1u8, 3, 5, 7] {
        assert_eq!(fw.path_plane(id, p), Ok(1));
        assert_eq!(fw.hw().ctx[0].selector.path(p).plane, 1);
    }
    assert_eq!(fw.hw().ctx[0].selector.path(1).health, PathHealth::Up);
    assert_eq!((fw.stats.planes_down, fw.stats.planes_up), (1, 1));
}

/// A bank whose paths time out while a poll is under way: when the firmware selects path
/// `when` (`PATH_SEL`), each of `paths` gets an RTO (its `P_RTOS` counter and its `EVT_RTO`
/// bit), as the hardware raises them between two of the firmware's reads.
struct RtosMidPass<'a> {
    bank: &'a mut RegBank<4>,
    when: u32,
    paths: &'a [u8],
    armed: bool,
}

impl mroce_firmware::Csr for RtosMidPass<'_> {
    fn read(&mut self, offset: u16) -> u32 {
        self.bank.read(offset)
    }
    fn write(&mut self, offset: u16, value: u32) {
        self.bank.write(offset, value);
        if self.armed && offset == csr::PATH_SEL && value == self.when {
            self.armed = false;
            for &p in self.paths {
                self.bank.add_counter(0, p, csr::P_RTOS, 1);
                self.bank.raise(csr::EVT_RTO, p);
            }
        }
    }
}

/// The third RTOs of a plane's paths arrive while the pass is between them (after paths 1 and
/// 3, before 5 and 7): the same poll handles all four and declares the plane down, instead of
/// the next poll (on the soft core, a whole poll later: firmware/README.md).
#[test]
fn rtos_during_a_pass_take_the_plane_down_in_that_poll() {
    let mut t = ConnTable::<4>::new();
    let mut bank = RegBank::<4>::new();
    let plane1 = [1u8, 3, 5, 7];
    let hw = RtosMidPass {
        bank: &mut bank,
        when: 4,
        paths: &plane1,
        armed: false,
    };
    let mut fw = Firmware::boot(hw, Config::DEFAULT, &mut t).unwrap();
    let id = fw.setup(&req(8, 2)).unwrap();
    // two RTOs in a row on every path of plane 1, seen by two polls
    for _ in 0..2 {
        for p in plane1 {
            fw.hw().bank.add_counter(0, p, csr::P_RTOS, 1);
        }
        assert_eq!(fw.poll().unwrap().planes_down, 0);
    }
    fw.hw().armed = true;
    let r = fw.poll().unwrap();
    assert!(!fw.hw().armed, "the RTOs fired during the pass");
    assert_eq!(r.planes_down, 0b10, "{r:?}");
    assert_eq!(r.paths_down, 4);
    assert_eq!(fw.planes_up(id), Ok(0b01));
    for p in [3u8, 5, 7] {
        assert_eq!(fw.path_plane(id, p), Ok(0), "path {p} moved to the live plane");
    }
}

#[test]
fn loss_rule_and_ecn_reroute_move_paths_once_drained() {
    let mut t = ConnTable::<4>::new();
    let mut bank = RegBank::<4>::new();
    let mut fw = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).unwrap();
    let id = fw.setup(&req(4, 1)).unwrap();
    // 20 lost of 100: above 5%
    fw.hw().add_counter(0, 2, csr::P_SACK_LOST, 12);
    fw.hw().add_counter(0, 2, csr::P_RTO_LOST, 8);
    fw.hw().add_counter(0, 2, csr::P_ACKED, 80);
    // 3 lost of 1000: below 5%
    fw.hw().add_counter(0, 1, csr::P_SACK_LOST, 3);
    fw.hw().add_counter(0, 1, csr::P_ACKED, 997);
    fw.hw().raise(csr::EVT_REROUTE, 0);
    fw.hw().clear_commands();
    let r = fw.poll().unwrap();
    assert_eq!((r.lossy_paths, r.ecn_reroutes), (1, 1));
    assert_eq!(fw.path_health(id, 2), Ok(health::SUSPECT));
    assert_eq!(fw.path_health(id, 1), Ok(health::UP));
    let rr: Vec<u8> = fw
        .hw()
        .commands()
        .iter()
        .filter(|c| c.op == sel_op::REQUEST_REROLL)
        .map(|c| c.path)
        .collect();
    assert_eq!(rr, vec![0, 2]);
    assert_eq!(fw.hw().events[2], 0, "re-route event cleared");
}

#[test]
fn counter_wrap_gives_exact_deltas() {
    let mut t = ConnTable::<4>::new();
    let mut bank = RegBank::<4>::new();
    for p in 0..4 {
        bank.set_counter(0, p, csr::P_RTOS, u32::MAX - 1);
        bank.set_counter(0, p, csr::P_ACKED, u32::MAX - 5);
    }
    let mut fw = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).unwrap();
    let id = fw.setup(&req(4, 2)).unwrap();
    // path 0: RTO counter wraps through zero (3 RTOs -> Down); path 1: ACKs wrap (progress only)
    fw.hw().add_counter(0, 0, csr::P_RTOS, 3);
    fw.hw().add_counter(0, 1, csr::P_ACKED, 10);
    assert!(fw.hw().counter(0, 0, csr::P_RTOS) < 5, "wrapped");
    let r = fw.poll().unwrap();
    assert_eq!((r.rto_paths, r.paths_down), (1, 1));
    assert_eq!(fw.path_health(id, 0), Ok(health::DOWN));
    assert_eq!(fw.path_health(id, 1), Ok(health::UP));
    assert_eq!(
        fw.path_health(id, 2),
        Ok(health::UP),
        "an unchanged counter near the top is no event"
    );
}

#[test]
fn a_register_that_reads_back_wrong_is_a_fault_not_a_panic() {
    let mut t = ConnTable::<4>::new();
    let mut bank = RegBank::<4>::new();
    let mut fw = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).unwrap();
    // P_STATE reports another entropy than the one programmed: setup fails, nothing allocated
    fw.hw().corrupt = Some((csr::P_STATE, 0x0001));
    let e = fw.setup(&req(4, 2));
    assert!(
        matches!(
            e,
            Err(Error::Readback {
                offset: csr::P_STATE,
                ..
            })
        ),
        "{e:?}"
    );
    assert_eq!(fw.hw().fault(), csr::fault::READBACK | (u32::from(csr::P_STATE) << 8));
    assert_eq!(fw.connections(), 0);
    fw.hw().corrupt = None;
    let id = fw.setup(&req(4, 2)).unwrap();
    // PATH_SEL stuck bit during a poll
    fw.hw().corrupt = Some((csr::PATH_SEL, 0x4));
    assert!(matches!(
        fw.poll(),
        Err(Error::Readback {
            offset: csr::PATH_SEL,
            ..
        })
    ));
    fw.hw().corrupt = None;
    fw.poll().unwrap();
    // a selector that never takes a command
    fw.hw().stuck_selector = true;
    assert_eq!(fw.set_cc(id, CcParams::default()), Err(Error::CommandTimeout));
    assert_eq!(fw.hw().fault() & 0xFF, csr::fault::COMMAND_TIMEOUT);
}

/// Arbitrary counter movements and events never panic the monitor, never make it fail, and
/// every path's firmware view stays equal to the selector's.
#[test]
fn random_counter_movements_keep_firmware_and_selector_consistent() {
    let mut t = ConnTable::<4>::new();
    let mut bank = RegBank::<4>::new();
    let mut fw = Firmware::boot(&mut bank, Config::DEFAULT, &mut t).unwrap();
    let ids = [fw.setup(&req(16, 4)).unwrap(), fw.setup(&req(5, 3)).unwrap()];
    let mut x = 0x1234_5678u32;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    for _ in 0..300 {
        for ctx in 0..2 {
            for p in 0..16u8 {
                let r = rnd();
                if r & 7 == 0 {
                    fw.hw().add_counter(ctx, p, csr::P_RTOS, r >> 30);
                }
                if r & 0x18 != 0 {
                    fw.hw().add_counter(ctx, p, csr::P_ACKED, (r >> 8) & 0xFF);
                }
                if r & 0x60 == 0x60 {
                    fw.hw().add_counter(ctx, p, csr::P_SACK_LOST, (r >> 16) & 0x3F);
                }
                if r & 0x180 == 0x180 {
                    fw.hw().raise(csr::EVT_REROUTE, p);
                }
            }
        }
        fw.poll().expect("poll");
        for (k, id) in ids.iter().enumerate() {
            let paths = if k == 0 { 16 } else { 5 };
            for p in 0..paths {
                let s = *fw.hw().ctx[k].selector.path(p);
                assert_eq!(fw.path_plane(*id, p), Ok(s.plane));
                let h = fw.path_health(*id, p).unwrap();
                let hs = match s.health {
                    PathHealth::Up => health::UP,
                    PathHealth::Suspect => health::SUSPECT,
                    PathHealth::Down => health::DOWN,
                    PathHealth::Disabled => health::DISABLED,
                };
                assert_eq!(h, hs, "conn {k} path {p}");
            }
        }
    }
    assert!(
        fw.stats.planes_down > 0 && fw.stats.paths_recovered > 0,
        "{:?}",
        fw.stats
    );
    assert_eq!(fw.hw().fault(), 0);
}

#[test]
fn memory_map_matches_the_linker_script() {
    use mroce_firmware::memory_map::*;
    let x = include_str!("../memory.x");
    assert!(x.contains(&format!("ORIGIN = 0x{RAM_BASE:08X}")), "{x}");
    assert!(x.contains(&format!("LENGTH = {}K", RAM_SIZE / 1024)));
    assert!(x.contains(&format!("_stack_size = {}K", STACK_SIZE / 1024)));
    assert_eq!(CSR_SIZE, 0x100);
    const { assert!(CSR_BASE >= RAM_BASE + RAM_SIZE) };
}
