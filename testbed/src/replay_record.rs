//! One replayed run's figures, thread vs hare: the object `--json` emits per run and the row
//! of the summary table.

use crate::metrics;
use crate::thread_data::{ThreadData, ThreadRun};
use hare_report::{EventKind, Run};
use serde::{Deserialize, Serialize};

/// Figures of one hare run beside the thread run it replays (the `thread_*` fields are
/// `None` for a scenario that replays no thread run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayRecord {
    /// Thread run id (for replays) or `<scenario>/<controller>#<repetition>`.
    pub id: String,
    /// Scenario name.
    pub scenario: String,
    /// hare-cc controller spec as run.
    pub controller: String,
    /// Repetition number, from 0.
    pub repetition: u32,
    /// Seed of the run.
    pub seed: u64,
    /// Capacity used for hare's time to 90%: the link's payload rate, Mbit/s.
    pub capacity_mbps: f64,
    /// End of the first 1 s interval at 90% of `capacity_mbps`.
    pub time_to_90pct_s: Option<f64>,
    /// The same rule on hare's 100 ms intervals (end of the first 100 ms at 90%), when the
    /// run has them: a finer look than the thread's 1 s rows allow.
    #[serde(default)]
    pub time_to_90pct_100ms_s: Option<f64>,
    /// cwnd in segments when slow start ended.
    pub exit_cwnd_segments: Option<u32>,
    /// Why slow start ended.
    pub exit_reason: Option<String>,
    /// When slow start ended, seconds.
    pub exit_t_s: Option<f64>,
    /// Packets lost in the intervals ending by 10 s.
    pub lost_packets_10s: Option<u64>,
    /// Packets lost over the run.
    pub lost_packets: u64,
    /// Payload bytes over the run's duration, Mbit/s.
    pub avg_mbps: f64,
    /// Duration of hare's run, seconds.
    pub seconds: f64,
    /// The thread's capacity on this path (its observed plateau), Mbit/s.
    pub thread_capacity_mbps: Option<f64>,
    /// The thread's time to 90% of its capacity.
    pub thread_time_to_90pct_s: Option<f64>,
    /// The thread's slow-start exit cwnd, when the mail printed it.
    pub thread_exit_cwnd_segments: Option<u32>,
    /// The thread's slow-start exit reason, when the mail printed it.
    pub thread_exit_reason: Option<String>,
    /// The thread's retransmissions in the first 10 s (see
    /// [`ThreadRun::lost_packets_10s`]).
    pub thread_lost_packets_10s: Option<u64>,
    /// nuttcp's closing Mbit/s.
    pub thread_avg_mbps: Option<f64>,
    /// nuttcp's closing duration.
    pub thread_seconds: Option<f64>,
    /// When set (`replay --max-seconds`), every time-window figure of both sides (time to
    /// 90 %, losses, average) is taken over the first this many seconds only, so a capped
    /// hare run is compared with the same stretch of the thread's run, not with its whole.
    #[serde(default)]
    pub compared_over_s: Option<f64>,
}

/// When, at what cwnd and why slow start first ended in a hare run: the summary's
/// `slow_start_exit`, else the first exit event.
pub fn slow_start_exit(run: &Run) -> Option<(f64, u32, String)> {
    if let Some(e) = run
        .summary
        .as_ref()
        .and_then(|s| s.slow_start_exit.as_ref())
    {
        return Some((e.t_s, e.cwnd_segments, e.reason.as_str().to_string()));
    }
    run.events.iter().find_map(|ev| match &ev.kind {
        EventKind::Cc {
            event: hare_report::CcEvent::SlowStartExit { cwnd, reason, .. },
        } => Some((ev.t_s, *cwnd, reason.as_str().to_string())),
        EventKind::SlowStartExitObserved {
            cwnd_segments,
            reason,
        } => Some((ev.t_s, *cwnd_segments, reason.as_str().to_string())),
        _ => None,
    })
}

