//! `hare-lab compete FILE`: a `[[flows]]` scenario through the real-time namespace emulator,
//! every flow a real hare-send / hare-recv pair (or kernel TCP for `tcp:ALG`), with the same
//! per-flow lines and summary as the simulator plus the emulator's verdict.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use hare_emu::scenario::compete::{run_compete, CompeteFlow, CompeteOutcome, CompeteSpec};
use hare_emu::scenario::transfer::find_bins;
use hare_emu::NamespaceConfig;

use crate::scenario::flows::{FlowController, FlowWorkload, ResolvedFlow};
use crate::scenario::{Scenario, SocketBuffer};
use crate::thread_data::ThreadData;

use super::summary::{interval_lines, summarize, text, FlowRun, FlowsSummary};

/// What `hare-lab compete` was asked.
pub struct CompeteOptions {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Where reports and logs go.
    pub out_dir: PathBuf,
    /// One JSON summary instead of text.
    pub json: bool,
    /// Directory with hare-send and hare-recv (default: found beside this program).
    pub bin_dir: Option<PathBuf>,
}

/// Runs the scenario's flows (its first repetition) through the emulator and prints them.
pub fn compete(opts: &CompeteOptions, out: &mut dyn Write) -> Result<FlowsSummary> {
    let threads = ThreadData::embedded()?;
    let scenario = Scenario::load(&opts.scenario, &threads)?;
    if scenario.flows.is_empty() {
        bail!("{}: no [[flows]] to run", scenario.source);
    }
    if let Some(f) = scenario.flows.iter().find(|f| f.extra_delay.0 != 0) {
        bail!(
            "{}: flow {} has its own RTT ({}): the emulator has one path delay for all \
             flows; per-flow RTTs run in virtual time only (`hare-lab sim`)",
            scenario.source,
            f.tag(),
            f.rtt
        );
    }
    if let Some(why) = hare_emu::netns::unavailable_reason() {
        bail!("compete needs namespace mode: {why}");
    }
    hare_emu::signals::install()?;
    let seed = scenario.file.seed;
    let ns = NamespaceConfig::new(
        &format!("cmp{}", std::process::id() % 100_000),
        scenario.path_for_seed(seed),
    );
    let run_s = scenario
        .file
        .workload
        .duration
        .map_or(0.0, |d| d.0 as f64 / 1e9);
    let spec = CompeteSpec {
        flows: scenario
            .flows
            .iter()
            .map(|f| compete_flow(&scenario, f))
            .collect(),
        window: match scenario.file.windows.socket_buffer {
            Some(SocketBuffer::Size(b)) => Some(b.0.to_string()),
            _ => None,
        },
        timeout_s: run_s + 60.0,
        bin_dir: find_bins(opts.bin_dir.as_deref())?,
        work_dir: opts.out_dir.clone(),
    };
    let o = run_compete(&ns, &spec).context("running the flows through the emulator")?;
    let sum = summary_of(&scenario, seed, &o);
    let path = opts
        .out_dir
        .join(format!("{}-summary.json", scenario.file.name));
    std::fs::write(&path, serde_json::to_string_pretty(&sum)?)
        .with_context(|| format!("writing {}", path.display()))?;
    let runs = flow_runs(&scenario.flows, &o);
    write_page(&scenario, opts, &runs, &sum)?;
    if opts.json {
        writeln!(out, "{}", serde_json::to_string(&sum)?)?;
    } else {
        for line in interval_lines(&runs) {
            writeln!(out, "{line}")?;
        }
        writeln!(out, "\n{}", text(&sum))?;
        writeln!(out, "{}", o.emulator.line())?;
    }
    Ok(sum)
}

/// The three plots (the queue's not sampled by the emulator: the page says so) and
/// `index.html` into the output directory.
fn write_page(
    scenario: &Scenario,
    opts: &CompeteOptions,
    runs: &[FlowRun<'_>],
    sum: &FlowsSummary,
) -> Result<()> {
    let (files, notes) = super::plots::write_flow_plots(
        &opts.out_dir.join(&scenario.file.name),
        &format!("{} (emulator)", scenario.file.name),
        runs,
        scenario.path.rtt().0 as f64 / 1e6,
        scenario.payload_capacity_mbps(),
        None,
    )?;
    let rep = super::page::RepSection {
        heading: format!("{} through the emulator", scenario.file.name),
        summary: sum,
        files,
        notes,
    };
    let title = format!("hare-lab compete {}", scenario.file.name);
    super::page::write_flows_index(&opts.out_dir, &title, &[rep])?;
    Ok(())
}

/// Flow `f` as the emulator runs it.
fn compete_flow(scenario: &Scenario, f: &ResolvedFlow) -> CompeteFlow {
    let (tcp, cc) = match &f.controller {
        FlowController::KernelTcp(alg) => (true, alg.clone()),
        FlowController::Hare(spec) => (false, spec.to_string()),
    };
    let (seconds, bytes) = match f.workload {
        FlowWorkload::Bytes(b) => (None, Some(b)),
        FlowWorkload::Duration(d) => (Some(d.0 as f64 / 1e9), None),
    };
    CompeteFlow {
        name: format!("{}-{}", scenario.file.name, f.tag()),
        tcp,
        cc,
        start_s: f.start.0 as f64 / 1e9,
        seconds,
        bytes,
    }
}

/// What the summary reads of each flow's sender report.
fn flow_runs<'a>(flows: &'a [ResolvedFlow], o: &'a CompeteOutcome) -> Vec<FlowRun<'a>> {
    flows
        .iter()
        .zip(&o.flows)
        .map(|(flow, r)| {
            let summary = r.run.as_ref().and_then(|r| r.summary.as_ref());
            FlowRun {
                flow,
                origin_s: r.offset_s,
                intervals: r.run.as_ref().map_or(&[], |r| &r.intervals),
                fine: None,
                bytes: summary.map_or(0, |s| s.bytes),
                seconds: summary.map_or(0.0, |s| s.seconds),
                retransmits: summary.map_or(0, |s| s.lost_packets),
                exit: summary.and_then(|s| s.slow_start_exit.clone()),
                error: match (r.sender_ok, &r.run) {
                    (Some(true), Some(_)) => None,
                    (_, None) => Some("hare-send wrote no report".into()),
                    _ => Some("hare-send did not exit successfully".into()),
                },
            }
        })
        .collect()
}

/// The summary with the emulator's verdict.
fn summary_of(scenario: &Scenario, seed: u64, o: &CompeteOutcome) -> FlowsSummary {
    let runs = flow_runs(&scenario.flows, o);
    let mut sum = summarize(&scenario.file.name, "emulator", 0, seed, &runs);
    sum.valid = Some(o.valid());
    sum.invalid_reasons = o.emulator.invalid_reasons.clone();
    for f in sum
        .flows
        .iter()
        .filter_map(|f| f.error.as_ref().map(|e| (f, e)))
    {
        sum.invalid_reasons.push(format!("{}: {}", f.0.flow, f.1));
    }
    sum
}
