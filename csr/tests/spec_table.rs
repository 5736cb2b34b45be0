//! SPEC.md Appendix C embeds the CSR table exactly as `markdown_table` writes it.
#[test]
fn spec_embeds_the_generated_csr_table() {
    let spec = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../SPEC.md")).expect("SPEC.md");
    let begin = spec
        .find("<!-- csr-map:begin")
        .expect("SPEC.md has a <!-- csr-map:begin --> marker");
    let body = &spec[begin..];
    let start = body.find("-->").map(|i| i + 3).expect("marker closes") + 1;
    let end = body
        .find("<!-- csr-map:end -->")
        .expect("SPEC.md has a <!-- csr-map:end --> marker");
    let mut want = String::new();
    mroce_csr::markdown_table(&mut want).expect("formatting into a String");
    assert_eq!(
        &body[start..end],
        want,
        "SPEC.md Appendix C differs from mroce_csr::markdown_table; regenerate it with \
         MROCE_WRITE_SPEC=1 cargo test -p mroce-csr --test spec_table"
    );
}

/// `MROCE_WRITE_SPEC=1` rewrites the table between the markers (then the test above passes).
#[test]
fn write_spec_table_on_request() {
    if std::env::var_os("MROCE_WRITE_SPEC").is_none() {
        return;
    }
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../SPEC.md");
    let spec = std::fs::read_to_string(path).expect("SPEC.md");
    let begin = spec.find("<!-- csr-map:begin").expect("begin marker");
    let start = begin + spec[begin..].find("-->").expect("marker closes") + 4;
    let end = spec.find("<!-- csr-map:end -->").expect("end marker");
    let mut t = String::new();
    mroce_csr::markdown_table(&mut t).expect("formatting into a String");
    let out = format!("{}{}{}", &spec[..start], t, &spec[end..]);
    std::fs::write(path, out).expect("write SPEC.md");
}
