//! Applying one injected edit to the module text, and finding the answers
//! in the faulty function.

use super::{Answer, FaultKind, InjectError, Injected, Site};
use crate::bisect::edits::{self, text, AfterOp, Change, Names};
use crate::bisect::measure::loc_label;
use parity_mlir::{Function, Op};

/// The stem of the names the injector adds (`%parity_inj_o`, `_s`, `_x`).
const STEM: &str = "%parity_inj";

/// The faulty module text and its answers.
pub(super) fn apply(
    module_text: &str,
    kind: FaultKind,
    site: &Site,
) -> Result<Injected, InjectError> {
    let at = At {
        kind,
        site,
        loc: loc_label(&site.func.ops[site.edit.op].loc),
    };
    let (start, end) = at.op_lines(module_text)?;
    let indent: String = module_text[start..end]
        .chars()
        .take_while(|c| *c == ' ')
        .collect();
    let name = text::result_name(&at.op().text)
        .ok_or_else(|| at.broken("not a single-result op"))?
        .to_string();
    let (replacement, tail_rename) = at.replacement(&name, &indent)?;
    let faulty = splice(
        module_text,
        (start, end),
        &replacement,
        tail_rename
            .as_deref()
            .map(|operand| (name.as_str(), operand)),
    );
    let (names, why) = at.answer_names(&name);
    let answers = at.answers(&faulty, &names)?;
    let e = &site.edit;
    let what = match &e.change {
        Change::After(AfterOp::Scale) if kind == FaultKind::WrongConstant => {
            format!("{} scaled by {}", e.what, site.value)
        }
        _ => e.what.clone(),
    };
    Ok(Injected {
        text: faulty,
        function: site.func.name.clone(),
        kind,
        what: format!("#{} {} at {}: {what}", e.op, at.op().name, at.loc),
        loc: at.loc,
        answers,
        why: why.to_string(),
    })
}

/// The module text with `start..end` replaced by `replacement`; with
/// `rename` (the deleted op's result, and the operand taking its place), the
/// uses of that result are renamed up to the function's end.
fn splice(
    module_text: &str,
    (start, end): (usize, usize),
    replacement: &str,
    rename: Option<(&str, &str)>,
) -> String {
    let mut faulty = String::with_capacity(module_text.len() + replacement.len());
    faulty.push_str(&module_text[..start]);
    faulty.push_str(replacement);
    let rest = &module_text[end..];
    match rename {
        Some((name, operand)) => {
            // Uses of the deleted op's result, up to the function's end.
            let fn_end = rest.find("\n  })").map_or(rest.len(), |i| i + 1);
            faulty.push_str(&text::rename_uses(&rest[..fn_end], name, operand));
            faulty.push_str(&rest[fn_end..]);
        }
        None => faulty.push_str(rest),
    }
    faulty
}

/// One site being applied: its kind, the site, and the edited op's location label.
struct At<'s, 'm> {
    kind: FaultKind,
    site: &'s Site<'m>,
    loc: String,
}

