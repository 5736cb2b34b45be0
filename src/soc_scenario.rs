//! The firmware plane-failure scenario with the firmware running on the soft core (issue 6, SoC
//! co-simulation): the Verilated SoC (hdl/soc/mroce_soc.v: PicoRV32 executing the
//! riscv32im image from RAM, `transport_core` on its CSR bus) takes the place of the host-built
//! firmware and the lone core of [`crate::plane_failure`].
//!
//! The data path is the model's, as there: NIC A's component operations go to the SoC's
//! streams ([`PinsCore`], every record checked against the model's result). The firmware runs
//! freely: boot, connection setup, then its poll loop, at one instruction per PicoRV32 cycle
//! budget. The harness watches the CSR bus; every `SEL_CMD` the firmware writes is applied to
//! A's connection at the end of the simulation step in which the core took it, and the SoC's
//! bridge holds a `SEL_CMD` write while the selector stream still carries operations the model
//! applied before it, so hardware and model see the same order. Heartbeats (`SCRATCH`) mark the
//! end of each poll; the firmware's statistics come from its status record in RAM.
use crate::plane_failure::{
    check_config, cycle_at, open_link, post_transfer, routing, CoreBackend, FirmwareCommand, Link, PinsCore,
    ScenarioConfig, ScenarioError,
};
use mroce_csr as csr;
use mroce_firmware::control::Stats;
use mroce_firmware::soc_status::{SocStatus, STATUS_SYMBOL, STATUS_WORDS};
use mroce_model::endpoint::Endpoint;
use mroce_model::params::PATHS;
use mroce_model::transport::{ConnId, Status, Transport};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The soft-core image as the SoC's RAM holds it.
#[derive(Debug, Clone)]
pub struct SocImage {
    /// RAM words from address 0.
    pub words: Vec<u32>,
    /// Byte address of the status record.
    pub status_addr: u32,
}

impl SocImage {
    /// Load the riscv32im ELF image.
    pub fn from_elf(bytes: &[u8]) -> Result<SocImage, ScenarioError> {
        use mroce_firmware::memory_map::{RAM_BASE, RAM_SIZE};
        // PicoRV32 runs without the C extension (hdl/soc/mroce_soc.v): a riscv32imc image
        // would trap at its first compressed instruction
        if mroce_firmware::elf::uses_compressed(bytes).map_err(|e| ScenarioError::SoftCore(format!("image: {e:?}")))? {
            return Err(ScenarioError::SoftCore(format!(
                "image built with compressed instructions (riscv32imc?); the SoC's PicoRV32 has no C extension: cargo build -p mroce-firmware --target {IMAGE_TARGET} --release"
            )));
        }
        let mut ram = vec![0u8; RAM_SIZE as usize];
        let end = mroce_firmware::elf::load_into(bytes, RAM_BASE, &mut ram)
            .map_err(|e| ScenarioError::SoftCore(format!("image: {e:?}")))?;
        let status_addr = mroce_firmware::elf::symbol_address(bytes, STATUS_SYMBOL)
            .map_err(|e| ScenarioError::SoftCore(format!("image symbols: {e:?}")))?
            .ok_or_else(|| {
                ScenarioError::SoftCore("image has no MROCE_STATUS symbol (not the soft-core image?)".into())
            })?;
        let words = ram[..end.div_ceil(4) * 4]
            .chunks(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        Ok(SocImage { words, status_addr })
    }

    /// Read the image from `path`.
    pub fn from_file(path: &Path) -> Result<SocImage, ScenarioError> {
        let bytes = std::fs::read(path).map_err(|e| {
            ScenarioError::SoftCore(format!(
                "{}: {e} (build it: cargo build -p mroce-firmware --target {} --release)",
                path.display(),
                IMAGE_TARGET
            ))
        })?;
        Self::from_elf(&bytes)
    }
}

/// Build the soft-core image with cargo (release, incremental) into `target_dir` and load it:
/// for tests and tools that need the image of the current sources (a separate target directory
/// keeps a running cargo's lock out of the way).
pub fn build_image(target_dir: &Path) -> Result<SocImage, ScenarioError> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = std::process::Command::new(cargo)
        .current_dir(&root)
        .args([
            "build",
            "-q",
            "-p",
            "mroce-firmware",
            "--release",
            "--target",
            IMAGE_TARGET,
        ])
        .arg("--target-dir")
        .arg(target_dir)
        .status()
        .map_err(|e| ScenarioError::SoftCore(format!("cannot run cargo: {e}")))?;
    if !st.success() {
        return Err(ScenarioError::SoftCore(format!(
            "building the soft-core image failed (rustup target add {IMAGE_TARGET}, or bash scripts/setup.sh)"
        )));
    }
    SocImage::from_file(&target_dir.join(IMAGE_TARGET).join("release").join("mroce-firmware"))
}

