// mroce_ulx3s: ULX3S (ECP5 LFE5U-85F, CABGA381) top, full default configuration.
// PicoRV32 runs the firmware image from block RAM next to transport_core (mroce_soc); after the
// firmware's first heartbeat (connection set up, health monitor polling) the board self-test
// (mroce_bist) drives transport_core's streams through its lossy loopback channel at DROP_THRESH
// and the UART reporter sends the status line on the FTDI serial port (115200 8N1).
// LEDs: 0 firmware alive (heartbeat seen), 1 self-test done, 2 passed, 3 failed, 4 CPU trap,
// 5 bus error, 7 blinks with the clock (~1.5 Hz).
module mroce_ulx3s(clk_25mhz, led, ftdi_rxd);
    // channel drop probability per 65536 packets (655: 1%)
    parameter DROP_THRESH = 655;
    // firmware image ($readmemh words; written by `mroce synth` into the build directory)
    parameter FIRMWARE_HEX = "mroce-firmware.hex";
    // 25 MHz board oscillator (the whole design runs on it)
    input wire  clk_25mhz;
    output wire [7:0] led;
    // UART towards the FTDI chip
    output wire ftdi_rxd;

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
        .tx(ftdi_rxd));

    reg [23:0] blink = 0;
    always @(posedge clock) blink <= blink + 1;
    assign led = {blink[23], 1'b0, bus_error, trap, done && !pass, done && pass, done, go};
endmodule
