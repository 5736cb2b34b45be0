//! Decoding arbitrary bytes never panics, and anything that decodes re-encodes to a frame
//! that decodes to the same packet.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mroce_model::wire::{decode_mroce_frame, encode_mroce};

fuzz_target!(|data: &[u8]| {
    if let Ok((f, p)) = decode_mroce_frame(data) {
        let mut buf = vec![0u8; data.len() + 64];
        let n = encode_mroce(&mut buf, &f.addrs, &f.bth, &p).expect("a decoded packet re-encodes");
        let (_, p2) = decode_mroce_frame(&buf[..n]).expect("re-encoded frame decodes");
        assert_eq!(p, p2);
    }
});
