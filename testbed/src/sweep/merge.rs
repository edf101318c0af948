//! `hare-lab sweep merge`: shards into one table, CSV and heatmaps.

use super::flows_metrics;
use super::run::SweepRow;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The rows of every shard, checked to belong to one sweep definition.
#[derive(Debug, Clone)]
pub struct Merged {
    /// Sweep name.
    pub sweep: String,
    /// Definition fingerprint.
    pub definition: String,
    /// Cells in the sweep.
    pub cells: usize,
    /// Axis names in order.
    pub axes: Vec<String>,
    /// Rows by (cell, run id), in cell order.
    pub rows: Vec<SweepRow>,
    /// Cells with no row in any shard.
    pub missing: Vec<usize>,
}

/// The `.jsonl` files of a directory, sorted.
fn jsonl_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    Ok(v)
}

/// Reads every `.jsonl` of `dirs` (shard outputs), refuses rows of different sweep
/// definitions and conflicting duplicates (the same cell run twice with different results).
pub fn merge_dirs(dirs: &[PathBuf]) -> Result<Merged> {
    let mut by_key: BTreeMap<(usize, String), SweepRow> = BTreeMap::new();
    let mut first: Option<(String, String, usize, PathBuf)> = None;
    for dir in dirs {
        let files = jsonl_files(dir)?;
        if files.is_empty() {
            bail!("{}: no .jsonl shard files", dir.display());
        }
        for f in files {
            let text =
                std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            for (n, line) in text
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
            {
                let row: SweepRow = serde_json::from_str(line)
                    .with_context(|| format!("{}:{}: not a sweep row", f.display(), n + 1))?;
                match &first {
                    None => {
                        first = Some((
                            row.sweep.clone(),
                            row.definition.clone(),
                            row.cells,
                            f.clone(),
                        ))
                    }
                    Some((name, def, _, from)) if *def != row.definition || *name != row.sweep => {
                        bail!(
                            "mixed sweep definitions: {} holds sweep `{}` definition {}, but {}:{} holds sweep `{}` definition {}; merge only the shards of one sweep file",
                            from.display(), name, def, f.display(), n + 1, row.sweep, row.definition
                        )
                    }
                    Some(_) => {}
                }
                let key = (row.cell, row.run.clone());
                match by_key.get(&key) {
                    Some(old) if *old != row => bail!(
                        "{}:{}: cell {} run {} appears twice with different results (two shards ran it?)",
                        f.display(), n + 1, row.cell, row.run
                    ),
                    Some(_) => {}
                    None => {
                        by_key.insert(key, row);
                    }
                }
            }
        }
    }
    let Some((sweep, definition, cells, _)) = first else {
        bail!("no sweep rows found");
    };
    let rows: Vec<SweepRow> = by_key.into_values().collect();
    let axes = rows
        .first()
        .map(|r| r.key.iter().map(|k| k.axis.clone()).collect())
        .unwrap_or_default();
    let present: std::collections::BTreeSet<usize> = rows.iter().map(|r| r.cell).collect();
    let missing = (0..cells).filter(|c| !present.contains(c)).collect();
    Ok(Merged {
        sweep,
        definition,
        cells,
        axes,
        rows,
        missing,
    })
}

/// Which way a metric is better: the heatmaps' colour map and legend say it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Better {
    /// Higher values are better.
    Higher,
    /// Lower values are better.
    Lower,
    /// Values closer to this one are better (exit cwnd at the BDP: below it the link is
    /// left idle, above it the queue overflows).
    Near(f64),
}

impl Better {
    /// The legend's words.
    pub fn text(self) -> String {
        match self {
            Better::Higher => "higher is better".into(),
            Better::Lower => "lower is better".into(),
            Better::Near(v) => format!("closer to {v} is better"),
        }
    }
}

/// A metric of the table and the heatmaps.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// Column header: the quantity with its unit and, for rates and times, its bin.
    pub name: &'static str,
    /// File-name stem of its heatmap.
    pub stem: &'static str,
    /// Its value in a row.
    pub get: fn(&SweepRow) -> Option<f64>,
    /// Decimals shown.
    pub decimals: usize,
    /// Which way is better (the heatmaps' colours), `None` when neither is.
    pub better: Option<Better>,
}

/// The 100 ms time to 90 % (the run's fine intervals): the one the progress lines, the
/// table and the heatmap show first, so all three agree.
const T90_100MS: Metric = Metric {
    name: "t90% s (100 ms bins)",
    stem: "time-to-90pct",
    get: |r| r.record.as_ref().and_then(|x| x.time_to_90pct_100ms_s),
    decimals: 1,
    better: Some(Better::Lower),
};

