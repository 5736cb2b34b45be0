//! Section sizes of a 32-bit little-endian ELF image (the soft-core binary), from its section
//! headers: what `llvm-size` reports, without needing it installed.

/// Sizes in bytes, summed over the sections of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SectionSizes {
    /// `.text*` (code).
    pub text: u32,
    /// `.rodata*` / `.srodata*` (constants).
    pub rodata: u32,
    /// `.data*` / `.sdata*` (initialised RAM).
    pub data: u32,
    /// `.bss*` / `.sbss*` (zeroed RAM).
    pub bss: u32,
}

impl SectionSizes {
    /// Image bytes that live in the program store: code, constants, initial data.
    pub fn image(&self) -> u32 {
        self.text + self.rodata + self.data
    }
    /// Static RAM: data + bss (the stack comes on top).
    pub fn ram(&self) -> u32 {
        self.data + self.bss
    }
}

/// Why an image could not be measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElfError {
    /// Not an ELF file.
    NotElf,
    /// Not 32-bit little-endian.
    Unsupported,
    /// A header points outside the file.
    Truncated,
    /// A loadable segment lies outside the memory it is loaded into.
    OutsideMemory,
}

fn u16_at(b: &[u8], o: usize) -> Result<u16, ElfError> {
    let s = b.get(o..o + 2).ok_or(ElfError::Truncated)?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], o: usize) -> Result<u32, ElfError> {
    let s = b.get(o..o + 4).ok_or(ElfError::Truncated)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn name_at(b: &[u8], o: usize) -> Result<&[u8], ElfError> {
    let s = b.get(o..).ok_or(ElfError::Truncated)?;
    let end = s.iter().position(|&c| c == 0).ok_or(ElfError::Truncated)?;
    Ok(&s[..end])
}

/// The test every reader here starts with: an ELF file, 32-bit, little-endian.
fn check_header(b: &[u8]) -> Result<(), ElfError> {
    if b.get(0..4) != Some(&[0x7F, b'E', b'L', b'F'][..]) {
        return Err(ElfError::NotElf);
    }
    if b.get(4) != Some(&1) || b.get(5) != Some(&1) {
        return Err(ElfError::Unsupported);
    }
    Ok(())
}

/// `EM_RISCV`, the ELF machine number of RISC-V.
const EM_RISCV: u16 = 243;
/// `EF_RISCV_RVC` in `e_flags`: the code may use compressed (C extension) instructions.
const EF_RISCV_RVC: u32 = 0x1;

/// True when the image is RISC-V code that may use compressed instructions (its `e_flags` has
/// `EF_RISCV_RVC`): a riscv32imc build, which a core without the C extension cannot run.
pub fn uses_compressed(b: &[u8]) -> Result<bool, ElfError> {
    check_header(b)?;
    Ok(u16_at(b, 0x12)? == EM_RISCV && u32_at(b, 0x24)? & EF_RISCV_RVC != 0)
}

fn is(name: &[u8], base: &[u8]) -> bool {
    name == base || (name.starts_with(base) && name.get(base.len()) == Some(&b'.'))
}

/// Sum the section sizes of an ELF32 little-endian image.
pub fn section_sizes(b: &[u8]) -> Result<SectionSizes, ElfError> {
    check_header(b)?;
    let shoff = u32_at(b, 0x20)? as usize;
    let shentsize = usize::from(u16_at(b, 0x2E)?);
    let shnum = usize::from(u16_at(b, 0x30)?);
    let shstrndx = usize::from(u16_at(b, 0x32)?);
    if shentsize < 24 || shstrndx >= shnum {
        return Err(ElfError::Truncated);
    }
    let sh = |i: usize| shoff + i * shentsize;
    let strtab = u32_at(b, sh(shstrndx) + 16)? as usize;
    let mut s = SectionSizes::default();
    for i in 0..shnum {
        let name = name_at(b, strtab + u32_at(b, sh(i))? as usize)?;
        let size = u32_at(b, sh(i) + 20)?;
        if is(name, b".text") {
            s.text += size;
        } else if is(name, b".rodata") || is(name, b".srodata") {
            s.rodata += size;
        } else if is(name, b".data") || is(name, b".sdata") {
            s.data += size;
        } else if is(name, b".bss") || is(name, b".sbss") {
            s.bss += size;
        }
    }
    Ok(s)
}

/// Call `f(address, bytes)` for every loadable segment's file contents (PT_LOAD, physical
/// address): what a loader (or a testbench's `$readmemh` image) puts in memory.
pub fn load_segments(b: &[u8], mut f: impl FnMut(u32, &[u8])) -> Result<(), ElfError> {
    check_header(b)?;
    let phoff = u32_at(b, 0x1C)? as usize;
    let phentsize = usize::from(u16_at(b, 0x2A)?);
    let phnum = usize::from(u16_at(b, 0x2C)?);
    if phnum > 0 && phentsize < 32 {
        return Err(ElfError::Truncated);
    }
    for i in 0..phnum {
        let h = phoff + i * phentsize;
        if u32_at(b, h)? != 1 {
            continue;
        }
        let off = u32_at(b, h + 4)? as usize;
        let paddr = u32_at(b, h + 12)?;
        let filesz = u32_at(b, h + 16)? as usize;
        let data = b.get(off..off + filesz).ok_or(ElfError::Truncated)?;
        if filesz > 0 {
            f(paddr, data);
        }
    }
    Ok(())
}

/// Copy every loadable segment into `mem`, which starts at address `base`; returns the end of
/// the highest segment (bytes from `base`). A segment outside `mem` is an error.
pub fn load_into(b: &[u8], base: u32, mem: &mut [u8]) -> Result<usize, ElfError> {
    let mut end = 0usize;
    let mut outside = false;
    load_segments(b, |addr, data| {
        let start = addr.wrapping_sub(base) as usize;
        match start.checked_add(data.len()).and_then(|e| mem.get_mut(start..e)) {
            Some(dst) => {
                dst.copy_from_slice(data);
                end = end.max(start + data.len());
            }
            None => outside = true,
        }
    })?;
    if outside {
        return Err(ElfError::OutsideMemory);
    }
    Ok(end)
}

/// Call `f(name, value)` for every symbol of the ELF32 symbol table (none when it has none).
fn for_each_symbol(b: &[u8], mut f: impl FnMut(&[u8], u32)) -> Result<(), ElfError> {
    check_header(b)?;
    let shoff = u32_at(b, 0x20)? as usize;
    let shentsize = usize::from(u16_at(b, 0x2E)?);
    let shnum = usize::from(u16_at(b, 0x30)?);
    for i in 0..shnum {
        let h = shoff + i * shentsize;
        if u32_at(b, h + 4)? != 2 {
            continue; // not SHT_SYMTAB
        }
        let (off, size) = (u32_at(b, h + 16)? as usize, u32_at(b, h + 20)? as usize);
        let link = u32_at(b, h + 24)? as usize;
        let strtab = u32_at(b, shoff + link * shentsize + 16)? as usize;
        for s in (off..off + size).step_by(16) {
            let name = name_at(b, strtab + u32_at(b, s)? as usize)?;
            f(name, u32_at(b, s + 4)?);
        }
    }
    Ok(())
}

/// Symbols of the image whose name contains `needle` (e.g. `panicking`: a panic path that the
/// optimiser could not remove), from the ELF32 symbol table; 0 when the image has none.
pub fn count_symbols(b: &[u8], needle: &[u8]) -> Result<usize, ElfError> {
    let mut n = 0;
    for_each_symbol(b, |name, _| {
        if !needle.is_empty() && name.windows(needle.len()).any(|w| w == needle) {
            n += 1;
        }
    })?;
    Ok(n)
}

/// Address of the symbol named exactly `name` (e.g. [`crate::soc_status::STATUS_SYMBOL`]).
pub fn symbol_address(b: &[u8], name: &[u8]) -> Result<Option<u32>, ElfError> {
    let mut found = None;
    for_each_symbol(b, |n, v| {
        if n == name && found.is_none() {
            found = Some(v);
        }
    })?;
    Ok(found)
}
