//! Running a sweep (or one shard of it) and writing its JSON lines.

use super::flows_run::{run_flows_cells, FlowsCell, FlowsWork};
use super::grid::{KeyPart, Shard, Sweep};
use crate::replay_record::ReplayRecord;
use crate::report_out::record_of;
use crate::runner::{run_jobs_streaming, Bars, Job, JobResult};
use crate::thread_data::ThreadData;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// One line of a sweep's output: one run of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// Sweep name.
    pub sweep: String,
    /// Fingerprint of the sweep definition ([`Sweep::definition`]).
    pub definition: String,
    /// Cells in the whole sweep.
    pub cells: usize,
    /// This cell's index.
    pub cell: usize,
    /// This cell's axis values.
    pub key: Vec<KeyPart>,
    /// Run id within the sweep (`<sweep>-cNNNN`, plus controller/repetition when a cell has
    /// several runs).
    pub run: String,
    /// Bandwidth-delay product of the cell's path in full-sized packets.
    pub bdp_packets: f64,
    /// The rate the cell's flow-control windows allow over its base RTT, Mbit/s of payload,
    /// when it is below the link's payload rate: the cell is capped by its window (absent
    /// in rows written before this field existed).
    #[serde(default)]
    pub window_cap_mbps: Option<f64>,
    /// Slow-start exit cwnd divided by the BDP.
    pub exit_cwnd_over_bdp: Option<f64>,
    /// Packets lost up to the end of the 100 ms interval holding the slow-start exit (all
    /// the run's losses when slow start never ended).
    pub losses_in_slow_start: Option<u64>,
    /// The run's figures (the same object `hare-lab sim --json` prints).
    pub record: Option<ReplayRecord>,
    /// Why the run failed, when it did.
    pub error: Option<String>,
    /// A flows cell's sharing figures (absent in the rows of one-flow cells, which are
    /// written exactly as before flows cells existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<FlowsCell>,
}

/// Options of `hare-lab sweep FILE`.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// The sweep file.
    pub file: PathBuf,
    /// Output directory (default `out/sweep/<name>`).
    pub out_dir: Option<PathBuf>,
    /// The slice to run.
    pub shard: Shard,
    /// Simulations in parallel.
    pub jobs: usize,
    /// Progress bars.
    pub progress: bool,
}

/// The file a shard writes: `shard-I-of-N.jsonl`.
pub fn shard_file(dir: &Path, shard: Shard) -> PathBuf {
    dir.join(format!("shard-{}-of-{}.jsonl", shard.index, shard.count))
}

fn losses_in_slow_start(res: &JobResult, exit_t: Option<f64>) -> Option<u64> {
    let run = &res.output.run;
    let intervals = res
        .output
        .fine
        .as_ref()
        .map_or(&run.intervals, |f| &f.intervals);
    let Some(t) = exit_t else {
        return Some(intervals.iter().map(|i| i.lost_packets).sum());
    };
    Some(
        intervals
            .iter()
            .take_while(|i| i.start_s <= t)
            .map(|i| i.lost_packets)
            .sum(),
    )
}

/// The window cap of a scenario when it binds (below the link's payload rate).
fn binding_window_cap(s: &crate::scenario::Scenario) -> Option<f64> {
    s.window_cap_mbps()
        .filter(|&cap| cap < s.payload_capacity_mbps())
}

fn row_of(sweep: &Sweep, cell: usize, res: &JobResult, threads: &ThreadData) -> SweepRow {
    let rec = record_of(res, threads);
    let bdp = res.job.scenario.bdp_packets();
    SweepRow {
        sweep: sweep.name.clone(),
        definition: sweep.definition.clone(),
        cells: sweep.cells.len(),
        cell,
        key: sweep.cells[cell].key.clone(),
        run: res.job.id.clone(),
        bdp_packets: bdp,
        window_cap_mbps: binding_window_cap(&res.job.scenario),
        exit_cwnd_over_bdp: rec
            .exit_cwnd_segments
            .filter(|_| bdp > 0.0)
            .map(|c| f64::from(c) / bdp),
        losses_in_slow_start: losses_in_slow_start(res, rec.exit_t_s),
        record: Some(rec),
        error: None,
        flows: None,
    }
}

