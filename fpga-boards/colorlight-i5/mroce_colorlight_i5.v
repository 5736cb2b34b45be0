// mroce_colorlight_i5: Colorlight i5 v7.0 (ECP5 LFE5U-25F-6, CABGA381) on its extension board,
// reduced configuration (8 paths, 128-bit SACK: mroce-model's config-reduced): the control core
// running the firmware built for that configuration, transport_core and the board self-test
// (../common/mroce_soc_board.v) at 50 MHz from the 25 MHz oscillator (../common/mroce_ecp5_pll.v),
// the status line (115200 8N1) on the extension board's serial port.
// LED (active low, the module's only one): blinks slowly (~1.5 Hz) while the firmware boots or
// the test runs, fast (~6 Hz) on a failure, a CPU trap or a bus error, steady on once passed.
module mroce_colorlight_i5(clk_25mhz, led_n, uart_tx);
    // channel drop probability per 65536 packets (655: 1%)
    parameter DROP_THRESH = 655;
    // firmware image ($readmemh words; written by `mroce synth` into the build directory)
    parameter FIRMWARE_HEX = "mroce-firmware.hex";
    // 25 MHz oscillator (pin P3; the PLL's reference)
    input wire  clk_25mhz;
    output wire led_n;
    // UART transmit (pin J17, the extension board's serial port)
    output wire uart_tx;

    // the design's clock: 50 MHz, running once the PLL has locked
    wire clock;
    mroce_ecp5_pll pll(.clk_25mhz(clk_25mhz), .clock(clock), .locked());

    wire go, done, pass, trap, bus_error;
    // 434 clocks a bit: 115200 baud at 50 MHz
    mroce_soc_board #(.DROP_THRESH(DROP_THRESH), .FIRMWARE_HEX(FIRMWARE_HEX), .CLKS_PER_BIT(434)) board(
        .clock(clock), .uart_tx(uart_tx), .go(go), .done(done), .pass(pass), .trap(trap),
        .bus_error(bus_error));

    reg [24:0] blink = 0;
    always @(posedge clock) blink <= blink + 1;
    wire failed = (done && !pass) || trap || bus_error;
    assign led_n = !(failed ? blink[22] : (done ? 1'b1 : blink[24]));
endmodule
