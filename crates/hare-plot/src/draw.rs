//! Drawing a [`Chart`] with plotters, to SVG and PNG.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::chart::{human_number, Chart, Unit};
use crate::font::font;

/// A chart that could not be drawn or written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: plotting failed: {message}")]
pub struct PlotError {
    /// The output file.
    pub path: PathBuf,
    /// What plotters said.
    pub message: String,
}

const SIZE: (u32, u32) = (1000, 560);
const PALETTE: [RGBColor; 6] = [
    RGBColor(200, 40, 40),
    RGBColor(40, 80, 200),
    RGBColor(30, 150, 60),
    RGBColor(220, 140, 20),
    RGBColor(130, 50, 170),
    RGBColor(20, 160, 170),
];

/// A label's box in backend pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rect {
    x0: i32,
    y0: i32,
    x1: i32,
    y1: i32,
}

impl Rect {
    fn hits(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    /// Whether the segment from `p` to `q` passes through the box (Liang-Barsky clipping).
    fn crossed_by(&self, p: (i32, i32), q: (i32, i32)) -> bool {
        let (x0, y0) = (f64::from(p.0), f64::from(p.1));
        let (dx, dy) = (f64::from(q.0) - x0, f64::from(q.1) - y0);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        for (d, from_edge) in [
            (-dx, x0 - f64::from(self.x0)),
            (dx, f64::from(self.x1) - x0),
            (-dy, y0 - f64::from(self.y0)),
            (dy, f64::from(self.y1) - y0),
        ] {
            if d == 0.0 {
                if from_edge < 0.0 {
                    return false;
                }
            } else {
                let t = from_edge / d;
                if d < 0.0 {
                    t0 = t0.max(t);
                } else {
                    t1 = t1.min(t);
                }
            }
        }
        t0 <= t1
    }
}

/// Radius around a mark that a label keeps clear of (the circles are 7 px).
const MARK_CLEARANCE: i32 = 10;

/// Where a reference line's label goes: below the line at its left end, else below at its
/// right end, else above at the left, else above at the right: the first box that hits no
/// mark, no label placed before and no series line (`lines`: each series' points in
/// pixels); else the first that hits no mark and no label; else the left-below box.
/// `left` and `right` are the line's ends in pixels; `size` the text's.
fn place_label(
    left: (i32, i32),
    right: (i32, i32),
    size: (u32, u32),
    marks: &[(i32, i32)],
    taken: &[Rect],
    lines: &[Vec<(i32, i32)>],
) -> Rect {
    let (w, h) = (size.0 as i32, size.1 as i32);
    let pad = 6;
    let y = left.1;
    let candidates = [
        (left.0 + pad, y + 2),
        (right.0 - pad - w, y + 2),
        (left.0 + pad, y - 2 - h),
        (right.0 - pad - w, y - 2 - h),
    ];
    let boxes = candidates.map(|(x0, y0)| Rect {
        x0,
        y0,
        x1: x0 + w,
        y1: y0 + h,
    });
    let clear = |r: &Rect| {
        marks.iter().all(|&(mx, my)| {
            !r.hits(&Rect {
                x0: mx - MARK_CLEARANCE,
                y0: my - MARK_CLEARANCE,
                x1: mx + MARK_CLEARANCE,
                y1: my + MARK_CLEARANCE,
            })
        }) && taken.iter().all(|t| !r.hits(t))
    };
    let off_lines = |r: &Rect| {
        lines
            .iter()
            .all(|l| l.windows(2).all(|w| !r.crossed_by(w[0], w[1])))
    };
    boxes
        .iter()
        .copied()
        .find(|r| clear(r) && off_lines(r))
        .or_else(|| boxes.iter().copied().find(clear))
        .unwrap_or(boxes[0])
}

/// The legend's corner: the preferred one (`prefer_upper`: upper right, else lower right)
/// unless the other one's box (`size`, in pixels, inside the plotting area `x` by `y`) is
/// crossed by fewer segments of the series (`lines`); returns the corner and its box.
fn legend_corner(
    prefer_upper: bool,
    x: std::ops::Range<i32>,
    y: std::ops::Range<i32>,
    size: (i32, i32),
    lines: &[Vec<(i32, i32)>],
) -> (SeriesLabelPosition, Rect) {
    let pad = 10;
    let x1 = x.end - pad;
    let upper = Rect {
        x0: x1 - size.0,
        y0: y.start + pad,
        x1,
        y1: y.start + pad + size.1,
    };
    let lower = Rect {
        x0: x1 - size.0,
        y0: y.end - pad - size.1,
        x1,
        y1: y.end - pad,
    };
    let hits = |r: &Rect| {
        lines
            .iter()
            .flat_map(|l| l.windows(2))
            .filter(|w| r.crossed_by(w[0], w[1]))
            .count()
    };
    let (first, second) = if prefer_upper {
        (
            (upper, SeriesLabelPosition::UpperRight),
            (lower, SeriesLabelPosition::LowerRight),
        )
    } else {
        (
            (lower, SeriesLabelPosition::LowerRight),
            (upper, SeriesLabelPosition::UpperRight),
        )
    };
    if hits(&second.0) < hits(&first.0) {
        (second.1, second.0)
    } else {
        (first.1, first.0)
    }
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    c: &Chart,
    text: bool,
) -> Result<(), String> {
    let e = |x: &dyn std::fmt::Debug| format!("{x:?}");
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let pts = || c.series.iter().flat_map(|s| s.points.iter());
    let x_max = pts().map(|p| p.0).fold(1e-3, f64::max);
    let x_min = pts().map(|p| p.0).fold(0.0, f64::min);
    let y_top = pts()
        .map(|p| p.1)
        .chain(c.hlines.iter().map(|h| h.0))
        .fold(0.0, f64::max);
    let mut b = ChartBuilder::on(&root);
    b.margin(15);
    if text {
        b.caption(&c.title, ("sans-serif", 20))
            .x_label_area_size(40)
            .y_label_area_size(80);
    }
    let palette = |i: usize| PALETTE[i % PALETTE.len()];
    macro_rules! body {
        ($chart:expr, $clamp:expr) => {{
            let mut chart = $chart;
            let mut notes: Vec<(f64, f64, String, RGBColor)> = Vec::new();
            if text {
                let unit = c.y_unit;
                chart
                    .configure_mesh()
                    .x_desc(c.x_desc.as_str())
                    .y_desc(c.y_desc.as_str())
                    .x_label_formatter(&|x: &f64| human_number(*x))
                    .y_label_formatter(&move |y: &f64| unit.format(*y))
                    .draw()
                    .map_err(|x| e(&x))?;
            }
            // The marks' pixels, so reference-line labels can be put where no mark is.
            let marks_px: Vec<(i32, i32)> = c
                .series
                .iter()
                .flat_map(|s| s.marks.iter())
                .map(|(x, y, _)| chart.backend_coord(&(*x, $clamp(*y))))
                .collect();
            let lines_px: Vec<Vec<(i32, i32)>> = c
                .series
                .iter()
                .map(|s| {
                    s.points
                        .iter()
                        .map(|&(x, y)| chart.backend_coord(&(x, $clamp(y))))
                        .collect()
                })
                .collect();
            // The legend's corner first, so the reference lines' labels keep clear of it.
            let legend = {
                let labels: Vec<&str> = c
                    .series
                    .iter()
                    .filter(|s| !s.label.is_empty())
                    .map(|s| s.label.as_str())
                    .collect();
                let style = ("sans-serif", 13).into_font().color(&BLACK);
                let area = chart.plotting_area().strip_coord_spec();
                let widest = labels
                    .iter()
                    .map(|l| {
                        area.estimate_text_size(l, &style)
                            .map_or(200, |s| s.0 as i32)
                    })
                    .max()
                    .unwrap_or(0);
                let (px, py) = chart.plotting_area().get_pixel_range();
                legend_corner(
                    c.y_unit == Unit::Ms,
                    px,
                    py,
                    (widest + 50, 20 * labels.len() as i32 + 12),
                    &lines_px,
                )
            };
            let base = chart.plotting_area().get_base_pixel();
            let mut taken: Vec<Rect> = if text { vec![legend.1] } else { Vec::new() };
            // Drawn after the series, on top of them.
            let mut hlabels: Vec<(Rect, String)> = Vec::new();
            for (y, label) in &c.hlines {
                let grey = RGBColor(90, 90, 90);
                chart
                    .draw_series(LineSeries::new(
                        [(x_min, $clamp(*y)), (x_max, $clamp(*y))],
                        grey.stroke_width(1),
                    ))
                    .map_err(|x| e(&x))?;
                if text {
                    let style = ("sans-serif", 13).into_font().color(&grey);
                    let area = chart.plotting_area().strip_coord_spec();
                    let size = area.estimate_text_size(label, &style).unwrap_or((100, 13));
                    let left = chart.backend_coord(&(x_min, $clamp(*y)));
                    let right = chart.backend_coord(&(x_max, $clamp(*y)));
                    let at = place_label(left, right, size, &marks_px, &taken, &lines_px);
                    taken.push(at);
                    hlabels.push((at, label.clone()));
                }
            }
            for (i, s) in c.series.iter().enumerate() {
                let color = palette(s.colour.unwrap_or(i));
                let width = s.width.unwrap_or(2);
                let drawn = chart
                    .draw_series(LineSeries::new(
                        s.points.iter().map(|&(x, y)| (x, $clamp(y))),
                        color.stroke_width(width),
                    ))
                    .map_err(|x| e(&x))?;
                if text && !s.label.is_empty() {
                    drawn.label(s.label.clone()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width))
                    });
                }
                chart
                    .draw_series(
                        s.marks.iter().map(|(x, y, _)| {
                            Circle::new((*x, $clamp(*y)), 7, color.stroke_width(2))
                        }),
                    )
                    .map_err(|x| e(&x))?;
                if text {
                    // Notes are listed one per line in the upper left, in the series' colour,
                    // so exits at the same place never overlap.
                    for (x, y, note) in s.marks.iter().filter(|m| !m.2.is_empty()) {
                        notes.push((*x, *y, note.clone(), color));
                    }
                }
            }
            if text {
                let area = chart.plotting_area().strip_coord_spec();
                for (at, label) in &hlabels {
                    // A light backing keeps the text legible where a series crosses it.
                    area.draw(&Rectangle::new(
                        [
                            (at.x0 - base.0 - 2, at.y0 - base.1 - 1),
                            (at.x1 - base.0 + 2, at.y1 - base.1 + 1),
                        ],
                        WHITE.mix(0.8).filled(),
                    ))
                    .map_err(|x| e(&x))?;
                    area.draw(&Text::new(
                        label.clone(),
                        (at.x0 - base.0, at.y0 - base.1),
                        ("sans-serif", 13).into_font().color(&RGBColor(90, 90, 90)),
                    ))
                    .map_err(|x| e(&x))?;
                }
                for (k, (_, _, note, color)) in notes.iter().enumerate() {
                    let at = (10, 8 + 18 * k as i32);
                    area.draw(&Text::new(
                        format!("\u{25cb} {note}"),
                        at,
                        ("sans-serif", 14).into_font().color(color),
                    ))
                    .map_err(|x| e(&x))?;
                }
                // What the chart leaves out, in grey below the marks' notes.
                for (k, note) in c.notes.iter().enumerate() {
                    let at = (10, 8 + 18 * (notes.len() + k) as i32);
                    area.draw(&Text::new(
                        note.clone(),
                        at,
                        ("sans-serif", 14).into_font().color(&RGBColor(90, 90, 90)),
                    ))
                    .map_err(|x| e(&x))?;
                }
                chart
                    .configure_series_labels()
                    .position(legend.0)
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .draw()
                    .map_err(|x| e(&x))?;
            }
        }};
    }
    if c.log_y {
        let y_min = pts()
            .map(|p| p.1)
            .chain(c.hlines.iter().map(|h| h.0))
            .filter(|&y| y > 0.0)
            .fold(f64::INFINITY, f64::min);
        let y_min = if y_min.is_finite() { y_min / 2.0 } else { 1.0 };
        // Headroom above the lines for the exit notes listed in the upper left.
        let y_max = (y_top * 5.0).max(y_min * 10.0);
        let chart = b
            .build_cartesian_2d(x_min..x_max, (y_min..y_max).log_scale())
            .map_err(|x| e(&x))?;
        body!(chart, |y: f64| y.max(y_min));
    } else {
        // Headroom for the notes listed in the upper left (one line of about 7 % each).
        let y_max = (y_top * (1.1 + 0.07 * c.notes.len() as f64)).max(1e-3);
        // RTTs sit far from zero: the axis spans the samples, so their changes show.
        let y_lo = if c.y_unit == Unit::Ms {
            let lo = pts().map(|p| p.1).fold(f64::INFINITY, f64::min);
            if lo.is_finite() {
                (lo - (y_top - lo) * 0.1).max(0.0)
            } else {
                0.0
            }
        } else {
            0.0
        };
        let y_max = if y_max <= y_lo { y_lo + 1.0 } else { y_max };
        let chart = b
            .build_cartesian_2d(x_min..x_max, y_lo..y_max)
            .map_err(|x| e(&x))?;
        body!(chart, |y: f64| y);
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

/// Writes `<dir>/<name>.svg` and `<dir>/<name>.png`; returns the files.
pub fn write_chart(dir: &Path, name: &str, c: &Chart) -> Result<Vec<PathBuf>, PlotError> {
    write_chart_files(
        &dir.join(format!("{name}.svg")),
        &dir.join(format!("{name}.png")),
        c,
    )
}

/// Writes the chart as SVG to `svg` and as PNG to `png`; returns the two files.
pub fn write_chart_files(svg: &Path, png: &Path, c: &Chart) -> Result<Vec<PathBuf>, PlotError> {
    let text = font().is_some();
    let fail = |path: &Path| {
        let path = path.to_path_buf();
        move |message| PlotError { path, message }
    };
    draw(SVGBackend::new(svg, SIZE).into_drawing_area(), c, text).map_err(fail(svg))?;
    draw(BitMapBackend::new(png, SIZE).into_drawing_area(), c, text).map_err(fail(png))?;
    Ok(vec![svg.to_path_buf(), png.to_path_buf()])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines along the bottom (flows sharing a link far below its capacity): the legend
    /// leaves the lower right for the upper right; an empty chart keeps the preferred one.
    #[test]
    fn the_legend_goes_to_the_emptier_right_corner() {
        let corner = |lines: &[Vec<(i32, i32)>]| match legend_corner(
            false,
            100..900,
            50..500,
            (200, 60),
            lines,
        )
        .0
        {
            SeriesLabelPosition::UpperRight => "upper",
            SeriesLabelPosition::LowerRight => "lower",
            _ => "other",
        };
        assert_eq!(corner(&[]), "lower");
        assert_eq!(corner(&[vec![(100, 470), (500, 460), (900, 470)]]), "upper");
        assert_eq!(corner(&[vec![(100, 60), (900, 70)]]), "lower");
    }

    #[test]
    fn labels_keep_clear_of_marks_and_each_other() {
        // A line from x 100 to 900 at y 300, a 120 x 13 label.
        let (l, r, size) = ((100, 300), (900, 300), (120, 13));
        let free = place_label(l, r, size, &[], &[], &[]);
        assert_eq!((free.x0, free.y0, free.x1, free.y1), (106, 302, 226, 315));
        // A mark on the line near its left end (an exit at the BDP): the label goes right.
        let right = place_label(l, r, size, &[(150, 300)], &[], &[]);
        assert_eq!((right.x0, right.y0), (774, 302));
        // Marks at both ends: above the line cannot help either (the circle spans it).
        let both = place_label(l, r, size, &[(150, 300), (850, 300)], &[], &[]);
        assert_eq!((both.x0, both.y0), (106, 302));
        // A mark just below the line at the left: above it at the left is clear.
        let above = place_label(l, r, size, &[(150, 312), (850, 305)], &[], &[]);
        assert_eq!((above.x0, above.y0), (106, 285));
        // A label already at the left-below place: the next goes right.
        let next = place_label(l, r, size, &[], &[free], &[]);
        assert_eq!((next.x0, next.y0), (774, 302));
        // A series rising through the left-below box (a slow-start ramp): the label goes
        // right; a line through every box: the first box clear of marks.
        let ramp = vec![vec![(120, 400), (160, 200)]];
        let away = place_label(l, r, size, &[], &[], &ramp);
        assert_eq!((away.x0, away.y0), (774, 302));
        let flat = vec![vec![(100, 308), (900, 308)], vec![(100, 290), (900, 290)]];
        let any = place_label(l, r, size, &[(150, 300)], &[], &flat);
        assert_eq!((any.x0, any.y0), (774, 302));
    }
}
