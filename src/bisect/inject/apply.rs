//! Applying one injected edit to the module text, and finding the answers
//! in the faulty function.

use super::{Answer, FaultKind, InjectError, Injected, Site};
use crate::bisect::edits::{self, text, AfterOp, Change, Names};
use crate::bisect::measure::loc_label;

/// The faulty module text and its answers.
pub(super) fn apply(
    module_text: &str,
    kind: FaultKind,
    site: &Site,
) -> Result<Injected, InjectError> {
    let func = site.func;
    let e = &site.edit;
    let op = &func.ops[e.op];
    let loc = loc_label(&op.loc);
    let broken = |why: String| InjectError::Broken {
        kind,
        site: format!("#{} {} at {loc} in @{}", e.op, op.name, func.name),
        why,
    };
    // The op's lines in the module text.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(module_text.match_indices('\n').map(|(i, _)| i + 1))
        .chain(std::iter::once(module_text.len()))
        .collect();
    let n = op.text.lines().count().max(1);
    let (Some(&start), Some(&end)) = (starts.get(op.line - 1), starts.get(op.line - 1 + n)) else {
        return Err(broken("the op's lines are not in the text".into()));
    };
    let block = &module_text[start..end];
    if !block.contains(text::first_line(&op.text)) {
        return Err(broken("the op's text is not at its line".into()));
    }
    let indent: String = block.chars().take_while(|c| *c == ' ').collect();
    let name = text::result_name(&op.text)
        .ok_or_else(|| broken("not a single-result op".into()))?
        .to_string();
    let ty = func.values[op.results[0]].ty.text.clone();
    let stem = "%parity_inj";
    let (replacement, tail_rename) = match &e.change {
        Change::Rewrite { .. } => {
            let r = e
                .render(
                    &op.text,
                    &ty,
                    &Names {
                        result: &name,
                        orig: &name,
                        scale: "",
                        stem,
                        indent: &indent,
                    },
                )
                .ok_or_else(|| broken("cannot render".into()))?;
            (r.lines, None)
        }
        // The injector makes common confusions only (edits::Width::Common).
        Change::Combine { .. } | Change::Sites { .. } => {
            return Err(broken("a wide-catalogue edit".into()))
        }
        Change::After(_) => {
            let orig = format!("{stem}_o");
            let renamed =
                text::rename_result(&op.text, &orig).ok_or_else(|| broken("rename".into()))?;
            let scale = format!("{stem}_s");
            let mut lines = format!("{indent}{renamed}\n");
            lines.push_str(&format!(
                "{indent}{scale} = \"stablehlo.constant\"() <{{value = dense<{:.9e}> : tensor<f32>}}> : () -> tensor<f32> {}\n",
                site.value,
                text::location(&op.text)
            ));
            let r = e
                .render(
                    &op.text,
                    &ty,
                    &Names {
                        result: &name,
                        orig: &orig,
                        scale: &scale,
                        stem,
                        indent: &indent,
                    },
                )
                .ok_or_else(|| broken("cannot render".into()))?;
            lines.push_str(&r.lines);
            (lines, None)
        }
        Change::Bypass(operand) => (String::new(), Some(operand.clone())),
    };
    let mut faulty = String::with_capacity(module_text.len() + replacement.len());
    faulty.push_str(&module_text[..start]);
    faulty.push_str(&replacement);
    let rest = &module_text[end..];
    match &tail_rename {
        Some(operand) => {
            // Uses of the deleted op's result, up to the function's end.
            let fn_end = rest.find("\n  })").map_or(rest.len(), |i| i + 1);
            faulty.push_str(&text::rename_uses(&rest[..fn_end], &name, operand));
            faulty.push_str(&rest[fn_end..]);
        }
        None => faulty.push_str(rest),
    }
    // Answers, by result name in the faulty function.
    let parsed = parity_mlir::parse(&faulty)
        .map_err(|e| broken(format!("the faulty text does not parse: {e}")))?;
    let ffunc = parsed
        .function(&func.name)
        .ok_or_else(|| broken("the function is gone".into()))?;
    let index_of = |ssa: &str| ffunc.value_by_name(ssa).and_then(|v| ffunc.op_of(v));
    let name_of = |o: usize| text::result_name(&func.ops[o].text).map(str::to_string);
    let constant = edits::constant_ops(func);
    let (names, why): (Vec<String>, &str) = match (kind, &e.change) {
        (FaultKind::WrongConstant, _) => (
            name_of(e.named).into_iter().collect(),
            "the constant's only consumer: a wrong constant is named where it acts (the \
             constant is not an operation of the region)",
        ),
        (FaultKind::MissingOp, Change::Bypass(operand)) => {
            let mut v = vec![operand.clone()];
            // The deleted op's one user: the missing op sat on the edge
            // between its operand's producer and that user.
            let short = op.name.trim_start_matches("stablehlo.");
            let missing = match short {
                "negate" => AfterOp::Negate,
                "add" | "subtract" => AfterOp::Offset,
                _ => AfterOp::Scale,
            };
            let producer = func.value_by_name(operand).and_then(|v| func.op_of(v));
            // The producer's places skip the deleted op (its only user).
            let chain = producer.map_or_else(Vec::new, |p| {
                crate::bisect::edits::downstream_places(func, p, missing)
            });
            for u in chain
                .into_iter()
                .skip(1)
                .chain(crate::bisect::edits::downstream_places(func, e.op, missing))
            {
                v.extend(name_of(u));
            }
            (
                v,
                "the missing op's place: the op whose result it should have transformed, or \
                 the op that should have read its result, through broadcasts, reshapes and \
                 transposes, which commute with it (one edge, several names)",
            )
        }
        // An exp computing a constant (a timing signal's scales): constant
        // ops are not in bisect's regions, so, as for a wrong constant, the
        // fault is named where it acts.
        (FaultKind::NonFinite, _) if constant[e.op] => (
            edits::consumer(func, e.op, &constant, |_| true)
                .and_then(name_of)
                .into_iter()
                .collect(),
            "the first op using the constant the overflowing exp computes (constant-only ops \
             are not in bisect's regions: a constant is named where it acts)",
        ),
        (FaultKind::NonFinite, _) => (
            vec![name.clone(), format!("{stem}_x")],
            "the exp, where the infinity first appears from finite operands (nonfinite \
             evidence), or the injected add that feeds it the out-of-range value",
        ),
        (FaultKind::ExtraOp | FaultKind::Rounding, Change::After(_)) => (
            vec![name.clone()],
            "the added op (it carries the location of the op it follows)",
        ),
        (FaultKind::FlippedComparison | FaultKind::SwappedOperands, _) => {
            let mut v = vec![name.clone()];
            v.extend(crate::bisect::edits::decision_partner(func, e).and_then(name_of));
            (
                v,
                "the edited op, or the other op of a comparison and the select it alone feeds \
                 (one decision: flipping one is swapping the other)",
            )
        }
        _ => (vec![name.clone()], "the edited op"),
    };
    let answers: Vec<Answer> = names
        .iter()
        .filter_map(|n| index_of(n))
        .map(|o| Answer {
            op_index: o,
            op_name: ffunc.ops[o].name.clone(),
        })
        .collect();
    if answers.is_empty() {
        return Err(broken("no answer found in the faulty function".into()));
    }
    let what = match &e.change {
        Change::After(AfterOp::Scale) if kind == FaultKind::WrongConstant => {
            format!("{} scaled by {}", e.what, site.value)
        }
        _ => e.what.clone(),
    };
    Ok(Injected {
        text: faulty,
        function: func.name.clone(),
        kind,
        what: format!("#{} {} at {loc}: {what}", e.op, op.name),
        loc,
        answers,
        why: why.to_string(),
    })
}
