//! The `index.html` of `hare-lab replay` and `hare-lab sim`: the summary table (thread and
//! hare side by side), then per run its second-by-second rows and its two plots inline.

use crate::html::Page;
use crate::replay_record::ReplayRecord;
use crate::summary_table;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// What the page shows of one run.
#[derive(Debug, Clone, Default)]
pub struct RunSection {
    /// The run's heading line.
    pub heading: String,
    /// Its side-by-side (or nuttcp) text.
    pub text: String,
    /// Its SVG plots, in order.
    pub svgs: Vec<PathBuf>,
}

impl RunSection {
    /// A section whose plots are the `.svg` files among `files`.
    pub fn new(heading: String, text: String, files: &[PathBuf]) -> Self {
        RunSection {
            heading,
            text,
            svgs: files
                .iter()
                .filter(|f| f.extension().is_some_and(|x| x == "svg"))
                .cloned()
                .collect(),
        }
    }
}

/// Writes `dir/index.html`; returns its path.
pub fn write_index(
    dir: &Path,
    title: &str,
    records: &[ReplayRecord],
    sections: &[RunSection],
) -> Result<PathBuf> {
    let mut page = Page::new(title);
    page.heading("Summary: thread and hare side by side");
    page.table(&summary_table::cells(records), &[0, 1]);
    page.para(&summary_table::legend(records));
    for s in sections {
        page.heading(&s.heading);
        for svg in &s.svgs {
            page.svg_file(svg, crate::plots::caption(svg))?;
        }
        page.pre(&s.text);
    }
    let path = dir.join("index.html");
    std::fs::write(&path, page.finish()).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}
