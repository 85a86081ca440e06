//! A YAML node tree with source positions, built from saphyr-parser events.
//!
//! We build our own tree (instead of deserializing with serde) so that every
//! semantic error can point at a line and column, and so that we, not the YAML
//! library, bound the nesting depth and the alias expansion (billion laughs).

use crate::error::{Position, SpecError, SpecErrorKind};
use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

/// Deepest nesting of mappings/sequences accepted; real specs use about 6.
/// Bounding it also keeps recursive walks and `Drop` of the tree off the stack limit.
pub(crate) const MAX_DEPTH: usize = 64;

/// Most nodes that aliases may add by expansion; a spec reuses a tolerance list
/// or two, an alias bomb needs millions.
pub(crate) const MAX_ALIAS_EXPANSION: usize = 100_000;

/// A 1-based line and column in the spec text: where a node is used. A
/// node reached through an alias (`*tol`) is marked at the alias, so errors
/// point at the use, and `via` says which anchor it came from and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    pub line: usize,
    pub col: usize,
    pub via: Option<Rc<Via>>,
}

/// How a node reached through an alias was defined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Via {
    /// The anchor's name (`tol` for `&tol` / `*tol`).
    pub anchor: String,
    /// Where the anchored node starts.
    pub anchor_at: (usize, usize),
    /// Where this node is in the anchor's text.
    pub node_at: (usize, usize),
}

impl Mark {
    /// A mark not reached through an alias.
    pub fn new(line: usize, col: usize) -> Mark {
        Mark {
            line,
            col,
            via: None,
        }
    }

    fn from_span(span: &Span) -> Mark {
        // saphyr lines are 1-based, columns 0-based; editors show 1-based columns.
        Mark::new(span.start.line(), span.start.col() + 1)
    }

    /// The full position for messages.
    pub fn at(&self, file: &Path) -> Position {
        Position {
            file: file.to_path_buf(),
            line: self.line,
            col: self.col,
            alias: self.via.as_ref().map(|v| {
                let (al, ac) = v.anchor_at;
                let (nl, nc) = v.node_at;
                let inside = if v.node_at == v.anchor_at {
                    String::new()
                } else {
                    format!(", this part at {nl}:{nc}")
                };
                format!(
                    "in alias `*{}` (anchor `&{}` at {al}:{ac}{inside})",
                    v.anchor, v.anchor
                )
            }),
        }
    }
}

/// A copy of `node` (an anchor's tree) marked at the alias that uses it:
/// every node points at `at`, naming the anchor and where it stands in it.
fn relocate(node: &Rc<Node>, at: &Mark, anchor: &str, anchor_at: (usize, usize)) -> Rc<Node> {
    let copy = |n: &Rc<Node>| relocate(n, at, anchor, anchor_at);
    let value = match &node.value {
        Value::Scalar { text, plain } => Value::Scalar {
            text: text.clone(),
            plain: *plain,
        },
        Value::Seq(items) => Value::Seq(items.iter().map(copy).collect()),
        Value::Map(pairs) => Value::Map(pairs.iter().map(|(k, v)| (copy(k), copy(v))).collect()),
    };
    Rc::new(Node {
        value,
        mark: Mark {
            line: at.line,
            col: at.col,
            via: Some(Rc::new(Via {
                anchor: anchor.to_string(),
                anchor_at,
                node_at: (node.mark.line, node.mark.col),
            })),
        },
        weight: node.weight,
    })
}

/// The text of a span (character indices, as saphyr counts), through a
/// lazily built character -> byte offset table.
fn span_text<'t>(text: &'t str, offsets: &mut Vec<usize>, span: &Span) -> &'t str {
    if offsets.is_empty() {
        offsets.extend(text.char_indices().map(|(b, _)| b));
        offsets.push(text.len());
    }
    let byte = |i: usize| offsets.get(i).copied().unwrap_or(text.len());
    text.get(byte(span.start.index())..byte(span.end.index()))
        .unwrap_or("")
}

