//! Enumerating the edits of one operation: one method per family of
//! mistakes, in the order the search and the injector see them.

use super::text::{self, array_ints, set_array_ints};
use super::{binary_swaps, dims, unary_swaps, AfterOp, Change, Edit, EditKind, Width, STEM};
use parity_mlir::{Function, Op};

/// Every edit of op `o` whose text (as it stands where it is edited, operand
/// names included) is `op_text`, in the catalogue of `width` (the wide one
/// holds only what the common one does not). `constant[k]`: op k computes a
/// constant only; `named` is where a constant's edit is reported (its consumer).
pub fn edits_of(
    func: &Function,
    o: usize,
    op_text: &str,
    constant: &[bool],
    named: Option<usize>,
    width: Width,
) -> Vec<Edit> {
    let op = &func.ops[o];
    let (Some(&r), 1) = (op.results.first(), op.results.len()) else {
        return Vec::new();
    };
    if text::result_name(op_text).is_none() {
        return Vec::new();
    }
    let rty = func.values[r].ty.text.clone();
    let mut e = Enumerator {
        func,
        o,
        op,
        op_text,
        line: text::first_line(op_text),
        short: op.name.trim_start_matches("stablehlo."),
        float: text::float_element(&rty),
        rty,
        r,
        out: Vec::new(),
    };
    if width == Width::Wide {
        let consts = if constant[o] {
            named.map_or_else(Vec::new, |n| e.wide_constants(n))
        } else {
            e.wrong_ops(width);
            e.conv_layouts();
            Vec::new()
        };
        e.out.extend(consts);
        return e.out;
    }
    if constant[o] {
        if let Some(n) = named {
            e.scaled_constant(n);
        }
        return e.out;
    }
    e.swapped_operands();
    e.comparisons();
    e.wrong_ops(width);
    e.dimensions();
    e.shifted_slice();
    e.moved_pad();
    e.convert_offsets();
    e.bypasses(constant);
    e.missing_after();
    e.out
}

/// One op's edits as they are enumerated.
struct Enumerator<'a> {
    /// The function.
    func: &'a Function,
    /// The op's index.
    o: usize,
    /// The op.
    op: &'a Op,
    /// Its text where it is edited.
    op_text: &'a str,
    /// Its first line (attributes and operands).
    line: &'a str,
    /// Its name without `stablehlo.`.
    short: &'a str,
    /// Whether its result is a float.
    float: bool,
    /// Its result type.
    rty: String,
    /// Its result value.
    r: usize,
    /// The edits so far.
    out: Vec<Edit>,
}

impl<'a> Enumerator<'a> {
    /// Adds an edit of the op (none when it would not change its text).
    fn push(&mut self, kind: EditKind, what: String, change: Change) {
        if let Change::Rewrite { text: t, .. } = &change {
            if t == self.op_text {
                return;
            }
        }
        self.out.push(Edit {
            op: self.o,
            named: self.o,
            kind,
            what,
            change,
        });
    }

    /// The op with its first line replaced.
    fn rewrite(&self, new_first: String) -> Change {
        Change::Rewrite {
            helpers: Vec::new(),
            text: self.op_text.replacen(self.line, &new_first, 1),
        }
    }

