//! A sweep's heatmap drawn as an SVG document for the merged sweep's page and files.

use std::fmt::Write as _;

use super::merge::Heatmap;
use crate::html::escape;

/// A heatmap as an SVG document: one square per (row, column) coloured from white (lowest)
/// to red (highest), the value written in it; grey where there is no value.
pub fn heatmap_svg(h: &Heatmap) -> String {
    let cell_w = 90.0;
    let cell_h = 26.0;
    let label_w =
        (h.rows.iter().map(|r| r.chars().count()).max().unwrap_or(4) as f64 * 7.0).max(60.0);
    let top = 48.0;
    let width = label_w + cell_w * h.cols.len() as f64 + 20.0;
    let height = top + cell_h * h.rows.len() as f64 + 10.0;
    let finite: Vec<f64> = h
        .values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n<text x=\"4\" y=\"16\" font-size=\"14\">{}</text>\n",
        escape(&h.title)
    );
    for (ci, c) in h.cols.iter().enumerate() {
        let x = label_w + cell_w * (ci as f64 + 0.5);
        let _ = writeln!(
            s,
            "<text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            top - 8.0,
            escape(c)
        );
    }
    for (ri, r) in h.rows.iter().enumerate() {
        let y = top + cell_h * ri as f64;
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            label_w - 6.0,
            y + cell_h * 0.65,
            escape(r)
        );
        for ci in 0..h.cols.len() {
            let v = h
                .values
                .get(ri)
                .and_then(|row| row.get(ci))
                .copied()
                .flatten();
            let x = label_w + cell_w * ci as f64;
            let (fill, text) = match v {
                Some(v) => {
                    let f = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
                    let g = (255.0 - 175.0 * f).round() as u8;
                    (
                        format!("rgb(255,{g},{g})"),
                        format!("{v:.prec$}", prec = h.decimals),
                    )
                }
                None => ("#ccc".to_string(), "-".to_string()),
            };
            let _ = writeln!(
                s,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cell_w}\" height=\"{cell_h}\" fill=\"{fill}\" stroke=\"#fff\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{text}</text>",
                x + cell_w / 2.0,
                y + cell_h * 0.65
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heatmap_colours_and_gaps() {
        let h = Heatmap {
            title: "t".into(),
            rows: vec!["r0".into(), "r1".into()],
            cols: vec!["a".into(), "b".into()],
            values: vec![vec![Some(0.0), Some(10.0)], vec![None, Some(5.0)]],
            decimals: 1,
        };
        let svg = heatmap_svg(&h);
        assert!(svg.contains("rgb(255,255,255)"), "lowest is white");
        assert!(svg.contains("rgb(255,80,80)"), "highest is red");
        assert!(svg.contains("#ccc"), "missing is grey");
        assert!(svg.contains(">10.0<") && svg.contains(">5.0<"));
    }
}
