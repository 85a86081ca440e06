//! Properties of the token-parity arithmetic (`parity::tokens::math`): the
//! greedy choice and top-k agree and break ties by lowest index, gaps in ULPs
//! count representable values, the verdict follows its documented rule and is
//! monotone in the noise, and the softmax statistics behave as distances.

use parity::tokens::math::{
    argmax, judge, step_stats, top_gap, top_gap_ulp, top_k, truth_deficits, verdict_rule,
};
use parity::tokens::noise::{perturb, reference};
use parity_compare::{ulp_distance, UlpDType};
use parity_record::{NoiseMeasurement, NoiseSource, TokenVerdict, VerdictRule};
use parity_tensor::{DType, Tensor};
use proptest::prelude::*;

fn logits() -> impl Strategy<Value = Vec<f64>> {
    // Small integers make exact ties common; the float part keeps gaps varied.
    prop::collection::vec(
        prop_oneof![(-4i32..4).prop_map(f64::from), -30.0f64..30.0],
        2..40,
    )
}

proptest! {
    #[test]
    fn argmax_is_top1_and_lowest_index_on_ties(l in logits()) {
        let a = argmax(&l).unwrap();
        let max = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        prop_assert_eq!(l[a], max);
        prop_assert!(l[..a].iter().all(|&x| x < max), "an earlier index holds the max");
        prop_assert_eq!(top_k(&l, 1)[0].0, a);
    }

    #[test]
    fn top_k_is_sorted_and_complete(l in logits(), k in 1usize..50) {
        let t = top_k(&l, k);
        prop_assert_eq!(t.len(), k.min(l.len()));
        for w in t.windows(2) {
            prop_assert!(w[0].1 > w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0));
        }
        let cut = t.last().unwrap().1;
        let chosen: Vec<usize> = t.iter().map(|x| x.0).collect();
        for (i, &x) in l.iter().enumerate() {
            if !chosen.contains(&i) {
                prop_assert!(x <= cut, "left out {} > kept {}", x, cut);
            }
            prop_assert_eq!(l[i], x);
        }
    }

    #[test]
    fn gap_in_ulps_counts_f32_values_between_the_top_two(l in logits()) {
        let t = top_k(&l, 2);
        let ulps = top_gap_ulp(&l, UlpDType::F32);
        prop_assert_eq!(ulps, ulp_distance(t[0].1, t[1].1, UlpDType::F32).unwrap());
        prop_assert_eq!(ulps == 0, (t[0].1 as f32) == (t[1].1 as f32));
        prop_assert!(top_gap(&l) >= 0.0);
        // A coarser dtype never counts more values in the same interval.
        prop_assert!(top_gap_ulp(&l, UlpDType::Bf16) <= ulps);
    }

    #[test]
    fn nudging_one_logit_by_n_ulps_gives_a_gap_of_n(x in -20.0f32..20.0, n in 1u32..1000) {
        let mut y = x;
        for _ in 0..n { y = f32_next_up(y); }
        let l = vec![f64::from(x), f64::from(y), -100.0];
        prop_assert_eq!(top_gap_ulp(&l, UlpDType::F32), u64::from(n));
    }

    #[test]
    fn verdict_follows_the_rule_and_is_monotone_in_noise(
        l in logits(), o in logits(), noise in 0.0f64..5.0, more in 0.0f64..5.0,
    ) {
        let n = l.len().min(o.len());
        let (p, o) = (&l[..n], &o[..n]);
        let a = argmax(p).unwrap();
        let b = argmax(o).unwrap();
        prop_assume!(a != b);
        let j = judge(p, o, a, b, Some(noise), None);
        prop_assert!(j.production_margin >= 0.0 && j.oracle_margin >= 0.0);
        let expected = if j.oracle_margin == 0.0 || j.production_margin + j.oracle_margin <= 2.0 * noise {
            TokenVerdict::NearTie
        } else {
            TokenVerdict::Divergent
        };
        prop_assert_eq!(j.verdict, expected);
        // More noise never turns a near tie into a divergence.
        if j.verdict == TokenVerdict::NearTie {
            prop_assert_eq!(judge(p, o, a, b, Some(noise + more), None).verdict, TokenVerdict::NearTie);
        }
        // No measurement is noise 0: only exact oracle ties are near ties then.
        let none = judge(p, o, a, b, None, None).verdict;
        prop_assert_eq!(none == TokenVerdict::NearTie, j.oracle_margin == 0.0 || j.production_margin + j.oracle_margin <= 0.0);
    }

    #[test]
    fn kl_is_a_divergence_and_ignores_a_common_shift(l in logits(), o in logits(), c in -50.0f64..50.0) {
        let n = l.len().min(o.len());
        let (p, o) = (&l[..n], &o[..n]);
        let same = step_stats(o, o, 0);
        prop_assert!(same.kl.abs() < 1e-12 && same.delta_p == 0.0 && same.max_abs_delta_logit == 0.0);
        let s = step_stats(o, p, 0);
        prop_assert!(s.kl >= 0.0);
        prop_assert!((-1.0..=1.0).contains(&s.delta_p));
        let shifted: Vec<f64> = p.iter().map(|x| x + c).collect();
        let t = step_stats(o, &shifted, 0);
        prop_assert!((t.kl - s.kl).abs() <= 1e-9 * (1.0 + s.kl), "{} vs {}", t.kl, s.kl);
        prop_assert!((t.delta_p - s.delta_p).abs() <= 1e-9);
    }

    #[test]
    fn the_truth_decides_whatever_the_margins(
        p in logits(), o in logits(), t in logits(), noise in 0.0f64..3.0,
    ) {
        let n = p.len().min(o.len()).min(t.len());
        let (p, o, t) = (&p[..n], &o[..n], &t[..n]);
        let a = argmax(p).unwrap();
        let b = argmax(o).unwrap();
        prop_assume!(a != b);
        let j = judge(p, o, a, b, Some(noise), Some(t));
        prop_assert_eq!(j.rule, VerdictRule::Truth);
        let (da, db) = truth_deficits(t, a, b);
        prop_assert!(da >= 0.0 && db >= 0.0);
        // near_tie exactly when both tokens lie within the noise of the truth's top-1.
        prop_assert_eq!(j.verdict == TokenVerdict::NearTie, da <= noise && db <= noise);
        // The truth's top-1 is the oracle's token by more than the noise: divergent.
        if db == 0.0 && da > noise {
            prop_assert_eq!(j.verdict, TokenVerdict::Divergent);
        }
    }

    #[test]
    fn perturbation_moves_every_finite_element_by_exactly_k_ulps(
        v in prop::collection::vec(-1.0e3f32..1.0e3, 1..64), k in 1u32..16, seed in 1u64..u64::MAX,
    ) {
        let vals: Vec<f64> = v.iter().map(|&x| f64::from(x)).collect();
        for (dtype, ulp) in [(DType::F32, UlpDType::F32), (DType::Bf16, UlpDType::Bf16), (DType::F16, UlpDType::F16)] {
            let t = Tensor::from_f64_as(dtype, vec![vals.len()], &vals).unwrap();
            let mut rng = seed;
            let moved = perturb(&t, k, &mut rng);
            prop_assert_eq!(moved.shape(), t.shape());
            for (x, y) in t.to_f64_vec().into_iter().zip(moved.to_f64_vec()) {
                prop_assert!(y.is_finite());
                prop_assert_eq!(ulp_distance(x, y, ulp), Some(u64::from(k)), "{} -> {} ({:?})", x, y, dtype);
            }
        }
        // Integers are left alone.
        let i = Tensor::from_f64_as(DType::I32, vec![3], &[1.0, 2.0, 3.0]).unwrap();
        let mut rng = seed;
        prop_assert_eq!(perturb(&i, k, &mut rng).to_f64_vec(), vec![1.0, 2.0, 3.0]);
    }
}

