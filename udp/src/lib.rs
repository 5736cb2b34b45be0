//! mroce-udp: the mroce model (or the RoCEv2 baseline) over real UDP sockets.
//!
//! The model is sans-IO ([`mroce_model::transport::Transport`]); this crate is the driver
//! that gives it real sockets, a real clock and real loss:
//!
//! - [`nic`]: the runtime and a small verbs-like API ([`Nic`]): register memory, connect,
//!   post WRITE/SEND/receive, poll completions; one socket per path (source port), one per
//!   plane for receiving, batched `sendmmsg`/`recvmmsg`, a monotonic clock, a userspace
//!   impairment layer, frame taps for pcap, and a raw-UDP blast for baselines;
//! - [`frame`]: how model frames become datagrams and back (headers rebuilt so the ICRC
//!   checks out);
//! - [`impair`]: loss / duplication / reordering of the receive path;
//! - [`pattern`]: the seekable data pattern both ends of a transfer generate;
//! - [`sys`]: the libc calls.
//!
//! The crate is transport-agnostic: callers build the transport (the `mroce` crate's
//! `transports::make_transport`) and hand it to [`Nic::new`]. Linux only.
#![warn(missing_docs)]

pub mod frame;
pub mod impair;
pub mod nic;
pub mod pattern;
pub mod sys;

pub use impair::Impairment;
pub use nic::{Accept, BlastReport, BlastRxReport, Dir, Nic, NicConfig, NicError, RuntimeStats, Tap};
