//! Classic libpcap file writer (no dependency), shared by every driver.
//!
//! File layout (all fields little-endian, as the magic number tells readers):
//! global header of 24 bytes (magic, version 2.4, thiszone 0, sigfigs 0, snaplen, linktype),
//! then per packet a 16-byte record header (ts seconds, ts fraction, captured length,
//! original length) followed by the captured bytes. Magic `0xA1B23C4D` marks nanosecond
//! timestamps, `0xA1B2C3D4` microsecond ones.

use std::io::{self, Write};

/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Magic number of a microsecond-resolution file.
pub const MAGIC_MICROS: u32 = 0xA1B2_C3D4;
/// Magic number of a nanosecond-resolution file.
pub const MAGIC_NANOS: u32 = 0xA1B2_3C4D;
/// Default snapshot length (bytes kept per packet).
pub const DEFAULT_SNAPLEN: u32 = 262_144;

/// Timestamp resolution of a capture file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsResolution {
    /// Microseconds (the original format; readable by every tool).
    Micros,
    /// Nanoseconds.
    Nanos,
}

/// Writes packets to a classic pcap stream. Wrap files in a `BufWriter`.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    w: W,
    res: TsResolution,
    snaplen: u32,
    packets: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Write the global header for Ethernet frames with the default snapshot length.
    pub fn new(w: W, res: TsResolution) -> io::Result<Self> {
        Self::with_linktype(w, res, DEFAULT_SNAPLEN, LINKTYPE_ETHERNET)
    }

    /// Write the global header with an explicit snapshot length and link type.
    pub fn with_linktype(mut w: W, res: TsResolution, snaplen: u32, linktype: u32) -> io::Result<Self> {
        let magic = match res {
            TsResolution::Micros => MAGIC_MICROS,
            TsResolution::Nanos => MAGIC_NANOS,
        };
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&magic.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone (8..12) and sigfigs (12..16) stay 0.
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&linktype.to_le_bytes());
        w.write_all(&h)?;
        Ok(PcapWriter {
            w,
            res,
            snaplen,
            packets: 0,
        })
    }

    /// Append one packet captured at `ts_ns` nanoseconds (from the simulation origin).
    /// Packets longer than the snapshot length are truncated, keeping their original length.
    pub fn write_packet(&mut self, ts_ns: u64, data: &[u8]) -> io::Result<()> {
        let incl = data.len().min(self.snaplen as usize);
        let secs = ts_ns / 1_000_000_000;
        let frac = match self.res {
            TsResolution::Micros => (ts_ns % 1_000_000_000) / 1_000,
            TsResolution::Nanos => ts_ns % 1_000_000_000,
        };
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&(secs as u32).to_le_bytes());
        h[4..8].copy_from_slice(&(frac as u32).to_le_bytes());
        h[8..12].copy_from_slice(&(incl as u32).to_le_bytes());
        h[12..16].copy_from_slice(&(data.len() as u32).to_le_bytes());
        self.w.write_all(&h)?;
        self.w.write_all(&data[..incl])?;
        self.packets += 1;
        Ok(())
    }

    /// Packets written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Flush the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// Flush and return the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let mut p = PcapWriter::new(Vec::new(), TsResolution::Nanos).unwrap();
        p.write_packet(1_500_000_123, &[0xAB; 60]).unwrap();
        assert_eq!(p.packets(), 1);
        let b = p.into_inner().unwrap();
        assert_eq!(b.len(), 24 + 16 + 60);
        assert_eq!(&b[0..4], &MAGIC_NANOS.to_le_bytes());
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), LINKTYPE_ETHERNET);
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 500_000_123);
        assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 60);

        let mut p = PcapWriter::with_linktype(Vec::new(), TsResolution::Micros, 32, LINKTYPE_ETHERNET).unwrap();
        p.write_packet(2_000_001_999, &[1; 60]).unwrap();
        let b = p.into_inner().unwrap();
        assert_eq!(&b[0..4], &MAGIC_MICROS.to_le_bytes());
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 1);
        assert_eq!(u32::from_le_bytes(b[32..36].try_into().unwrap()), 32);
        assert_eq!(u32::from_le_bytes(b[36..40].try_into().unwrap()), 60);
        assert_eq!(b.len(), 24 + 16 + 32);
    }
}
