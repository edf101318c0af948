//! Sweeps: a grid of scenario variants ([`grid`]), run whole or as one deterministic shard
//! ([`run`]), and merged from any number of shard directories into one table and heatmaps
//! ([`merge`]). `docs/SWEEPS.md` shows how batch systems spread the shards.

mod flows_axes;
mod flows_metrics;
mod flows_run;
pub mod grid;
mod heatmap_svg;
pub mod merge;
pub mod run;

pub use flows_run::FlowsCell;
pub use grid::{Shard, Sweep};
pub use merge::{merge_dirs, Merged};
pub use run::{run_sweep, shard_file, SweepOptions, SweepRow};

use crate::html::Page;
use anyhow::{Context, Result};
use heatmap_svg::heatmap_svg;
use std::io::Write;
use std::path::{Path, PathBuf};

fn write(path: &Path, text: &str) -> Result<PathBuf> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(path.to_path_buf())
}

/// `hare-lab sweep merge DIR... -o OUT`: merges the shards, prints the table and writes
/// `table.txt`, `table.csv`, one heatmap SVG per metric and `index.html` into `out_dir`.
/// An incomplete set (cells with no row) is refused, naming the cells, unless
/// `allow_missing`: a partial table must not pass for the sweep's answer.
/// Returns the merge and the files written.
pub fn merge_command(
    dirs: &[PathBuf],
    out_dir: &Path,
    allow_missing: bool,
    out: &mut dyn Write,
) -> Result<(Merged, Vec<PathBuf>)> {
    let m = merge_dirs(dirs)?;
    if !m.missing.is_empty() && !allow_missing {
        anyhow::bail!(
            "sweep {}: {} of {} cell(s) missing: {:?}; merge every shard's directory (or pass --allow-missing for a partial table)",
            m.sweep,
            m.missing.len(),
            m.cells,
            m.missing
        );
    }
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let text = merge::table_text(&m);
    write!(out, "{text}")?;
    let mut files = vec![
        write(&out_dir.join("table.txt"), &text)?,
        write(&out_dir.join("table.csv"), &merge::table_csv(&m))?,
    ];
    let mut page = Page::new(&format!("hare-lab sweep {}", m.sweep));
    page.para(&format!(
        "Definition {}: {} cells, {} runs merged from {} director{}{}.",
        m.definition,
        m.cells,
        m.rows.len(),
        dirs.len(),
        if dirs.len() == 1 { "y" } else { "ies" },
        if m.missing.is_empty() {
            String::new()
        } else {
            format!("; {} cell(s) missing: {:?}", m.missing.len(), m.missing)
        }
    ));
    page.heading("Heatmaps");
    page.para(merge::HEATMAP_LEGEND);
    let set = merge::metric_set(&m.rows);
    for metric in &set.all[..set.heatmaps] {
        let svg = heatmap_svg(&merge::heatmap(&m, metric));
        files.push(write(
            &out_dir.join(format!("heatmap-{}.svg", metric.stem)),
            &svg,
        )?);
        page.svg(&svg, metric.name);
    }
    page.heading("Table");
    let left: Vec<usize> = (1..=m.axes.len() + 1).collect();
    page.table(&merge::table_cells(&m), &left);
    page.para(set.legend);
    files.push(write(&out_dir.join("index.html"), &page.finish())?);
    writeln!(out, "wrote {} files to {}", files.len(), out_dir.display())?;
    Ok((m, files))
}
