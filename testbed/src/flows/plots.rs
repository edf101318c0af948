//! The plots of a run of competing flows: per-flow goodput over time, per-flow cwnd over time
//! and the bottleneck queue, one line per flow labelled with its controller and start, drawn
//! by hare-plot as SVG and PNG.

use std::path::{Path, PathBuf};

use anyhow::Result;
use hare_plot::{write_chart_files, Chart, Series, Unit};
use hare_report::fairness::FlowSeries;
use hare_report::Interval;
use hare_sim::QueueSample;

use super::summary::FlowRun;
use crate::plots::Points;
use crate::scenario::flows::ResolvedFlow;

/// The bottleneck queue of a run, as sampled by the simulator.
#[derive(Debug, Clone)]
pub struct QueueData<'a> {
    /// The samples, in time order.
    pub samples: &'a [QueueSample],
    /// Plot packets (the queue limit is in packets) rather than bytes.
    pub packets: bool,
    /// The drop-tail limit, in the plotted unit.
    pub limit: Option<f64>,
}

/// What the three charts could not show, one note each (a flow with no cwnd in its
/// report, a run with no queue samples); the page lists them too.
pub type Notes = Vec<String>;

/// A flow's legend text: `f1 cubic@linux-6 from 5 s` plus its RTT when it differs from
/// `path_rtt_ms`.
pub fn flow_label(f: &ResolvedFlow, path_rtt_ms: f64) -> String {
    let rtt_ms = f.rtt.0 as f64 / 1e6;
    let mut s = format!(
        "{} {} from {} s",
        f.tag(),
        f.controller_text,
        hare_plot::human_number(f.start.0 as f64 / 1e9)
    );
    if (rtt_ms - path_rtt_ms).abs() > 1e-6 {
        s.push_str(&format!(", RTT {} ms", hare_plot::human_number(rtt_ms)));
    }
    s
}

/// A flow's goodput per whole run second, as Jain's index reads it (its intervals rebinned
/// onto the run's seconds, [`FlowSeries::from_intervals`]): one point per second from the
/// one holding its first data, at the second's end. A last second the flow ended inside is
/// left out (a part of a second drawn as a whole one would be a false dip).
pub fn throughput_points(origin_s: f64, intervals: &[Interval]) -> Points {
    let series = FlowSeries::from_intervals(origin_s, intervals);
    let first = origin_s.max(0.0).floor() as usize;
    series
        .mbps
        .iter()
        .enumerate()
        .skip(first)
        .map(|(i, &m)| ((i + 1) as f64, m))
        .take_while(|&(end, _)| end <= series.to_s + 1e-9)
        .collect()
}

/// A flow's cwnd (segments) at the end of each report interval, in run seconds.
pub fn cwnd_points(origin_s: f64, intervals: &[Interval]) -> Points {
    intervals
        .iter()
        .filter_map(|iv| {
            iv.cwnd_segments
                .map(|c| (origin_s + iv.end_s, f64::from(c)))
        })
        .collect()
}

/// The queue samples as (run seconds, bytes or packets).
pub fn queue_points(q: &QueueData<'_>) -> Points {
    q.samples
        .iter()
        .map(|s| {
            let v = if q.packets { s.packets } else { s.bytes };
            (s.at_ns as f64 / 1e9, v as f64)
        })
        .collect()
}

