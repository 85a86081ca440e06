//! Splitting a module into one standalone module per public function, for
//! per-function compiled artifacts: each holds the function, every function it
//! references (transitively), the module's other top-level operations
//! (globals and the like) and the module's own properties, attributes and
//! location, all as the exact text of the input.

use std::collections::{BTreeSet, HashMap};

use crate::cursor::Cursor;
use crate::error::MlirError;
use crate::func_syntax::func_name;

/// A module in generic form, cut into its top-level operations.
#[derive(Debug, Clone)]
pub struct SplitModule<'a> {
    /// The module operation up to its first top-level operation (name, properties, `({`).
    head: &'a str,
    /// The module operation after its last top-level operation (`})`, attributes, type, location).
    tail: &'a str,
    /// Top-level operations that are not functions, in source order.
    shared: Vec<&'a str>,
    /// Functions in source order.
    functions: Vec<FunctionText<'a>>,
    /// Function name -> index into `functions`.
    by_name: HashMap<String, usize>,
}

/// One top-level `func.func`, as written.
#[derive(Debug, Clone)]
struct FunctionText<'a> {
    name: String,
    public: bool,
    text: &'a str,
}

/// Splits a module printed in generic form (what [`crate::parse`] reads,
/// e.g. the IREE compiler's normalised output) into its top-level operations.
/// The text must be one `builtin.module` whose body is a single block without
/// a label.
pub fn split_module(text: &str) -> Result<SplitModule<'_>, MlirError> {
    let mut cur = Cursor::new(text);
    cur.skip_ws();
    let module = cur.generic_op(0)?;
    cur.skip_ws();
    if !cur.at_end() {
        return Err(cur.err("expected one `builtin.module` and nothing after it"));
    }
    if module.name != "builtin.module" || module.regions.len() != 1 {
        return Err(cur.err_at(
            module.start,
            format!(
                "expected one `builtin.module` with one region, found `{}`",
                module.name
            ),
        ));
    }
    let region = &module.regions[0];
    let block = match region.blocks.as_slice() {
        [] => return Err(cur.err_at(module.start, "the module is empty")),
        [block] if block.args.is_empty() => block,
        _ => {
            return Err(cur.err_at(
                module.start,
                "the module body must be a single block without arguments",
            ))
        }
    };
    let (Some(first), Some(last)) = (block.ops.first(), block.ops.last()) else {
        return Err(cur.err_at(module.start, "the module is empty"));
    };
    let head = &text[module.start..first.start];
    if !head.trim_end().ends_with("({") {
        return Err(cur.err_at(first.start, "the module body must not have a block label"));
    }
    let mut split = SplitModule {
        head,
        tail: &text[last.end..module.end],
        shared: Vec::new(),
        functions: Vec::new(),
        by_name: HashMap::new(),
    };
    for op in &block.ops {
        let op_text = &text[op.start..op.end];
        if op.name != "func.func" {
            split.shared.push(op_text);
            continue;
        }
        let (name, public) = func_name(&cur, op)?;
        if split.by_name.contains_key(name.as_str()) {
            return Err(cur.err_at(op.start, format!("two functions are named @{name}")));
        }
        split.by_name.insert(name.clone(), split.functions.len());
        split.functions.push(FunctionText {
            name,
            public,
            text: op_text,
        });
    }
    Ok(split)
}

impl<'a> SplitModule<'a> {
    /// The module's top-level operations that are not functions (globals
    /// and the like), as written, in source order.
    pub fn shared_ops(&self) -> &[&'a str] {
        &self.shared
    }
}

