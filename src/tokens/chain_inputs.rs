//! Which argument of the production call stands for each oracle input of a
//! step chain, for the chain's trust check (docs/tokens.md, "Is the chain the
//! call?"): by tensor, by name, by dtype and shape; each choice in words.

use super::chain::ProductionStep;
use parity_spec::{Arg, Case, TokenArg, TokensSpec};
use parity_tensor::Tensor;

/// Which argument of the call feeds the chain's oracle input `name`: the
/// same oracle tensor; else by name (`token`, `pos`/`position`, a state's
/// name); else the one step input (token, position, state) of the same
/// dtype and shape, the nearest in value among several; else the call's one
/// other input of that dtype and shape. None: the oracle's tensor stays (a
/// value the call computes itself, or no one input it could be).
pub fn match_input(
    name: &str,
    oracle: &Tensor,
    token_case: &Case,
    production: &ProductionStep,
) -> (String, Option<Tensor>) {
    let which = production.which;
    let fits = |t: &Tensor| t.dtype() == oracle.dtype() && t.shape() == oracle.shape();
    let same_tensor = production.args.iter().any(|(k, _)| {
        matches!(k, TokenArg::Input(Arg::Oracle(n))
            if TokensSpec::render(n, token_case).ok().as_deref() == Some(name))
    });
    if same_tensor {
        return (
            format!("`{name}`: the oracle tensor {which} reads too"),
            None,
        );
    }
    let base = name.rsplit('/').next().unwrap_or(name);
    let named = production.args.iter().find(|(k, t)| {
        fits(t)
            && match k {
                TokenArg::Token { .. } => base == "token",
                TokenArg::Position { .. } => base == "pos" || base == "position",
                TokenArg::State(s) => s == base,
                TokenArg::Input(_) => false,
            }
    });
    if let Some((k, t)) = named {
        return (
            format!("`{name}` <- {which}'s {} (by name)", describe(k)),
            Some(t.clone()),
        );
    }
    // Only the step's own inputs are matched by shape: an oracle input of the
    // call of the same shape may be another tensor altogether.
    let steps: Vec<&(TokenArg, Tensor)> = production
        .args
        .iter()
        .filter(|(k, t)| !matches!(k, TokenArg::Input(_)) && fits(t))
        .collect();
    let reference = oracle.to_f64_vec();
    let distance = |t: &Tensor| {
        let v = t.to_f64_vec();
        v.iter()
            .zip(&reference)
            .map(|(a, b)| (a - b) * (a - b))
            .sum::<f64>()
    };
    let nearest = steps
        .iter()
        .map(|c| (c, distance(&c.1)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    if let Some(((k, t), _)) = nearest {
        let how = if steps.len() == 1 {
            "the one step input of its dtype and shape".to_string()
        } else {
            format!(
                "the nearest in value of {} step inputs of its dtype and shape",
                steps.len()
            )
        };
        return (
            format!("`{name}` <- {which}'s {} ({how})", describe(k)),
            Some(t.clone()),
        );
    }
    // Then an ordinary input of the call, when it is the only one of this
    // dtype and shape (a prompt row the call takes as is, named otherwise).
    let inputs: Vec<&(TokenArg, Tensor)> = production
        .args
        .iter()
        .filter(|(k, t)| matches!(k, TokenArg::Input(_)) && fits(t))
        .collect();
    let equal = |t: &Tensor| t.to_f64_vec() == reference;
    match inputs.as_slice() {
        [(k, t)] => (
            format!(
                "`{name}` <- {which}'s {} (the one input of its dtype and shape; {} the oracle's)",
                describe(k),
                if equal(t) { "equal to" } else { "not equal to" }
            ),
            Some(t.clone()),
        ),
        [] => (
            format!(
                "`{name}`: the oracle's ({which} takes no input of its dtype and shape: a value it computes itself)"
            ),
            None,
        ),
        several => (
            format!(
                "`{name}`: the oracle's ({which} takes {} inputs of its dtype and shape{})",
                several.len(),
                match several.iter().find(|(_, t)| equal(t)) {
                    Some((k, _)) => format!("; equal to its {}", describe(k)),
                    None => ", none named like it".to_string(),
                }
            ),
            None,
        ),
    }
}

fn describe(k: &TokenArg) -> String {
    match k {
        TokenArg::Token { .. } => "token".into(),
        TokenArg::Position { .. } => "position".into(),
        TokenArg::State(s) => format!("state `{s}`"),
        TokenArg::Input(Arg::Oracle(n)) => format!("oracle input `{n}`"),
        TokenArg::Input(_) => "literal input".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parity_tensor::DType;
    use std::collections::BTreeMap;

    fn t(shape: &[usize], values: &[f64]) -> Tensor {
        Tensor::from_f64_as(DType::F32, shape.to_vec(), values).unwrap()
    }

    fn case() -> Case {
        Case {
            name: "alpha".into(),
            vars: BTreeMap::new(),
        }
    }

    /// A decode call: token, position, two caches, and one oracle input.
    fn decode() -> ProductionStep {
        let int = |v: f64, shape: &[usize]| {
            Tensor::from_f64_as(DType::I32, shape.to_vec(), &[v]).unwrap()
        };
        ProductionStep {
            which: "decode",
            step: 3,
            args: vec![
                (
                    TokenArg::Token {
                        dtype: DType::I32,
                        shape: vec![1, 1],
                    },
                    int(7.0, &[1, 1]),
                ),
                (
                    TokenArg::Position {
                        dtype: DType::I32,
                        shape: vec![],
                    },
                    int(9.0, &[]),
                ),
                (TokenArg::State("k_cache".into()), t(&[2], &[1.0, 2.0])),
                (TokenArg::State("v_cache".into()), t(&[2], &[-5.0, 8.0])),
                (
                    TokenArg::Input(Arg::Oracle("{case}/rows".into())),
                    t(&[3], &[0.5, 0.5, 0.5]),
                ),
            ],
            logits: t(&[2], &[0.0, 1.0]),
        }
    }

    #[test]
    fn step_inputs_are_found_by_name_then_by_value() {
        let p = decode();
        let tok = Tensor::from_f64_as(DType::I32, vec![1, 1], &[3.0]).unwrap();
        let (line, v) = match_input("alpha.s03/token", &tok, &case(), &p);
        assert_eq!(line, "`alpha.s03/token` <- decode's token (by name)");
        assert_eq!(
            v.unwrap().to_f64_vec(),
            [7.0],
            "production's token, not the oracle's"
        );
        // `k_all` names no input: the nearer of the two caches in value.
        let (line, v) = match_input("alpha.s03/v_all", &t(&[2], &[-4.9, 8.1]), &case(), &p);
        assert_eq!(
            line,
            "`alpha.s03/v_all` <- decode's state `v_cache` (the nearest in value of 2 step inputs of its dtype and shape)"
        );
        assert_eq!(v.unwrap().to_f64_vec(), [-5.0, 8.0]);
    }

    #[test]
    fn an_oracle_input_is_the_call_s_own_only_when_unambiguous() {
        let p = decode();
        let (line, v) = match_input("alpha/rows", &t(&[3], &[0.0; 3]), &case(), &p);
        assert_eq!(line, "`alpha/rows`: the oracle tensor decode reads too");
        assert!(v.is_none());
        let (line, v) = match_input("alpha.s03/ple", &t(&[3], &[0.5, 0.5, 0.25]), &case(), &p);
        assert_eq!(
            line,
            "`alpha.s03/ple` <- decode's oracle input `{case}/rows` (the one input of its dtype and shape; not equal to the oracle's)"
        );
        assert!(v.is_some());
        let (line, v) = match_input("alpha.s03/hidden", &t(&[4], &[0.0; 4]), &case(), &p);
        assert_eq!(
            line,
            "`alpha.s03/hidden`: the oracle's (decode takes no input of its dtype and shape: a value it computes itself)"
        );
        assert!(v.is_none());
    }
}
