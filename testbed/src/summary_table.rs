//! The summary table of a replay: thread vs hare, one line per run.

use crate::replay_record::ReplayRecord;

fn opt_s(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |x| format!("{x:.1}"))
}

fn opt_u<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |x| x.to_string())
}

fn exit(cwnd: Option<u32>, reason: Option<&str>) -> String {
    match (cwnd, reason) {
        (Some(c), Some(r)) => format!("{c} {r}"),
        (Some(c), None) => c.to_string(),
        (None, Some(r)) => r.to_string(),
        (None, None) => "-".to_string(),
    }
}

/// What the columns mean (printed under the table).
pub const LEGEND: &str =
    "capacity: thread = best plateau (median of last 3 s) of the thread's runs on that path; \
     hare = the simulated link's payload rate.\n\
     t90% = end of the first 1 s interval at >= 90% of that capacity; exit = slow-start exit \
     cwnd (segments) and reason; loss10s = lost/retransmitted packets in the first 10 s.\n";

/// [`LEGEND`], plus a line saying over which stretch both sides were compared when
/// `replay --max-seconds` cut the runs.
pub fn legend(records: &[ReplayRecord]) -> String {
    let mut out = LEGEND.to_string();
    if let Some(h) = records.iter().find_map(|r| r.compared_over_s) {
        out.push_str(&format!(
            "Runs capped at {h} s (--max-seconds): t90%, loss10s and avg Mbit/s of both the \
             thread and hare are taken over the first {h} s only (the intervals that end by \
             then), not the thread's whole run.\n"
        ));
    }
    out
}

/// The table's cells, header row first. Columns: run, controller, then pairs
/// `thread / hare` of capacity used (Mbit/s), time to 90% (s), slow-start exit (cwnd in
/// segments and reason), losses in the first 10 s and average Mbit/s.
pub fn cells(records: &[ReplayRecord]) -> Vec<Vec<String>> {
    let header = [
        "run".to_string(),
        "controller".to_string(),
        "cap Mbit/s thr/hare".to_string(),
        "t90% s thr".to_string(),
        "t90% s hare".to_string(),
        "exit thr".to_string(),
        "exit hare".to_string(),
        "loss10s thr".to_string(),
        "loss10s hare".to_string(),
        "avg Mbit/s thr".to_string(),
        "avg Mbit/s hare".to_string(),
    ];
    let mut rows: Vec<Vec<String>> = vec![header.to_vec()];
    for r in records {
        rows.push(vec![
            r.id.clone(),
            r.controller.clone(),
            format!(
                "{}/{:.0}",
                r.thread_capacity_mbps
                    .map_or_else(|| "-".to_string(), |c| format!("{c:.0}")),
                r.capacity_mbps
            ),
            opt_s(r.thread_time_to_90pct_s),
            opt_s(r.time_to_90pct_s),
            exit(r.thread_exit_cwnd_segments, r.thread_exit_reason.as_deref()),
            exit(r.exit_cwnd_segments, r.exit_reason.as_deref()),
            opt_u(r.thread_lost_packets_10s),
            opt_u(r.lost_packets_10s),
            r.thread_avg_mbps
                .map_or_else(|| "-".to_string(), |m| format!("{m:.0}")),
            format!("{:.0}", r.avg_mbps),
        ]);
    }
    rows
}

/// The table as text: [`cells`] aligned, then the [`LEGEND`].
pub fn format(records: &[ReplayRecord]) -> String {
    let rows = cells(records);
    let ncol = rows[0].len();
    let widths: Vec<usize> = (0..ncol)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c < 2 {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (ncol - 1)));
            out.push('\n');
        }
    }
    out.push_str(&legend(records));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_aligned_columns_and_dashes_for_unknowns() {
        let r = ReplayRecord {
            id: "2007-reno-w60m".into(),
            scenario: "s".into(),
            controller: "reno@linux-2.6.20".into(),
            repetition: 0,
            seed: 1,
            capacity_mbps: 8400.4,
            time_to_90pct_s: Some(2.0),
            time_to_90pct_100ms_s: Some(1.3),
            exit_cwnd_segments: Some(10450),
            exit_reason: Some("loss".into()),
            exit_t_s: Some(1.4),
            lost_packets_10s: Some(0),
            lost_packets: 0,
            avg_mbps: 7000.4,
            seconds: 10.0,
            thread_capacity_mbps: Some(7470.0),
            thread_time_to_90pct_s: Some(2.0),
            thread_exit_cwnd_segments: None,
            thread_exit_reason: None,
            thread_lost_packets_10s: Some(0),
            thread_avg_mbps: Some(6554.4883),
            thread_seconds: Some(10.0),
            compared_over_s: None,
        };
        let t = format(&[r]);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("run             controller         cap Mbit/s thr/hare"));
        assert_eq!(lines[1].len(), lines[0].len());
        assert!(lines[2].starts_with("2007-reno-w60m  reno@linux-2.6.20"));
        assert!(lines[2].contains("7470/8400"));
        assert!(lines[2].contains("10450 loss"));
        assert!(lines[2].ends_with("6554             7000"), "{}", lines[2]);
        assert!(lines[2].contains("       -  10450 loss"), "{}", lines[2]);
    }
}
