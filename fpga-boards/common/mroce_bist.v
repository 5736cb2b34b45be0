// mroce_bist: the board self-test around transport_core. A sender and a receiver of one
// connection, joined by a lossy loopback channel, drive transport_core's three streams the way
// the NIC's packet engine would:
//   sender:   SELECT (room mask kept from the scoreboard's records) -> SEND -> packet into the
//             channel; on an ACK: ACK_WORD x SACK_WORDS (lost_below = the highest PSN the ACK
//             reports) -> lost PSNs back to their message numbers -> retransmit queue, then
//             CREDIT; every TIMER_PERIOD clocks: TIMER on every path, EXPIRE until empty on the
//             expired ones, CREDIT;
//   channel:  SLOTS slots, each packet dropped with probability drop_thresh/65536 or held for
//             DELAY_MIN + (0..DELAY_MASK) clocks (packets overtake each other);
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
    // message-number width (retransmit queue and delivered bitmap have 2^SEQ_BITS entries)
    parameter SEQ_BITS = 12,
    // channel delay: DELAY_MIN + (lfsr & DELAY_MASK) clocks
    parameter DELAY_MIN = 16,
    parameter DELAY_MASK = 63,
    // RTO in clocks (transport_core's `now` counts clocks here)
    parameter RTO = 4000,
    // clocks between two TIMER rounds over every path
    parameter TIMER_PERIOD = 1024,
    // give up after this many clocks
    parameter MAX_CYCLES = 50000000,
    // paths and planes given to the selector's INIT
    parameter PLANES = 4,
    // INIT the path selector at start (0 when a control core set the connection up); the
    // receive tracker and the scoreboard are always RESET (data-path state of the test's
    // connection)
    parameter DO_INIT = 1
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

    function [31:0] data_of(input [SEQ_BITS-1:0] s);
        data_of = {{(32-SEQ_BITS){1'b0}}, s} * 32'h9E3779B1 + 32'h6D726365;
    endfunction
    function [5:0] low_bit(input [31:0] m);  // index of the lowest set bit (m != 0)
        integer i;
        begin
            low_bit = 6'd32;
            for (i = 31; i >= 0; i = i - 1)
                if (m[i]) low_bit = i[5:0];
        end
    endfunction
    function [5:0] high_bit(input [31:0] m);  // index of the highest set bit (m != 0)
        integer i;
        begin
            high_bit = 6'd32;
            for (i = 0; i < 32; i = i + 1)
                if (m[i]) high_bit = i[5:0];
        end
    endfunction
    function [5:0] popcount(input [31:0] m);
        integer i;
        begin
            popcount = 0;
            for (i = 0; i < 32; i = i + 1)
                popcount = popcount + {5'b0, m[i]};
        end
    endfunction

    reg [15:0] lfsr;  // x^16 + x^14 + x^13 + x^11 + 1
    reg [31:0] now;
    initial begin
        lfsr = 16'hACE1; now = 0; cycles = 0; done = 0; pass = 0;
        delivered = 0; sent = 0; retransmits = 0; dropped = 0; duplicates = 0; data_errors = 0;
        acks = 0; rtos = 0;
    end
    always @(posedge clock) begin
        lfsr <= {lfsr[14:0], lfsr[15] ^ lfsr[13] ^ lfsr[12] ^ lfsr[10]};
        now <= now + 1;
    end

    // ------------------------------------------------------------------ channel
    localparam SLOTS = 8;
    reg [SLOTS-1:0] c_v;
    reg [PB-1:0] c_path [0:SLOTS-1];
    reg [31:0] c_psn [0:SLOTS-1];
    reg [SEQ_BITS-1:0] c_seq [0:SLOTS-1];
    reg [31:0] c_data [0:SLOTS-1];
    reg [31:0] c_due [0:SLOTS-1];
    integer ci;
    initial c_v = 0;
    reg ch_free;
    reg [2:0] ch_free_slot;
    reg ch_ready;
    reg [2:0] ch_ready_slot;
    always @(*) begin
        ch_free = 0; ch_free_slot = 0; ch_ready = 0; ch_ready_slot = 0;
        for (ci = SLOTS - 1; ci >= 0; ci = ci - 1) begin
            if (!c_v[ci]) begin ch_free = 1; ch_free_slot = ci[2:0]; end
            if (c_v[ci] && (now - c_due[ci]) < 32'h8000_0000) begin
                ch_ready = 1; ch_ready_slot = ci[2:0];
            end
        end
    end
    // the sender's push (one clock pulse) and the receiver's take
    reg push;
    reg [PB-1:0] push_path;
    reg [31:0] push_psn;
    reg [SEQ_BITS-1:0] push_seq;
    reg take;
    reg [2:0] take_slot;
    initial begin push = 0; take = 0; end
    always @(posedge clock) begin
        if (take) c_v[take_slot] <= 1'b0;
        if (push) begin
            if (lfsr < drop_thresh) begin
                dropped <= dropped + 1;
            end else begin
                c_v[ch_free_slot] <= 1'b1;
                c_path[ch_free_slot] <= push_path;
                c_psn[ch_free_slot] <= push_psn;
                c_seq[ch_free_slot] <= push_seq;
                c_data[ch_free_slot] <= data_of(push_seq);
                c_due[ch_free_slot] <= now + DELAY_MIN + {16'b0, lfsr & DELAY_MASK[15:0]};
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
    wire [4:0] rk1 = rk + 5'd1;
    reg [SEQ_BITS-1:0] r_seq;
    reg [31:0] r_data;
    reg seen [0:(1<<SEQ_BITS)-1];  // delivered messages
    reg seen_bit;
    reg [4:0] r_records;
    integer si;
    initial begin
        rs = R_INIT; rk = 0; rx_in_valid = 0; r_records = 0;
        for (si = 0; si < (1 << SEQ_BITS); si = si + 1) seen[si] = 1'b0;
    end
    always @(posedge clock) begin
        take <= 1'b0;
        if (aq_pop) aq_v <= 1'b0;
        if (start && !done) case (rs)
            R_INIT: begin  // RESET every path at ISN 0, then wait for their records
                if (rk < NP) begin
                    rx_in_valid <= 1'b1; rx_in_op <= `MROCE_RX_OP_RESET; rx_in_path <= rk[PB-1:0]; rx_in_psn <= 0;
                    if (rx_in_valid && rx_in_ready) begin
                        rk <= rk + 1;
                        rx_in_path <= rk1[PB-1:0];
                        if (rk == NP - 1) rx_in_valid <= 1'b0;
                    end
                end
                if (rx_out_valid) r_records <= r_records + 1;
                if (r_records == NP) rs <= R_IDLE;
            end
            R_IDLE: if (ch_ready && !take && !aq_v) begin
                rx_in_valid <= 1'b1;
                rx_in_op <= `MROCE_RX_OP_PACKET;
                rx_in_path <= c_path[ch_ready_slot];
                rx_in_psn <= c_psn[ch_ready_slot];
                rx_in_floor <= c_psn[ch_ready_slot] - WIN;
                rx_in_ce <= 1'b0;
                // immediate ACK when nothing else is waiting (coalesced otherwise)
                rx_in_ack_req <= (c_v & ~(8'b1 << ch_ready_slot)) == 0;
                rx_in_commit <= 1'b1;
                r_seq <= c_seq[ch_ready_slot];
                r_data <= c_data[ch_ready_slot];
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
                        duplicates <= duplicates + 1;
                        rs <= R_IDLE;
                    end
                end
            end
            R_CHECK: begin
                if (r_data != data_of(r_seq)) data_errors <= data_errors + 1;
                if (seen_bit) duplicates <= duplicates + 1;  // a spurious retransmission's twin
                else begin
                    seen[r_seq] <= 1'b1;
                    delivered <= delivered + 1;
                end
                rs <= R_IDLE;
            end
            default: rs <= R_IDLE;
        endcase
    end

    // ------------------------------------------------------------------ sender
    localparam S_INIT_TX = 0, S_INIT_SEL = 1, S_IDLE = 2, S_SELECT = 3, S_SEND = 4, S_ACK_HI = 5,
               S_ACK_WORD = 6, S_LOST = 7, S_LOST_PUSH = 8, S_CREDIT = 9, S_TIMER = 10, S_EXPIRE = 11,
               S_WAIT_SEL = 12;
    reg [3:0] ss;
    reg [3:0] ret;  // state after S_LOST
    reg [3:0] after_credit;  // state after S_CREDIT
    reg [4:0] k;
    reg [PB-1:0] cur_path;
    reg [31:0] lost_below;
    reg [31:0] word_psn;
    reg [31:0] lost_mask;
    reg [15:0] acked_n, lost_n;
    reg [15:0] room;
    reg timer_due;
    reg [31:0] timer_at;
    reg [31:0] backoff_until;
    reg [SEQ_BITS:0] next_seq;
    reg from_retx;
    reg [SEQ_BITS-1:0] cur_seq;
    reg issued;
    // message number of every outstanding PSN: seq_of[path][psn % SACK_BITS]
    reg [SEQ_BITS-1:0] seq_of [0:NP*(1<<SB)-1];
    reg [SEQ_BITS-1:0] seq_rd;
    // retransmit queue (each message is at most once in it or outstanding)
    reg [SEQ_BITS-1:0] rq [0:(1<<SEQ_BITS)-1];
    reg [SEQ_BITS:0] rq_w, rq_r;
    wire rq_empty = rq_w == rq_r;
    reg [SEQ_BITS-1:0] rq_head;  // rq[rq_r], one clock behind (block RAM read)
    always @(posedge clock) rq_head <= rq[rq_r[SEQ_BITS-1:0]];
    initial begin
        ss = S_INIT_TX; k = 0; room = 16'hFFFF; timer_due = 0; timer_at = TIMER_PERIOD;
        backoff_until = 0; next_seq = 0; rq_w = 0; rq_r = 0; tx_in_valid = 0; sel_in_valid = 0; issued = 0;
    end
    wire tx_rec = tx_out_valid;
    // the selector's record of the operation issued; a control core's own commands (SEL_CMD,
    // e.g. the health monitor's) produce records of other operations in the same stream
    wire sel_rec = sel_out_valid && sel_out[`MROCE_SEL_OP] == sel_in_op;
    wire [31:0] rec_freed = tx_out[`MROCE_TX_FREED];
    wire [31:0] rec_lost = tx_out[`MROCE_TX_LOST];
    wire [31:0] rec_psn = tx_out[`MROCE_TX_PSN];
    wire [31:0] lost_psn = word_psn + {26'b0, low_bit(lost_mask)};
    // ACK: highest non-zero SACK word (scanned from the top, one word per clock)
    wire [31:0] aq_word = aq_sack[k[WB-1:0]*32 +: 32];
    // PSN offset of SACK word k in the ACK's window
    wire [31:0] word_off = {{(27-WB){1'b0}}, k[WB-1:0], 5'b0};
    always @(posedge clock) begin
        push <= 1'b0;
        aq_pop <= 1'b0;
        cycles <= cycles + (start && !done);
        if (start && !done && (now - timer_at) < 32'h8000_0000) begin
            timer_due <= 1'b1;
            timer_at <= now + TIMER_PERIOD;
        end
        if (tx_in_valid && tx_in_ready) tx_in_valid <= 1'b0;
        if (sel_in_valid && sel_in_ready) sel_in_valid <= 1'b0;
        if (tx_rec) room[tx_out[`MROCE_TX_PATH]] <= tx_out[`MROCE_TX_ROOM];
        if (start && !done && delivered == N_PKTS) begin
            done <= 1'b1;
            pass <= data_errors == 0;
        end else if (start && !done && cycles >= MAX_CYCLES) begin
            done <= 1'b1;
            pass <= 1'b0;
        end else if (start && !done) case (ss)
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
                    cur_path <= aq_path; k <= NW - 1; lost_below <= aq_base; acked_n <= 0; lost_n <= 0;
                    acks <= acks + 1;
                    ss <= S_ACK_HI;
                end else if (timer_due) begin
                    timer_due <= 1'b0; k <= 0; ss <= S_TIMER;
                end else if ((!rq_empty || next_seq < N_PKTS) && ch_free && !push
                             && (now - backoff_until) < 32'h8000_0000) begin
                    ss <= S_SELECT;
                end
            end
            S_SELECT: if (!issued) begin
                sel_in_valid <= 1'b1; sel_in_op <= `MROCE_SEL_OP_SELECT; sel_in_room <= room;
                issued <= 1'b1;
            end else if (sel_rec) begin
                issued <= 1'b0;
                if (sel_out[`MROCE_SEL_OK]) begin
                    cur_path <= sel_out[`MROCE_SEL_PATH];
                    from_retx <= !rq_empty;
                    cur_seq <= rq_empty ? next_seq[SEQ_BITS-1:0] : rq_head;
                    ss <= S_SEND;
                end else begin
                    backoff_until <= now + 64;  // no eligible path: wait for ACKs
                    ss <= S_IDLE;
                end
            end
            S_SEND: if (!issued) begin
                tx_in_valid <= 1'b1; tx_in_op <= `MROCE_TX_OP_SEND; tx_in_path <= cur_path;
                tx_in_now <= now; tx_in_rto <= RTO32;
                issued <= 1'b1;
            end else if (tx_rec) begin
                issued <= 1'b0;
                if (tx_out[`MROCE_TX_OK]) begin
                    seq_of[{cur_path, rec_psn[SB-1:0]}] <= cur_seq;
                    push <= 1'b1; push_path <= cur_path; push_psn <= tx_out[`MROCE_TX_PSN]; push_seq <= cur_seq;
                    sent <= sent + 1;
                    if (from_retx) begin rq_r <= rq_r + 1; retransmits <= retransmits + 1; end
                    else next_seq <= next_seq + 1;
                    ss <= S_IDLE;
                end else begin
                    // the scoreboard had no room after all: give the selector its charge back
                    acked_n <= 0; lost_n <= 1; after_credit <= S_IDLE; ss <= S_CREDIT;
                end
            end
            S_ACK_HI: begin  // lost_below = one past the highest PSN the ACK reports
                if (aq_word != 0) begin
                    lost_below <= aq_base + word_off + {26'b0, high_bit(aq_word)};
                    k <= 0; ss <= S_ACK_WORD;
                end else if (k == 0) begin
                    k <= 0; ss <= S_ACK_WORD;
                end else k <= k - 1;
            end
            S_ACK_WORD: if (!issued) begin
                tx_in_valid <= 1'b1; tx_in_op <= `MROCE_TX_OP_ACK_WORD; tx_in_path <= cur_path;
                tx_in_psn <= aq_base + word_off; tx_in_mask <= aq_word; tx_in_lost_below <= lost_below;
                tx_in_now <= now; tx_in_rto <= RTO32;
                word_psn <= aq_base + word_off;
                issued <= 1'b1;
            end else if (tx_rec) begin
                issued <= 1'b0;
                acked_n <= acked_n + {10'b0, popcount(rec_freed)};
                lost_mask <= rec_lost;
                if (k == NW - 1) begin
                    aq_pop <= 1'b1;
                    ret <= S_CREDIT;
                    after_credit <= S_IDLE;
                end else ret <= S_ACK_WORD;
                k <= k + 1;
                ss <= S_LOST;
            end
            S_LOST: if (lost_mask == 0) ss <= ret;
            else begin  // one lost PSN per two clocks: look up its message
                seq_rd <= seq_of[{cur_path, lost_psn[SB-1:0]}];
                lost_mask <= lost_mask & (lost_mask - 1);
                lost_n <= lost_n + 1;
                ss <= S_LOST_PUSH;
            end
            S_LOST_PUSH: begin
                rq[rq_w[SEQ_BITS-1:0]] <= seq_rd;
                rq_w <= rq_w + 1;
                ss <= S_LOST;
            end
            S_CREDIT: if (!issued) begin
                sel_in_valid <= 1'b1; sel_in_op <= `MROCE_SEL_OP_CREDIT; sel_in_path <= cur_path;
                sel_in_a <= acked_n; sel_in_b <= lost_n; sel_in_c <= 0; sel_in_flag <= 1'b0;
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
                if (tx_out[`MROCE_TX_OK]) begin
                    rtos <= rtos + 1; acked_n <= 0; lost_n <= 0; ss <= S_EXPIRE;
                end else k <= k + 1;
            end
            S_EXPIRE: if (!issued) begin  // every outstanding PSN of the path is lost
                tx_in_valid <= 1'b1; tx_in_op <= `MROCE_TX_OP_EXPIRE; tx_in_path <= cur_path;
                issued <= 1'b1;
            end else if (tx_rec) begin
                issued <= 1'b0;
                lost_mask <= rec_lost;
                word_psn <= tx_out[`MROCE_TX_PSN];
                if (tx_out[`MROCE_TX_EMPTY]) begin
                    k <= k + 1;
                    ret <= S_CREDIT;
                    after_credit <= S_TIMER;
                end else ret <= S_EXPIRE;
                ss <= S_LOST;
            end
            default: ss <= S_IDLE;
        endcase
    end
endmodule
