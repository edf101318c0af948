//! The subcommands' work, separate from argument parsing so tests can call it.

use crate::replay_record::ReplayRecord;
use crate::report_out::{heading, record_of, side_by_side_text, write_outputs};
use crate::report_page::{write_index, RunSection};
use crate::runner::{run_jobs_streaming, Bars, Job};
use crate::scenario::{self, Scenario};
use crate::summary_table;
use crate::thread_data::ThreadData;
use anyhow::{bail, Context, Result};
use hare_report::nuttcp;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::bench::{bench_sim, bench_table, targets, BenchLine};

/// The README's main job, run by `hare-lab replay` without ids: the 2007 headline (CUBIC
/// 2.6.20 with initial_ssthresh=100, BIC 2.6.20 with 100, Reno, CUBIC with 0) plus modern
/// CUBIC with HyStart on the same path.
pub const HEADLINE: [&str; 5] = [
    "2007-cubic20-iss100-w60m",
    "2007-bic-iss100-w60m",
    "2007-reno-w60m",
    "2007-cubic20-iss0-w60m",
    "2007-path-linux6-hystart",
];

/// Options of `hare-lab replay`.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// Thread run ids, scenario names, or `all`; empty = [`HEADLINE`].
    pub ids: Vec<String>,
    /// Output directory.
    pub out_dir: PathBuf,
    /// `--json` destination: a file, or `-` for stdout.
    pub json: Option<String>,
    /// Simulations in parallel.
    pub jobs: usize,
    /// Scenario directory.
    pub scenarios: PathBuf,
    /// Draw plots.
    pub plots: bool,
    /// Cap every duration workload (and byte workload's time) at this.
    pub duration_cap: Option<Duration>,
    /// Show progress bars (stderr is a terminal).
    pub progress: bool,
}

/// Where every replayable id lives: thread run ids and scenario names.
pub struct Catalog {
    /// The thread's runs.
    pub threads: ThreadData,
    /// Every scenario of the directory.
    pub scenarios: Vec<Scenario>,
}

impl Catalog {
    /// Load the embedded thread data and the scenario directory.
    pub fn load(dir: &Path) -> Result<Catalog> {
        let threads = ThreadData::embedded()?;
        let scenarios = scenario::load_dir(dir, &threads)?;
        Ok(Catalog { threads, scenarios })
    }

    /// Jobs for an id: the run of the scenario that replays this thread run, or every run
    /// of the scenario of that name.
    pub fn jobs_for(&self, id: &str, trace: bool) -> Option<Vec<Job>> {
        for s in &self.scenarios {
            // The run and, for an unpaced replay, its quinn-paced extra row.
            let jobs: Vec<Job> = Job::all_of(s, trace)
                .into_iter()
                .filter(|j| j.plan.replays.as_deref() == Some(id))
                .collect();
            if !jobs.is_empty() {
                return Some(jobs);
            }
        }
        self.scenarios
            .iter()
            .find(|s| s.file.name == id)
            .map(|s| Job::all_of(s, trace))
    }

    /// Thread run ids that no scenario replays.
    pub fn unreplayed(&self) -> Vec<String> {
        let all: Vec<Job> = self
            .scenarios
            .iter()
            .flat_map(|s| Job::all_of(s, false))
            .collect();
        self.threads
            .runs()
            .iter()
            .filter(|r| {
                !all.iter()
                    .any(|j| j.plan.replays.as_deref() == Some(r.id.as_str()))
            })
            .map(|r| r.id.clone())
            .collect()
    }

    /// Resolve the command line's ids into jobs (`all`: every thread run, in data order).
    pub fn resolve(&self, ids: &[String], trace: bool) -> Result<Vec<Job>> {
        let wanted: Vec<String> = if ids.is_empty() {
            HEADLINE.iter().map(|s| s.to_string()).collect()
        } else if ids.iter().any(|i| i == "all") {
            self.threads.runs().iter().map(|r| r.id.clone()).collect()
        } else {
            ids.to_vec()
        };
        let mut jobs = Vec::new();
        for id in &wanted {
            match self.jobs_for(id, trace) {
                Some(mut j) => jobs.append(&mut j),
                None => bail!(
                    "unknown run id or scenario `{id}`; `hare-lab list` shows the {} thread runs and {} scenarios",
                    self.threads.runs().len(),
                    self.scenarios.len()
                ),
            }
        }
        Ok(jobs)
    }
}

fn write_json_lines(records: &[ReplayRecord], mut w: impl Write) -> Result<()> {
    for r in records {
        serde_json::to_writer(&mut w, r)?;
        w.write_all(b"\n")?;
    }
    w.flush()?;
    Ok(())
}

