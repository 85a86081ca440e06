//! Typed access to the node tree: mappings with a closed key set, and scalars
//! of a given type, each failing with a positioned, scoped error.

use crate::error::{Position, Scope, SpecError, SpecErrorKind};
use crate::yaml::{Node, Value};
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

/// What every typed read needs to build an error: the file and the current scope.
#[derive(Clone)]
pub(crate) struct Cx<'a> {
    pub file: &'a Path,
    pub scope: Scope,
}

impl<'a> Cx<'a> {
    /// The same file, a different scope.
    pub fn with(&self, scope: Scope) -> Cx<'a> {
        Cx {
            file: self.file,
            scope,
        }
    }

    /// The position of a node.
    pub fn at(&self, node: &Node) -> Position {
        node.mark.at(self.file)
    }

    /// A `WrongType` error for `node`.
    pub fn wrong_type(&self, node: &Node, field: &str, expected: &str) -> SpecError {
        SpecErrorKind::WrongType {
            at: self.at(node),
            scope: self.scope.clone(),
            field: field.to_string(),
            expected: expected.to_string(),
            found: node.describe(),
        }
        .into()
    }

    /// An `Invalid` error for `node`.
    pub fn invalid(&self, node: &Node, message: String) -> SpecError {
        SpecErrorKind::Invalid {
            at: self.at(node),
            scope: self.scope.clone(),
            message,
        }
        .into()
    }

    /// Opens `node` as a mapping whose keys must all be in `allowed`, with no duplicates.
    pub fn map<'n>(
        &self,
        node: &'n Node,
        field: &str,
        context: &str,
        allowed: &[&str],
    ) -> Result<MapReader<'n>, SpecError> {
        self.map_with(node, field, context, Some(allowed))
    }

    /// Opens `node` as a mapping with user-chosen keys (module names, variables, dtypes).
    pub fn free_map<'n>(
        &self,
        node: &'n Node,
        field: &str,
        context: &str,
    ) -> Result<MapReader<'n>, SpecError> {
        self.map_with(node, field, context, None)
    }

    fn map_with<'n>(
        &self,
        node: &'n Node,
        field: &str,
        context: &str,
        allowed: Option<&[&str]>,
    ) -> Result<MapReader<'n>, SpecError> {
        let Value::Map(pairs) = &node.value else {
            return Err(self.wrong_type(node, field, "a mapping"));
        };
        // A map, not a scan: user mappings (vars, modules) can be large.
        let mut keys: HashMap<&str, &Node> = HashMap::with_capacity(pairs.len());
        for (k, _) in pairs {
            let key = match k.scalar() {
                Some(s) => s,
                None => return Err(self.wrong_type(k, "key", "a plain string key")),
            };
            if let Some(first) = keys.get(key) {
                return Err(SpecErrorKind::DuplicateKey {
                    at: self.at(k),
                    scope: self.scope.clone(),
                    key: key.to_string(),
                    first_line: first.mark.line,
                }
                .into());
            }
            if let Some(allowed) = allowed.filter(|a| !a.contains(&key)) {
                return Err(SpecErrorKind::UnknownKey {
                    at: self.at(k),
                    scope: self.scope.clone(),
                    key: key.to_string(),
                    context: context.to_string(),
                    allowed: allowed.join(", "),
                }
                .into());
            }
            keys.insert(key, k);
        }
        Ok(MapReader {
            node,
            pairs,
            context: context.to_string(),
        })
    }

    /// Reads any scalar as a string (numbers and booleans keep their text); null is an error.
    pub fn string(&self, node: &Node, field: &str) -> Result<String, SpecError> {
        match node.scalar() {
            Some(s) if !node.is_null() => Ok(s.to_string()),
            _ => Err(self.wrong_type(node, field, "a string")),
        }
    }

    /// Like [`Cx::string`] but also refuses the empty string.
    pub fn name(&self, node: &Node, field: &str) -> Result<String, SpecError> {
        let s = self.string(node, field)?;
        if s.trim().is_empty() {
            return Err(self.invalid(node, format!("`{field}` must not be empty")));
        }
        Ok(s)
    }

    /// Reads a non-negative integer that fits `usize`.
    pub fn usize(&self, node: &Node, field: &str) -> Result<usize, SpecError> {
        node.as_i128()
            .and_then(|i| usize::try_from(i).ok())
            .ok_or_else(|| self.wrong_type(node, field, "a non-negative integer"))
    }

    /// Reads a boolean.
    pub fn bool(&self, node: &Node, field: &str) -> Result<bool, SpecError> {
        node.as_bool()
            .ok_or_else(|| self.wrong_type(node, field, "a boolean (true or false)"))
    }

    /// Reads a number (integer or float, including `.inf` / `.nan`).
    pub fn f64(&self, node: &Node, field: &str) -> Result<f64, SpecError> {
        node.as_f64()
            .ok_or_else(|| self.wrong_type(node, field, "a number"))
    }

    /// Opens a sequence.
    pub fn list<'n>(&self, node: &'n Node, field: &str) -> Result<&'n [Rc<Node>], SpecError> {
        match &node.value {
            Value::Seq(items) => Ok(items),
            _ => Err(self.wrong_type(node, field, "a list")),
        }
    }

    /// Reads a list of strings.
    pub fn strings(&self, node: &Node, field: &str) -> Result<Vec<String>, SpecError> {
        self.list(node, field)?
            .iter()
            .map(|n| self.string(n, field))
            .collect()
    }
}

/// A mapping whose keys have been checked against the schema.
pub(crate) struct MapReader<'n> {
    /// The mapping node itself (for "missing key" positions).
    pub node: &'n Node,
    pairs: &'n [(Rc<Node>, Rc<Node>)],
    context: String,
}

impl<'n> MapReader<'n> {
    /// The value for `key`, treating an explicit null as absent.
    pub fn opt(&self, key: &str) -> Option<&'n Node> {
        self.pairs
            .iter()
            .find(|(k, _)| k.scalar() == Some(key))
            .map(|(_, v)| &**v)
            .filter(|v| !v.is_null())
    }

    /// The value for `key`, or a `MissingField` error.
    pub fn req(&self, cx: &Cx<'_>, key: &str) -> Result<&'n Node, SpecError> {
        self.opt(key).ok_or_else(|| {
            SpecErrorKind::MissingField {
                at: cx.at(self.node),
                scope: cx.scope.clone(),
                field: key.to_string(),
                context: self.context.clone(),
            }
            .into()
        })
    }

    /// The key nodes and values in file order.
    pub fn entries(&self) -> impl Iterator<Item = (&'n Node, &'n Node)> {
        self.pairs.iter().map(|(k, v)| (&**k, &**v))
    }
}
