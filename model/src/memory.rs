//! Registered memory regions: the targets of direct placement.
//!
//! A region has a virtual address range and an R_Key. The R_Key's upper 24 bits index the
//! region table and its low 8 bits are a tag drawn at registration, so a stale or guessed
//! key is rejected in O(1) (SPEC.md §8.6).

use alloc::vec;
use alloc::vec::Vec;

/// Access rights of a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The peer may RDMA WRITE into it.
    pub remote_write: bool,
}

/// Keys and address of a registered region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MrKey {
    /// Local key (used in local work requests).
    pub lkey: u32,
    /// Remote key (carried by WRITE packets).
    pub rkey: u32,
    /// Virtual address of byte 0.
    pub va: u64,
}

/// Why a memory access was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MemError {
    /// No region has this key.
    #[error("unknown key {0:#010x}")]
    UnknownKey(u32),
    /// The range leaves the region.
    #[error("range {va:#x}+{len} outside the region")]
    OutOfBounds {
        /// Start address.
        va: u64,
        /// Length.
        len: u64,
    },
    /// The region does not allow remote writes.
    #[error("region does not allow remote write")]
    AccessDenied,
}

struct Region {
    key: MrKey,
    access: Access,
    data: Vec<u8>,
}

/// Base virtual address of region 0; region i starts at `VA_BASE + i * VA_STRIDE`.
pub const VA_BASE: u64 = 0x0000_1000_0000_0000;
/// Address-space stride between regions (1 TiB), so regions never overlap.
pub const VA_STRIDE: u64 = 1 << 40;

/// The region table of one NIC.
#[derive(Default)]
pub struct Memory {
    regions: Vec<Option<Region>>,
    tag: u8,
}

impl core::fmt::Debug for Memory {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Memory")
            .field("regions", &self.regions.iter().flatten().count())
            .finish()
    }
}

impl Memory {
    /// An empty table; `salt` seeds the key tags.
    pub fn new(salt: u8) -> Self {
        Memory {
            regions: Vec::new(),
            tag: salt,
        }
    }

    /// Register a zero-filled region of `len` bytes.
    pub fn register(&mut self, len: usize, access: Access) -> MrKey {
        let idx = self.regions.len() as u32;
        self.tag = self.tag.wrapping_mul(167).wrapping_add(13) | 1;
        let key = (idx << 8) | u32::from(self.tag);
        let key = MrKey {
            lkey: key ^ 0x8000_0000,
            rkey: key,
            va: VA_BASE + u64::from(idx) * VA_STRIDE,
        };
        self.regions.push(Some(Region {
            key,
            access,
            data: vec![0; len],
        }));
        key
    }

    /// Deregister a region; later accesses with its keys fail.
    pub fn deregister(&mut self, key: MrKey) -> Result<(), MemError> {
        let idx = (key.rkey >> 8) as usize;
        match self.regions.get_mut(idx) {
            Some(slot @ Some(_)) if slot.as_ref().map(|r| r.key) == Some(key) => {
                *slot = None;
                Ok(())
            }
            _ => Err(MemError::UnknownKey(key.rkey)),
        }
    }

    fn by_rkey(&self, rkey: u32) -> Result<&Region, MemError> {
        match self.regions.get((rkey >> 8) as usize) {
            Some(Some(r)) if r.key.rkey == rkey => Ok(r),
            _ => Err(MemError::UnknownKey(rkey)),
        }
    }

    fn by_lkey(&self, key: MrKey) -> Result<&Region, MemError> {
        match self.regions.get((key.rkey >> 8) as usize) {
            Some(Some(r)) if r.key == key => Ok(r),
            _ => Err(MemError::UnknownKey(key.lkey)),
        }
    }

    /// Check that a remote WRITE of `len` bytes at `va` under `rkey` is allowed.
    pub fn check_remote_write(&self, rkey: u32, va: u64, len: u64) -> Result<(), MemError> {
        let r = self.by_rkey(rkey)?;
        if !r.access.remote_write {
            return Err(MemError::AccessDenied);
        }
        let off = va.checked_sub(r.key.va).ok_or(MemError::OutOfBounds { va, len })?;
        match off.checked_add(len) {
            Some(end) if end <= r.data.len() as u64 => Ok(()),
            _ => Err(MemError::OutOfBounds { va, len }),
        }
    }

    /// Perform a checked remote WRITE.
    pub fn remote_write(&mut self, rkey: u32, va: u64, bytes: &[u8]) -> Result<(), MemError> {
        self.check_remote_write(rkey, va, bytes.len() as u64)?;
        let idx = (rkey >> 8) as usize;
        if let Some(Some(r)) = self.regions.get_mut(idx) {
            let off = (va - r.key.va) as usize;
            r.data[off..off + bytes.len()].copy_from_slice(bytes);
        }
        Ok(())
    }

    /// Check a local range.
    pub fn check_local(&self, key: MrKey, offset: u64, len: u64) -> Result<(), MemError> {
        let r = self.by_lkey(key)?;
        match offset.checked_add(len) {
            Some(end) if end <= r.data.len() as u64 => Ok(()),
            _ => Err(MemError::OutOfBounds {
                va: key.va.wrapping_add(offset),
                len,
            }),
        }
    }

    /// Read a local range.
    pub fn local(&self, key: MrKey, offset: u64, len: u64) -> Result<&[u8], MemError> {
        self.check_local(key, offset, len)?;
        let r = self.by_lkey(key)?;
        Ok(&r.data[offset as usize..(offset + len) as usize])
    }

    /// Write a local range (applications filling their buffers; SEND placement).
    pub fn local_mut(&mut self, key: MrKey, offset: u64, len: u64) -> Result<&mut [u8], MemError> {
        self.check_local(key, offset, len)?;
        let idx = (key.rkey >> 8) as usize;
        match self.regions.get_mut(idx) {
            Some(Some(r)) => Ok(&mut r.data[offset as usize..(offset + len) as usize]),
            _ => Err(MemError::UnknownKey(key.lkey)),
        }
    }

    /// Whole contents of a region.
    pub fn region(&self, key: MrKey) -> Result<&[u8], MemError> {
        Ok(&self.by_lkey(key)?.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_keys() {
        let mut m = Memory::new(3);
        let k = m.register(100, Access { remote_write: true });
        let ro = m.register(10, Access { remote_write: false });
        assert!(m.remote_write(k.rkey, k.va + 90, &[1; 10]).is_ok());
        assert_eq!(
            m.remote_write(k.rkey, k.va + 91, &[1; 10]),
            Err(MemError::OutOfBounds { va: k.va + 91, len: 10 })
        );
        assert_eq!(
            m.remote_write(k.rkey, k.va - 1, &[1]),
            Err(MemError::OutOfBounds { va: k.va - 1, len: 1 })
        );
        assert_eq!(
            m.remote_write(k.rkey ^ 0x10, k.va, &[1]),
            Err(MemError::UnknownKey(k.rkey ^ 0x10))
        );
        assert_eq!(m.remote_write(ro.rkey, ro.va, &[1]), Err(MemError::AccessDenied));
        assert_eq!(
            m.remote_write(k.rkey, u64::MAX, &[1, 2]),
            Err(MemError::OutOfBounds { va: u64::MAX, len: 2 })
        );
        assert_eq!(m.local(k, 90, 10).unwrap(), &[1; 10]);
        m.deregister(k).unwrap();
        assert!(m.local(k, 0, 1).is_err());
    }
}
