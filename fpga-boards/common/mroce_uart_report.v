// mroce_uart_report: the self-test's status as one text line on a UART (8N1), sent once when
// the test finishes and then every REPEAT_CLKS clocks (a terminal opened late still sees it):
//   "MROCE BIST PASS dlv=00001000 snt=0000108E rtx=0000008E drp=0000002D dup=0000005F err=00000000\r\n"
// ("FAIL" instead of "PASS" when the test failed; "RUN " lines every REPEAT_CLKS while it runs).
module mroce_uart_report #(
    // clocks per UART bit (clock / baud rate: 25 MHz / 115200 = 217)
    parameter CLKS_PER_BIT = 217,
    // clocks between two reports
    parameter REPEAT_CLKS = 1 << 26
) (
    input wire clock,
    input wire done,
    input wire pass,
    input wire [31:0] delivered,
    input wire [31:0] sent,
    input wire [31:0] retransmits,
    input wire [31:0] dropped,
    input wire [31:0] duplicates,
    input wire [31:0] data_errors,
    // UART transmit line (idle high)
    output reg tx
);
    localparam LEN = 95;  // characters per line, "\r\n" included
    function [7:0] hex(input [3:0] n);
        hex = n < 10 ? 8'h30 + {4'b0, n} : 8'h41 + {4'b0, n} - 8'd10;
    endfunction
    // the line's field values, frozen when a line starts
    reg [31:0] f [0:5];
    reg [7:0] status [0:3];
    reg [6:0] idx;  // character being sent
    // within the fields (idx >= 15): field fi, position pos in " abc=" + 8 digits, and the
    // field's remaining digits in sh (most significant first): counters, no division
    reg [2:0] fi;
    reg [3:0] pos;
    reg [31:0] sh;
    reg [7:0] ch;
    always @(*) begin
        ch = 8'h20;
        if (idx < 11) case (idx[3:0])
            4'd0: ch = "M"; 4'd1: ch = "R"; 4'd2: ch = "O"; 4'd3: ch = "C"; 4'd4: ch = "E";
            4'd6: ch = "B"; 4'd7: ch = "I"; 4'd8: ch = "S"; 4'd9: ch = "T"; default: ch = " ";
        endcase
        else if (idx < 15) ch = status[idx[1:0] + 2'd1];
        else if (idx < 93) case (pos)
            4'd0: ch = " ";
            4'd1: case (fi) 0: ch = "d"; 1: ch = "s"; 2: ch = "r"; 3: ch = "d"; 4: ch = "d"; default: ch = "e"; endcase
            4'd2: case (fi) 0: ch = "l"; 1: ch = "n"; 2: ch = "t"; 3: ch = "r"; 4: ch = "u"; default: ch = "r"; endcase
            4'd3: case (fi) 0: ch = "v"; 1: ch = "t"; 2: ch = "x"; 3: ch = "p"; 4: ch = "p"; default: ch = "r"; endcase
            4'd4: ch = "=";
            default: ch = hex(sh[31:28]);
        endcase
        else if (idx == 93) ch = 8'h0D;
        else ch = 8'h0A;
    end

    reg busy;
    reg [3:0] bitn;  // 0 start, 1..8 data, 9 stop
    reg [15:0] div;
    reg [31:0] wait_clks;
    reg was_done;
    initial begin
        tx = 1'b1; busy = 1'b0; idx = 0; bitn = 0; div = 0; wait_clks = 0; was_done = 1'b0;
        fi = 0; pos = 0; sh = 0;
    end
    always @(posedge clock) begin
        if (!busy) begin
            wait_clks <= wait_clks + 1;
            if ((done && !was_done) || wait_clks >= REPEAT_CLKS) begin
                was_done <= done;
                wait_clks <= 0;
                busy <= 1'b1;
                idx <= 0; bitn <= 0; div <= 0; fi <= 0; pos <= 0;
                f[0] <= delivered; f[1] <= sent; f[2] <= retransmits; f[3] <= dropped; f[4] <= duplicates;
                f[5] <= data_errors;
                if (!done) begin status[0] <= "R"; status[1] <= "U"; status[2] <= "N"; status[3] <= " "; end
                else if (pass) begin status[0] <= "P"; status[1] <= "A"; status[2] <= "S"; status[3] <= "S"; end
                else begin status[0] <= "F"; status[1] <= "A"; status[2] <= "I"; status[3] <= "L"; end
            end
        end else begin
            tx <= bitn == 0 ? 1'b0 : bitn == 9 ? 1'b1 : ch[bitn - 1];
            if (div == CLKS_PER_BIT - 1) begin
                div <= 0;
                if (bitn == 9) begin
                    bitn <= 0;
                    if (idx == LEN - 1) busy <= 1'b0;
                    else idx <= idx + 1;
                    // advance the field position of the next character
                    if (idx >= 15 && idx < 93) begin
                        if (pos == 4'd12) begin pos <= 0; fi <= fi + 3'd1; end
                        else pos <= pos + 4'd1;
                        if (pos == 4'd4) sh <= f[fi];
                        else if (pos >= 4'd5) sh <= {sh[27:0], 4'b0};
                    end
                end else bitn <= bitn + 1;
            end else div <= div + 1;
        end
    end
endmodule
