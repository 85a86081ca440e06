//! The parts of the validated spec below the whole [`Spec`](crate::Spec): a
//! stage and what it is made of (arguments, `bind:` rules, outputs, masks,
//! slices), the cases templates render, and positions in the spec file.
//! Plain structs, no serde, no YAML. The sections that hold stages
//! (`tokens:`) and the spec itself sit above this, so every module that
//! needs a stage or an argument can import it without reaching up.

use parity_compare::Criterion;
use parity_tensor::DType;
use std::collections::BTreeMap;

/// A 1-based line and column in the spec file, kept so the runner can point at a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Location {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
}

/// One case: a name and the variables templated into stage strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// Case name; `{case}` in templates.
    pub name: String,
    /// Variables; `{var}` in templates. YAML scalars are kept as their text.
    pub vars: BTreeMap<String, String>,
}

/// One stage: a function of a module, its inputs and its checked outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    /// Unique stage name.
    pub name: String,
    /// Module name (template).
    pub module: String,
    /// Function name in the module (template). For a `slice:` stage, the
    /// generated slice function, [`SliceSpec::entry_name`] of the stage and
    /// the sliced function (filled in per case by `Spec::instantiate`).
    pub function: String,
    /// `slice:` instead of `function:`: the stage is a cut of a larger function.
    pub slice: Option<SliceSpec>,
    /// Arguments in call order. Empty for a `bind:` stage until the runner
    /// binds them by the function's argument names ([`crate::bind_args`]).
    pub args: Vec<Arg>,
    /// `bind:` instead of `args:`: arguments bound by their MLIR names.
    pub bind: Option<Bind>,
    /// Outputs in the order the function returns them.
    pub outputs: Vec<OutputSpec>,
    /// Where the stage starts in the spec file.
    pub location: Location,
    /// Where its parts are, for messages about a specific argument or output.
    pub locations: StageLocations,
}

/// Positions of a stage's parts (parallel to `Stage::args` / `Stage::outputs`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct StageLocations {
    /// The `module` value.
    pub module: Location,
    /// The `function` value (for a slice stage, the `slice.function` value).
    pub function: Location,
    /// Each `slice.from` point (empty for a `function:` stage).
    pub slice_from: Vec<Location>,
    /// Each `slice.to` point (empty for a `function:` stage).
    pub slice_to: Vec<Location>,
    /// Each argument.
    pub args: Vec<Location>,
    /// Each output.
    pub outputs: Vec<Location>,
}

/// A stage cut out of a larger function between named points (`slice:`).
///
/// The slice's arguments are the values crossing into the cut: the `from`
/// points in order, then every argument of `function` the cut still needs,
/// in `function`'s argument order; the stage's `args` feed them in that order.
/// Its results are the `to` points in order, matched to the stage's `outputs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceSpec {
    /// The function to cut (template).
    pub function: String,
    /// Where the cut starts (templates; may be empty): SSA names as printed in
    /// the module's normalised generic form (`%12`, `%5#1`, `%arg3`), named-scope
    /// paths (`conformer_0/attention`) or their `_` form (`conformer_0_attention`).
    pub from: Vec<String>,
    /// The values the slice returns (templates, same forms as `from`; not empty).
    pub to: Vec<String>,
}

