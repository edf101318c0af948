//! SVG and PNG plots of a replayed run: per-second throughput (hare vs the thread) and cwnd
//! in segments on a log scale with the BDP line and slow-start exit / reduction markers.
//!
//! The charts are drawn by hare-plot, the workspace's one plotting path (its font discovery
//! decides whether they carry text).

use std::path::{Path, PathBuf};

use anyhow::Result;
use hare_plot::{write_chart_files, Chart, Series, Unit};

use crate::metrics::Row;

/// Font discovery and registration are hare-plot's (one registration per process, one list
/// of candidates for every plot of the workspace).
pub use hare_plot::{font, FONT_CANDIDATES};

/// What a throughput plot shows.
#[derive(Debug, Clone, Default)]
pub struct ThroughputSeries {
    /// Title.
    pub title: String,
    /// hare's per-second (interval end s, Mbit/s).
    pub hare: Vec<(f64, f64)>,
    /// The thread's per-second rows, if any.
    pub thread: Vec<(f64, f64)>,
    /// hare's capacity (link payload rate), Mbit/s.
    pub hare_capacity: f64,
    /// The thread's capacity (its plateau), Mbit/s.
    pub thread_capacity: Option<f64>,
    /// What the chart leaves out or clips ([`over_the_same_window`]), one note each.
    pub notes: Vec<String>,
}

/// A plotted series: (interval end s, Mbit/s).
pub type Points = Vec<(f64, f64)>;

/// hare's and the thread's rows as (interval end s, Mbit/s) over one window, so that a plot
/// compares like with like: under `--max-seconds` (`cap_s`) the thread's rows end where
/// hare's run does, and hare's last interval, when shorter than the ones before it (the run
/// ended inside it), is left out rather than drawn as a full interval's dip. Returns the two
/// series and a note for each thing left out.
pub fn over_the_same_window(
    hare: &[Row],
    thread: &[Row],
    cap_s: Option<f64>,
) -> (Points, Points, Vec<String>) {
    let mut notes = Vec::new();
    let mut hare = hare.to_vec();
    let full = hare.first().map_or(0.0, |r| r.end_s - r.start_s);
    if hare.len() > 1 {
        if let Some(last) = hare.last().filter(|r| r.end_s - r.start_s < 0.99 * full) {
            notes.push(format!(
                "hare's last interval ({:.2} s of {full:.2}) left out: the run ended inside it",
                last.end_s - last.start_s
            ));
            hare.pop();
        }
    }
    let thread = match cap_s {
        Some(h) if thread.iter().any(|r| r.end_s > h + 0.011) => {
            notes.push(format!(
                "thread's rows cut at {h:.0} s (--max-seconds), as hare's run"
            ));
            crate::metrics::rows_within(thread, h)
        }
        _ => thread.to_vec(),
    };
    let points = |rows: &[Row]| rows.iter().map(|r| (r.end_s, r.mbps)).collect();
    (points(&hare), points(&thread), notes)
}

/// What a cwnd plot shows.
#[derive(Debug, Clone, Default)]
pub struct CwndSeries {
    /// Title.
    pub title: String,
    /// (t s, cwnd segments): the largest cwnd of each trace bucket.
    pub cwnd: Vec<(f64, f64)>,
    /// (t s, ssthresh segments) where finite.
    pub ssthresh: Vec<(f64, f64)>,
    /// BDP of the path in packets.
    pub bdp_packets: f64,
    /// Slow-start exits (t s, cwnd, reason).
    pub exits: Vec<(f64, f64, String)>,
    /// Window reductions (t s, cwnd before).
    pub reductions: Vec<(f64, f64)>,
}

/// Palette indices of hare-plot's colours: hare red, the thread blue, ssthresh green.
const HARE: usize = 0;
const THREAD: usize = 1;
const SSTHRESH: usize = 2;

/// The throughput chart: hare's and the thread's per-second rates with their capacities.
fn throughput_chart(s: &ThroughputSeries) -> Chart {
    let mut series = Vec::new();
    if !s.thread.is_empty() {
        series.push(Series {
            label: "thread (nuttcp)".into(),
            points: s.thread.clone(),
            colour: Some(THREAD),
            ..Series::default()
        });
    }
    series.push(Series {
        label: "hare (simulated QUIC)".into(),
        points: s.hare.clone(),
        colour: Some(HARE),
        ..Series::default()
    });
    let mut hlines = vec![(
        s.hare_capacity,
        format!("hare capacity {:.0} Mbit/s", s.hare_capacity),
    )];
    if let Some(t) = s.thread_capacity {
        hlines.push((t, format!("thread plateau {t:.0} Mbit/s")));
    }
    Chart {
        title: s.title.clone(),
        x_desc: "time (s)".into(),
        y_desc: "Mbit/s (per 1 s interval)".into(),
        log_y: false,
        y_unit: Unit::Mbps,
        series,
        hlines,
        notes: s.notes.clone(),
    }
}

