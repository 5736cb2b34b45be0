// SoC smoke test: PicoRV32 (RV32IMC, from PyPI pythondata-cpu-picorv32) + 64 KiB RAM holding the
// firmware image + transport_core on its CSR bus at 0x1000_0000 (firmware/README.md memory map).
// After the firmware's first poll, paths 1, 5, 9, 13 (plane 1 of 4) each send one packet and
// then time out every `GAP cycles (TIMER operations at an ever later `now`). The firmware must
// see the RTOs in the hardware counters, declare plane 1 down (SEL_CMD SET_PLANE_UP(1, 0)) and
// move the plane's paths, without any fault. Run by scripts/firmware-soc-smoke.sh.
// The CSR bridge holds each access for three clocks: address, transport_core registers
// csr_rdata, data back to the core.
`timescale 1ns/1ps
module tb;
  reg clk = 0;
  always #5 clk = ~clk;
  reg resetn = 0;
  integer cyc = 0;
  wire mem_valid, mem_instr, trap;
  reg mem_ready = 0;
  wire [31:0] mem_addr, mem_wdata;
  wire [3:0] mem_wstrb;
  reg [31:0] mem_rdata = 0;
  picorv32 #(.COMPRESSED_ISA(1), .ENABLE_MUL(1), .ENABLE_DIV(1), .PROGADDR_RESET(32'h0),
             .STACKADDR(32'h10000), .ENABLE_COUNTERS(0), .CATCH_MISALIGN(1), .CATCH_ILLINSN(1))
    cpu (.clk(clk), .resetn(resetn), .trap(trap), .mem_valid(mem_valid), .mem_instr(mem_instr),
         .mem_ready(mem_ready), .mem_addr(mem_addr), .mem_wdata(mem_wdata), .mem_wstrb(mem_wstrb),
         .mem_rdata(mem_rdata), .irq(32'b0), .pcpi_wr(1'b0), .pcpi_rd(32'b0), .pcpi_wait(1'b0),
         .pcpi_ready(1'b0));
  reg [31:0] ram [0:16383];
  initial $readmemh(`HEX, ram);

  reg [7:0] csr_addr = 0;
  reg [31:0] csr_wdata = 0;
  reg csr_we = 0;
  wire [31:0] csr_rdata;
  wire irq_out;
  reg tv = 0;
  wire tr;
  reg [2:0] top = 0;
  reg [3:0] tpath = 0;
  reg [31:0] tnow = 0;
  transport_core dut(.clock(clk),
    .rx_in_valid(1'b0), .rx_in_op(2'b0), .rx_in_path(4'b0), .rx_in_psn(32'b0), .rx_in_floor(32'b0),
    .rx_in_ce(1'b0), .rx_in_ack_req(1'b0), .rx_in_commit(1'b0), .rx_out_ready(1'b1),
    .tx_in_valid(tv), .tx_in_ready(tr), .tx_in_op(top), .tx_in_path(tpath), .tx_in_psn(32'b0),
    .tx_in_mask(32'b0), .tx_in_lost_below(32'b0), .tx_in_now(tnow), .tx_in_rto(32'd100),
    .tx_out_ready(1'b1),
    .sel_in_valid(1'b0), .sel_in_op(4'b0), .sel_in_path(4'b0), .sel_in_room(16'b0), .sel_in_a(16'b0),
    .sel_in_b(16'b0), .sel_in_c(16'b0), .sel_in_flag(1'b0), .sel_out_ready(1'b1),
    .csr_addr(csr_addr), .csr_wdata(csr_wdata), .csr_we(csr_we), .csr_rdata(csr_rdata), .irq(irq_out));

  integer polls = 0, sel_cmds = 0, instrs = 0, k = 0, round = 0, t_next = 0;
  integer rto3_cycle = 0, plane_down_cycle = 0, moved = 0;
  reg [31:0] fault = 0, arg = 0;
  // failure injection (round 0: one SEND per path; rounds 1..: TIMER, each one expires)
  always @(posedge clk) begin
    if (tv && tr) tv <= 0;
    else if (!tv && polls > 0 && cyc >= t_next && round < 6) begin
      tv <= 1;
      tpath <= 4'd1 + 4'd4 * k[3:0];
      top <= (round == 0) ? 3'd0 : 3'd3;
      tnow <= round * 1000000;
      if (k == 3) begin
        k <= 0; round <= round + 1; t_next <= cyc + `GAP;
        if (round == 3) rto3_cycle <= cyc;
      end else k <= k + 1;
    end
  end
  // RAM and CSR bridge
  reg [1:0] cs = 0;
  always @(posedge clk) begin
    cyc <= cyc + 1;
    mem_ready <= 0;
    csr_we <= 0;
    if (trap) begin $display("RESULT trap cycle=%0d", cyc); $finish; end
    if (resetn && mem_valid && !mem_ready) begin
      if (mem_addr < 32'h10000) begin
        if (mem_wstrb[0]) ram[mem_addr[15:2]][7:0] <= mem_wdata[7:0];
        if (mem_wstrb[1]) ram[mem_addr[15:2]][15:8] <= mem_wdata[15:8];
        if (mem_wstrb[2]) ram[mem_addr[15:2]][23:16] <= mem_wdata[23:16];
        if (mem_wstrb[3]) ram[mem_addr[15:2]][31:24] <= mem_wdata[31:24];
        mem_rdata <= ram[mem_addr[15:2]];
        mem_ready <= 1;
        if (mem_instr) instrs = instrs + 1;
      end else if (mem_addr[31:8] == 24'h100000) begin
        case (cs)
          0: begin csr_addr <= mem_addr[7:0]; csr_wdata <= mem_wdata; csr_we <= |mem_wstrb; cs <= 1; end
          1: cs <= 2;
          default: begin
            mem_rdata <= csr_rdata; mem_ready <= 1; cs <= 0;
            if (|mem_wstrb) begin
              if (mem_addr[7:0] == 8'h20) arg = mem_wdata;
              if (mem_addr[7:0] == 8'h38) fault = mem_wdata;
              if (mem_addr[7:0] == 8'h24) begin
                sel_cmds = sel_cmds + 1;
                if (mem_wdata[3:0] == 4'd8 && !mem_wdata[8] && arg[15:0] == 16'd1 && plane_down_cycle == 0)
                  plane_down_cycle = cyc;
                if (mem_wdata[3:0] == 4'd7 && plane_down_cycle != 0 && arg[2:0] != 3'd1) moved = moved + 1;
              end
            end else if (mem_addr[7:0] == 8'h3C) polls = polls + 1;
          end
        endcase
      end else begin
        $display("RESULT bus_error addr=%h cycle=%0d", mem_addr, cyc);
        $finish;
      end
    end
  end
  initial begin
    repeat (10) @(posedge clk);
    resetn <= 1;
    repeat (`CYCLES) @(posedge clk);
    $display("RESULT cycles=%0d fetches=%0d sel_cmds=%0d polls=%0d fault=%h rto3_cycle=%0d plane_down_cycle=%0d moved=%0d",
             cyc, instrs, sel_cmds, polls, fault, rto3_cycle, plane_down_cycle, moved);
    $finish;
  end
endmodule
