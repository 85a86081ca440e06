//! `{case}` / `{var}` substitution in stage strings; `{{` and `}}` are literal braces.

use crate::stage_model::Case;

/// Why a template could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TemplateError {
    /// Malformed braces or variable name; the text says what.
    Syntax(String),
    /// `{name}` where the case defines no `name`.
    UnknownVariable(String),
}

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Brace(char),
    Var(&'a str),
}

fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn pieces(text: &str) -> Result<Vec<Piece<'_>>, TemplateError> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut start = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'}' if bytes.get(i + 1) == Some(&bytes[i]) => {
                out.push(Piece::Text(&text[start..i]));
                out.push(Piece::Brace(bytes[i] as char));
                i += 2;
                start = i;
            }
            b'{' => {
                out.push(Piece::Text(&text[start..i]));
                let Some(len) = text[i + 1..].find('}') else {
                    return Err(TemplateError::Syntax(format!(
                        "`{{` at byte {i} is not closed (write `{{{{` for a literal brace)"
                    )));
                };
                let name = &text[i + 1..i + 1 + len];
                if !is_var_name(name) {
                    return Err(TemplateError::Syntax(format!(
                        "`{{{name}}}` is not a variable name (letters, digits, `_`; write `{{{{` for a literal brace)"
                    )));
                }
                out.push(Piece::Var(name));
                i += len + 2;
                start = i;
            }
            b'}' => {
                return Err(TemplateError::Syntax(format!(
                    "unmatched `}}` at byte {i} (write `}}}}` for a literal brace)"
                )))
            }
            _ => i += 1,
        }
    }
    out.push(Piece::Text(&text[start..]));
    Ok(out)
}

/// Checks brace syntax without a case (done once at load time).
pub(crate) fn check(text: &str) -> Result<(), TemplateError> {
    pieces(text).map(|_| ())
}

/// Substitutes `{case}` with the case name and `{var}` with its variables.
pub(crate) fn render(text: &str, case: &Case) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text)? {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Brace(c) => out.push(c),
            Piece::Var("case") => out.push_str(&case.name),
            Piece::Var(name) => match case.vars.get(name) {
                Some(v) => out.push_str(v),
                None => return Err(TemplateError::UnknownVariable(name.to_string())),
            },
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn case() -> Case {
        Case {
            name: "full128".into(),
            vars: BTreeMap::from([("bucket".to_string(), "128".to_string())]),
        }
    }

    #[test]
    fn substitutes_case_and_vars() {
        assert_eq!(
            render("{case}/conv_b{bucket}", &case()).unwrap(),
            "full128/conv_b128"
        );
        assert_eq!(render("plain", &case()).unwrap(), "plain");
        assert_eq!(render("", &case()).unwrap(), "");
    }

    #[test]
    fn doubled_braces_escape() {
        assert_eq!(
            render("{{case}}/{{{case}}}", &case()).unwrap(),
            "{case}/{full128}"
        );
    }

    #[test]
    fn unknown_variable_is_named() {
        assert_eq!(
            render("{case}/{clips}", &case()),
            Err(TemplateError::UnknownVariable("clips".into()))
        );
    }

    #[test]
    fn bad_braces_are_syntax_errors() {
        for bad in ["{case", "a}b", "{}", "{1x}", "{a b}", "x{é}"] {
            assert!(
                matches!(check(bad), Err(TemplateError::Syntax(_))),
                "{bad} should fail"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn escaped_text_renders_to_itself(text in "\\PC{0,60}") {
            let escaped = text.replace('{', "{{").replace('}', "}}");
            proptest::prop_assert_eq!(render(&escaped, &case()).unwrap(), text);
        }

        #[test]
        fn any_text_gives_ok_or_err(text in "[{}a-z_ ]{0,40}") {
            // Only the result matters here: no panic, no out-of-bounds slicing.
            let _ = render(&text, &case());
        }
    }

    #[test]
    fn non_ascii_text_is_kept() {
        assert_eq!(render("é/{case}/ü", &case()).unwrap(), "é/full128/ü");
    }
}
