//! Hardware access: the one trait every firmware function goes through.
//!
//! A backend only moves 32-bit words at `mroce_csr` byte offsets; time and events are CSRs
//! too (`CYCLES`, `EVT_*`), so a new backend (e.g. the CSR bus of the Verilated
//! `transport_core`: drive `csr_addr`/`csr_wdata`/`csr_we`, clock once, take `csr_rdata`) is
//! the two methods below.

/// 32-bit CSR access at byte offsets of the `mroce_csr` map.
pub trait Csr {
    /// Read the register at `offset`.
    fn read(&mut self, offset: u16) -> u32;
    /// Write the register at `offset`.
    fn write(&mut self, offset: u16, value: u32);
    /// Called while the firmware waits (a command to drain, the next poll); a backend may
    /// sleep, advance a simulation clock or do nothing.
    fn idle(&mut self) {}
}

impl<T: Csr + ?Sized> Csr for &mut T {
    fn read(&mut self, offset: u16) -> u32 {
        (**self).read(offset)
    }
    fn write(&mut self, offset: u16, value: u32) {
        (**self).write(offset, value)
    }
    fn idle(&mut self) {
        (**self).idle()
    }
}

/// Memory-mapped CSR window (the soft core): volatile word accesses at `base + offset`.
#[derive(Debug)]
pub struct Mmio {
    base: usize,
}

impl Mmio {
    /// The window at `base` (normally [`crate::memory_map::CSR_BASE`]).
    ///
    /// # Safety
    /// `base .. base + CSR_SIZE` must be the `transport_core` CSR window, mapped and not
    /// aliased by any other object, for as long as the returned value lives.
    pub const unsafe fn new(base: usize) -> Self {
        Mmio { base }
    }
}

impl Csr for Mmio {
    fn read(&mut self, offset: u16) -> u32 {
        // SAFETY: `new`'s contract: the window is mapped; offsets are word aligned map offsets.
        unsafe { core::ptr::read_volatile((self.base + usize::from(offset & !3)) as *const u32) }
    }
    fn write(&mut self, offset: u16, value: u32) {
        // SAFETY: as in `read`.
        unsafe { core::ptr::write_volatile((self.base + usize::from(offset & !3)) as *mut u32, value) }
    }
}
