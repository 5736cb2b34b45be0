fn main() {
    let dir = std::env::args().nth(1).expect("usage: gen DIR");
    std::fs::create_dir_all(&dir).unwrap();
    for f in mroce_hdl::generate_all() {
        std::fs::write(format!("{dir}/{}.v", f.name), f.text).unwrap();
    }
}
