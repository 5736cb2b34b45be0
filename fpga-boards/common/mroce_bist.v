// mroce_bist: the board self-test around transport_core. A sender and a receiver of one
// connection, joined by a lossy loopback channel, drive transport_core's three streams the way
// the NIC's packet engine would:
//   sender:   SELECT (room mask kept from the scoreboard's records) -> SEND -> packet into the
//             channel; on an ACK: ACK_WORD x SACK_WORDS (lost_below = the highest PSN the ACK
//             reports) -> lost PSNs back to their message numbers -> retransmit queue, then
//             CREDIT; every TIMER_PERIOD clocks: TIMER on every path, EXPIRE until empty on the
//             expired ones, CREDIT;
//   channel:  SLOTS slots, each packet dropped with probability drop_thresh/65536 or held for
//             DELAY_MIN + (0..DELAY_MASK) clocks (packets overtake each other); the payload
//             (path, PSN, message number, data word) in block RAM, a down-counter per slot;
//   receiver: PACKET (floor = psn - CWND_MAX_PKTS, below the sender's una by the scoreboard's
//             window invariant; immediate ACK when the channel is empty) -> the ACK snapshot back
//             to the sender (lossless); a new packet's data word is checked against its message
//             number and counted once per message.
// Done when all N_PKTS messages arrived (pass: no data error) or after MAX_CYCLES (fail).
// Written in Verilog because it is a board-level test fixture, not part of the transport; the
// `MROCE_*` macros (operation codes, record layouts) are generated from mroce-hdl
// (mroce_hdl::soc::stream_defines), never re-typed.
module mroce_bist #(
    // messages to deliver (each one packet); at most 2^SEQ_BITS
    parameter N_PKTS = 4096,
    // message-number width (the delivered bitmap has 2^SEQ_BITS entries)
    parameter SEQ_BITS = 12,
    // channel delay: DELAY_MIN + (lfsr & DELAY_MASK) clocks (DELAY_MIN >= 1, the sum <= 2^16)
    parameter DELAY_MIN = 16,
    parameter DELAY_MASK = 63,
    // RTO in clocks (transport_core's `now` counts clocks here)
    parameter RTO = 4000,
    // clocks between two TIMER rounds over every path
    parameter TIMER_PERIOD = 1024,
    // give up after this many clocks
    parameter MAX_CYCLES = 50000000,
    // width of the status counters other than `cycles` (> SEQ_BITS; the ports stay 32 bits,
    // zero-extended; they saturate, delivered stops at N_PKTS): 16 on the iCE40 board
    parameter COUNT_BITS = 32,
    // width of the data word each packet carries (SEQ_BITS..32): 16 on the iCE40 board, where
    // the channel's payload then fits 4 block RAMs rather than 5
    parameter DATA_BITS = 32,
    // paths and planes given to the selector's INIT
    parameter PLANES = 4,
    // INIT the path selector at start (0 when a control core set the connection up); the
    // receive tracker and the scoreboard are always RESET (data-path state of the test's
    // connection)
    parameter DO_INIT = 1,
    // 1: the scoreboard's records are registered before the sender uses them (a clock more per
    // TX operation); 0: used as they leave the core's FIFO (fewer flip-flops, for the iCE40)
    parameter REC_REG = 1
) (
    input wire clock,
    // start (level): the test runs while high, from power-up state
    input wire start,
    // drop probability of the channel, per 65536 packets (655: 1%)
    input wire [15:0] drop_thresh,
    // transport_core streams (this module is their master)
    output reg rx_in_valid, input wire rx_in_ready, output reg [1:0] rx_in_op,
    output reg [`MROCE_PATH_BITS-1:0] rx_in_path,
    output reg [31:0] rx_in_psn, output reg [31:0] rx_in_floor, output reg rx_in_ce, output reg rx_in_ack_req,
    output reg rx_in_commit, input wire rx_out_valid, output wire rx_out_ready, input wire [`MROCE_RX_OUT_BITS-1:0] rx_out,
    input wire [`MROCE_SACK_BITS-1:0] rx_out_sack,
    output reg tx_in_valid, input wire tx_in_ready, output reg [2:0] tx_in_op,
    output reg [`MROCE_PATH_BITS-1:0] tx_in_path,
    output reg [31:0] tx_in_psn, output reg [31:0] tx_in_mask, output reg [31:0] tx_in_lost_below,
    output reg [31:0] tx_in_now, output reg [31:0] tx_in_rto, input wire tx_out_valid, output wire tx_out_ready,
    input wire [`MROCE_TX_OUT_BITS-1:0] tx_out,
    output reg sel_in_valid, input wire sel_in_ready, output reg [3:0] sel_in_op,
    output reg [`MROCE_PATH_BITS-1:0] sel_in_path,
    output reg [15:0] sel_in_room, output reg [15:0] sel_in_a, output reg [15:0] sel_in_b, output reg [15:0] sel_in_c,
    output reg sel_in_flag, input wire sel_out_valid, output wire sel_out_ready, input wire [`MROCE_SEL_OUT_BITS-1:0] sel_out,
    // status
    output reg done, output reg pass,
    output reg [31:0] delivered, output reg [31:0] sent, output reg [31:0] retransmits,
    output reg [31:0] dropped, output reg [31:0] duplicates, output reg [31:0] data_errors,
    output reg [31:0] acks, output reg [31:0] rtos, output reg [31:0] cycles
);
    assign rx_out_ready = 1'b1;
    assign tx_out_ready = 1'b1;
    assign sel_out_ready = 1'b1;

    localparam NP = `MROCE_PATHS;
    localparam NW = `MROCE_SACK_WORDS;
    // widths of the hardware configuration: path index, SACK word index, PSN offset in the window
    localparam PB = `MROCE_PATH_BITS;
    localparam WB = `MROCE_SACK_WORD_INDEX_BITS;
    localparam SB = `MROCE_SACK_INDEX_BITS;
    localparam [31:0] WIN = `MROCE_CWND_MAX_PKTS;
    localparam [15:0] NP16 = NP;
    localparam [15:0] PLANES16 = PLANES;
    localparam [31:0] RTO32 = RTO;
    // register widths: status counters, clock counter (reaches MAX_CYCLES + 1), ACKed and lost
    // PSNs of one CREDIT (at most the SACK_BITS outstanding of a path), channel delay counters
    localparam CB = COUNT_BITS;
    localparam CYB = $clog2(MAX_CYCLES + 2) < 32 ? $clog2(MAX_CYCLES + 2) : 32;
    localparam NB = SB + 2;
    localparam DB = $clog2(DELAY_MIN + DELAY_MASK) > 0 ? $clog2(DELAY_MIN + DELAY_MASK) : 1;
    localparam [DB-1:0] DLY_MIN1 = DELAY_MIN - 1;
    localparam [DB-1:0] DLY_MASK = DELAY_MASK;
    localparam TB = $clog2(TIMER_PERIOD + 1);
    localparam [TB-1:0] TIMER_RELOAD = TIMER_PERIOD - 1;

    // the data word of message s: s, then copies of s each rotated one bit further, XOR a
    // constant; cheap (no multiplier), every bit depends on s and no two messages share a word
    localparam [31:0] DATA_KEY = 32'h6D726365;
    function [DATA_BITS-1:0] data_of(input [SEQ_BITS-1:0] s);
        integer i;
        begin
            for (i = 0; i < DATA_BITS; i = i + 1)
                data_of[i] = s[(i + i / SEQ_BITS) % SEQ_BITS];
            data_of = data_of ^ DATA_KEY[DATA_BITS-1:0];
        end
    endfunction
    // a status counter plus one, saturating (a narrow data_errors must not wrap to 0)
    function [CB-1:0] inc(input [CB-1:0] n);
        inc = &n ? n : n + 1'b1;
    endfunction
    // The three bit-scan functions below are trees, log2(32) levels deep: written as loops over
    // the 32 bits they became chains 32 deep, and high_bit's chain (behind the SACK word
    // multiplexer, ahead of the lost_below adder) was the ULX3S's critical path (61.6 MHz).
    function [5:0] low_bit(input [31:0] m);  // index of the lowest set bit (32 when m == 0)
        reg [15:0] a;
        reg [7:0] b;
        reg [3:0] c;
        reg [1:0] d;
        begin
            low_bit[5] = 1'b0;
            low_bit[4] = ~|m[15:0];
            a = low_bit[4] ? m[31:16] : m[15:0];
            low_bit[3] = ~|a[7:0];
            b = low_bit[3] ? a[15:8] : a[7:0];
            low_bit[2] = ~|b[3:0];
            c = low_bit[2] ? b[7:4] : b[3:0];
            low_bit[1] = ~|c[1:0];
            d = low_bit[1] ? c[3:2] : c[1:0];
            low_bit[0] = ~d[0];
            if (m == 32'b0) low_bit = 6'd32;
        end
    endfunction
    function [5:0] high_bit(input [31:0] m);  // index of the highest set bit (32 when m == 0)
        reg [15:0] a;
        reg [7:0] b;
        reg [3:0] c;
        reg [1:0] d;
        begin
            high_bit[5] = m == 32'b0;
            high_bit[4] = |m[31:16];
            a = high_bit[4] ? m[31:16] : m[15:0];
            high_bit[3] = |a[15:8];
            b = high_bit[3] ? a[15:8] : a[7:0];
            high_bit[2] = |b[7:4];
            c = high_bit[2] ? b[7:4] : b[3:0];
            high_bit[1] = |c[3:2];
            d = high_bit[1] ? c[3:2] : c[1:0];
            high_bit[0] = d[1];
        end
    endfunction
    function [5:0] popcount(input [31:0] m);  // sums of 2, 4, 8, 16, then 32 bits
        integer i;
        reg [31:0] p2;  // 16 fields of 2 bits
        reg [23:0] p3;  // 8 of 3
        reg [15:0] p4;  // 4 of 4
        reg [9:0] p5;   // 2 of 5
        begin
            for (i = 0; i < 16; i = i + 1)
                p2[2*i +: 2] = {1'b0, m[2*i]} + {1'b0, m[2*i+1]};
            for (i = 0; i < 8; i = i + 1)
                p3[3*i +: 3] = {1'b0, p2[4*i +: 2]} + {1'b0, p2[4*i+2 +: 2]};
            for (i = 0; i < 4; i = i + 1)
                p4[4*i +: 4] = {1'b0, p3[6*i +: 3]} + {1'b0, p3[6*i+3 +: 3]};
            for (i = 0; i < 2; i = i + 1)
                p5[5*i +: 5] = {1'b0, p4[8*i +: 4]} + {1'b0, p4[8*i+4 +: 4]};
            popcount = {1'b0, p5[4:0]} + {1'b0, p5[9:5]};
        end
    endfunction

    // status counters, COUNT_BITS wide; the ports zero-extend them
    reg [CB-1:0] n_delivered, n_sent, n_retransmits, n_dropped, n_duplicates, n_data_errors, n_acks, n_rtos;
    reg [CYB-1:0] n_cycles;
    always @(*) begin
        delivered = 0; delivered[CB-1:0] = n_delivered;
        sent = 0; sent[CB-1:0] = n_sent;
        retransmits = 0; retransmits[CB-1:0] = n_retransmits;
        dropped = 0; dropped[CB-1:0] = n_dropped;
        duplicates = 0; duplicates[CB-1:0] = n_duplicates;
        data_errors = 0; data_errors[CB-1:0] = n_data_errors;
        acks = 0; acks[CB-1:0] = n_acks;
        rtos = 0; rtos[CB-1:0] = n_rtos;
        cycles = 0; cycles[CYB-1:0] = n_cycles;
    end

    reg [15:0] lfsr;  // x^16 + x^14 + x^13 + x^11 + 1
    reg [31:0] now;
    initial begin
        lfsr = 16'hACE1; now = 0; n_cycles = 0; done = 0; pass = 0;
        n_delivered = 0; n_sent = 0; n_retransmits = 0; n_dropped = 0; n_duplicates = 0; n_data_errors = 0;
        n_acks = 0; n_rtos = 0;
    end
    always @(posedge clock) begin
        lfsr <= {lfsr[14:0], lfsr[15] ^ lfsr[13] ^ lfsr[12] ^ lfsr[10]};
        now <= now + 1;
    end

    // ------------------------------------------------------------------ channel
    localparam SLOTS = 8;
    localparam PW = PB + 32 + SEQ_BITS + DATA_BITS;  // payload: path, PSN, message number, data word
    reg [SLOTS-1:0] c_v;
    // clocks until the slot's packet is due (0: due; a free slot's is 0)
    reg [DB-1:0] c_left [0:SLOTS-1];
    // payload, one entry more than slots: entry SLOTS stays 0 (PSN 0 of the receiver's RESETs);
    // the slot read is never the slot written (no_rw_check: no read-first emulation)
    (* no_rw_check *) reg [PW-1:0] c_pay [0:SLOTS];
    reg [PW-1:0] r_pay;  // c_pay[] read at the receiver's take
    integer ci;
    initial begin
        c_v = 0;
        for (ci = 0; ci < SLOTS; ci = ci + 1) c_left[ci] = 0;
        for (ci = 0; ci <= SLOTS; ci = ci + 1) c_pay[ci] = 0;
    end
    // the sender's push (one clock pulse) and the receiver's take
    reg push;
    reg [2:0] push_slot;
    reg take;
    reg [2:0] take_slot;
    initial begin push = 0; take = 0; end
    reg ch_free;
    reg [2:0] ch_free_next;  // lowest free slot once a pending take has freed its slot
    reg ch_ready;
    reg [2:0] ch_ready_slot;
    always @(*) begin
        ch_free = 0; ch_free_next = 0; ch_ready = 0; ch_ready_slot = 0;
        for (ci = SLOTS - 1; ci >= 0; ci = ci - 1) begin
            if (!c_v[ci]) ch_free = 1;
            if (!c_v[ci] || (take && take_slot == ci[2:0])) ch_free_next = ci[2:0];
            if (c_v[ci] && c_left[ci] == 0) begin
                ch_ready = 1; ch_ready_slot = ci[2:0];
            end
        end
    end
    // the payload is written with the SEND's record (sender), into push_slot; the push a clock
    // later drops the packet or makes the slot valid
    always @(posedge clock) begin
        if (take) c_v[take_slot] <= 1'b0;
        for (ci = 0; ci < SLOTS; ci = ci + 1)
            if (c_left[ci] != 0) c_left[ci] <= c_left[ci] - 1'b1;
        if (push) begin
            if (lfsr < drop_thresh) begin
                n_dropped <= inc(n_dropped);
            end else begin
                c_v[push_slot] <= 1'b1;
                // due DELAY_MIN + (lfsr & DELAY_MASK) clocks after now
                c_left[push_slot] <= DLY_MIN1 + (lfsr[DB-1:0] & DLY_MASK);
            end
        end
    end

    // ------------------------------------------------------------------ ACK queue (receiver -> sender)
    reg aq_v;
    reg [PB-1:0] aq_path;
    reg [31:0] aq_base;
    reg [`MROCE_SACK_BITS-1:0] aq_sack;
    reg aq_pop;
    initial begin aq_v = 0; aq_pop = 0; end

    // ------------------------------------------------------------------ receiver
    localparam R_IDLE = 0, R_WAIT = 1, R_CHECK = 2, R_INIT = 3;
    reg [1:0] rs;
    reg [4:0] rk;
    reg seen [0:(1<<SEQ_BITS)-1];  // delivered messages
    reg seen_bit;
    reg [4:0] r_records;
    integer si;
    initial begin
        rs = R_INIT; rk = 0; rx_in_valid = 0; r_records = 0;
        for (si = 0; si < (1 << SEQ_BITS); si = si + 1) seen[si] = 1'b0;
    end
    // a packet is taken from the channel (R_IDLE); its payload is read into r_pay at the same
    // clock edge, the RESETs of R_INIT read the zero entry
    wire r_take = start && !done && rs == R_IDLE && ch_ready && !take && !aq_v;
    wire r_init = start && !done && rs == R_INIT;
    always @(posedge clock)
        if (r_take || r_init) r_pay <= c_pay[r_init ? SLOTS[3:0] : {1'b0, ch_ready_slot}];
    wire [SEQ_BITS-1:0] r_seq = r_pay[DATA_BITS +: SEQ_BITS];
    wire [DATA_BITS-1:0] r_data = r_pay[DATA_BITS-1:0];
    always @(*) begin
        rx_in_path = rs == R_INIT ? rk[PB-1:0] : r_pay[PW-1 -: PB];
        rx_in_psn = r_pay[DATA_BITS + SEQ_BITS +: 32];
        rx_in_floor = rx_in_psn - WIN;
    end
    always @(posedge clock) begin
        take <= 1'b0;
        if (aq_pop) aq_v <= 1'b0;
        if (start && !done) case (rs)
            R_INIT: begin  // RESET every path at ISN 0, then wait for their records
                if (rk < NP) begin
                    rx_in_valid <= 1'b1; rx_in_op <= `MROCE_RX_OP_RESET;
                    if (rx_in_valid && rx_in_ready) begin
                        rk <= rk + 1;
                        if (rk == NP - 1) rx_in_valid <= 1'b0;
                    end
                end
                if (rx_out_valid) r_records <= r_records + 1;
                if (r_records == NP) rs <= R_IDLE;
            end
            R_IDLE: if (r_take) begin
                rx_in_valid <= 1'b1;
                rx_in_op <= `MROCE_RX_OP_PACKET;
                rx_in_ce <= 1'b0;
                // immediate ACK when nothing else is waiting (coalesced otherwise)
                rx_in_ack_req <= (c_v & ~(8'b1 << ch_ready_slot)) == 0;
                rx_in_commit <= 1'b1;
                take <= 1'b1;
                take_slot <= ch_ready_slot;
                rs <= R_WAIT;
            end
            R_WAIT: begin
                if (rx_in_valid && rx_in_ready) rx_in_valid <= 1'b0;
                if (rx_out_valid) begin
                    if (rx_out[`MROCE_RX_ACK]) begin
                        aq_v <= 1'b1;
                        aq_path <= rx_out[`MROCE_RX_PATH];
                        aq_base <= rx_out[`MROCE_RX_BASE];
                        aq_sack <= rx_out_sack;
                    end
                    if (rx_out[`MROCE_RX_VERDICT] == `MROCE_RX_NEW) begin
                        seen_bit <= seen[r_seq];
                        rs <= R_CHECK;
                    end else begin
                        n_duplicates <= inc(n_duplicates);
                        rs <= R_IDLE;
                    end
                end
            end
            R_CHECK: begin
                if (r_data != data_of(r_seq)) n_data_errors <= inc(n_data_errors);
                if (seen_bit) n_duplicates <= inc(n_duplicates);  // a spurious retransmission's twin
                else begin
                    seen[r_seq] <= 1'b1;
                    n_delivered <= n_delivered + 1'b1;  // at most N_PKTS
                end
                rs <= R_IDLE;
            end
            default: rs <= R_IDLE;
        endcase
    end

    // ------------------------------------------------------------------ sender
    localparam S_INIT_TX = 0, S_INIT_SEL = 1, S_IDLE = 2, S_SELECT = 3, S_SEND = 4, S_ACK_HI = 5,
               S_ACK_WORD = 6, S_LOST = 7, S_LOST_PUSH = 8, S_CREDIT = 9, S_TIMER = 10, S_EXPIRE = 11,
               S_WAIT_SEL = 12, S_ACK_LB = 13, S_LOST_SCAN = 14;
    reg [3:0] ss;
    reg [3:0] ret;  // state after S_LOST
    reg [3:0] after_credit;  // state after S_CREDIT
    reg [4:0] k;
    reg [PB-1:0] cur_path;
    reg [31:0] word_psn;
    reg [31:0] lost_mask;
    // low_bit(lost_mask), registered whenever lost_mask changed (S_LOST_SCAN, S_LOST_PUSH):
    // the bit scan, the PSN add and the message lookup in one clock were the ULX3S's critical
    // path (80.1 MHz, seed 1). Bit 5: lost_mask is 0.
    reg [5:0] lost_lb;
    // the sender runs this clock: start && !done and the stop tests of the clock before. From
    // `done` through them into every register of the sender was the ULX3S's critical path
    // (77.05 MHz, seed 2); the sender starts a clock after `start`, and takes one step more in
    // the clock the test stops (the checker's verdict is not affected)
    reg s_run;
    reg [NB-1:0] acked_n, lost_n;
    reg [NP-1:0] room;
    reg timer_due;
    // clocks until the next TIMER round is due, and until SELECT may be retried (down-counters
    // rather than 32-bit times compared with `now`)
    reg [TB-1:0] timer_left;
    reg [5:0] backoff_left;
    reg [SEQ_BITS:0] next_seq;
    reg from_retx;
    reg [SEQ_BITS-1:0] cur_seq;
    reg issued;
    // message number of every outstanding PSN: seq_of[path][psn % SACK_BITS]
    reg [SEQ_BITS-1:0] seq_of [0:NP*(1<<SB)-1];
    reg [SEQ_BITS-1:0] seq_rd;
    // retransmit queue: each message is at most once in it or outstanding, and new messages go
    // out only when it is empty, so it never holds more than the NP x SACK_BITS PSNs the
    // scoreboard can have outstanding (2^QB entries). rq_head is used clocks after a write, so a
    // read colliding with one may return anything (no_rw_check)
    localparam QB = SEQ_BITS < PB + SB ? SEQ_BITS : PB + SB;
    (* no_rw_check *) reg [SEQ_BITS-1:0] rq [0:(1<<QB)-1];
    reg [QB:0] rq_w, rq_r;
    wire rq_empty = rq_w == rq_r;
    reg [SEQ_BITS-1:0] rq_head;  // rq[rq_r], one clock behind (block RAM read)
    always @(posedge clock) rq_head <= rq[rq_r[QB-1:0]];
    // The scoreboard's record: its FIFO's LUT-RAM read and the route from the core into the
    // record handling (PSN compare, room mask, message lookup) were one path, the ULX3S's
    // critical one (76.9 MHz) once PicoRV32 left the C extension
    reg tx_rec_q;
    reg [`MROCE_TX_OUT_BITS-1:0] tx_out_q;
    always @(posedge clock) begin
        tx_rec_q <= tx_out_valid;
        tx_out_q <= tx_out;
    end
    wire tx_rec = REC_REG ? tx_rec_q : tx_out_valid;
    wire [`MROCE_TX_OUT_BITS-1:0] tx_r = REC_REG ? tx_out_q : tx_out;
    initial begin
        ss = S_INIT_TX; k = 0; room = {NP{1'b1}}; s_run = 0; lost_lb = 6'd32; timer_due = 0; timer_left = TIMER_PERIOD;
        backoff_left = 0; next_seq = 0; rq_w = 0; rq_r = 0; tx_in_valid = 0; sel_in_valid = 0; issued = 0;
        tx_rec_q = 0;
    end
    // the selector's record of the operation issued; a control core's own commands (SEL_CMD,
    // e.g. the health monitor's) produce records of other operations in the same stream
    wire sel_rec = sel_out_valid && sel_out[`MROCE_SEL_OP] == sel_in_op;
    wire [31:0] rec_freed = tx_r[`MROCE_TX_FREED];
    wire [31:0] rec_lost = tx_r[`MROCE_TX_LOST];
    wire [31:0] rec_psn = tx_r[`MROCE_TX_PSN];
    wire [SB-1:0] lost_psn = word_psn[SB-1:0] + lost_lb[4:0];
    // ACK: highest non-zero SACK word (scanned from the top, one word per clock)
    wire [31:0] aq_word = aq_sack[k[WB-1:0]*32 +: 32];
    // PSN offset of SACK word k in the ACK's window
    wire [31:0] word_off = {{(27-WB){1'b0}}, k[WB-1:0], 5'b0};
    // ... and of the highest PSN word k reports (when it reports one)
    wire [5:0] word_high = high_bit(aq_word);
    wire [31:0] high_off = {{(27-WB){1'b0}}, k[WB-1:0], word_high[4:0]};
    // high_off registered: S_ACK_LB adds it to the base a clock after S_ACK_HI found the word
    // (the word multiplexer, the bit scan and the 32-bit add in one clock were the ULX3S's
    // critical path, 68.8 MHz)
    reg [WB+4:0] high_off_q;
    always @(posedge clock) high_off_q <= high_off[WB+4:0];
    // the ACK_WORD's mask straight from the ACK snapshot (k and aq_sack hold while it is
    // valid; the other operations ignore it): no copy register
    always @(*) tx_in_mask = aq_word;
    always @(posedge clock) begin
        push <= 1'b0;
        aq_pop <= 1'b0;
        n_cycles <= n_cycles + {{(CYB-1){1'b0}}, start && !done};
        s_run <= start && !done && n_delivered != N_PKTS && n_cycles < MAX_CYCLES;
        if (timer_left != 0) timer_left <= timer_left - 1'b1;
        if (backoff_left != 0) backoff_left <= backoff_left - 1'b1;
        if (start && !done && timer_left == 0) begin
            timer_due <= 1'b1;
            timer_left <= TIMER_RELOAD;
        end
        if (tx_in_valid && tx_in_ready) tx_in_valid <= 1'b0;
        if (sel_in_valid && sel_in_ready) sel_in_valid <= 1'b0;
        if (tx_rec) room[tx_r[`MROCE_TX_PATH]] <= tx_r[`MROCE_TX_ROOM];
        if (start && !done && n_delivered == N_PKTS) begin
            done <= 1'b1;
            pass <= n_data_errors == 0;
        end else if (start && !done && n_cycles >= MAX_CYCLES) begin
            done <= 1'b1;
            pass <= 1'b0;
        end
        if (s_run) case (ss)
            S_INIT_TX: if (!issued) begin  // RESET every path's scoreboard at PSN 0
                tx_in_valid <= 1'b1; tx_in_op <= `MROCE_TX_OP_RESET; tx_in_path <= k[PB-1:0]; tx_in_psn <= 0;
                issued <= 1'b1;
            end else if (tx_rec) begin
                issued <= 1'b0;
                if (k == NP - 1) begin k <= 0; ss <= DO_INIT ? S_INIT_SEL : S_IDLE; end else k <= k + 1;
            end
            S_INIT_SEL: if (!issued) begin
                sel_in_valid <= 1'b1; sel_in_op <= `MROCE_SEL_OP_INIT; sel_in_a <= NP16; sel_in_b <= PLANES16;
                issued <= 1'b1;
            end else if (sel_rec) begin
                issued <= 1'b0; ss <= S_IDLE;
            end
            S_IDLE: begin
                if (aq_v) begin
                    // tx_in_lost_below is set here and in S_ACK_LB (no TX operation is pending)
                    cur_path <= aq_path; k <= NW - 1; tx_in_lost_below <= aq_base; acked_n <= 0; lost_n <= 0;
                    n_acks <= inc(n_acks);
                    ss <= S_ACK_HI;
                end else if (timer_due) begin
                    timer_due <= 1'b0; k <= 0; ss <= S_TIMER;
                end else if ((!rq_empty || next_seq < N_PKTS) && ch_free && !push && backoff_left == 0) begin
                    ss <= S_SELECT;
                end
            end
            S_SELECT: if (!issued) begin
                sel_in_valid <= 1'b1; sel_in_op <= `MROCE_SEL_OP_SELECT;
                sel_in_room <= 16'hFFFF; sel_in_room[NP-1:0] <= room;
                issued <= 1'b1;
            end else if (sel_rec) begin
                issued <= 1'b0;
                if (sel_out[`MROCE_SEL_OK]) begin
                    cur_path <= sel_out[`MROCE_SEL_PATH];
                    from_retx <= !rq_empty;
                    cur_seq <= rq_empty ? next_seq[SEQ_BITS-1:0] : rq_head;
                    ss <= S_SEND;
                end else begin
                    backoff_left <= 6'd63;  // no eligible path: wait 64 clocks for ACKs
                    ss <= S_IDLE;
                end
            end
            S_SEND: if (!issued) begin
                tx_in_valid <= 1'b1; tx_in_op <= `MROCE_TX_OP_SEND; tx_in_path <= cur_path;
                tx_in_now <= now; tx_in_rto <= RTO32;
                issued <= 1'b1;
            end else if (tx_rec) begin
                issued <= 1'b0;
                if (tx_r[`MROCE_TX_OK]) begin
                    seq_of[{cur_path, rec_psn[SB-1:0]}] <= cur_seq;
                    c_pay[{1'b0, ch_free_next}] <= {cur_path, rec_psn, cur_seq, data_of(cur_seq)};
                    push <= 1'b1; push_slot <= ch_free_next;
                    n_sent <= inc(n_sent);
                    if (from_retx) begin rq_r <= rq_r + 1; n_retransmits <= inc(n_retransmits); end
                    else next_seq <= next_seq + 1;
                    ss <= S_IDLE;
                end else begin
                    // the scoreboard had no room after all: give the selector its charge back
                    acked_n <= 0; lost_n <= 1; after_credit <= S_IDLE; ss <= S_CREDIT;
                end
            end
            S_ACK_HI: begin  // tx_in_lost_below = one past the highest PSN the ACK reports
                if (aq_word != 0) begin
                    ss <= S_ACK_LB;
                end else if (k == 0) begin
                    k <= 0; ss <= S_ACK_WORD;
                end else k <= k - 1;
            end
            S_ACK_LB: begin
                tx_in_lost_below <= aq_base + {{(27-WB){1'b0}}, high_off_q};
                k <= 0; ss <= S_ACK_WORD;
            end
            S_ACK_WORD: if (!issued) begin
                tx_in_valid <= 1'b1; tx_in_op <= `MROCE_TX_OP_ACK_WORD; tx_in_path <= cur_path;
                tx_in_psn <= aq_base + word_off;
                tx_in_now <= now; tx_in_rto <= RTO32;
                issued <= 1'b1;
            end else if (tx_rec) begin
                issued <= 1'b0;
                word_psn <= tx_in_psn;  // (not a second copy of the sum: fewer logic cells)
                acked_n <= acked_n + {{(NB-6){1'b0}}, popcount(rec_freed)};
                lost_mask <= rec_lost;
                if (k == NW - 1) begin
                    aq_pop <= 1'b1;
                    ret <= S_CREDIT;
                    after_credit <= S_IDLE;
                end else ret <= S_ACK_WORD;
                k <= k + 1;
                ss <= S_LOST_SCAN;
            end
            S_LOST_SCAN: begin
                lost_lb <= low_bit(lost_mask);
                ss <= S_LOST;
            end
            S_LOST: if (lost_lb[5]) ss <= ret;
            else begin  // one lost PSN per two clocks: look up its message
                seq_rd <= seq_of[{cur_path, lost_psn}];
                lost_mask <= lost_mask & (lost_mask - 1);
                lost_n <= lost_n + 1'b1;
                ss <= S_LOST_PUSH;
            end
            S_LOST_PUSH: begin
                rq[rq_w[QB-1:0]] <= seq_rd;
                rq_w <= rq_w + 1;
                lost_lb <= low_bit(lost_mask);
                ss <= S_LOST;
            end
            S_CREDIT: if (!issued) begin
                sel_in_valid <= 1'b1; sel_in_op <= `MROCE_SEL_OP_CREDIT; sel_in_path <= cur_path;
                sel_in_a <= 0; sel_in_a[NB-1:0] <= acked_n; sel_in_b <= 0; sel_in_b[NB-1:0] <= lost_n;
                sel_in_c <= 0; sel_in_flag <= 1'b0;
                issued <= 1'b1;
            end else if (sel_rec) begin
                issued <= 1'b0;
                ss <= after_credit;
            end
            S_TIMER: if (k == NP) ss <= S_IDLE;
            else if (!issued) begin
                tx_in_valid <= 1'b1; tx_in_op <= `MROCE_TX_OP_TIMER; tx_in_path <= k[PB-1:0];
                tx_in_now <= now; tx_in_rto <= RTO32;
                cur_path <= k[PB-1:0];
                issued <= 1'b1;
            end else if (tx_rec) begin
                issued <= 1'b0;
                if (tx_r[`MROCE_TX_OK]) begin
                    n_rtos <= inc(n_rtos); acked_n <= 0; lost_n <= 0; ss <= S_EXPIRE;
                end else k <= k + 1;
            end
            S_EXPIRE: if (!issued) begin  // every outstanding PSN of the path is lost
                tx_in_valid <= 1'b1; tx_in_op <= `MROCE_TX_OP_EXPIRE; tx_in_path <= cur_path;
                issued <= 1'b1;
            end else if (tx_rec) begin
                issued <= 1'b0;
                lost_mask <= rec_lost;
                word_psn <= tx_r[`MROCE_TX_PSN];
                if (tx_r[`MROCE_TX_EMPTY]) begin
                    k <= k + 1;
                    ret <= S_CREDIT;
                    after_credit <= S_TIMER;
                end else ret <= S_EXPIRE;
                ss <= S_LOST_SCAN;
            end
            default: ss <= S_IDLE;
        endcase
    end
endmodule
