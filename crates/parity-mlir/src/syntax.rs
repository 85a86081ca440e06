//! The syntax tree of generic-form MLIR: operations, regions, blocks, spans into the
//! source. Knows nothing about functions or SSA graphs; `ir` builds those from it.

use crate::cursor::{Cursor, MAX_DEPTH};
use crate::error::MlirError;

/// One result group of an operation: `%5` (count 1) or `%5:2`.
#[derive(Debug, Clone)]
pub(crate) struct ResultGroup<'a> {
    pub(crate) name: &'a str,
    pub(crate) count: usize,
    pub(crate) offset: usize,
}

/// A use of an SSA value: `%5`, `%5#1`, `%arg0`.
#[derive(Debug, Clone)]
pub(crate) struct Use<'a> {
    /// The name before `#`.
    pub(crate) base: &'a str,
    /// The number after `#`, if any.
    pub(crate) index: Option<usize>,
    /// Byte span of the whole use in the source.
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// A block argument: `%arg0: tensor<f32> loc("x")`.
#[derive(Debug, Clone)]
pub(crate) struct BlockArg<'a> {
    pub(crate) name: &'a str,
    pub(crate) offset: usize,
    pub(crate) ty: &'a str,
    pub(crate) loc: Option<&'a str>,
}

/// A basic block: optional label and arguments, then operations.
#[derive(Debug, Clone, Default)]
pub(crate) struct Block<'a> {
    pub(crate) args: Vec<BlockArg<'a>>,
    pub(crate) ops: Vec<RawOp<'a>>,
}

/// A region: a list of blocks.
#[derive(Debug, Clone, Default)]
pub(crate) struct Region<'a> {
    pub(crate) blocks: Vec<Block<'a>>,
}

/// A generic operation, as written.
#[derive(Debug, Clone)]
pub(crate) struct RawOp<'a> {
    pub(crate) results: Vec<ResultGroup<'a>>,
    /// The operation name without quotes: `stablehlo.add`.
    pub(crate) name: &'a str,
    pub(crate) operands: Vec<Use<'a>>,
    pub(crate) has_successors: bool,
    /// `<{...}>` without the outer `<` `>`, i.e. `{...}`.
    pub(crate) properties: Option<&'a str>,
    pub(crate) regions: Vec<Region<'a>>,
    /// Input and result types of the trailing function type.
    pub(crate) input_types: Vec<&'a str>,
    pub(crate) result_types: Vec<&'a str>,
    /// `loc(...)` text.
    pub(crate) loc: Option<&'a str>,
    /// Byte span of the whole operation (results through location).
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl RawOp<'_> {
    pub(crate) fn result_count(&self) -> usize {
        self.results.iter().map(|r| r.count).sum()
    }
}

