//! A request's front end in the in-process engine: its prompt's embeddings
//! and dense PLE, which the slot prefill takes. Text-only prompts run the
//! serving module's `embed_text_p{P}`; audio prompts the spec's
//! `audio_encode` stage (as `parity check` calls it), then the merge: the
//! serving module's `audio_merge_ple_p{P}_c{C}` where it has one (a prompt
//! length no merge of the audio module takes, such as the audio-only
//! prompt), else the spec's `audio_merge_ple` stage.

use super::admission::Prepared;
use super::engine::InProcess;
use super::error::ServeError;
use parity_spec::{Arg, Case, Stage};
use parity_tensor::Tensor;
use std::collections::{BTreeMap, HashMap};

/// Stage outputs by (stage, output).
type Outputs = HashMap<(String, String), Tensor>;

impl InProcess {
    /// The merged embeddings and dense PLE of a prepared request.
    pub(super) fn front_end(&mut self, p: &Prepared) -> Result<(Tensor, Tensor), ServeError> {
        match &p.audio_case {
            None => {
                let sources = &self.sources;
                let weight = |n: &str| sources.weight(n).map_err(|e| e.to_string());
                self.slot_module
                    .embed_text(&self.modules, &weight, p.prompt.clone())
            }
            Some(case) => self.audio_front_end(case, p),
        }
    }

    /// The stage case whose stages encode `case`'s clips: the spec's own, or,
    /// for a case of the oracle store that is not a stage case (a serving-only
    /// case such as `audio_only`), one with the spec's template variables
    /// `clips` and `bucket` from its `mel` shape and `P` from its prompt.
    fn audio_stage_case(&self, case: &str, p: &Prepared) -> Result<Case, ServeError> {
        if let Some(c) = self.spec.case(case) {
            return Ok(c.clone());
        }
        let name = format!("{case}/mel");
        let mel = self
            .sources
            .oracle(&name)
            .map_err(|e| ServeError::inputs("the audio path", e))?;
        let (clips, bucket) = match mel.shape() {
            [c, f, _] => (*c, *f),
            s => {
                return Err(ServeError::Convention(format!(
                    "the audio path: oracle tensor `{name}` has shape {s:?}, expected [clips, frames, bins]"
                )))
            }
        };
        let vars = BTreeMap::from([
            ("clips".to_string(), clips.to_string()),
            ("bucket".to_string(), bucket.to_string()),
            ("P".to_string(), p.prompt_len.to_string()),
        ]);
        Ok(Case {
            name: case.to_string(),
            vars,
        })
    }

    /// Runs `audio_encode`, then the merge (module doc) for `case`.
    fn audio_front_end(
        &mut self,
        case: &str,
        p: &Prepared,
    ) -> Result<(Tensor, Tensor), ServeError> {
        let c = self.audio_stage_case(case, p)?;
        let stages = self.spec.instantiate(&c)?;
        let mut outputs = Outputs::new();
        self.run_stage(&stages, "audio_encode", case, &mut outputs)?;
        let own =
            self.slot_module
                .audio_merge_function(&self.modules, p.prompt_len as usize, p.clips);
        if let Some(f) = own {
            let rows = self
                .sources
                .oracle(&format!("{case}/audio_rows"))
                .map_err(|e| ServeError::inputs(&format!("`{f}`"), e))?;
            let encode = "audio_encode".to_string();
            let mut input = |n: &str| match n {
                "tokens" => Some(p.prompt.clone()),
                "audio_rows" => Some(rows.clone()),
                other => outputs.get(&(encode.clone(), other.to_string())).cloned(),
            };
            let sources = &self.sources;
            let weight = |n: &str| sources.weight(n).map_err(|e| e.to_string());
            return self
                .slot_module
                .audio_merge(&self.modules, &weight, &f, &mut input);
        }
        self.run_stage(&stages, "audio_merge_ple", case, &mut outputs)?;
        let mut get = |o: &str| {
            outputs
                .remove(&("audio_merge_ple".to_string(), o.to_string()))
                .ok_or_else(|| {
                    ServeError::Convention(format!(
                        "stage `audio_merge_ple` of case `{case}` has no output `{o}`"
                    ))
                })
        };
        let emb = get("embeddings")?;
        let ple = get("dense_ple")?;
        Ok((emb, ple))
    }

    /// Runs the instantiated stage `name` of `case`, its outputs into `outputs`.
    fn run_stage(
        &self,
        stages: &[Stage],
        name: &str,
        case: &str,
        outputs: &mut Outputs,
    ) -> Result<(), ServeError> {
        let stage = stages.iter().find(|s| s.name == name).ok_or_else(|| {
            ServeError::Convention(format!(
                "{}: no stage `{name}` (the audio path's front end)",
                self.spec.path.display()
            ))
        })?;
        let at = format!("stage `{name}` of case `{case}`");
        let fail = |m: String| ServeError::Convention(format!("{at}: {m}"));
        let mut args = Vec::with_capacity(stage.args.len());
        for a in &stage.args {
            args.push(match a {
                Arg::Oracle(n) => self
                    .sources
                    .oracle(n)
                    .map_err(|e| ServeError::inputs(&at, e))?,
                Arg::Weight(n) => self
                    .sources
                    .weight(n)
                    .map_err(|e| ServeError::inputs(&at, e))?,
                Arg::Literal {
                    dtype,
                    shape,
                    values,
                } => Tensor::from_f64_as(*dtype, shape.clone(), values)
                    .map_err(|e| fail(e.to_string()))?,
                Arg::Stage { stage, output } => outputs
                    .get(&(stage.clone(), output.clone()))
                    .cloned()
                    .ok_or_else(|| {
                        fail(format!(
                            "`{stage}.{output}` is not an audio front-end output"
                        ))
                    })?,
            });
        }
        let res = self.invoke(&stage.module, &stage.function, &args)?;
        for (o, t) in stage.outputs.iter().zip(res) {
            outputs.insert((name.to_string(), o.name.clone()), t);
        }
        Ok(())
    }
}