impl SplitModule<'_> {
    /// Public functions, in source order.
    pub fn public_functions(&self) -> impl Iterator<Item = &str> + '_ {
        self.functions
            .iter()
            .filter(|f| f.public)
            .map(|f| f.name.as_str())
    }

    /// The number of operations in `function`'s own text (generic form prints
    /// one operation a line, so its lines), a measure of its compile cost; None
    /// when the module has no function of that name.
    pub fn op_count(&self, function: &str) -> Option<usize> {
        let i = *self.by_name.get(function)?;
        Some(self.functions[i].text.lines().count())
    }

    /// `function`'s own text as written (generic form), None when the module
    /// has no function of that name.
    pub fn function_text(&self, function: &str) -> Option<&str> {
        let i = *self.by_name.get(function)?;
        Some(self.functions[i].text)
    }

    /// A standalone module (generic form) holding `function`, every function
    /// it references, transitively, and every other top-level operation of the
    /// module (those first, then the functions, each in source order), inside
    /// the module's own head and tail. None
    /// when the module has no function of that name.
    pub fn module_for(&self, function: &str) -> Option<String> {
        self.module_for_group(&[function])
    }

    /// [`SplitModule::module_for`] for several functions at once: one module
    /// holding all of them and everything they reference, each function once,
    /// in source order. None when the module lacks one of them.
    pub fn module_for_group(&self, functions: &[&str]) -> Option<String> {
        let mut keep = BTreeSet::new();
        let mut todo = Vec::new();
        for function in functions {
            let root = *self.by_name.get(*function)?;
            if keep.insert(root) {
                todo.push(root);
            }
        }
        let scan = |text: &str, keep: &mut BTreeSet<usize>, todo: &mut Vec<usize>| {
            for name in symbol_refs(text) {
                if let Some(&i) = self.by_name.get(name.as_str()) {
                    if keep.insert(i) {
                        todo.push(i);
                    }
                }
            }
        };
        for shared in &self.shared {
            scan(shared, &mut keep, &mut todo);
        }
        while let Some(i) = todo.pop() {
            scan(self.functions[i].text, &mut keep, &mut todo);
        }
        let mut out = String::with_capacity(
            self.head.len()
                + self.tail.len()
                + self.shared.iter().map(|s| s.len() + 3).sum::<usize>()
                + keep
                    .iter()
                    .map(|&i| self.functions[i].text.len() + 3)
                    .sum::<usize>(),
        );
        out.push_str(self.head);
        let mut first = true;
        let texts = self
            .shared
            .iter()
            .copied()
            .chain(keep.iter().map(|&i| self.functions[i].text));
        for text in texts {
            if !first {
                out.push_str("\n  ");
            }
            first = false;
            out.push_str(text);
        }
        out.push_str(self.tail);
        out.push('\n');
        Some(out)
    }
}