impl<'m> At<'_, 'm> {
    /// The function edited.
    fn func(&self) -> &'m Function {
        self.site.func
    }

    /// The op edited.
    fn op(&self) -> &'m Op {
        &self.site.func.ops[self.site.edit.op]
    }

    /// An error naming the site.
    fn broken(&self, why: impl Into<String>) -> InjectError {
        InjectError::Broken {
            kind: self.kind,
            site: format!(
                "#{} {} at {} in @{}",
                self.site.edit.op,
                self.op().name,
                self.loc,
                self.func().name
            ),
            why: why.into(),
        }
    }

    /// The byte range of the op's lines in the module text.
    fn op_lines(&self, module_text: &str) -> Result<(usize, usize), InjectError> {
        let op = self.op();
        let starts: Vec<usize> = std::iter::once(0)
            .chain(module_text.match_indices('\n').map(|(i, _)| i + 1))
            .chain(std::iter::once(module_text.len()))
            .collect();
        let n = op.text.lines().count().max(1);
        let (Some(&start), Some(&end)) = (starts.get(op.line - 1), starts.get(op.line - 1 + n))
        else {
            return Err(self.broken("the op's lines are not in the text"));
        };
        if !module_text[start..end].contains(text::first_line(&op.text)) {
            return Err(self.broken("the op's text is not at its line"));
        }
        Ok((start, end))
    }

    /// The lines that replace the op's, and, for a deleted op, the operand
    /// that takes its result's place.
    fn replacement(
        &self,
        name: &str,
        indent: &str,
    ) -> Result<(String, Option<String>), InjectError> {
        let (op, e) = (self.op(), &self.site.edit);
        let ty = &self.func().values[op.results[0]].ty.text;
        let render = |orig: &str, scale: &str| {
            let names = Names {
                result: name,
                orig,
                scale,
                stem: STEM,
                indent,
            };
            e.render(&op.text, ty, &names)
                .ok_or_else(|| self.broken("cannot render"))
        };
        match &e.change {
            Change::Rewrite { .. } => Ok((render(name, "")?.lines, None)),
            // The injector makes common confusions only (edits::Width::Common).
            Change::Combine { .. } | Change::Sites { .. } => {
                Err(self.broken("a wide-catalogue edit"))
            }
            Change::After(_) => {
                let orig = format!("{STEM}_o");
                let renamed =
                    text::rename_result(&op.text, &orig).ok_or_else(|| self.broken("rename"))?;
                let scale = format!("{STEM}_s");
                let mut lines = format!("{indent}{renamed}\n");
                lines.push_str(&format!(
                    "{indent}{scale} = \"stablehlo.constant\"() <{{value = dense<{:.9e}> : tensor<f32>}}> : () -> tensor<f32> {}\n",
                    self.site.value,
                    text::location(&op.text)
                ));
                lines.push_str(&render(&orig, &scale)?.lines);
                Ok((lines, None))
            }
            Change::Bypass(operand) => Ok((String::new(), Some(operand.clone()))),
        }
    }

    /// The result names (in the edited function) bisect may name, and why.
    fn answer_names(&self, name: &str) -> (Vec<String>, &'static str) {
        let (func, e) = (self.func(), &self.site.edit);
        let name_of = |o: usize| text::result_name(&func.ops[o].text).map(str::to_string);
        let constant = edits::constant_ops(func);
        match (self.kind, &e.change) {
            (FaultKind::WrongConstant, _) => (
                name_of(e.named).into_iter().collect(),
                "the constant's only consumer: a wrong constant is named where it acts (the \
                 constant is not an operation of the region)",
            ),
            (FaultKind::MissingOp, Change::Bypass(operand)) => (
                self.missing_op_names(operand),
                "the missing op's place: the op whose result it should have transformed, or \
                 the op that should have read its result, through broadcasts, reshapes and \
                 transposes, which commute with it (one edge, several names)",
            ),
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
                vec![name.to_string(), format!("{STEM}_x")],
                "the exp, where the infinity first appears from finite operands (nonfinite \
                 evidence), or the injected add that feeds it the out-of-range value",
            ),
            (FaultKind::ExtraOp | FaultKind::Rounding, Change::After(_)) => (
                vec![name.to_string()],
                "the added op (it carries the location of the op it follows)",
            ),
            (FaultKind::FlippedComparison | FaultKind::SwappedOperands, _) => {
                let mut v = vec![name.to_string()];
                v.extend(edits::decision_partner(func, e).and_then(name_of));
                (
                    v,
                    "the edited op, or the other op of a comparison and the select it alone feeds \
                     (one decision: flipping one is swapping the other)",
                )
            }
            _ => (vec![name.to_string()], "the edited op"),
        }
    }

    /// A deleted op's answers: `operand`, then the places on the edge it sat on.
    fn missing_op_names(&self, operand: &str) -> Vec<String> {
        let (func, op, e) = (self.func(), self.op(), &self.site.edit);
        let name_of = |o: usize| text::result_name(&func.ops[o].text).map(str::to_string);
        let mut v = vec![operand.to_string()];
        // The deleted op's one user: the missing op sat on the edge
        // between its operand's producer and that user.
        let missing = match op.name.trim_start_matches("stablehlo.") {
            "negate" => AfterOp::Negate,
            "add" | "subtract" => AfterOp::Offset,
            _ => AfterOp::Scale,
        };
        let producer = func.value_by_name(operand).and_then(|v| func.op_of(v));
        // The producer's places skip the deleted op (its only user).
        let chain = producer.map_or_else(Vec::new, |p| edits::downstream_places(func, p, missing));
        for u in chain
            .into_iter()
            .skip(1)
            .chain(edits::downstream_places(func, e.op, missing))
        {
            v.extend(name_of(u));
        }
        v
    }

    /// The ops of the faulty function that hold `names`.
    fn answers(&self, faulty: &str, names: &[String]) -> Result<Vec<Answer>, InjectError> {
        let parsed = parity_mlir::parse(faulty)
            .map_err(|e| self.broken(format!("the faulty text does not parse: {e}")))?;
        let ffunc = parsed
            .function(&self.func().name)
            .ok_or_else(|| self.broken("the function is gone"))?;
        let answers: Vec<Answer> = names
            .iter()
            .filter_map(|n| ffunc.value_by_name(n).and_then(|v| ffunc.op_of(v)))
            .map(|o| Answer {
                op_index: o,
                op_name: ffunc.ops[o].name.clone(),
            })
            .collect();
        if answers.is_empty() {
            return Err(self.broken("no answer found in the faulty function"));
        }
        Ok(answers)
    }
}
