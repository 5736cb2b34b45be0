//! The board self-test (fpga-boards/common: `mroce_bist` driving `transport_core` through a
//! lossy loopback channel, with the UART status line) as one Verilated design: what each
//! open-toolchain board runs, simulated here. The run ends when the test reports done; the
//! UART line it then sends is decoded from the `uart_tx` pin.
use crate::verilated::{self, Slot, VerilatedModel};
use crate::CosimError;
use serde::Serialize;

/// Clocks per UART bit of the report (mroce_selftest's default, 115200 baud at 25 MHz).
pub const CLKS_PER_BIT: u64 = 217;

/// Clocks per UART bit of the ECP5 board tops (`mroce_ulx3s.v`: 115200 baud at the 50 MHz of
/// their PLL; the simulation runs the top's clock directly).
pub const ECP5_BOARD_CLKS_PER_BIT: u64 = mroce_hdl::soc::ECP5_BOARD_CLKS_PER_BIT as u64;

/// What the self-test reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SelftestReport {
    /// Channel drop probability per 65536 packets.
    pub drop_thresh: u16,
    /// The test finished (all messages delivered, or its own time limit).
    pub done: bool,
    /// All messages delivered, no data error.
    pub pass: bool,
    /// Messages delivered (once each).
    pub delivered: u32,
    /// Packets sent, retransmissions included.
    pub sent: u32,
    /// Retransmissions.
    pub retransmits: u32,
    /// Packets the channel dropped.
    pub dropped: u32,
    /// Duplicate arrivals.
    pub duplicates: u32,
    /// Data words that did not match their message.
    pub data_errors: u32,
    /// ACKs the sender processed.
    pub acks: u32,
    /// RTO expiries.
    pub rtos: u32,
    /// Clocks the test ran.
    pub cycles: u32,
    /// The UART line sent after the test finished (CR LF stripped).
    pub uart_line: String,
}

struct Pins {
    start: Slot,
    drop: Slot,
    uart: Slot,
    done: Slot,
    pass: Slot,
    counters: [Slot; 9],
}

/// 8N1 receiver on a sampled line.
struct UartRx {
    /// Clocks per bit.
    clks_per_bit: u64,
    /// Clocks since the start bit's falling edge; None while idle.
    t: Option<u64>,
    byte: u8,
    line: Vec<u8>,
}

impl UartRx {
    fn new(clks_per_bit: u64) -> Self {
        Self {
            clks_per_bit,
            t: None,
            byte: 0,
            line: Vec::new(),
        }
    }

    /// One clock of the line; returns a finished line (without CR LF).
    fn clock(&mut self, tx: bool) -> Option<String> {
        match self.t {
            None => {
                if !tx {
                    self.t = Some(0);
                    self.byte = 0;
                }
                None
            }
            Some(t) => {
                let t = t + 1;
                self.t = Some(t);
                // sample bit n in its middle: start bit 0, data 1..=8, stop 9
                if t % self.clks_per_bit == self.clks_per_bit / 2 {
                    let n = t / self.clks_per_bit;
                    if (1..=8).contains(&n) && tx {
                        self.byte |= 1 << (n - 1);
                    }
                    if n == 9 {
                        self.t = None;
                        if self.byte == b'\n' {
                            let s = String::from_utf8_lossy(&self.line).trim_end().to_string();
                            self.line.clear();
                            return Some(s);
                        }
                        self.line.push(self.byte);
                    }
                }
                None
            }
        }
    }
}

