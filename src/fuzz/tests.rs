//! Property tests of the strategies and the guard (pure Rust, no IREE): every
//! generated batch is well-formed and passes the guard with the drawn valid
//! counts, its pad writes stay in the padded frames, and every generated
//! breakage is refused with a message naming it, in both mask polarities and
//! both layouts (prefix; arbitrary, with holes); a case that needs a hole
//! shrinks to the smallest one.

use super::case::MelSources;
use super::strategy::{draw, malformed};
use super::{malformed as breaking, validate::validate};
use parity_spec::{FuzzSpec, Spec};
use proptest::prelude::*;

fn spec(padded: bool) -> FuzzSpec {
    layout_spec(padded, false)
}

fn layout_spec(padded: bool, arbitrary: bool) -> FuzzSpec {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("subject/gemma3n/fuzz.yaml");
    let mut f = Spec::load(path)
        .expect("fuzz.yaml")
        .fuzz
        .expect("fuzz section");
    f.mask.padded = padded;
    if arbitrary {
        f.mask.layout = parity_spec::MaskLayout::Arbitrary;
    }
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
    fn generated_batches_pass_the_guard(padded in any::<bool>(), arbitrary in any::<bool>(), seed in any::<u64>()) {
        let (f, src) = (layout_spec(padded, arbitrary), sources());
        let s = draw(&f, &src, f.shapes.clone(), usize::MAX, true);
        let d = proptest::strategy::ValueTree::current(&super::seed::tree(&s, seed).unwrap());
        let inputs = d.batch().inputs(&f, &src).unwrap();
        let (shape, valid) = validate(&f, &inputs.mel, &inputs.mask, inputs.lengths.as_ref()).unwrap();
        prop_assert_eq!(shape, d.shape);
        prop_assert_eq!(valid, d.batch().valid());
        for c in &d.clips {
            prop_assert!(c.span() < d.shape.bucket, "every clip keeps a padded frame");
            prop_assert!(arbitrary || c.holes.is_empty());
        }
        let writes = d.pad_writes();
        prop_assert!(!writes.is_empty());
        let target = &d.clips[d.target];
        for w in &writes {
            prop_assert!(w.start < w.end && w.end <= d.shape.bucket);
            prop_assert!((w.start..w.end).all(|t| !target.frames().contains(&t)), "{:?} hits a valid frame of {:?}", w, target);
        }
        let mut written = d.batch();
        written.writes = writes;
        let again = written.inputs(&f, &src).unwrap();
        prop_assert!(validate(&f, &again.mel, &again.mask, again.lengths.as_ref()).is_ok());
        // The written values are in padded frames only: the valid frames are the canonical batch's.
        let (m0, m1) = (inputs.mel.to_f64_vec(), again.mel.to_f64_vec());
        let (t, nf) = (d.shape.bucket, f.mel.features);
        for (ci, c) in d.clips.iter().enumerate() {
            for k in c.frames() {
                let at = (ci * t + k) * nf;
                prop_assert_eq!(&m0[at..at + nf], &m1[at..at + nf]);
            }
        }
    }

    #[test]
    fn every_breakage_is_refused_naming_it(padded in any::<bool>(), arbitrary in any::<bool>(), seed in any::<u64>()) {
        let (f, src) = (layout_spec(padded, arbitrary), sources());
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

#[test]
fn a_case_that_needs_a_hole_shrinks_to_one_padded_frame_first() {
    let (f, src) = (layout_spec(true, true), sources());
    let s = draw(&f, &src, f.shapes.clone(), usize::MAX, true);
    let has_hole = |d: &super::strategy::Draw| d.clips.iter().any(|c| !c.holes.is_empty());
    let seed = (0..200u64)
        .find(|&k| {
            let d = proptest::strategy::ValueTree::current(&super::seed::tree(&s, k).unwrap());
            has_hole(&d) && d.clips.iter().any(|c| c.valid > 3)
        })
        .expect("a seed with a hole");
    let mut tree = super::seed::tree(&s, seed).unwrap();
    let (d, _, steps) =
        super::seed::shrink(&mut tree, (), 1024, &mut |d| has_hole(d).then_some(()));
    assert!(steps > 0);
    assert_eq!(d.shape, f.shapes[0]);
    let holed: Vec<_> = d.clips.iter().filter(|c| !c.holes.is_empty()).collect();
    assert_eq!(holed.len(), 1, "{d:?}");
    assert_eq!(holed[0].valid, f.mask.min_valid, "{d:?}");
    assert_eq!(
        holed[0].frames(),
        vec![1],
        "one padded frame, then the valid one: {d:?}"
    );
    let inputs = d.batch().inputs(&f, &src).unwrap();
    let mask = inputs.mask.to_f64_vec();
    assert_eq!(&mask[..3], &[1.0, 0.0, 1.0], "padded, valid, padded");
}
