//! Repairs carried to another function: a case of the stage that runs
//! another function (other shapes) gets its own search module over its
//! own region, with each surviving edit moved op for op. An op maps to the
//! op of the same name and location when that pair is unique in both
//! functions; a constant to the one constant of the same value that feeds
//! the mapped consumer. The edit itself is the same change (an op appended
//! to the result, an operand bypassed by position), or the catalogue's edit
//! of the mapped op with the same kind and description, when exactly one
//! has them. A repair that cannot be carried is not judged there: never a
//! guessed counterpart.

use super::super::cases::CaseFeed;
use super::super::edits::{self, text, Change, Edit, Width};
use super::super::error::BisectError;
use super::super::probe::Prober;
use super::selector::selector_module;
use super::slice::{load_search, RepairSlice};
use super::Repair;
use parity_mlir::Function;
use parity_tensor::Tensor;
use std::collections::{BTreeSet, HashMap};

/// The search module of another case's function, with the carried edits.
pub(super) struct Carried {
    /// The module, loaded.
    pub loaded: parity_iree::LoadedModule,
    /// Its arguments (selector, scale, the case's region inputs).
    pub args: Vec<Tensor>,
    /// Per repair: its selector value there, or why it was not carried.
    pub selects: Vec<Result<i64, String>>,
}

/// An op's identity across functions: its name and its raw location with
/// the function's own name left out (JAX writes `jit(<function>)/` into
/// every location, and each case's function has its own name).
fn key(func: &Function, o: usize) -> (String, String) {
    (
        func.ops[o].name.clone(),
        without_word(&func.ops[o].loc.raw, &func.name),
    )
}

