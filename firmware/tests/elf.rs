//! The section-size reader against a hand-built ELF32 image.
use mroce_firmware::elf::{section_sizes, uses_compressed, ElfError, SectionSizes};

fn elf32(sections: &[(&str, u32)]) -> Vec<u8> {
    // header (52 bytes), then the name table, then the section headers
    let mut names = vec![0u8];
    let mut offs = vec![];
    for (n, _) in sections {
        offs.push(names.len() as u32);
        names.extend_from_slice(n.as_bytes());
        names.push(0);
    }
    let shstr_name = names.len() as u32;
    names.extend_from_slice(b".shstrtab\0");
    let strtab_off = 52u32;
    let shoff = (strtab_off + names.len() as u32 + 3) & !3;
    let mut b = vec![0u8; shoff as usize];
    b[0..4].copy_from_slice(b"\x7FELF");
    b[4] = 1;
    b[5] = 1;
    b[52..52 + names.len()].copy_from_slice(&names);
    let shnum = sections.len() as u16 + 2;
    b[0x20..0x24].copy_from_slice(&shoff.to_le_bytes());
    b[0x2E..0x30].copy_from_slice(&40u16.to_le_bytes());
    b[0x30..0x32].copy_from_slice(&shnum.to_le_bytes());
    b[0x32..0x34].copy_from_slice(&(shnum - 1).to_le_bytes());
    let mut sh = |name: u32, off: u32, size: u32| {
        let mut h = [0u8; 40];
        h[0..4].copy_from_slice(&name.to_le_bytes());
        h[16..20].copy_from_slice(&off.to_le_bytes());
        h[20..24].copy_from_slice(&size.to_le_bytes());
        b.extend_from_slice(&h);
    };
    sh(0, 0, 0);
    for (i, (_, size)) in sections.iter().enumerate() {
        sh(offs[i], 0, *size);
    }
    sh(shstr_name, strtab_off, names.len() as u32);
    b
}

#[test]
fn sums_sections_by_kind() {
    let b = elf32(&[
        (".text", 1000),
        (".text.start", 24),
        (".rodata", 100),
        (".srodata.x", 8),
        (".data", 16),
        (".sdata", 4),
        (".bss", 12288),
        (".sbss", 8),
        (".textual", 999),
        (".debug_info", 5000),
    ]);
    let s = section_sizes(&b).unwrap();
    assert_eq!(
        s,
        SectionSizes {
            text: 1024,
            rodata: 108,
            data: 20,
            bss: 12296
        }
    );
    assert_eq!((s.image(), s.ram()), (1152, 12316));
}

#[test]
fn refuses_what_it_cannot_read() {
    assert_eq!(section_sizes(b"not an elf"), Err(ElfError::NotElf));
    let mut b = elf32(&[(".text", 4)]);
    b[4] = 2;
    assert_eq!(section_sizes(&b), Err(ElfError::Unsupported));
    let b = elf32(&[(".text", 4)]);
    assert_eq!(section_sizes(&b[..60]), Err(ElfError::Truncated));
}

#[test]
fn load_segments_yields_pt_load_contents_at_their_physical_address() {
    use mroce_firmware::elf::load_segments;
    let mut b = vec![0u8; 52 + 2 * 32];
    b[0..4].copy_from_slice(b"\x7FELF");
    b[4] = 1;
    b[5] = 1;
    b[0x1C..0x20].copy_from_slice(&52u32.to_le_bytes());
    b[0x2A..0x2C].copy_from_slice(&32u16.to_le_bytes());
    b[0x2C..0x2E].copy_from_slice(&2u16.to_le_bytes());
    let data_off = b.len() as u32;
    b.extend_from_slice(&[1, 2, 3, 4, 5, 6]);
    let mut ph = |i: usize, ty: u32, off: u32, paddr: u32, filesz: u32| {
        let h = 52 + 32 * i;
        b[h..h + 4].copy_from_slice(&ty.to_le_bytes());
        b[h + 4..h + 8].copy_from_slice(&off.to_le_bytes());
        b[h + 12..h + 16].copy_from_slice(&paddr.to_le_bytes());
        b[h + 16..h + 20].copy_from_slice(&filesz.to_le_bytes());
    };
    ph(0, 1, data_off, 0x100, 6); // PT_LOAD
    ph(1, 4, data_off, 0x200, 6); // PT_NOTE: skipped
    let mut seen = vec![];
    load_segments(&b, |a, d| seen.push((a, d.to_vec()))).unwrap();
    assert_eq!(seen, vec![(0x100, vec![1, 2, 3, 4, 5, 6])]);
    // a segment that points past the end of the file
    let h = 52 + 16;
    b[h..h + 4].copy_from_slice(&100u32.to_le_bytes());
    assert_eq!(load_segments(&b, |_, _| {}), Err(ElfError::Truncated));
}