/// One line per flow.
fn per_flow(runs: &[FlowRun<'_>], path_rtt_ms: f64, points: &[Points]) -> Vec<Series> {
    runs.iter()
        .zip(points)
        .filter(|(_, p)| !p.is_empty())
        .map(|(r, p)| Series {
            label: flow_label(r.flow, path_rtt_ms),
            points: p.clone(),
            colour: Some(r.flow.index as usize),
            ..Series::default()
        })
        .collect()
}

fn chart(title: String, y_desc: &str, y_unit: Unit, series: Vec<Series>) -> Chart {
    Chart {
        title,
        x_desc: "time since the run's start (s)".into(),
        y_desc: y_desc.into(),
        log_y: false,
        y_unit,
        series,
        hlines: Vec::new(),
        notes: Vec::new(),
    }
}

/// `stem` + `suffix` (scenario names may hold dots).
fn with_suffix(stem: &Path, suffix: &str) -> PathBuf {
    let mut s = stem.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The charts of a run, each with its file kind (`flows-throughput`, `flows-cwnd`,
/// `flows-queue`), and what they could not show. `capacity_mbps` is the link's payload
/// rate (a reference line); without queue samples there is no queue chart.
pub fn flow_charts(
    title: &str,
    runs: &[FlowRun<'_>],
    path_rtt_ms: f64,
    capacity_mbps: f64,
    queue: Option<&QueueData<'_>>,
) -> (Vec<(&'static str, Chart)>, Notes) {
    let mut notes = Notes::new();
    let tput: Vec<Points> = runs
        .iter()
        .map(|r| throughput_points(r.origin_s, r.fine.unwrap_or(r.intervals)))
        .collect();
    let mut c = chart(
        format!("{title}: goodput per flow"),
        "Mbit/s (per 1 s of the run)",
        Unit::Mbps,
        per_flow(runs, path_rtt_ms, &tput),
    );
    c.hlines.push((
        capacity_mbps,
        format!("link payload rate {capacity_mbps:.0} Mbit/s"),
    ));
    let mut charts = vec![("flows-throughput", c)];
    let cwnd: Vec<Points> = runs
        .iter()
        .map(|r| cwnd_points(r.origin_s, r.fine.unwrap_or(r.intervals)))
        .collect();
    for (r, p) in runs.iter().zip(&cwnd) {
        if p.is_empty() {
            notes.push(format!(
                "{} ({}): no cwnd in its report, not drawn",
                r.flow.tag(),
                r.flow.controller_text
            ));
        }
    }
    let mut c = chart(
        format!("{title}: cwnd per flow"),
        "cwnd (segments, end of each report interval)",
        Unit::Mbps,
        per_flow(runs, path_rtt_ms, &cwnd),
    );
    c.notes = notes.clone();
    charts.push(("flows-cwnd", c));
    match queue {
        Some(q) if !q.samples.is_empty() => charts.push(("flows-queue", queue_chart(title, q))),
        _ => notes.push(
            "the bottleneck queue: not sampled in this run (the emulator does not), no queue plot"
                .into(),
        ),
    }
    (charts, notes)
}

fn queue_chart(title: &str, q: &QueueData<'_>) -> Chart {
    let (desc, unit) = if q.packets {
        ("queue (packets)", Unit::Mbps)
    } else {
        ("queue (bytes)", Unit::Bytes)
    };
    let mut c = chart(
        format!("{title}: bottleneck queue"),
        desc,
        unit,
        vec![Series {
            label: "queue at the shared bottleneck".into(),
            points: queue_points(q),
            colour: Some(5),
            width: Some(1),
            ..Series::default()
        }],
    );
    if let Some(l) = q.limit {
        c.hlines
            .push((l, format!("drop-tail limit {}", unit.format(l))));
    }
    c
}

/// Writes the charts of [`flow_charts`] as `<stem>.<kind>.svg` and `.png`; returns the
/// files and what the charts could not show.
pub fn write_flow_plots(
    stem: &Path,
    title: &str,
    runs: &[FlowRun<'_>],
    path_rtt_ms: f64,
    capacity_mbps: f64,
    queue: Option<&QueueData<'_>>,
) -> Result<(Vec<PathBuf>, Notes)> {
    let (charts, notes) = flow_charts(title, runs, path_rtt_ms, capacity_mbps, queue);
    let mut files = Vec::new();
    for (kind, c) in &charts {
        let svg = with_suffix(stem, &format!(".{kind}.svg"));
        let png = with_suffix(stem, &format!(".{kind}.png"));
        files.extend(write_chart_files(&svg, &png, c)?);
    }
    Ok((files, notes))
}

/// What a plot of [`write_flow_plots`] shows, for the page's caption.
pub fn caption(file: &Path) -> Option<&'static str> {
    let name = file.file_name()?.to_str()?;
    if name.ends_with(".flows-throughput.svg") {
        Some(
            "Each flow's payload rate per whole second of the run (the seconds Jain's index \
             is computed on), one colour per flow; grey line: the link's payload rate. A \
             flow's last second is left out when the flow ended inside it.",
        )
    } else if name.ends_with(".flows-cwnd.svg") {
        Some("Each flow's congestion window in segments at the end of each report interval.")
    } else if name.ends_with(".flows-queue.svg") {
        Some(
            "Occupancy of the shared bottleneck's drop-tail queue, sampled every 10 ms of \
             virtual time; grey line: its limit.",
        )
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::flows::{FlowController, FlowWorkload};
    use hare_link::TimeSpan;

    fn iv(start_s: f64, end_s: f64, bytes: u64, cwnd: Option<u32>) -> Interval {
        Interval {
            start_s,
            end_s,
            bytes,
            cwnd_segments: cwnd,
            ..Interval::default()
        }
    }

    fn flow(index: u32, start_s: u64, rtt_ms: u64) -> ResolvedFlow {
        ResolvedFlow {
            index,
            controller_text: "reno@linux-6".into(),
            controller: FlowController::Hare(Box::new("reno@linux-6".parse().expect("spec"))),
            start: TimeSpan(start_s * 1_000_000_000),
            rtt: TimeSpan(rtt_ms * 1_000_000),
            extra_delay: TimeSpan((rtt_ms - 20) * 1_000_000),
            workload: FlowWorkload::Duration(TimeSpan(5_000_000_000)),
        }
    }

    /// A flow whose data began at run second 2: 1.25 MB in its first second (10 Mbit/s)
    /// and 2.5 MB in its second (20 Mbit/s) land on run seconds 2-3 and 3-4, drawn at their
    /// ends; its cwnd is drawn where its report has one.
    #[test]
    fn per_flow_series_are_on_the_run_clock() {
        let ivs = [
            iv(0.0, 1.0, 1_250_000, Some(10)),
            iv(1.0, 2.0, 2_500_000, None),
        ];
        assert_eq!(throughput_points(2.0, &ivs), vec![(3.0, 10.0), (4.0, 20.0)]);
        // Ending half-way through run second 4-5: that second is not drawn.
        let tail = [ivs[0].clone(), ivs[1].clone(), iv(2.0, 2.5, 625_000, None)];
        assert_eq!(
            throughput_points(2.0, &tail),
            vec![(3.0, 10.0), (4.0, 20.0)]
        );
        assert_eq!(cwnd_points(2.0, &ivs), vec![(3.0, 10.0)]);
        let samples = [
            QueueSample {
                at_ns: 0,
                bytes: 0,
                packets: 0,
            },
            QueueSample {
                at_ns: 10_000_000,
                bytes: 3000,
                packets: 2,
            },
        ];
        let mut q = QueueData {
            samples: &samples,
            packets: false,
            limit: None,
        };
        assert_eq!(queue_points(&q), vec![(0.0, 0.0), (0.01, 3000.0)]);
        q.packets = true;
        assert_eq!(queue_points(&q), vec![(0.0, 0.0), (0.01, 2.0)]);
    }

    /// One line per flow in the goodput and cwnd charts, labelled with the controller, the
    /// start and a differing RTT; a flow without cwnd is noted, not silently left out.
    #[test]
    fn one_series_per_flow_and_notes_for_what_is_missing() {
        let (f0, f1) = (flow(0, 0, 20), flow(1, 2, 40));
        let with_cwnd = [iv(0.0, 1.0, 1_250_000, Some(10))];
        let without = [iv(0.0, 1.0, 1_250_000, None)];
        let run = |f, ivs| FlowRun {
            flow: f,
            origin_s: 0.0,
            intervals: ivs,
            fine: None,
            bytes: 0,
            seconds: 1.0,
            retransmits: 0,
            exit: None,
            error: None,
        };
        let runs = [run(&f0, &with_cwnd[..]), run(&f1, &without[..])];
        let (charts, notes) = flow_charts("t", &runs, 20.0, 95.0, None);
        let kinds: Vec<&str> = charts.iter().map(|c| c.0).collect();
        assert_eq!(kinds, ["flows-throughput", "flows-cwnd"]);
        let labels: Vec<&str> = charts[0].1.series.iter().map(|s| &s.label[..]).collect();
        assert_eq!(
            labels,
            [
                "f0 reno@linux-6 from 0 s",
                "f1 reno@linux-6 from 2 s, RTT 40 ms"
            ]
        );
        assert_eq!(charts[1].1.series.len(), 1);
        assert_eq!(
            notes,
            [
                "f1 (reno@linux-6): no cwnd in its report, not drawn",
                "the bottleneck queue: not sampled in this run (the emulator does not), no queue plot",
            ]
        );
    }
}