/// Runs the cells of `opts.shard` and writes `shard-I-of-N.jsonl` in the output directory,
/// a line per run as it finishes (in cell order); prints one line per run to `out`.
/// Returns the rows and the directory.
pub fn run_sweep(opts: &SweepOptions, out: &mut dyn Write) -> Result<(Vec<SweepRow>, PathBuf)> {
    let threads = ThreadData::embedded()?;
    let sweep = Sweep::load(&opts.file, &threads)?;
    let dir = opts
        .out_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("out/sweep").join(&sweep.name));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut jobs = Vec::new();
    let mut job_cell = Vec::new();
    let mut flows_work: Vec<FlowsWork> = Vec::new();
    for cell in sweep
        .shard_cells(opts.shard)
        .into_iter()
        .filter_map(|i| sweep.cells.get(i))
    {
        if !cell.scenario.flows.is_empty() {
            flows_work.extend((0..cell.scenario.file.repetitions).map(|r| (cell.index, r)));
            continue;
        }
        for job in Job::all_of(&cell.scenario, false) {
            job_cell.push(cell.index);
            jobs.push(job);
        }
    }
    writeln!(
        out,
        "hare-lab sweep {}: {} cells, shard {}/{}: {} cell(s), {} run(s), {} at a time, output in {}",
        sweep.name,
        sweep.cells.len(),
        opts.shard.index,
        opts.shard.count,
        job_cell
            .iter()
            .chain(flows_work.iter().map(|w| &w.0))
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        jobs.len() + flows_work.len(),
        opts.jobs,
        dir.display()
    )?;
    let path = shard_file(&dir, opts.shard);
    let file =
        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    let ids: Vec<String> = jobs.iter().map(|j| j.id.clone()).collect();
    let bars = Bars::new(opts.progress);
    let mut rows = Vec::new();
    let mut k = 0usize;
    run_jobs_streaming(jobs, opts.jobs, &bars, &mut |r| {
        let cell = job_cell[k];
        let row = match r {
            Ok(res) => row_of(&sweep, cell, &res, &threads),
            Err(e) => SweepRow {
                sweep: sweep.name.clone(),
                definition: sweep.definition.clone(),
                cells: sweep.cells.len(),
                cell,
                key: sweep.cells[cell].key.clone(),
                run: ids[k].clone(),
                bdp_packets: sweep.cells[cell].scenario.bdp_packets(),
                window_cap_mbps: binding_window_cap(&sweep.cells[cell].scenario),
                exit_cwnd_over_bdp: None,
                losses_in_slow_start: None,
                record: None,
                error: Some(format!("{e:#}")),
                flows: None,
            },
        };
        k += 1;
        emit(out, &mut w, &path, &row)?;
        rows.push(row);
        Ok(())
    })?;
    run_flows_cells(&sweep, &flows_work, opts.jobs, &mut |row| {
        emit(out, &mut w, &path, &row)?;
        rows.push(row);
        Ok(())
    })?;
    writeln!(out, "wrote {}", path.display())?;
    Ok((rows, dir))
}

/// Prints a row's progress line to `out` and writes it as one JSON line to `w` (`path`).
fn emit(out: &mut dyn Write, w: &mut impl Write, path: &Path, row: &SweepRow) -> Result<()> {
    let key: Vec<String> = row
        .key
        .iter()
        .map(|p| format!("{}={}", p.axis, p.value))
        .collect();
    match (&row.record, &row.flows, &row.error) {
        (None, None, e) => writeln!(
            out,
            "cell {:>4} {}: FAILED: {}",
            row.cell,
            key.join(" "),
            e.as_deref().unwrap_or("unknown error")
        )?,
        _ => writeln!(
            out,
            "cell {:>4} {}: {}",
            row.cell,
            key.join(" "),
            super::merge::progress_figures(row)
        )?,
    }
    serde_json::to_writer(&mut *w, row)?;
    w.write_all(b"\n")?;
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
