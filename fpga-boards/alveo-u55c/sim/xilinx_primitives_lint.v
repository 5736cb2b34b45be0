// Lint-only stand-ins for the four Xilinx primitives mroce_u55c instantiates, so Verilator can
// check the top without Vivado's unisim library. Port and parameter names are those of the
// unisim cells (yosys' techlibs/xilinx/cells_xtra.v, generated from Vivado's library, is the
// cross-check: README.md). NOT clock models: the MMCM passes its input through and locks after
// 16 input clocks. Never part of a build (build.tcl does not read this folder).
/* verilator lint_off UNUSEDPARAM */
/* verilator lint_off UNUSEDSIGNAL */
/* verilator lint_off DECLFILENAME */
module IBUFDS(O, I, IB);
    parameter CAPACITANCE = "DONT_CARE";
    parameter DIFF_TERM = "FALSE";
    parameter DQS_BIAS = "FALSE";
    parameter IBUF_DELAY_VALUE = "0";
    parameter IBUF_LOW_PWR = "TRUE";
    parameter IFD_DELAY_VALUE = "AUTO";
    parameter IOSTANDARD = "DEFAULT";
    output wire O;
    input wire I;
    input wire IB;
    assign O = I;
endmodule

module BUFG(O, I);
    output wire O;
    input wire I;
    assign O = I;
endmodule

module BUFGCE(O, CE, I);
    parameter CE_TYPE = "SYNC";
    parameter [0:0] IS_CE_INVERTED = 1'b0;
    parameter [0:0] IS_I_INVERTED = 1'b0;
    parameter SIM_DEVICE = "ULTRASCALE";
    parameter STARTUP_SYNC = "FALSE";
    output wire O;
    input wire CE;
    input wire I;
    // CE sampled on the falling edge, so the enabled clock has no runt pulse
    reg en = 1'b0;
    always @(negedge I) en <= CE;
    assign O = I & en;
endmodule

module MMCME4_BASE(CLKFBOUT, CLKFBOUTB, CLKOUT0, CLKOUT0B, CLKOUT1, CLKOUT1B, CLKOUT2, CLKOUT2B, CLKOUT3,
                   CLKOUT3B, CLKOUT4, CLKOUT5, CLKOUT6, LOCKED, CLKFBIN, CLKIN1, PWRDWN, RST);
    parameter BANDWIDTH = "OPTIMIZED";
    parameter real CLKFBOUT_MULT_F = 5.000;
    parameter real CLKFBOUT_PHASE = 0.000;
    parameter real CLKIN1_PERIOD = 0.000;
    parameter real CLKOUT0_DIVIDE_F = 1.000;
    parameter real CLKOUT0_DUTY_CYCLE = 0.500;
    parameter real CLKOUT0_PHASE = 0.000;
    parameter integer CLKOUT1_DIVIDE = 1;
    parameter real CLKOUT1_DUTY_CYCLE = 0.500;
    parameter real CLKOUT1_PHASE = 0.000;
    parameter integer CLKOUT2_DIVIDE = 1;
    parameter real CLKOUT2_DUTY_CYCLE = 0.500;
    parameter real CLKOUT2_PHASE = 0.000;
    parameter integer CLKOUT3_DIVIDE = 1;
    parameter real CLKOUT3_DUTY_CYCLE = 0.500;
    parameter real CLKOUT3_PHASE = 0.000;
    parameter CLKOUT4_CASCADE = "FALSE";
    parameter integer CLKOUT4_DIVIDE = 1;
    parameter real CLKOUT4_DUTY_CYCLE = 0.500;
    parameter real CLKOUT4_PHASE = 0.000;
    parameter integer CLKOUT5_DIVIDE = 1;
    parameter real CLKOUT5_DUTY_CYCLE = 0.500;
    parameter real CLKOUT5_PHASE = 0.000;
    parameter integer CLKOUT6_DIVIDE = 1;
    parameter real CLKOUT6_DUTY_CYCLE = 0.500;
    parameter real CLKOUT6_PHASE = 0.000;
    parameter integer DIVCLK_DIVIDE = 1;
    parameter [0:0] IS_CLKFBIN_INVERTED = 1'b0;
    parameter [0:0] IS_CLKIN1_INVERTED = 1'b0;
    parameter [0:0] IS_PWRDWN_INVERTED = 1'b0;
    parameter [0:0] IS_RST_INVERTED = 1'b0;
    parameter real REF_JITTER1 = 0.010;
    parameter STARTUP_WAIT = "FALSE";
    output wire CLKFBOUT;
    output wire CLKFBOUTB;
    output wire CLKOUT0;
    output wire CLKOUT0B;
    output wire CLKOUT1;
    output wire CLKOUT1B;
    output wire CLKOUT2;
    output wire CLKOUT2B;
    output wire CLKOUT3;
    output wire CLKOUT3B;
    output wire CLKOUT4;
    output wire CLKOUT5;
    output wire CLKOUT6;
    output wire LOCKED;
    input wire CLKFBIN;
    input wire CLKIN1;
    input wire PWRDWN;
    input wire RST;
    reg [4:0] lock_count = 5'd0;
    always @(posedge CLKIN1)
        if (RST) lock_count <= 5'd0;
        else if (!lock_count[4]) lock_count <= lock_count + 5'd1;
    assign LOCKED = lock_count[4];
    assign CLKFBOUT = CLKIN1;
    assign CLKFBOUTB = ~CLKIN1;
    assign CLKOUT0 = CLKIN1;
    assign CLKOUT0B = ~CLKIN1;
    assign {CLKOUT1, CLKOUT1B, CLKOUT2, CLKOUT2B, CLKOUT3, CLKOUT3B, CLKOUT4, CLKOUT5, CLKOUT6} = 9'b0;
endmodule