impl ReplayRecord {
    /// Figures of `run` (hare, with `capacity_mbps` its link's payload rate) beside `thread`.
    pub fn build(
        id: &str,
        scenario: &str,
        repetition: u32,
        run: &Run,
        capacity_mbps: f64,
        thread: Option<(&ThreadData, &ThreadRun)>,
    ) -> Self {
        let rows = metrics::rows_of(&run.intervals);
        let exit = slow_start_exit(run);
        let (avg, seconds, lost) = match &run.summary {
            Some(s) => (s.mbps(), s.seconds, s.lost_packets),
            None => (
                metrics::average_mbps(&rows),
                rows.last().map_or(0.0, |r| r.end_s),
                run.intervals.iter().map(|i| i.lost_packets).sum(),
            ),
        };
        let thread_capacity = thread.map(|(d, t)| d.capacity_mbps(t));
        ReplayRecord {
            id: id.to_string(),
            scenario: scenario.to_string(),
            controller: run.header.controller.clone(),
            repetition,
            seed: run.header.seed.unwrap_or(0),
            capacity_mbps,
            time_to_90pct_s: metrics::time_to_90pct(&rows, capacity_mbps),
            time_to_90pct_100ms_s: None,
            exit_cwnd_segments: exit.as_ref().map(|e| e.1),
            exit_reason: exit.as_ref().map(|e| e.2.clone()),
            exit_t_s: exit.as_ref().map(|e| e.0),
            lost_packets_10s: metrics::losses_within(&rows, 10.0),
            lost_packets: lost,
            avg_mbps: avg,
            seconds,
            thread_capacity_mbps: thread_capacity,
            thread_time_to_90pct_s: thread.and_then(|(_, t)| {
                metrics::time_to_90pct(&t.rows(), thread_capacity.unwrap_or(0.0))
            }),
            thread_exit_cwnd_segments: thread.and_then(|(_, t)| t.exit_cwnd),
            thread_exit_reason: thread.and_then(|(_, t)| t.exit_reason.clone()),
            thread_lost_packets_10s: thread.and_then(|(_, t)| t.lost_packets_10s()),
            thread_avg_mbps: thread.map(|(_, t)| t.summary.mbps),
            thread_seconds: thread.map(|(_, t)| t.summary.sec),
            compared_over_s: None,
        }
    }

    /// Takes every time-window figure of both sides over the first `horizon_s` seconds
    /// only (the intervals that end by then): `replay --max-seconds` cuts hare's run, and a
    /// 1 s run beside the thread's 30 s average compares nothing. hare's `run` gives its
    /// intervals, `thread` the thread's rows; the capacities and exits stay (they are the
    /// path's and slow start's, not a window's).
    pub fn compare_over(&mut self, horizon_s: f64, run: &Run, thread: Option<&ThreadRun>) {
        let hare = metrics::rows_within(&metrics::rows_of(&run.intervals), horizon_s);
        self.compared_over_s = Some(horizon_s);
        self.avg_mbps = metrics::average_mbps(&hare);
        self.seconds = hare.last().map_or(0.0, |r| r.end_s);
        self.time_to_90pct_s = metrics::time_to_90pct(&hare, self.capacity_mbps);
        self.lost_packets_10s = metrics::losses_within(&hare, horizon_s.min(10.0));
        self.lost_packets = hare.iter().filter_map(|r| r.lost).sum();
        if let Some(t) = thread {
            let rows = metrics::rows_within(&t.rows(), horizon_s);
            self.thread_avg_mbps = Some(metrics::average_mbps(&rows));
            self.thread_seconds = rows.last().map(|r| r.end_s);
            self.thread_time_to_90pct_s =
                metrics::time_to_90pct(&rows, self.thread_capacity_mbps.unwrap_or(0.0));
            // Without per-second counts the mail's totals cover the whole run: only a
            // "no loss" note still holds for a part of it.
            self.thread_lost_packets_10s = metrics::losses_within(&rows, horizon_s.min(10.0))
                .or_else(|| (t.lost_packets_10s() == Some(0)).then_some(0));
        }
    }
}
