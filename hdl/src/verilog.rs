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
];

/// The waivers a block needs (names from [`WAIVERS`]; today every block needs the same).
pub fn waivers_for(_name: &str) -> &'static [&'static str] {
    &["DECLFILENAME", "UNUSEDSIGNAL"]
}

/// Parameters printed in every header.
pub fn parameter_lines() -> Vec<String> {
    vec![
        format!("CONFIG={}", params::CONFIG_NAME),
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
    let body = hoist_register_outputs(&fold_selects(&fix_indices(&fix_slices(&raw))));
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

/// True when `expr` reads only registers (`x$q`, the outputs of rust-hdl's flip-flop
/// sub-modules, or `x$y` where `registered` says sub-module `x`'s output `y` is one),
/// parameters of the module and literals.
fn reads_only_registers(expr: &str, params: &[&str], registered: &dyn Fn(&str) -> bool) -> bool {
    let mut ok = true;
    let mut ident = String::new();
    let mut in_literal = false;
    let flush = |ident: &mut String, ok: &mut bool| {
        if !ident.is_empty() && !ident.ends_with("$q") && !params.contains(&ident.as_str()) && !registered(ident) {
            *ok = false;
        }
        ident.clear();
    };
    for c in expr.chars() {
        if c == '\'' {
            in_literal = true;
            ident.clear();
        } else if in_literal {
            if !c.is_ascii_alphanumeric() && c != '_' {
                in_literal = false;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == '$' || (!ident.is_empty() && c.is_ascii_digit()) {
            ident.push(c);
        } else {
            flush(&mut ident, &mut ok);
        }
    }
    flush(&mut ident, &mut ok);
    ok
}

/// Move a stream's `in_ready` out of the module's `always @(*)` block into a continuous
/// assignment when it is a function of registers only. rust-hdl emits all combinational
/// logic of a module as one block, so Verilator sees `in_ready` depend on `in_valid` and the
/// parent's valid/ready handshake as a combinational loop (UNOPTFLAT), which it then settles
/// by re-evaluating the whole block: the hoisted form is the same logic without the false loop.
fn hoist_register_outputs(v: &str) -> String {
    let lines: Vec<&str> = v.lines().collect();
    // "module$port" for every output a module copies straight from one of its registers, or
    // its complement (e.g. `fifo_occupancy`'s `room`): its parent may read it as a register
    let mut registered_outputs: Vec<String> = vec![];
    let mut module = "";
    for (i, l) in lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix("module ") {
            module = rest.split('(').next().unwrap_or("");
        }
        if let Some(port) = l.trim().strip_prefix("output reg  ").and_then(|p| p.strip_suffix(';')) {
            let writes: Vec<&str> = lines[i..]
                .iter()
                .take_while(|m| !m.starts_with("endmodule"))
                .filter_map(|m| m.trim().strip_prefix(&format!("{port} = ")))
                .collect();
            if let [w] = writes.as_slice() {
                let src = w.trim_end_matches(';');
                let src = src.strip_prefix('~').unwrap_or(src);
                if src.ends_with("$q") && !src.contains([' ', '[', '(']) {
                    registered_outputs.push(format!("{module}${port}"));
                }
            }
        }
    }
    let mut out: Vec<String> = Vec::with_capacity(lines.len() + 8);
    let mut start = 0;
    while start < lines.len() {
        // one module at a time
        let end = (start..lines.len())
            .find(|&i| lines[i].starts_with("endmodule"))
            .unwrap_or(lines.len() - 1);
        let m = &lines[start..=end];
        let this = m
            .iter()
            .find_map(|l| l.strip_prefix("module "))
            .and_then(|r| r.split('(').next())
            .unwrap_or("");
        let registered = |ident: &str| registered_outputs.contains(&format!("{this}${ident}"));
        let params: Vec<&str> = m
            .iter()
            .filter_map(|l| l.trim().strip_prefix("localparam"))
            .filter_map(|l| l.split('=').next())
            .map(str::trim)
            .collect();
        let mut drop = vec![false; m.len()];
        let mut retype: Vec<(usize, String)> = vec![];
        let mut assigns: Vec<String> = vec![];
        let name = "in_ready";
        let decl = m.iter().position(|l| l.trim() == format!("output reg  {name};"));
        let writes: Vec<usize> = (0..m.len())
            .filter(|&i| m[i].trim_start().starts_with(&format!("{name} = ")))
            .collect();
        if let (Some(d), [w]) = (decl, writes.as_slice()) {
            let rhs = m[*w]
                .trim()
                .trim_start_matches(&format!("{name} = "))
                .trim_end_matches(';');
            let ids: Vec<usize> = (0..m.len())
                .filter(|&i| m[i].trim_start().starts_with(&format!("{rhs} = ")))
                .collect();
            let expr = match ids.as_slice() {
                [i] if m[*i].starts_with("        ") && !m[*i].starts_with("         ") => Some(
                    m[*i]
                        .trim()
                        .trim_start_matches(&format!("{rhs} = "))
                        .trim_end_matches(';'),
                ),
                _ if reads_only_registers(rhs, &params, &registered) => Some(rhs),
                _ => None,
            };
            if let Some(expr) = expr.filter(|e| reads_only_registers(e, &params, &registered)) {
                drop[*w] = true;
                retype.push((d, format!("    output wire {name};")));
                assigns.push(format!("    assign {name} = {expr};"));
            }
        }
        for (i, l) in m.iter().enumerate() {
            if drop[i] {
                continue;
            }
            if let Some((_, r)) = retype.iter().find(|(d, _)| *d == i) {
                out.push(r.clone());
                continue;
            }
            if l.trim() == "always @(*) begin" {
                out.append(&mut assigns);
            }
            out.push(l.to_string());
        }
        start = end + 1;
    }
    out.join("\n") + "\n"
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

    #[test]
    fn ready_from_registers_is_hoisted() {
        let v = "module m(clock,in_valid,in_ready);\n    output reg  in_ready;\n    localparam  depth5 = 5'b10000;\n    always @(*) begin\n        rdy = occ$q < depth5;\n        in_ready = rdy;\n        accept = in_valid && rdy;\n    end\nendmodule // m\n";
        let h = hoist_register_outputs(v);
        assert!(h.contains("    output wire in_ready;"), "{h}");
        assert!(
            h.contains("    assign in_ready = occ$q < depth5;\n    always @(*) begin"),
            "{h}"
        );
        assert!(!h.contains("        in_ready = rdy;"), "{h}");
        // an input in the expression keeps it in the block
        let v2 = v.replace("rdy = occ$q < depth5;", "rdy = occ$q < depth5 && in_valid;");
        assert_eq!(hoist_register_outputs(&v2), v2);
    }
}
