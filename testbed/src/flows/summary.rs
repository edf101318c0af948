//! What a run of competing flows shows: per-flow interval lines tagged with the flow, and a
//! summary (per flow: goodput, retransmissions, slow-start exit, convergence; Jain's index
//! over the seconds all flows were active), as text and as one JSON object.
//!
//! The same summary serves the simulator (`hare-lab sim`) and the emulator
//! (`hare-lab compete`): both hand in each flow's report intervals.

use hare_report::fairness::{sharing, Convergence, FlowSeries};
use hare_report::{nuttcp, Interval, SlowStartExit};
use serde::Serialize;

use crate::scenario::flows::ResolvedFlow;

/// What the summary's columns mean (under the text table and on the page).
pub const SUMMARY_LEGEND: &str = "goodput = payload Mbit/s over the flow's whole transfer; \
the Jain window = the whole run seconds in which every flow was delivering (from the last \
flow's start, rounded up, to the first flow's end, rounded down); retransmits = packets \
declared lost; slow-start exit = seconds after the flow's first data, cwnd in segments, \
reason; converged after = seconds from the flow's start until its 1 s goodput stayed within \
20% of the fair share for 5 s (- for the first flows and when it never did).";

/// One flow's run, as the summary reads it.
pub struct FlowRun<'a> {
    /// The flow.
    pub flow: &'a ResolvedFlow,
    /// Run second at which its report's time 0 lies (its data began).
    pub origin_s: f64,
    /// Its report intervals (times from its origin): 1 s for the lines.
    pub intervals: &'a [Interval],
    /// Finer intervals (100 ms) for the per-second series, when there are.
    pub fine: Option<&'a [Interval]>,
    /// Payload bytes delivered and the seconds they took.
    pub bytes: u64,
    /// Seconds from its origin to its end.
    pub seconds: f64,
    /// Packets (or segments) retransmitted / declared lost.
    pub retransmits: u64,
    /// The first slow-start exit (time since its origin), when known.
    pub exit: Option<SlowStartExit>,
    /// Why the flow failed, if it did.
    pub error: Option<String>,
}

/// One flow in the summary.
#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    /// `f0`, `f1`, ...
    pub flow: String,
    /// The controller as written.
    pub controller: String,
    /// Its start, seconds from the run's start.
    pub start_s: f64,
    /// Its base RTT, ms.
    pub rtt_ms: f64,
    /// Payload Mbit/s over its whole transfer.
    pub goodput_mbps: f64,
    /// Payload Mbit/s over the Jain window.
    pub window_goodput_mbps: Option<f64>,
    /// Payload bytes delivered.
    pub bytes: u64,
    /// Packets retransmitted (declared lost).
    pub retransmits: u64,
    /// First slow-start exit: seconds since the flow's data began, cwnd, reason.
    pub exit: Option<SlowStartExit>,
    /// Seconds from its start until its 1 s goodput stayed within 20% of the fair share
    /// for 5 s (`null` for the first flows and when it never did).
    pub convergence_s: Option<f64>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

/// A run of competing flows.
#[derive(Debug, Clone, Serialize)]
pub struct FlowsSummary {
    /// Scenario name.
    pub scenario: String,
    /// `"sim"` or `"emulator"`.
    pub mode: &'static str,
    /// Repetition, from 0.
    pub repetition: u32,
    /// The run's seed (flow `i` uses `hare_sim::flow_seed(seed, i)`).
    pub seed: u64,
    /// Per flow.
    pub flows: Vec<FlowResult>,
    /// Jain's index of the flows' goodputs over `jain_window_s`.
    pub jain: Option<f64>,
    /// The whole run seconds `[from, to)` in which every flow delivered.
    pub jain_window_s: Option<[usize; 2]>,
    /// Sum of the flows' goodputs over that window, Mbit/s.
    pub window_total_mbps: Option<f64>,
    /// Flow f0's goodput over that window divided by flow f1's (two flows or more).
    pub ratio_f0_f1: Option<f64>,
    /// The emulator's verdict on its own fidelity (`None` in virtual time).
    pub valid: Option<bool>,
    /// Why the emulator run is invalid.
    pub invalid_reasons: Vec<String>,
}

