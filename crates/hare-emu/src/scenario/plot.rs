//! One SVG per path: cwnd (segments) against time for kernel and hare, one line per knob and
//! pacing (the first valid repetition of each), with the path's BDP as a reference line.
//!
//! Drawn by hare-plot, the workspace's one plotting path (its font discovery decides
//! whether the plot carries text).

use std::path::{Path, PathBuf};

use anyhow::Result;
use hare_plot::{write_chart_files, Chart, Series, Unit};

use super::{Impl, KvhScenario, RunPlan};

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
    let mut files = Vec::new();
    for p in s.path_points() {
        let mut series: Vec<Series> = Vec::new();
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
                            // Kernel lines thick, hare lines thin, one colour per knob and pacing.
                            series.push(Series {
                                label,
                                points: t,
                                colour: Some(ki * 2 + usize::from(paced)),
                                width: Some(if imp == Impl::Kernel { 3 } else { 1 }),
                                ..Series::default()
                            });
                        }
                    }
                }
            }
        }
        if series.is_empty() {
            continue;
        }
        let bdp = p.bdp_packets(s.mtu);
        let chart = Chart {
            title: format!("cwnd vs time, {} (kernel CUBIC vs hare CUBIC)", p.name),
            x_desc: "time (s)".into(),
            y_desc: "cwnd (segments)".into(),
            log_y: false,
            y_unit: Unit::Mbps,
            series,
            hlines: vec![(bdp, format!("BDP {bdp:.0}"))],
            notes: Vec::new(),
        };
        files.extend(write_chart_files(
            &out.join(format!("cwnd-{}.svg", p.name)),
            &out.join(format!("cwnd-{}.png", p.name)),
            &chart,
        )?);
    }
    Ok(files)
}
