//! An established mroce pair with WRITEs flowing both ways, fed forged frames (raw bytes, or
//! its own frames changed and resealed so that they reach the protocol: forged ACKs, PSNs out
//! of the window, bad keys), never panics: every frame is counted, no timer is left due, and no
//! frame changes a region the peer may not write (`mroce_fuzz::Pair::check`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use mroce_fuzz::{Forged, Pair};
use mroce_model::endpoint::{Endpoint, EndpointConfig};
use mroce_model::transport::NicAddr;

fuzz_target!(|frames: Vec<Forged>| {
    let a = NicAddr::with_planes([2, 0, 0, 0, 0, 1], [10, 0, 0, 1], 2);
    let b = NicAddr::with_planes([2, 0, 0, 0, 0, 2], [10, 0, 0, 2], 2);
    // Both announce their fan-in and know a fabric RTT, so that forged announcements reach
    // the code that applies them (SPEC.md §8.5).
    let cfg = EndpointConfig {
        announce_fan_in: true,
        fabric_rtt_ns: 10_000,
        ..Default::default()
    };
    let ea = Endpoint::new(EndpointConfig { addr: a, ..cfg }, 1);
    let eb = Endpoint::new(EndpointConfig { addr: b, ..cfg }, 2);
    let mut pair = Pair::new(ea, eb, a, b);
    for f in &frames {
        pair.forge(f);
    }
    pair.check(60);
});
