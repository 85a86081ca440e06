//! The step chain's trust check in every renderer: a chain that reproduces
//! the production call is said to; one that does not labels the layer and
//! op as not trusted, and the verdict stands.

use super::*;
use parity_record::samples_tokens::{tokens_divergent, tokens_untrusted};
use parity_record::AnyRecord;

use super::test_support::{text, TERM};

#[test]
fn an_untrusted_chain_labels_its_layer_and_op_in_every_renderer() {
    let t = text(&TERM, tokens_untrusted());
    insta::assert_snapshot!("terminal_tokens_untrusted", t);
    assert!(t.contains(
        "not trusted: the step chain computes something else than `decode` (max |Δ| 0.8125"
    ));
    assert!(t.contains("first divergent layer (not trusted): layer_1"));
    assert!(t.contains("first divergent op (not trusted):"));
    assert!(!t.contains("first divergent layer: "), "{t}");
    let md = text(&Markdown::default(), tokens_untrusted());
    assert!(md.contains("first divergent layer (not trusted)"), "{md}");
    let html = text(&Html, tokens_untrusted());
    assert!(html.contains("First divergent operation of the step chain (not trusted)"));
    assert!(html.contains("computes something else than `decode`"));
    // The divergence itself stands: the verdict is unchanged.
    assert_eq!(
        AnyRecord::from(tokens_untrusted()).exit_code(),
        AnyRecord::from(tokens_divergent()).exit_code()
    );
}

#[test]
fn a_trusted_chain_says_so_and_keeps_the_plain_labels() {
    let t = text(&TERM, tokens_divergent());
    assert!(t.contains("step chain: reproduces `decode`'s logits bit for bit"));
    assert!(t.contains("first divergent layer: layer_1"));
    assert!(!t.contains("not trusted"));
    let html = text(&Html, tokens_divergent());
    assert!(html.contains("<h2>First divergent operation</h2>"));
}

#[test]
fn a_chain_check_round_trips_and_old_records_read_without_one() {
    let json = text(&Json, tokens_untrusted());
    let back = AnyRecord::parse(&json, std::path::Path::new("tokens.json")).unwrap();
    assert_eq!(back, AnyRecord::from(tokens_untrusted()));
    let mut old: serde_json::Value = serde_json::from_str(&json).unwrap();
    old["findings"][0]
        .as_object_mut()
        .unwrap()
        .remove("chain_check");
    let back = AnyRecord::parse(&old.to_string(), std::path::Path::new("t.json")).unwrap();
    let AnyRecord::Tokens(t) = back else {
        panic!("not a tokens record")
    };
    assert_eq!(t.findings[0].chain_check, None);
}
