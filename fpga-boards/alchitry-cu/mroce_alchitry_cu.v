// mroce_alchitry_cu: Alchitry Cu (iCE40 HX8K, CB132) top, small configuration (4 paths, 64-bit
// SACK: mroce-model's config-small). No control core (an iCE40 has no room for one): the board
// self-test (mroce_selftest: mroce_bist + transport_core + mroce_uart_report) initialises the
// path selector itself and sends its messages through the lossy, reordering loopback channel at
// DROP_THRESH; the verdict goes out on the USB serial port (115200 8N1).
// LEDs: 0 test running, 1 done, 2 passed, 3 failed, 7 blinks with the clock (~1.5 Hz).
module mroce_alchitry_cu(clk_100mhz, led, usb_tx);
    // channel drop probability per 65536 packets (655: 1%)
    parameter DROP_THRESH = 655;
    // 100 MHz board oscillator (pin P7); the design runs at 25 MHz from the PLL
    input wire  clk_100mhz;
    output wire [7:0] led;
    // UART towards the USB bridge (pin M9)
    output wire usb_tx;

    localparam [15:0] DROP16 = DROP_THRESH;
    wire clock;
`ifdef VERILATOR
    assign clock = clk_100mhz;
`else
    // 100 MHz -> 25 MHz (icepll -i 100 -o 25: PFD 100 MHz, VCO 800 MHz, divide by 32)
    wire locked;
    SB_PLL40_CORE #(.FEEDBACK_PATH("SIMPLE"), .DIVR(4'd0), .DIVF(7'd7), .DIVQ(3'd5), .FILTER_RANGE(3'd5))
      pll(.REFERENCECLK(clk_100mhz), .PLLOUTGLOBAL(clock), .LOCK(locked), .RESETB(1'b1), .BYPASS(1'b0));
`endif
    // the LED blinker's counter; the self-test starts 1024 clocks after configuration, when
    // blink[10] first rises (no separate power-on counter)
    reg [23:0] blink = 0;
    always @(posedge clock) blink <= blink + 1;
    reg started = 1'b0;
    always @(posedge clock) if (blink[10]) started <= 1'b1;
    wire start = started || blink[10];

    wire done, pass;
    // 1024 messages (the retransmit queue and delivered bitmap fit the HX8K's block RAM); 16-bit
    // status counters and data words (logic cells and block RAMs are short here)
    mroce_selftest #(.N_PKTS(1024), .SEQ_BITS(10), .RTO(4000), .TIMER_PERIOD(1024), .COUNT_BITS(16),
                     .DATA_BITS(16), .REC_REG(0), .CLKS_PER_BIT(217), .REPEAT_CLKS(1 << 25))
      selftest(.clock(clock), .start(start), .drop_thresh(DROP16), .uart_tx(usb_tx), .done(done),
               .pass(pass), .delivered(), .sent(), .retransmits(), .dropped(), .duplicates(),
               .data_errors(), .acks(), .rtos(), .cycles());

    assign led = {blink[23], 3'b0, done && !pass, done && pass, done, start && !done};
endmodule
