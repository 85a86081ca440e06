//! JUnit XML: one test suite per case and mode, one test case per stage output.

use parity_record::{RunRecord, Status};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Escapes text for XML attributes and character data.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even when escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// Renders the record as JUnit XML.
pub fn render(record: &RunRecord) -> String {
    let mut suites: BTreeMap<(String, &str), Vec<String>> = BTreeMap::new();
    let mut counts: BTreeMap<(String, &str), (usize, usize, usize, usize)> = BTreeMap::new();
    for stage in &record.stages {
        let key = (stage.case.clone(), stage.mode.name());
        let cases = suites.entry(key.clone()).or_default();
        let c = counts.entry(key).or_default();
        let classname = esc(&format!("parity.{}.{}", stage.case, stage.mode.name()));
        let time = stage.invoke_ms / 1e3;
        if stage.outputs.is_empty() {
            c.0 += 1;
            let body = match stage.status {
                Status::Skipped => {
                    c.3 += 1;
                    format!(
                        "<skipped message=\"{}\"/>",
                        esc(stage.skipped_because.as_deref().unwrap_or(""))
                    )
                }
                _ => {
                    c.2 += 1;
                    let m = esc(stage.error.as_ref().map_or("error", |e| e.message.as_str()));
                    format!("<error message=\"{m}\">{m}</error>")
                }
            };
            cases.push(format!(
                "    <testcase classname=\"{classname}\" name=\"{}\" time=\"{time:.6}\">{body}</testcase>\n",
                esc(&stage.name)
            ));
            continue;
        }
        for out in &stage.outputs {
            c.0 += 1;
            let name = esc(&format!("{}.{}", stage.name, out.name));
            let body = match out.status {
                Status::Pass => String::new(),
                Status::Fail => {
                    c.1 += 1;
                    let failed: Vec<String> = out
                        .criteria
                        .iter()
                        .filter(|r| !r.passed)
                        .map(|r| {
                            format!(
                                "{} observed {:e} (threshold {:e}, would pass at {:e})",
                                r.criterion.name(),
                                r.observed,
                                r.threshold,
                                r.min_passing
                            )
                        })
                        .collect();
                    let text = esc(&failed.join("\n"));
                    format!(
                        "<failure message=\"{}\" type=\"parity\">{text}</failure>",
                        esc(&failed.join("; "))
                    )
                }
                _ => {
                    c.2 += 1;
                    let m = esc(out
                        .error
                        .as_ref()
                        .or(stage.error.as_ref())
                        .map(|e| e.message.as_str())
                        .unwrap_or("error"));
                    format!("<error message=\"{m}\">{m}</error>")
                }
            };
            cases.push(format!(
                "    <testcase classname=\"{classname}\" name=\"{name}\" time=\"{time:.6}\">{body}</testcase>\n"
            ));
        }
    }
    let (tests, failures, errors, skipped) = counts
        .values()
        .fold((record.errors.len(), 0, record.errors.len(), 0), |a, c| {
            (a.0 + c.0, a.1 + c.1, a.2 + c.2, a.3 + c.3)
        });
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        xml,
        "<testsuites name=\"parity\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\" time=\"{:.6}\">",
        record.elapsed_s
    );
    for ((case, mode), cases) in &suites {
        let c = counts[&(case.clone(), *mode)];
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\">",
            esc(&format!("{case} ({mode})")),
            c.0,
            c.1,
            c.2,
            c.3
        );
        for tc in cases {
            xml.push_str(tc);
        }
        xml.push_str("  </testsuite>\n");
    }
    if !record.errors.is_empty() {
        let _ = writeln!(
            xml,
            "  <testsuite name=\"run\" tests=\"{n}\" failures=\"0\" errors=\"{n}\" skipped=\"0\">",
            n = record.errors.len()
        );
        for (i, e) in record.errors.iter().enumerate() {
            let m = esc(&e.message);
            let _ = writeln!(
                xml,
                "    <testcase classname=\"parity.run\" name=\"run-error-{i}\"><error message=\"{m}\" type=\"{:?}\">{m}</error></testcase>",
                e.kind
            );
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}
