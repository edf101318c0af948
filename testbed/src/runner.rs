//! Running scenarios in hare-sim: building each run's `SimConfig`, running jobs on a small
//! pool of threads with a progress bar each, and writing each run's files.

use crate::scenario::{ReadSpec, ReceiverSpec, RunPlan, Scenario};
use anyhow::{Context, Result};
use hare_sim::{AckSettings, ReadMode, SimConfig, SimOutput, TracePoint, Windows, Workload};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Default stop for a `bytes` workload that has not finished.
const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(120);

/// One simulation to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// Output name and report run id (a thread run id, or `<scenario>-<controller>-<rep>`).
    pub id: String,
    /// The scenario.
    pub scenario: Scenario,
    /// Which run of it.
    pub plan: RunPlan,
    /// Shorten a duration workload to this many seconds (the replay's quick mode).
    pub duration_cap: Option<Duration>,
    /// Record the per-ACK trace.
    pub trace: bool,
    /// The named extra row of an unpaced replay: the same run with quinn's pacer ("what a
    /// QUIC sender would see"); its id ends in [`QUINN_PACED_SUFFIX`].
    pub quinn_paced: bool,
}

/// Id suffix of the quinn-paced extra row of an unpaced replay.
pub const QUINN_PACED_SUFFIX: &str = "-quinn-paced";

/// A finished job.
#[derive(Debug)]
pub struct JobResult {
    /// The job.
    pub job: Job,
    /// What the simulator produced.
    pub output: SimOutput,
}

/// A file-name-safe id for runs that replay no thread run.
pub fn plain_id(scenario: &Scenario, plan: &RunPlan) -> String {
    let ctl: String = plan
        .controller
        .to_string()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if scenario.file.repetitions > 1 {
        format!("{}-{}-r{}", scenario.file.name, ctl, plan.repetition)
    } else if scenario.controllers.len() > 1 {
        format!("{}-{}", scenario.file.name, ctl)
    } else {
        scenario.file.name.clone()
    }
}

impl Job {
    /// Every run of a scenario as jobs; replays are named by their thread run id.
    pub fn all_of(scenario: &Scenario, trace: bool) -> Vec<Job> {
        let extra_row = !scenario.file.sender.paced
            && scenario
                .file
                .replay
                .as_ref()
                .is_some_and(|r| r.quinn_paced_row);
        let mut jobs = Vec::new();
        for plan in scenario.runs() {
            let job = Job {
                id: plan
                    .replays
                    .clone()
                    .unwrap_or_else(|| plain_id(scenario, &plan)),
                scenario: scenario.clone(),
                plan,
                duration_cap: None,
                trace,
                quinn_paced: false,
            };
            if extra_row {
                let mut paced = job.clone();
                paced.id.push_str(QUINN_PACED_SUFFIX);
                paced.quinn_paced = true;
                jobs.push(job);
                jobs.push(paced);
            } else {
                jobs.push(job);
            }
        }
        jobs
    }

    /// The simulator configuration of this job.
    pub fn sim_config(&self) -> SimConfig {
        let s = &self.scenario;
        let f = &s.file;
        let path = s.path_for_seed(self.plan.seed);
        let mut cfg = SimConfig::new(
            self.id.clone(),
            path.forward.clone(),
            path.reverse.clone(),
            self.plan.controller.to_string(),
        )
        .with_seed(self.plan.seed);
        // with_seed derives link seeds from the run seed; keep the scenario's own offsets.
        cfg.forward = path.forward;
        cfg.reverse = path.reverse;
        cfg.scenario = Some(f.name.clone());
        cfg.mtu = f.mtu;
        cfg.ip_overhead = s.ip_udp_header_bytes() as u32;
        let d = Windows::quinn_defaults();
        cfg.windows = Windows {
            stream_receive: s.windows.stream.unwrap_or(d.stream_receive),
            receive: s.windows.connection.unwrap_or(d.receive),
            send: s.windows.send.unwrap_or(d.send),
            autotune: s.windows.autotune,
        };
        cfg.workload = match (f.workload.bytes, f.workload.duration) {
            (Some(b), _) => Workload::Bytes(b.0),
            (None, Some(d)) => {
                let d = d.to_std();
                Workload::Duration(self.duration_cap.map_or(d, |cap| d.min(cap)))
            }
            // Validation guarantees one of the two.
            (None, None) => Workload::Duration(Duration::from_secs(10)),
        };
        if let Workload::Bytes(_) = cfg.workload {
            let limit = f
                .workload
                .time_limit
                .map_or(DEFAULT_TIME_LIMIT, |t| t.to_std());
            cfg.limits.max_virtual_time = Some(self.duration_cap.map_or(limit, |c| c.min(limit)));
        }
        cfg.read_mode = match f.workload.read {
            ReadSpec::Unordered => ReadMode::Unordered,
            ReadSpec::Ordered => ReadMode::Ordered,
        };
        cfg.ack = AckSettings {
            ack_eliciting_threshold: f.ack.ack_eliciting_threshold,
            max_ack_delay: f.ack.max_ack_delay.map(|t| t.to_std()),
            reordering_threshold: f.ack.reordering_threshold,
            packet_threshold: f.ack.packet_threshold,
            time_threshold: f.ack.time_threshold,
        };
        cfg.receiver_acks = match f.ack.receiver {
            ReceiverSpec::Quinn => hare_sim::ReceiverAcks::Quinn,
            ReceiverSpec::Linux26 => hare_sim::ReceiverAcks::Linux26,
        };
        cfg.paced = f.sender.paced || self.quinn_paced;
        cfg.sender_line_rate = f.sender.line_rate.map(|r| r.0);
        cfg.trace = self.trace;
        cfg.crypto = f.crypto;
        cfg
    }
}