/// `text` without the whole-word occurrences of `word` (an identifier: not
/// inside a longer one).
fn without_word(text: &str, word: &str) -> String {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(word).filter(|_| !word.is_empty()) {
        let (before, after) = (&rest[..i], &rest[i + word.len()..]);
        out.push_str(before);
        let whole = !ident(before.chars().next_back()) && !ident(after.chars().next());
        if !whole {
            out.push_str(word);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A constant's value text: its first line without the result name, the
/// location and the shapes (a splat is the same value at every shape).
fn value_text(t: &str) -> String {
    let l = text::first_line(t);
    let l = l.split_once(" = ").map_or(l, |x| x.1);
    let l = l.split(" loc(").next().unwrap_or(l);
    let mut out = String::with_capacity(l.len());
    let mut parts = l.split("tensor<");
    out.push_str(parts.next().unwrap_or(""));
    for p in parts {
        out.push_str("tensor<");
        out.push_str(p.trim_start_matches(|c: char| c.is_ascii_digit() || c == 'x' || c == '?'));
    }
    out
}

/// Each op of `f` matched to the op of `g` with the same name and location
/// whose operands come from the matched ops (the same argument, the same
/// result of the matched producer; constants not compared: their values
/// are the shapes'), when exactly one op of `g` is such; else none.
fn counterparts(
    f: &Function,
    g: &Function,
    constant_f: &[bool],
    constant_g: &[bool],
) -> Vec<Option<usize>> {
    let mut by_key: HashMap<(String, String), Vec<usize>> = HashMap::new();
    for w in 0..g.ops.len() {
        by_key.entry(key(g, w)).or_default().push(w);
    }
    // Where a value comes from: an argument, or a result of an op.
    let source = |func: &Function, v: parity_mlir::ValueId| -> Option<(bool, usize, usize)> {
        if let Some(i) = func.args.iter().position(|&a| a == v) {
            return Some((true, i, 0));
        }
        let o = func.op_of(v)?;
        let r = func.ops[o].results.iter().position(|&x| x == v)?;
        Some((false, o, r))
    };
    let mut map: Vec<Option<usize>> = vec![None; f.ops.len()];
    for o in 0..f.ops.len() {
        let Some(cands) = by_key.get(&key(f, o)) else {
            continue;
        };
        let fits = |w: usize| {
            let (a, b) = (&f.ops[o].operands, &g.ops[w].operands);
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(&x, &y)| match (source(f, x), source(g, y)) {
                        (Some((true, i, _)), Some((true, j, _))) => i == j,
                        (Some((false, p, r)), Some((false, q, t))) => {
                            (constant_f[p] && constant_g[q]) || (map[p] == Some(q) && r == t)
                        }
                        _ => false,
                    })
        };
        let found: Vec<usize> = cands.iter().copied().filter(|&w| fits(w)).collect();
        if let [w] = found[..] {
            map[o] = Some(w);
        }
    }
    map
}

/// Builds and loads the search module of `case`'s function with `repairs`
/// (edits of `f`, from `edits_f` by their selector) carried over.
pub(super) fn carry(
    prober: &mut Prober,
    f: &Function,
    edits_f: &[Edit],
    repairs: &[Repair],
    case: &CaseFeed,
) -> Result<Carried, BisectError> {
    let g = case.program.func;
    let emitted = RepairSlice::emit(
        prober,
        g,
        case.feed.iter().map(|(v, _)| *v).collect(),
        case.target,
    )?;
    let info = &emitted.info;
    let parts = emitted.parts(g, "the repair search's slice of another case")?;
    let blocks = &parts.blocks;
    let mapping = Mapping::new(f, g, &info.ops, blocks);
    let mut carried: Vec<Edit> = Vec::new();
    let mut selects = Vec::new();
    for r in repairs {
        match mapping.edit(&edits_f[r.select as usize]) {
            Ok(x) => {
                selects.push(Ok(carried.len() as i64));
                carried.push(x);
            }
            Err(why) => selects.push(Err(why)),
        }
    }
    if carried.is_empty() {
        return Err(BisectError::EmittedText {
            what: "the repairs carried to another case",
            problem: format!(
                "none could be carried: {}",
                selects
                    .iter()
                    .filter_map(|s| s.as_ref().err().cloned())
                    .take(3)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        });
    }
    let module = selector_module(g, parts.head, parts.sig, blocks, parts.ret, &carried)?;
    let label = format!(
        "{}[repair search, carried to {}]",
        prober.source_name, g.name
    );
    let search = load_search(prober, g, &label, &module, info, &case.feed)?;
    Ok(Carried {
        loaded: search.loaded,
        args: search.args,
        selects,
    })
}

/// How `f`'s ops map to the other case's function `g`, within `g`'s slice.
struct Mapping<'a> {
    /// The failing case's function.
    f: &'a Function,
    /// The other case's function.
    g: &'a Function,
    /// `f`'s constant-only ops.
    constant_f: Vec<bool>,
    /// `g`'s constant-only ops.
    constant_g: Vec<bool>,
    /// `g`'s ops in the slice.
    in_slice: BTreeSet<usize>,
    /// The slice's op blocks in `g`.
    blocks: &'a [(usize, &'a str)],
    /// Each op of `f`'s counterpart in `g`, where unique.
    map: Vec<Option<usize>>,
}

