//! Parsing real normalized IREE output: structure, values, locations.

mod common;

use common::{attention, gemma};
use parity_mlir::Def;

#[test]
fn excerpt_functions_and_signatures() {
    let m = gemma();
    assert_eq!(m.name.as_deref(), Some("gemma3n_audio_f32"));
    let names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "mask_subsampled_c1_b128",
            "conformer_0_final_norm_c1_b128",
            "conformer_1_attention_c1_b128"
        ]
    );
    let f = attention(&m);
    assert!(f.public);
    assert_eq!(f.line, 54);
    assert_eq!(f.args.len(), 10);
    let arg0 = &f.values[f.args[0]];
    assert_eq!(arg0.name, "%arg1077");
    assert_eq!(arg0.ty.text, "tensor<1x32x64xf32>");
    assert_eq!(arg0.def, Def::Arg(0));
    let arg1 = &f.values[f.args[1]];
    assert_eq!(arg1.ty.element(), Some("i1"));
    assert_eq!(arg1.ty.shape(), Some(vec![1, 32]));
    assert_eq!(f.ops.len(), 168); // `grep -c "^    %"` over its lines
    assert_eq!(f.results.len(), 13);
    assert_eq!(f.values[f.results[12]].name, "%7925");
}
