//! One SVG per path: cwnd (segments) against time for kernel and hare, one line per knob and
//! pacing (the first valid repetition of each), with the path's BDP as a reference line.
//!
//! Text needs a TrueType font (plotters' `ab_glyph` path): `$HARE_LAB_FONT`, else DejaVu Sans
//! (Debian `fonts-dejavu-core`) or Liberation Sans; without one the plot has no text.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{anyhow, Result};
use plotters::prelude::*;

use super::{Impl, KvhScenario, RunPlan};

const FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
];

fn have_font() -> bool {
    static FONT: OnceLock<bool> = OnceLock::new();
    *FONT.get_or_init(|| {
        let mut c: Vec<PathBuf> = std::env::var_os("HARE_LAB_FONT")
            .map(PathBuf::from)
            .into_iter()
            .collect();
        c.extend(FONTS.iter().map(PathBuf::from));
        for p in c {
            if let Ok(bytes) = std::fs::read(&p) {
                // plotters keeps registered fonts for the life of the process.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    })
}

/// (t, cwnd) points of a report's intervals.
fn cwnd_trace(report: &Path) -> Vec<(f64, f64)> {
    let Ok(f) = std::fs::File::open(report) else {
        return Vec::new();
    };
    match hare_report::jsonl::read_run(std::io::BufReader::new(f), &report.display().to_string()) {
        Ok(o) => o
            .run
            .intervals
            .iter()
            .filter_map(|iv| iv.cwnd_segments.map(|c| (iv.end_s, f64::from(c))))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// One valid run a plot may draw: what it ran and where its report is.
#[derive(Debug, Clone, Copy)]
pub struct PlottedRun<'a> {
    /// The run's plan (path, knob, pacing, implementation).
    pub plan: &'a RunPlan,
    /// Its hare-report JSON-lines file.
    pub report: &'a Path,
}

/// Draws the per-path plots of `runs` (valid runs only) into `out`; returns the files
/// written.
pub fn cwnd_plots(s: &KvhScenario, runs: &[PlottedRun<'_>], out: &Path) -> Result<Vec<PathBuf>> {
    let text = have_font();
    let mut files = Vec::new();
    for p in s.path_points() {
        let mut series: Vec<Trace> = Vec::new();
        for (ki, k) in s.knobs.iter().enumerate() {
            for paced in [false, true] {
                for imp in [Impl::Kernel, Impl::Hare] {
                    let pick = runs.iter().find(|r| {
                        r.plan.path.name == p.name
                            && r.plan.knob == k.name
                            && r.plan.paced == paced
                            && r.plan.implementation == imp
                    });
                    if let Some(r) = pick {
                        let t = cwnd_trace(r.report);
                        if !t.is_empty() {
                            let label = format!(
                                "{} {} {}",
                                match imp {
                                    Impl::Kernel => "kernel",
                                    Impl::Hare => "hare",
                                },
                                k.name,
                                if paced { "paced" } else { "unpaced" }
                            );
                            series.push((label, ki * 2 + usize::from(paced), t));
                        }
                    }
                }
            }
        }
        if series.is_empty() {
            continue;
        }
        let bdp = p.bdp_packets(s.mtu);
        let t_max = series
            .iter()
            .flat_map(|(_, _, v)| v.iter().map(|x| x.0))
            .fold(1.0, f64::max);
        let y_max = series
            .iter()
            .flat_map(|(_, _, v)| v.iter().map(|x| x.1))
            .fold(bdp * 1.2, f64::max)
            * 1.05;
        let title = format!("cwnd vs time, {} (kernel CUBIC vs hare CUBIC)", p.name);
        let file = out.join(format!("cwnd-{}.svg", p.name));
        draw(
            SVGBackend::new(&file, (1100, 620)).into_drawing_area(),
            &title,
            &series,
            bdp,
            (t_max, y_max),
            text,
        )?;
        files.push(file);
        let png = out.join(format!("cwnd-{}.png", p.name));
        draw(
            BitMapBackend::new(&png, (1100, 620)).into_drawing_area(),
            &title,
            &series,
            bdp,
            (t_max, y_max),
            text,
        )?;
        files.push(png);
    }
    Ok(files)
}

/// A labelled line: label, colour index, (t, cwnd) points.
type Trace = (String, usize, Vec<(f64, f64)>);
type Series = [Trace];

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    series: &Series,
    bdp: f64,
    (t_max, y_max): (f64, f64),
    text: bool,
) -> Result<()> {
    root.fill(&WHITE).map_err(|e| anyhow!("plot: {e:?}"))?;
    let mut b = ChartBuilder::on(&root);
    b.margin(12);
    if text {
        b.caption(title, ("sans-serif", 20))
            .x_label_area_size(36)
            .y_label_area_size(60);
    }
    let mut chart = b
        .build_cartesian_2d(0.0..t_max, 0.0..y_max)
        .map_err(|e| anyhow!("plot: {e:?}"))?;
    if text {
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("cwnd (segments)")
            .draw()
            .map_err(|e| anyhow!("plot: {e:?}"))?;
    }
    chart
        .draw_series(LineSeries::new(
            vec![(0.0, bdp), (t_max, bdp)],
            BLACK.mix(0.4),
        ))
        .map_err(|e| anyhow!("plot: {e:?}"))?
        .label(format!("BDP {bdp:.0}"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.mix(0.4)));
    for (label, colour, pts) in series {
        let color = Palette99::pick(*colour).to_rgba();
        // Kernel lines thick, hare lines thin, same colour order per knob and pacing.
        let style = if label.starts_with("kernel") {
            color.stroke_width(3)
        } else {
            color.stroke_width(1)
        };
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), style))
            .map_err(|e| anyhow!("plot: {e:?}"))?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], style));
    }
    if text {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow!("plot: {e:?}"))?;
    }
    root.present().map_err(|e| anyhow!("plot: {e:?}"))?;
    Ok(())
}