/// The four metrics the heatmaps show, then the rest of the table's columns.
pub const METRICS: [Metric; 8] = [
    T90_100MS,
    Metric {
        name: "exit cwnd/BDP (x)",
        stem: "exit-cwnd-over-bdp",
        get: |r| r.exit_cwnd_over_bdp,
        decimals: 2,
        better: Some(Better::Near(1.0)),
    },
    Metric {
        name: "loss in SS (pkts)",
        stem: "losses-in-slow-start",
        get: |r| r.losses_in_slow_start.map(|v| v as f64),
        decimals: 0,
        better: Some(Better::Lower),
    },
    Metric {
        name: "avg Mbit/s (whole run)",
        stem: "average-rate",
        get: |r| r.record.as_ref().map(|x| x.avg_mbps),
        decimals: 0,
        better: Some(Better::Higher),
    },
    Metric {
        name: "t90% s (1 s bins)",
        stem: "time-to-90pct-1s",
        get: |r| r.record.as_ref().and_then(|x| x.time_to_90pct_s),
        decimals: 1,
        better: Some(Better::Lower),
    },
    Metric {
        name: "exit cwnd (segments)",
        stem: "exit-cwnd",
        get: |r| {
            r.record
                .as_ref()
                .and_then(|x| x.exit_cwnd_segments.map(f64::from))
        },
        decimals: 0,
        better: None,
    },
    Metric {
        name: "loss total (pkts)",
        stem: "losses",
        get: |r| r.record.as_ref().map(|x| x.lost_packets as f64),
        decimals: 0,
        better: Some(Better::Lower),
    },
    Metric {
        name: "window cap Mbit/s",
        stem: "window-cap",
        get: |r| r.window_cap_mbps,
        decimals: 0,
        better: Some(Better::Higher),
    },
];

/// What the table's columns mean (under the table, in the text and on the page).
pub const TABLE_LEGEND: &str =
    "t90% = end of the first interval at >= 90% of the link's payload rate, \
on the run's 100 ms intervals and on its 1 s intervals (the progress lines show the 100 ms \
one); exit cwnd/BDP = slow-start exit window over the bandwidth-delay product; loss in SS = \
packets lost up to the end of the 100 ms interval holding the exit; avg Mbit/s = payload \
over the whole run; window cap = the rate the flow-control windows allow over the base \
RTT, shown where it is below the link's payload rate (the cell is capped by its window, \
whatever its slow start does).";

/// What the heatmaps share (on the page above them).
pub const HEATMAP_LEGEND: &str = "Each square is a cell's mean over its runs; colours go \
from orange (the worst value of the map) to blue (the best), the legend under each title \
says which way is better; a dashed outline marks a cell capped by its window.";

/// How many metrics get a heatmap.
pub const HEATMAP_METRICS: usize = 4;

/// The metrics of a merged sweep: its columns, how many of the first get a heatmap, and
/// what the columns mean. A sweep of flows cells has its own (Jain's index first); any
/// other keeps the one-flow columns.
pub struct MetricSet {
    /// The table's numeric columns, in order.
    pub all: &'static [Metric],
    /// How many of the first get a heatmap.
    pub heatmaps: usize,
    /// What the columns mean.
    pub legend: &'static str,
    /// Text columns after the numeric ones (flows sweeps: the window, per-flow goodput).
    pub text: Vec<flows_metrics::TextColumn>,
}

/// The metrics of `rows`: the flows set when any row is a flows cell's.
pub fn metric_set(rows: &[SweepRow]) -> MetricSet {
    if rows.iter().any(|r| r.flows.is_some()) {
        MetricSet {
            all: &flows_metrics::FLOWS_METRICS,
            heatmaps: flows_metrics::FLOWS_HEATMAP_METRICS,
            legend: flows_metrics::FLOWS_TABLE_LEGEND,
            text: flows_metrics::text_columns().to_vec(),
        }
    } else {
        MetricSet {
            all: &METRICS,
            heatmaps: HEATMAP_METRICS,
            legend: TABLE_LEGEND,
            text: Vec::new(),
        }
    }
}

/// A run's figures for its progress line, named as the table's columns name them.
pub fn progress_figures(r: &SweepRow) -> String {
    if r.flows.is_some() {
        let [jain, ..] = &flows_metrics::FLOWS_METRICS;
        let [window, per_flow] = flows_metrics::text_columns();
        return format!(
            "{} {} over {} s, {} {}",
            jain.name,
            fmt_value((jain.get)(r), jain.decimals),
            (window.1)(r),
            per_flow.0,
            (per_flow.1)(r)
        );
    }
    let avg = &METRICS[3];
    let exit = &METRICS[5];
    let mut s = format!(
        "{} {}, {} {}, {} {}",
        avg.name,
        fmt_value((avg.get)(r), avg.decimals),
        T90_100MS.name,
        fmt_value((T90_100MS.get)(r), T90_100MS.decimals),
        exit.name,
        fmt_value((exit.get)(r), exit.decimals),
    );
    if let Some(cap) = r.window_cap_mbps {
        s.push_str(&format!(", capped by its window at {cap:.0} Mbit/s"));
    }
    s
}

fn fmt_value(v: Option<f64>, decimals: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.decimals$}"))
}

