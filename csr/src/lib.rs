//! mroce CSR register map: the single definition shared by the HDL (`mroce-hdl`'s
//! `transport_core`), the firmware and SPEC.md (whose table is [`markdown_table`]).
//!
//! The bus is 32-bit, word addressed by byte offset (`addr` = offset), one access per clock:
//! `csr_addr`, `csr_wdata`, `csr_we` (write strobe), `csr_rdata` (valid the clock after the
//! address, for reads and writes alike).
//!
//! Per-path counters are read through a window: write the path to `PATH_SEL`, then read the
//! `P_*` registers (valid from the next bus access on). Counters are 32-bit and wrap.
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
    /// Read, write 1 to clear (sticky event bits).
    W1c,
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
pub const MAP_VERSION: u32 = 2;
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
/// Capabilities: CONTEXTS [7:0] (connection contexts the core holds; [`CAPS_VALUE`]).
pub const CAPS: u16 = 0x2C;
/// Connection contexts in this core (one: the blocks hold one connection's paths).
pub const CONTEXTS: u32 = 1;
/// `CAPS` value.
pub const CAPS_VALUE: u32 = CONTEXTS;
/// Context that `SEL_CMD` addresses; a `SEL_CMD` write while `CTX_SEL` >= CONTEXTS is ignored.
pub const CTX_SEL: u16 = 0x30;
/// Free-running clock counter (wrapping): the control core's time base.
pub const CYCLES: u16 = 0x34;
/// Firmware fault record (code [7:0], detail [31:8]); 0 = no fault. Written by the firmware.
pub const FAULT: u16 = 0x38;
/// Sticky events, write 1 to clear: bit p = path p's RTO timer expired (TIMER record `ok`).
pub const EVT_RTO: u16 = 0x3C;
/// Sticky events, write 1 to clear: bit p = path p declared a loss (ACK_WORD or EXPIRE `lost` != 0).
pub const EVT_LOSS: u16 = 0x40;
/// Sticky events, write 1 to clear: bit p = a CREDIT on path p asked for a re-route (record `ok`).
pub const EVT_REROUTE: u16 = 0x44;
/// Event summary: bit 0 `EVT_RTO` != 0, bit 1 `EVT_LOSS` != 0, bit 2 `EVT_REROUTE` != 0.
pub const EVT_SUMMARY: u16 = 0x48;
/// Interrupt enables, one per `EVT_SUMMARY` bit; the `irq` output is (summary & enable) != 0.
pub const IRQ_ENABLE: u16 = 0x4C;
/// `EVT_SUMMARY` / `IRQ_ENABLE` bit: an RTO event is pending.
pub const EVT_BIT_RTO: u32 = 1;
/// `EVT_SUMMARY` / `IRQ_ENABLE` bit: a loss event is pending.
pub const EVT_BIT_LOSS: u32 = 2;
/// `EVT_SUMMARY` / `IRQ_ENABLE` bit: a re-route event is pending.
pub const EVT_BIT_REROUTE: u32 = 4;

/// `EVT_SUMMARY` of the three sticky event registers (`EVT_RTO`, `EVT_LOSS`, `EVT_REROUTE`).
pub const fn evt_summary(events: [u32; 3]) -> u32 {
    (if events[0] != 0 { EVT_BIT_RTO } else { 0 })
        | (if events[1] != 0 { EVT_BIT_LOSS } else { 0 })
        | (if events[2] != 0 { EVT_BIT_REROUTE } else { 0 })
}
/// Path index [3:0] of the per-path window (`P_*` registers).
pub const PATH_SEL: u16 = 0x50;
/// Per path (`PATH_SEL`): SELECT records that chose the path (packets sprayed), wrapping.
pub const P_SELECTED: u16 = 0x54;
/// Per path: RTO expiries (TIMER records with `ok`), wrapping.
pub const P_RTOS: u16 = 0x58;
/// Per path: PSNs declared lost by EXPIRE (after an RTO), wrapping.
pub const P_RTO_LOST: u16 = 0x5C;
/// Per path: PSNs declared lost by ACK_WORD (SACK gap), wrapping.
pub const P_SACK_LOST: u16 = 0x60;
/// Per path: PSNs freed (acknowledged) by ACK_WORD, wrapping.
pub const P_ACKED: u16 = 0x64;
/// Per path: CREDIT operations with the CE flag (ECN-echoing ACKs), wrapping.
pub const P_ECN: u16 = 0x68;
/// Per path: received packets with CE set (rx_tracker PACKET operations), wrapping.
pub const P_RX_CE: u16 = 0x6C;
/// Per path: `now` of the last ACK_WORD operation on the path.
pub const P_LAST_ACK: u16 = 0x70;
/// Per path: the selector's last record of the path: entropy [15:0], plane [18:16],
/// health [21:20] (0 Up, 1 Suspect, 2 Down, 3 Disabled), bit 31 = a record was seen.
pub const P_STATE: u16 = 0x74;
/// `P_STATE` bit 31.
pub const P_STATE_KNOWN: u32 = 1 << 31;
/// Per-path window registers, in address order.
pub const PATH_WINDOW: [u16; 9] = [
    P_SELECTED,
    P_RTOS,
    P_RTO_LOST,
    P_SACK_LOST,
    P_ACKED,
    P_ECN,
    P_RX_CE,
    P_LAST_ACK,
    P_STATE,
];
/// Size of the CSR window in bytes (`csr_addr` is 8 bits).
pub const WINDOW_BYTES: u32 = 0x100;

