//! Verilated models behind the generated `extern "C"` shim (cosim/build.rs).
use std::ffi::{c_char, c_void};

/// One port of a Verilated top module.
#[derive(Debug)]
pub struct PortInfo {
    pub name: &'static str,
    pub input: bool,
    pub width: u32,
    /// First word of the port in the packed input (or output) buffer.
    pub offset: u32,
}

/// Entry points and port table of one Verilated design.
pub struct ModelTable {
    pub name: &'static str,
    pub ports: &'static [PortInfo],
    pub in_words: u32,
    pub out_words: u32,
    /// Built with `--trace` (VCD files); the other variant is the fast one.
    pub traced: bool,
    pub verilog: &'static str,
    #[cfg(not(mroce_no_verilator))]
    new: unsafe extern "C" fn() -> *mut c_void,
    #[cfg(not(mroce_no_verilator))]
    delete: unsafe extern "C" fn(*mut c_void),
    #[cfg(not(mroce_no_verilator))]
    set: unsafe extern "C" fn(*mut c_void, u32, *const u32),
    #[cfg(not(mroce_no_verilator))]
    get: unsafe extern "C" fn(*mut c_void, u32, *mut u32),
    #[cfg(not(mroce_no_verilator))]
    set_inputs: unsafe extern "C" fn(*mut c_void, *const u32),
    #[cfg(not(mroce_no_verilator))]
    get_outputs: unsafe extern "C" fn(*mut c_void, *mut u32),
    #[cfg(not(mroce_no_verilator))]
    eval: unsafe extern "C" fn(*mut c_void),
    #[cfg(not(mroce_no_verilator))]
    posedge: unsafe extern "C" fn(*mut c_void),
    #[cfg(not(mroce_no_verilator))]
    full_edge: unsafe extern "C" fn(*mut c_void, i32) -> i32,
    #[cfg(not(mroce_no_verilator))]
    trace_open: unsafe extern "C" fn(*mut c_void, *const c_char) -> i32,
    #[cfg(not(mroce_no_verilator))]
    trace_close: unsafe extern "C" fn(*mut c_void),
    #[cfg(not(mroce_no_verilator))]
    state_size: unsafe extern "C" fn() -> u64,
    #[cfg(not(mroce_no_verilator))]
    state_save: unsafe extern "C" fn(*mut c_void, *mut c_void),
    #[cfg(not(mroce_no_verilator))]
    state_restore: unsafe extern "C" fn(*mut c_void, *const c_void),
}

/// The whole state of one [`VerilatedModel`] instance at one clock (see
/// [`VerilatedModel::save_state`]); it can only be put back into that instance.
pub struct ModelState {
    owner: u64,
    bytes: Vec<u64>,
}

include!(concat!(env!("OUT_DIR"), "/ffi.rs"));

use crate::CosimError;
use std::path::Path;

/// Where a port lives in the packed input or output word buffer.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub offset: u32,
    pub width: u32,
}

impl Slot {
    /// Write a value of at most 64 bits.
    #[inline]
    pub fn put(self, buf: &mut [u32], v: u64) {
        let o = self.offset as usize;
        buf[o] = v as u32;
        if self.width > 32 {
            buf[o + 1] = (v >> 32) as u32;
        }
    }
    /// Read a value of at most 64 bits.
    #[inline]
    pub fn get(self, buf: &[u32]) -> u64 {
        let o = self.offset as usize;
        let lo = u64::from(buf[o]);
        if self.width > 32 {
            lo | (u64::from(buf[o + 1]) << 32)
        } else {
            lo
        }
    }
    /// Read bits `[lo, lo + width)` (width <= 64) of a (possibly wide) port.
    #[inline]
    pub fn field(self, buf: &[u32], lo: usize, width: usize) -> u64 {
        let base = self.offset as usize;
        let mut v = 0u64;
        let mut got = 0;
        while got < width {
            let bit = lo + got;
            let w = buf[base + bit / 32] >> (bit % 32);
            let take = (32 - bit % 32).min(width - got);
            let mask = if take == 32 { u32::MAX } else { (1u32 << take) - 1 };
            v |= u64::from(w & mask) << got;
            got += take;
        }
        v
    }
}