/// The cwnd chart: hare's cwnd and ssthresh in segments on a log scale, the BDP line, the
/// slow-start exits (noted) and the window reductions (marked).
fn cwnd_chart(s: &CwndSeries) -> Chart {
    let mut series = vec![Series {
        label: "hare cwnd".into(),
        points: s.cwnd.iter().map(|&(t, w)| (t, w.max(1.0))).collect(),
        marks: s
            .exits
            .iter()
            .map(|(t, w, reason)| (*t, w.max(1.0), format!("exit: {reason} @ {w:.0}")))
            .chain(
                s.reductions
                    .iter()
                    .map(|&(t, w)| (t, w.max(1.0), String::new())),
            )
            .collect(),
        colour: Some(HARE),
        ..Series::default()
    }];
    if !s.ssthresh.is_empty() {
        series.push(Series {
            label: "ssthresh".into(),
            points: s.ssthresh.clone(),
            colour: Some(SSTHRESH),
            width: Some(1),
            ..Series::default()
        });
    }
    Chart {
        title: s.title.clone(),
        x_desc: "time (s)".into(),
        y_desc: "cwnd (segments, log scale)".into(),
        log_y: true,
        y_unit: Unit::Mbps,
        series,
        hlines: vec![(s.bdp_packets, format!("BDP {:.0} packets", s.bdp_packets))],
        notes: Vec::new(),
    }
}

/// What a plot written by [`throughput`] or [`cwnd`] shows, for a page's caption (a file
/// name says nothing to a reader); `None` for other files.
pub fn caption(file: &Path) -> Option<&'static str> {
    let name = file.file_name()?.to_str()?;
    if name.ends_with(".throughput.svg") {
        Some(
            "Payload rate per 1 s interval: hare's simulated run (red) and, for a replay, the \
             thread's nuttcp rows (blue); grey lines: hare's link payload rate and the thread's \
             plateau. Both cover the same seconds: under --max-seconds the thread's rows end \
             where hare's run does, and a last interval the run ended inside is left out (a \
             grey note on the chart says which), not drawn as a dip.",
        )
    } else if name.ends_with(".cwnd.svg") {
        Some(
            "hare's congestion window in segments on a log scale (red) and ssthresh (green); \
             grey line: the path's bandwidth-delay product; circles: the slow-start exit \
             (noted in the upper left) and each window reduction.",
        )
    } else {
        None
    }
}

/// `stem` + `suffix` (run ids contain dots, so `Path::with_extension` would cut them).
fn with_suffix(stem: &Path, suffix: &str) -> PathBuf {
    let mut s = stem.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Write `<stem>.svg` and `<stem>.png` of a throughput plot; returns the files.
pub fn throughput(stem: &Path, s: &ThroughputSeries) -> Result<Vec<PathBuf>> {
    let (svg, png) = (with_suffix(stem, ".svg"), with_suffix(stem, ".png"));
    Ok(write_chart_files(&svg, &png, &throughput_chart(s))?)
}

/// Write `<stem>.svg` and `<stem>.png` of a cwnd plot; returns the files.
pub fn cwnd(stem: &Path, s: &CwndSeries) -> Result<Vec<PathBuf>> {
    let (svg, png) = (with_suffix(stem, ".svg"), with_suffix(stem, ".png"));
    Ok(write_chart_files(&svg, &png, &cwnd_chart(s))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(start_s: f64, end_s: f64, mbps: f64) -> Row {
        Row {
            start_s,
            end_s,
            mbps,
            lost: Some(0),
        }
    }

    /// `--max-seconds 3` of a 9 s thread run: the thread's rows stop at 3 s as hare's do,
    /// and hare's 0.4 s tail (at a full interval's scale a dip to 40%) is not drawn.
    #[test]
    fn a_capped_replay_plots_the_same_seconds_without_a_partial_dip() {
        let thread: Vec<Row> = (0..9)
            .map(|i| row(f64::from(i), f64::from(i + 1), 900.0))
            .collect();
        let hare = [
            row(0.0, 1.0, 500.0),
            row(1.0, 2.0, 950.0),
            row(2.0, 3.0, 950.0),
            row(3.0, 3.4, 380.0),
        ];
        let (h, t, notes) = over_the_same_window(&hare, &thread, Some(3.0));
        assert_eq!(h, vec![(1.0, 500.0), (2.0, 950.0), (3.0, 950.0)]);
        assert_eq!(t, vec![(1.0, 900.0), (2.0, 900.0), (3.0, 900.0)]);
        assert_eq!(
            notes,
            vec![
                "hare's last interval (0.40 s of 1.00) left out: the run ended inside it",
                "thread's rows cut at 3 s (--max-seconds), as hare's run",
            ]
        );
        // Uncapped, every thread row stays; full hare intervals stay whole.
        let (h, t, notes) = over_the_same_window(&hare[..3], &thread, None);
        assert_eq!((h.len(), t.len()), (3, 9));
        assert!(notes.is_empty());
    }
}
