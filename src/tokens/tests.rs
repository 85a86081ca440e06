//! The rule that a localisation naming production wrong is a counted
//! mismatch (docs/tokens.md, "A token mismatch"), on hand-built records:
//! the flips of the end-to-end faults are divergent by the truth already, so
//! only here does the rule alone decide the exit code.

use super::count_production_wrong;
use parity_record::samples_tokens::tokens_divergent;
use parity_record::{Status, TokenVerdict, TokensRecord, VerdictRule, WrongSide};

/// `samples_tokens::tokens_divergent` with its near tie (case `near_tie`, step 2,
/// not counted) localised to a layer whose f64 truth sides with `wrong`;
/// the divergent case dropped, so the near tie alone decides the status.
fn near_tie_localised(wrong: WrongSide) -> TokensRecord {
    let mut r = tokens_divergent();
    r.cases.truncate(1);
    r.cases[0].status = Status::Pass;
    let mut f = r.findings[0].clone();
    f.case = "near_tie".into();
    f.step = 2;
    f.verdict = TokenVerdict::NearTie;
    if let Some(v) = f.layer_vs_f64.as_mut() {
        v.wrong = wrong;
    }
    r.findings = vec![f];
    r.status = r.derived_status();
    r
}

#[test]
fn a_near_tie_whose_layer_names_production_wrong_is_counted_and_fails() {
    let mut r = near_tie_localised(WrongSide::Oracle);
    assert_eq!(r.derived_status(), Status::Pass, "the sample passes as is");
    let mut r2 = near_tie_localised(WrongSide::Production);
    count_production_wrong(&mut r2);
    let t = r2.cases[0].first_divergent_token.as_ref().unwrap();
    assert!(t.counted);
    assert_eq!(t.verdict, TokenVerdict::Divergent);
    assert_eq!(t.rule, Some(VerdictRule::Localisation));
    assert_eq!(r2.cases[0].status, Status::Fail);
    assert_eq!(r2.findings[0].verdict, TokenVerdict::Divergent);
    assert_eq!(r2.first_divergent_token.as_ref(), Some(t));
    assert_eq!(r2.derived_status(), Status::Fail, "never exit 0");
    // The oracle named wrong (mlx-vlm as shipped): nothing changes.
    count_production_wrong(&mut r);
    let t = r.cases[0].first_divergent_token.as_ref().unwrap();
    assert!(!t.counted);
    assert_eq!(t.rule, Some(VerdictRule::Truth));
    assert_eq!(r.derived_status(), Status::Pass);
}
