//! The `hare-lab` subcommands of the analysis, as thin wrappers over the library:
//! `analyze`, `plot`, `compare` and `bench-analyze`.
//!
//! hare-lab adds them with one variant: `#[command(flatten)]
//! Analyze(hare_analyze::cli::AnalyzeCommand)` and calls [`run`].
//! `examples/hare-analyze.rs` exposes the same commands on their own.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use hare_link::{BitRate, ByteSize, TimeSpan};

use crate::metrics::{compute, Metrics, Params};
use crate::trace::Trace;

/// The analysis subcommands.
#[derive(Debug, Subcommand)]
pub enum AnalyzeCommand {
    /// Analyse hare reports and qlog files (JSON-SEQ `.sqlog`, JSON `.qlog`): slow-start
    /// exit, overshoot, time to a share of the capacity, losses, recovery, goodput; prints a
    /// table (plain, --markdown) or JSON (--json).
    Analyze(AnalyzeArgs),
    /// Plot goodput, cwnd (log scale) and RTT vs time of one or more files, overlaid, as SVG
    /// and PNG in a directory.
    Plot(PlotArgs),
    /// Two files' metrics side by side with the ratio B/A.
    Compare(CompareArgs),
    /// Write a large synthetic qlog and measure the analysis: MB/s and peak RSS against the
    /// targets (>= 100 MB/s, < 200 MB for 1 GB).
    BenchAnalyze(BenchArgs),
}

/// What is known about the path, and the analysis knobs.
#[derive(Debug, Clone, Args)]
pub struct PathOpts {
    /// Bottleneck capacity (e.g. 10g, 100m); default: the report header's, else the peak
    /// goodput bin (estimated).
    #[arg(long)]
    pub capacity: Option<BitRate>,
    /// Base round-trip time (e.g. 80ms); default: the report header's, else the minimum RTT.
    #[arg(long)]
    pub rtt: Option<TimeSpan>,
    /// Goodput bin width in seconds.
    #[arg(long, default_value_t = 1.0)]
    pub bin: f64,
    /// Share of the capacity for "time to X%", in percent.
    #[arg(long, default_value_t = 90.0)]
    pub percent: f64,
}

impl PathOpts {
    /// The metric parameters these options give.
    pub fn params(&self) -> Result<Params> {
        if !(self.bin > 0.0 && self.bin.is_finite()) {
            bail!(
                "--bin must be a positive number of seconds, got {}",
                self.bin
            );
        }
        if !(self.percent > 0.0 && self.percent <= 100.0) {
            bail!("--percent must be in (0, 100], got {}", self.percent);
        }
        Ok(Params {
            bin_s: self.bin,
            capacity_bps: self.capacity.map(|c| c.0),
            rtt_ms: self.rtt.map(|r| r.0 as f64 / 1e6),
            fraction: self.percent / 100.0,
        })
    }
}

/// `analyze FILE...`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Report (.jsonl) or qlog (.sqlog, .qlog) files, or directories holding them (hare's
    /// `.cc.jsonl` sidecars are paired with their qlog).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Path facts and knobs.
    #[command(flatten)]
    pub path: PathOpts,
    /// Print a Markdown table.
    #[arg(long)]
    pub markdown: bool,
    /// Print JSON (one array of metrics objects) instead of a table.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
}

/// `plot FILE... -o DIR`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Report or qlog files or directories, overlaid.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output directory (created).
    #[arg(short, long)]
    pub out: PathBuf,
    /// Path facts and knobs.
    #[command(flatten)]
    pub path: PathOpts,
}

/// `compare A B`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Baseline file.
    pub a: PathBuf,
    /// File compared with it.
    pub b: PathBuf,
    /// Path facts and knobs.
    #[command(flatten)]
    pub path: PathOpts,
    /// Print a Markdown table.
    #[arg(long)]
    pub markdown: bool,
    /// Print JSON (`{"a": ..., "b": ...}`).
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
}

/// `bench-analyze`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Size of the generated qlog (e.g. 200m, 1g).
    #[arg(long, default_value = "200m")]
    pub size: ByteSize,
    /// Directory for the file (default: the system temporary directory).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the generated file.
    #[arg(long)]
    pub keep: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Deepest directory level searched below a directory argument.
const MAX_DEPTH: usize = 4;

/// What a directory entry is to the analysis.
fn is_sidecar(p: &Path) -> bool {
    p.to_string_lossy().ends_with(".cc.jsonl")
}

fn is_analysable(p: &Path) -> bool {
    let name = p.to_string_lossy();
    !is_sidecar(p)
        && !name.ends_with(".truth.json")
        && [".sqlog", ".qlog", ".jsonl", ".json"]
            .iter()
            .any(|e| name.ends_with(e))
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if depth < MAX_DEPTH {
                walk(&p, depth + 1, out)?;
            }
        } else if is_analysable(&p) {
            out.push(p);
        }
    }
    Ok(())
}

/// The files named: directories are searched for qlog (`.sqlog`, `.qlog`) and report
/// (`.jsonl`, `.json`) files; hare's `.cc.jsonl` sidecars are never read on their own (the
/// reader pairs each with its qlog), and a sidecar named explicitly is skipped with a note.
pub fn expand(files: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for f in files {
        if f.is_dir() {
            let before = out.len();
            walk(f, 0, &mut out)?;
            if out.len() == before {
                bail!("{}: no qlog or report files in this directory", f.display());
            }
        } else if is_sidecar(f) {
            let qlog = f.to_string_lossy().replace(".cc.jsonl", ".sqlog");
            if !Path::new(&qlog).exists() {
                eprintln!(
                    "{}: a hare controller sidecar without its qlog ({qlog}): skipped",
                    f.display()
                );
            }
        } else {
            out.push(f.clone());
        }
    }
    Ok(out)
}