impl<'a> Cursor<'a> {
    /// An SSA use at the cursor: `%name` or `%name#k`.
    pub(crate) fn ssa_use(&mut self) -> Result<Use<'a>, MlirError> {
        let base = self.sigil_name(b'%', "an SSA value (`%name`)")?;
        let start = self.pos - base.len();
        let index = if self.peek() == Some(b'#') {
            self.pos += 1;
            Some(self.integer("a result number after `#`")?)
        } else {
            None
        };
        Ok(Use {
            base,
            index,
            start,
            end: self.pos,
        })
    }

    /// A type at the cursor, returned as text: `tensor<1x2xf32>`, `i32`, `!stablehlo.token`,
    /// `(tensor<f32>) -> tensor<f32>`.
    pub(crate) fn type_text(&mut self) -> Result<&'a str, MlirError> {
        self.skip_ws();
        let start = self.pos;
        if self.peek() == Some(b'(') {
            self.skip_balanced()?;
            self.expect_str("->", "in a function type")?;
            self.type_text()?;
            return Ok(&self.src[start..self.pos]);
        }
        if self.peek() == Some(b'!') {
            self.pos += 1;
        }
        self.take_while(crate::cursor::is_ident_byte);
        if self.pos == start {
            return Err(self.err(format!("expected a type, found {}", self.found())));
        }
        if self.peek() == Some(b'<') {
            self.skip_balanced()?;
        }
        Ok(&self.src[start..self.pos])
    }

    /// A parenthesised, comma-separated type list `(T, T)`; `()` is empty.
    fn type_list(&mut self) -> Result<Vec<&'a str>, MlirError> {
        self.expect(b'(', "to open a type list")?;
        let mut types = Vec::new();
        if self.eat(b')') {
            return Ok(types);
        }
        loop {
            types.push(self.type_text()?);
            if self.eat(b')') {
                return Ok(types);
            }
            self.expect(b',', "or `)` in a type list")?;
        }
    }

    /// The trailing `: (inputs) -> results` of a generic operation.
    fn op_function_type(&mut self) -> Result<(Vec<&'a str>, Vec<&'a str>), MlirError> {
        self.expect(b':', "before the operation's function type")?;
        let inputs = self.type_list()?;
        self.expect_str("->", "in the operation's function type")?;
        self.skip_ws();
        let results = if self.peek() == Some(b'(') {
            self.type_list()?
        } else {
            vec![self.type_text()?]
        };
        Ok((inputs, results))
    }

    /// An optional trailing `loc(...)`.
    pub(crate) fn opt_loc(&mut self) -> Result<Option<&'a str>, MlirError> {
        self.skip_ws();
        if !self.at_keyword("loc") {
            return Ok(None);
        }
        let start = self.pos;
        self.pos += 3;
        self.skip_ws();
        if self.peek() != Some(b'(') {
            return Err(self.err("expected `(` after `loc`"));
        }
        self.skip_balanced()?;
        Ok(Some(&self.src[start..self.pos]))
    }

    /// A generic operation: `%r = "dialect.op"(%a, %b) [succ] <{props}> (regions) {attrs} : (T) -> T loc(..)`.
    pub(crate) fn generic_op(&mut self, depth: usize) -> Result<RawOp<'a>, MlirError> {
        self.skip_ws();
        let start = self.pos;
        let mut results = Vec::new();
        if self.peek() == Some(b'%') {
            loop {
                let offset = self.pos;
                let name = self.sigil_name(b'%', "a result name")?;
                let count = if self.eat(b':') {
                    self.integer("a result count after `:`")?
                } else {
                    1
                };
                results.push(ResultGroup {
                    name,
                    count,
                    offset,
                });
                self.skip_ws();
                if !self.eat(b',') {
                    break;
                }
                self.skip_ws();
            }
            self.expect(b'=', "after the result names")?;
        }
        self.skip_ws();
        if self.peek() != Some(b'"') {
            return Err(self.err(format!(
                "expected a generic operation (`\"dialect.op\"(...)`), found {}; \
                 print the module with --mlir-print-op-generic",
                self.found()
            )));
        }
        let (ns, ne) = self.string_lit()?;
        let name = &self.src[ns + 1..ne - 1];
        self.expect(b'(', "to open the operand list")?;
        let mut operands = Vec::new();
        if !self.eat(b')') {
            loop {
                self.skip_ws();
                operands.push(self.ssa_use()?);
                if self.eat(b')') {
                    break;
                }
                self.expect(b',', "or `)` in the operand list")?;
            }
        }
        self.skip_ws();
        let has_successors = self.peek() == Some(b'[');
        if has_successors {
            self.skip_balanced()?;
        }
        self.skip_ws();
        let mut properties = None;
        if self.peek() == Some(b'<') {
            let (s, e) = self.skip_balanced()?;
            properties = Some(self.src[s + 1..e - 1].trim());
        }
        self.skip_ws();
        let mut regions = Vec::new();
        if self.peek() == Some(b'(') {
            if depth >= MAX_DEPTH {
                return Err(self.err("regions nested too deep"));
            }
            self.pos += 1;
            loop {
                regions.push(self.region(depth + 1)?);
                if self.eat(b')') {
                    break;
                }
                self.expect(b',', "or `)` after a region")?;
            }
        }
        self.skip_ws();
        if self.peek() == Some(b'{') {
            self.skip_balanced()?;
        }
        let (input_types, result_types) = self.op_function_type()?;
        let loc = self.opt_loc()?;
        let op = RawOp {
            results,
            name,
            operands,
            has_successors,
            properties,
            regions,
            input_types,
            result_types,
            loc,
            start,
            end: self.pos,
        };
        if op.operands.len() != op.input_types.len() {
            return Err(self.err_at(
                start,
                format!(
                    "`{}` has {} operands but its type lists {}",
                    op.name,
                    op.operands.len(),
                    op.input_types.len()
                ),
            ));
        }
        if op.result_count() != op.result_types.len() {
            return Err(self.err_at(
                start,
                format!(
                    "`{}` defines {} results but its type lists {}",
                    op.name,
                    op.result_count(),
                    op.result_types.len()
                ),
            ));
        }
        Ok(op)
    }

    /// Block arguments `(%a: T loc(..), ...)` after a label; the cursor is at `(`.
    pub(crate) fn block_args(&mut self) -> Result<Vec<BlockArg<'a>>, MlirError> {
        self.expect(b'(', "to open the block arguments")?;
        let mut args = Vec::new();
        if self.eat(b')') {
            return Ok(args);
        }
        loop {
            self.skip_ws();
            let offset = self.pos;
            let name = self.sigil_name(b'%', "a block argument name")?;
            self.expect(b':', "after a block argument name")?;
            let ty = self.type_text()?;
            self.skip_ws();
            if self.peek() == Some(b'{') {
                // Argument attributes (pretty func.func signatures).
                self.skip_balanced()?;
            }
            let loc = self.opt_loc()?;
            args.push(BlockArg {
                name,
                offset,
                ty,
                loc,
            });
            if self.eat(b')') {
                return Ok(args);
            }
            self.expect(b',', "or `)` in the block arguments")?;
        }
    }

    /// A region `{ ^bb0(...): ops ^bb1: ops }`; the cursor is at `{`.
    fn region(&mut self, depth: usize) -> Result<Region<'a>, MlirError> {
        self.expect(b'{', "to open a region")?;
        let mut region = Region::default();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return Err(self.err("unexpected end of input inside a region")),
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(region);
                }
                Some(b'^') => {
                    self.sigil_name(b'^', "a block label")?;
                    self.skip_ws();
                    let args = if self.peek() == Some(b'(') {
                        self.block_args()?
                    } else {
                        Vec::new()
                    };
                    self.expect(b':', "after a block label")?;
                    region.blocks.push(Block {
                        args,
                        ops: Vec::new(),
                    });
                }
                Some(_) => {
                    let op = self.generic_op(depth)?;
                    if region.blocks.is_empty() {
                        region.blocks.push(Block::default());
                    }
                    if let Some(block) = region.blocks.last_mut() {
                        block.ops.push(op);
                    }
                }
            }
        }
    }
}
