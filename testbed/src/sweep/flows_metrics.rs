//! The table columns and heatmaps of a sweep of flows cells: Jain's index first.

use super::merge::{Better, Metric};
use super::run::SweepRow;

fn cell(r: &SweepRow) -> Option<&super::FlowsCell> {
    r.flows.as_ref()
}

/// The metrics of a flows sweep; the first [`FLOWS_HEATMAP_METRICS`] get a heatmap.
pub const FLOWS_METRICS: [Metric; 4] = [
    Metric {
        name: "Jain (every flow active)",
        stem: "jain",
        get: |r| cell(r).and_then(|c| c.jain),
        decimals: 3,
        better: Some(Better::Higher),
    },
    Metric {
        name: "slowest/fastest flow (Jain window)",
        stem: "slowest-over-fastest",
        get: |r| cell(r).and_then(|c| c.min_over_max()),
        decimals: 2,
        better: Some(Better::Higher),
    },
    Metric {
        name: "all flows Mbit/s (Jain window)",
        stem: "total-rate",
        get: |r| cell(r).and_then(|c| c.window_total_mbps),
        decimals: 1,
        better: Some(Better::Higher),
    },
    Metric {
        name: "retransmits (all flows, pkts)",
        stem: "retransmits",
        get: |r| cell(r).map(|c| c.retransmits as f64),
        decimals: 0,
        better: Some(Better::Lower),
    },
];

/// How many of [`FLOWS_METRICS`] get a heatmap.
pub const FLOWS_HEATMAP_METRICS: usize = 2;

/// What a flows sweep's columns mean.
pub const FLOWS_TABLE_LEGEND: &str = "Jain = Jain's index (sum x)^2 / (n sum x^2) of the \
flows' goodputs over the Jain window, the whole run seconds in which every flow was \
delivering; slowest/fastest = the smallest flow's goodput over that window divided by the \
largest's; per-flow Mbit/s = each flow's goodput over that window, f0 first (with \
flows.rtt_ratio the later half of the flows has the longer RTT).";

/// A text column of a sweep's table: its header and its value in a row.
pub type TextColumn = (&'static str, fn(&SweepRow) -> String);

/// The text columns a flows sweep's table adds.
pub fn text_columns() -> [TextColumn; 2] {
    [
        ("Jain window s", |r| {
            cell(r)
                .and_then(|c| c.jain_window_s)
                .map_or("-".into(), |[a, b]| format!("{a}-{b}"))
        }),
        ("per-flow Mbit/s (Jain window)", |r| {
            cell(r).map_or("-".into(), |c| {
                c.window_goodput_mbps
                    .iter()
                    .map(|m| m.map_or("-".into(), |m| format!("{m:.1}")))
                    .collect::<Vec<String>>()
                    .join(" / ")
            })
        }),
    ]
}
