//! Tests for the node tree: positions, core-schema scalars, limits.
use super::*;

fn parse(text: &str) -> Result<Rc<Node>, SpecError> {
    parse_document(text, Path::new("t.yaml"))
}

#[test]
fn marks_are_one_based_and_point_at_values() {
    let root = parse("a: 1\nbb:\n  - x\n  - {k: v}\n").unwrap();
    let Value::Map(pairs) = &root.value else {
        panic!("not a map")
    };
    assert_eq!(pairs[0].0.mark, Mark::new(1, 1));
    assert_eq!(pairs[0].1.mark, Mark::new(1, 4));
    let Value::Seq(items) = &pairs[1].1.value else {
        panic!("not a seq")
    };
    assert_eq!(items[0].mark, Mark::new(3, 5));
    assert_eq!(items[1].mark, Mark::new(4, 5));
}

#[test]
fn core_schema_scalars() {
    let root = parse("[1e-5, 0x10, -7, .inf, 'x', true, ~, inf, 1_0]").unwrap();
    let Value::Seq(v) = &root.value else {
        panic!("not a seq")
    };
    assert_eq!(v[0].as_f64(), Some(1e-5));
    assert_eq!(v[1].as_i128(), Some(16));
    assert_eq!(v[2].as_i128(), Some(-7));
    assert_eq!(v[3].as_f64(), Some(f64::INFINITY));
    assert_eq!(v[4].as_f64(), None, "quoted scalars are strings");
    assert_eq!(v[5].as_bool(), Some(true));
    assert!(v[6].is_null());
    assert_eq!(v[7].as_f64(), None, "`inf` is not a YAML float");
    assert_eq!(v[8].as_i128(), None);
}

#[test]
fn billion_laughs_is_refused() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let err = parse(&text).unwrap_err().to_string();
    assert!(err.contains("alias bomb"), "{err}");
    assert!(err.starts_with("t.yaml:"), "{err}");
}

#[test]
fn small_aliases_are_fine() {
    let root = parse("a: &t [1, 2]\nb: *t\n").unwrap();
    let Value::Map(pairs) = &root.value else {
        panic!("not a map")
    };
    assert!(matches!(&pairs[1].1.value, Value::Seq(v) if v.len() == 2));
}

#[test]
fn deep_nesting_is_refused() {
    let text = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let err = parse(&text).unwrap_err().to_string();
    assert!(
        err.starts_with("t.yaml:1:65: spec nests deeper than 64"),
        "{err}"
    );
    let block = "- ".repeat(100) + "x";
    let err = parse(&block).unwrap_err().to_string();
    assert!(err.contains("nests deeper"), "{err}");
    let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(parse(&ok).is_ok());
}

#[test]
fn syntax_errors_have_positions() {
    let err = parse("a: [1, 2\nb: 3\n").unwrap_err().to_string();
    assert!(err.starts_with("t.yaml:"), "{err}");
    assert!(err.contains("YAML syntax error"), "{err}");
}

#[test]
fn multiple_documents_and_tags_are_refused() {
    let err = parse("a: 1\n---\nb: 2\n").unwrap_err().to_string();
    assert!(
        err.contains("t.yaml:2:1") && err.contains("single YAML document"),
        "{err}"
    );
    let err = parse("a: !!str 1\n").unwrap_err().to_string();
    assert!(err.contains("tags are not supported"), "{err}");
}

#[test]
fn nodes_through_an_alias_are_marked_at_the_use_and_name_the_anchor() {
    let text = "defs:\n  tol: &tol\n    - {max_abs: 1}\n    - {rms: x}\nuse: *tol\n";
    let root = parse(text).unwrap();
    let Value::Map(pairs) = &root.value else {
        panic!("not a map")
    };
    let used = &pairs[1].1;
    assert_eq!((used.mark.line, used.mark.col), (5, 6));
    let Value::Seq(items) = &used.value else {
        panic!("not a seq")
    };
    // The second item, defined at 4:7, is reached at the alias (5:6).
    let at = items[1].mark.at(Path::new("t.yaml"));
    assert_eq!(
        at.to_string(),
        "t.yaml:5:6: in alias `*tol` (anchor `&tol` at 2:8, this part at 4:7)"
    );
    // The definition itself is not moved.
    let Value::Map(defs) = &pairs[0].1.value else {
        panic!("not a map")
    };
    assert_eq!(defs[0].1.mark, Mark::new(2, 8));
}
