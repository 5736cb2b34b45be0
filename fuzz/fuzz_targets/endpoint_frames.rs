//! An established mroce endpoint fed arbitrary frames (raw, or mutated valid ones) never
//! panics and keeps its invariants; every frame is either processed or a counted drop.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mroce_model::endpoint::{Endpoint, EndpointConfig};
use mroce_model::transport::{NicAddr, Transport};

fuzz_target!(|frames: Vec<Vec<u8>>| {
    let a = NicAddr::with_planes([2, 0, 0, 0, 0, 1], [10, 0, 0, 1], 2);
    let b = NicAddr::with_planes([2, 0, 0, 0, 0, 2], [10, 0, 0, 2], 2);
    // Both announce their fan-in and know a fabric RTT, so that forged announcements reach
    // the code that applies them (SPEC.md §8.5).
    let cfg = EndpointConfig {
        announce_fan_in: true,
        fabric_rtt_ns: 10_000,
        ..Default::default()
    };
    let mut ea = Endpoint::new(EndpointConfig { addr: a, ..cfg }, 1);
    let mut eb = Endpoint::new(EndpointConfig { addr: b, ..cfg }, 2);
    ea.add_peer(b);
    eb.add_peer(a);
    let _ = ea.connect(0, b);
    let mut buf = vec![0u8; 9000];
    let mut now = 0;
    // Establish, then interleave fuzz frames with real traffic.
    for _ in 0..4 {
        while let Some(t) = ea.poll_transmit(now, &mut buf) {
            eb.handle_frame(now, t.plane, &buf[..t.len]);
        }
        while let Some(t) = eb.poll_transmit(now, &mut buf) {
            ea.handle_frame(now, t.plane, &buf[..t.len]);
        }
        now += 1000;
    }
    for (i, f) in frames.iter().enumerate() {
        now += 100;
        if i % 2 == 0 {
            eb.handle_frame(now, 0, f)
        } else {
            ea.handle_frame(now, 0, f)
        }
        while let Some(t) = eb.poll_transmit(now, &mut buf) {
            ea.handle_frame(now, t.plane, &buf[..t.len]);
        }
        if ea.poll_timeout().is_some_and(|t| t <= now) {
            ea.handle_timeout(now);
        }
        while ea.poll_event().is_some() {}
        while eb.poll_event().is_some() {}
    }
    assert!(eb.stats().rx_frames >= (frames.len() / 2) as u64);
});