/// Progress bars, one per job, drawn only on a terminal.
pub struct Bars {
    multi: MultiProgress,
}

impl Bars {
    /// Bars on stderr when `visible`, else hidden.
    pub fn new(visible: bool) -> Self {
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Bars {
            multi: MultiProgress::with_draw_target(target),
        }
    }

    /// A new bar named `name`, counting to 1000 (per mille of the run).
    pub fn single(&self, name: &str) -> ProgressBar {
        let style = ProgressStyle::with_template("{prefix:<34} [{bar:30}] {percent:>3}% {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let pb = self.multi.add(ProgressBar::new(1000));
        pb.set_style(style);
        pb.set_prefix(name.chars().take(34).collect::<String>());
        pb
    }
}

/// Run jobs on `threads` worker threads (at least 1) and hand each result to `sink` on the
/// calling thread, in job order, as soon as it and every job before it are done (so output
/// streams and a finished run's trace is dropped before the next is simulated). A failed
/// simulation is an error for that job only.
pub fn run_jobs_streaming(
    jobs: Vec<Job>,
    threads: usize,
    bars: &Bars,
    sink: &mut dyn FnMut(Result<JobResult>) -> Result<()>,
) -> Result<()> {
    let n = jobs.len();
    let next = AtomicUsize::new(0);
    let pbs: Vec<ProgressBar> = jobs.iter().map(|j| bars.single(&j.id)).collect();
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<JobResult>)>();
    let jobs = &jobs;
    let pbs = &pbs;
    let next = &next;
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..threads.clamp(1, n.max(1)) {
            let tx = tx.clone();
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= n {
                    break;
                }
                let job = &jobs[i];
                let pb = &pbs[i];
                let cfg = job.sim_config();
                let mut on_progress = |p: hare_sim::Progress| {
                    pb.set_position((p.fraction.clamp(0.0, 1.0) * 1000.0) as u64);
                    pb.set_message(format!(
                        "t={:5.1}s {:7.0} Mbit/s cwnd {:6} lost {}",
                        p.sim_s, p.interval_mbps, p.cwnd_segments, p.lost_packets
                    ));
                };
                let result = capped(hare_sim::simulate(&cfg, &mut on_progress), job)
                    .with_context(|| format!("simulating {} ({})", job.id, job.plan.controller))
                    .map(|output| JobResult {
                        job: job.clone(),
                        output,
                    });
                pb.finish();
                if tx.send((i, result)).is_err() {
                    // The receiver gave up (a sink error): stop taking jobs.
                    break;
                }
            });
        }
        drop(tx);
        let mut pending: std::collections::BTreeMap<usize, Result<JobResult>> = Default::default();
        let mut emitted = 0;
        for (i, r) in rx.iter() {
            pending.insert(i, r);
            while let Some(r) = pending.remove(&emitted) {
                emitted += 1;
                if let Err(e) = sink(r) {
                    // Let the workers finish their current job and stop.
                    next.store(n, Ordering::SeqCst);
                    return Err(e);
                }
            }
        }
        if emitted < n {
            anyhow::bail!(
                "{} simulation(s) did not finish (a worker thread panicked)",
                n - emitted
            );
        }
        Ok(())
    })
}

/// Run jobs on `threads` worker threads and collect the results in job order.
pub fn run_jobs(jobs: Vec<Job>, threads: usize, bars: &Bars) -> Vec<Result<JobResult>> {
    let mut out = Vec::new();
    let n = jobs.len();
    let done = run_jobs_streaming(jobs, threads, bars, &mut |r| {
        out.push(r);
        Ok(())
    });
    if let Err(e) = done {
        while out.len() < n {
            out.push(Err(anyhow::anyhow!("{e:#}")));
        }
    }
    out
}

