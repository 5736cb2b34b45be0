// mroce_colorlight_i5: Colorlight i5 v7.0 (ECP5 LFE5U-25F-6, CABGA381) on its extension board,
// reduced configuration (8 paths, 128-bit SACK: mroce-model's config-reduced).
// PicoRV32 runs the firmware image (built for the same configuration) from block RAM next to
// transport_core (mroce_soc); after the firmware's first heartbeat the board self-test
// (mroce_bist) drives transport_core's streams through its lossy loopback channel at
// DROP_THRESH and the UART reporter sends the status line (115200 8N1) on the extension board's
// serial port.
// LED (active low, the module's only one): blinks slowly (~1.5 Hz) while the firmware boots or
// the test runs, fast (~6 Hz) on a failure, a CPU trap or a bus error, steady on once passed.
module mroce_colorlight_i5(clk_25mhz, led_n, uart_tx);
    // channel drop probability per 65536 packets (655: 1%)
    parameter DROP_THRESH = 655;
    // firmware image ($readmemh words; written by `mroce synth` into the build directory)
    parameter FIRMWARE_HEX = "mroce-firmware.hex";
    // 25 MHz oscillator (pin P3; the whole design runs on it)
    input wire  clk_25mhz;
    output wire led_n;
    // UART transmit (pin J17, the extension board's serial port)
    output wire uart_tx;

    localparam [15:0] DROP16 = DROP_THRESH;
    wire clock = clk_25mhz;
    // hold the CPU in reset for 1024 clocks after configuration
    reg [10:0] por = 0;
    always @(posedge clock) if (!por[10]) por <= por + 1;

    // transport_core's stream wires and their port connections are macros generated from the
    // core's port list (mroce_defines.vh: MROCE_CORE_STREAM_WIRES, _PORTS, MROCE_BIST_STREAM_PORTS)
    `MROCE_CORE_STREAM_WIRES
    wire tap_we;
    wire [7:0] tap_addr;
    wire [31:0] tap_wdata;
    wire trap, bus_error;
    mroce_soc #(.INIT_HEX(FIRMWARE_HEX), .DEBUG_PORTS(0)) soc(
        .clock(clock),
        .cpu_resetn(por[10]),
        .cmd_hold(1'b0),
        .room_from_stream(1'b0),
        .load_we(1'b0),
        .load_addr(14'b0),
        .load_data(32'b0),
        .dbg_addr(14'b0),
        .dbg_rdata(),
        `MROCE_CORE_STREAM_PORTS,
        .csr_tap_we(tap_we),
        .csr_tap_addr(tap_addr),
        .csr_tap_wdata(tap_wdata),
        .cmd_waiting(),
        .trap(trap),
        .bus_error(bus_error),
        .instret(),
        .irq());

    // the firmware's first heartbeat starts the self-test
    reg go = 0;
    always @(posedge clock)
        if (tap_we && tap_addr == `MROCE_CSR_SCRATCH && tap_wdata[31:16] == `MROCE_HEARTBEAT_TAG) go <= 1'b1;

    wire done, pass;
    wire [31:0] delivered, sent, retransmits, dropped, duplicates, data_errors;
    mroce_bist #(.DO_INIT(0), .RTO(4000), .TIMER_PERIOD(1024)) bist(
        .clock(clock),
        .start(go),
        .drop_thresh(DROP16),
        `MROCE_BIST_STREAM_PORTS,
        .done(done), .pass(pass), .delivered(delivered), .sent(sent), .retransmits(retransmits),
        .dropped(dropped), .duplicates(duplicates), .data_errors(data_errors), .acks(), .rtos(), .cycles());

    mroce_uart_report #(.CLKS_PER_BIT(217), .REPEAT_CLKS(1 << 25)) report(
        .clock(clock), .done(done), .pass(pass), .delivered(delivered), .sent(sent),
        .retransmits(retransmits), .dropped(dropped), .duplicates(duplicates), .data_errors(data_errors),
        .tx(uart_tx));

    reg [23:0] blink = 0;
    always @(posedge clock) blink <= blink + 1;
    wire failed = (done && !pass) || trap || bus_error;
    assign led_n = !(failed ? blink[21] : (done ? 1'b1 : blink[23]));
endmodule