impl<'a> Mapping<'a> {
    /// The mapping of `f` to `g`'s slice (`ops`, `blocks`).
    fn new(
        f: &'a Function,
        g: &'a Function,
        ops: &[usize],
        blocks: &'a [(usize, &'a str)],
    ) -> Self {
        let constant_f = edits::constant_ops(f);
        let constant_g = edits::constant_ops(g);
        let map = counterparts(f, g, &constant_f, &constant_g);
        Mapping {
            f,
            g,
            constant_f,
            constant_g,
            in_slice: ops.iter().copied().collect(),
            blocks,
            map,
        }
    }

    /// Op `o` of `f`'s counterpart in the slice, or why none.
    fn op(&self, o: usize) -> Result<usize, String> {
        match self.map[o] {
            Some(w) if self.in_slice.contains(&w) => Ok(w),
            Some(_) => Err(format!("#{o}'s counterpart is outside the region")),
            None => Err(format!(
                "#{o} {} has no unique counterpart in `{}` (same name, location and \
                 operands)",
                self.f.ops[o].name, self.g.name
            )),
        }
    }

    /// The edit `e` of `f` carried to `g`, or why it cannot be.
    fn edit(&self, e: &Edit) -> Result<Edit, String> {
        let named = self.op(e.named)?;
        let op = if e.op == e.named {
            named
        } else {
            self.constant(e.op, named)?
        };
        Ok(Edit {
            op,
            named,
            kind: e.kind,
            what: e.what.clone(),
            change: self.change(e, op, named)?,
        })
    }

    /// The constant of `g` with the same value as `f`'s constant op `c`
    /// that feeds `named`, when there is exactly one.
    fn constant(&self, c: usize, named: usize) -> Result<usize, String> {
        let (g, constant_g) = (self.g, &self.constant_g);
        let region_g = |k: usize| self.in_slice.contains(&k) && !constant_g[k];
        let want = value_text(&self.f.ops[c].text);
        let found: Vec<usize> = self
            .blocks
            .iter()
            .map(|&(o, _)| o)
            .filter(|&o| constant_g[o] && value_text(&g.ops[o].text) == want)
            .filter(|&o| edits::consumer(g, o, constant_g, region_g) == Some(named))
            .collect();
        match found[..] {
            [o] => Ok(o),
            _ => Err(format!("{} constants like #{c} there", found.len())),
        }
    }

    /// `e`'s change as it reads at `op` of `g`.
    fn change(&self, e: &Edit, op: usize, named: usize) -> Result<Change, String> {
        let (f, g) = (self.f, self.g);
        Ok(match &e.change {
            Change::After(a) => Change::After(*a),
            Change::Bypass(name) => {
                let i = f.ops[e.op]
                    .operands
                    .iter()
                    .position(|&v| &f.values[v].name == name)
                    .ok_or("a bypassed operand not found")?;
                let v = *g.ops[op].operands.get(i).ok_or("fewer operands there")?;
                Change::Bypass(g.values[v].name.clone())
            }
            _ => {
                // The catalogue's edit of the mapped op, by kind and text.
                let t = self
                    .blocks
                    .iter()
                    .find(|b| b.0 == op)
                    .map(|b| b.1)
                    .ok_or("the op is not in the slice")?;
                let named = self.constant_f[e.op].then_some(named);
                let same = |w| {
                    edits::edits_of(g, op, t, &self.constant_g, named, w)
                        .into_iter()
                        .filter(|x| x.kind == e.kind && x.what == e.what)
                        .collect::<Vec<_>>()
                };
                let mut found = same(Width::Common);
                if found.len() != 1 {
                    found = same(Width::Wide);
                }
                match found.len() {
                    1 => found.remove(0).change,
                    n => return Err(format!("{n} edits `{}` of the counterpart", e.what)),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::without_word;

    #[test]
    fn a_function_name_leaves_a_location_only_as_a_whole_word() {
        assert_eq!(without_word("jit(f)/affine/f_x", "f"), "jit()/affine/f_x");
        assert_eq!(
            without_word("jit(conv_c1)/conv_c1x/a", "conv_c1"),
            "jit()/conv_c1x/a"
        );
        assert_eq!(without_word("loc(unknown)", ""), "loc(unknown)");
    }

    #[test]
    fn a_splat_constant_has_one_value_text_at_every_shape() {
        let at = |shape: &str| {
            super::value_text(&format!(
                "%9 = \"stablehlo.constant\"() <{{value = dense<1.0> : tensor<{shape}f32>}}> : () -> tensor<{shape}f32> loc(unknown)"
            ))
        };
        assert_eq!(at("8x"), at("4x2x"));
        assert_eq!(at("8x"), at(""));
        assert_ne!(
            at("8x"),
            super::value_text(
                "%9 = \"stablehlo.constant\"() <{value = dense<2.0> : tensor<8xf32>}>"
            )
        );
    }
}
