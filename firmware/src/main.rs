//! The soft-core image (riscv32im-unknown-none-elf: PicoRV32) and, on the host, the tool that
//! reports its section sizes (`mroce-firmware size <elf> [--json]`, used by
//! scripts/firmware-size.sh) and writes its RAM image as `$readmemh` words
//! (`mroce-firmware hex <elf> <out.hex>`, for a RAM initialised by `$readmemh`).
#![cfg_attr(target_os = "none", no_std)]
#![cfg_attr(target_os = "none", no_main)]

#[cfg(target_os = "none")]
mod soc {
    use core::panic::PanicInfo;
    use mroce_csr as csr;
    use mroce_firmware::memory_map::{CONNECTIONS, CSR_BASE};
    use mroce_firmware::soc_status::{heartbeat, SocStatus, STATUS_WORDS};
    use mroce_firmware::{CcParams, Config, ConnRequest, ConnTable, Csr, Firmware, Mmio};

    // Reset entry (PicoRV32 PROGADDR_RESET = 0): stack at the top of RAM, zero .bss, run.
    // The image is loaded whole into RAM, so .data is already in place.
    core::arch::global_asm!(
        ".section .text.start, \"ax\"",
        ".global _start",
        "_start:",
        "    la sp, _stack_top",
        "    la t0, _sbss",
        "    la t1, _ebss",
        "1:  bgeu t0, t1, 2f",
        "    sw zero, 0(t0)",
        "    addi t0, t0, 4",
        "    j 1b",
        "2:  call fw_main",
        "3:  j 3b",
    );

    static mut TABLE: ConnTable<CONNECTIONS> = ConnTable::new();

    /// The status record (`soc_status`): written whole after setup and after every poll, read
    /// by the SoC co-simulation through the RAM's debug port.
    #[no_mangle]
    static mut MROCE_STATUS: [u32; STATUS_WORDS] = [0; STATUS_WORDS];

    fn fault_register() -> *mut u32 {
        (CSR_BASE as usize + usize::from(csr::FAULT)) as *mut u32
    }

    fn publish(st: &SocStatus) {
        // SAFETY: single hart, no interrupts; volatile so the record is in RAM when the
        // heartbeat that follows it is written.
        unsafe {
            let p = core::ptr::addr_of_mut!(MROCE_STATUS) as *mut u32;
            for (i, w) in st.to_words().iter().enumerate() {
                core::ptr::write_volatile(p.add(i), *w);
            }
        }
    }

    /// Boot, bring up the default connection, then run the health monitor forever, publishing
    /// the status record and a heartbeat after each step. A failed step is already in `FAULT`
    /// (the firmware writes it); the loop goes on polling.
    #[no_mangle]
    extern "C" fn fw_main() -> ! {
        // SAFETY: the SoC maps transport_core's CSR window at CSR_BASE, used only through `hw`.
        let hw = unsafe { Mmio::new(CSR_BASE as usize) };
        // SAFETY: fw_main runs once, on the only hart; nothing else refers to TABLE.
        let table = unsafe { &mut *core::ptr::addr_of_mut!(TABLE) };
        let mut fw = match Firmware::boot(hw, Config::DEFAULT, table) {
            Ok(fw) => fw,
            Err(e) => {
                publish(&SocStatus {
                    setup_fault: e.fault_word(),
                    ..SocStatus::default()
                });
                loop {
                    core::hint::spin_loop();
                }
            }
        };
        let planes = ((csr::PARAMS_VALUE >> 24) as u8).min(4);
        let setup = fw.setup(&ConnRequest {
            peer: 0,
            paths: mroce_model::params::PATHS as u8,
            planes,
            cc: CcParams {
                conn_limit: 0,
                rto_min_ns: mroce_model::params::RTO_MIN_NS as u32,
                rto_init_ns: mroce_model::params::RTO_INIT_NS as u32,
            },
        });
        let setup_fault = setup.err().map_or(0, |e| e.fault_word());
        loop {
            publish(&SocStatus {
                setup_fault,
                stats: fw.stats,
            });
            let beat = heartbeat(fw.stats.polls);
            fw.hw().write(csr::SCRATCH, beat);
            let _ = fw.poll();
        }
    }

