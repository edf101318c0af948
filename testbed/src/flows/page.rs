//! The `index.html` of a run of competing flows (`hare-lab sim FILE -o DIR` on a
//! `[[flows]]` scenario, `hare-lab compete`): per repetition the summary table, Jain's index
//! and its window, the three plots inline and what they could not show.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::summary::{FlowsSummary, SUMMARY_LEGEND};
use crate::html::Page;

/// One repetition on the page.
#[derive(Debug, Clone)]
pub struct RepSection<'a> {
    /// Its heading.
    pub heading: String,
    /// Its summary.
    pub summary: &'a FlowsSummary,
    /// Its plots (the `.svg` files are shown).
    pub files: Vec<PathBuf>,
    /// What the plots could not show.
    pub notes: Vec<String>,
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

/// The summary as table cells, header first.
pub fn table_cells(s: &FlowsSummary) -> Vec<Vec<String>> {
    let mut rows = vec![[
        "flow",
        "controller",
        "start s",
        "RTT ms",
        "goodput Mbit/s",
        "Mbit/s in the Jain window",
        "retransmits",
        "slow-start exit",
        "converged after s",
        "error",
    ]
    .map(String::from)
    .to_vec()];
    for f in &s.flows {
        rows.push(vec![
            f.flow.clone(),
            f.controller.clone(),
            format!("{:.1}", f.start_s),
            format!("{:.0}", f.rtt_ms),
            format!("{:.2}", f.goodput_mbps),
            opt(f.window_goodput_mbps, 2),
            f.retransmits.to_string(),
            f.exit.as_ref().map_or("-".into(), |e| {
                format!(
                    "{:.3} s, {} seg, {}",
                    e.t_s,
                    e.cwnd_segments,
                    e.reason.as_str()
                )
            }),
            opt(f.convergence_s, 1),
            f.error.clone().unwrap_or_default(),
        ]);
    }
    rows
}

/// The line on sharing under the table.
pub fn sharing_line(s: &FlowsSummary) -> String {
    let mut line = match (s.jain, s.jain_window_s) {
        (Some(j), Some([a, b])) => format!(
            "Jain's index {j:.4} over run seconds {a}-{b} (every flow delivering), {:.2} Mbit/s in all.",
            s.window_total_mbps.unwrap_or(0.0)
        ),
        _ => "Jain's index: no whole second in which every flow was delivering.".into(),
    };
    if let Some(r) = s.ratio_f0_f1 {
        line.push_str(&format!(" Goodput ratio f0/f1 over that window: {r:.3}."));
    }
    if let Some(v) = s.valid {
        line.push_str(if v {
            " Emulator: VALID."
        } else {
            " Emulator: INVALID"
        });
        for r in &s.invalid_reasons {
            line.push_str(&format!("; {r}"));
        }
    }
    line
}

/// Writes `dir/index.html`; returns its path.
pub fn write_flows_index(dir: &Path, title: &str, reps: &[RepSection<'_>]) -> Result<PathBuf> {
    let mut page = Page::new(title);
    page.para(SUMMARY_LEGEND);
    for r in reps {
        page.heading(&r.heading);
        page.table(&table_cells(r.summary), &[0, 1, 7, 9]);
        page.para(&sharing_line(r.summary));
        for svg in r
            .files
            .iter()
            .filter(|f| f.extension().is_some_and(|x| x == "svg"))
        {
            page.svg_file(svg, super::plots::caption(svg))?;
        }
        for n in &r.notes {
            page.para(&format!("Not shown: {n}."));
        }
    }
    let path = dir.join("index.html");
    std::fs::write(&path, page.finish()).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
