// mroce_soc: the NIC control core with the transport beside it. PicoRV32 (RV32IM, from PyPI
// pythondata-cpu-picorv32, not committed) runs the firmware from a 64 KiB RAM (two clocks an
// access, so the RAM's address and data each have a register of their own); transport_core's
// CSR port sits on the core's bus at `MROCE_CSR_BASE` behind a three-clock bridge (address,
// transport_core registers csr_rdata, data back to the core). The transport's streams are ports
// of this module: the co-simulation (cosim/, `mroce cosim --soc`) drives them from the model,
// a board top from its traffic generator. The `MROCE_*` macros come from the generator
// (mroce_hdl::soc), which takes them from mroce_csr and the firmware's memory map.
module mroce_soc(clock,cpu_resetn,cmd_hold,room_from_stream,load_we,load_addr,load_data,dbg_addr,dbg_rdata,`MROCE_CORE_STREAM_NAMES,csr_tap_we,csr_tap_addr,csr_tap_wdata,cmd_waiting,trap,bus_error,instret,irq);
    // RAM contents at configuration ($readmemh file: the firmware image on a board; "" for none)
    parameter INIT_HEX = "";
    // 1: the load and debug ports reach the RAM (co-simulation); 0: tied off, so the RAM maps
    // to block RAM with the core's single port (boards)
    parameter DEBUG_PORTS = 1;
    input wire  clock;
    // PicoRV32 reset, active low; the RAM can be loaded while it is held
    input wire  cpu_resetn;
    // harness: keep a SEL_CMD write from starting (the selector stream is still busy with
    // operations the model applied before the command); boards tie it low
    input wire  cmd_hold;
    // harness: SELECT carries its room mask on the stream; CONTROL bit 0 (room from the
    // scoreboard) is kept in a shadow the core reads back instead of reaching transport_core
    input wire  room_from_stream;
    // RAM load port (word address), e.g. the firmware image before reset is released
    input wire  load_we;
    input wire  [13:0] load_addr;
    input wire  [31:0] load_data;
    // RAM debug read port (word address, combinational): status records, without a bus cycle
    input wire  [13:0] dbg_addr;
    output wire [31:0] dbg_rdata;
    // transport_core's streams, passed through (declared as the core declares them)
    `MROCE_CORE_STREAM_DECLS
    // what transport_core's CSR port sees this clock (a write takes effect at its end)
    output wire csr_tap_we;
    output wire [7:0] csr_tap_addr;
    output wire [31:0] csr_tap_wdata;
    // a SEL_CMD write is waiting for cmd_hold to drop
    output wire cmd_waiting;
    // PicoRV32 trapped (illegal instruction, misaligned access, ebreak)
    output wire trap;
    // the core accessed an address that is neither RAM nor the CSR window (the access
    // completes with zero data so the core cannot hang; sticky)
    output reg  bus_error;
    // instructions the core has started (PicoRV32 count_instr, low 32 bits; 0 outside Verilator)
    output wire [31:0] instret;
    // transport_core's event interrupt (also wired to the core's IRQ 3)
    output wire irq;

    wire mem_valid, mem_instr;
    reg mem_ready;
    wire [31:0] mem_addr, mem_wdata;
    wire [3:0] mem_wstrb;
    reg [31:0] mem_rdata;
    // TWO_CYCLE_COMPARE / TWO_CYCLE_ALU: a register behind the ALU and its compare (a clock
    // more per ALU operation and branch); without them the branch compare into the fetch logic
    // was the ULX3S's critical path (77.2 MHz). COMPRESSED_ISA(0), and the image built for
    // riscv32im: the fetch and decode of compressed instructions was the next one (69.66 MHz
    // on seed 1; without it 76.88 and 79.92 on seeds 1 and 2), for 3 KiB more code
    picorv32 #(.COMPRESSED_ISA(0), .ENABLE_MUL(1), .ENABLE_DIV(1), .PROGADDR_RESET(32'h0),
               .STACKADDR(`MROCE_RAM_BYTES), .ENABLE_COUNTERS(1), .CATCH_MISALIGN(1),
               .CATCH_ILLINSN(1), .ENABLE_IRQ(0), .TWO_CYCLE_COMPARE(1), .TWO_CYCLE_ALU(1))
      cpu (.clk(clock), .resetn(cpu_resetn), .trap(trap), .mem_valid(mem_valid),
           .mem_instr(mem_instr), .mem_ready(mem_ready), .mem_addr(mem_addr),
           .mem_wdata(mem_wdata), .mem_wstrb(mem_wstrb), .mem_rdata(mem_rdata), .irq({28'b0, irq, 3'b0}),
           .pcpi_wr(1'b0), .pcpi_rd(32'b0), .pcpi_wait(1'b0), .pcpi_ready(1'b0));
`ifdef VERILATOR
    assign instret = cpu.count_instr[31:0];
`else
    assign instret = 32'b0;
`endif

    reg [31:0] ram [0:`MROCE_RAM_BYTES/4-1];
    generate
        if (INIT_HEX != "") begin : init
            initial $readmemh(INIT_HEX, ram);
        end
        if (DEBUG_PORTS) begin : dbg
            assign dbg_rdata = ram[dbg_addr];
        end else begin : nodbg
            assign dbg_rdata = 32'b0;
        end
    endgenerate

    reg [7:0] csr_addr;
    reg [31:0] csr_wdata;
    reg csr_we;
    wire [31:0] csr_rdata;
    reg [1:0] cs;
    // a RAM access is in its second clock (its word is in ram_q)
    reg ram_wait;
    reg [31:0] ram_q;
    reg [31:0] control_shadow;
    initial begin
      mem_ready = 0; mem_rdata = 0; ram_wait = 0; bus_error = 0; csr_addr = 0; csr_wdata = 0; csr_we = 0; cs = 0;
      control_shadow = 0;
    end
    assign csr_tap_we = csr_we;
    assign csr_tap_addr = csr_addr;
    assign csr_tap_wdata = csr_wdata;

    wire is_ram = mem_addr < `MROCE_RAM_BYTES;
    wire is_csr = mem_addr[31:8] == (`MROCE_CSR_BASE >> 8);
    wire is_write = |mem_wstrb;
    wire is_cmd_write = is_csr && is_write && mem_addr[7:0] == `MROCE_CSR_SEL_CMD;
    wire is_control = mem_addr[7:0] == `MROCE_CSR_CONTROL;
    wire [13:0] word = mem_addr[15:2];
    wire ram_read = cpu_resetn && mem_valid && !mem_ready && is_ram && !ram_wait;
    assign cmd_waiting = cpu_resetn && mem_valid && !mem_ready && cs == 0 && is_cmd_write && cmd_hold;

    // the RAM's read register: loaded only from the RAM, so it maps into the block RAM
    always @(posedge clock) begin
      if (ram_read) ram_q <= ram[word];
    end

    always @(posedge clock) begin
      mem_ready <= 0;
      csr_we <= 0;
      if (DEBUG_PORTS && load_we) ram[load_addr] <= load_data;
      if (!cpu_resetn) begin
        cs <= 0;
        ram_wait <= 0;
      end else if (mem_valid && !mem_ready) begin
        if (is_ram) begin
          // Two clocks: the block RAM's word lands in ram_q, then in mem_rdata. ram_q has no
          // other source, so yosys keeps it as the block RAM's read register; with the word
          // read straight into mem_rdata (a register the bridge also writes) it pulled
          // PicoRV32's address register into the block RAM instead, and the core's address
          // adder drove 32 block RAMs across the die: the ULX3S's critical path (66.8 MHz).
          if (!ram_wait) begin
            if (mem_wstrb[0]) ram[word][7:0] <= mem_wdata[7:0];
            if (mem_wstrb[1]) ram[word][15:8] <= mem_wdata[15:8];
            if (mem_wstrb[2]) ram[word][23:16] <= mem_wdata[23:16];
            if (mem_wstrb[3]) ram[word][31:24] <= mem_wdata[31:24];
            ram_wait <= 1;
          end else begin
            mem_rdata <= ram_q;
            mem_ready <= 1;
            ram_wait <= 0;
          end
        end else if (is_csr) begin
          case (cs)
            2'd0: if (!(is_cmd_write && cmd_hold)) begin
              csr_addr <= mem_addr[7:0];
              csr_wdata <= (room_from_stream && is_control) ? (mem_wdata & ~`MROCE_CSR_CONTROL_ROOM) : mem_wdata;
              csr_we <= is_write;
              if (is_write && is_control) control_shadow <= mem_wdata;
              cs <= 2'd1;
            end
            2'd1: cs <= 2'd2;
            default: begin
              mem_rdata <= (room_from_stream && csr_addr == `MROCE_CSR_CONTROL)
                ? ((csr_rdata & ~`MROCE_CSR_CONTROL_ROOM) | (control_shadow & `MROCE_CSR_CONTROL_ROOM))
                : csr_rdata;
              mem_ready <= 1;
              cs <= 2'd0;
            end
          endcase
        end else begin
          bus_error <= 1;
          mem_rdata <= 32'b0;
          mem_ready <= 1;
        end
      end
    end

    transport_core core(
    .clock(clock),
    `MROCE_CORE_STREAM_PORTS,
    .csr_addr(csr_addr),
    .csr_wdata(csr_wdata),
    .csr_we(csr_we),
    .csr_rdata(csr_rdata),
    .irq(irq));
endmodule
