//! Running a sweep's flows cells (cells whose scenario has `[[flows]]`, e.g. from the
//! `flows.count` / `flows.rtt_ratio` axes): every repetition through
//! [`crate::flows::run_repetition`], `jobs` at a time, one [`SweepRow`] each with the
//! sharing figures in [`FlowsCell`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::grid::Sweep;
use super::run::SweepRow;
use crate::flows::summary::FlowsSummary;

/// What a sweep row holds of a run of competing flows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowsCell {
    /// Jain's index of the flows' goodputs over `jain_window_s`.
    pub jain: Option<f64>,
    /// The whole run seconds `[from, to)` in which every flow delivered.
    pub jain_window_s: Option<[usize; 2]>,
    /// The flows' goodputs summed over that window, Mbit/s.
    pub window_total_mbps: Option<f64>,
    /// Per flow (f0, f1, ...): payload Mbit/s over its whole transfer.
    pub goodput_mbps: Vec<f64>,
    /// Per flow: payload Mbit/s over the Jain window.
    pub window_goodput_mbps: Vec<Option<f64>>,
    /// Per flow: its base RTT, ms.
    pub rtt_ms: Vec<f64>,
    /// Packets declared lost, all flows together.
    pub retransmits: u64,
}

impl FlowsCell {
    fn of(s: &FlowsSummary) -> Self {
        FlowsCell {
            jain: s.jain,
            jain_window_s: s.jain_window_s,
            window_total_mbps: s.window_total_mbps,
            goodput_mbps: s.flows.iter().map(|f| f.goodput_mbps).collect(),
            window_goodput_mbps: s.flows.iter().map(|f| f.window_goodput_mbps).collect(),
            rtt_ms: s.flows.iter().map(|f| f.rtt_ms).collect(),
            retransmits: s.flows.iter().map(|f| f.retransmits).sum(),
        }
    }

    /// The slowest flow's goodput over the window divided by the fastest's (1: equal
    /// shares).
    pub fn min_over_max(&self) -> Option<f64> {
        let w: Vec<f64> = self
            .window_goodput_mbps
            .iter()
            .copied()
            .collect::<Option<_>>()?;
        let max = w.iter().copied().fold(0.0, f64::max);
        let min = w.iter().copied().fold(f64::INFINITY, f64::min);
        (max > 0.0).then(|| min / max)
    }
}

/// One flows run to do: (cell, repetition).
pub(super) type FlowsWork = (usize, u32);

/// The row of repetition `rep` of flows cell `cell`.
fn row(sweep: &Sweep, cell: usize, rep: u32) -> SweepRow {
    let c = &sweep.cells[cell];
    let s = &c.scenario;
    let run = if s.file.repetitions > 1 {
        format!("{}-r{rep}", s.file.name)
    } else {
        s.file.name.clone()
    };
    let (flows, error) = match crate::flows::run_repetition(s, rep) {
        Ok(sum) => {
            let failed: Vec<String> = sum
                .flows
                .iter()
                .filter_map(|f| f.error.as_ref().map(|e| format!("{}: {e}", f.flow)))
                .collect();
            let error = (!failed.is_empty()).then(|| failed.join("; "));
            (Some(FlowsCell::of(&sum)), error)
        }
        Err(e) => (None, Some(format!("{e:#}"))),
    };
    SweepRow {
        sweep: sweep.name.clone(),
        definition: sweep.definition.clone(),
        cells: sweep.cells.len(),
        cell,
        key: c.key.clone(),
        run,
        bdp_packets: s.bdp_packets(),
        window_cap_mbps: None,
        exit_cwnd_over_bdp: None,
        losses_in_slow_start: None,
        record: None,
        error,
        flows,
    }
}

/// Runs `work`, `jobs` at a time, handing each row to `sink` in the order of `work`.
pub(super) fn run_flows_cells(
    sweep: &Sweep,
    work: &[FlowsWork],
    jobs: usize,
    sink: &mut dyn FnMut(SweepRow) -> Result<()>,
) -> Result<()> {
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, SweepRow)>();
    let next = &next;
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..jobs.clamp(1, work.len().max(1)) {
            let tx = tx.clone();
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(cell, rep)) = work.get(i) else {
                    break;
                };
                if tx.send((i, row(sweep, cell, rep))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        // Rows come back in any order; they go out in the order of `work`.
        let mut waiting = BTreeMap::new();
        let mut due = 0;
        for (i, r) in rx {
            waiting.insert(i, r);
            while let Some(r) = waiting.remove(&due) {
                sink(r)?;
                due += 1;
            }
        }
        Ok(())
    })
}
