//! Reading and rewriting one operation's generic MLIR text: its result name,
//! operand list, integer-array attributes and location.

/// The op's first line (for ops with regions, the line that opens them:
/// the name, operands and properties are all on it).
pub fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

/// The single result name of `%12 = "op"(...)`, or `None` for an op with no
/// result or several (`%5:2 = ...`).
pub fn result_name(text: &str) -> Option<&str> {
    let (name, _) = text.trim_start().split_once(" = ")?;
    (name.starts_with('%') && !name.contains(':')).then_some(name)
}

/// The op's text with its result renamed to `to`.
pub fn rename_result(text: &str, to: &str) -> Option<String> {
    let trimmed = text.trim_start();
    let name = result_name(trimmed)?;
    Some(format!("{to}{}", &trimmed[name.len()..]))
}

/// The operand names of a generic op line: `"stablehlo.add"(%3, %4)`.
pub fn operands(line: &str) -> Option<Vec<&str>> {
    let open = line.find("\"(")? + 2;
    let close = open + line[open..].find(')')?;
    let inner = &line[open..close];
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    Some(inner.split(", ").map(str::trim).collect())
}

/// `line` with its operand list replaced.
pub fn set_operands(line: &str, names: &[&str]) -> Option<String> {
    let open = line.find("\"(")? + 2;
    let close = open + line[open..].find(')')?;
    Some(format!(
        "{}{}{}",
        &line[..open],
        names.join(", "),
        &line[close..]
    ))
}

/// `line` with its op name replaced.
pub fn set_op_name(line: &str, from: &str, to: &str) -> String {
    line.replacen(&format!("\"{from}\"("), &format!("\"{to}\"("), 1)
}

/// The location at the end of an op's text (`loc(...)`), or `loc(unknown)`.
pub fn location(text: &str) -> &str {
    let last = text.lines().last().unwrap_or(text);
    last.rfind(" loc(")
        .map_or("loc(unknown)", |i| last[i + 1..].trim_end())
}

/// The integers after `key` up to `>` or `]` (`array<i64: 0, 2>` or `[0, 2]`).
pub fn ints(line: &str, key: &str) -> Option<Vec<i64>> {
    let rest = &line[line.find(key)? + key.len()..];
    let end = rest.find(['>', ']'])?;
    let inner = rest[..end].trim();
    if inner.is_empty() {
        return Some(Vec::new());
    }
    inner.split(',').map(|x| x.trim().parse().ok()).collect()
}

/// `line` with the integers after `key` replaced.
pub fn set_ints(line: &str, key: &str, values: &[i64]) -> String {
    let Some(at) = line.find(key) else {
        return line.to_string();
    };
    let start = at + key.len();
    let Some(end) = line[start..].find(['>', ']']).map(|e| start + e) else {
        return line.to_string();
    };
    let joined = values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    format!("{}{joined}{}", &line[..start], &line[end..])
}

/// An `array<i64: ...>` attribute key as printed (`array<i64>` when empty is
/// handled by [`array_ints`]).
pub fn array_ints(line: &str, attr: &str) -> Option<Vec<i64>> {
    let key = format!("{attr} = array<i64");
    let rest = &line[line.find(&key)? + key.len()..];
    match rest.strip_prefix(": ") {
        Some(r) => ints(r, ""),
        None => rest.starts_with('>').then(Vec::new),
    }
}

