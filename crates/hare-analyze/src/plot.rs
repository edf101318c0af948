//! SVG and PNG plots of one or more traces overlaid with a legend: goodput vs time, cwnd vs
//! time on a log scale (slow-start exits marked), RTT vs time.
//!
//! Text is drawn with plotters' pure-Rust `ab_glyph` path from a TrueType font found at run
//! time (`$HARE_LAB_FONT`, else DejaVu Sans or Liberation Sans from the Debian packages
//! `fonts-dejavu-core` / `fonts-liberation`); without a font the plots are drawn without text.
//! This is the general form of the testbed's replay plots (testbed/src/plots.rs).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::PlotError;
use crate::metrics::Metrics;
use crate::trace::Trace;

/// Fonts tried, in order, when `$HARE_LAB_FONT` is not set.
pub const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

static FONT: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Registers a font for plot text once; returns it, `None` when none was found.
pub fn font() -> Option<&'static Path> {
    FONT.get_or_init(|| {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os("HARE_LAB_FONT") {
            candidates.push(PathBuf::from(p));
        }
        candidates.extend(FONT_CANDIDATES.iter().map(PathBuf::from));
        for c in candidates {
            if let Ok(bytes) = std::fs::read(&c) {
                // plotters keeps registered fonts for the life of the process.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return Some(c);
                }
            }
        }
        None
    })
    .as_deref()
}

/// One line of a chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// (x, y) points in x order.
    pub points: Vec<(f64, f64)>,
    /// Marked points (x, y, note), e.g. the slow-start exit.
    pub marks: Vec<(f64, f64, String)>,
}

/// A chart of several series.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Title.
    pub title: String,
    /// x axis description.
    pub x_desc: String,
    /// y axis description.
    pub y_desc: String,
    /// Logarithmic y axis.
    pub log_y: bool,
    /// How y values are written on the axis.
    pub y_unit: Unit,
    /// The lines.
    pub series: Vec<Series>,
    /// Horizontal reference lines (y, label), e.g. the capacity or the BDP.
    pub hlines: Vec<(f64, String)>,
}

/// Units of a y axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Mbit/s.
    Mbps,
    /// Bytes, written as B / kB / MB / GB.
    Bytes,
    /// Milliseconds.
    Ms,
}

/// A byte count for an axis or a label: `850 B`, `64 kB`, `6 MB`, `1.5 GB` (powers of 10).
pub fn human_bytes(v: f64) -> String {
    let (x, u) = if v >= 1e9 {
        (v / 1e9, "GB")
    } else if v >= 1e6 {
        (v / 1e6, "MB")
    } else if v >= 1e3 {
        (v / 1e3, "kB")
    } else {
        (v, "B")
    };
    let digits = if x >= 100.0 || x == x.round() { 0 } else { 1 };
    format!("{x:.digits$} {u}")
}

/// A plain number for an axis: no `6000000.0`, as few decimals as the value needs.
pub fn human_number(v: f64) -> String {
    let a = v.abs();
    let digits = if a >= 100.0 || a == a.round() {
        0
    } else if a >= 1.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$}")
}

