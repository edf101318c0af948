//! What a finished simulation leaves behind: its files, plots, text and JSON record.

use crate::metrics;
use crate::plots::{self, CwndSeries, ThroughputSeries};
use crate::replay_record::{slow_start_exit, ReplayRecord};
use crate::runner::{decimate, write_run_files, JobResult};
use crate::side_by_side;
use crate::thread_data::ThreadData;
use anyhow::Result;
use hare_report::EventKind;
use std::path::{Path, PathBuf};

/// The figures of a finished job beside its thread run, if it replays one.
pub fn record_of(result: &JobResult, threads: &ThreadData) -> ReplayRecord {
    let job = &result.job;
    let thread = job
        .plan
        .replays
        .as_deref()
        .and_then(|id| threads.get(id))
        .map(|t| (threads, t));
    let mut rec = ReplayRecord::build(
        &job.id,
        &job.scenario.file.name,
        job.plan.repetition,
        &result.output.run,
        job.scenario.payload_capacity_mbps(),
        thread,
    );
    rec.controller = job.plan.controller.to_string();
    let cap_s = job.duration_cap.map(|d| d.as_secs_f64());
    rec.time_to_90pct_100ms_s = result.output.fine.as_ref().and_then(|f| {
        let rows = metrics::rows_of(&f.intervals);
        let rows = cap_s.map_or_else(|| rows.clone(), |h| metrics::rows_within(&rows, h));
        metrics::time_to_90pct(&rows, rec.capacity_mbps)
    });
    if let Some(h) = cap_s {
        rec.compare_over(h, &result.output.run, thread.map(|(_, t)| t));
    }
    rec
}

/// The side-by-side text of a finished job.
pub fn side_by_side_text(result: &JobResult, threads: &ThreadData) -> String {
    let job = &result.job;
    let thread = job.plan.replays.as_deref().and_then(|id| threads.get(id));
    let thread_label = match thread {
        Some(t) => format!("thread: {} ({}, {})", t.command, t.kernel, t.cc),
        None => "thread: (no thread run)".to_string(),
    };
    let hare_label = format!("hare: {} (virtual time)", job.plan.controller);
    // Under --max-seconds the thread's rows stop where hare's run was cut, as on the plots.
    let cap_rows = job.duration_cap.map(|d| d.as_secs_f64().ceil() as usize);
    let cut = thread.zip(cap_rows).and_then(|(t, rows)| {
        (t.intervals.len() > rows).then(|| {
            let mut t = t.clone();
            t.intervals.truncate(rows);
            t
        })
    });
    let mut text = side_by_side::format(
        cut.as_ref().or(thread),
        &thread_label,
        &result.output.run.intervals,
        &hare_label,
    );
    if let (Some(_), Some(rows)) = (&cut, cap_rows) {
        text.push_str(&format!(
            "(the thread's rows after {rows} s are left out: --max-seconds cut hare's run there)\n"
        ));
    }
    text
}

/// Write the run's reports, trace and (when `with_plots`) its two plots into `dir`.
pub fn write_outputs(
    dir: &Path,
    result: &JobResult,
    threads: &ThreadData,
    with_plots: bool,
) -> Result<Vec<PathBuf>> {
    let mut files = write_run_files(dir, result)?;
    if !with_plots {
        return Ok(files);
    }
    let job = &result.job;
    let run = &result.output.run;
    let thread = job.plan.replays.as_deref().and_then(|id| threads.get(id));
    let (hare, thread_points, notes) = plots::over_the_same_window(
        &metrics::rows_of(&run.intervals),
        &thread.map(|t| t.rows()).unwrap_or_default(),
        job.duration_cap.map(|d| d.as_secs_f64()),
    );
    let tp = ThroughputSeries {
        title: format!("{}: {} (hare) vs thread", job.id, job.plan.controller),
        hare,
        thread: thread_points,
        hare_capacity: job.scenario.payload_capacity_mbps(),
        thread_capacity: thread.map(|t| threads.capacity_mbps(t)),
        notes,
    };
    files.extend(plots::throughput(
        &dir.join(format!("{}.throughput", job.id)),
        &tp,
    )?);
    let mss = u64::from(job.scenario.file.mtu).max(1);
    let points = decimate(&result.output.trace, 0.01);
    let mut cw = CwndSeries {
        title: format!("{}: {} cwnd", job.id, job.plan.controller),
        cwnd: points
            .iter()
            .map(|(p, max)| (p.t_s, f64::from(*max)))
            .collect(),
        ssthresh: points
            .iter()
            .filter_map(|(p, _)| p.ssthresh_bytes.map(|s| (p.t_s, s as f64 / mss as f64)))
            .collect(),
        bdp_packets: job.scenario.bdp_packets(),
        exits: Vec::new(),
        reductions: Vec::new(),
    };
    if cw.cwnd.is_empty() {
        // No trace recorded: fall back to the interval records' cwnd.
        cw.cwnd = run
            .intervals
            .iter()
            .filter_map(|i| i.cwnd_segments.map(|c| (i.end_s, f64::from(c))))
            .collect();
    }
    for ev in &run.events {
        match &ev.kind {
            EventKind::Cc {
                event: hare_report::CcEvent::SlowStartExit { cwnd, reason, .. },
            } => cw
                .exits
                .push((ev.t_s, f64::from(*cwnd), reason.as_str().to_string())),
            EventKind::SlowStartExitObserved {
                cwnd_segments,
                reason,
            } => cw.exits.push((
                ev.t_s,
                f64::from(*cwnd_segments),
                reason.as_str().to_string(),
            )),
            EventKind::Cc {
                event: hare_report::CcEvent::WindowReduced { from_cwnd, .. },
            } => cw.reductions.push((ev.t_s, f64::from(*from_cwnd))),
            _ => {}
        }
    }
    if cw.exits.is_empty() {
        if let Some((t, c, r)) = slow_start_exit(run) {
            cw.exits.push((t, f64::from(c), r));
        }
    }
    files.extend(plots::cwnd(&dir.join(format!("{}.cwnd", job.id)), &cw)?);
    Ok(files)
}

/// The one-line heading printed above a run's rows.
pub fn heading(result: &JobResult) -> String {
    let job = &result.job;
    let o = &result.output;
    format!(
        "== {} [{}] {} | {} | {:.1} s simulated in {:.1} s wall ({:.2}x) | capacity {:.0} Mbit/s",
        job.id,
        job.scenario.file.name,
        job.plan.controller,
        job.scenario.file.description,
        o.sim_seconds,
        o.wall_seconds,
        o.speed(),
        metrics::payload_capacity_mbps(
            job.scenario.path.forward.rate.0,
            u64::from(job.scenario.file.mtu),
            job.scenario.ip_udp_header_bytes()
        )
    )
}
