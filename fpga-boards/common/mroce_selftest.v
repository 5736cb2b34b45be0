// mroce_selftest: transport_core driven by the board self-test (mroce_bist: sender, lossy
// loopback channel, receiver and checker). Board tops without a control core instantiate it
// with the UART reporter; the co-simulation runs it (cosim/, `mroce cosim --selftest`). The
// BIST parameters are passed through (see mroce_bist.v).
module mroce_selftest(clock,start,drop_thresh,uart_tx,done,pass,delivered,sent,retransmits,dropped,duplicates,data_errors,acks,rtos,cycles);
    parameter N_PKTS = 4096;
    parameter SEQ_BITS = 12;
    parameter DELAY_MIN = 16;
    parameter DELAY_MASK = 63;
    parameter RTO = 4000;
    parameter TIMER_PERIOD = 1024;
    parameter MAX_CYCLES = 50000000;
    // UART report: clocks per bit, clocks between reports
    parameter CLKS_PER_BIT = 217;
    parameter REPEAT_CLKS = 1 << 26;
    input wire  clock;
    // the test runs while high
    input wire  start;
    // channel drop probability per 65536 packets
    input wire  [15:0] drop_thresh;
    // status line (mroce_uart_report), 8N1
    output wire uart_tx;
    // finished; all messages delivered intact
    output wire done;
    output wire pass;
    // messages delivered (once each), packets sent, retransmissions, channel drops, duplicate
    // arrivals, data errors, ACKs processed, RTO expiries, clocks run
    output wire [31:0] delivered;
    output wire [31:0] sent;
    output wire [31:0] retransmits;
    output wire [31:0] dropped;
    output wire [31:0] duplicates;
    output wire [31:0] data_errors;
    output wire [31:0] acks;
    output wire [31:0] rtos;
    output wire [31:0] cycles;
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
    wire [31:0] csr_rdata;
    wire irq;
    mroce_bist #(.N_PKTS(N_PKTS), .SEQ_BITS(SEQ_BITS), .DELAY_MIN(DELAY_MIN),
                 .DELAY_MASK(DELAY_MASK), .RTO(RTO), .TIMER_PERIOD(TIMER_PERIOD), .MAX_CYCLES(MAX_CYCLES))
      bist(
        .clock(clock),
        .start(start),
        .drop_thresh(drop_thresh),
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
        .done(done),
        .pass(pass),
        .delivered(delivered),
        .sent(sent),
        .retransmits(retransmits),
        .dropped(dropped),
        .duplicates(duplicates),
        .data_errors(data_errors),
        .acks(acks),
        .rtos(rtos),
        .cycles(cycles));
    mroce_uart_report #(.CLKS_PER_BIT(CLKS_PER_BIT), .REPEAT_CLKS(REPEAT_CLKS))
      report(.clock(clock), .done(done), .pass(pass), .delivered(delivered), .sent(sent),
             .retransmits(retransmits), .dropped(dropped), .duplicates(duplicates),
             .data_errors(data_errors), .tx(uart_tx));
    transport_core core(
        .clock(clock),
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
        .csr_addr(8'b0),
        .csr_wdata(32'b0),
        .csr_we(1'b0),
        .csr_rdata(csr_rdata),
        .irq(irq));
endmodule