    /// The op's operands' names in its text.
    fn names(&self) -> Vec<&'a str> {
        text::operands(self.line).unwrap_or_default()
    }

    /// A value's shape.
    fn shape(&self, v: usize) -> Option<Vec<usize>> {
        self.func.values[v].ty.shape()
    }

    /// Wide: a splat integer constant off by a few, a mask band's edge
    /// moved (both reported on `named`, the consumer).
    fn wide_constants(&self, named: usize) -> Vec<Edit> {
        let (o, line, op_text, rty) = (self.o, self.line, self.op_text, &self.rty);
        let mut consts = Vec::new();
        if let Some(k) = splat_int(line, rty) {
            for d in [-4i64, -3, -2, -1, 1, 2, 3, 4] {
                // Never a zero: an integer division by it is not defined,
                // and every edit runs on every search run.
                let to = k + d;
                if to == 0 {
                    continue;
                }
                consts.push(Edit {
                    op: o,
                    named,
                    kind: EditKind::ConstantOffset,
                    what: format!(
                        "constant {} = {k} should be {to}",
                        text::result_name(op_text).unwrap_or("")
                    ),
                    change: self.rewrite(line.replacen(
                        &format!("dense<{k}>"),
                        &format!("dense<{to}>"),
                        1,
                    )),
                });
            }
        }
        consts.extend(super::band::band_edits(o, op_text, rty, named));
        consts
    }

    /// Wide: a convolution's input or kernel read in another layout of the
    /// same type (a square kernel's height and width swapped).
    fn conv_layouts(&mut self) {
        if self.short != "convolution" {
            return;
        }
        let shape = |i: usize| self.op.operands.get(i).and_then(|&v| self.shape(v));
        let mut found = Vec::new();
        for (i, s) in [(0, shape(0)), (1, shape(1))] {
            found.extend(s.map_or_else(Vec::new, |s| dims::convs(self.line, i, &s)));
        }
        for (l, what) in found {
            let change = self.rewrite(l);
            self.push(EditKind::WrongDims, what, change);
        }
    }

    /// Only splat float constants, fitted; reported on their consumer.
    fn scaled_constant(&mut self, named: usize) {
        if let (Some(v), true) = (text::splat_value(self.line), self.float) {
            self.out.push(Edit {
                op: self.o,
                named,
                kind: EditKind::ScaleConstant,
                what: format!(
                    "constant {} = {v:e}",
                    text::result_name(self.op_text).unwrap_or("")
                ),
                change: Change::After(AfterOp::Scale),
            });
        }
    }

    /// Two operands swapped (of one type).
    fn swapped_operands(&mut self) {
        let op = self.op;
        let ty = |i: usize| op.operands.get(i).map(|&v| &self.func.values[v].ty.text);
        let swap = match self.short {
            "subtract" | "divide" | "power" | "remainder" | "atan2" | "compare" => Some((0, 1)),
            "select" => Some((1, 2)),
            _ => None,
        };
        let Some((i, j)) = swap.filter(|(i, j)| ty(*i).is_some() && ty(*i) == ty(*j)) else {
            return;
        };
        let names = self.names();
        if names.len() > j && names[i] != names[j] {
            let mut swapped = names.clone();
            swapped.swap(i, j);
            if let Some(l) = text::set_operands(self.line, &swapped) {
                let what = format!("swap operands {i} and {j} ({}, {})", names[i], names[j]);
                let change = self.rewrite(l);
                self.push(EditKind::SwapOperands, what, change);
            }
        }
    }

    /// Every other comparison direction.
    fn comparisons(&mut self) {
        if self.short != "compare" {
            return;
        }
        let dirs = ["EQ", "NE", "LT", "LE", "GT", "GE"];
        let line = self.line;
        let Some(cur) = dirs
            .iter()
            .find(|d| line.contains(&format!("comparison_direction {d}>")))
        else {
            return;
        };
        for d in dirs.iter().filter(|d| *d != cur) {
            let l = line.replacen(
                &format!("comparison_direction {cur}>"),
                &format!("comparison_direction {d}>"),
                1,
            );
            let change = self.rewrite(l);
            self.push(
                EditKind::Comparison,
                format!("comparison {cur} -> {d}"),
                change,
            );
        }
    }

    /// Another elementwise op of the same arity.
    fn wrong_ops(&mut self, width: Width) {
        for (kind, what, l) in wrong_ops(self.func, self.o, self.line, self.float, width) {
            let change = self.rewrite(l);
            self.push(kind, what, change);
        }
    }

    /// Other transpose, broadcast, reduce or dot_general dimensions giving
    /// the same result type.
    fn dimensions(&mut self) {
        let (op, line) = (self.op, self.line);
        let rshape = self.shape(self.r);
        let mut found: Vec<(String, String)> = Vec::new();
        match (
            self.short,
            op.operands.first().and_then(|&v| self.shape(v)),
            &rshape,
        ) {
            ("transpose", Some(s), Some(rs)) => {
                if let Some(p) = array_ints(line, "permutation") {
                    for alt in dims::transposes(&s, rs, &p) {
                        found.push((
                            format!("permutation {p:?} -> {alt:?}"),
                            set_array_ints(line, "permutation", &alt),
                        ));
                    }
                }
            }
            ("broadcast_in_dim", Some(s), Some(rs)) => {
                if let Some(d) = array_ints(line, "broadcast_dimensions") {
                    for alt in dims::broadcasts(&s, rs, &d) {
                        found.push((
                            format!("broadcast dimensions {d:?} -> {alt:?}"),
                            set_array_ints(line, "broadcast_dimensions", &alt),
                        ));
                    }
                }
            }
            ("reduce", Some(s), Some(rs)) => {
                if let Some(d) = array_ints(line, "dimensions") {
                    for alt in dims::reduces(&s, rs, &d) {
                        found.push((
                            format!("reduce dimensions {d:?} -> {alt:?}"),
                            set_array_ints(line, "dimensions", &alt),
                        ));
                    }
                }
            }
            ("dot_general", Some(ls), Some(rs)) => {
                let rhs = op.operands.get(1).and_then(|&v| self.shape(v));
                let key = |k: &str| text::ints(line, &format!("{k} = [")).unwrap_or_default();
                if let Some(rhs) = rhs {
                    let d = (
                        key("lhs_batching_dimensions"),
                        key("rhs_batching_dimensions"),
                        key("lhs_contracting_dimensions"),
                        key("rhs_contracting_dimensions"),
                    );
                    for (lc, rc) in dims::dots(&ls, &rhs, rs, &d) {
                        let l = text::set_ints(line, "lhs_contracting_dimensions = [", &lc);
                        found.push((
                            format!(
                                "contracting dimensions {:?}x{:?} -> {lc:?}x{rc:?}",
                                d.2, d.3
                            ),
                            text::set_ints(&l, "rhs_contracting_dimensions = [", &rc),
                        ));
                    }
                }
            }
            _ => {}
        }
        for (what, l) in found {
            let change = self.rewrite(l);
            self.push(EditKind::WrongDims, what, change);
        }
    }

    /// An off-by-one slice (window kept).
    fn shifted_slice(&mut self) {
        if self.short != "slice" {
            return;
        }
        let line = self.line;
        let (Some(s), Some(start), Some(limit)) = (
            self.op.operands.first().and_then(|&v| self.shape(v)),
            array_ints(line, "start_indices"),
            array_ints(line, "limit_indices"),
        ) else {
            return;
        };
        for d in 0..start.len().min(s.len()) {
            for delta in [-1i64, 1] {
                let (a, b) = (start[d] + delta, limit[d] + delta);
                if a >= 0 && b <= s[d] as i64 {
                    let (mut s2, mut l2) = (start.clone(), limit.clone());
                    s2[d] = a;
                    l2[d] = b;
                    let l = set_array_ints(
                        &set_array_ints(line, "start_indices", &s2),
                        "limit_indices",
                        &l2,
                    );
                    let change = self.rewrite(l);
                    self.push(
                        EditKind::SliceShift,
                        format!("slice dim {d} shifted by {delta:+}"),
                        change,
                    );
                }
            }
        }
    }

    /// Padding moved between a dimension's ends (total kept).
    fn moved_pad(&mut self) {
        if self.short != "pad" {
            return;
        }
        let line = self.line;
        let (Some(low), Some(high)) = (
            array_ints(line, "edge_padding_low"),
            array_ints(line, "edge_padding_high"),
        ) else {
            return;
        };
        for d in 0..low.len().min(high.len()) {
            // A causal pad written symmetric, an off-by-one: shape kept.
            let total = (low[d] + high[d]).clamp(0, 8);
            for delta in (1..=total).flat_map(|k| [-k, k]) {
                if low[d] + delta < 0 || high[d] - delta < 0 {
                    continue;
                }
                let (mut l2, mut h2) = (low.clone(), high.clone());
                l2[d] += delta;
                h2[d] -= delta;
                let l = set_array_ints(
                    &set_array_ints(line, "edge_padding_low", &l2),
                    "edge_padding_high",
                    &h2,
                );
                let change = self.rewrite(l);
                self.push(
                    EditKind::PadMove,
                    format!("pad dim {d}: low {delta:+}, high {:+}", -delta),
                    change,
                );
            }
        }
    }

    /// Off-by-k integers becoming floats (a position read at the wrong
    /// offset, e.g. a rope position taken after a cache advanced it).
    fn convert_offsets(&mut self) {
        if self.short != "convert" || !self.float {
            return;
        }
        let names = self.names();
        let (Some(&x), Some(xn)) = (self.op.operands.first(), names.first().copied()) else {
            return;
        };
        let xt = self.func.values[x].ty.text.clone();
        if !text::integer_element(&xt) {
            return;
        }
        let line = self.line;
        for k in [-4i64, -3, -2, -1, 1, 2, 3, 4] {
            let helpers = vec![
                format!("{STEM}_k = \"stablehlo.constant\"() <{{value = dense<{k}> : {xt}}}> : () -> {xt}"),
                format!("{STEM}_x = \"stablehlo.add\"({xn}, {STEM}_k) : ({xt}, {xt}) -> {xt}"),
            ];
            if let Some(l) = text::set_operands(line, &[&format!("{STEM}_x")]) {
                let change = Change::Rewrite {
                    helpers,
                    text: self.op_text.replacen(line, &l, 1),
                };
                self.push(
                    EditKind::ConvertOffset,
                    format!("its integer operand {xn} offset by {k:+}"),
                    change,
                );
            }
        }
    }

    /// The op bypassed (an extra op in the port): an operand of the
    /// result's type, not a constant.
    fn bypasses(&mut self, constant: &[bool]) {
        let names = self.names();
        let mut seen: Vec<&str> = Vec::new();
        for (i, &v) in self.op.operands.iter().enumerate() {
            let Some(&name) = names.get(i) else { continue };
            let is_const = self.func.op_of(v).is_some_and(|p| constant[p]);
            if self.func.values[v].ty.text == self.rty && !is_const && !seen.contains(&name) {
                seen.push(name);
                self.push(
                    EditKind::Bypass,
                    format!("bypassed: operand {i} ({name}) used instead of its result"),
                    Change::Bypass(name.to_string()),
                );
            }
        }
    }

    /// A missing op after this one: a negate, a scale, an offset.
    fn missing_after(&mut self) {
        if !self.float {
            return;
        }
        for (kind, what, after) in [
            (EditKind::InsertNegate, "negated", AfterOp::Negate),
            (EditKind::InsertScale, "scaled", AfterOp::Scale),
            (EditKind::InsertOffset, "offset", AfterOp::Offset),
        ] {
            self.push(kind, what.into(), Change::After(after));
        }
    }
}