/// Fault codes of the `FAULT` register, bits [7:0] (the firmware writes them).
pub mod fault {
    /// `ID` or `VERSION` or `PARAMS` is not what the firmware was built for.
    pub const BAD_IDENTITY: u32 = 0x01;
    /// A register read back a value other than the one written (detail: offset).
    pub const READBACK: u32 = 0x02;
    /// The connection table is full.
    pub const TABLE_FULL: u32 = 0x03;
    /// An unknown connection was named.
    pub const UNKNOWN_CONNECTION: u32 = 0x04;
    /// No free hardware context.
    pub const NO_CONTEXT: u32 = 0x05;
    /// A parameter was out of range.
    pub const BAD_PARAMETER: u32 = 0x06;
    /// A selector command was not consumed in time.
    pub const COMMAND_TIMEOUT: u32 = 0x07;
    /// The firmware panicked (detail: low bits of the source line).
    pub const PANIC: u32 = 0xFF;
}

/// Path-selector operation codes of `SEL_CMD` [3:0] (the `path_selector` block's `in_op`;
/// `mroce-hdl`'s tests check they equal its `SEL_OP_*`).
pub mod sel_op {
    /// `select(room)`.
    pub const SELECT: u32 = 0;
    /// `charge(path)`.
    pub const CHARGE: u32 = 1;
    /// `credit(path, acked = a, lost = b, probes = a, ce = flag)` (from `SEL_CMD`, `c` = `a`).
    pub const CREDIT: u32 = 2;
    /// `set_health(path, a[1:0])`.
    pub const SET_HEALTH: u32 = 3;
    /// `clear_inflight(path)`.
    pub const CLEAR_INFLIGHT: u32 = 4;
    /// `request_reroll(path, random = a)`.
    pub const REQUEST_REROLL: u32 = 5;
    /// `reroll(path, random = a)`.
    pub const REROLL: u32 = 6;
    /// `set_plane(path, plane = a)`.
    pub const SET_PLANE: u32 = 7;
    /// `set_plane_up(plane = a, up = flag)`.
    pub const SET_PLANE_UP: u32 = 8;
    /// `set_conn_limit(pkts = a)`.
    pub const SET_CONN_LIMIT: u32 = 9;
    /// `PathSelector::new(paths = a, planes = b)`.
    pub const INIT: u32 = 10;
    /// `charge_probe(path)`.
    pub const CHARGE_PROBE: u32 = 11;
}

/// Health codes (`SET_HEALTH` argument, `P_STATE` [21:20]).
pub mod health {
    /// Carries data.
    pub const UP: u32 = 0;
    /// Had an RTO: window of one packet until an ACK makes progress.
    pub const SUSPECT: u32 = 1;
    /// Probe only.
    pub const DOWN: u32 = 2;
    /// Not configured.
    pub const DISABLED: u32 = 3;
}

/// `SEL_CMD` word: operation, path, flag.
pub const fn sel_cmd_word(op: u32, path: u8, flag: bool) -> u32 {
    (op & 0xF) | (((path & 0xF) as u32) << 4) | ((flag as u32) << 8)
}