/// `hare-lab replay`: run, print side by side and the summary table to `out`, write files.
pub fn replay(opts: &ReplayOptions, out: &mut dyn Write) -> Result<Vec<ReplayRecord>> {
    let catalog = Catalog::load(&opts.scenarios)?;
    let mut jobs = catalog.resolve(&opts.ids, true)?;
    for j in &mut jobs {
        j.duration_cap = opts.duration_cap;
    }
    std::fs::create_dir_all(&opts.out_dir)
        .with_context(|| format!("creating {}", opts.out_dir.display()))?;
    writeln!(
        out,
        "hare-lab replay: {} run(s), {} at a time, output in {}",
        jobs.len(),
        opts.jobs,
        opts.out_dir.display()
    )?;
    let bars = Bars::new(opts.progress);
    let mut records = Vec::new();
    let mut sections = Vec::new();
    let mut failures = Vec::new();
    run_jobs_streaming(jobs, opts.jobs, &bars, &mut |r| {
        match r {
            Ok(res) => {
                let head = heading(&res);
                let mut text = side_by_side_text(&res, &catalog.threads);
                if let Some(s) = &res.output.run.summary {
                    text.push_str(&format!("  hare: {}\n", nuttcp::summary_line(s)));
                }
                writeln!(out, "\n{head}")?;
                write!(out, "{text}")?;
                out.flush()?;
                let files = write_outputs(&opts.out_dir, &res, &catalog.threads, opts.plots)?;
                sections.push(RunSection::new(head, text, &files));
                records.push(record_of(&res, &catalog.threads));
            }
            Err(e) => {
                writeln!(out, "\nFAILED: {e:#}")?;
                failures.push(format!("{e:#}"));
            }
        }
        Ok(())
    })?;
    let table = summary_table::format(&records);
    writeln!(out, "\n{table}")?;
    std::fs::write(opts.out_dir.join("summary.txt"), &table)
        .with_context(|| format!("writing {}", opts.out_dir.join("summary.txt").display()))?;
    write_index(&opts.out_dir, "hare-lab replay", &records, &sections)?;
    let jsonl = opts.out_dir.join("replay.jsonl");
    write_json_lines(
        &records,
        std::fs::File::create(&jsonl).with_context(|| format!("creating {}", jsonl.display()))?,
    )?;
    match opts.json.as_deref() {
        Some("-") => write_json_lines(&records, std::io::stdout().lock())?,
        Some(path) => write_json_lines(
            &records,
            std::fs::File::create(path).with_context(|| format!("creating {path}"))?,
        )?,
        None => {}
    }
    if !failures.is_empty() {
        bail!(
            "{} of {} run(s) failed: {}",
            failures.len(),
            failures.len() + records.len(),
            failures.join("; ")
        );
    }
    Ok(records)
}

/// Options of `hare-lab sim`.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Output directory for reports (none: no files).
    pub out_dir: Option<PathBuf>,
    /// JSON lines of the records to stdout instead of text.
    pub json: bool,
    /// Simulations in parallel.
    pub jobs: usize,
    /// Progress bars.
    pub progress: bool,
    /// Per-flow qlog files into `out_dir` (flows scenarios).
    pub qlog: bool,
}

/// `hare-lab sim`: every controller x repetition of one scenario; nuttcp lines and the
/// summary table (or JSON lines).
pub fn sim(opts: &SimOptions, out: &mut dyn Write) -> Result<Vec<ReplayRecord>> {
    let threads = ThreadData::embedded()?;
    let scenario = Scenario::load(&opts.scenario, &threads)?;
    if !scenario.flows.is_empty() {
        let flows_opts = crate::flows::FlowsOptions {
            out_dir: opts.out_dir.as_deref(),
            json: opts.json,
            qlog: opts.qlog,
        };
        crate::flows::sim_flows(&scenario, &flows_opts, out)?;
        return Ok(Vec::new());
    }
    let jobs = Job::all_of(&scenario, opts.out_dir.is_some());
    let bars = Bars::new(opts.progress);
    let mut records = Vec::new();
    let mut sections = Vec::new();
    let mut failures = Vec::new();
    run_jobs_streaming(jobs, opts.jobs, &bars, &mut |r| {
        match r {
            Ok(res) => {
                let head = heading(&res);
                let mut text = String::new();
                for iv in &res.output.run.intervals {
                    text.push_str(&nuttcp::interval_line(iv));
                    text.push('\n');
                }
                if let Some(s) = &res.output.run.summary {
                    text.push_str(&format!("\n{}\n", nuttcp::summary_line(s)));
                }
                if !opts.json {
                    writeln!(out, "{head}\n{text}")?;
                    out.flush()?;
                }
                if let Some(dir) = &opts.out_dir {
                    let files = write_outputs(dir, &res, &threads, true)?;
                    sections.push(RunSection::new(head, text, &files));
                }
                records.push(record_of(&res, &threads));
            }
            Err(e) => failures.push(format!("{e:#}")),
        }
        Ok(())
    })?;
    if let Some(dir) = &opts.out_dir {
        write_index(
            dir,
            &format!("hare-lab sim {}", scenario.file.name),
            &records,
            &sections,
        )?;
    }
    if opts.json {
        write_json_lines(&records, &mut *out)?;
    } else {
        writeln!(out, "{}", summary_table::format(&records))?;
    }
    if !failures.is_empty() {
        bail!("{} run(s) failed: {}", failures.len(), failures.join("; "));
    }
    Ok(records)
}
