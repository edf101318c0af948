//! A sweep's heatmap drawn as an SVG document for the merged sweep's page and files.
//!
//! Colours say which way is better, not which value is higher: the worst square of a map is
//! orange, the best blue, through a pale middle (a diverging map that reads the same for
//! colour-blind viewers); a legend under the title shows the scale from the worst value to
//! the best with the words "higher is better", "lower is better" or "closer to 1 is better".
//! Squares capped by their window get a dashed outline, explained in the legend.

use std::fmt::Write as _;

use super::merge::{Better, Heatmap};
use crate::html::escape;

/// The worst end, the middle and the best end of the colour map.
const WORSE: (f64, f64, f64) = (217.0, 95.0, 2.0);
const MIDDLE: (f64, f64, f64) = (247.0, 247.0, 247.0);
const BETTER: (f64, f64, f64) = (33.0, 102.0, 172.0);

/// Steps of the legend's colour bar.
const LEGEND_STEPS: usize = 20;

/// How good `v` is on a scale where larger is better.
fn goodness(better: Better, v: f64) -> f64 {
    match better {
        Better::Higher => v,
        Better::Lower => -v,
        // Ratios: 0.5 and 2 are as far from 1; a value of 0 or less is the farthest.
        Better::Near(t) if t > 0.0 => {
            if v > 0.0 {
                -(v / t).ln().abs()
            } else {
                f64::NEG_INFINITY
            }
        }
        Better::Near(t) => -(v - t).abs(),
    }
}