/// `SEL_CMD` read: bit 31 while a command waits to enter the selector.
pub const SEL_CMD_PENDING: u32 = 1 << 31;

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
        reset: (1 << params::PATHS) - 1,
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
    Reg {
        name: "CAPS",
        offset: CAPS,
        access: Access::Ro,
        reset: CAPS_VALUE,
        doc: "CONTEXTS [7:0]: connection contexts in the core",
    },
    Reg {
        name: "CTX_SEL",
        offset: CTX_SEL,
        access: Access::Rw,
        reset: 0,
        doc: "context addressed by SEL_CMD; SEL_CMD is ignored while CTX_SEL >= CONTEXTS",
    },
    Reg {
        name: "CYCLES",
        offset: CYCLES,
        access: Access::Ro,
        reset: 0,
        doc: "free-running clock counter (wrapping)",
    },
    Reg {
        name: "FAULT",
        offset: FAULT,
        access: Access::Rw,
        reset: 0,
        doc: "firmware fault: code [7:0], detail [31:8]; 0 = none",
    },
    Reg {
        name: "EVT_RTO",
        offset: EVT_RTO,
        access: Access::W1c,
        reset: 0,
        doc: "bit p: path p's RTO timer expired (TIMER record ok)",
    },
    Reg {
        name: "EVT_LOSS",
        offset: EVT_LOSS,
        access: Access::W1c,
        reset: 0,
        doc: "bit p: path p declared a loss (ACK_WORD or EXPIRE lost != 0)",
    },
    Reg {
        name: "EVT_REROUTE",
        offset: EVT_REROUTE,
        access: Access::W1c,
        reset: 0,
        doc: "bit p: a CREDIT on path p asked for a re-route (record ok)",
    },
    Reg {
        name: "EVT_SUMMARY",
        offset: EVT_SUMMARY,
        access: Access::Ro,
        reset: 0,
        doc: "bit 0: EVT_RTO != 0, bit 1: EVT_LOSS != 0, bit 2: EVT_REROUTE != 0",
    },
    Reg {
        name: "IRQ_ENABLE",
        offset: IRQ_ENABLE,
        access: Access::Rw,
        reset: 0,
        doc: "enables of the EVT_SUMMARY bits; output irq = (summary & enable) != 0, registered",
    },
    Reg {
        name: "PATH_SEL",
        offset: PATH_SEL,
        access: Access::Rw,
        reset: 0,
        doc: "path [3:0] of the P_* window",
    },
    Reg {
        name: "P_SELECTED",
        offset: P_SELECTED,
        access: Access::Ro,
        reset: 0,
        doc: "path PATH_SEL: SELECT records that chose it",
    },
    Reg {
        name: "P_RTOS",
        offset: P_RTOS,
        access: Access::Ro,
        reset: 0,
        doc: "path PATH_SEL: RTO expiries (TIMER ok)",
    },
    Reg {
        name: "P_RTO_LOST",
        offset: P_RTO_LOST,
        access: Access::Ro,
        reset: 0,
        doc: "path PATH_SEL: PSNs lost by EXPIRE (popcount of lost)",
    },
    Reg {
        name: "P_SACK_LOST",
        offset: P_SACK_LOST,
        access: Access::Ro,
        reset: 0,
        doc: "path PATH_SEL: PSNs lost by ACK_WORD (popcount of lost)",
    },
    Reg {
        name: "P_ACKED",
        offset: P_ACKED,
        access: Access::Ro,
        reset: 0,
        doc: "path PATH_SEL: PSNs freed by ACK_WORD (popcount of freed)",
    },
    Reg {
        name: "P_ECN",
        offset: P_ECN,
        access: Access::Ro,
        reset: 0,
        doc: "path PATH_SEL: CREDIT operations with the CE flag",
    },
    Reg {
        name: "P_RX_CE",
        offset: P_RX_CE,
        access: Access::Ro,
        reset: 0,
        doc: "path PATH_SEL: received PACKET operations with CE",
    },
    Reg {
        name: "P_LAST_ACK",
        offset: P_LAST_ACK,
        access: Access::Ro,
        reset: 0,
        doc: "path PATH_SEL: now of its last ACK_WORD",
    },
    Reg {
        name: "P_STATE",
        offset: P_STATE,
        access: Access::Ro,
        reset: 0,
        doc: "path PATH_SEL: entropy [15:0], plane [18:16], health [21:20], bit 31: known",
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
            Access::W1c => "W1C",
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
            assert!(u32::from(r.offset) < WINDOW_BYTES);
        }
        for o in PATH_WINDOW {
            assert!(by_offset(o).is_some());
        }
    }
}