#[test]
fn the_reference_noise_is_the_spec_else_the_truth_else_the_perturbation() {
    let m = |source, value: Option<f64>| NoiseMeasurement {
        source,
        value,
        detail: String::new(),
    };
    let all = |spec, truth, pert| {
        vec![
            m(NoiseSource::Spec, spec),
            m(NoiseSource::Truth, truth),
            m(NoiseSource::Perturbation, pert),
        ]
    };
    let r = reference(all(Some(0.5), Some(1e-5), Some(2e-5)), 0.0);
    assert_eq!((r.source, r.value), (NoiseSource::Spec, Some(0.5)));
    let r = reference(all(None, Some(1e-5), Some(2e-5)), 0.0);
    assert_eq!((r.source, r.value), (NoiseSource::Truth, Some(1e-5)));
    assert_eq!(r.sources.len(), 3, "every source is kept with its value");
    let r = reference(all(None, None, Some(2e-5)), 0.0);
    assert_eq!((r.source, r.value), (NoiseSource::Perturbation, Some(2e-5)));
    let r = reference(all(None, None, None), 0.0);
    assert_eq!((r.source, r.value), (NoiseSource::None, None));
    // The floor raises whatever is used.
    let r = reference(all(None, Some(1e-5), None), 1e-3);
    assert_eq!((r.source, r.value), (NoiseSource::Truth, Some(1e-3)));
    let r = reference(all(None, None, None), 1e-3);
    assert_eq!(r.value, Some(1e-3));
}

#[test]
fn a_run_measured_noise_would_pass_the_flips_the_reference_noise_fails() {
    // The margins of examples/tokens' decode scale fault at step 3 (production
    // 0, oracle 13): 1.318 needed; the old noise was the largest |Δlogit| of
    // the three agreeing steps before, all carrying the fault: 0.908.
    let (need, old, reference) = (1.318, 0.908, 4.0e-6);
    let rule = |noise| verdict_rule(need / 2.0, need / 2.0, None, Some(noise)).0;
    assert_eq!(rule(old), TokenVerdict::NearTie, "the old, wrong green");
    assert_eq!(rule(reference), TokenVerdict::Divergent);
}

#[test]
fn exact_ties_and_nan() {
    assert_eq!(argmax(&[1.0, 3.0, 3.0]), Some(1));
    assert_eq!(argmax(&[1.0, f64::NAN]), None);
    assert_eq!(argmax(&[]), None);
    // An exact tie in the oracle is a near tie even with no noise at all.
    let j = judge(&[0.0, 2.0], &[1.0, 1.0], 1, 0, None, None);
    assert_eq!((j.oracle_margin, j.verdict), (0.0, TokenVerdict::NearTie));
    // A production tie alone is not: the oracle prefers its token by 1.
    let j = judge(&[1.0, 1.0], &[2.0, 1.0], 1, 0, Some(0.25), None);
    assert_eq!(j.verdict, TokenVerdict::Divergent);
    assert_eq!(
        judge(&[1.0, 1.0], &[2.0, 1.0], 1, 0, Some(0.5), None).verdict,
        TokenVerdict::NearTie
    );
}

fn f32_next_up(x: f32) -> f32 {
    let b = x.to_bits();
    f32::from_bits(if x == 0.0 {
        1
    } else if x > 0.0 {
        b + 1
    } else {
        b - 1
    })
}