/// The soft core's Rust target.
pub const IMAGE_TARGET: &str = "riscv32im-unknown-none-elf";

/// Where cargo puts the release image (`$CARGO_TARGET_DIR`, else `target/` of the workspace).
pub fn default_image_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join(IMAGE_TARGET).join("release").join("mroce-firmware")
}

/// What happened on the SoC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SocReport {
    /// The configuration.
    pub config: ScenarioConfig,
    /// Every WRITE completed OK on both sides.
    pub completed: bool,
    /// Destination region equals the source region.
    pub data_intact: bool,
    /// Simulated time from the first WRITE to the last completion, ns.
    pub transfer_ns: u64,
    /// Cycles from reset release to the end of setup (first heartbeat).
    pub boot_cycles: u64,
    /// Instructions the core started in that time.
    pub boot_instructions: u32,
    /// `SEL_CMD`s of boot and setup.
    pub setup_commands: usize,
    /// SoC cycle at the failure.
    pub fail_cycle: u64,
    /// Frames dropped on the dead plane.
    pub frames_dropped: u64,
    /// First firmware command on a path of the dead plane after the failure (cycle).
    pub detect_cycle: Option<u64>,
    /// The firmware's `SET_PLANE_UP(plane, down)` for the dead plane (cycle).
    pub plane_down_cycle: Option<u64>,
    /// The last command of that poll on a path it moved off the dead plane (its `SET_PLANE`
    /// to a live plane, then `SET_HEALTH` and `REROLL`): traffic is repaired from here. The
    /// sentinel left on the dead plane, and its probe re-rolls, do not count.
    pub paths_moved_cycle: Option<u64>,
    /// End of the poll that declared the plane down and moved its paths (heartbeat cycle).
    pub repair_cycle: Option<u64>,
    /// Detection delay, cycles after the failure.
    pub detect_cycles: Option<u64>,
    /// Paths moved, cycles after the failure ([`SocReport::paths_moved_cycle`]).
    pub paths_moved_cycles: Option<u64>,
    /// Repair delay (plane down and paths moved), cycles after the failure.
    pub repair_cycles: Option<u64>,
    /// Polls the firmware completed from the failure to the repair.
    pub polls_to_repair: Option<u32>,
    /// Instructions the core started from the failure to the repair.
    pub instructions_to_repair: Option<u32>,
    /// Every firmware `SEL_CMD`, in order.
    pub commands: Vec<FirmwareCommand>,
    /// Heartbeats seen (polls completed, plus the one after setup).
    pub heartbeats: u32,
    /// Mean cycles per poll over the run.
    pub cycles_per_poll: Option<u64>,
    /// Last `FAULT` word the firmware wrote (0: none).
    pub fault_register: u32,
    /// The firmware's status record at the end.
    pub firmware: Stats,
    /// Planes up in A's selector at the end (bit k).
    pub planes_up: u8,
    /// Paths of A's selector per plane at the end.
    pub paths_per_plane: Vec<u8>,
    /// A's RTOs.
    pub rtos: u64,
    /// Component operations fed to the transport.
    pub core_ops: u64,
    /// SoC cycles at the end (from power-up, image load included).
    pub cycles: u64,
    /// Instructions the core started in all (low 32 bits).
    pub instructions: u32,
    /// Most cycles the SoC clock ran ahead of simulated time (the data path's operations of a
    /// step took longer than the step at [`mroce_firmware::memory_map::CYCLES_PER_US`]).
    pub max_cycles_ahead: u64,
}

/// Cycles the firmware gets to boot and set up the connection.
const BOOT_LIMIT_CYCLES: u64 = 5_000_000;

fn feed(core: &mut PinsCore<mroce_cosim::soc::Soc>, a: &mut Endpoint, conn: ConnId) -> Result<u64, ScenarioError> {
    let mut ops = 0;
    for (id, calls) in a.take_component_calls() {
        if id != conn {
            continue;
        }
        ops += (calls.rx.len() + calls.tx.len() + calls.sel.len()) as u64;
        core.apply_calls(&calls)?;
    }
    Ok(ops)
}

