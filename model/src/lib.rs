//! mroce-model: the authoritative, sans-IO software model of the mroce transport.
//!
//! Layers (SPEC.md §2):
//! - wire format: [`wire`], [`params`], [`seq`];
//! - hardware-mapped components: [`rx_tracker`], [`tx_scoreboard`], [`path_selector`];
//! - connection layer: [`endpoint`] (connections, streams, placement, congestion control);
//! - baseline: [`rocev2`] (RC go-back-N over a single path);
//! - driver interface: [`transport`], [`memory`].
//!
//! The model is deterministic: time comes in through the API and randomness from a seed the
//! caller provides. It is `no_std`; the `alloc` feature (default) adds the connection layer, `std` only adds
//! `std::error::Error`. Without `alloc` the wire format and components build for the firmware.
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;

// The README's example runs as a doctest, so the documented use of the API keeps compiling.
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(feature = "alloc")]
pub mod component_trace;
#[cfg(feature = "alloc")]
pub mod connection;
#[cfg(feature = "alloc")]
pub mod endpoint;
#[cfg(feature = "alloc")]
pub mod memory;
pub mod params;
pub mod path_selector;
#[cfg(feature = "alloc")]
pub mod rocev2;
pub mod rtt;
pub mod rx_tracker;
pub mod seq;
#[cfg(feature = "alloc")]
pub mod transport;
#[cfg(feature = "alloc")]
pub mod tx_order;
pub mod tx_scoreboard;
pub mod wire;

macro_rules! counters {
    ($($(#[doc = $d:literal])* $name:ident),* $(,)?) => {
        /// Event counters of an mroce NIC (SPEC.md §9 names each one).
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct Counters {
            $($(#[doc = $d])* pub $name: u64,)*
        }
        impl Counters {
            /// Every counter as (name, value).
            #[cfg(feature = "alloc")]
            pub fn pairs(&self) -> alloc::vec::Vec<(&'static str, u64)> {
                alloc::vec![$((stringify!($name), self.$name)),*]
            }
        }
    };
}

counters! {
    /// Frames handed to the NIC.
    rx_frames,
    /// Frames the NIC emitted.
    tx_frames,
    /// Data frames emitted (first transmissions and retransmissions).
    tx_data,
    /// ACK frames emitted (fan-in announcements not counted: see `tx_announces`).
    tx_acks,
    /// Data and probe frames received for a known connection.
    rx_data,
    /// ACK frames received for a known connection.
    rx_acks,
    /// Frames that failed to decode (sum of the next four).
    bad_frames,
    /// Frames whose ICRC did not match.
    bad_icrc,
    /// Frames shorter than their headers.
    truncated,
    /// Frames with an opcode this specification does not define.
    unknown_opcode,
    /// Frames with another malformation (IPv4, UDP, reserved fields, lengths).
    malformed,
    /// Frames for a connection id that is not established, or from the wrong peer.
    unknown_connection,
    /// CONNECT/DISCONNECT from an address not in the neighbour table.
    unknown_peer,
    /// CONNECTs refused because this NIC does not accept incoming connections.
    refused_connects,
    /// CONNECTs refused because the connection table is full.
    table_full,
    /// Data frames naming a path the connection does not have.
    bad_path,
    /// Data frames whose PSN was below the window or already recorded.
    duplicate_psn,
    /// Data frames beyond the 256-packet receive window.
    out_of_window,
    /// New PSNs carrying a chunk that was already placed: spurious retransmissions that
    /// reached the receiver (the figure reported as `spurious_retransmits`).
    duplicate_chunks,
    /// SENDs dropped because no receive was posted (the sender retransmits them).
    rnr_drops,
    /// WRITEs with an unknown R_Key or to a region without remote write.
    rkey_violations,
    /// WRITEs outside the bounds of their region.
    bounds_violations,
    /// Requests with inconsistent stream, offset or length fields.
    invalid_requests,
    /// Payload bytes placed into memory.
    bytes_placed,
    /// NAKs sent.
    naks_sent,
    /// NAKs received.
    naks_received,
    /// NAKs naming a message that is not pending.
    stale_naks,
    /// Data packets received with ECN = CE.
    ce_received,
    /// ACKs received carrying a non-zero ECN count.
    ecn_echoes,
    /// ACKs that cannot be genuine (misaligned base, beyond what was sent, bad path).
    forged_acks,
    /// ACKs acknowledging PSNs never sent (those bits are ignored).
    forged_ack_bits,
    /// Transmissions declared lost from SACK gaps or RTO.
    losses_detected,
    /// Retransmitted data packets (not counting the second copies of `tail_hedges`).
    retransmits,
    /// Second copies of doubtful chunks sent while nothing else waits, on another path
    /// (SPEC.md §8.3, tail hedge).
    tail_hedges,
    /// Queued retransmissions dropped because the chunk was acknowledged meanwhile.
    retx_cancelled,
    /// Acknowledged transmissions whose chunk was already acknowledged (both copies of a
    /// spuriously retransmitted chunk arrived and were acknowledged).
    redundant_acks,
    /// Retransmission timeouts.
    rtos,
    /// Probes sent (tail-loss and failed-path probes).
    probes_sent,
    /// Path entropy re-rolls after an RTO.
    entropy_rerolls,
    /// Paths moved to a new route because their ECN marking was far above the others'.
    ecn_reroutes,
    /// Rate hints that cut the limit below the packets in flight (the limit then descends
    /// from there, SPEC.md §8.5).
    limit_holds,
    /// Paths declared down.
    paths_down,
    /// Paths brought back up by an answered probe.
    paths_recovered,
    /// Planes declared down.
    planes_down,
    /// Connections failed because the peer stopped answering.
    peer_timeouts,
    /// Local buffers that vanished under a pending request.
    local_access_errors,
    /// Frames that could not be encoded (never expected).
    tx_encode_errors,
    /// Transmit polls of port-blocked connections left out because they could only come back
    /// blocked again (no effect on the protocol: a measure of the scheduler's work saved).
    blocked_polls_skipped,
    /// Fan-in announcements sent (ACKs flagged ANNOUNCE, SPEC.md §8.5).
    tx_announces,
    /// Fan-in announcements that set the limit of a connection still without a rate hint.
    announces_applied,
}

/// SplitMix64: the model's only source of randomness, seeded by the caller.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x6A09_E667_F3BC_C908)
    }
    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
}