/// The summary of `runs`.
pub fn summarize(
    scenario: &str,
    mode: &'static str,
    repetition: u32,
    seed: u64,
    runs: &[FlowRun<'_>],
) -> FlowsSummary {
    let series: Vec<FlowSeries> = runs
        .iter()
        .map(|r| FlowSeries::from_intervals(r.origin_s, r.fine.unwrap_or(r.intervals)))
        .collect();
    let share = sharing(&series, &Convergence::default());
    let flows = runs
        .iter()
        .zip(&share.window_mbps)
        .zip(&share.convergence_s)
        .map(|((r, window), conv)| FlowResult {
            flow: r.flow.tag(),
            controller: r.flow.controller_text.clone(),
            start_s: r.flow.start.0 as f64 / 1e9,
            rtt_ms: r.flow.rtt.0 as f64 / 1e6,
            goodput_mbps: hare_report::mbps(r.bytes, r.seconds),
            window_goodput_mbps: *window,
            bytes: r.bytes,
            retransmits: r.retransmits,
            exit: r.exit.clone(),
            convergence_s: *conv,
            error: r.error.clone(),
        })
        .collect();
    FlowsSummary {
        scenario: scenario.to_string(),
        mode,
        repetition,
        seed,
        flows,
        jain: share.jain,
        jain_window_s: share.window_s.map(|(a, b)| [a, b]),
        window_total_mbps: share.window_mbps.iter().copied().sum::<Option<f64>>(),
        ratio_f0_f1: match share.window_mbps.as_slice() {
            [Some(a), Some(b), ..] if *b > 0.0 => Some(a / b),
            _ => None,
        },
        valid: None,
        invalid_reasons: Vec::new(),
    }
}

/// Every flow's 1 s interval lines, in the order of their ends in run time: the flow's tag,
/// the interval's end in run seconds, then nuttcp's columns (MB / sec = Mbps), lost
/// packets, cwnd in packets, smoothed RTT in ms and the limit flag, within 100 columns for
/// up to 100 flows:
/// `[f1]   12.1  8.1234 MB /   1.00 sec =   68.1421 Mbps    0 lost  cwnd    439  rtt  73.6`.
pub fn interval_lines(runs: &[FlowRun<'_>]) -> Vec<String> {
    let mut lines: Vec<(f64, u32, String)> = runs
        .iter()
        .flat_map(|r| {
            r.intervals.iter().map(move |iv| {
                let end = r.origin_s + iv.end_s;
                (end, r.flow.index, flow_line(r.flow, end, iv))
            })
        })
        .collect();
    lines.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    lines.into_iter().map(|(_, _, l)| l).collect()
}

/// One tagged interval line (see [`interval_lines`]).
fn flow_line(flow: &ResolvedFlow, end_s: f64, iv: &Interval) -> String {
    let rate = nuttcp::rate_part(iv.bytes, iv.seconds());
    // The MB column is 10 wide for nuttcp's alignment; 8 hold any 1 s interval here.
    let rate = rate.strip_prefix("  ").unwrap_or(&rate);
    let mut s = format!(
        "{:<5}{end_s:>6.1}{rate} {:4} lost",
        format!("[{}]", flow.tag()),
        iv.lost_packets
    );
    if let Some(seg) = iv.cwnd_segments {
        s.push_str(&format!("  cwnd {seg:>6}"));
    }
    if let Some(r) = iv.srtt_ms {
        s.push_str(&format!("  rtt {r:5.1}"));
    }
    s.push_str(nuttcp::limit_flag(iv));
    s
}

/// The summary as a table and a line on sharing.
pub fn text(s: &FlowsSummary) -> String {
    let mut out = format!(
        "{:<4} {:<24} {:>6} {:>6} {:>8} {:>7}  {:<28} {:>9}\n",
        "flow", "controller", "start", "rtt", "Mbit/s", "retrans", "slow-start exit", "converged"
    );
    for f in &s.flows {
        let exit = f.exit.as_ref().map_or("-".to_string(), |e| {
            format!(
                "{:.3} s {} seg {}",
                e.t_s,
                e.cwnd_segments,
                e.reason.as_str()
            )
        });
        let conv = f
            .convergence_s
            .map_or("-".to_string(), |c| format!("{c:.1} s"));
        let ctl: String = f.controller.chars().take(24).collect();
        out.push_str(&format!(
            "{:<4} {:<24} {:>4.1} s {:>3.0} ms {:>8.2} {:>7}  {:<28} {:>9}\n",
            f.flow, ctl, f.start_s, f.rtt_ms, f.goodput_mbps, f.retransmits, exit, conv
        ));
        if let Some(e) = &f.error {
            out.push_str(&format!("     {} failed: {e}\n", f.flow));
        }
    }
    match (s.jain, s.jain_window_s) {
        (Some(j), Some([a, b])) => out.push_str(&format!(
            "Jain's index {j:.4} over {a}-{b} s (every flow active), {:.2} Mbit/s in all\n",
            s.window_total_mbps.unwrap_or(0.0)
        )),
        _ => out.push_str("Jain's index: no second in which every flow was active\n"),
    }
    if let Some(r) = s.ratio_f0_f1 {
        out.push_str(&format!("goodput ratio f0/f1 over that window: {r:.3}\n"));
    }
    if let Some(v) = s.valid {
        let verdict = if v { "VALID" } else { "INVALID" };
        out.push_str(&format!("emulator: {verdict}"));
        for r in &s.invalid_reasons {
            out.push_str(&format!("; {r}"));
        }
        out.push('\n');
    }
    out
}