/// Another elementwise op of the same arity (same operand and result
/// types): the kind, what it is, and the op's new first line.
fn wrong_ops(
    func: &Function,
    o: usize,
    line: &str,
    float: bool,
    width: Width,
) -> Vec<(EditKind, String, String)> {
    let op = &func.ops[o];
    let Some(&r) = op.results.first() else {
        return Vec::new();
    };
    let rty = &func.values[r].ty.text;
    let short = op.name.trim_start_matches("stablehlo.");
    let all_same = op.operands.iter().all(|&v| func.values[v].ty.text == *rty);
    if !all_same || op.has_regions {
        return Vec::new();
    }
    let (kind, tos) = match op.operands.len() {
        2 => (EditKind::WrongBinary, binary_swaps(short, float, width)),
        1 => (EditKind::WrongUnary, unary_swaps(short, float, width)),
        _ => return Vec::new(),
    };
    tos.into_iter()
        .map(|to| {
            (
                kind,
                format!("{short} -> {to}"),
                text::set_op_name(line, &op.name, &format!("stablehlo.{to}")),
            )
        })
        .collect()
}

/// The value of a splat integer constant (`dense<4> : tensor<i32>`).
fn splat_int(line: &str, ty: &str) -> Option<i64> {
    if !line.contains("\"stablehlo.constant\"") || !text::integer_element(ty) {
        return None;
    }
    line.split("dense<")
        .nth(1)?
        .split('>')
        .next()?
        .trim()
        .parse()
        .ok()
}