/// The payload of a node.
#[derive(Debug)]
pub(crate) enum Value {
    /// A scalar; `plain` is false for quoted and block scalars, which are always strings.
    Scalar { text: String, plain: bool },
    /// A sequence.
    Seq(Vec<Rc<Node>>),
    /// A mapping, in file order (duplicates are detected by the schema walk).
    Map(Vec<(Rc<Node>, Rc<Node>)>),
}

/// One YAML node and where it starts.
#[derive(Debug)]
pub(crate) struct Node {
    pub value: Value,
    pub mark: Mark,
    /// Nodes in this subtree with aliases expanded (saturating); drives the alias budget.
    weight: usize,
}

impl Node {
    /// The scalar text, if this is a scalar.
    pub fn scalar(&self) -> Option<&str> {
        match &self.value {
            Value::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    /// True for a plain `null`, `~`, `Null`, `NULL` or an empty plain scalar (YAML 1.2 core schema).
    pub fn is_null(&self) -> bool {
        matches!(&self.value, Value::Scalar { text, plain: true }
            if matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL"))
    }

    /// The boolean value of a plain core-schema boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match &self.value {
            Value::Scalar { text, plain: true } => match text.as_str() {
                "true" | "True" | "TRUE" => Some(true),
                "false" | "False" | "FALSE" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }

    /// The value of a plain core-schema integer (decimal, `0x`, `0o`).
    pub fn as_i128(&self) -> Option<i128> {
        let Value::Scalar { text, plain: true } = &self.value else {
            return None;
        };
        let (neg, body) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text.as_str()),
        };
        let magnitude = if let Some(hex) = body.strip_prefix("0x") {
            parse_radix(hex, 16)?
        } else if let Some(oct) = body.strip_prefix("0o") {
            parse_radix(oct, 8)?
        } else {
            parse_radix(body, 10)?
        };
        Some(if neg { -magnitude } else { magnitude })
    }

    /// The value of a plain core-schema number (integer, float, `.inf`, `.nan`).
    pub fn as_f64(&self) -> Option<f64> {
        if let Some(i) = self.as_i128() {
            return Some(i as f64);
        }
        let Value::Scalar { text, plain: true } = &self.value else {
            return None;
        };
        match text.as_str() {
            ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Some(f64::INFINITY),
            "-.inf" | "-.Inf" | "-.INF" => return Some(f64::NEG_INFINITY),
            ".nan" | ".NaN" | ".NAN" => return Some(f64::NAN),
            _ => {}
        }
        // Rust's parser also takes `inf`, `NaN`, `infinity`; YAML does not.
        let numeric = text
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '+' | '-' | '.' | 'e' | 'E'));
        if !numeric || !text.chars().any(|c| c.is_ascii_digit()) {
            return None;
        }
        text.parse::<f64>().ok()
    }

    /// The scalar under `key` if this is a mapping; lets errors about a
    /// mapping's other keys name the stage or output before it is fully read.
    pub fn peek(&self, key: &str) -> Option<&str> {
        match &self.value {
            Value::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| k.scalar() == Some(key))
                .and_then(|(_, v)| v.scalar()),
            _ => None,
        }
    }

    /// A short description of the node for "found ..." in messages.
    pub fn describe(&self) -> String {
        match &self.value {
            Value::Seq(_) => "a list".to_string(),
            Value::Map(_) => "a mapping".to_string(),
            Value::Scalar { .. } if self.is_null() => "null".to_string(),
            Value::Scalar { .. } if self.as_bool().is_some() => "a boolean".to_string(),
            Value::Scalar { .. } if self.as_f64().is_some() => "a number".to_string(),
            Value::Scalar { text, .. } => format!("the string `{}`", truncate(text, 40)),
        }
    }
}

fn parse_radix(digits: &str, radix: u32) -> Option<i128> {
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    i128::from_str_radix(digits, radix).ok()
}

/// Shortens long user text for messages.
pub(crate) fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        text.to_string()
    } else {
        let mut s: String = text.chars().take(max_chars).collect();
        s.push_str("...");
        s
    }
}