#[test]
fn counts_symbols_by_name() {
    use mroce_firmware::elf::count_symbols;
    // sections: null, .strtab (symbol names), .symtab (link = 1), .shstrtab
    let strtab = b"\0fw_main\0_ZN4core9panicking5panic\0_ZN4core9panicking18panic_bounds_check\0";
    let shstr = b"\0.strtab\0.symtab\0.shstrtab\0";
    let mut b = vec![0u8; 52];
    b[0..4].copy_from_slice(b"\x7FELF");
    b[4] = 1;
    b[5] = 1;
    let str_off = b.len() as u32;
    b.extend_from_slice(strtab);
    let shstr_off = b.len() as u32;
    b.extend_from_slice(shstr);
    while !b.len().is_multiple_of(4) {
        b.push(0);
    }
    let sym_off = b.len() as u32;
    for name in [0u32, 1, 9, 35] {
        let mut s = [0u8; 16];
        s[0..4].copy_from_slice(&name.to_le_bytes());
        b.extend_from_slice(&s);
    }
    let shoff = b.len() as u32;
    b[0x20..0x24].copy_from_slice(&shoff.to_le_bytes());
    b[0x2E..0x30].copy_from_slice(&40u16.to_le_bytes());
    b[0x30..0x32].copy_from_slice(&4u16.to_le_bytes());
    b[0x32..0x34].copy_from_slice(&3u16.to_le_bytes());
    for (name, ty, off, size, link) in [
        (0u32, 0u32, 0u32, 0u32, 0u32),
        (1, 3, str_off, strtab.len() as u32, 0),
        (9, 2, sym_off, 64, 1),
        (17, 3, shstr_off, shstr.len() as u32, 0),
    ] {
        let mut h = [0u8; 40];
        h[0..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&ty.to_le_bytes());
        h[16..20].copy_from_slice(&off.to_le_bytes());
        h[20..24].copy_from_slice(&size.to_le_bytes());
        h[24..28].copy_from_slice(&link.to_le_bytes());
        b.extend_from_slice(&h);
    }
    assert_eq!(count_symbols(&b, b"panicking"), Ok(2));
    assert_eq!(count_symbols(&b, b"fw_main"), Ok(1));
    assert_eq!(count_symbols(&b, b"absent"), Ok(0));
}

#[test]
fn compressed_instructions_are_read_from_e_flags() {
    let mut b = elf32(&[(".text", 4)]);
    b[0x12..0x14].copy_from_slice(&243u16.to_le_bytes()); // EM_RISCV
    assert_eq!(uses_compressed(&b), Ok(false));
    b[0x24..0x28].copy_from_slice(&0x5u32.to_le_bytes()); // EF_RISCV_RVC | float ABI bits
    assert_eq!(uses_compressed(&b), Ok(true));
    // the flag means something else on another machine
    b[0x12..0x14].copy_from_slice(&62u16.to_le_bytes());
    assert_eq!(uses_compressed(&b), Ok(false));
    assert_eq!(uses_compressed(b"not an elf"), Err(ElfError::NotElf));
    b[0x12..0x14].copy_from_slice(&243u16.to_le_bytes());
    assert_eq!(uses_compressed(&b[..0x20]), Err(ElfError::Truncated));
}
