//! The SoC memory map of the soft-core image (PicoRV32 + RAM + `transport_core`'s CSR port).
//! `memory.x` carries the same numbers for the linker; a test checks they agree.

/// RAM base: code, data, bss and stack (the SoC loads the image here; PicoRV32 resets here).
pub const RAM_BASE: u32 = 0x0000_0000;
/// RAM size in bytes.
pub const RAM_SIZE: u32 = 64 * 1024;
/// Stack reserved at the top of RAM.
pub const STACK_SIZE: u32 = 4 * 1024;
/// Base of the `transport_core` CSR window: byte offset `o` of `mroce_csr` is at `CSR_BASE + o`.
pub const CSR_BASE: u32 = 0x1000_0000;
/// Bytes decoded for the CSR window (`csr_addr` is 8 bits).
pub const CSR_SIZE: u32 = mroce_csr::WINDOW_BYTES;
/// Connection-table capacity of the soft-core image.
pub const CONNECTIONS: usize = 64;
/// Core clock assumed by the image's default timers (cycles per microsecond).
pub const CYCLES_PER_US: u32 = 100;