/// Labels that tell traces of same-named files apart: the file name, with as many parent
/// folders as it takes to make it unique (`a/server.sqlog`, `b/server.sqlog`).
pub fn labels(paths: &[PathBuf]) -> Vec<String> {
    let parts: Vec<Vec<String>> = paths
        .iter()
        .map(|p| {
            let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
            abs.components()
                .rev()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .collect();
    let label = |i: usize, depth: usize| {
        let mut v: Vec<&str> = parts[i].iter().take(depth).map(String::as_str).collect();
        v.reverse();
        v.join("/")
    };
    (0..paths.len())
        .map(|i| {
            let mut depth = 1;
            // Bounded by the path's length.
            while depth < parts[i].len()
                && (0..paths.len())
                    .any(|j| j != i && parts[j] != parts[i] && label(j, depth) == label(i, depth))
            {
                depth += 1;
            }
            label(i, depth)
        })
        .collect()
}

/// Reads every trace of the files and directories; notes about skipped records and what
/// the reader worked around go to stderr.
pub fn load(files: &[PathBuf]) -> Result<Vec<Trace>> {
    let paths = expand(files)?;
    let names = labels(&paths);
    load_labelled(&paths, &names)
}

/// Reads the files (no directories), naming their traces `names`.
fn load_labelled(paths: &[PathBuf], names: &[String]) -> Result<Vec<Trace>> {
    let mut out = Vec::new();
    for (f, name) in paths.iter().zip(names.iter().cloned()) {
        let mut traces =
            crate::read_file(f).with_context(|| format!("analysing {}", f.display()))?;
        let base = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for t in &mut traces {
            // Keep a trace suffix (`#1`) the reader added for multi-trace files.
            t.name = match t.name.strip_prefix(base.as_str()) {
                Some(rest) => format!("{name}{rest}"),
                None => name.clone(),
            };
            for s in &t.skipped {
                eprintln!("{}: skipped {} record(s): {}", t.name, s.count, s.reason);
            }
            for n in &t.notes {
                eprintln!("{}: {n}", t.name);
            }
        }
        out.extend(traces);
    }
    Ok(out)
}

fn metrics_of(traces: &[Trace], p: &Params) -> Vec<Metrics> {
    traces.iter().map(|t| compute(t, p)).collect()
}

/// Runs one subcommand.
pub fn run(cmd: AnalyzeCommand) -> Result<()> {
    match cmd {
        AnalyzeCommand::Analyze(a) => {
            let p = a.path.params()?;
            let ms = metrics_of(&load(&a.files)?, &p);
            if a.json {
                println!("{}", serde_json::to_string_pretty(&ms)?);
            } else {
                print!("{}", crate::table::analysis(&ms, a.markdown));
            }
        }
        AnalyzeCommand::Plot(a) => {
            let p = a.path.params()?;
            let traces = load(&a.files)?;
            let ms = metrics_of(&traces, &p);
            let files = crate::plot::plot_all(&a.out, &traces, &ms)?;
            // Said on the charts too; here so a script running `plot` learns it.
            eprint!(
                "{}",
                crate::table::not_logged_lines(ms.iter().map(|m| (m.name.as_str(), m)))
            );
            if crate::plot::font().is_none() {
                eprintln!("no font found (set HARE_LAB_FONT): plots drawn without text");
            }
            for f in files {
                println!("{}", f.display());
            }
        }
        AnalyzeCommand::Compare(a) => {
            let p = a.path.params()?;
            // Same-named files (a/server.sqlog, b/server.sqlog) get their folders.
            let names = labels(&[a.a.clone(), a.b.clone()]);
            let first = |f: &PathBuf, name: &String| -> Result<Metrics> {
                let traces = load_labelled(std::slice::from_ref(f), std::slice::from_ref(name))?;
                if traces.len() > 1 {
                    eprintln!(
                        "{}: {} traces, comparing the first",
                        f.display(),
                        traces.len()
                    );
                }
                let t = traces
                    .first()
                    .with_context(|| format!("{}: no trace", f.display()))?;
                Ok(compute(t, &p))
            };
            let (ma, mb) = (first(&a.a, &names[0])?, first(&a.b, &names[1])?);
            if a.json {
                let v = serde_json::json!({ "a": ma, "b": mb });
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                print!("{}", crate::table::comparison(&ma, &mb, a.markdown));
            }
        }
        AnalyzeCommand::BenchAnalyze(a) => {
            let dir = a.dir.unwrap_or_else(std::env::temp_dir);
            let r = crate::bench::run(&dir, a.size.0, a.keep)?;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                let ok = |b: bool| if b { "ok" } else { "MISSED" };
                println!(
                    "qlog {:.1} MB, {} events (written in {:.2} s)",
                    r.bytes as f64 / 1e6,
                    r.events,
                    r.generate_s
                );
                println!(
                    "analysis {:.2} s: {:.1} MB/s (target >= {:.0}: {})",
                    r.analyze_s,
                    r.mb_per_s,
                    crate::bench::TARGET_MB_PER_S,
                    ok(r.fast_enough())
                );
                match r.peak_rss_bytes {
                    Some(b) => println!(
                        "peak RSS {:.1} MiB (target < {} MiB for 1 GB: {})",
                        b as f64 / 1048576.0,
                        crate::bench::TARGET_RSS_BYTES >> 20,
                        ok(r.small_enough())
                    ),
                    None => println!("peak RSS unknown (no /proc/self/status)"),
                }
                println!("goodput found {:.1} Mbit/s", r.goodput_mbps);
            }
        }
    }
    Ok(())
}
