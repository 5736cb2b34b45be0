// mroce_u55c: AMD Alveo U55C (xcu55c-fsvh2892-2L-e) top, default configuration (16 paths,
// 256-bit SACK). NOT BUILT HERE: no Vivado on this machine; checked only with Verilator's lint
// and yosys' elaboration against the Xilinx primitives' port lists (README.md).
//
// The board self-test (mroce_selftest: mroce_bist + transport_core + mroce_uart_report, from
// ../common) runs at CLK_MHZ from an MMCM on the card's 100 MHz SYSCLK3. No control core: the
// self-test INITs the path selector itself. The card has no user LEDs; the six QSFP cage LEDs
// show the status and the verdict line goes out on the FPGA UART (115200 8N1).
// QSFP0: act blinks (~0.75 Hz at 200 MHz: the clock runs), green = passed, yellow = failed.
// QSFP1: act = test running, green = MMCM locked and design started, yellow = data error seen.
// HBM_CATTRIP is driven low: the card's satellite controller cuts the power when it is high.
module mroce_u55c(sysclk3_p, sysclk3_n, hbm_cattrip, uart_txd, qsfp_led_act, qsfp_led_stat_g, qsfp_led_stat_y);
    // transport clock, MHz: 1000 (the VCO, MHz) / CLK_MHZ must be a multiple of 1/8 (200, 250)
    parameter CLK_MHZ = 200;
    // channel drop probability per 65536 packets (655: 1%)
    parameter DROP_THRESH = 655;
    // 100 MHz LVDS reference (SYSCLK3, from the Si5394 through a clock buffer)
    input wire  sysclk3_p;
    input wire  sysclk3_n;
    // HBM catastrophic-temperature flag to the satellite controller: must stay low
    output wire hbm_cattrip;
    // UART towards the FT4232H (status line, 8N1)
    output wire uart_txd;
    // QSFP cage LEDs, [0] = QSFP0, [1] = QSFP1
    output wire [1:0] qsfp_led_act;
    output wire [1:0] qsfp_led_stat_g;
    output wire [1:0] qsfp_led_stat_y;

    localparam [15:0] DROP16 = DROP_THRESH;
    localparam real CLKOUT0_DIVIDE = 1000.0 / CLK_MHZ;
    localparam CLKS_PER_BIT = (CLK_MHZ * 1000000 + 57600) / 115200;
    // one status line a second
    localparam REPEAT_CLKS = CLK_MHZ * 1000000;

    assign hbm_cattrip = 1'b0;

    wire sysclk3;
    IBUFDS sysclk3_ibuf(.I(sysclk3_p), .IB(sysclk3_n), .O(sysclk3));

    // 100 MHz / 1 x 10 = 1000 MHz VCO (800..1600 MHz), / CLKOUT0_DIVIDE = CLK_MHZ
    wire mmcm_fb, mmcm_clk, mmcm_locked;
    MMCME4_BASE #(
        .BANDWIDTH("OPTIMIZED"),
        .CLKIN1_PERIOD(10.0),
        .REF_JITTER1(0.010),
        .DIVCLK_DIVIDE(1),
        .CLKFBOUT_MULT_F(10.0),
        .CLKFBOUT_PHASE(0.0),
        .CLKOUT0_DIVIDE_F(CLKOUT0_DIVIDE),
        .CLKOUT0_DUTY_CYCLE(0.5),
        .CLKOUT0_PHASE(0.0),
        .STARTUP_WAIT("FALSE")
    ) mmcm(
        .CLKIN1(sysclk3),
        .CLKFBIN(mmcm_fb),
        .CLKFBOUT(mmcm_fb),
        .CLKFBOUTB(),
        .CLKOUT0(mmcm_clk),
        .CLKOUT0B(),
        .CLKOUT1(),
        .CLKOUT1B(),
        .CLKOUT2(),
        .CLKOUT2B(),
        .CLKOUT3(),
        .CLKOUT3B(),
        .CLKOUT4(),
        .CLKOUT5(),
        .CLKOUT6(),
        .LOCKED(mmcm_locked),
        .PWRDWN(1'b0),
        .RST(1'b0));

    // the design sees no clock edge before the MMCM locks, so every register still holds its
    // configuration value when the clock starts: LOCKED, synchronised on the ungated clock (a
    // second global buffer), enables a glitch-free gate (BUFGCE, synchronous CE)
    wire clock_free;
    BUFG clock_free_buf(.I(mmcm_clk), .O(clock_free));
    (* ASYNC_REG = "TRUE" *) reg [1:0] locked_sync = 2'b00;
    always @(posedge clock_free) locked_sync <= {locked_sync[0], mmcm_locked};
    wire clock;
    BUFGCE #(.CE_TYPE("SYNC"), .SIM_DEVICE("ULTRASCALE_PLUS")) clock_buf(.I(mmcm_clk), .CE(locked_sync[1]), .O(clock));

    // start the self-test 1024 clocks after the clock starts
    reg [10:0] por = 0;
    always @(posedge clock) if (!por[10]) por <= por + 1;
    wire start = por[10];

    wire done, pass;
    wire [31:0] data_errors;
    mroce_selftest #(.RTO(4000), .TIMER_PERIOD(1024), .CLKS_PER_BIT(CLKS_PER_BIT), .REPEAT_CLKS(REPEAT_CLKS))
      selftest(
        .clock(clock),
        .start(start),
        .drop_thresh(DROP16),
        .uart_tx(uart_txd),
        .done(done),
        .pass(pass),
        .delivered(),
        .sent(),
        .retransmits(),
        .dropped(),
        .duplicates(),
        .data_errors(data_errors),
        .acks(),
        .rtos(),
        .cycles());

    reg [27:0] blink = 0;
    always @(posedge clock) blink <= blink + 1;
    assign qsfp_led_act = {start && !done, blink[27]};
    assign qsfp_led_stat_g = {start, done && pass};
    assign qsfp_led_stat_y = {data_errors != 32'd0, done && !pass};
endmodule
