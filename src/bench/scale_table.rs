//! The table `parity bench --scale` prints (scale.rs measures the rows).

use super::scale::ScaleRow;
use std::time::Duration;

/// The table `parity bench --scale` prints: one row per config, then how
/// each figure grows from the first config's.
pub fn table(rows: &[ScaleRow]) -> String {
    let mb = |b: u64| b as f64 / 1e6;
    let s = |d: Duration| d.as_secs_f64();
    let mut out = format!(
        "{:<6} {:>22} {:>22} {:>9} {:>8} {:>8} {:>8} {:>9} {:>10} {:>9} {:>9} {:>7} {:>10} {:>10}  status\n",
        "config",
        "audio hidden/ff/L/T",
        "text hidden/ff/L/T",
        "weights",
        "cold s",
        "warm s",
        "floor s",
        "overhead",
        "cold pk MB",
        "peak MB",
        "need MB",
        "x need",
        "upload MB",
        "param ld"
    );
    for r in rows {
        let (h, f, l, t) = r.shape;
        let (th, tf, tl, tt) = r.text;
        out.push_str(&format!(
            "{:<6} {:>22} {:>22} {:>9.1} {:>8.3} {:>8.3} {:>8.3} {:>8.0}% {:>10.1} {:>8.1}{} {:>9.1} {:>7.2} {:>10.2} {:>10}  {}\n",
            r.config,
            format!("{h}/{f}/{l}/{t}"),
            format!("{th}/{tf}/{tl}/{tt}"),
            mb(r.weight_bytes),
            s(r.cold),
            s(r.warm),
            s(r.floor),
            (s(r.warm) / s(r.floor).max(1e-9) - 1.0) * 100.0,
            mb(r.cold_peak_rss),
            mb(r.peak_rss),
            // `*`: the peak could not be reset, so it counts the cold gate too.
            if r.peak_reset { " " } else { "*" },
            mb(r.needed),
            r.peak_rss as f64 / r.needed.max(1) as f64,
            mb(r.uploads.weight_bytes + r.uploads.other_bytes),
            r.uploads.parameter_loads,
            r.status
        ));
    }
    if let (Some(first), true) = (rows.first(), rows.len() > 1) {
        out.push_str(&format!("growth from {}:\n", first.config));
        for r in &rows[1..] {
            let x = |a: f64, b: f64| a / b.max(1e-12);
            out.push_str(&format!(
                "{:<6} weights x{:.0}, cold x{:.1}, warm x{:.1}, floor x{:.1}, peak RSS x{:.1}\n",
                r.config,
                x(mb(r.weight_bytes), mb(first.weight_bytes)),
                x(s(r.cold), s(first.cold)),
                x(s(r.warm), s(first.warm)),
                x(s(r.floor), s(first.floor)),
                x(mb(r.peak_rss), mb(first.peak_rss)),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::record::UploadRecord;

    fn row(config: &str, weights: u64, secs: f64, rss: u64) -> ScaleRow {
        ScaleRow {
            config: config.to_string(),
            shape: (64, 256, 2, 8),
            text: (64, 128, 2, 8),
            weight_bytes: weights,
            generate: Duration::ZERO,
            cold: Duration::from_secs_f64(2.0 * secs),
            warm: Duration::from_secs_f64(1.1 * secs),
            floor: Duration::from_secs_f64(secs),
            peak_rss: rss,
            cold_peak_rss: 3 * rss,
            peak_reset: true,
            needed: weights,
            uploads: UploadRecord {
                weight_bytes: 1_000_000,
                other_bytes: 500_000,
                parameter_loads: 2,
                ..UploadRecord::default()
            },
            status: "Pass".to_string(),
        }
    }

    #[test]
    fn the_table_has_overhead_rss_ratio_uploads_and_growth() {
        let text = table(&[
            row("small", 1_000_000, 1.0, 2_000_000),
            row("e2b", 900_000_000, 10.0, 1_200_000_000),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        let small: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            small,
            [
                "small",
                "64/256/2/8",
                "64/128/2/8",
                "1.0",
                "2.000",
                "1.100",
                "1.000",
                "10%",
                "6.0",
                "2.0",
                "1.0",
                "2.00",
                "1.50",
                "2",
                "Pass"
            ]
        );
        assert!(lines[2].starts_with("e2b "), "{text}");
        assert_eq!(lines[3], "growth from small:");
        assert_eq!(
            lines[4],
            "e2b    weights x900, cold x10.0, warm x10.0, floor x10.0, peak RSS x600.0"
        );
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn a_peak_that_could_not_be_reset_is_marked() {
        let mut r = row("small", 1_000_000, 1.0, 2_000_000);
        r.peak_reset = false;
        let text = table(&[r]);
        let cells: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(&cells[8..10], ["6.0", "2.0*"], "{text}");
    }
}
