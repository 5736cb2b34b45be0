// mroce_soc_board: what an ECP5 board top with the control core holds, pins aside. PicoRV32
// runs the firmware image from block RAM next to transport_core (mroce_soc); after the
// firmware's first heartbeat (connection set up, health monitor polling) the board self-test
// (mroce_bist) drives transport_core's streams through its lossy loopback channel at
// DROP_THRESH, and the UART reporter sends the status line (8N1 at CLKS_PER_BIT clocks a bit).
module mroce_soc_board(clock, uart_tx, go, done, pass, trap, bus_error);
    // channel drop probability per 65536 packets (655: 1%)
    parameter DROP_THRESH = 655;
    // firmware image ($readmemh words; written by `mroce synth` into the build directory)
    parameter FIRMWARE_HEX = "mroce-firmware.hex";
    // UART clocks per bit (217: 115200 baud at 25 MHz)
    parameter CLKS_PER_BIT = 217;
    input wire  clock;
    output wire uart_tx;
    // the firmware's first heartbeat was seen (the self-test runs from then on)
    output reg  go;
    // self-test finished; every message delivered intact
    output wire done;
    output wire pass;
    // PicoRV32 trapped; the core accessed an address outside RAM and the CSR window (sticky)
    output wire trap;
    output wire bus_error;

    localparam [15:0] DROP16 = DROP_THRESH;
    // hold the CPU in reset for 1024 clocks after configuration
    reg [10:0] por = 0;
    always @(posedge clock) if (!por[10]) por <= por + 1;

    // transport_core's stream wires and their port connections are macros generated from the
    // core's port list (mroce_defines.vh: MROCE_CORE_STREAM_WIRES, _PORTS, MROCE_BIST_STREAM_PORTS)
    `MROCE_CORE_STREAM_WIRES
    wire tap_we;
    wire [7:0] tap_addr;
    wire [31:0] tap_wdata;
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
    initial go = 1'b0;
    always @(posedge clock)
        if (tap_we && tap_addr == `MROCE_CSR_SCRATCH && tap_wdata[31:16] == `MROCE_HEARTBEAT_TAG) go <= 1'b1;

    wire [31:0] delivered, sent, retransmits, dropped, duplicates, data_errors;
    mroce_bist #(.DO_INIT(0), .RTO(4000), .TIMER_PERIOD(1024)) bist(
        .clock(clock),
        .start(go),
        .drop_thresh(DROP16),
        `MROCE_BIST_STREAM_PORTS,
        .done(done), .pass(pass), .delivered(delivered), .sent(sent), .retransmits(retransmits),
        .dropped(dropped), .duplicates(duplicates), .data_errors(data_errors), .acks(), .rtos(), .cycles());

    mroce_uart_report #(.CLKS_PER_BIT(CLKS_PER_BIT), .REPEAT_CLKS(1 << 25)) report(
        .clock(clock), .done(done), .pass(pass), .delivered(delivered), .sent(sent),
        .retransmits(retransmits), .dropped(dropped), .duplicates(duplicates), .data_errors(data_errors),
        .tx(uart_tx));
endmodule
