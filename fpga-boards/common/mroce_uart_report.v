// mroce_uart_report: the self-test's status as one text line on a UART (8N1), sent once when
// the test finishes and then every REPEAT_CLKS clocks (a terminal opened late still sees it):
//   "MROCE BIST PASS dlv=00001000 snt=0000108E rtx=0000008E drp=0000002D dup=0000005F err=00000000\r\n"
// ("FAIL" instead of "PASS" when the test failed; "RUN " lines every REPEAT_CLKS while it runs).
module mroce_uart_report #(
    // clocks per UART bit (clock / baud rate: 25 MHz / 115200 = 217); at least 3, since a
    // character reaches `ch` two clocks after its index moves
    parameter CLKS_PER_BIT = 217,
    // clocks between two reports
    parameter REPEAT_CLKS = 1 << 26,
    // width of the counters (a multiple of 4, at most 32): the digits above print as 0
    parameter COUNT_BITS = 32
) (
    input wire clock,
    input wire done,
    input wire pass,
    input wire [COUNT_BITS-1:0] delivered,
    input wire [COUNT_BITS-1:0] sent,
    input wire [COUNT_BITS-1:0] retransmits,
    input wire [COUNT_BITS-1:0] dropped,
    input wire [COUNT_BITS-1:0] duplicates,
    input wire [COUNT_BITS-1:0] data_errors,
    // UART transmit line (idle high)
    output reg tx
);
    localparam LEN = 95;  // characters per line, "\r\n" included
    localparam CB = COUNT_BITS;
    // widths of the bit-time and repeat counters
    localparam DVB = $clog2(CLKS_PER_BIT) > 0 ? $clog2(CLKS_PER_BIT) : 1;
    localparam WCB = $clog2(REPEAT_CLKS + 1);
    // the line's characters for verdict v (0 RUN, 1 PASS, 2 FAIL) in a ROM (one block RAM
    // rather than ~70 logic cells of character multiplexers); a digit from the counters is DIGIT,
    // LAST for a field's last one, "0" for those above COUNT_BITS
    localparam [7:0] DIGIT = 8'd1, LAST = 8'd2;
    localparam integer FIRST_POS = 13 - CB / 4;  // position of the first digit from the counters
    localparam [3:0] FIRST = FIRST_POS[3:0];
    function [7:0] char_of(input [1:0] v, input [6:0] i);  // i: character index in the line
        reg [6:0] j, pos, fi;
        begin
            // from i = 15: field fi, position pos in " abc=" + 8 digits
            j = i - 7'd15; pos = j % 7'd13; fi = j / 7'd13;
            char_of = " ";
            if (i < 11) case (i[3:0])
                4'd0: char_of = "M"; 4'd1: char_of = "R"; 4'd2: char_of = "O"; 4'd3: char_of = "C";
                4'd4: char_of = "E"; 4'd6: char_of = "B"; 4'd7: char_of = "I"; 4'd8: char_of = "S";
                4'd9: char_of = "T"; default: char_of = " ";
            endcase
            else if (i < 15) case (v)
                2'd0: char_of = i == 11 ? "R" : i == 12 ? "U" : i == 13 ? "N" : " ";
                2'd1: char_of = i == 11 ? "P" : i == 12 ? "A" : "S";
                default: char_of = i == 11 ? "F" : i == 12 ? "A" : i == 13 ? "I" : "L";
            endcase
            else if (i < 93) case (pos)
                7'd0: char_of = " ";
                7'd1: case (fi) 0: char_of = "d"; 1: char_of = "s"; 2: char_of = "r"; 3: char_of = "d"; 4: char_of = "d"; default: char_of = "e"; endcase
                7'd2: case (fi) 0: char_of = "l"; 1: char_of = "n"; 2: char_of = "t"; 3: char_of = "r"; 4: char_of = "u"; default: char_of = "r"; endcase
                7'd3: case (fi) 0: char_of = "v"; 1: char_of = "t"; 2: char_of = "x"; 3: char_of = "p"; 4: char_of = "p"; default: char_of = "r"; endcase
                7'd4: char_of = "=";
                7'd12: char_of = LAST;
                default: char_of = pos[3:0] < FIRST ? "0" : DIGIT;
            endcase
            else if (i == 93) char_of = 8'h0D;
            else if (i == 94) char_of = 8'h0A;
        end
    endfunction
    reg [7:0] chars [0:511];
    integer li;
    initial for (li = 0; li < 512; li = li + 1) chars[li] = char_of(li[8:7], li[6:0]);
    reg [7:0] rom;  // chars[{verdict, idx}], one clock behind idx (block RAM read)
    function [7:0] hex(input [3:0] n);
        hex = n < 10 ? 8'h30 + {4'b0, n} : 8'h41 + {4'b0, n} - 8'd10;
    endfunction
    // the line's field values and verdict, frozen when a line starts; f[0] is the field being
    // sent, its remaining digits at the top (shifted out, most significant first: no division),
    // and the fields move down one place at the end of each (no 6-way multiplexer)
    reg [CB-1:0] f [0:5];
    reg [1:0] verdict;
    reg [6:0] idx;  // character being sent
    // rom_q: the block RAM's word registered once more, two clocks behind idx (a character's
    // first data bit is sent a bit time after idx moves): a block RAM's output arrives 5.6 ns
    // after the clock, and through the digit logic into tx it was the ULX3S's critical path
    reg [7:0] rom_q;
    always @(posedge clock) begin
        rom <= chars[{verdict, idx}];
        rom_q <= rom;
    end
    wire [7:0] ch = rom_q == DIGIT || rom_q == LAST ? hex(f[0][CB-1:CB-4]) : rom_q;

    reg busy;
    reg [3:0] bitn;  // 0 start, 1..8 data, 9 stop
    reg [DVB-1:0] div;
    reg [WCB-1:0] wait_clks;
    reg was_done;
    initial begin
        tx = 1'b1; busy = 1'b0; idx = 0; bitn = 0; div = 0; wait_clks = 0; was_done = 1'b0; verdict = 0;
    end
    always @(posedge clock) begin
        if (!busy) begin
            wait_clks <= wait_clks + 1'b1;
            if ((done && !was_done) || wait_clks >= REPEAT_CLKS[WCB-1:0]) begin
                was_done <= done;
                wait_clks <= 0;
                busy <= 1'b1;
                idx <= 0; bitn <= 0; div <= 0;
                f[0] <= delivered; f[1] <= sent; f[2] <= retransmits; f[3] <= dropped; f[4] <= duplicates;
                f[5] <= data_errors;
                verdict <= !done ? 2'd0 : pass ? 2'd1 : 2'd2;
            end
        end else begin
            tx <= bitn == 0 ? 1'b0 : bitn == 9 ? 1'b1 : ch[bitn - 1];
            if (div == CLKS_PER_BIT - 1) begin
                div <= 0;
                if (bitn == 9) begin
                    bitn <= 0;
                    if (idx == LEN - 1) busy <= 1'b0;
                    else idx <= idx + 1;
                    // after a digit: the next one, or the next field
                    if (rom_q == LAST) begin
                        f[0] <= f[1]; f[1] <= f[2]; f[2] <= f[3]; f[3] <= f[4]; f[4] <= f[5];
                    end else if (rom_q == DIGIT) f[0] <= {f[0][CB-5:0], 4'b0};
                end else bitn <= bitn + 1;
            end else div <= div + 1'b1;
        end
    end
endmodule