/// The table as rows of cells (header first): cell, axes, run, metrics, error.
pub fn table_cells(m: &Merged) -> Vec<Vec<String>> {
    let set = metric_set(&m.rows);
    let mut out = Vec::new();
    let mut header = vec!["cell".to_string()];
    header.extend(m.axes.iter().cloned());
    header.push("run".into());
    header.extend(set.all.iter().map(|x| x.name.to_string()));
    header.extend(set.text.iter().map(|t| t.0.to_string()));
    header.push("error".into());
    out.push(header);
    for r in &m.rows {
        let mut line = vec![r.cell.to_string()];
        line.extend(r.key.iter().map(|k| k.value.clone()));
        line.push(r.run.clone());
        line.extend(set.all.iter().map(|x| fmt_value((x.get)(r), x.decimals)));
        line.extend(set.text.iter().map(|t| (t.1)(r)));
        line.push(r.error.clone().unwrap_or_default());
        out.push(line);
    }
    out
}

/// The table as aligned text.
pub fn table_text(m: &Merged) -> String {
    let cells = table_cells(m);
    let cols = cells.first().map_or(0, |h| h.len());
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            cells
                .iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = format!(
        "sweep {} (definition {}): {} cells, {} rows{}\n",
        m.sweep,
        m.definition,
        m.cells,
        m.rows.len(),
        if m.missing.is_empty() {
            String::new()
        } else {
            format!(", {} cell(s) missing: {:?}", m.missing.len(), m.missing)
        }
    );
    for (i, r) in cells.iter().enumerate() {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(v, w)| format!("{v:<w$}"))
            .collect();
        s.push_str(line.join("  ").trim_end());
        s.push('\n');
        if i == 0 {
            s.push_str(
                &"-".repeat(widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1)),
            );
            s.push('\n');
        }
    }
    s.push_str(metric_set(&m.rows).legend);
    s.push('\n');
    s
}

/// The table as CSV (fields quoted when they hold a comma or quote).
pub fn table_csv(m: &Merged) -> String {
    let quote = |v: &str| {
        if v.contains([',', '"', '\n']) {
            format!("\"{}\"", v.replace('"', "\"\""))
        } else {
            v.to_string()
        }
    };
    table_cells(m)
        .iter()
        .map(|r| r.iter().map(|v| quote(v)).collect::<Vec<_>>().join(",") + "\n")
        .collect()
}

/// One heatmap: rows are the combinations of every axis but the last, columns the last
/// axis's values; each square is the metric's mean over the cell's runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Heatmap {
    /// Metric name.
    pub title: String,
    /// Row labels.
    pub rows: Vec<String>,
    /// Column labels.
    pub cols: Vec<String>,
    /// Values, row-major.
    pub values: Vec<Vec<Option<f64>>>,
    /// Decimals shown.
    pub decimals: usize,
    /// Which way is better (colours and legend).
    pub better: Option<Better>,
    /// Per square, row-major: the window cap (Mbit/s) when the cell is capped by its window.
    pub capped: Vec<Vec<Option<f64>>>,
}

/// The heatmap of `metric` over the merged rows.
pub fn heatmap(m: &Merged, metric: &Metric) -> Heatmap {
    let mut rows: Vec<String> = Vec::new();
    let mut cols: Vec<String> = Vec::new();
    let mut sums: BTreeMap<(usize, usize), (f64, u32)> = BTreeMap::new();
    let mut caps: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    for r in &m.rows {
        let (last, rest) = match r.key.split_last() {
            Some((l, rest)) => (l.value.clone(), rest),
            None => ("all".to_string(), &r.key[..]),
        };
        let row_label = if rest.is_empty() {
            m.sweep.clone()
        } else {
            rest.iter()
                .map(|k| format!("{}={}", k.axis, k.value))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let ri = rows
            .iter()
            .position(|x| *x == row_label)
            .unwrap_or_else(|| {
                rows.push(row_label);
                rows.len() - 1
            });
        let ci = cols.iter().position(|x| *x == last).unwrap_or_else(|| {
            cols.push(last);
            cols.len() - 1
        });
        if let Some(cap) = r.window_cap_mbps {
            caps.insert((ri, ci), cap);
        }
        let e = sums.entry((ri, ci)).or_insert((0.0, 0));
        if let Some(v) = (metric.get)(r) {
            e.0 += v;
            e.1 += 1;
        }
    }
    let values = (0..rows.len())
        .map(|ri| {
            (0..cols.len())
                .map(|ci| {
                    sums.get(&(ri, ci))
                        .filter(|s| s.1 > 0)
                        .map(|s| s.0 / f64::from(s.1))
                })
                .collect()
        })
        .collect();
    let capped = (0..rows.len())
        .map(|ri| {
            (0..cols.len())
                .map(|ci| caps.get(&(ri, ci)).copied())
                .collect()
        })
        .collect();
    let last_axis = m.axes.last().cloned().unwrap_or_default();
    Heatmap {
        title: format!("{} (columns: {last_axis})", metric.name),
        rows,
        cols,
        values,
        decimals: metric.decimals,
        better: metric.better,
        capped,
    }
}