/// Keep the last trace point of every `bucket_s` of virtual time, with the largest cwnd seen
/// in the bucket, so a 30 s run at 10 Gbit/s (about 2 million ACKs) plots and saves in
/// tens of thousands of points.
pub fn decimate(trace: &[TracePoint], bucket_s: f64) -> Vec<(TracePoint, u32)> {
    let mut out: Vec<(TracePoint, u32)> = Vec::new();
    let mut current: Option<(i64, TracePoint, u32)> = None;
    for p in trace {
        let b = (p.t_s / bucket_s).floor() as i64;
        current = match current {
            Some((cb, _, max)) if cb == b => Some((b, *p, max.max(p.cwnd_segments))),
            Some((_, last, max)) => {
                out.push((last, max));
                Some((b, *p, p.cwnd_segments))
            }
            None => Some((b, *p, p.cwnd_segments)),
        };
    }
    if let Some((_, last, max)) = current {
        out.push((last, max));
    }
    out
}

/// Write the decimated trace as CSV.
pub fn write_trace_csv(path: &Path, points: &[(TracePoint, u32)]) -> Result<()> {
    let f = std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    writeln!(w, "t_s,cwnd_segments,cwnd_max_segments,cwnd_bytes,ssthresh_bytes,in_flight_bytes,rtt_sample_us,queue_bytes")?;
    for (p, max) in points {
        writeln!(
            w,
            "{:.6},{},{},{},{},{},{},{}",
            p.t_s,
            p.cwnd_segments,
            max,
            p.cwnd_bytes,
            p.ssthresh_bytes.map_or(String::new(), |v| v.to_string()),
            p.in_flight_bytes,
            p.rtt_sample_us.map_or(String::new(), |v| v.to_string()),
            p.queue_bytes
        )?;
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Write a run's JSON-lines reports (1 s and, when present, 100 ms) and its trace into `dir`;
/// returns the files written.
pub fn write_run_files(dir: &Path, result: &JobResult) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    let id = &result.job.id;
    let main = dir.join(format!("{id}.jsonl"));
    let f = std::fs::File::create(&main).with_context(|| format!("creating {}", main.display()))?;
    hare_report::jsonl::write_run(std::io::BufWriter::new(f), &result.output.run)
        .with_context(|| format!("writing {}", main.display()))?;
    written.push(main);
    if let Some(fine) = &result.output.fine {
        let p = dir.join(format!("{id}.100ms.jsonl"));
        let f = std::fs::File::create(&p).with_context(|| format!("creating {}", p.display()))?;
        hare_report::jsonl::write_run(std::io::BufWriter::new(f), fine)
            .with_context(|| format!("writing {}", p.display()))?;
        written.push(p);
    }
    if !result.output.trace.is_empty() {
        let p = dir.join(format!("{id}.trace.csv"));
        write_trace_csv(&p, &decimate(&result.output.trace, 0.001))?;
        written.push(p);
    }
    Ok(written)
}

/// A byte-count run that `--max-seconds` stopped at its cap ended as asked: its report up to
/// the cap is the run's (the time-window figures of both sides are cut to the same seconds),
/// not a stalled simulation.
fn capped(
    result: std::result::Result<hare_sim::SimOutput, hare_sim::SimError>,
    job: &Job,
) -> std::result::Result<hare_sim::SimOutput, hare_sim::SimError> {
    let cap_s = job.duration_cap.map(|d| d.as_secs_f64());
    match result {
        // The run's virtual clock (handshake included) stopped at the cap itself.
        Err(hare_sim::SimError::Stalled { partial, .. })
            if cap_s.is_some_and(|cap| partial.sim_seconds >= cap - 1e-9) =>
        {
            Ok(*partial)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: f64, cwnd: u32) -> TracePoint {
        TracePoint {
            t_s: t,
            cwnd_bytes: u64::from(cwnd) * 1000,
            cwnd_segments: cwnd,
            ssthresh_bytes: None,
            in_flight_bytes: 0,
            acked_packets: 1,
            rtt_sample_us: None,
            queue_bytes: 0,
        }
    }

    #[test]
    fn decimation_keeps_last_point_and_max_per_bucket() {
        let t = [
            tp(0.0001, 10),
            tp(0.0005, 30),
            tp(0.0009, 20),
            tp(0.0012, 5),
            tp(0.0035, 7),
        ];
        let d = decimate(&t, 0.001);
        let got: Vec<(u32, u32)> = d.iter().map(|(p, m)| (p.cwnd_segments, *m)).collect();
        assert_eq!(got, vec![(20, 30), (5, 5), (7, 7)]);
        assert!(decimate(&[], 0.001).is_empty());
    }
}
