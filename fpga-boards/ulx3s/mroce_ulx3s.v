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

    wire rx_in_valid;
    wire rx_in_ready;
    wire [1:0] rx_in_op;
    wire [3:0] rx_in_path;
    wire [31:0] rx_in_psn;
    wire [31:0] rx_in_floor;
    wire rx_in_ce;
    wire rx_in_ack_req;
    wire rx_in_commit;
    wire rx_out_valid;
    wire rx_out_ready;
    wire [104:0] rx_out;
    wire [31:0] rx_out_sack$0;
    wire [31:0] rx_out_sack$1;
    wire [31:0] rx_out_sack$2;
    wire [31:0] rx_out_sack$3;
    wire [31:0] rx_out_sack$4;
    wire [31:0] rx_out_sack$5;
    wire [31:0] rx_out_sack$6;
    wire [31:0] rx_out_sack$7;
    wire tx_in_valid;
    wire tx_in_ready;
    wire [2:0] tx_in_op;
    wire [3:0] tx_in_path;
    wire [31:0] tx_in_psn;
    wire [31:0] tx_in_mask;
    wire [31:0] tx_in_lost_below;
    wire [31:0] tx_in_now;
    wire [31:0] tx_in_rto;
    wire tx_out_valid;
    wire tx_out_ready;
    wire [142:0] tx_out;
    wire sel_in_valid;
    wire sel_in_ready;
    wire [3:0] sel_in_op;
    wire [3:0] sel_in_path;
    wire [15:0] sel_in_room;
    wire [15:0] sel_in_a;
    wire [15:0] sel_in_b;
    wire [15:0] sel_in_c;
    wire sel_in_flag;
    wire sel_out_valid;
    wire sel_out_ready;
    wire [29:0] sel_out;
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
        .rx_in_valid(rx_in_valid),
        .rx_in_ready(rx_in_ready),
        .rx_in_op(rx_in_op),
        .rx_in_path(rx_in_path),
        .rx_in_psn(rx_in_psn),
        .rx_in_floor(rx_in_floor),
        .rx_in_ce(rx_in_ce),
        .rx_in_ack_req(rx_in_ack_req),
        .rx_in_commit(rx_in_commit),
        .rx_out_valid(rx_out_valid),
        .rx_out_ready(rx_out_ready),
        .rx_out(rx_out),
        .rx_out_sack$0(rx_out_sack$0),
        .rx_out_sack$1(rx_out_sack$1),
        .rx_out_sack$2(rx_out_sack$2),
        .rx_out_sack$3(rx_out_sack$3),
        .rx_out_sack$4(rx_out_sack$4),
        .rx_out_sack$5(rx_out_sack$5),
        .rx_out_sack$6(rx_out_sack$6),
        .rx_out_sack$7(rx_out_sack$7),
        .tx_in_valid(tx_in_valid),
        .tx_in_ready(tx_in_ready),
        .tx_in_op(tx_in_op),
        .tx_in_path(tx_in_path),
        .tx_in_psn(tx_in_psn),
        .tx_in_mask(tx_in_mask),
        .tx_in_lost_below(tx_in_lost_below),
        .tx_in_now(tx_in_now),
        .tx_in_rto(tx_in_rto),
        .tx_out_valid(tx_out_valid),
        .tx_out_ready(tx_out_ready),
        .tx_out(tx_out),
        .sel_in_valid(sel_in_valid),
        .sel_in_ready(sel_in_ready),
        .sel_in_op(sel_in_op),
        .sel_in_path(sel_in_path),
        .sel_in_room(sel_in_room),
        .sel_in_a(sel_in_a),
        .sel_in_b(sel_in_b),
        .sel_in_c(sel_in_c),
        .sel_in_flag(sel_in_flag),
        .sel_out_valid(sel_out_valid),
        .sel_out_ready(sel_out_ready),
        .sel_out(sel_out),
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
        .rx_in_valid(rx_in_valid),
        .rx_in_ready(rx_in_ready),
        .rx_in_op(rx_in_op),
        .rx_in_path(rx_in_path),
        .rx_in_psn(rx_in_psn),
        .rx_in_floor(rx_in_floor),
        .rx_in_ce(rx_in_ce),
        .rx_in_ack_req(rx_in_ack_req),
        .rx_in_commit(rx_in_commit),
        .rx_out_valid(rx_out_valid),
        .rx_out_ready(rx_out_ready),
        .rx_out(rx_out),
        .tx_in_valid(tx_in_valid),
        .tx_in_ready(tx_in_ready),
        .tx_in_op(tx_in_op),
        .tx_in_path(tx_in_path),
        .tx_in_psn(tx_in_psn),
        .tx_in_mask(tx_in_mask),
        .tx_in_lost_below(tx_in_lost_below),
        .tx_in_now(tx_in_now),
        .tx_in_rto(tx_in_rto),
        .tx_out_valid(tx_out_valid),
        .tx_out_ready(tx_out_ready),
        .tx_out(tx_out),
        .sel_in_valid(sel_in_valid),
        .sel_in_ready(sel_in_ready),
        .sel_in_op(sel_in_op),
        .sel_in_path(sel_in_path),
        .sel_in_room(sel_in_room),
        .sel_in_a(sel_in_a),
        .sel_in_b(sel_in_b),
        .sel_in_c(sel_in_c),
        .sel_in_flag(sel_in_flag),
        .sel_out_valid(sel_out_valid),
        .sel_out_ready(sel_out_ready),
        .sel_out(sel_out),
        .rx_out_sack({rx_out_sack$7, rx_out_sack$6, rx_out_sack$5, rx_out_sack$4, rx_out_sack$3, rx_out_sack$2, rx_out_sack$1, rx_out_sack$0}),
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
