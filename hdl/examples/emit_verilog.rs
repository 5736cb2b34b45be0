//! Write every block's Verilog for the compiled hardware configuration into a directory:
//! `cargo run --release -p mroce-hdl [--features config-small] --example emit_verilog -- DIR`.
fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: emit_verilog DIR");
        std::process::exit(2);
    };
    let dir = std::path::Path::new(&dir);
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        std::process::exit(1);
    }
    for f in mroce_hdl::generate_all() {
        let p = dir.join(format!("{}.v", f.name));
        if let Err(e) = std::fs::write(&p, f.text) {
            eprintln!("cannot write {}: {e}", p.display());
            std::process::exit(1);
        }
        println!("{}", p.display());
    }
}
