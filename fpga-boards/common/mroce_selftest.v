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
    // status counter width (16 on the iCE40 board; the ports stay 32 bits), data word width
    parameter COUNT_BITS = 32;
    parameter DATA_BITS = 32;
    // scoreboard records registered in the BIST (0 on the iCE40 board: fewer flip-flops)
    parameter REC_REG = 1;
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
    // transport_core's stream wires and their port connections are macros generated from the
    // core's port list (mroce_defines.vh: MROCE_CORE_STREAM_WIRES, _PORTS, MROCE_BIST_STREAM_PORTS)
    `MROCE_CORE_STREAM_WIRES
    wire [31:0] csr_rdata;
    wire irq;
    mroce_bist #(.N_PKTS(N_PKTS), .SEQ_BITS(SEQ_BITS), .DELAY_MIN(DELAY_MIN),
                 .DELAY_MASK(DELAY_MASK), .RTO(RTO), .TIMER_PERIOD(TIMER_PERIOD), .MAX_CYCLES(MAX_CYCLES),
                 .COUNT_BITS(COUNT_BITS), .DATA_BITS(DATA_BITS), .REC_REG(REC_REG))
      bist(
        .clock(clock),
        .start(start),
        .drop_thresh(drop_thresh),
        `MROCE_BIST_STREAM_PORTS,
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
    mroce_uart_report #(.CLKS_PER_BIT(CLKS_PER_BIT), .REPEAT_CLKS(REPEAT_CLKS), .COUNT_BITS(COUNT_BITS))
      report(.clock(clock), .done(done), .pass(pass), .delivered(delivered[COUNT_BITS-1:0]),
             .sent(sent[COUNT_BITS-1:0]), .retransmits(retransmits[COUNT_BITS-1:0]),
             .dropped(dropped[COUNT_BITS-1:0]), .duplicates(duplicates[COUNT_BITS-1:0]),
             .data_errors(data_errors[COUNT_BITS-1:0]), .tx(uart_tx));
    transport_core core(
        .clock(clock),
        `MROCE_CORE_STREAM_PORTS,
        .csr_addr(8'b0),
        .csr_wdata(32'b0),
        .csr_we(1'b0),
        .csr_rdata(csr_rdata),
        .irq(irq));
endmodule
