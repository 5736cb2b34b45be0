//! The board top as built (PicoRV32 + firmware + `transport_core` + self-test + UART report;
//! `mroce_ulx3s.v`, whose pins the smaller ECP5 tops only rename), Verilated in the hardware
//! configuration this crate is built in, runs the firmware ELF given and prints the UART
//! verdict. Exit 0 only on `MROCE BIST PASS` with every message delivered intact. For the
//! Colorlight i5's reduced configuration (scripts/config-check.sh runs it in CI):
//! `cargo run --release -p mroce-cosim --features config-reduced --target-dir target/config-reduced
//!  --example board_selftest -- target/config-reduced/riscv32im-unknown-none-elf/release/mroce-firmware`
use mroce_firmware::memory_map::{RAM_BASE, RAM_SIZE};

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: board_selftest FIRMWARE_ELF");
        std::process::exit(2);
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(2);
        }
    };
    let mut ram = vec![0u8; RAM_SIZE as usize];
    let end = match mroce_firmware::elf::load_into(&bytes, RAM_BASE, &mut ram) {
        Ok(end) => end,
        Err(e) => {
            eprintln!("{path}: not a loadable firmware image: {e:?}");
            std::process::exit(2);
        }
    };
    let words: Vec<u32> = ram[..end.div_ceil(4) * 4]
        .chunks(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    let r = match mroce_cosim::selftest::run_ulx3s(&words, 3_000_000) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("board co-simulation: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "configuration {}: {} (LEDs {:#010b}, {} clocks)",
        mroce_model::params::CONFIG_NAME,
        r.uart_line,
        r.leds,
        r.cycles
    );
    let pass = r.uart_line.starts_with("MROCE BIST PASS dlv=00001000 ") && r.uart_line.ends_with("err=00000000");
    // heartbeat seen, done, passed; no fail, trap or bus error
    std::process::exit(if pass && r.leds & 0x3F == 0b00_0111 { 0 } else { 1 });
}