/// One instance of a Verilated design.
pub struct VerilatedModel {
    table: &'static ModelTable,
    #[cfg_attr(mroce_no_verilator, allow(dead_code))]
    handle: *mut c_void,
    /// Unique per instance (a freed handle's address may be reused).
    id: u64,
    /// Packed inputs (everything but the clock), applied by [`VerilatedModel::eval`].
    pub inputs: Vec<u32>,
    /// Packed outputs, sampled by [`VerilatedModel::eval`].
    pub outputs: Vec<u32>,
}

// The model owns its own VerilatedContext; nothing is shared between instances.
unsafe impl Send for VerilatedModel {}

impl VerilatedModel {
    /// A fresh instance (power-up state, clock low, evaluated once).
    pub fn new(table: &'static ModelTable) -> Result<Self, CosimError> {
        #[cfg(mroce_no_verilator)]
        let handle: *mut c_void = return Err(CosimError::VerilatorMissing);
        #[cfg(not(mroce_no_verilator))]
        // SAFETY: the shim allocates and returns an owned model, freed in Drop.
        let handle = unsafe { (table.new)() };
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Ok(Self {
            table,
            handle,
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            inputs: vec![0; table.in_words as usize],
            outputs: vec![0; table.out_words as usize],
        })
    }

    /// Design name.
    pub fn name(&self) -> &'static str {
        self.table.name
    }

    /// Port table.
    pub fn ports(&self) -> &'static [PortInfo] {
        self.table.ports
    }

    fn find(&self, name: &str, input: bool) -> Result<(usize, &'static PortInfo), CosimError> {
        self.table
            .ports
            .iter()
            .enumerate()
            .find(|(_, p)| p.name == name && p.input == input && p.name != "clock")
            .ok_or_else(|| CosimError::Port {
                design: self.table.name,
                port: name.to_string(),
                detail: if input { " (input)".into() } else { " (output)".into() },
            })
    }

    /// Slot of an input port in [`Self::inputs`], checking its width.
    pub fn input(&self, name: &str, width: u32) -> Result<Slot, CosimError> {
        self.slot(name, true, width)
    }

    /// Slot of an output port in [`Self::outputs`], checking its width.
    pub fn output(&self, name: &str, width: u32) -> Result<Slot, CosimError> {
        self.slot(name, false, width)
    }

    fn slot(&self, name: &str, input: bool, width: u32) -> Result<Slot, CosimError> {
        let (_, p) = self.find(name, input)?;
        if p.width != width {
            return Err(CosimError::Port {
                design: self.table.name,
                port: name.to_string(),
                detail: format!(" of width {width} (the design has {})", p.width),
            });
        }
        Ok(Slot {
            offset: p.offset,
            width,
        })
    }

    /// Set one input port directly by its index in [`Self::ports`] (words LSB first).
    pub fn set_port(&mut self, index: usize, words: &[u32]) {
        let Some(p) = self.table.ports.get(index) else { return };
        if !p.input || p.name == "clock" || words.len() < p.width.div_ceil(32) as usize {
            return;
        }
        let o = p.offset as usize;
        self.inputs[o..o + p.width.div_ceil(32) as usize].copy_from_slice(&words[..p.width.div_ceil(32) as usize]);
        #[cfg(not(mroce_no_verilator))]
        // SAFETY: handle is live; words holds at least the port's word count.
        unsafe {
            (self.table.set)(self.handle, index as u32, words.as_ptr())
        }
    }

    /// Read one port by index (as of the last evaluation).
    pub fn get_port(&mut self, index: usize) -> Vec<u32> {
        let Some(p) = self.table.ports.get(index) else {
            return vec![];
        };
        let mut w = vec![0u32; p.width.div_ceil(32) as usize];
        #[cfg(not(mroce_no_verilator))]
        // SAFETY: handle is live; w holds the port's word count.
        unsafe {
            (self.table.get)(self.handle, index as u32, w.as_mut_ptr())
        }
        w
    }

    /// Apply [`Self::inputs`], settle with the clock low, sample [`Self::outputs`].
    #[inline]
    pub fn eval(&mut self) {
        #[cfg(not(mroce_no_verilator))]
        // SAFETY: handle is live; the buffers have the sizes of the port table.
        unsafe {
            (self.table.set_inputs)(self.handle, self.inputs.as_ptr());
            (self.table.eval)(self.handle);
            (self.table.get_outputs)(self.handle, self.outputs.as_mut_ptr());
        }
    }

    /// Rising clock edge.
    #[inline]
    pub fn posedge(&mut self) {
        #[cfg(not(mroce_no_verilator))]
        // SAFETY: handle is live.
        unsafe {
            (self.table.posedge)(self.handle)
        }
    }

    /// Evaluate every rising edge in full (`true`), or skip its input region when the clock-low
    /// evaluation before it left inputs and state as they are (`false`, the default unless
    /// `MROCE_COSIM_FULL_EDGE` is set; same results, 3-5% faster). Returns whether this model has
    /// the fast edge at all (not for designs without an input region, nor for the traced ones).
    pub fn set_full_edge(&mut self, on: bool) -> bool {
        #[cfg(mroce_no_verilator)]
        let r = {
            let _ = on;
            0
        };
        #[cfg(not(mroce_no_verilator))]
        // SAFETY: handle is live.
        let r = unsafe { (self.table.full_edge)(self.handle, i32::from(on)) };
        r != 0
    }

    /// A copy of every register and memory of the design (between clocks: after
    /// [`Self::posedge`]); the fuzzer restores a post-initialisation state instead of rebuilding
    /// and re-initialising the model for every input.
    pub fn save_state(&self) -> ModelState {
        #[cfg(mroce_no_verilator)]
        let bytes = Vec::new();
        #[cfg(not(mroce_no_verilator))]
        // SAFETY: handle is live; the buffer holds state_size() bytes (rounded up to words).
        let bytes = unsafe {
            let n = ((self.table.state_size)() as usize).div_ceil(8);
            let mut b = vec![0u64; n];
            (self.table.state_save)(self.handle, b.as_mut_ptr().cast());
            b
        };
        ModelState { owner: self.id, bytes }
    }

    /// Put back a state [`Self::save_state`] took from this same instance (`false`, and
    /// nothing changed, for another instance's state or while a VCD is being written).
    pub fn restore_state(&mut self, st: &ModelState) -> bool {
        if st.owner != self.id || self.table.traced {
            return false;
        }
        #[cfg(not(mroce_no_verilator))]
        // SAFETY: handle is live and is the instance the bytes were copied from, so every
        // pointer inside them (symbol table, name) is this instance's own.
        unsafe {
            (self.table.state_restore)(self.handle, st.bytes.as_ptr().cast())
        }
        true
    }

    /// Back to the power-up state (a new instance; an open trace is closed).
    pub fn reset(&mut self) -> Result<(), CosimError> {
        let fresh = Self::new(self.table)?;
        *self = fresh;
        Ok(())
    }

    /// Write a VCD of everything from the next evaluation on (closed on drop or reset).
    pub fn trace(&mut self, path: &Path) -> Result<(), CosimError> {
        if !self.table.traced {
            return Err(CosimError::TraceUnsupported);
        }
        let c = std::ffi::CString::new(path.to_string_lossy().as_bytes())
            .map_err(|_| CosimError::Trace(path.to_path_buf()))?;
        #[cfg(mroce_no_verilator)]
        let r: i32 = return Err(CosimError::VerilatorMissing);
        #[cfg(not(mroce_no_verilator))]
        // SAFETY: handle is live; c is a NUL-terminated path.
        let r = unsafe { (self.table.trace_open)(self.handle, c.as_ptr()) };
        let _ = &c;
        if r == 0 {
            Ok(())
        } else {
            Err(CosimError::Trace(path.to_path_buf()))
        }
    }

    /// Flush and close the VCD file, if any.
    pub fn trace_close(&mut self) {
        #[cfg(not(mroce_no_verilator))]
        // SAFETY: handle is live.
        unsafe {
            (self.table.trace_close)(self.handle)
        }
    }
}

impl Drop for VerilatedModel {
    fn drop(&mut self) {
        #[cfg(not(mroce_no_verilator))]
        // SAFETY: handle came from `new` and is freed exactly once.
        unsafe {
            (self.table.delete)(self.handle)
        }
    }
}

/// Version string of the Verilator the crate was built with (None: built without it).
#[cfg(not(mroce_no_verilator))]
pub fn verilator_version() -> Option<&'static str> {
    Some(include_str!(concat!(env!("OUT_DIR"), "/verilator_version.txt")))
}

/// Version string of the Verilator the crate was built with (None: built without it).
#[cfg(mroce_no_verilator)]
pub fn verilator_version() -> Option<&'static str> {
    None
}
