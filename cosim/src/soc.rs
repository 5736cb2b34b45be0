//! The SoC (hdl/soc/mroce_soc.v): PicoRV32 running the firmware image from RAM, with
//! `transport_core` on its CSR bus, as one Verilated design. The transport's three streams are
//! driven from outside exactly as for `transport_core` alone ([`Soc`] is a [`Backend`] with the
//! core's pins, the CSR fields of [`CoreIn`] unused: the CPU owns the bus); the harness also sees
//! every CSR write the CPU makes ([`SocOut::csr_write`]), can hold `SEL_CMD` writes while the
//! selector stream is busy, loads the RAM and reads it back without a bus cycle.
use crate::pins::{CoreIn, CoreOut, Pins, RxSlots, SelSlots, TxSlots, Verilated, VerilatedPins};
use crate::verilated::{ModelTable, Slot, VerilatedModel};
use crate::{Backend, CosimError};
use std::path::Path;

/// RAM words of the SoC (`MROCE_RAM_BYTES` / 4; the load and debug ports are 14 bits).
pub const RAM_WORDS: usize = 1 << 14;

/// Inputs of `mroce_soc`: the transport's streams plus the harness controls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocIn {
    /// Streams (the CSR fields are ignored: the CPU drives the bus).
    pub core: CoreIn,
    /// PicoRV32 runs (reset released).
    pub cpu_run: bool,
    /// Keep a `SEL_CMD` write from starting.
    pub cmd_hold: bool,
    /// `CONTROL` bit 0 kept in the bridge's shadow (SELECT carries its room on the stream).
    pub room_from_stream: bool,
    /// RAM load port.
    pub load_we: bool,
    pub load_addr: u16,
    pub load_data: u32,
    /// RAM debug read address (words).
    pub dbg_addr: u16,
}

/// Outputs of `mroce_soc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SocOut {
    /// The transport's streams (`csr_rdata` is not visible outside the SoC: 0).
    pub core: CoreOut,
    /// The CSR write transport_core takes at the end of this clock: (offset, value).
    pub csr_write: Option<(u16, u32)>,
    /// A `SEL_CMD` write waits for `cmd_hold` to drop.
    pub cmd_waiting: bool,
    /// PicoRV32 trapped.
    pub trap: bool,
    /// The CPU touched an unmapped address (sticky).
    pub bus_error: bool,
    /// Instructions the CPU has started (low 32 bits).
    pub instret: u32,
    /// transport_core's event interrupt.
    pub irq: bool,
    /// RAM word at `dbg_addr`.
    pub dbg_rdata: u32,
}

/// Slots of `mroce_soc`.
pub struct SocSlots {
    rx: RxSlots,
    tx: TxSlots,
    sel: SelSlots,
    cpu_resetn: Slot,
    cmd_hold: Slot,
    room_from_stream: Slot,
    load_we: Slot,
    load_addr: Slot,
    load_data: Slot,
    dbg_addr: Slot,
    dbg_rdata: Slot,
    tap_we: Slot,
    tap_addr: Slot,
    tap_wdata: Slot,
    cmd_waiting: Slot,
    trap: Slot,
    bus_error: Slot,
    instret: Slot,
    irq: Slot,
}

/// `mroce_soc`.
pub struct SocPins;

impl Pins for SocPins {
    type In = SocIn;
    type Out = SocOut;
}