fn check_core(core: &mut PinsCore<mroce_cosim::soc::Soc>) -> Result<(), ScenarioError> {
    let cycle = core.cycle();
    let last = *core.dut().last();
    if last.trap {
        return Err(ScenarioError::SoftCore(format!("PicoRV32 trapped at cycle {cycle}")));
    }
    if last.bus_error {
        return Err(ScenarioError::SoftCore(format!(
            "bus error (unmapped address) by cycle {cycle}"
        )));
    }
    if let Some(m) = core.mismatch() {
        return Err(ScenarioError::Replay(m.to_string()));
    }
    Ok(())
}

fn apply(l: &mut Link, conn: ConnId, cmds: &[FirmwareCommand]) -> Result<(), ScenarioError> {
    for c in cmds {
        let op = c.control_op()?;
        l.a.apply_control(l.now, conn, op)
            .map_err(|err| ScenarioError::Refused { op, err })?;
    }
    Ok(())
}

/// Run the scenario on the Verilated SoC with `image` in its RAM; `vcd` writes a trace of the
/// whole run (large: use it on short runs).
pub fn run_soc(cfg: &ScenarioConfig, image: &SocImage, vcd: Option<&Path>) -> Result<SocReport, ScenarioError> {
    check_config(cfg)?;
    let image_planes = ((csr::PARAMS_VALUE >> 24) as u8).min(4);
    if !cfg.firmware || usize::from(cfg.paths) != PATHS || cfg.planes != image_planes {
        return Err(ScenarioError::Config(
            "the soft-core image runs the health monitor on 16 paths over 4 planes",
        ));
    }
    let mut soc = mroce_cosim::soc::Soc::new(vcd.is_some())?;
    if let Some(p) = vcd {
        mroce_cosim::Backend::trace(&mut soc, p)?;
    }
    if !soc.load(0, &image.words) {
        return Err(ScenarioError::SoftCore(format!(
            "image of {} words does not fit the RAM",
            image.words.len()
        )));
    }
    let (mut l, conn, paths, _) = open_link(cfg)?;
    let cycles0 = soc.cycles();
    let mut core = PinsCore::at_cycle(soc, cycles0);
    let mut core_ops = feed(&mut core, &mut l.a, conn)?;

    // boot and setup, on the core, before any data is sent
    core.dut().set_cpu_run(true);
    let boot_start = core.cycle();
    while core.bus.heartbeats.is_empty() {
        if core.cycle() - boot_start > BOOT_LIMIT_CYCLES {
            return Err(ScenarioError::SoftCore(format!(
                "no heartbeat {BOOT_LIMIT_CYCLES} cycles after reset (FAULT {:#x})",
                core.bus.fault
            )));
        }
        let t = core.cycle() + 1000;
        core.advance_to(t);
        check_core(&mut core)?;
    }
    let (boot_end, _, boot_instructions) = core.bus.heartbeats[0];
    let mut heartbeats = core.bus.heartbeats.len() as u32;
    let mut last_polls = core.bus.heartbeats.last().map_or(0, |h| h.1);
    core.bus.heartbeats.clear();
    let setup: Vec<FirmwareCommand> = std::mem::take(&mut core.bus.commands);
    apply(&mut l, conn, &setup)?;
    let mut commands = setup.clone();

    let (src, dst, n) = post_transfer(&mut l, cfg, conn)?;
    let start = l.now;
    // SoC cycle of simulated time t: base + cycle_at(t)
    let base = core.cycle().saturating_sub(cycle_at(l.now));
    let fail_at = start + cfg.fail_after_ns;
    let fail_cycle = base + cycle_at(fail_at);
    let limit = start + cfg.time_limit_ns;
    let (mut detect_cycle, mut plane_down_cycle, mut repair_cycle) = (None, None, None);
    // after the plane is declared down: the paths moved off it (bit p), and the last command
    // on one of them in that poll
    let (mut moved_paths, mut moved_cycle): (Option<u32>, Option<u64>) = (None, None);
    let (mut polls_at_fail, mut instr_at_fail) = (None, 0u32);
    let (mut polls_to_repair, mut instructions_to_repair) = (None, None);
    let mut max_ahead = 0u64;
    let done = |l: &Link| Link::completions(&l.events_a).count() >= n && Link::completions(&l.events_b).count() >= n;
    while !done(&l) && l.now < limit {
        if l.dead_plane.is_none() && l.now >= fail_at {
            l.dead_plane = Some(cfg.fail_plane);
            polls_at_fail = Some(last_polls);
            instr_at_fail = core.dut().last().instret;
        }
        l.step(cfg.step_ns);
        core_ops += feed(&mut core, &mut l.a, conn)?;
        let target = base + cycle_at(l.now);
        max_ahead = max_ahead.max(core.cycle().saturating_sub(target));
        core.advance_to(target);
        check_core(&mut core)?;
        let on_dead: Vec<bool> = {
            let c = l.a.connection(conn).ok_or(ScenarioError::NoConnection)?;
            (0..PATHS as u8)
                .map(|p| c.selector().path(p).plane == cfg.fail_plane)
                .collect()
        };
        let new = std::mem::take(&mut core.bus.commands);
        apply(&mut l, conn, &new)?;
        if l.dead_plane.is_some() {
            for c in new.iter().filter(|c| c.cycle >= fail_cycle) {
                if detect_cycle.is_none() && on_dead[usize::from(c.path) % PATHS] && c.op != csr::sel_op::SET_PLANE_UP {
                    detect_cycle = Some(c.cycle);
                }
                if plane_down_cycle.is_none()
                    && c.op == csr::sel_op::SET_PLANE_UP
                    && !c.flag
                    && c.a == u16::from(cfg.fail_plane)
                {
                    plane_down_cycle = Some(c.cycle);
                    moved_paths = Some(0);
                }
                if let (Some(moved), None) = (moved_paths.as_mut(), repair_cycle) {
                    let bit = 1u32 << (usize::from(c.path) % PATHS);
                    if c.op == csr::sel_op::SET_PLANE
                        && c.a != u16::from(cfg.fail_plane)
                        && on_dead[usize::from(c.path) % PATHS]
                    {
                        *moved |= bit;
                    }
                    let follows = matches!(c.op, csr::sel_op::SET_HEALTH | csr::sel_op::REROLL);
                    if *moved & bit != 0 && (c.op == csr::sel_op::SET_PLANE || follows) {
                        moved_cycle = Some(c.cycle);
                    }
                }
            }
        }
        commands.extend(new);
        for (cycle, polls, instr) in std::mem::take(&mut core.bus.heartbeats) {
            heartbeats += 1;
            last_polls = polls;
            if let (Some(down), None, Some(p0)) = (plane_down_cycle, repair_cycle, polls_at_fail) {
                if cycle >= down {
                    repair_cycle = Some(cycle);
                    polls_to_repair = Some(polls.wrapping_sub(p0) & 0xFFFF);
                    instructions_to_repair = Some(instr.wrapping_sub(instr_at_fail));
                }
            }
        }
    }
    let completed = done(&l)
        && Link::completions(&l.events_a).all(|c| c.status == Status::Ok)
        && Link::completions(&l.events_b).all(|c| c.status == Status::Ok);
    let data_intact = l.a.memory().region(src).ok() == l.b.memory().region(dst).ok();
    let (planes_up, paths_per_plane) = routing(&l, cfg, conn, paths);
    core.dut().close_trace();
    let mut words = [0u32; STATUS_WORDS];
    for (k, w) in words.iter_mut().enumerate() {
        *w = core.dut().read_ram(image.status_addr as usize / 4 + k);
    }
    let status =
        SocStatus::from_words(&words).ok_or_else(|| ScenarioError::SoftCore("no status record in RAM".into()))?;
    if status.setup_fault != 0 {
        return Err(ScenarioError::SoftCore(format!(
            "setup failed: FAULT {:#x}",
            status.setup_fault
        )));
    }
    let cycles = core.cycle();
    let run_cycles = cycles - boot_end;
    Ok(SocReport {
        config: *cfg,
        completed,
        data_intact,
        transfer_ns: l.now - start,
        boot_cycles: boot_end - boot_start,
        boot_instructions,
        setup_commands: setup.len(),
        fail_cycle,
        frames_dropped: l.dropped,
        detect_cycle,
        plane_down_cycle,
        paths_moved_cycle: moved_cycle,
        repair_cycle,
        detect_cycles: detect_cycle.map(|c| c.saturating_sub(fail_cycle)),
        paths_moved_cycles: moved_cycle.map(|c| c.saturating_sub(fail_cycle)),
        repair_cycles: repair_cycle.map(|c| c.saturating_sub(fail_cycle)),
        polls_to_repair,
        instructions_to_repair,
        commands,
        heartbeats,
        cycles_per_poll: (status.stats.polls > 0).then(|| run_cycles / u64::from(status.stats.polls)),
        fault_register: core.bus.fault,
        firmware: status.stats,
        planes_up,
        paths_per_plane,
        rtos: l.a.stats().rtos,
        core_ops,
        cycles,
        instructions: core.dut().last().instret,
        max_cycles_ahead: max_ahead,
    })
}
