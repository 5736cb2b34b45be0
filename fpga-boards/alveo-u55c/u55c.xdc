# AMD Alveo U55C (xcu55c-fsvh2892-2L-e): the pins mroce_u55c uses. NOT BUILT HERE (no Vivado on
# this machine). Package pins, banks and I/O standards as in the public U55C/U55N constraints:
#   - AMD's U55N master XDC ("U55N - Master XDC", same card and package; its comments give the
#     bank and pin function quoted below),
#   - corundum/corundum fpga/mqnic/Alveo/fpga_25g/fpga_au55.xdc (U55C/U55N/Varium C1100),
#   - Xilinx/open-nic-shell constr/au55c/pins.xdc and general.xdc,
#   - fpgasystems/Coyote hw/constraints/u55c/u55c_base.xdc.
# They agree on every pin used here.

# Configuration (SPI x4 flash at 1.8 V), as in the public U55C constraints
set_property CFGBVS GND                                [current_design]
set_property CONFIG_VOLTAGE 1.8                        [current_design]
set_property CONFIG_MODE SPIx4                         [current_design]
set_property BITSTREAM.CONFIG.CONFIGFALLBACK ENABLE    [current_design]
set_property BITSTREAM.GENERAL.COMPRESS TRUE           [current_design]
set_property BITSTREAM.CONFIG.SPI_BUSWIDTH 4           [current_design]
set_property BITSTREAM.CONFIG.CONFIGRATE 63.8          [current_design]
set_property BITSTREAM.CONFIG.EXTMASTERCCLK_EN DISABLE [current_design]
set_property BITSTREAM.CONFIG.SPI_FALL_EDGE YES        [current_design]
set_property BITSTREAM.CONFIG.SPI_32BIT_ADDR YES       [current_design]
set_property BITSTREAM.CONFIG.UNUSEDPIN PULLUP         [current_design]
set_property BITSTREAM.CONFIG.OVERTEMPSHUTDOWN ENABLE  [current_design]

# SYSCLK3: 100 MHz LVDS (Si5394 OUT2 through an SI53306 buffer)
# Bank 65 VCCO 1.8 V, IO_L11P_T1U_N8_GC_A10_D26_65 / IO_L11N_T1U_N9_GC_A11_D27_65
set_property PACKAGE_PIN BK43 [get_ports sysclk3_p]
set_property PACKAGE_PIN BK44 [get_ports sysclk3_n]
set_property IOSTANDARD LVDS  [get_ports {sysclk3_p sysclk3_n}]
create_clock -period 10.000 -name sysclk3 [get_ports sysclk3_p]
# The transport clock is the MMCM's CLKOUT0; Vivado derives it from sysclk3 (no constraint).

# HBM_CATTRIP to the satellite controller: high cuts the card's power. Driven 0 by the design
# and pulled down while the FPGA is unconfigured (AMD AR 72926, as open-nic-shell does).
# Bank 65 VCCO 1.8 V, IO_L22P_T3U_N6_DBC_AD0P_D04_65
set_property -dict {PACKAGE_PIN BE45 IOSTANDARD LVCMOS18 PULLDOWN TRUE} [get_ports hbm_cattrip]

# FPGA UART transmit towards the FT4232H (channel C), reached over the card's debug/maintenance
# connector; pin as in corundum's and FPGA Ninja's U55C constraints (uart_txd[0])
set_property -dict {PACKAGE_PIN BJ41 IOSTANDARD LVCMOS18 SLEW SLOW DRIVE 8} [get_ports uart_txd]

# QSFP cage LEDs (the card has no other user LED); Bank 68 VCCO 1.8 V
set_property -dict {PACKAGE_PIN BL13 IOSTANDARD LVCMOS18 SLEW SLOW DRIVE 8} [get_ports {qsfp_led_act[0]}]
set_property -dict {PACKAGE_PIN BK11 IOSTANDARD LVCMOS18 SLEW SLOW DRIVE 8} [get_ports {qsfp_led_stat_g[0]}]
set_property -dict {PACKAGE_PIN BJ11 IOSTANDARD LVCMOS18 SLEW SLOW DRIVE 8} [get_ports {qsfp_led_stat_y[0]}]
set_property -dict {PACKAGE_PIN BK14 IOSTANDARD LVCMOS18 SLEW SLOW DRIVE 8} [get_ports {qsfp_led_act[1]}]
set_property -dict {PACKAGE_PIN BK15 IOSTANDARD LVCMOS18 SLEW SLOW DRIVE 8} [get_ports {qsfp_led_stat_g[1]}]
set_property -dict {PACKAGE_PIN BL12 IOSTANDARD LVCMOS18 SLEW SLOW DRIVE 8} [get_ports {qsfp_led_stat_y[1]}]

# Static or slow outputs: no I/O timing to meet
set_false_path -to [get_ports {hbm_cattrip uart_txd qsfp_led_act[*] qsfp_led_stat_g[*] qsfp_led_stat_y[*]}]
set_output_delay 0 [get_ports {hbm_cattrip uart_txd qsfp_led_act[*] qsfp_led_stat_g[*] qsfp_led_stat_y[*]}]
