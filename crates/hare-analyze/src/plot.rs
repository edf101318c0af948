//! SVG and PNG plots of one or more traces overlaid with a legend: goodput vs time, cwnd vs
//! time on a log scale (slow-start exits marked), RTT vs time.
//!
//! Text is drawn with plotters' pure-Rust `ab_glyph` path from a TrueType font found at run
//! time (`$HARE_LAB_FONT`, else DejaVu Sans or Liberation Sans from the Debian packages
//! `fonts-dejavu-core` / `fonts-liberation`); without a font the plots are drawn without text.
//! The charts are drawn by hare-plot, the workspace's one plotting path (re-exported here).

use std::path::{Path, PathBuf};

pub use hare_plot::{
    font, human_bytes, human_number, write_chart, Chart, PlotError, Series, Unit, FONT_CANDIDATES,
};

use crate::metrics::{Metrics, NotLogged};
use crate::trace::{Trace, TraceRole};

/// The three charts of a set of traces (with their metrics, same order). A quantity a trace
/// does not log is not drawn (its series stays empty, out of the legend, keeping the other
/// series' colours) and one note line on the chart says so; a partial last goodput bin is
/// not drawn either, and noted.
pub fn charts(traces: &[Trace], metrics: &[Metrics]) -> [Chart; 3] {
    let mut thr = Vec::new();
    let mut cwnd = Vec::new();
    let mut rtt = Vec::new();
    let mut notes: [Vec<String>; 3] = Default::default();
    for (t, m) in traces.iter().zip(metrics) {
        let (goodput, note) = goodput_series(t, m);
        thr.push(goodput);
        notes[0].extend(note);
        let (window, note) = cwnd_series(t, traces.len());
        cwnd.push(window);
        notes[1].extend(note);
        let points: Vec<(f64, f64)> = t
            .samples
            .iter()
            // From the origin on: the handshake's samples still carry the initial RTT.
            .filter(|s| s.t_s >= 0.0)
            .filter_map(|s| s.srtt_ms.map(|r| (s.t_s, r)))
            .collect();
        if points.is_empty() {
            notes[2].push(format!("{}: smoothed RTT not logged", t.name));
        }
        rtt.push(Series {
            label: if points.is_empty() {
                String::new()
            } else {
                t.name.clone()
            },
            points,
            ..Series::default()
        });
    }
    let bin = metrics.first().map_or(1.0, |m| m.bin_s);
    let [thr_notes, cwnd_notes, rtt_notes] = notes;
    [
        Chart {
            title: format!("goodput per {} s bin", human_number(bin)),
            x_desc: "time (s)".into(),
            y_desc: "Mbit/s".into(),
            log_y: false,
            y_unit: Unit::Mbps,
            series: thr,
            hlines: capacity_lines(metrics),
            notes: thr_notes,
        },
        Chart {
            title: "congestion window".into(),
            x_desc: "time (s)".into(),
            y_desc: "cwnd (log scale)".into(),
            log_y: true,
            y_unit: Unit::Bytes,
            series: cwnd,
            hlines: bdp_lines(metrics),
            notes: cwnd_notes,
        },
        Chart {
            title: "smoothed RTT".into(),
            x_desc: "time (s)".into(),
            y_desc: "ms".into(),
            log_y: false,
            y_unit: Unit::Ms,
            series: rtt,
            hlines: Vec::new(),
            notes: rtt_notes,
        },
    ]
}

/// The goodput steps of one trace (each complete bin's rate held over the bin) and the note
/// for what is not drawn: the whole series when the payload is not logged, else a partial
/// last bin.
fn goodput_series(t: &Trace, m: &Metrics) -> (Series, Option<String>) {
    if m.not_logged.contains(&NotLogged::Payload) {
        let note = format!(
            "{}: goodput not logged (no sizes or STREAM frames of received packets)",
            t.name
        );
        return (Series::default(), Some(note));
    }
    let points = m
        .bins_mbps
        .iter()
        .enumerate()
        .flat_map(|(i, &g)| {
            let lo = i as f64 * m.bin_s;
            [(lo, g), (lo + m.bin_s, g)]
        })
        .collect();
    let note = m.partial_bin.map(|b| {
        format!(
            "{}: last {:.3} s (a partial bin, {:.1} Mbit/s) not drawn",
            t.name, b.len_s, b.mbps
        )
    });
    let series = Series {
        label: t.name.clone(),
        points,
        ..Series::default()
    };
    (series, note)
}

/// The cwnd series of one trace, exits marked, and the note for what is not drawn: a
/// receiver's window beside senders' (it only paces its ACKs), or a window not logged.
fn cwnd_series(t: &Trace, traces: usize) -> (Series, Option<String>) {
    if t.role == Some(TraceRole::Receiver) && traces > 1 {
        let note = format!("{}: a receiver, its window is not drawn", t.name);
        return (Series::default(), Some(note));
    }
    let points: Vec<(f64, f64)> = t
        .samples
        .iter()
        .filter_map(|s| s.cwnd_bytes.map(|c| (s.t_s, c as f64)))
        .collect();
    if points.is_empty() {
        let note = format!("{}: congestion window not logged", t.name);
        return (Series::default(), Some(note));
    }
    let marks = t
        .exit
        .map(|e| {
            let why = e.reason.map_or("slow-start exit", |r| r.as_str());
            vec![(
                e.t_s,
                e.cwnd_bytes as f64,
                format!(
                    "{}: {why} at {:.3} s, cwnd {}",
                    t.name,
                    e.t_s,
                    human_bytes(e.cwnd_bytes as f64)
                ),
            )]
        })
        .unwrap_or_default();
    let series = Series {
        label: t.name.clone(),
        points,
        marks,
        ..Series::default()
    };
    (series, None)
}

/// Whether a figure is known rather than estimated from the run itself.
fn known(p: Option<crate::metrics::Provenance>) -> bool {
    matches!(
        p,
        Some(crate::metrics::Provenance::Given | crate::metrics::Provenance::File)
    )
}

/// The capacity lines of the goodput chart: one per distinct known capacity.
fn capacity_lines(ms: &[Metrics]) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for m in ms {
        if let (Some(c), true) = (m.capacity_mbps, known(m.capacity_from)) {
            if !out.iter().any(|o| o.0 == c) {
                out.push((c, format!("capacity {} Mbit/s", human_number(c))));
            }
        }
    }
    out
}

/// The BDP lines of the cwnd chart: one per distinct BDP of a known capacity.
fn bdp_lines(ms: &[Metrics]) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for m in ms {
        if let (Some(b), true) = (m.bdp_bytes, known(m.capacity_from)) {
            let b = b as f64;
            if b > 0.0 && !out.iter().any(|o| o.0 == b) {
                let rtt = m
                    .rtt_ms
                    .map_or(String::new(), |r| format!(" x {} ms", human_number(r)));
                out.push((b, format!("BDP {}{rtt}", human_bytes(b))));
            }
        }
    }
    out
}

/// Writes `throughput`, `cwnd` and `rtt` (SVG + PNG each) of the traces into `dir`.
pub fn plot_all(
    dir: &Path,
    traces: &[Trace],
    metrics: &[Metrics],
) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    let mut out = Vec::new();
    for (name, c) in ["throughput", "cwnd", "rtt"]
        .iter()
        .zip(charts(traces, metrics))
    {
        out.extend(write_chart(dir, name, &c)?);
    }
    Ok(out)
}