impl Unit {
    /// The axis text of `v`.
    pub fn format(self, v: f64) -> String {
        match self {
            Unit::Bytes => human_bytes(v),
            Unit::Mbps | Unit::Ms => human_number(v),
        }
    }
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
                let color = palette(i);
                let drawn = chart
                    .draw_series(LineSeries::new(
                        s.points.iter().map(|&(x, y)| (x, $clamp(y))),
                        color.stroke_width(2),
                    ))
                    .map_err(|x| e(&x))?;
                if text {
                    drawn.label(s.label.clone()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
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
                    for (x, y, note) in &s.marks {
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
    let text = font().is_some();
    let svg = dir.join(format!("{name}.svg"));
    let png = dir.join(format!("{name}.png"));
    let fail = |path: &Path| {
        let path = path.to_path_buf();
        move |message| PlotError { path, message }
    };
    draw(SVGBackend::new(&svg, SIZE).into_drawing_area(), c, text).map_err(fail(&svg))?;
    draw(BitMapBackend::new(&png, SIZE).into_drawing_area(), c, text).map_err(fail(&png))?;
    Ok(vec![svg, png])
}

/// The three charts of a set of traces (with their metrics, same order).
pub fn charts(traces: &[Trace], metrics: &[Metrics]) -> [Chart; 3] {
    let mut thr = Vec::new();
    let mut cwnd = Vec::new();
    let mut rtt = Vec::new();
    for (t, m) in traces.iter().zip(metrics) {
        thr.push(Series {
            label: t.name.clone(),
            // Steps: each bin's rate held over the bin.
            points: m
                .bins_mbps
                .iter()
                .enumerate()
                .flat_map(|(i, &g)| {
                    let lo = i as f64 * m.bin_s;
                    let hi = ((i + 1) as f64 * m.bin_s).min(m.duration_s);
                    [(lo, g), (hi, g)]
                })
                .collect(),
            marks: Vec::new(),
        });
        // A receiver's window only paces its ACKs: not drawn beside the senders'.
        if t.role == Some(crate::trace::TraceRole::Receiver) && traces.len() > 1 {
            // Keep the colours of the other charts: an empty series draws nothing.
            cwnd.push(Series {
                label: t.name.clone(),
                points: Vec::new(),
                marks: Vec::new(),
            });
        } else {
            cwnd.push(Series {
                label: t.name.clone(),
                points: t
                    .samples
                    .iter()
                    .filter_map(|s| s.cwnd_bytes.map(|c| (s.t_s, c as f64)))
                    .collect(),
                marks: t
                    .exit
                    .map(|e| {
                        let why = e.reason.map_or("slow-start exit", |r| r.as_str());
                        vec![(
                            e.t_s,
                            e.cwnd_bytes as f64,
                            format!(
                                "{}: {why} at {:.3} s, cwnd {}",
                                t.name,
                                e.t_s,
                                human_bytes(e.cwnd_bytes as f64)
                            ),
                        )]
                    })
                    .unwrap_or_default(),
            });
        }
        rtt.push(Series {
            label: t.name.clone(),
            points: t
                .samples
                .iter()
                // From the origin on: the handshake's samples still carry the initial RTT.
                .filter(|s| s.t_s >= 0.0)
                .filter_map(|s| s.srtt_ms.map(|r| (s.t_s, r)))
                .collect(),
            marks: Vec::new(),
        });
    }
    let bin = metrics.first().map_or(1.0, |m| m.bin_s);
    [
        Chart {
            title: format!("goodput per {bin} s"),
            x_desc: "time (s)".into(),
            y_desc: "Mbit/s".into(),
            log_y: false,
            y_unit: Unit::Mbps,
            series: thr,
            hlines: capacity_lines(metrics),
        },
        Chart {
            title: "congestion window".into(),
            x_desc: "time (s)".into(),
            y_desc: "cwnd (log scale)".into(),
            log_y: true,
            y_unit: Unit::Bytes,
            series: cwnd,
            hlines: bdp_lines(metrics),
        },
        Chart {
            title: "smoothed RTT".into(),
            x_desc: "time (s)".into(),
            y_desc: "ms".into(),
            log_y: false,
            y_unit: Unit::Ms,
            series: rtt,
            hlines: Vec::new(),
        },
    ]
}

/// Whether a figure is known rather than estimated from the run itself.
fn known(p: Option<crate::metrics::Provenance>) -> bool {
    matches!(
        p,
        Some(crate::metrics::Provenance::Given | crate::metrics::Provenance::File)
    )
}

/// The capacity lines of the goodput chart: one per distinct known capacity.
fn capacity_lines(ms: &[Metrics]) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for m in ms {
        if let (Some(c), true) = (m.capacity_mbps, known(m.capacity_from)) {
            if !out.iter().any(|o| o.0 == c) {
                out.push((c, format!("capacity {} Mbit/s", human_number(c))));
            }
        }
    }
    out
}

/// The BDP lines of the cwnd chart: one per distinct BDP of a known capacity.
fn bdp_lines(ms: &[Metrics]) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for m in ms {
        if let (Some(b), true) = (m.bdp_bytes, known(m.capacity_from)) {
            let b = b as f64;
            if b > 0.0 && !out.iter().any(|o| o.0 == b) {
                let rtt = m
                    .rtt_ms
                    .map_or(String::new(), |r| format!(" x {} ms", human_number(r)));
                out.push((b, format!("BDP {}{rtt}", human_bytes(b))));
            }
        }
    }
    out
}

/// Writes `throughput`, `cwnd` and `rtt` (SVG + PNG each) of the traces into `dir`.
pub fn plot_all(
    dir: &Path,
    traces: &[Trace],
    metrics: &[Metrics],
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut out = Vec::new();
    for (name, c) in ["throughput", "cwnd", "rtt"]
        .iter()
        .zip(charts(traces, metrics))
    {
        out.extend(write_chart(dir, name, &c)?);
    }
    Ok(out)
}