/// An open collection while events stream in.
struct Frame {
    is_map: bool,
    items: Vec<Rc<Node>>,
    mark: Mark,
    anchor: usize,
    weight: usize,
}

/// Parses `text` as exactly one YAML document into a node tree.
pub(crate) fn parse_document(text: &str, file: &Path) -> Result<Rc<Node>, SpecError> {
    let syntax = |mark: Mark, message: String| {
        SpecErrorKind::Syntax {
            at: mark.at(file),
            message,
        }
        .into()
    };
    let mut anchors: HashMap<usize, Rc<Node>> = HashMap::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut root: Option<Rc<Node>> = None;
    let mut documents = 0usize;
    let mut expansion = 0usize;
    let mut offsets: Vec<usize> = Vec::new();
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| {
            let m = e.marker();
            syntax(Mark::new(m.line(), m.col() + 1), e.info().to_string())
        })?;
        let mark = Mark::from_span(&span);
        let finished: Rc<Node> = match event {
            Event::DocumentStart(_) => {
                documents += 1;
                if documents > 1 {
                    return Err(syntax(mark, "a spec must be a single YAML document".into()));
                }
                continue;
            }
            Event::Scalar(value, style, anchor, tag) => {
                if tag.is_some() {
                    return Err(syntax(mark, "YAML tags are not supported in a spec".into()));
                }
                let node = Rc::new(Node {
                    value: Value::Scalar {
                        text: value.into_owned(),
                        plain: style == ScalarStyle::Plain,
                    },
                    mark,
                    weight: 1,
                });
                if anchor != 0 {
                    anchors.insert(anchor, Rc::clone(&node));
                }
                node
            }
            Event::SequenceStart(anchor, ref tag) | Event::MappingStart(anchor, ref tag) => {
                if tag.is_some() {
                    return Err(syntax(mark, "YAML tags are not supported in a spec".into()));
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(SpecErrorKind::LimitExceeded {
                        at: mark.at(file),
                        message: format!("spec nests deeper than {MAX_DEPTH} levels"),
                    }
                    .into());
                }
                let is_map = matches!(event, Event::MappingStart(..));
                stack.push(Frame {
                    is_map,
                    items: Vec::new(),
                    mark,
                    anchor,
                    weight: 1,
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(frame) = stack.pop() else {
                    return Err(syntax(mark, "unbalanced collection end".into()));
                };
                let value = if frame.is_map {
                    let mut pairs = Vec::with_capacity(frame.items.len() / 2);
                    let mut it = frame.items.into_iter();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        pairs.push((k, v));
                    }
                    Value::Map(pairs)
                } else {
                    Value::Seq(frame.items)
                };
                let node = Rc::new(Node {
                    value,
                    mark: frame.mark.clone(),
                    weight: frame.weight,
                });
                if frame.anchor != 0 {
                    anchors.insert(frame.anchor, Rc::clone(&node));
                }
                node
            }
            Event::Alias(id) => {
                let Some(target) = anchors.get(&id) else {
                    return Err(syntax(mark, "alias to an unknown anchor".into()));
                };
                expansion = expansion.saturating_add(target.weight);
                if expansion > MAX_ALIAS_EXPANSION {
                    return Err(SpecErrorKind::LimitExceeded {
                        at: mark.at(file),
                        message: format!(
                            "aliases expand to more than {MAX_ALIAS_EXPANSION} nodes (alias bomb?)"
                        ),
                    }
                    .into());
                }
                // Errors inside the anchor's tree point at this use, and name the anchor.
                let name = span_text(text, &mut offsets, &span).trim_start_matches('*');
                let anchor_at = (target.mark.line, target.mark.col);
                relocate(target, &mark, name, anchor_at)
            }
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd | Event::Nothing => continue,
        };
        match stack.last_mut() {
            Some(parent) => {
                parent.weight = parent.weight.saturating_add(finished.weight);
                parent.items.push(finished);
            }
            None => root = Some(finished),
        }
    }
    root.ok_or_else(|| syntax(Mark::new(1, 1), "the spec is empty".into()))
}

#[cfg(test)]
#[path = "yaml_tests.rs"]
mod tests;