impl SliceSpec {
    /// The name of the generated function for `stage` cutting `function`:
    /// `<stage>__<function>` with every character outside `[A-Za-z0-9_]` replaced by `_`.
    pub fn entry_name(stage: &str, function: &str) -> String {
        format!("{stage}__{function}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}

/// One argument of a stage call.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A tensor from the oracle store, by name (template).
    Oracle(String),
    /// A tensor from the weight files, by name (template).
    Weight(String),
    /// An output of another stage: its production value in chained mode, its
    /// oracle tensor in isolated mode.
    Stage {
        /// The upstream stage.
        stage: String,
        /// The upstream output (filled in when the YAML names only a single-output stage).
        output: String,
    },
    /// A constant tensor written in the spec; `values.len()` equals the shape's element count.
    Literal {
        /// Element type.
        dtype: DType,
        /// Shape (`[]` for a scalar).
        shape: Vec<usize>,
        /// Row-major values, already broadcast from `value:`.
        values: Vec<f64>,
    },
}

/// One output of a stage and how to check it.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputSpec {
    /// Output name, unique within the stage.
    pub name: String,
    /// Oracle tensor to compare against (template).
    pub oracle: String,
    /// Optional f64 ground truth tensor (template), for `vs_f64`.
    pub truth: Option<String>,
    /// Optional mask selecting which elements are compared.
    pub mask: Option<MaskSpec>,
    /// Optional tolerance replacing the per-dtype default.
    pub tolerance: Option<Vec<Criterion>>,
    /// Dtype in which ULP distances are measured (default: the output's dtype).
    pub ulp_dtype: Option<DType>,
    /// `equal_nan: true`: NaN in both tensors at the same place counts as
    /// equal; by default it fails every criterion (NaN never equals NaN).
    pub equal_nan: bool,
    /// `allow_empty: true`: a comparison of zero elements (everything masked,
    /// or an empty tensor) passes; by default it fails.
    pub allow_empty: bool,
}

/// A mask over some axes of an output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaskSpec {
    /// Where the mask tensor comes from.
    pub source: MaskSource,
    /// Output axes the mask's dimensions map to, in order (no repeats).
    pub axes: Vec<usize>,
    /// The mask value that means "padded, do not compare"; default true.
    pub padded: bool,
    /// Also require the padded elements of the output to be zero; default false.
    pub assert_zero: bool,
}

/// The tensor a mask is read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MaskSource {
    /// An oracle tensor, by name (template).
    Oracle(String),
    /// The stage argument with this 0-based index.
    Arg(usize),
}

impl Stage {
    /// Names of the stages this one takes inputs from, without repeats, in argument order.
    pub fn dependencies(&self) -> Vec<&str> {
        let mut deps: Vec<&str> = Vec::new();
        let bound = self
            .bind
            .iter()
            .flat_map(|b| b.rules.iter().map(|r| &r.source));
        for arg in self.args.iter().chain(bound) {
            if let Arg::Stage { stage, .. } = arg {
                if !deps.contains(&stage.as_str()) {
                    deps.push(stage);
                }
            }
        }
        deps
    }
}

/// A stage's `bind:` list.
#[derive(Clone, Debug, PartialEq)]
pub struct Bind {
    /// The rules in file order.
    pub rules: Vec<BindRule>,
    /// Where `bind:` is in the spec.
    pub location: Location,
}

/// One `bind:` rule: which arguments it binds and where their tensors come from.
#[derive(Clone, Debug, PartialEq)]
pub struct BindRule {
    /// Which argument(s).
    pub target: BindTarget,
    /// The tensor (templates rendered per case). For a pattern, `$1`..`$9`
    /// in an `oracle:`/`weight:` name are the pattern's captures.
    pub source: Arg,
    /// `replace: {FROM: TO}` (patterns only): substring replacements applied,
    /// in order, to every capture before it is substituted.
    pub replace: Vec<(String, String)>,
    /// Where the rule is in the spec.
    pub location: Location,
}

/// The arguments a [`BindRule`] binds.
#[derive(Clone, Debug, PartialEq)]
pub enum BindTarget {
    /// The argument with this MLIR name (`loc("name")`).
    Name(String),
    /// The argument at this 0-based index.
    Index(usize),
    /// Every argument whose whole MLIR name matches.
    Pattern(NamePattern),
}

/// A regular expression matched against a whole argument name.
#[derive(Clone, Debug)]
pub struct NamePattern {
    /// As written in the spec.
    pub text: String,
    regex: regex::Regex,
}

impl PartialEq for NamePattern {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl NamePattern {
    /// Compiles `text`, anchored at both ends.
    pub fn new(text: &str) -> Result<NamePattern, regex::Error> {
        let regex = regex::Regex::new(&format!("^(?:{text})$"))?;
        Ok(NamePattern {
            text: text.to_string(),
            regex,
        })
    }

    /// The captures of `name` (group 0 is the whole name), or None when it does not match.
    pub fn captures(&self, name: &str) -> Option<Vec<String>> {
        self.regex.captures(name).map(|c| {
            c.iter()
                .map(|m| m.map_or(String::new(), |m| m.as_str().to_string()))
                .collect()
        })
    }

    /// Number of capture groups, group 0 included.
    pub fn groups(&self) -> usize {
        self.regex.captures_len()
    }
}
