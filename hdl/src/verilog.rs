//! Verilog generation: rust-hdl's `generate_verilog` plus the post-processing that makes the
//! output lint clean, a header naming the parameters and the generator, and the per-block
//! module names.

use mroce_model::params;
use rust_hdl::prelude::*;

/// Version of this generator (the `mroce-hdl` crate).
pub const GENERATOR_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Verilator warnings waived in every generated file, each with its reason. They are emitted as
/// `lint_off` comments in the file itself (never as command-line flags).
pub const WAIVERS: &[(&str, &str)] = &[
    (
        "DECLFILENAME",
        "each file holds one block with its sub-modules (named block$sub by rust-hdl)",
    ),
    (
        "UNUSEDSIGNAL",
        "rust-hdl registers whole pipeline records (LogicStruct) of which a stage may use \
         only some fields; yosys removes the unused flip-flops",
    ),
    (
        "UNOPTFLAT",
        "transport_core only: rust-hdl emits all combinational logic of a block as one \
         always @(*) block, so the selector's ready (a function of its registers) and the \
         command injection that reads it look like a loop to Verilator; no bit depends on \
         itself (yosys `check -assert` finds no loop)",
    ),
];

/// The waivers a block needs (names from [`WAIVERS`]).
pub fn waivers_for(name: &str) -> &'static [&'static str] {
    if name == "transport_core" {
        &["DECLFILENAME", "UNUSEDSIGNAL", "UNOPTFLAT"]
    } else {
        &["DECLFILENAME", "UNUSEDSIGNAL"]
    }
}

/// Parameters printed in every header.
pub fn parameter_lines() -> Vec<String> {
    vec![
        format!("PATHS={}", params::PATHS),
        format!("SACK_BITS={}", params::SACK_BITS),
        format!("SACK_WORD_BITS={}", params::SACK_WORD_BITS),
        format!("SACK_WORDS={}", params::SACK_WORDS),
        format!("PSN_BITS={}", params::PSN_BITS),
        format!("ACK_COALESCE={}", params::ACK_COALESCE),
        format!("CWND_FRAC_BITS={}", params::CWND_FRAC_BITS),
        format!("CWND_INIT_PKTS={}", params::CWND_INIT_PKTS),
        format!("CWND_MAX_PKTS={}", params::CWND_MAX_PKTS),
        format!("RTO_MAX_BACKOFF={}", params::RTO_MAX_BACKOFF),
        format!("MAX_PLANES={}", params::MAX_PLANES),
        format!("ALPHA_ONE={}", params::ALPHA_ONE),
        format!("ECN_G_SHIFT={}", params::ECN_G_SHIFT),
    ]
}

/// Turn `x[(32'h8)+:(24)]` (rust-hdl's slices with sized literal offsets) into `x[31:8]`.
fn fix_slices(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    while let Some(pos) = rest.find("[(") {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some((lo, width, len)) = parse_slice(tail) {
            if width == 1 {
                out.push_str(&format!("[{lo}]"));
            } else {
                out.push_str(&format!("[{}:{}]", lo + width - 1, lo));
            }
            rest = &tail[len..];
        } else {
            out.push_str("[(");
            rest = &tail[2..];
        }
    }
    out.push_str(rest);
    out
}

/// Parse `[(<bits>'h<hex>)+:(<dec>)]`, returning (offset, width, length of the match).
fn parse_slice(s: &str) -> Option<(u64, u64, usize)> {
    let body = s.strip_prefix("[(")?;
    let close = body.find(")+:(")?;
    let lit = &body[..close];
    let (_, hex) = lit.split_once("'h")?;
    let lo = u64::from_str_radix(hex, 16).ok()?;
    let rest = &body[close + 4..];
    let end = rest.find(")]")?;
    let width: u64 = rest[..end].parse().ok()?;
    Some((lo, width, 2 + close + 4 + end + 2))
}

