//! Competing flows in virtual time: `hare-lab sim FILE` on a scenario of `[[flows]]`.
//!
//! Each repetition runs every flow of the file through one shared bottleneck
//! ([`hare_sim::simulate_flows`]). Flow `i` of a run seeded `s` takes the seed
//! [`hare_sim::flow_seed`]`(s, i)` = `s + i * 2^32` for its connection and its own reverse
//! link; the shared forward link draws from the run's seed as a one-flow run's does.

pub mod bench;
pub mod compete;
pub mod page;
pub mod plots;
pub mod summary;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use hare_link::LinkConfig;
use hare_sim::{
    flow_seed, simulate_flows_sampled, Flow, FlowsOutput, SimConfig, SimOutput, Workload,
};

use crate::runner::Job;
use crate::scenario::flows::{FlowController, FlowWorkload, ResolvedFlow};
use crate::scenario::{RunPlan, Scenario};
use summary::{interval_lines, summarize, text, FlowRun, FlowsSummary};

/// How often the plots sample the bottleneck queue, in virtual time.
const QUEUE_EVERY: Duration = Duration::from_millis(10);

/// Longest a flow with a byte count may take beyond its start.
const BYTES_TIME_LIMIT: Duration = Duration::from_secs(600);

/// Where and what `hare-lab sim` writes for a flows scenario.
pub struct FlowsOptions<'a> {
    /// Directory for per-flow reports, qlog, the summaries, the plots and `index.html`
    /// (none: no files).
    pub out_dir: Option<&'a Path>,
    /// One JSON summary per run instead of text.
    pub json: bool,
    /// Per-flow qlog files of both endpoints into `out_dir`.
    pub qlog: bool,
}

/// Runs every repetition of the flows scenario `scenario`, writing lines and summaries to
/// `out`; returns the summaries.
pub fn sim_flows(
    scenario: &Scenario,
    opts: &FlowsOptions<'_>,
    out: &mut dyn Write,
) -> Result<Vec<FlowsSummary>> {
    let mut summaries = Vec::new();
    let mut drawn = Vec::new();
    for rep in 0..scenario.file.repetitions {
        let (seed, flows, forward, run) = simulate_rep(scenario, rep, opts)?;
        let outputs = outputs_of(&run);
        let runs = runs_of(scenario, &outputs);
        let sum = summarize(&scenario.file.name, "sim", rep, seed, &runs);
        if let Some(dir) = opts.out_dir {
            write_files(dir, &flows, &outputs, &sum)?;
            let queue = plots::QueueData {
                samples: &run.queue,
                packets: forward.queue_packets.is_some(),
                limit: forward
                    .queue_packets
                    .map(|p| p as f64)
                    .or(forward.queue_bytes.map(|b| b.0 as f64)),
            };
            drawn.push(plots::write_flow_plots(
                &dir.join(format!("{}-r{rep}", scenario.file.name)),
                &format!("{} (seed {seed})", scenario.file.name),
                &runs,
                scenario.path.rtt().0 as f64 / 1e6,
                scenario.payload_capacity_mbps(),
                Some(&queue),
            )?);
        }
        if opts.json {
            writeln!(out, "{}", serde_json::to_string(&sum)?)?;
        } else {
            writeln!(out, "{} repetition {rep} (seed {seed})", scenario.file.name)?;
            for line in interval_lines(&runs) {
                writeln!(out, "{line}")?;
            }
            writeln!(out, "\n{}", text(&sum))?;
        }
        summaries.push(sum);
    }
    if let Some(dir) = opts.out_dir {
        let reps: Vec<page::RepSection<'_>> = summaries
            .iter()
            .zip(drawn)
            .map(|(sum, (files, notes))| page::RepSection {
                heading: format!("repetition {} (seed {})", sum.repetition, sum.seed),
                summary: sum,
                files,
                notes,
            })
            .collect();
        let title = format!("hare-lab sim {}", scenario.file.name);
        let index = page::write_flows_index(dir, &title, &reps)?;
        if !opts.json {
            writeln!(out, "plots and page: {}", index.display())?;
        }
    }
    Ok(summaries)
}

/// Runs repetition `rep` of the flows scenario: its seed, flows, bottleneck and output
/// (the queue sampled when `opts` asks for files).
fn simulate_rep(
    scenario: &Scenario,
    rep: u32,
    opts: &FlowsOptions<'_>,
) -> Result<(u64, Vec<Flow>, LinkConfig, FlowsOutput)> {
    let seed = scenario.file.seed.wrapping_add(u64::from(rep));
    let flows = scenario
        .flows
        .iter()
        .map(|f| flow_config(scenario, f, rep, seed, opts))
        .collect::<Result<Vec<Flow>>>()?;
    let forward = scenario.path_for_seed(seed).forward;
    let sample = opts.out_dir.map(|_| QUEUE_EVERY);
    let run = simulate_flows_sampled(&forward, &flows, sample)
        .with_context(|| format!("{}: repetition {rep}", scenario.source))?;
    Ok((seed, flows, forward, run))
}

