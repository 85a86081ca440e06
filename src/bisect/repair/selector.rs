//! The repair search's module: the region once, every edit beside the
//! value it edits, chosen at run time by the selector argument.

use super::super::error::BisectError;
use super::edits::{self, text, Edit};
use std::fmt::Write as _;

/// A selector module that did not come out as planned.
fn emitted(problem: &str) -> BisectError {
    BisectError::EmittedText {
        what: "the repair search's module",
        problem: problem.to_string(),
    }
}

/// The slice's ops as text blocks (op, its lines), in program order, and the
/// trailing `func.return` line(s).
pub(super) fn op_blocks<'b>(
    func: &parity_mlir::Function,
    ops: &[usize],
    body: &'b str,
) -> Option<(Vec<(usize, &'b str)>, &'b str)> {
    let mut blocks = Vec::with_capacity(ops.len());
    let mut at = 0;
    for &o in ops {
        let n = func.ops[o].text.lines().count().max(1);
        let mut end = at;
        for _ in 0..n {
            end += body[end..].find('\n')? + 1;
        }
        blocks.push((o, &body[at..end]));
        at = end;
    }
    Some((blocks, &body[at..]))
}

/// The search module: the region once, each edited op followed by its edits
/// and a chain of selects that passes the original on unless the selector
/// names one of its edits.
pub(super) fn selector_module(
    func: &parity_mlir::Function,
    head: &str,
    sig: &str,
    blocks: &[(usize, &str)],
    ret: &str,
    edits: &[Edit],
) -> Result<String, BisectError> {
    let mut out = String::from(head);
    let params = "%parity_sel: tensor<i32>, %parity_scale: tensor<f32>";
    let sig = if sig.contains("@repair()") {
        sig.replacen("@repair(", &format!("@repair({params}"), 1)
    } else {
        sig.replacen("@repair(", &format!("@repair({params}, "), 1)
    };
    out.push_str(&sig);
    let ind = "    ";
    for &(o, t) in blocks {
        // Edits of this op, and edits at several sites one of whose other
        // sites this is (with its index among them).
        let mine: Vec<(usize, &Edit, Option<usize>)> = edits
            .iter()
            .enumerate()
            .filter_map(|(k, e)| match &e.change {
                _ if e.op == o => Some((k, e, None)),
                edits::Change::Sites { others, .. } => others
                    .iter()
                    .position(|s| s.op == o)
                    .map(|i| (k, e, Some(i))),
                _ => None,
            })
            .collect();
        if mine.is_empty() {
            out.push_str(t);
            continue;
        }
        let t = t.trim_end_matches('\n');
        let name =
            text::result_name(t).ok_or_else(|| emitted("an edited op without a single result"))?;
        let ty = &func.values[func.ops[o].results[0]].ty.text;
        let p = text::plain(name);
        let orig = format!("%parity_o{p}");
        let _ = writeln!(
            out,
            "{ind}{}",
            text::rename_result(t, &orig).ok_or_else(|| emitted("renaming"))?
        );
        let shape = ty
            .strip_prefix("tensor<")
            .and_then(|t| t.rsplit_once('x'))
            .map_or(String::new(), |(dims, _)| format!("{dims}x"));
        let (ity, pty) = (format!("tensor<{shape}i32>"), format!("tensor<{shape}i1>"));
        let selb = format!("%parity_sel_{p}");
        let _ = writeln!(
            out,
            "{ind}{selb} = \"stablehlo.broadcast_in_dim\"(%parity_sel) <{{broadcast_dimensions = array<i64>}}> : (tensor<i32>) -> {ity}"
        );
        let mut current = orig.clone();
        for (i, &(k, e, site)) in mine.iter().enumerate() {
            // Another site of an edit gets names of its own.
            let tag = match site {
                Some(j) => format!("{k}_{}", j + 2),
                None => k.to_string(),
            };
            let stem = format!("%parity_h{tag}");
            let result = format!("%parity_e{tag}");
            let names = edits::Names {
                result: &result,
                orig: &orig,
                scale: "%parity_scale",
                stem: &stem,
                indent: ind,
            };
            let r = match (&e.change, site) {
                (edits::Change::Sites { others, .. }, Some(j)) => {
                    let mut lines = String::new();
                    for h in &others[j].helpers {
                        let _ = writeln!(lines, "{ind}{}", h.replace(edits::STEM, &stem));
                    }
                    let body = text::rename_result(&others[j].text, &result)
                        .ok_or_else(|| emitted("renaming another site's op"))?
                        .replace(edits::STEM, &stem);
                    let _ = writeln!(lines, "{ind}{body}");
                    edits::Rendered {
                        lines,
                        value: result.clone(),
                    }
                }
                _ => e
                    .render(t, ty, &names)
                    .ok_or_else(|| emitted("rendering an edit"))?,
            };
            out.push_str(&r.lines);
            // The predicate as a tensor of the value's shape, compared
            // elementwise inside the dispatch: a scalar predicate per edit
            // would be computed on the host and passed as a push constant,
            // and a dispatch fusing a few dozen of them exceeds the
            // runtime's limit (64).
            let _ = writeln!(
                out,
                "{ind}%parity_k{tag} = \"stablehlo.constant\"() <{{value = dense<{k}> : {ity}}}> : () -> {ity}"
            );
            let _ = writeln!(
                out,
                "{ind}%parity_p{tag} = \"stablehlo.compare\"({selb}, %parity_k{tag}) <{{comparison_direction = #stablehlo<comparison_direction EQ>}}> : ({ity}, {ity}) -> {pty}"
            );
            let next = if i + 1 == mine.len() {
                name.to_string()
            } else {
                format!("%parity_s{tag}")
            };
            let _ = writeln!(
                out,
                "{ind}{next} = \"stablehlo.select\"(%parity_p{tag}, {}, {current}) : ({pty}, {ty}, {ty}) -> {ty}",
                r.value
            );
            current = next;
        }
    }
    out.push_str(ret);
    out.push_str("}\n");
    Ok(out)
}

/// Splits the emitted module into (text before the function, its signature
/// line, its body lines through the `func.return`).
pub(super) fn split_function(text: &str) -> Option<(&str, &str, &str)> {
    let sig_start = text.find("  func.func public @repair(")?;
    let sig_end = sig_start + text[sig_start..].find('\n')? + 1;
    let body_end = sig_end + text[sig_end..].rfind("\n  }\n")? + 1;
    Some((
        &text[..sig_start],
        &text[sig_start..sig_end],
        &text[sig_end..body_end + "  }\n".len()],
    ))
}