/// Turn `x[64'h1f]` (a bit index written as a sized literal) into `x[31]`.
fn fix_indices(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut rest = v;
    while let Some(pos) = rest.find('[') {
        out.push_str(&rest[..=pos]);
        let tail = &rest[pos + 1..];
        let end = tail.find(']').unwrap_or(0);
        let inner = &tail[..end];
        match inner.split_once("'h") {
            Some((w, hex)) if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) => {
                match u64::from_str_radix(hex, 16) {
                    Ok(x) => {
                        out.push_str(&x.to_string());
                        rest = &tail[end..];
                    }
                    Err(_) => rest = tail,
                }
            }
            _ => rest = tail,
        }
    }
    out.push_str(rest);
    out
}

/// Parse a static select body `hi:lo` or `k` into (hi, lo).
fn parse_sel(s: &str) -> Option<(u64, u64)> {
    match s.split_once(':') {
        Some((h, l)) => Some((h.trim().parse().ok()?, l.trim().parse().ok()?)),
        None => {
            let k = s.trim().parse().ok()?;
            Some((k, k))
        }
    }
}

/// Fold `x[31:8][3]` into `x[11]` and `x[31:8][7:0]` into `x[15:8]` (rust-hdl slices a field of
/// a struct-typed signal and then indexes the slice, which Verilog does not allow).
fn fold_selects(v: &str) -> String {
    let mut s = v.to_string();
    loop {
        let mut changed = false;
        let mut search = 0;
        while let Some(rel) = s[search..].find("][") {
            let mid = search + rel;
            let open1 = match s[..mid].rfind('[') {
                Some(o) => o,
                None => break,
            };
            let close2 = match s[mid + 2..].find(']') {
                Some(c) => mid + 2 + c,
                None => break,
            };
            let first = &s[open1 + 1..mid];
            let second = &s[mid + 2..close2];
            if let (Some((_, lo1)), Some((h2, l2))) = (parse_sel(first), parse_sel(second)) {
                let repl = if h2 == l2 {
                    format!("[{}]", lo1 + l2)
                } else {
                    format!("[{}:{}]", lo1 + h2, lo1 + l2)
                };
                s.replace_range(open1..=close2, &repl);
                changed = true;
                search = open1;
            } else {
                search = mid + 2;
            }
        }
        if !changed {
            return s;
        }
    }
}

/// Generate the Verilog of `block` as module `name` (sub-modules `name$...`), post-processed
/// and with the header.
pub fn generate<B: Block>(block: &mut B, name: &str, description: &str) -> String {
    block.connect_all();
    let raw = generate_verilog(block);
    let body = fold_selects(&fix_indices(&fix_slices(&raw)));
    let body = rename_top(&body, name);
    let mut h = String::new();
    h.push_str(&format!("// {name}.v: {description}\n"));
    h.push_str(&format!(
        "// Generated by mroce-hdl {GENERATOR_VERSION} (rust-hdl 0.46) from hdl/src; do not edit.\n"
    ));
    h.push_str(&format!(
        "// Parameters (mroce_model::params): {}\n",
        parameter_lines().join(", ")
    ));
    h.push_str("// Waived lint warnings (named, with their reason; nothing else is waived):\n");
    let names = waivers_for(name);
    for (w, why) in WAIVERS.iter().filter(|(w, _)| names.contains(w)) {
        h.push_str(&format!("//   {w}: {why}\n"));
    }
    for w in names {
        h.push_str(&format!("/* verilator lint_off {w} */\n"));
    }
    h.push_str("`default_nettype wire\n");
    h + &body
}

/// rust-hdl names the top module `top` and its sub-modules `top$x`.
fn rename_top(v: &str, name: &str) -> String {
    v.replace("module top(", &format!("module {name}("))
        .replace("module top$", &format!("module {name}$"))
        .replace("endmodule // top", &format!("endmodule // {name}"))
        .lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("top$") {
                l.replacen("top$", &format!("{name}$"), 1)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_and_indices() {
        assert_eq!(fix_slices("a = x[(64'h8)+:(24)];"), "a = x[31:8];");
        assert_eq!(fix_slices("a = x[(32'h3)+:(1)];"), "a = x[3];");
        assert_eq!(fix_indices("a = x[32'h1f] | y[b];"), "a = x[31] | y[b];");
        assert_eq!(
            fold_selects("a = o[24:9][3] && o[40:25][3:0] && m[i][2];"),
            "a = o[12] && o[28:25] && m[i][2];"
        );
    }
}