/// Each flow's output (its partial one when it failed) and error.
fn outputs_of(run: &FlowsOutput) -> Vec<(Option<&SimOutput>, Option<String>)> {
    run.flows
        .iter()
        .map(|r| match r {
            Ok(o) => (Some(o), None),
            Err(e) => (e.partial(), Some(e.to_string())),
        })
        .collect()
}

/// What the summary and the plots read of each flow.
fn runs_of<'a>(
    scenario: &'a Scenario,
    outputs: &'a [(Option<&'a SimOutput>, Option<String>)],
) -> Vec<FlowRun<'a>> {
    scenario
        .flows
        .iter()
        .zip(outputs)
        .map(|(f, (o, e))| flow_run(f, *o, e.clone()))
        .collect()
}

/// Runs repetition `rep` of the flows scenario with no files and no output; returns its
/// summary (a sweep's cell).
pub fn run_repetition(scenario: &Scenario, rep: u32) -> Result<FlowsSummary> {
    let opts = FlowsOptions {
        out_dir: None,
        json: false,
        qlog: false,
    };
    let (seed, _, _, run) = simulate_rep(scenario, rep, &opts)?;
    let outputs = outputs_of(&run);
    let runs = runs_of(scenario, &outputs);
    Ok(summarize(&scenario.file.name, "sim", rep, seed, &runs))
}

/// The simulator configuration of flow `f` in repetition `rep` of a run seeded `seed`.
fn flow_config(
    scenario: &Scenario,
    f: &ResolvedFlow,
    rep: u32,
    seed: u64,
    opts: &FlowsOptions<'_>,
) -> Result<Flow> {
    let FlowController::Hare(spec) = &f.controller else {
        bail!(
            "{}: flow {} ({}) is a kernel TCP flow: it runs only through the emulator, \
             `hare-lab compete {}`",
            scenario.source,
            f.tag(),
            f.controller_text,
            scenario.source
        );
    };
    let job = Job {
        id: run_id(scenario, rep, f),
        scenario: scenario.clone(),
        plan: RunPlan {
            controller: (**spec).clone(),
            controller_index: 0,
            repetition: rep,
            seed: flow_seed(seed, f.index),
            replays: None,
        },
        duration_cap: None,
        trace: false,
        quinn_paced: false,
    };
    let mut cfg: SimConfig = job.sim_config();
    cfg.workload = match f.workload {
        FlowWorkload::Bytes(b) => Workload::Bytes(b),
        FlowWorkload::Duration(d) => Workload::Duration(d.to_std()),
    };
    if let Workload::Bytes(_) = cfg.workload {
        cfg.limits.max_virtual_time = Some(BYTES_TIME_LIMIT);
    }
    if opts.qlog {
        cfg.qlog_dir = opts.out_dir.map(Path::to_path_buf);
    }
    Ok(Flow {
        cfg,
        start: f.start.to_std(),
        extra_delay: f.extra_delay.to_std(),
    })
}

/// `<scenario>-f<i>`, with `-r<rep>` when the scenario repeats.
fn run_id(scenario: &Scenario, rep: u32, f: &ResolvedFlow) -> String {
    if scenario.file.repetitions > 1 {
        format!("{}-r{rep}-{}", scenario.file.name, f.tag())
    } else {
        format!("{}-{}", scenario.file.name, f.tag())
    }
}

/// What the summary reads of one flow's output (none: the flow never started).
fn flow_run<'a>(
    flow: &'a ResolvedFlow,
    out: Option<&'a SimOutput>,
    error: Option<String>,
) -> FlowRun<'a> {
    let summary = out.and_then(|o| o.run.summary.as_ref());
    FlowRun {
        flow,
        origin_s: out.map_or(flow.start.0 as f64 / 1e9, |o| o.origin_s),
        intervals: out.map_or(&[], |o| &o.run.intervals),
        fine: out.and_then(|o| o.fine.as_ref()).map(|f| &f.intervals[..]),
        bytes: summary.map_or(0, |s| s.bytes),
        seconds: summary.map_or(0.0, |s| s.seconds),
        retransmits: summary.map_or(0, |s| s.lost_packets),
        exit: summary.and_then(|s| s.slow_start_exit.clone()),
        error,
    }
}

/// Each flow's JSON-lines report and the run's summary into `dir`.
fn write_files(
    dir: &Path,
    flows: &[Flow],
    outputs: &[(Option<&SimOutput>, Option<String>)],
    sum: &FlowsSummary,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (f, (o, _)) in flows.iter().zip(outputs) {
        let Some(o) = o else { continue };
        let path = dir.join(format!("{}.jsonl", f.cfg.run_id));
        let file =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        hare_report::jsonl::write_run(std::io::BufWriter::new(file), &o.run)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let path = dir.join(format!("{}-r{}-summary.json", sum.scenario, sum.repetition));
    std::fs::write(&path, serde_json::to_string_pretty(sum)?)
        .with_context(|| format!("writing {}", path.display()))
}
