//! SVG and PNG plots of a replayed run: per-second throughput (hare vs the thread) and cwnd
//! in segments on a log scale with the BDP line and slow-start exit / reduction markers.
//!
//! Text is drawn with plotters' pure-Rust `ab_glyph` path from a TrueType font found at run
//! time (`$HARE_LAB_FONT`, else DejaVu Sans or Liberation Sans from the Debian packages
//! `fonts-dejavu-core` / `fonts-liberation`); without a font the plots are drawn without text.

use anyhow::{anyhow, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Font discovery and registration are shared with the analysis plots (one registration per
/// process, one list of candidates).
pub use hare_analyze::plot::{font, FONT_CANDIDATES};

/// What a throughput plot shows.
#[derive(Debug, Clone, Default)]
pub struct ThroughputSeries {
    /// Title.
    pub title: String,
    /// hare's per-second (interval end s, Mbit/s).
    pub hare: Vec<(f64, f64)>,
    /// The thread's per-second rows, if any.
    pub thread: Vec<(f64, f64)>,
    /// hare's capacity (link payload rate), Mbit/s.
    pub hare_capacity: f64,
    /// The thread's capacity (its plateau), Mbit/s.
    pub thread_capacity: Option<f64>,
}

/// What a cwnd plot shows.
#[derive(Debug, Clone, Default)]
pub struct CwndSeries {
    /// Title.
    pub title: String,
    /// (t s, cwnd segments): the largest cwnd of each trace bucket.
    pub cwnd: Vec<(f64, f64)>,
    /// (t s, ssthresh segments) where finite.
    pub ssthresh: Vec<(f64, f64)>,
    /// BDP of the path in packets.
    pub bdp_packets: f64,
    /// Slow-start exits (t s, cwnd, reason).
    pub exits: Vec<(f64, f64, String)>,
    /// Window reductions (t s, cwnd before).
    pub reductions: Vec<(f64, f64)>,
}

const SIZE: (u32, u32) = (1000, 560);
const HARE: RGBColor = RGBColor(200, 40, 40);
const THREAD: RGBColor = RGBColor(40, 80, 200);

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting failed: {e:?}")
}

fn draw_throughput<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    s: &ThroughputSeries,
    text: bool,
) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let x_max = s
        .hare
        .iter()
        .chain(&s.thread)
        .map(|p| p.0)
        .fold(1.0, f64::max);
    let y_max = s
        .hare
        .iter()
        .chain(&s.thread)
        .map(|p| p.1)
        .chain([s.hare_capacity, s.thread_capacity.unwrap_or(0.0)])
        .fold(1.0, f64::max)
        * 1.08;
    let mut b = ChartBuilder::on(&root);
    b.margin(15);
    if text {
        b.caption(&s.title, ("sans-serif", 20))
            .x_label_area_size(40)
            .y_label_area_size(70);
    }
    let mut chart = b.build_cartesian_2d(0.0..x_max, 0.0..y_max).map_err(err)?;
    if text {
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("Mbit/s (per 1 s interval)")
            .draw()
            .map_err(err)?;
    }
    let cap = |v: f64, c: RGBColor| {
        LineSeries::new(vec![(0.0, v), (x_max, v)], c.mix(0.4).stroke_width(1))
    };
    chart.draw_series(cap(s.hare_capacity, HARE)).map_err(err)?;
    if let Some(t) = s.thread_capacity {
        chart.draw_series(cap(t, THREAD)).map_err(err)?;
    }
    if !s.thread.is_empty() {
        let series = chart
            .draw_series(LineSeries::new(
                s.thread.iter().copied(),
                THREAD.stroke_width(2),
            ))
            .map_err(err)?;
        if text {
            series.label("thread (nuttcp)").legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], THREAD.stroke_width(2))
            });
        }
        chart
            .draw_series(s.thread.iter().map(|&p| Circle::new(p, 3, THREAD.filled())))
            .map_err(err)?;
    }
    let series = chart
        .draw_series(LineSeries::new(
            s.hare.iter().copied(),
            HARE.stroke_width(2),
        ))
        .map_err(err)?;
    if text {
        series
            .label("hare (simulated QUIC)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], HARE.stroke_width(2)));
    }
    chart
        .draw_series(
            s.hare
                .iter()
                .map(|&p| TriangleMarker::new(p, 4, HARE.filled())),
        )
        .map_err(err)?;
    if text {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

fn draw_cwnd<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    s: &CwndSeries,
    text: bool,
) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let x_max = s.cwnd.iter().map(|p| p.0).fold(1.0, f64::max);
    let y_max = s
        .cwnd
        .iter()
        .map(|p| p.1)
        .chain([s.bdp_packets])
        .fold(10.0, f64::max)
        * 2.0;
    let mut b = ChartBuilder::on(&root);
    b.margin(15);
    if text {
        b.caption(&s.title, ("sans-serif", 20))
            .x_label_area_size(40)
            .y_label_area_size(70);
    }
    let mut chart = b
        .build_cartesian_2d(0.0..x_max, (1.0..y_max).log_scale())
        .map_err(err)?;
    if text {
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("cwnd (segments, log scale)")
            .draw()
            .map_err(err)?;
    }
    let bdp = chart
        .draw_series(LineSeries::new(
            vec![(0.0, s.bdp_packets), (x_max, s.bdp_packets)],
            BLACK.mix(0.6).stroke_width(1),
        ))
        .map_err(err)?;
    if text {
        bdp.label(format!("BDP {:.0} packets", s.bdp_packets))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.6)));
    }
    if !s.ssthresh.is_empty() {
        let ss = chart
            .draw_series(s.ssthresh.iter().map(|&p| Pixel::new(p, GREEN.mix(0.7))))
            .map_err(err)?;
        if text {
            ss.label("ssthresh")
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], GREEN));
        }
    }
    let c = chart
        .draw_series(LineSeries::new(
            s.cwnd.iter().map(|&(t, w)| (t, w.max(1.0))),
            HARE.stroke_width(2),
        ))
        .map_err(err)?;
    if text {
        c.label("hare cwnd")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], HARE.stroke_width(2)));
    }
    chart
        .draw_series(
            s.reductions
                .iter()
                .map(|&(t, w)| Cross::new((t, w.max(1.0)), 5, BLACK.stroke_width(1))),
        )
        .map_err(err)?;
    chart
        .draw_series(
            s.exits
                .iter()
                .map(|(t, w, _)| Circle::new((*t, w.max(1.0)), 7, BLUE.stroke_width(2))),
        )
        .map_err(err)?;
    if text {
        for (t, w, reason) in &s.exits {
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("exit: {reason} @ {w:.0}"),
                    (*t, w.max(1.0) * 1.3),
                    ("sans-serif", 14).into_font().color(&BLUE),
                )))
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// `stem` + `suffix` (run ids contain dots, so `Path::with_extension` would cut them).
fn with_suffix(stem: &Path, suffix: &str) -> PathBuf {
    let mut s = stem.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Write `<stem>.svg` and `<stem>.png` of a throughput plot; returns the files.
pub fn throughput(stem: &Path, s: &ThroughputSeries) -> Result<Vec<PathBuf>> {
    let text = font().is_some();
    let (svg, png) = (with_suffix(stem, ".svg"), with_suffix(stem, ".png"));
    draw_throughput(SVGBackend::new(&svg, SIZE).into_drawing_area(), s, text)
        .with_context(|| format!("drawing {}", svg.display()))?;
    draw_throughput(BitMapBackend::new(&png, SIZE).into_drawing_area(), s, text)
        .with_context(|| format!("drawing {}", png.display()))?;
    Ok(vec![svg, png])
}

/// Write `<stem>.svg` and `<stem>.png` of a cwnd plot; returns the files.
pub fn cwnd(stem: &Path, s: &CwndSeries) -> Result<Vec<PathBuf>> {
    let text = font().is_some();
    let (svg, png) = (with_suffix(stem, ".svg"), with_suffix(stem, ".png"));
    draw_cwnd(SVGBackend::new(&svg, SIZE).into_drawing_area(), s, text)
        .with_context(|| format!("drawing {}", svg.display()))?;
    draw_cwnd(BitMapBackend::new(&png, SIZE).into_drawing_area(), s, text)
        .with_context(|| format!("drawing {}", png.display()))?;
    Ok(vec![svg, png])
}
