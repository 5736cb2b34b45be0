//! Protocol parameters shared by the model, the HDL and the firmware.
//!
//! This file is the single source of truth for every fixed width and default that a
//! hardware-mapped component depends on. The HDL crate imports these constants; nothing
//! re-types them. SPEC.md §7 lists them with their meaning.

/// UDP destination port of RoCEv2 and mroce (IANA "roce").
pub const ROCEV2_UDP_PORT: u16 = 4791;

// Hardware configurations (issue 7, SPEC.md §7). The default is the full one: 16 paths and a
// 256-bit SACK window. A board too small for it builds the whole stack (model, HDL, firmware)
// with one of the cargo features below (`config-small` wins over `config-reduced`). Neither is
// enabled by the workspace build, so SPEC.md's wire format is the default configuration's.

/// Name of the compiled hardware configuration (`default`, `reduced` or `small`).
#[cfg(not(any(feature = "config-reduced", feature = "config-small")))]
pub const CONFIG_NAME: &str = "default";
/// Name of the compiled hardware configuration (`default`, `reduced` or `small`).
#[cfg(all(feature = "config-reduced", not(feature = "config-small")))]
pub const CONFIG_NAME: &str = "reduced";
/// Name of the compiled hardware configuration (`default`, `reduced` or `small`).
#[cfg(feature = "config-small")]
pub const CONFIG_NAME: &str = "small";

/// Width of a path index in bits (`PATHS` = 2^PATH_BITS): 4 (default), 3 (reduced), 2 (small).
#[cfg(not(any(feature = "config-reduced", feature = "config-small")))]
pub const PATH_BITS: u32 = 4;
/// Width of a path index in bits (`PATHS` = 2^PATH_BITS): 4 (default), 3 (reduced), 2 (small).
#[cfg(all(feature = "config-reduced", not(feature = "config-small")))]
pub const PATH_BITS: u32 = 3;
/// Width of a path index in bits (`PATHS` = 2^PATH_BITS): 4 (default), 3 (reduced), 2 (small).
#[cfg(feature = "config-small")]
pub const PATH_BITS: u32 = 2;
/// Paths per connection (each with its own PSN space, window, RTT and UDP source port).
pub const PATHS: usize = 1 << PATH_BITS;

/// The path selector's operation lag (SPEC.md §6.3): on in the default and reduced
/// configurations, whose pipelined selector needs it to keep the window arithmetic out of a
/// one-clock loop; off in the small one, whose compact selector does each operation in one
/// clock at 25 MHz and has no room for its state (the Alchitry Cu). It orders only the NIC's own
/// decisions: peers interoperate either way.
#[cfg(not(feature = "config-small"))]
pub const SEL_OP_LAG: bool = true;
/// The path selector's operation lag (SPEC.md §6.3): see the default configuration's.
#[cfg(feature = "config-small")]
pub const SEL_OP_LAG: bool = false;

/// Width of the word index inside the SACK ring: 3 (default), 2 (reduced), 1 (small).
#[cfg(not(any(feature = "config-reduced", feature = "config-small")))]
pub const SACK_WORD_INDEX_BITS: u32 = 3;
/// Width of the word index inside the SACK ring: 3 (default), 2 (reduced), 1 (small).
#[cfg(all(feature = "config-reduced", not(feature = "config-small")))]
pub const SACK_WORD_INDEX_BITS: u32 = 2;
/// Width of the word index inside the SACK ring: 3 (default), 2 (reduced), 1 (small).
#[cfg(feature = "config-small")]
pub const SACK_WORD_INDEX_BITS: u32 = 1;

/// Bits of the per-path SACK bitmap (receive window in packets): 256, 128 or 64.
pub const SACK_BITS: usize = SACK_WORDS * SACK_WORD_BITS;
/// Width of a bit index inside the SACK ring (`SACK_BITS` = 2^SACK_INDEX_BITS).
pub const SACK_INDEX_BITS: u32 = SACK_WORD_INDEX_BITS + SACK_WORD_BITS.trailing_zeros();
/// Bits per bitmap word: the unit by which windows slide (design-notes §5).
pub const SACK_WORD_BITS: usize = 32;
/// Words in the per-path SACK ring (`SACK_BITS / SACK_WORD_BITS`).
pub const SACK_WORDS: usize = 1 << SACK_WORD_INDEX_BITS;

/// Width of per-path packet sequence numbers (wrap-safe serial arithmetic, RFC 1982).
pub const PSN_BITS: u32 = 32;

/// Maximum network planes per NIC.
pub const MAX_PLANES: usize = 8;

/// Per-path congestion window is kept in units of 1/CWND_FRAC_ONE packets.
pub const CWND_FRAC_BITS: u32 = 8;
/// One packet in fixed-point cwnd units.
pub const CWND_ONE: u32 = 1 << CWND_FRAC_BITS;
/// Default initial per-path window, in packets.
pub const CWND_INIT_PKTS: u32 = 8;
/// Packets in flight a connection may have before its first rate hint (SPEC.md §8.5): one
/// bandwidth-delay product of a 400 Gb/s port at a 9.4 µs base RTT in 4 KiB frames (112.7).
/// Sent before the first ACK, more only queues; in an incast it is what the queues drop.
/// 65535 leaves the first flight to the paths' windows (PATHS x CWND_INIT_PKTS).
pub const CONN_LIMIT_INIT_PKTS: u16 = 112;
/// Minimum per-path window, in packets.
pub const CWND_MIN_PKTS: u32 = 1;
/// Maximum per-path window, in packets (bounded by the SACK window minus one word of slack).
pub const CWND_MAX_PKTS: u32 = (SACK_BITS - SACK_WORD_BITS) as u32;

/// A packet `x` is declared lost once a packet with PSN >= x + LOSS_THRESHOLD on the same
/// path is acknowledged. 1 = "a gap on a path means loss" (paths are FIFO).
pub const LOSS_THRESHOLD: u32 = 1;

/// Minimum retransmission timeout, nanoseconds.
pub const RTO_MIN_NS: u64 = 50_000;
/// Maximum retransmission timeout, nanoseconds.
pub const RTO_MAX_NS: u64 = 10_000_000;
/// Initial RTO before any RTT sample, nanoseconds.
pub const RTO_INIT_NS: u64 = 200_000;
/// Maximum exponential backoff shift applied to the RTO.
pub const RTO_MAX_BACKOFF: u8 = 6;
/// Consecutive RTOs after which a path is declared down (probe-only).
pub const PATH_DOWN_RTOS: u8 = 3;
/// Interval between probes on a down path, nanoseconds.
pub const PROBE_INTERVAL_NS: u64 = 100_000;

/// Receiver sends an ACK at least every ACK_COALESCE data packets per path.
pub const ACK_COALESCE: u16 = 4;
/// Receiver's delayed-ACK timer, nanoseconds.
pub const ACK_DELAY_NS: u64 = 5_000;

/// Default payload bytes per packet (4 KiB MTU class).
pub const DEFAULT_MTU_PAYLOAD: u16 = 4096;
/// Maximum ordered streams per connection.
pub const MAX_STREAMS: u16 = 1024;

/// DCTCP-style ECN gain g = 1 / 2^ECN_G_SHIFT.
pub const ECN_G_SHIFT: u32 = 4;
/// Fixed-point scale of the ECN alpha estimate (alpha in [0, ALPHA_ONE]).
pub const ALPHA_ONE: u32 = 1 << 10;
