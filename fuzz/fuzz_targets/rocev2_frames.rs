//! The RoCEv2 baseline's endpoint, as `endpoint_frames` fuzzes mroce's: an established pair
//! with WRITEs flowing both ways, fed forged frames (raw, or its own changed and resealed),
//! never panics, counts every frame, leaves no timer due and keeps its local-only regions
//! intact (`mroce_fuzz::Pair::check`). The baseline faces the same bad input in every driver.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mroce_fuzz::{Forged, Pair};
use mroce_model::rocev2::{RoceConfig, RoceEndpoint};
use mroce_model::transport::NicAddr;

fuzz_target!(|frames: Vec<Forged>| {
    let a = NicAddr::with_planes([2, 0, 0, 0, 0, 1], [10, 0, 0, 1], 1);
    let b = NicAddr::with_planes([2, 0, 0, 0, 0, 2], [10, 0, 0, 2], 1);
    let ea = RoceEndpoint::new(
        RoceConfig {
            addr: a,
            ..Default::default()
        },
        1,
    );
    let eb = RoceEndpoint::new(
        RoceConfig {
            addr: b,
            ..Default::default()
        },
        2,
    );
    let mut pair = Pair::new(ea, eb, a, b);
    for f in &frames {
        pair.forge(f);
    }
    pair.check(60);
});
