//! Write the Verilog of the compiled hardware configuration into a directory: every block
//! (`<block>.v`), `mroce_defines.vh` (the macros the hand-written board Verilog includes) and
//! `mroce_soc.v` with its stream ports expanded. `mroce synth` runs it for a board whose
//! configuration is not the one the `mroce` binary was built with:
//! `cargo run --release -p mroce-hdl [--features config-small] --example emit_verilog -- DIR`.
use std::path::Path;

fn write(path: &Path, text: &str) {
    if let Err(e) = std::fs::write(path, text) {
        eprintln!("cannot write {}: {e}", path.display());
        std::process::exit(1);
    }
    println!("{}", path.display());
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: emit_verilog DIR");
        std::process::exit(2);
    };
    let dir = Path::new(&dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        std::process::exit(1);
    }
    let mut core = String::new();
    for f in mroce_hdl::generate_all() {
        if f.name == "transport_core" {
            core = f.text.clone();
        }
        write(&dir.join(format!("{}.v", f.name)), &f.text);
    }
    let map = mroce_hdl::soc::SocMap {
        ram_bytes: mroce_firmware::memory_map::RAM_SIZE,
        csr_base: mroce_firmware::memory_map::CSR_BASE,
        heartbeat_tag: mroce_firmware::soc_status::HEARTBEAT_TAG,
    };
    write(&dir.join("mroce_defines.vh"), &mroce_hdl::soc::board_defines(map));
    write(&dir.join("mroce_soc.v"), &mroce_hdl::soc::soc_source(&core));
}
