//! Typed errors of the control plane; each maps to a `FAULT` register word.

use mroce_csr::fault;

/// Everything that can go wrong; no firmware function panics on hardware values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// `ID`, `VERSION` or `PARAMS` is not what this firmware was built for.
    BadIdentity {
        /// Register offset.
        offset: u16,
        /// Value read.
        read: u32,
    },
    /// A register read back a value other than the one written (or expected).
    Readback {
        /// Register offset.
        offset: u16,
        /// Value written or expected.
        wrote: u32,
        /// Value read.
        read: u32,
    },
    /// The connection table is full.
    TableFull,
    /// No connection has this id (never allocated, torn down, or stale generation).
    UnknownConnection,
    /// Every hardware context is in use.
    NoContext,
    /// A request parameter is out of range.
    BadParameter,
    /// A selector command stayed pending (`SEL_CMD` bit 31) past the configured polls.
    CommandTimeout,
}

impl Error {
    /// The `FAULT` register word: code [7:0], detail [31:8] (the register offset when one is involved).
    pub fn fault_word(&self) -> u32 {
        match *self {
            Error::BadIdentity { offset, .. } => fault::BAD_IDENTITY | (u32::from(offset) << 8),
            Error::Readback { offset, .. } => fault::READBACK | (u32::from(offset) << 8),
            Error::TableFull => fault::TABLE_FULL,
            Error::UnknownConnection => fault::UNKNOWN_CONNECTION,
            Error::NoContext => fault::NO_CONTEXT,
            Error::BadParameter => fault::BAD_PARAMETER,
            Error::CommandTimeout => fault::COMMAND_TIMEOUT | (u32::from(mroce_csr::SEL_CMD) << 8),
        }
    }
}
