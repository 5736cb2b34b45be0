// mroce_ecp5_pll: the ECP5 boards' clock, 50 MHz from their 25 MHz oscillator. The tops run at
// twice the oscillator because the whole design places and routes at ~60 MHz (the boards'
// READMEs); 50 MHz keeps a margin over nextpnr's placement-to-placement spread.
// EHXPLLL settings from `ecppll -i 25 -o 50` (Project Trellis): input divider 1, feedback
// divider 2, output divider 12, VCO 600 MHz. The output clock is held off (a DCCA clock
// enable) until the PLL reports lock, so no register sees the PLL's start-up: the design's
// state comes from configuration (initial values), with no reset to repair it. The enable is
// LOCK passed through two flip-flops on the PLL clock's falling edge, so it changes only while
// that clock is low and the gate cannot cut a pulse short.
// Under Verilator the input clock passes through (the co-simulation counts clocks, not time).
module mroce_ecp5_pll(clk_25mhz, clock, locked);
    // the boards' 25 MHz oscillator
    input wire  clk_25mhz;
    // 50 MHz, toggling only once the PLL has locked
    output wire clock;
    // the PLL's lock indication (constant 1 under Verilator)
    output wire locked;
`ifdef VERILATOR
    assign clock = clk_25mhz;
    assign locked = 1'b1;
`else
    wire clkop;
    (* FREQUENCY_PIN_CLKI="25" *)
    (* FREQUENCY_PIN_CLKOP="50" *)
    (* ICP_CURRENT="12" *) (* LPF_RESISTOR="8" *) (* MFG_ENABLE_FILTEROPAMP="1" *) (* MFG_GMCREF_SEL="2" *)
    EHXPLLL #(
        .PLLRST_ENA("DISABLED"),
        .INTFB_WAKE("DISABLED"),
        .STDBY_ENABLE("DISABLED"),
        .DPHASE_SOURCE("DISABLED"),
        .OUTDIVIDER_MUXA("DIVA"),
        .OUTDIVIDER_MUXB("DIVB"),
        .OUTDIVIDER_MUXC("DIVC"),
        .OUTDIVIDER_MUXD("DIVD"),
        .CLKI_DIV(1),
        .CLKOP_ENABLE("ENABLED"),
        .CLKOP_DIV(12),
        .CLKOP_CPHASE(5),
        .CLKOP_FPHASE(0),
        .FEEDBK_PATH("CLKOP"),
        .CLKFB_DIV(2)
    ) pll (
        .RST(1'b0),
        .STDBY(1'b0),
        .CLKI(clk_25mhz),
        .CLKOP(clkop),
        .CLKFB(clkop),
        .CLKINTFB(),
        .PHASESEL0(1'b0),
        .PHASESEL1(1'b0),
        .PHASEDIR(1'b1),
        .PHASESTEP(1'b1),
        .PHASELOADREG(1'b1),
        .PLLWAKESYNC(1'b0),
        .ENCLKOP(1'b0),
        .LOCK(locked));
    // LOCK synchronised to the falling edge of the ungated PLL clock
    reg [1:0] lock_sync = 2'b00;
    always @(negedge clkop) lock_sync <= {lock_sync[0], locked};
    // the primary clock's enable
    DCCA gate(.CLKI(clkop), .CE(lock_sync[1]), .CLKO(clock));
`endif
endmodule
