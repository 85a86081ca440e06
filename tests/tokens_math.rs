//! Properties of the token-parity arithmetic (`parity::tokens::math`): the
//! greedy choice and top-k agree and break ties by lowest index, gaps in ULPs
//! count representable values, the verdict follows its documented rule and is
//! monotone in the noise, and the softmax statistics behave as distances.

use parity::tokens::math::{argmax, judge, noise_before, step_stats, top_gap, top_gap_ulp, top_k};
use parity_compare::{ulp_distance, UlpDType};
use parity_record::TokenVerdict;
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
        let j = judge(p, o, a, b, Some(noise));
        prop_assert!(j.production_margin >= 0.0 && j.oracle_margin >= 0.0);
        let expected = if j.oracle_margin == 0.0 || j.production_margin + j.oracle_margin <= 2.0 * noise {
            TokenVerdict::NearTie
        } else {
            TokenVerdict::Divergent
        };
        prop_assert_eq!(j.verdict, expected);
        // More noise never turns a near tie into a divergence.
        if j.verdict == TokenVerdict::NearTie {
            prop_assert_eq!(judge(p, o, a, b, Some(noise + more)).verdict, TokenVerdict::NearTie);
        }
        // No measurement is noise 0: only exact oracle ties are near ties then.
        let none = judge(p, o, a, b, None).verdict;
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
    fn noise_is_the_largest_delta_of_the_agreeing_steps_before(
        steps in prop::collection::vec((0.0f64..3.0, any::<bool>()), 1..30), at in 0usize..30,
    ) {
        let deltas: Vec<f64> = steps.iter().map(|s| s.0).collect();
        let agree: Vec<bool> = steps.iter().map(|s| s.1).collect();
        let (noise, used) = noise_before(&deltas, &agree, at);
        let want: Vec<usize> = (0..at.min(deltas.len())).filter(|&s| agree[s]).collect();
        prop_assert_eq!(&used, &want);
        let max = want.iter().map(|&s| deltas[s]).fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        prop_assert_eq!(noise, max);
        // Nothing at or after the step counts, whatever it holds.
        let mut later = deltas.clone();
        for d in later.iter_mut().skip(at) { *d = 1e9; }
        prop_assert_eq!(noise_before(&later, &agree, at).0, max);
    }
}

#[test]
fn exact_ties_and_nan() {
    assert_eq!(argmax(&[1.0, 3.0, 3.0]), Some(1));
    assert_eq!(argmax(&[1.0, f64::NAN]), None);
    assert_eq!(argmax(&[]), None);
    // An exact tie in the oracle is a near tie even with no noise at all.
    let j = judge(&[0.0, 2.0], &[1.0, 1.0], 1, 0, None);
    assert_eq!((j.oracle_margin, j.verdict), (0.0, TokenVerdict::NearTie));
    // A production tie alone is not: the oracle prefers its token by 1.
    let j = judge(&[1.0, 1.0], &[2.0, 1.0], 1, 0, Some(0.25));
    assert_eq!(j.verdict, TokenVerdict::Divergent);
    assert_eq!(
        judge(&[1.0, 1.0], &[2.0, 1.0], 1, 0, Some(0.5)).verdict,
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
