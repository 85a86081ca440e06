//! Per-case instantiation: stage templates with `{case}` / `{var}` filled in.

use crate::error::{Position, SpecError, SpecErrorKind};
use crate::model::{Arg, Case, Location, MaskSource, SliceSpec, Spec, Stage};
use crate::template::{render, TemplateError};

/// Renders one template of `stage`, mapping failures to errors at `loc`.
fn fill(
    spec: &Spec,
    stage: &Stage,
    case: &Case,
    text: &str,
    loc: Location,
) -> Result<String, SpecError> {
    let at = Position {
        file: spec.path.clone(),
        line: loc.line,
        col: loc.col,
        alias: None,
    };
    render(text, case).map_err(|e| match e {
        TemplateError::UnknownVariable(var) => {
            let mut defined: Vec<&str> = vec!["case"];
            defined.extend(case.vars.keys().map(String::as_str));
            SpecErrorKind::UnknownVariable {
                at,
                stage: stage.name.clone(),
                text: text.to_string(),
                var,
                case: case.name.clone(),
                defined: defined.join(", "),
            }
            .into()
        }
        TemplateError::Syntax(message) => SpecErrorKind::Template {
            at,
            stage: stage.name.clone(),
            text: text.to_string(),
            message,
        }
        .into(),
    })
}

/// One stage with every template rendered for `case`; the module must be declared.
fn instantiate_stage(spec: &Spec, stage: &Stage, case: &Case) -> Result<Stage, SpecError> {
    let mut out = stage.clone();
    out.module = fill(spec, stage, case, &stage.module, stage.locations.module)?;
    if !spec.subject.modules.contains_key(&out.module) {
        let declared: Vec<&str> = spec.subject.modules.keys().map(String::as_str).collect();
        return Err(SpecErrorKind::UndeclaredModule {
            at: Position {
                file: spec.path.clone(),
                line: stage.locations.module.line,
                col: stage.locations.module.col,
                alias: None,
            },
            stage: stage.name.clone(),
            module: out.module,
            case: if stage.module.contains('{') {
                format!(" (case `{}`)", case.name)
            } else {
                String::new()
            },
            declared: declared.join(", "),
        }
        .into());
    }
    if let Some(slice) = &mut out.slice {
        let loc = stage.locations.function;
        slice.function = fill(spec, stage, case, &slice.function, loc)?;
        for (points, locs) in [
            (&mut slice.from, &stage.locations.slice_from),
            (&mut slice.to, &stage.locations.slice_to),
        ] {
            for (i, point) in points.iter_mut().enumerate() {
                let loc = locs.get(i).copied().unwrap_or(loc);
                *point = fill(spec, stage, case, point, loc)?;
            }
        }
        out.function = SliceSpec::entry_name(&stage.name, &slice.function);
    } else {
        out.function = fill(spec, stage, case, &stage.function, stage.locations.function)?;
    }
    for (i, arg) in out.args.iter_mut().enumerate() {
        let loc = stage
            .locations
            .args
            .get(i)
            .copied()
            .unwrap_or(stage.location);
        match arg {
            Arg::Oracle(name) | Arg::Weight(name) => *name = fill(spec, stage, case, name, loc)?,
            Arg::Stage { .. } | Arg::Literal { .. } => {}
        }
    }
    if let Some(bind) = &mut out.bind {
        for rule in &mut bind.rules {
            if let Arg::Oracle(name) | Arg::Weight(name) = &mut rule.source {
                *name = fill(spec, stage, case, name, rule.location)?;
            }
        }
    }
    for (i, output) in out.outputs.iter_mut().enumerate() {
        let loc = stage
            .locations
            .outputs
            .get(i)
            .copied()
            .unwrap_or(stage.location);
        output.oracle = fill(spec, stage, case, &output.oracle, loc)?;
        if let Some(truth) = &mut output.truth {
            *truth = fill(spec, stage, case, truth, loc)?;
        }
        if let Some(mask) = &mut output.mask {
            if let MaskSource::Oracle(name) = &mut mask.source {
                *name = fill(spec, stage, case, name, loc)?;
            }
        }
    }
    Ok(out)
}

/// All stages (in file order) rendered for `case`.
pub(crate) fn instantiate(spec: &Spec, case: &Case) -> Result<Vec<Stage>, SpecError> {
    spec.stages
        .iter()
        .map(|s| instantiate_stage(spec, s, case))
        .collect()
}