/// Symbol names referenced in `text`: `@name` or `@"quoted name"`, outside
/// string literals (a location such as `loc("a@b")` names nothing).
fn symbol_refs(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'@' if bytes.get(i + 1) == Some(&b'"') => {
                let start = i + 2;
                let mut j = start;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(bytes.len());
                out.push(crate::cursor::unescape(&text[start..end]));
                i = end;
            }
            b'@' => {
                let start = i + 1;
                let mut j = start;
                while j < bytes.len()
                    && (bytes[j].is_ascii_alphanumeric() || matches!(bytes[j], b'_' | b'$' | b'.'))
                {
                    j += 1;
                }
                out.push(text[start..j].to_string());
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = r#""builtin.module"() <{sym_name = "m"}> ({
  "func.func"() <{function_type = (tensor<f32>) -> tensor<f32>, sym_name = "a"}> ({
  ^bb0(%arg0: tensor<f32> loc("x")):
    %0 = "func.call"(%arg0) <{callee = @helper}> : (tensor<f32>) -> tensor<f32> loc("a@b")
    "func.return"(%0) : (tensor<f32>) -> () loc(unknown)
  }) : () -> () loc(unknown)
  "func.func"() <{function_type = (tensor<f32>) -> tensor<f32>, sym_name = "helper", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<f32> loc("x")):
    %0 = "func.call"(%arg0) <{callee = @"deep er"}> : (tensor<f32>) -> tensor<f32> loc(unknown)
    "func.return"(%0) : (tensor<f32>) -> () loc(unknown)
  }) : () -> () loc(unknown)
  "func.func"() <{function_type = (tensor<f32>) -> tensor<f32>, sym_name = "deep er", sym_visibility = "private"}> ({
  ^bb0(%arg0: tensor<f32> loc("x")):
    "func.return"(%arg0) : (tensor<f32>) -> () loc(unknown)
  }) : () -> () loc(unknown)
  "func.func"() <{function_type = (tensor<f32>) -> tensor<f32>, sym_name = "b"}> ({
  ^bb0(%arg0: tensor<f32> loc("@a")):
    "func.return"(%arg0) : (tensor<f32>) -> () loc(unknown)
  }) : () -> () loc(unknown)
  "util.global"() <{sym_name = "g", type = tensor<f32>}> : () -> () loc(unknown)
}) {mhlo.num_partitions = 1 : i32} : () -> () loc("m.mlir":1:1)
"#;

    #[test]
    fn a_function_module_holds_its_callees_and_the_module_around_it() {
        let split = split_module(MODULE).unwrap();
        assert_eq!(split.public_functions().collect::<Vec<_>>(), ["a", "b"]);
        let a = split.module_for("a").unwrap();
        for name in ["\"a\"", "\"helper\"", "\"deep er\"", "\"g\""] {
            assert!(a.contains(&format!("sym_name = {name}")), "{name} in\n{a}");
        }
        assert!(a.starts_with("\"builtin.module\"() <{sym_name = \"m\"}> ({"));
        assert!(a.ends_with("}) {mhlo.num_partitions = 1 : i32} : () -> () loc(\"m.mlir\":1:1)\n"));
        // `@a` inside a location string is not a reference: `b` stands alone.
        let b = split.module_for("b").unwrap();
        assert!(
            !b.contains("sym_name = \"a\"") && !b.contains("helper"),
            "{b}"
        );
        assert!(b.contains("sym_name = \"g\""));
        // Each piece parses back as a module with the functions it names.
        let parsed = crate::parse(&a).unwrap();
        let names: Vec<_> = parsed.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "helper", "deep er"]);
        assert!(split.module_for("missing").is_none());
    }

    #[test]
    fn a_group_module_holds_each_function_and_callee_once() {
        let split = split_module(MODULE).unwrap();
        let group = split.module_for_group(&["b", "a", "a"]).unwrap();
        let parsed = crate::parse(&group).unwrap();
        let names: Vec<_> = parsed.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["a", "helper", "deep er", "b"], "source order");
        assert_eq!(group.matches("sym_name = \"g\"").count(), 1);
        assert_eq!(split.module_for_group(&["a"]), split.module_for("a"));
        assert!(split.module_for_group(&["a", "missing"]).is_none());
        assert_eq!(split.op_count("b"), Some(4));
        assert_eq!(split.op_count("missing"), None);
    }

    #[test]
    fn editing_one_function_changes_only_its_module() {
        let edited = MODULE.replace("loc(\"@a\")", "loc(\"@a2\")");
        let (before, after) = (
            split_module(MODULE).unwrap(),
            split_module(&edited).unwrap(),
        );
        assert_eq!(before.module_for("a"), after.module_for("a"));
        assert_ne!(before.module_for("b"), after.module_for("b"));
    }

    #[test]
    fn rejects_what_is_not_one_module() {
        assert!(split_module("").is_err());
        let two = format!("{MODULE}{MODULE}");
        assert!(split_module(&two).is_err());
        let empty = r#""builtin.module"() ({
}) : () -> () loc(unknown)"#;
        assert!(split_module(empty).unwrap_err().message.contains("empty"));
        assert!(split_module("module {").is_err());
    }

    #[test]
    fn symbol_refs_skip_strings() {
        assert_eq!(
            symbol_refs(r#"callee = @f.x, loc("@no") @"q\"uo" "#),
            vec!["f.x".to_string(), "q\"uo".to_string()]
        );
    }
}
