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
            for (y, label) in &c.hlines {
                let grey = RGBColor(90, 90, 90);
                chart
                    .draw_series(LineSeries::new(
                        [(x_min, $clamp(*y)), (x_max, $clamp(*y))],
                        grey.stroke_width(1),
                    ))
                    .map_err(|x| e(&x))?;
                if text {
                    chart
                        .draw_series(std::iter::once(Text::new(
                            label.clone(),
                            (x_min + (x_max - x_min) * 0.01, $clamp(*y)),
                            ("sans-serif", 13).into_font().color(&grey),
                        )))
                        .map_err(|x| e(&x))?;
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
                for (k, (_, _, note, color)) in notes.iter().enumerate() {
                    let at = (10, 8 + 18 * k as i32);
                    area.draw(&Text::new(
                        format!("\u{25cb} {note}"),
                        at,
                        ("sans-serif", 14).into_font().color(color),
                    ))
                    .map_err(|x| e(&x))?;
                }
                chart
                    .configure_series_labels()
                    .position(if c.y_unit == Unit::Ms {
                        SeriesLabelPosition::UpperRight
                    } else {
                        SeriesLabelPosition::LowerRight
                    })
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
        let y_max = (y_top * 1.1).max(1e-3);
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
