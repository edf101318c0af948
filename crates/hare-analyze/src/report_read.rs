//! hare report JSON lines to a [`Trace`]: the intervals are the delivered chunks and the
//! samples; the exit comes from hare-cc's event, else the observed exit, else the summary.

use std::io::BufRead;
use std::path::Path;

use hare_report::{jsonl, CcEvent, Event, EventKind, ExitReason, Interval, Run, Summary};

use crate::error::Result;
use crate::trace::{
    Chunk, Exit, ExitSource, Format, PayloadSource, Reduction, Sample, Skipped, Trace, TraceRole,
};

/// Reads one report.
pub fn read_report<R: BufRead>(path: &Path, r: R) -> Result<Trace> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let outcome = jsonl::read_run(r, &path.display().to_string())?;
    let run = outcome.run;
    let mss = u64::from(run.header.mtu);
    let mut skipped = Vec::new();
    if outcome.truncated_records > 0 {
        skipped.push(Skipped {
            count: outcome.truncated_records as u64,
            reason: "last line cut short (run still being written or interrupted)".into(),
        });
    }
    let (samples, delivered, losses) = interval_series(&run.intervals);
    let events = event_figures(&run.events, mss);
    let end_s = run
        .intervals
        .last()
        .map(|iv| iv.end_s)
        .or(run.summary.as_ref().map(|s| s.seconds))
        .unwrap_or(0.0);
    let records =
        (run.intervals.len() + run.events.len() + 1 + usize::from(run.summary.is_some())) as u64;
    Ok(Trace {
        name,
        format: Format::Report,
        role: Some(match run.header.role {
            hare_report::Role::Sender => TraceRole::Sender,
            hare_report::Role::Receiver => TraceRole::Receiver,
        }),
        mss: Some(mss),
        origin_s: 0.0,
        end_s,
        samples,
        delivered,
        losses,
        losses_logged: true,
        retransmitted_bytes: None,
        stream_bytes_sent: None,
        payload_source: PayloadSource::Report,
        delivery_start_s: None,
        delivery_end_s: None,
        notes: Vec::new(),
        vantage: None,
        reductions: events.reductions,
        exit: events
            .cc_exit
            .or(events.observed_exit)
            .or_else(|| summary_exit(run.summary.as_ref(), mss)),
        in_flight_at_end_bytes: None,
        max_cwnd_bytes: max_cwnd_bytes(&run, mss),
        path_rate_bps: run.header.path.as_ref().and_then(|p| p.rate_bps),
        path_rtt_ms: run.header.path.as_ref().and_then(|p| p.rtt_ms),
        skipped,
        records,
    })
}

/// The samples (one per interval end), the delivered chunks and the loss times of the
/// intervals; a loss is placed at the end of its interval (interval resolution).
fn interval_series(intervals: &[Interval]) -> (Vec<Sample>, Vec<Chunk>, Vec<f64>) {
    let samples = intervals
        .iter()
        .map(|iv| Sample {
            t_s: iv.end_s,
            cwnd_bytes: iv.cwnd_bytes,
            ssthresh_bytes: iv.ssthresh_bytes,
            in_flight_bytes: iv.in_flight_bytes,
            srtt_ms: iv.srtt_ms,
            min_rtt_ms: iv.min_rtt_ms,
        })
        .collect();
    let delivered = intervals
        .iter()
        .map(|iv| Chunk {
            start_s: iv.start_s,
            end_s: iv.end_s,
            bytes: iv.bytes,
        })
        .collect();
    let mut losses = Vec::new();
    for iv in intervals {
        losses.extend(std::iter::repeat_n(iv.end_s, iv.lost_packets as usize));
    }
    (samples, delivered, losses)
}

/// What the events say: the controller's first exit, the first observed exit, and every
/// window reduction.
struct EventFigures {
    cc_exit: Option<Exit>,
    observed_exit: Option<Exit>,
    reductions: Vec<Reduction>,
}

fn event_figures(events: &[Event], mss: u64) -> EventFigures {
    let seg_bytes = |s: u32| u64::from(s) * mss;
    let mut out = EventFigures {
        cc_exit: None,
        observed_exit: None,
        reductions: Vec::new(),
    };
    for ev in events {
        match &ev.kind {
            EventKind::Cc {
                event: CcEvent::SlowStartExit { cwnd, reason, .. },
            } if out.cc_exit.is_none() => {
                out.cc_exit = Some(Exit {
                    t_s: ev.t_s,
                    cwnd_bytes: seg_bytes(*cwnd),
                    cwnd_segments: Some(*cwnd),
                    reason: Some(*reason),
                    source: ExitSource::ControllerEvent,
                });
            }
            EventKind::Cc {
                event:
                    CcEvent::WindowReduced {
                        from_cwnd, to_cwnd, ..
                    },
            } => out.reductions.push(Reduction {
                t_s: ev.t_s,
                from_cwnd_bytes: seg_bytes(*from_cwnd),
                to_cwnd_bytes: seg_bytes(*to_cwnd),
            }),
            EventKind::SlowStartExitObserved {
                cwnd_segments,
                reason,
            } if out.observed_exit.is_none() => {
                out.observed_exit = Some(Exit {
                    t_s: ev.t_s,
                    cwnd_bytes: seg_bytes(*cwnd_segments),
                    cwnd_segments: Some(*cwnd_segments),
                    reason: Some(*reason),
                    source: ExitSource::Observed,
                });
            }
            _ => {}
        }
    }
    out
}

/// The exit the summary names, for a report without exit events.
fn summary_exit(summary: Option<&Summary>, mss: u64) -> Option<Exit> {
    summary
        .and_then(|s| s.slow_start_exit.as_ref())
        .map(|e| Exit {
            t_s: e.t_s,
            cwnd_bytes: u64::from(e.cwnd_segments) * mss,
            cwnd_segments: Some(e.cwnd_segments),
            reason: Some(e.reason),
            source: if e.reason == ExitReason::Loss {
                ExitSource::FirstLoss
            } else {
                ExitSource::Observed
            },
        })
}

/// The largest cwnd of the intervals and the summary, in bytes.
fn max_cwnd_bytes(run: &Run, mss: u64) -> Option<u64> {
    run.intervals
        .iter()
        .filter_map(|iv| iv.cwnd_bytes)
        .max()
        .max(
            run.summary
                .as_ref()
                .and_then(|s| s.max_cwnd_segments)
                .map(|s| u64::from(s) * mss),
        )
}
