//! mroce CSR register map: the single definition shared by the HDL (`mroce-hdl`'s
//! `transport_core`), the firmware and SPEC.md (whose table is [`markdown_table`]).
//!
//! The bus is 32-bit, word addressed by byte offset (`addr` = offset), one access per clock:
//! `csr_addr`, `csr_wdata`, `csr_we` (write strobe), `csr_rdata` (valid the clock after the
//! address, for reads and writes alike).
#![no_std]
#![warn(missing_docs)]

use mroce_model::params;

/// Access type of a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read only.
    Ro,
    /// Read/write.
    Rw,
    /// Write only (a write triggers an action; reads return 0).
    Wo,
}

/// One register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reg {
    /// Mnemonic.
    pub name: &'static str,
    /// Byte offset.
    pub offset: u16,
    /// Access.
    pub access: Access,
    /// Value after power-up (for RO registers: the constant, when it is one).
    pub reset: u32,
    /// Meaning, fields from bit 0 up.
    pub doc: &'static str,
}

/// `ID` value: "MRCE".
pub const ID_VALUE: u32 = 0x4D52_4345;
/// Register map version (bump on any change).
pub const MAP_VERSION: u32 = 1;
/// `PARAMS` value: PATHS [7:0], SACK_BITS / 8 [15:8], SACK_WORD_BITS [23:16], MAX_PLANES [31:24].
pub const PARAMS_VALUE: u32 = (params::PATHS as u32)
    | ((params::SACK_BITS as u32 / 8) << 8)
    | ((params::SACK_WORD_BITS as u32) << 16)
    | ((params::MAX_PLANES as u32) << 24);

/// Identification constant.
pub const ID: u16 = 0x00;
/// Map version.
pub const VERSION: u16 = 0x04;
/// Shared parameters ([`PARAMS_VALUE`]).
pub const PARAMS: u16 = 0x08;
/// Control bits.
pub const CONTROL: u16 = 0x0C;
/// `CONTROL` bit 0: SELECT operations take their room mask from the scoreboard.
pub const CONTROL_ROOM_FROM_SCOREBOARD: u32 = 1;
/// Scoreboard room mask (bit p: path p has window room).
pub const ROOM_MASK: u16 = 0x10;
/// Operations accepted by the receive tracker (wrapping).
pub const RX_OPS: u16 = 0x14;
/// Operations accepted by the transmit scoreboard (wrapping).
pub const TX_OPS: u16 = 0x18;
/// Operations accepted by the path selector (wrapping).
pub const SEL_OPS: u16 = 0x1C;
/// Path-selector command argument: `a` [15:0], `b` [31:16].
pub const SEL_CMD_ARG: u16 = 0x20;
/// Path-selector command: a write injects operation `op` [3:0] on `path` [7:4] with `flag` [8]
/// and the arguments of [`SEL_CMD_ARG`] ahead of the `sel_in` stream (which waits that clock).
pub const SEL_CMD: u16 = 0x24;
/// Free scratch register (bus test).
pub const SCRATCH: u16 = 0x28;

/// The whole map, in address order.
pub const REGS: &[Reg] = &[
    Reg {
        name: "ID",
        offset: ID,
        access: Access::Ro,
        reset: ID_VALUE,
        doc: "\"MRCE\"",
    },
    Reg {
        name: "VERSION",
        offset: VERSION,
        access: Access::Ro,
        reset: MAP_VERSION,
        doc: "register map version",
    },
    Reg {
        name: "PARAMS",
        offset: PARAMS,
        access: Access::Ro,
        reset: PARAMS_VALUE,
        doc: "PATHS [7:0], SACK_BITS/8 [15:8], SACK_WORD_BITS [23:16], MAX_PLANES [31:24]",
    },
    Reg {
        name: "CONTROL",
        offset: CONTROL,
        access: Access::Rw,
        reset: 0,
        doc: "bit 0: SELECT takes its room mask from the scoreboard",
    },
    Reg {
        name: "ROOM_MASK",
        offset: ROOM_MASK,
        access: Access::Ro,
        reset: 0xFFFF,
        doc: "bit p: path p has room",
    },
    Reg {
        name: "RX_OPS",
        offset: RX_OPS,
        access: Access::Ro,
        reset: 0,
        doc: "rx_tracker operations accepted",
    },
    Reg {
        name: "TX_OPS",
        offset: TX_OPS,
        access: Access::Ro,
        reset: 0,
        doc: "tx_scoreboard operations accepted",
    },
    Reg {
        name: "SEL_OPS",
        offset: SEL_OPS,
        access: Access::Ro,
        reset: 0,
        doc: "path_selector operations accepted",
    },
    Reg {
        name: "SEL_CMD_ARG",
        offset: SEL_CMD_ARG,
        access: Access::Rw,
        reset: 0,
        doc: "a [15:0], b [31:16]",
    },
    Reg {
        name: "SEL_CMD",
        offset: SEL_CMD,
        access: Access::Wo,
        reset: 0,
        doc: "write: inject path_selector op [3:0] on path [7:4], flag [8], args SEL_CMD_ARG",
    },
    Reg {
        name: "SCRATCH",
        offset: SCRATCH,
        access: Access::Rw,
        reset: 0,
        doc: "scratch",
    },
];

/// Look a register up by offset.
pub fn by_offset(offset: u16) -> Option<&'static Reg> {
    REGS.iter().find(|r| r.offset == offset)
}

/// Write the map as a Markdown table (SPEC.md embeds this text).
pub fn markdown_table(out: &mut impl core::fmt::Write) -> core::fmt::Result {
    writeln!(out, "| Offset | Name | Access | Reset | Meaning |")?;
    writeln!(out, "|---|---|---|---|---|")?;
    for r in REGS {
        let a = match r.access {
            Access::Ro => "RO",
            Access::Rw => "RW",
            Access::Wo => "WO",
        };
        writeln!(
            out,
            "| 0x{:02X} | `{}` | {} | 0x{:08X} | {} |",
            r.offset, r.name, a, r.reset, r.doc
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_unique_aligned_sorted() {
        for w in REGS.windows(2) {
            assert!(w[0].offset < w[1].offset);
        }
        for r in REGS {
            assert_eq!(r.offset % 4, 0);
            assert_eq!(by_offset(r.offset), Some(r));
        }
    }
}
