// tb_mroce_alchitry_cu: the Alchitry Cu top as built (its parameters, the small configuration's
// transport_core), clocked directly (VERILATOR skips the PLL) until its "done" LED; prints the
// LEDs and the self-test's counters. scripts/alchitry-cu-sim.sh Verilates and checks it.
`timescale 1ns/1ps
module tb_mroce_alchitry_cu;
    reg clk = 0;
    wire [7:0] led;
    wire tx;
    mroce_alchitry_cu dut(.clk_100mhz(clk), .led(led), .usb_tx(tx));
    always #20 clk = ~clk;  // 25 MHz, the PLL's output on the board
    integer n = 0;
    always @(posedge clk) begin
        n = n + 1;
        if (led[1]) begin
            $display("alchitry-cu self-test %s after %0d clocks: dlv=%h snt=%h rtx=%h drp=%h dup=%h err=%h",
                     led[2] && !led[3] ? "PASS" : "FAIL", n, dut.selftest.delivered, dut.selftest.sent,
                     dut.selftest.retransmits, dut.selftest.dropped, dut.selftest.duplicates,
                     dut.selftest.data_errors);
            $finish;
        end
        if (n > 20000000) begin
            $display("alchitry-cu self-test TIMEOUT after %0d clocks", n);
            $finish;
        end
    end
endmodule