/// Run the self-test with the channel dropping `drop_thresh`/65536 of the packets, for at most
/// `max_cycles` clocks.
pub fn run_selftest(drop_thresh: u16, max_cycles: u64) -> Result<SelftestReport, CosimError> {
    let mut m = VerilatedModel::new(&verilated::MROCE_SELFTEST)?;
    let names = [
        "delivered",
        "sent",
        "retransmits",
        "dropped",
        "duplicates",
        "data_errors",
        "acks",
        "rtos",
        "cycles",
    ];
    let mut counters = [Slot { offset: 0, width: 32 }; 9];
    for (s, n) in counters.iter_mut().zip(names) {
        *s = m.output(n, 32)?;
    }
    let p = Pins {
        start: m.input("start", 1)?,
        drop: m.input("drop_thresh", 16)?,
        uart: m.output("uart_tx", 1)?,
        done: m.output("done", 1)?,
        pass: m.output("pass", 1)?,
        counters,
    };
    p.start.put(&mut m.inputs, 1);
    p.drop.put(&mut m.inputs, u64::from(drop_thresh));
    let mut rx = UartRx::new(CLKS_PER_BIT);
    let mut line = None;
    let mut done_at = None;
    let mut c = 0u64;
    // after done, one UART line (95 characters of 10 bits) plus margin
    let line_clks = 100 * 10 * CLKS_PER_BIT;
    while c < max_cycles {
        m.eval();
        let tx = p.uart.get(&m.outputs) != 0;
        if let Some(l) = rx.clock(tx) {
            if done_at.is_some() {
                line = Some(l);
                break;
            }
        }
        if done_at.is_none() && p.done.get(&m.outputs) != 0 {
            done_at = Some(c);
        }
        if done_at.is_some_and(|d| c > d + line_clks) {
            break;
        }
        m.posedge();
        c += 1;
    }
    m.eval();
    let o = &m.outputs;
    let k = |i: usize| p.counters[i].get(o) as u32;
    Ok(SelftestReport {
        drop_thresh,
        done: p.done.get(o) != 0,
        pass: p.pass.get(o) != 0,
        delivered: k(0),
        sent: k(1),
        retransmits: k(2),
        dropped: k(3),
        duplicates: k(4),
        data_errors: k(5),
        acks: k(6),
        rtos: k(7),
        cycles: k(8),
        uart_line: line.unwrap_or_default(),
    })
}

/// What the simulated ULX3S board did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BoardReport {
    /// The first UART line with a verdict (`MROCE BIST PASS ...` / `FAIL ...`), CR LF stripped.
    pub uart_line: String,
    /// LEDs at the end (bit 0 firmware heartbeat seen, 1 done, 2 pass, 3 fail, 4 trap, 5 bus error).
    pub leds: u8,
    /// Clocks run.
    pub cycles: u64,
}

/// Run the ULX3S top (fpga-boards/ulx3s/mroce_ulx3s.v, as synthesised: PicoRV32 booting
/// `image` from its RAM, the firmware setting the connection up, then the self-test through the
/// lossy channel and the UART report) until the UART sends a verdict, for at most `max_cycles`.
#[cfg(not(mroce_no_soc))]
pub fn run_ulx3s(image: &[u32], max_cycles: u64) -> Result<BoardReport, CosimError> {
    let hex: String = image.iter().map(|w| format!("{w:08x}\n")).collect();
    let path = concat!(env!("OUT_DIR"), "/ulx3s-firmware.hex");
    std::fs::write(path, hex).map_err(|err| CosimError::Io { path: path.into(), err })?;
    let mut m = VerilatedModel::new(&verilated::MROCE_ULX3S_SIM)?;
    let uart = m.output("ftdi_rxd", 1)?;
    let led = m.output("led", 8)?;
    let mut rx = UartRx::new(ECP5_BOARD_CLKS_PER_BIT);
    let mut c = 0u64;
    let mut line = String::new();
    while c < max_cycles {
        m.eval();
        if let Some(l) = rx.clock(uart.get(&m.outputs) != 0) {
            if l.starts_with("MROCE BIST PASS") || l.starts_with("MROCE BIST FAIL") {
                line = l;
                break;
            }
        }
        m.posedge();
        c += 1;
    }
    m.eval();
    Ok(BoardReport {
        uart_line: line,
        leds: led.get(&m.outputs) as u8,
        cycles: c,
    })
}

/// Without PicoRV32's source the board top was not Verilated.
#[cfg(mroce_no_soc)]
pub fn run_ulx3s(_image: &[u32], _max_cycles: u64) -> Result<BoardReport, CosimError> {
    Err(CosimError::SocMissing)
}
