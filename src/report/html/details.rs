//! The run page's detail sections, below the table: ULP histograms, error
//! heatmaps of failing outputs, the `vs_f64` arbitration, provenance.

use super::esc::esc;
use super::{charts, table, MAX_HEATMAPS, MAX_HISTOGRAMS};
use parity_record::{RunRecord, Status};
use std::fmt::Write as _;

pub(super) fn histograms(out: &mut String, run: &RunRecord, omitted: &mut Vec<String>) {
    let mut all: Vec<_> = table::rows(run)
        .into_iter()
        .filter_map(|r| {
            let o = r.output?;
            let m = o.metrics.as_ref()?;
            (m.ulp_histogram.iter().any(|b| b[2] > 0)).then_some((r.stage, o, m))
        })
        .collect();
    all.sort_by_key(|(_, o, m)| (o.status != Status::Fail, std::cmp::Reverse(m.max_ulp)));
    if all.is_empty() {
        return;
    }
    out.push_str("<h2>ULP histograms</h2><div class=\"grid\">");
    for (s, o, m) in all.iter().take(MAX_HISTOGRAMS) {
        let title = format!(
            "{} . {} ({}, {})",
            s.display_name(run.is_multi_target()),
            o.name,
            s.case,
            s.mode.name()
        );
        let _ = write!(
            out,
            "<figure><figcaption>{} <span class=\"badge {}\">{}</span> max {} p99 {} ({})</figcaption>{}</figure>",
            esc(&title),
            o.status.name(),
            o.status.name(),
            opt(m.max_ulp),
            opt(m.ulp_p99),
            esc(m.ulp_dtype.as_deref().unwrap_or("-")),
            charts::ulp_histogram(&m.ulp_histogram, &title)
        );
    }
    out.push_str("</div>");
    if all.len() > MAX_HISTOGRAMS {
        omitted.push(format!(
            "{} of {} ULP histograms (the passing outputs with the smallest max ULP; every ULP \
             figure is still in the table)",
            all.len() - MAX_HISTOGRAMS,
            all.len()
        ));
    }
}

pub(super) fn heatmaps(out: &mut String, run: &RunRecord, omitted: &mut Vec<String>) {
    let first = run.first_divergence.as_ref();
    let mut maps: Vec<_> = table::rows(run)
        .into_iter()
        .filter_map(|r| Some((r.stage, r.output?, r.output?.error_map.as_ref()?)))
        .collect();
    maps.sort_by_key(|(s, o, _)| !first.is_some_and(|d| d.is_at(s, &o.name)));
    if maps.is_empty() {
        return;
    }
    out.push_str("<h2>Where the error is (failing outputs)</h2>");
    for (k, (s, o, map)) in maps.iter().take(MAX_HEATMAPS).enumerate() {
        let positive = map.max_abs.iter().flatten().copied().filter(|v| *v > 0.0);
        let (lo, hi) = positive.fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
        let _ = write!(
            out,
            "<figure class=\"heatmap\"><figcaption>{} . {} ({}, {}), shape {:?}: rows = axis {} \
             ({} in {} cells), columns = axis {} ({} in {} cells), other axes reduced by max; \
             colour log10 max |error| from {:.3e} (dark blue) to {:.3e} (yellow); hatched = padded, not compared (faint: partly padded)</figcaption>{}</figure>",
            esc(&s.display_name(run.is_multi_target())),
            esc(&o.name),
            esc(&s.case),
            s.mode.name(),
            o.shape,
            map.axes[0],
            map.dims[0],
            map.cells[0],
            map.axes[1],
            map.dims[1],
            map.cells[1],
            lo,
            hi,
            charts::heatmap(map, k)
        );
    }
    if maps.len() > MAX_HEATMAPS {
        omitted.push(format!(
            "{} of {} error heatmaps of failing outputs",
            maps.len() - MAX_HEATMAPS,
            maps.len()
        ));
    }
}

pub(super) fn arbitration(out: &mut String, run: &RunRecord) {
    let rows: Vec<_> = table::rows(run)
        .into_iter()
        .filter_map(|r| {
            let o = r.output?;
            Some((r.stage, o, o.metrics.as_ref()?.vs_f64.as_ref()?))
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    out.push_str(
        "<h2>Who is wrong: production or the oracle (<code>vs_f64</code>)</h2>\
         <p class=\"note\">Isolated rows judge the stage alone; chained rows include the error \
         production accumulated upstream.</p><table class=\"small\"><thead><tr><th>stage</th><th>output</th><th>case</th><th>mode</th>\
         <th>f64 truth</th><th>RMS production vs f64</th><th>RMS oracle vs f64</th><th>ratio</th>\
         <th>verdict</th></tr></thead><tbody>",
    );
    for (s, o, t) in rows {
        let ratio = t.actual_vs_truth / t.expected_vs_truth;
        let who = if t.actual_vs_truth <= t.expected_vs_truth * 1.05 {
            "production is as close to f64 as the oracle (or closer)"
        } else if t.expected_vs_truth == 0.0 || ratio > 2.0 {
            "production is wrong: further from f64 than the oracle"
        } else {
            "production slightly further from f64 than the oracle"
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{who}</td></tr>",
            esc(&s.display_name(run.is_multi_target())),
            esc(&o.name),
            esc(&s.case),
            s.mode.name(),
            esc(&t.truth),
            table::num(t.actual_vs_truth),
            table::num(t.expected_vs_truth),
            table::num(ratio)
        );
    }
    out.push_str("</tbody></table>");
}

pub(super) fn provenance(out: &mut String, run: &RunRecord) {
    let _ = write!(
        out,
        "<h2>Provenance</h2><dl class=\"prov\"><dt>spec</dt><dd>{}</dd><dt>parity</dt><dd>{}</dd>\
         <dt>IREE compiler</dt><dd>{}</dd><dt>started</dt><dd>{}</dd><dt>elapsed</dt><dd>{:.2} s</dd>\
         <dt>schema</dt><dd>{}</dd>",
        esc(&run.spec),
        esc(&run.parity_version),
        esc(run.compiler_revision.as_deref().unwrap_or("not loaded")),
        esc(&run.started),
        run.elapsed_s,
        esc(&run.schema)
    );
    for m in &run.provenance.modules {
        let _ = write!(
            out,
            "<dt>module {}</dt><dd>{}; cache key <code>{}</code></dd>",
            esc(&m.name),
            esc(&m.source),
            esc(m.cache_key.as_deref().unwrap_or("none (not compiled)"))
        );
    }
    for t in &run.provenance.weight_transforms {
        let _ = write!(
            out,
            "<dt>weight transformed at load</dt><dd>{}</dd>",
            esc(&t.describe())
        );
    }
    match &run.provenance.oracle {
        Some(o) => {
            let text = serde_json::to_string_pretty(&o.provenance).unwrap_or_default();
            let _ = write!(
                out,
                "<dt>oracle</dt><dd>{}<pre class=\"code\">{}</pre></dd>",
                esc(&o.path),
                esc(&text)
            );
        }
        None => out.push_str("<dt>oracle</dt><dd>no provenance in this record</dd>"),
    }
    out.push_str("</dl>");
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}
