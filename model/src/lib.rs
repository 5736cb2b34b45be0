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
//! caller provides. It is `no_std` + `alloc`; the `std` feature only adds `std::error::Error`.
#![cfg_attr(not(feature = "std"), no_std)]
#![warn(missing_docs)]

extern crate alloc;

pub mod memory;
pub mod params;
pub mod path_selector;
pub mod rx_tracker;
pub mod seq;
pub mod transport;
pub mod tx_scoreboard;
pub mod wire;
