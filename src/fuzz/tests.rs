//! Property tests of the strategies and the guard (pure Rust, no IREE): every
//! generated batch is well-formed and passes the guard with the drawn valid
//! counts, its pad write stays in the padded frames, and every generated
//! breakage is refused with a message naming it, in both mask polarities.

use super::case::MelSources;
use super::strategy::{draw, malformed};
use super::{malformed as breaking, validate::validate};
use parity_spec::{FuzzSpec, Spec};
use proptest::prelude::*;

fn spec(padded: bool) -> FuzzSpec {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("subject/gemma3n/fuzz.yaml");
    let mut f = Spec::load(path)
        .expect("fuzz.yaml")
        .fuzz
        .expect("fuzz section");
    f.mask.padded = padded;
    f
}

fn sources() -> MelSources {
    let clip = |k: usize| {
        (0..128 * 32)
            .map(|i| ((i * 7 + k) % 13) as f32 - 6.0)
            .collect()
    };
    MelSources {
        clips: vec![("a".into(), clip(0)), ("b".into(), clip(1))],
        features: 32,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn generated_batches_pass_the_guard(padded in any::<bool>(), seed in any::<u64>()) {
        let (f, src) = (spec(padded), sources());
        let s = draw(&f, &src, f.shapes.clone(), usize::MAX, true);
        let d = proptest::strategy::ValueTree::current(&super::seed::tree(&s, seed).unwrap());
        let inputs = d.batch().inputs(&f, &src).unwrap();
        let (shape, valid) = validate(&f, &inputs.mel, &inputs.mask, inputs.lengths.as_ref()).unwrap();
        prop_assert_eq!(shape, d.shape);
        prop_assert_eq!(valid, d.batch().valid());
        let w = d.pad_write().unwrap();
        prop_assert!(w.start >= d.clips[w.clip].valid && w.end <= d.shape.bucket && w.start < w.end);
        let mut written = d.batch();
        written.writes.push(w);
        let again = written.inputs(&f, &src).unwrap();
        prop_assert!(validate(&f, &again.mel, &again.mask, None).is_ok());
    }

    #[test]
    fn every_breakage_is_refused_naming_it(padded in any::<bool>(), seed in any::<u64>()) {
        let (f, src) = (spec(padded), sources());
        let s = malformed(&f, &src);
        let (d, b, raw) = proptest::strategy::ValueTree::current(&super::seed::tree(&s, seed).unwrap());
        let good = d.batch().inputs(&f, &src).unwrap();
        if let Some((bad, fragment)) = breaking::apply(&f, &good, &d, b, raw) {
            let err = validate(&f, &bad.mel, &bad.mask, bad.lengths.as_ref()).unwrap_err().to_string();
            prop_assert!(err.contains(fragment), "{:?}: {}", b, err);
        }
    }
}

#[test]
fn lengths_contract_breakages_are_refused() {
    let mut f = spec(true);
    f.lengths = Some(parity_spec::LengthsContract {
        dtype: parity_tensor::DType::I32,
    });
    let src = sources();
    let s = malformed(&f, &src);
    let mut seen = std::collections::HashSet::new();
    for seed in 0..400u64 {
        let (d, b, raw) =
            proptest::strategy::ValueTree::current(&super::seed::tree(&s, seed).unwrap());
        let good = d.batch().inputs(&f, &src).unwrap();
        assert!(validate(&f, &good.mel, &good.mask, good.lengths.as_ref()).is_ok());
        if let Some((bad, fragment)) = breaking::apply(&f, &good, &d, b, raw) {
            let err = validate(&f, &bad.mel, &bad.mask, bad.lengths.as_ref())
                .unwrap_err()
                .to_string();
            assert!(err.contains(fragment), "{b:?}: {err}");
            seen.insert(format!("{b:?}"));
        }
    }
    assert_eq!(seen.len(), super::strategy::BREAKAGES.len(), "{seen:?}");
}
