# build.tcl: Vivado non-project batch build of mroce_u55c for the AMD Alveo U55C.
# NOT RUN HERE: there is no Vivado on this machine, so this script has never been executed.
#
#   vivado -mode batch -source build.tcl -tclargs <verilog dir> [<clock MHz: 200|250>]
#
# <verilog dir> holds what `mroce hdl verilog --out DIR` writes (transport_core.v and
# mroce_defines.vh). The self-test (../common), the top and the constraints are looked up in
# <verilog dir>, then next to this script, then in ../common: `mroce synth --board alveo-u55c`
# writes one complete directory with this script in it (run it there with `-tclargs .`).
# Writes into the current directory: post_synth.dcp, post_route.dcp, utilization_synth.rpt,
# utilization.rpt, timing_summary.rpt, clock_utilization.rpt, drc.rpt, summary.json and
# mroce_u55c.bit. Exits 0 when timing is met, 1 when not (the bitstream is written anyway),
# 2 when the inputs are wrong.

if {[llength $argv] < 1 || [llength $argv] > 2} {
    puts "usage: vivado -mode batch -source build.tcl -tclargs <verilog dir> \[<clock MHz: 200|250>\]"
    exit 2
}
set src [file normalize [lindex $argv 0]]
set mhz 200
if {[llength $argv] == 2} {
    set mhz [lindex $argv 1]
}
# the MMCM makes CLK_MHZ as 1000 MHz (VCO) / CLKOUT0_DIVIDE_F, a multiple of 1/8
if {$mhz ni {200 250}} {
    puts "error: clock $mhz MHz: give 200 or 250"
    exit 2
}
set here [file dirname [file normalize [info script]]]
set part xcu55c-fsvh2892-2L-e
set top mroce_u55c
set dirs [list $src $here [file join $here .. common]]

proc input_file {name dirs} {
    foreach d $dirs {
        set p [file join $d $name]
        if {[file exists $p]} {
            return [file normalize $p]
        }
    }
    puts "error: $name is in none of: [join $dirs {, }]"
    exit 2
}

# the generated macros first, as a global include: no source file `includes them
set defines [input_file mroce_defines.vh $dirs]
read_verilog $defines
set_property is_global_include true [get_files $defines]
foreach f {transport_core.v mroce_bist.v mroce_uart_report.v mroce_selftest.v mroce_u55c.v} {
    read_verilog [input_file $f $dirs]
}
read_xdc [input_file u55c.xdc $dirs]

synth_design -top $top -part $part -include_dirs [list [file dirname $defines]] -generic CLK_MHZ=$mhz
write_checkpoint -force post_synth.dcp
report_utilization -file utilization_synth.rpt

opt_design
place_design
phys_opt_design
route_design
write_checkpoint -force post_route.dcp

report_utilization -file utilization.rpt
report_timing_summary -max_paths 10 -report_unconstrained -file timing_summary.rpt
report_clock_utilization -file clock_utilization.rpt
report_drc -file drc.rpt

# {used available} of a row of report_utilization's tables:
# | Site Type | Used | Fixed | Prohibited | Available | Util% |
proc utilisation {text site} {
    foreach line [split $text "\n"] {
        set cells [lmap c [split $line |] {string trim $c}]
        if {[llength $cells] >= 6 && [string trimright [lindex $cells 1] *] eq $site} {
            return [list [lindex $cells 2] [lindex $cells end-2]]
        }
    }
    return {0 0}
}
set util [report_utilization -return_string]
lassign [utilisation $util "CLB LUTs"] luts luts_total
lassign [utilisation $util "CLB Registers"] ffs ffs_total
lassign [utilisation $util "Block RAM Tile"] brams brams_total

set period [expr {1000.0 / $mhz}]
set wns [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -setup]]
if {$wns eq ""} {
    puts "error: no constrained setup path (is the sysclk3 constraint applied?)"
    exit 2
}
set fmax [expr {1000.0 / ($period - $wns)}]
set met [expr {$wns >= 0.0}]

write_bitstream -force $top.bit

set json [open summary.json w]
puts $json [format {{"part": "%s", "target_mhz": %s, "luts": %s, "luts_total": %s, "ffs": %s, "brams": %s, "wns_ns": %.3f, "fmax_mhz": %.2f, "timing_met": %s, "bitstream": "%s"}} \
    $part $mhz $luts $luts_total $ffs $brams $wns $fmax [expr {$met ? "true" : "false"}] $top.bit]
close $json
puts "mroce_u55c: $luts of $luts_total LUTs, $ffs FFs, $brams block RAM tiles; WNS $wns ns at $mhz MHz (Fmax [format %.1f $fmax] MHz)"
exit [expr {$met ? 0 : 1}]
