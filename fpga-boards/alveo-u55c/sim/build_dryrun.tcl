# build_dryrun.tcl: runs build.tcl under plain tclsh with the Vivado commands it calls replaced by
# recorders, to check what can be checked without Vivado: the script parses, its argument
# handling, which files it finds, the order of the flow and the summary.json it writes (from a
# canned report_utilization table and slack). Says nothing about Vivado accepting the commands.
#   cd <scratch dir> && tclsh <this file> <build.tcl> <verilog dir> [<clock MHz>]
# Prints one line per Vivado command and the exit code build.tcl asked for.

set script [file normalize [lindex $argv 0]]
set argv [lrange $argv 1 end]
set argc [llength $argv]
set ::calls {}

proc record {args} {
    lappend ::calls $args
    puts "vivado: $args"
}
foreach cmd {read_xdc synth_design write_checkpoint opt_design place_design phys_opt_design route_design
             report_timing_summary report_clock_utilization report_drc set_property} {
    proc $cmd {args} "record $cmd {*}\$args"
}
proc read_verilog {args} {
    foreach f $args {
        if {![file exists $f]} {
            error "read_verilog: no file $f"
        }
    }
    record read_verilog {*}$args
}
proc get_files {f} {
    return $f
}
# a report_utilization table as Vivado prints it for UltraScale+ (figures made up)
proc report_utilization {args} {
    if {"-return_string" in $args} {
        return "+-------------------+-------+-------+------------+-----------+-------+\n\
| Site Type | Used | Fixed | Prohibited | Available | Util% |\n\
+-------------------+-------+-------+------------+-----------+-------+\n\
| CLB LUTs* | 12345 | 0 | 0 | 1303680 | 0.95 |\n\
| CLB Registers | 6789 | 0 | 0 | 2607360 | 0.26 |\n\
| Block RAM Tile | 2 | 0 | 0 | 2016 | 0.10 |\n"
    }
    record report_utilization {*}$args
}
proc get_timing_paths {args} {
    return path0
}
proc get_property {name obj} {
    return 0.250
}
proc write_bitstream {args} {
    record write_bitstream {*}$args
}
rename exit tcl_exit
proc exit {{code 0}} {
    return -code error "EXIT $code"
}

set rc 0
if {[catch {source $script} msg]} {
    if {[regexp {^EXIT (\d+)$} $msg -> code]} {
        set rc $code
    } else {
        puts "error: $msg"
        set rc 3
    }
}
puts "build.tcl exit code: $rc"
tcl_exit $rc
