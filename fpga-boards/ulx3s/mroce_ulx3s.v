// mroce_ulx3s: ULX3S (ECP5 LFE5U-85F, CABGA381) top, full default configuration: the control
// core, transport_core and the board self-test (../common/mroce_soc_board.v) at 50 MHz from the
// 25 MHz oscillator (../common/mroce_ecp5_pll.v), the status line on the FTDI serial port
// (115200 8N1).
// LEDs: 0 firmware alive (heartbeat seen), 1 self-test done, 2 passed, 3 failed, 4 CPU trap,
// 5 bus error, 7 blinks with the clock (~1.5 Hz).
module mroce_ulx3s(clk_25mhz, led, ftdi_rxd);
    // channel drop probability per 65536 packets (655: 1%)
    parameter DROP_THRESH = 655;
    // firmware image ($readmemh words; written by `mroce synth` into the build directory)
    parameter FIRMWARE_HEX = "mroce-firmware.hex";
    // 25 MHz board oscillator (the PLL's reference)
    input wire  clk_25mhz;
    output wire [7:0] led;
    // UART towards the FTDI chip
    output wire ftdi_rxd;

    // the design's clock: 50 MHz, running once the PLL has locked
    wire clock;
    mroce_ecp5_pll pll(.clk_25mhz(clk_25mhz), .clock(clock), .locked());

    wire go, done, pass, trap, bus_error;
    // 434 clocks a bit: 115200 baud at 50 MHz
    mroce_soc_board #(.DROP_THRESH(DROP_THRESH), .FIRMWARE_HEX(FIRMWARE_HEX), .CLKS_PER_BIT(434)) board(
        .clock(clock), .uart_tx(ftdi_rxd), .go(go), .done(done), .pass(pass), .trap(trap),
        .bus_error(bus_error));

    reg [24:0] blink = 0;
    always @(posedge clock) blink <= blink + 1;
    assign led = {blink[24], 1'b0, bus_error, trap, done && !pass, done && pass, done, go};
endmodule