impl VerilatedPins for SocPins {
    type Slots = SocSlots;
    #[cfg(not(mroce_no_soc))]
    fn table(traced: bool) -> Result<&'static ModelTable, CosimError> {
        Ok(if traced {
            &crate::verilated::MROCE_SOC__TRACED
        } else {
            &crate::verilated::MROCE_SOC
        })
    }
    #[cfg(mroce_no_soc)]
    fn table(_traced: bool) -> Result<&'static ModelTable, CosimError> {
        Err(CosimError::SocMissing)
    }
    fn slots(m: &VerilatedModel) -> Result<SocSlots, CosimError> {
        Ok(SocSlots {
            rx: RxSlots::new(m, "rx_")?,
            tx: TxSlots::new(m, "tx_", false)?,
            sel: SelSlots::new(m, "sel_")?,
            cpu_resetn: m.input("cpu_resetn", 1)?,
            cmd_hold: m.input("cmd_hold", 1)?,
            room_from_stream: m.input("room_from_stream", 1)?,
            load_we: m.input("load_we", 1)?,
            load_addr: m.input("load_addr", 14)?,
            load_data: m.input("load_data", 32)?,
            dbg_addr: m.input("dbg_addr", 14)?,
            dbg_rdata: m.output("dbg_rdata", 32)?,
            tap_we: m.output("csr_tap_we", 1)?,
            tap_addr: m.output("csr_tap_addr", 8)?,
            tap_wdata: m.output("csr_tap_wdata", 32)?,
            cmd_waiting: m.output("cmd_waiting", 1)?,
            trap: m.output("trap", 1)?,
            bus_error: m.output("bus_error", 1)?,
            instret: m.output("instret", 32)?,
            irq: m.output("irq", 1)?,
        })
    }
    #[inline]
    fn write(s: &SocSlots, b: &mut [u32], i: &SocIn) {
        s.rx.write(b, &i.core.rx);
        s.tx.write(b, &i.core.tx);
        s.sel.write(b, &i.core.sel);
        s.cpu_resetn.put(b, i.cpu_run as u64);
        s.cmd_hold.put(b, i.cmd_hold as u64);
        s.room_from_stream.put(b, i.room_from_stream as u64);
        s.load_we.put(b, i.load_we as u64);
        s.load_addr.put(b, u64::from(i.load_addr) & (RAM_WORDS as u64 - 1));
        s.load_data.put(b, u64::from(i.load_data));
        s.dbg_addr.put(b, u64::from(i.dbg_addr) & (RAM_WORDS as u64 - 1));
    }
    #[inline]
    fn read(s: &SocSlots, b: &[u32]) -> SocOut {
        SocOut {
            core: CoreOut {
                rx: s.rx.read(b),
                tx: s.tx.read(b),
                sel: s.sel.read(b),
                csr_rdata: 0,
            },
            csr_write: (s.tap_we.get(b) != 0).then(|| (s.tap_addr.get(b) as u16, s.tap_wdata.get(b) as u32)),
            cmd_waiting: s.cmd_waiting.get(b) != 0,
            trap: s.trap.get(b) != 0,
            bus_error: s.bus_error.get(b) != 0,
            instret: s.instret.get(b) as u32,
            irq: s.irq.get(b) != 0,
            dbg_rdata: s.dbg_rdata.get(b) as u32,
        }
    }
}

/// The Verilated SoC with its harness controls.
pub struct Soc {
    hw: Verilated<SocPins>,
    ctl: SocIn,
    last: SocOut,
    cycles: u64,
}

impl Soc {
    /// A fresh SoC (fast model, or the one that writes VCD files), CPU held in reset.
    pub fn new(traced: bool) -> Result<Self, CosimError> {
        let hw = Verilated::<SocPins>::with_trace_support(traced)?;
        Ok(Soc {
            hw,
            ctl: SocIn {
                room_from_stream: true,
                ..SocIn::default()
            },
            last: SocOut::default(),
            cycles: 0,
        })
    }

    /// Write `words` into RAM from word `base` (one clock per word, streams idle). The CPU
    /// must be held in reset; returns false (nothing written) when it runs or `words` does not
    /// fit.
    pub fn load(&mut self, base: usize, words: &[u32]) -> bool {
        if self.ctl.cpu_run || base.checked_add(words.len()).is_none_or(|e| e > RAM_WORDS) {
            return false;
        }
        for (k, w) in words.iter().enumerate() {
            let mut i = self.ctl;
            i.load_we = true;
            i.load_addr = (base + k) as u16;
            i.load_data = *w;
            self.hw.set(&i);
            self.last = self.hw.eval();
            self.hw.tick();
            self.cycles += 1;
        }
        true
    }

    /// Stop writing the VCD file (e.g. before [`Self::read_ram`], whose evaluation is not a
    /// clock of the run).
    pub fn close_trace(&mut self) {
        self.hw.model().trace_close();
    }

    /// The RAM word at `addr` (words), read through the debug port (no clock, no bus cycle).
    pub fn read_ram(&mut self, addr: usize) -> u32 {
        let mut i = self.ctl;
        i.dbg_addr = (addr % RAM_WORDS) as u16;
        self.hw.set(&i);
        self.hw.eval().dbg_rdata
    }

    /// Release (true) or hold (false) the CPU's reset from the next clock on.
    pub fn set_cpu_run(&mut self, run: bool) {
        self.ctl.cpu_run = run;
    }

    /// Hold `SEL_CMD` writes (from the next evaluation on).
    pub fn set_cmd_hold(&mut self, hold: bool) {
        self.ctl.cmd_hold = hold;
    }

    /// Outputs of the last evaluation (CSR write of this clock, instructions, trap, ...).
    pub fn last(&self) -> &SocOut {
        &self.last
    }

    /// Rising edges since the SoC was built.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }
}

impl Backend for Soc {
    type In = CoreIn;
    type Out = CoreOut;
    #[inline]
    fn set(&mut self, i: &CoreIn) {
        self.ctl.core = *i;
        self.hw.set(&self.ctl);
    }
    #[inline]
    fn eval(&mut self) -> CoreOut {
        self.last = self.hw.eval();
        self.last.core
    }
    #[inline]
    fn tick(&mut self) {
        self.hw.tick();
        self.cycles += 1;
    }
    fn reset(&mut self) -> Result<(), CosimError> {
        self.hw.reset()?;
        self.ctl.cpu_run = false;
        self.cycles = 0;
        Ok(())
    }
    fn trace(&mut self, path: &Path) -> Result<(), CosimError> {
        self.hw.trace(path)
    }
}