/// `line` with an `array<i64: ...>` attribute replaced.
pub fn set_array_ints(line: &str, attr: &str, values: &[i64]) -> String {
    let key = format!("{attr} = array<i64");
    let Some(at) = line.find(&key) else {
        return line.to_string();
    };
    let start = at + key.len();
    let Some(end) = line[start..].find('>').map(|e| start + e) else {
        return line.to_string();
    };
    let body = if values.is_empty() {
        String::new()
    } else {
        format!(
            ": {}",
            values
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!("{}{body}{}", &line[..start], &line[end..])
}

/// Whether a tensor type's elements are integers wider than i1
/// (`tensor<i32>`, `tensor<1x4xsi64>`, `tensor<ui8>`).
pub fn integer_element(ty: &str) -> bool {
    let elem = element(ty);
    let digits = elem.trim_start_matches(['s', 'u']).strip_prefix('i');
    digits.is_some_and(|d| !d.is_empty() && d != "1" && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The element type of `tensor<...xE>`.
pub fn element(ty: &str) -> &str {
    let inner = ty
        .trim()
        .trim_start_matches("tensor<")
        .trim_end_matches('>');
    inner.rsplit('x').next().unwrap_or(inner)
}

/// Whether a tensor type's elements are floats.
pub fn float_element(ty: &str) -> bool {
    parity_mlir::Type::new(ty).is_float()
}

/// The value of a splat float constant line (`dense<5.0e-01>`), when finite
/// and not zero.
pub fn splat_value(line: &str) -> Option<f64> {
    if !line.contains("\"stablehlo.constant\"") || line.contains("dense<[") {
        return None;
    }
    let v: f64 = line
        .split("dense<")
        .nth(1)?
        .split('>')
        .next()?
        .trim()
        .parse()
        .ok()?;
    (v.is_finite() && v != 0.0).then_some(v)
}

/// `name` made safe as part of an SSA name (`%5#1` -> `5_1`).
pub fn plain(name: &str) -> String {
    name.trim_start_matches('%')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Replaces every use of SSA name `from` in `text` by `to` (a name followed
/// by an identifier character or `#` is another name and is left alone).
pub fn rename_uses(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(from) {
        let after = rest[i + from.len()..].chars().next();
        let other = after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '#');
        out.push_str(&rest[..i]);
        out.push_str(if other { from } else { to });
        rest = &rest[i + from.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_lines_are_read() {
        let l = "    %5 = \"stablehlo.subtract\"(%3, %v4_1) : (tensor<f32>, tensor<f32>) -> tensor<f32> loc(\"a/b\")";
        assert_eq!(result_name(l), Some("%5"));
        assert_eq!(operands(l), Some(vec!["%3", "%v4_1"]));
        assert_eq!(location(l), "loc(\"a/b\")");
        let s = set_operands(l, &["%v4_1", "%3"]).unwrap();
        assert!(s.contains("(%v4_1, %3) :"), "{s}");
        assert!(rename_result(l, "%e")
            .unwrap()
            .starts_with("%e = \"stablehlo.subtract\""));
        assert_eq!(result_name("%5:2 = \"stablehlo.reduce\"(%1)"), None);
    }

    #[test]
    fn integer_attributes_are_read_and_rewritten() {
        let l = "%3 = \"stablehlo.slice\"(%2) <{limit_indices = array<i64: 1, 33>, start_indices = array<i64: 0, 1>}>";
        assert_eq!(array_ints(l, "start_indices"), Some(vec![0, 1]));
        let m = set_array_ints(l, "start_indices", &[0, 0]);
        assert!(m.contains("start_indices = array<i64: 0, 0>"), "{m}");
        assert!(m.contains("limit_indices = array<i64: 1, 33>"), "{m}");
        let b = "<{broadcast_dimensions = array<i64>}>";
        assert_eq!(array_ints(b, "broadcast_dimensions"), Some(vec![]));
        let d =
            "#stablehlo.dot<lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]>";
        assert_eq!(ints(d, "rhs_contracting_dimensions = ["), Some(vec![1]));
        let d2 = set_ints(d, "lhs_contracting_dimensions = [", &[1]);
        assert!(d2.contains("lhs_contracting_dimensions = [1], rhs"), "{d2}");
    }

    #[test]
    fn uses_are_renamed_whole() {
        let t = "%13 = \"a\"(%12, %120, %12#1) (%12)";
        assert_eq!(
            rename_uses(t, "%12", "%7"),
            "%13 = \"a\"(%7, %120, %12#1) (%7)"
        );
    }

    #[test]
    fn splat_constants_and_element_types() {
        let c = "%1 = \"stablehlo.constant\"() <{value = dense<9.99999997E-7> : tensor<f32>}> : () -> tensor<f32>";
        assert_eq!(splat_value(c), Some(9.99999997e-7));
        assert_eq!(splat_value(&c.replace("9.99999997E-7", "0xFF800000")), None);
        assert!(integer_element("tensor<1x4xsi64>"));
        assert!(!integer_element("tensor<4xi1>"));
        assert!(float_element("tensor<2xbf16>"));
    }
}