    /// Record the panic in `FAULT` (code 0xFF, source line in [31:8]) and stop.
    #[panic_handler]
    fn panic(info: &PanicInfo) -> ! {
        let line = info.location().map_or(0, |l| l.line());
        // SAFETY: the CSR window is mapped (see fw_main); a single volatile word write.
        unsafe { core::ptr::write_volatile(fault_register(), csr::fault::PANIC | (line << 8)) };
        loop {
            core::hint::spin_loop();
        }
    }
}

#[cfg(not(target_os = "none"))]
fn main() -> std::process::ExitCode {
    use mroce_firmware::elf::section_sizes;
    use mroce_firmware::memory_map::{RAM_SIZE, STACK_SIZE};
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let files: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let (Some(cmd), Some(path)) = (files.first(), files.get(1)) else {
        eprintln!("usage: mroce-firmware size <soft-core ELF> [--json] | hex <soft-core ELF> <out.hex>");
        eprintln!("(the soft-core image itself is built with --target riscv32im-unknown-none-elf)");
        return std::process::ExitCode::from(2);
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    match cmd.as_str() {
        "size" => {}
        "hex" => return write_hex(&bytes, path, files.get(2).map(|s| s.as_str())),
        _ => {
            eprintln!("unknown command {cmd:?}; try: size <elf> [--json] | hex <elf> <out.hex>");
            return std::process::ExitCode::from(2);
        }
    }
    let s = match section_sizes(&bytes) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: not a 32-bit little-endian ELF ({e:?})");
            return std::process::ExitCode::from(1);
        }
    };
    let ram_total = s.image() - s.data + s.ram() + STACK_SIZE;
    // symbols of core::panicking left in the image: each is a reachable panic path
    let panic_symbols = mroce_firmware::elf::count_symbols(&bytes, b"panicking").unwrap_or(0);
    if json {
        println!(
            "{{\"file\":{path:?},\"text\":{},\"rodata\":{},\"data\":{},\"bss\":{},\"stack\":{STACK_SIZE},\"ram_static\":{},\"ram_total\":{ram_total},\"ram_size\":{RAM_SIZE},\"panic_symbols\":{panic_symbols}}}",
            s.text,
            s.rodata,
            s.data,
            s.bss,
            s.ram()
        );
    } else {
        println!("{path}");
        println!("  .text   {:>7} B", s.text);
        println!("  .rodata {:>7} B", s.rodata);
        println!("  .data   {:>7} B", s.data);
        println!("  .bss    {:>7} B", s.bss);
        println!(
            "  RAM: static {} B + stack {STACK_SIZE} B; with the image {ram_total} of {RAM_SIZE} B",
            s.ram()
        );
        println!("  panic paths (core::panicking symbols): {panic_symbols}");
    }
    if ram_total > RAM_SIZE {
        eprintln!("the image does not fit in RAM");
        return std::process::ExitCode::from(1);
    }
    std::process::ExitCode::SUCCESS
}

/// The RAM image from address 0 as little-endian 32-bit words, one hex word per line.
#[cfg(not(target_os = "none"))]
fn write_hex(bytes: &[u8], path: &str, out: Option<&str>) -> std::process::ExitCode {
    use mroce_firmware::memory_map::{RAM_BASE, RAM_SIZE};
    let Some(out) = out else {
        eprintln!("usage: mroce-firmware hex <soft-core ELF> <out.hex>");
        return std::process::ExitCode::from(2);
    };
    let mut ram = vec![0u8; RAM_SIZE as usize];
    let end = match mroce_firmware::elf::load_into(bytes, RAM_BASE, &mut ram) {
        Ok(end) => end,
        Err(mroce_firmware::elf::ElfError::OutsideMemory) => {
            eprintln!("{path}: a segment lies outside RAM");
            return std::process::ExitCode::from(1);
        }
        Err(e) => {
            eprintln!("{path}: not a 32-bit little-endian ELF ({e:?})");
            return std::process::ExitCode::from(1);
        }
    };
    let words: Vec<String> = ram[..end.div_ceil(4) * 4]
        .chunks(4)
        .map(|w| format!("{:08x}", u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
        .collect();
    if let Err(e) = std::fs::write(out, words.join("\n") + "\n") {
        eprintln!("{out}: {e}");
        return std::process::ExitCode::from(1);
    }
    println!("{out}: {} words", words.len());
    std::process::ExitCode::SUCCESS
}