/// The colour of goodness `f` in [0, 1] (0 worst, 1 best).
fn colour(f: f64) -> (u8, u8, u8) {
    let f = f.clamp(0.0, 1.0);
    let (a, b, k) = if f < 0.5 {
        (WORSE, MIDDLE, f * 2.0)
    } else {
        (MIDDLE, BETTER, f * 2.0 - 1.0)
    };
    let mix = |x: f64, y: f64| (x + (y - x) * k).round() as u8;
    (mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Black text on light squares, white on dark ones.
fn text_colour((r, g, b): (u8, u8, u8)) -> &'static str {
    let luma = 0.299 * f64::from(r) + 0.587 * f64::from(g) + 0.114 * f64::from(b);
    if luma < 140.0 {
        "#fff"
    } else {
        "#000"
    }
}

/// The goodness scale of a map: its worst and best values, and `f(v)` in [0, 1].
struct Scale {
    better: Option<Better>,
    lo: f64,
    hi: f64,
    worst: Option<f64>,
    best: Option<f64>,
}

impl Scale {
    fn of(h: &Heatmap) -> Scale {
        let values: Vec<f64> = h
            .values
            .iter()
            .flatten()
            .flatten()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        let better = h.better;
        let score = |v: f64| better.map_or(v, |b| goodness(b, v));
        let mut worst: Option<f64> = None;
        let mut best: Option<f64> = None;
        for &v in &values {
            if worst.is_none_or(|w| score(v) < score(w)) {
                worst = Some(v);
            }
            if best.is_none_or(|b| score(v) > score(b)) {
                best = Some(v);
            }
        }
        let lo = worst.map_or(0.0, score);
        let hi = best.map_or(0.0, score);
        Scale {
            better,
            lo,
            hi,
            worst,
            best,
        }
    }

    fn f(&self, v: f64) -> f64 {
        let s = self.better.map_or(v, |b| goodness(b, v));
        if !s.is_finite() {
            0.0
        } else if self.hi > self.lo {
            (s - self.lo) / (self.hi - self.lo)
        } else {
            0.5
        }
    }
}

/// The legend under the title: the colour bar from the worst value to the best, the
/// direction in words, and what grey squares and dashed outlines mean.
fn legend(s: &mut String, h: &Heatmap, scale: &Scale, y: f64) {
    let bar_x = 4.0;
    let step = 8.0;
    let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.p$}", p = h.decimals));
    let _ = writeln!(
        s,
        "<text x=\"{bar_x}\" y=\"{:.1}\">worse {}</text>",
        y + 11.0,
        escape(&fmt(scale.worst))
    );
    let start = bar_x + 8.0 * (6 + fmt(scale.worst).chars().count()) as f64 + 6.0;
    for i in 0..LEGEND_STEPS {
        let (r, g, b) = colour(i as f64 / (LEGEND_STEPS - 1) as f64);
        let _ = writeln!(
            s,
            "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{step}\" height=\"14\" fill=\"rgb({r},{g},{b})\"/>",
            start + step * i as f64
        );
    }
    let after = start + step * LEGEND_STEPS as f64 + 6.0;
    let direction = h.better.map_or("colour by value".to_string(), Better::text);
    let _ = writeln!(
        s,
        "<text x=\"{after:.1}\" y=\"{:.1}\">{} better ({})</text>",
        y + 11.0,
        escape(&fmt(scale.best)),
        escape(&direction)
    );
    // The second line: what the other marks mean.
    let mut words = "grey: no value".to_string();
    if let Some(cap) = h
        .capped
        .iter()
        .flatten()
        .flatten()
        .copied()
        .reduce(f64::max)
    {
        let _ = write!(
            words,
            "; dashed outline: capped by its window (at most {cap:.0} Mbit/s)"
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{bar_x}\" y=\"{:.1}\">{}</text>",
        y + 29.0,
        escape(&words)
    );
}

/// A heatmap as an SVG document: one square per (row, column) coloured by how good its
/// value is, the value written in it; grey where there is no value.
pub fn heatmap_svg(h: &Heatmap) -> String {
    let cell_w = 90.0;
    let cell_h = 26.0;
    // About 7.5 px per character of 12 px sans-serif, and a margin.
    let label_w =
        (h.rows.iter().map(|r| r.chars().count()).max().unwrap_or(4) as f64 * 7.5 + 12.0).max(60.0);
    let top = 92.0;
    let width = (label_w + cell_w * h.cols.len() as f64 + 20.0).max(720.0);
    let height = top + cell_h * h.rows.len() as f64 + 10.0;
    let scale = Scale::of(h);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n<text x=\"4\" y=\"16\" font-size=\"14\">{}</text>\n",
        escape(&h.title)
    );
    legend(&mut s, h, &scale, 24.0);
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
            let at = |m: &Vec<Vec<Option<f64>>>| m.get(ri).and_then(|row| row.get(ci)).copied();
            let v = at(&h.values).flatten();
            let x = label_w + cell_w * ci as f64;
            let (fill, ink, text) = match v {
                Some(v) => {
                    let c = colour(scale.f(v));
                    (
                        format!("rgb({},{},{})", c.0, c.1, c.2),
                        text_colour(c),
                        format!("{v:.prec$}", prec = h.decimals),
                    )
                }
                None => ("#ccc".to_string(), "#000", "-".to_string()),
            };
            let _ = writeln!(
                s,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{cell_w}\" height=\"{cell_h}\" fill=\"{fill}\" stroke=\"#fff\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{ink}\">{text}</text>",
                x + cell_w / 2.0,
                y + cell_h * 0.65
            );
            if at(&h.capped).flatten().is_some() {
                let _ = writeln!(
                    s,
                    "<rect class=\"capped\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"none\" stroke=\"#222\" stroke-width=\"2\" stroke-dasharray=\"5,3\"/>",
                    x + 2.0,
                    y + 2.0,
                    cell_w - 4.0,
                    cell_h - 4.0
                );
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(better: Option<Better>) -> Heatmap {
        Heatmap {
            title: "t".into(),
            rows: vec!["r0".into(), "r1".into()],
            cols: vec!["a".into(), "b".into()],
            values: vec![vec![Some(0.5), Some(10.0)], vec![None, Some(2.0)]],
            decimals: 1,
            better,
            capped: vec![vec![None, Some(5787.0)], vec![None, None]],
        }
    }

    #[test]
    fn colours_follow_the_direction_with_a_legend() {
        // Higher is better: 10 is the best (blue), 0.5 the worst (orange).
        let svg = heatmap_svg(&map(Some(Better::Higher)));
        assert!(svg.contains("higher is better"), "{svg}");
        assert!(svg.contains("worse 0.5"), "{svg}");
        assert!(svg.contains("10.0 better (higher is better)"), "{svg}");
        assert!(svg.contains("fill=\"rgb(33,102,172)\" stroke=\"#fff\"/><text x=\"195.0\" y=\"108.9\" text-anchor=\"middle\" fill=\"#fff\">10.0<"), "{svg}");
        assert!(svg.contains("fill=\"rgb(217,95,2)\" stroke=\"#fff\"/><text x=\"105.0\" y=\"108.9\" text-anchor=\"middle\" fill=\"#fff\">0.5<"), "{svg}");
        // Lower is better: the same values, the colours swapped.
        let low = heatmap_svg(&map(Some(Better::Lower)));
        assert!(low.contains("lower is better") && low.contains("worse 10.0"));
        assert!(low.contains("fill=\"rgb(217,95,2)\" stroke=\"#fff\"/><text x=\"195.0\""));
        // Closer to 1: 0.5 and 2 are equally far (middle), 10 is the worst.
        let near = heatmap_svg(&map(Some(Better::Near(1.0))));
        assert!(near.contains("closer to 1 is better"), "{near}");
        assert!(near.contains("worse 10.0"), "{near}");
        assert!(near.contains("rgb(33,102,172)\" stroke=\"#fff\"/><text x=\"105.0\""));
        // Missing values are grey; the capped square is outlined and the legend says why.
        assert!(svg.contains("#ccc"), "missing is grey");
        assert_eq!(svg.matches("class=\"capped\"").count(), 1);
        assert!(svg.contains("dashed outline: capped by its window (at most 5787 Mbit/s)"));
    }
}
