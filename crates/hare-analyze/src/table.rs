//! Tables of metrics: one row per figure, one column per trace, plain or Markdown, and the
//! side-by-side comparison with ratios.

use crate::metrics::{Metrics, NotLogged, Provenance};

/// The text of a cell whose quantity the trace does not log: such a cell is never a figure;
/// [`analysis`] shows it as "-" and lists the quantity under the table.
const NOT_LOGGED: &str = "not logged";

/// One table row: a label and, per trace, the shown text and the number behind it (for
/// ratios).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// What the row shows.
    pub label: String,
    /// Per trace: text and value.
    pub cells: Vec<(String, Option<f64>)>,
}

fn num(v: Option<f64>, digits: usize) -> (String, Option<f64>) {
    match v {
        Some(x) => (format!("{x:.digits$}"), Some(x)),
        None => ("-".into(), None),
    }
}

fn tag(p: Option<Provenance>) -> &'static str {
    match p {
        Some(Provenance::Given) => "",
        Some(Provenance::File) => " (file)",
        Some(Provenance::Estimated) => " (est.)",
        None => "",
    }
}

/// The rows for a set of traces' metrics.
pub fn rows(ms: &[Metrics]) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut add = |label: String, f: &dyn Fn(&Metrics) -> (String, Option<f64>)| {
        rows.push(Row {
            label,
            cells: ms.iter().map(f).collect(),
        })
    };
    let frac = ms.first().map_or(0.9, |m| m.fraction) * 100.0;
    add("role".into(), &|m| (role_text(m), None));
    add("duration s".into(), &|m| num(Some(m.duration_s), 3));
    add("payload MB (2^20)".into(), &|m| {
        payload(m, m.bytes.map(|b| b as f64 / hare_report::MIB))
    });
    add("payload from".into(), &|m| (payload_text(m).into(), None));
    add(
        "stream MB sent (2^20, once each)".into(),
        &|m| match m.stream_bytes_sent {
            Some(b) => num(Some(b as f64 / hare_report::MIB), 2),
            None => (NOT_LOGGED.into(), None),
        },
    );
    add("goodput Mbit/s".into(), &|m| payload(m, m.goodput_mbps));
    add(
        "retransmitted MB (2^20)".into(),
        &|m| match m.retransmitted_bytes {
            Some(b) => num(Some(b as f64 / hare_report::MIB), 2),
            None => (NOT_LOGGED.into(), None),
        },
    );
    for (i, h) in crate::metrics::HORIZONS_S.iter().enumerate() {
        add(format!("goodput first {h} s Mbit/s"), &move |m| {
            payload(m, m.goodput_over.get(i).and_then(|g| g.1))
        });
    }
    add(
        "partial last bin (not a sample)".into(),
        &|m| match m.partial_bin {
            Some(b) => (format!("{:.3} s at {:.2} Mbit/s", b.len_s, b.mbps), None),
            None if m.not_logged.contains(&NotLogged::Payload) => (NOT_LOGGED.into(), None),
            None => ("none".into(), None),
        },
    );
    add("capacity Mbit/s".into(), &|m| {
        let (t, v) = num(m.capacity_mbps, 1);
        (format!("{t}{}", tag(m.capacity_from)), v)
    });
    add("base RTT ms".into(), &|m| {
        let (t, v) = num(m.rtt_ms, 3);
        (format!("{t}{}", tag(m.rtt_from)), v)
    });
    add("BDP bytes".into(), &|m| {
        num(m.bdp_bytes.map(|b| b as f64), 0)
    });
    add("slow-start exit s".into(), &|m| {
        num(m.exit.map(|e| e.t_s), 6)
    });
    add("exit on the file's clock ms".into(), &|m| {
        num(m.exit.map(|e| (e.t_s + m.origin_s) * 1000.0), 3)
    });
    add("exit cwnd segments".into(), &|m| {
        num(m.exit.and_then(|e| e.cwnd_segments).map(f64::from), 0)
    });
    add("exit cwnd bytes".into(), &|m| {
        num(m.exit.map(|e| e.cwnd_bytes as f64), 0)
    });
    add("exit reason".into(), &|m| match m.exit {
        Some(e) => {
            let r = e.reason.map_or("unknown", |r| r.as_str());
            let src = match e.source {
                crate::trace::ExitSource::ControllerEvent => "cc event",
                crate::trace::ExitSource::Observed => "observed",
                crate::trace::ExitSource::SsthreshFinite => "ssthresh set",
                crate::trace::ExitSource::FirstLoss => "first loss",
                crate::trace::ExitSource::CongestionSignal => "first congestion signal",
                crate::trace::ExitSource::StateChange => "state change",
            };
            (format!("{r} ({src})"), None)
        }
        None if m.role == Some(crate::trace::TraceRole::Receiver) => ("- (receiver)".into(), None),
        None => ("still in slow start".into(), None),
    });
    add("overshoot (exit cwnd / BDP)".into(), &|m| {
        num(m.overshoot, 3)
    });
    add(format!("time to {frac:.0}% capacity s"), &|m| {
        num(m.time_to_fraction_s, 3)
    });
    add("lost packets".into(), &|m| logged(m.losses));
    add("lost in slow start".into(), &|m| {
        logged(m.losses_in_slow_start)
    });
    add("loss episodes".into(), &|m| {
        num(Some(m.episodes.len() as f64), 0)
    });
    add("mean cwnd recovery s".into(), &|m| {
        num(mean(m.episodes.iter().filter_map(|e| e.cwnd_recovery_s)), 3)
    });
    add("mean rate recovery s".into(), &|m| {
        num(mean(m.episodes.iter().filter_map(|e| e.rate_recovery_s)), 3)
    });
    add("max cwnd bytes".into(), &|m| {
        num(m.max_cwnd_bytes.map(|b| b as f64), 0)
    });
    add("min RTT ms".into(), &|m| {
        if m.not_logged.contains(&NotLogged::Rtt) {
            (NOT_LOGGED.into(), None)
        } else {
            num(m.min_rtt_ms, 3)
        }
    });
    add("skipped records".into(), &|m| {
        num(
            Some(m.skipped.iter().map(|s| s.count).sum::<u64>() as f64),
            0,
        )
    });
    rows
}

/// A payload figure, or "not logged" when the trace tells no payload (a quinn receiver).
fn payload(m: &Metrics, v: Option<f64>) -> (String, Option<f64>) {
    if m.not_logged.contains(&NotLogged::Payload) {
        (NOT_LOGGED.into(), None)
    } else {
        num(v, 2)
    }
}

/// A count, or "not logged" when the producer does not log it.
fn logged(v: Option<u64>) -> (String, Option<f64>) {
    match v {
        Some(n) => num(Some(n as f64), 0),
        None => (NOT_LOGGED.into(), None),
    }
}

fn role_text(m: &Metrics) -> String {
    let role = match m.role {
        Some(crate::trace::TraceRole::Sender) => "sender",
        Some(crate::trace::TraceRole::Receiver) => "receiver",
        None => "unknown",
    };
    match m.vantage.as_deref() {
        Some(v) if v != "unknown" => format!("{role} ({v})"),
        _ => role.to_string(),
    }
}

fn payload_text(m: &Metrics) -> &'static str {
    match m.payload_source {
        crate::trace::PayloadSource::Report => "report",
        crate::trace::PayloadSource::AckedStreamFrames => "acked STREAM frames",
        crate::trace::PayloadSource::ReceivedStreamFrames => "received STREAM frames",
        crate::trace::PayloadSource::PacketEstimate => "packet bytes (est.)",
        crate::trace::PayloadSource::Unknown => NOT_LOGGED,
    }
}

fn mean(it: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut n, mut s) = (0u32, 0.0);
    for v in it {
        n += 1;
        s += v;
    }
    (n > 0).then(|| s / f64::from(n))
}

/// Renders rows with a header, as aligned plain text or as a Markdown table.
pub fn render(header: &[String], rows: &[Row], markdown: bool) -> String {
    let lines: Vec<Vec<String>> = std::iter::once(header.to_vec())
        .chain(rows.iter().map(|r| {
            std::iter::once(r.label.clone())
                .chain(r.cells.iter().map(|c| c.0.clone()))
                .collect()
        }))
        .collect();
    let cols = lines.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|c| {
            lines
                .iter()
                .map(|l| l.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        let cells: Vec<String> = (0..cols)
            .map(|c| {
                let s = l.get(c).map_or("", String::as_str);
                if c == 0 {
                    format!("{s:<w$}", w = width[c])
                } else {
                    format!("{s:>w$}", w = width[c])
                }
            })
            .collect();
        if markdown {
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
            if i == 0 {
                let rule: Vec<String> = (0..cols)
                    .map(|c| {
                        let dashes = "-".repeat(width[c].max(3));
                        if c == 0 {
                            dashes
                        } else {
                            format!("{}:", &dashes[1..])
                        }
                    })
                    .collect();
                out.push_str(&format!("| {} |\n", rule.join(" | ")));
            }
        } else {
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
    }
    out
}

/// Takes the "not logged" cells out of `rows`: a row no trace logs is dropped, a cell of a
/// trace that does not log it reads "-".
fn take_not_logged(rows: &mut Vec<Row>, traces: usize) {
    rows.retain_mut(|r| {
        let absent: Vec<usize> = (0..traces.min(r.cells.len()))
            .filter(|&i| r.cells[i].0 == NOT_LOGGED)
            .collect();
        for &i in &absent {
            r.cells[i] = ("-".into(), None);
        }
        absent.len() < traces
    });
}

/// One line per trace that does not log some quantities, naming them.
pub fn not_logged_lines<'a>(ms: impl IntoIterator<Item = (&'a str, &'a Metrics)>) -> String {
    ms.into_iter()
        .filter(|(_, m)| !m.not_logged.is_empty())
        .map(|(name, m)| {
            let what: Vec<&str> = m.not_logged.iter().map(|n| n.as_str()).collect();
            format!(
                "not logged in {name} (left out above): {}\n",
                what.join(", ")
            )
        })
        .collect()
}

/// `table` followed by the not-logged `notes` (after a blank line in Markdown, which ends
/// the table there).
fn with_notes(table: String, notes: &str, markdown: bool) -> String {
    match (notes.is_empty(), markdown) {
        (true, _) => table,
        (false, true) => format!("{table}\n{notes}"),
        (false, false) => format!("{table}{notes}"),
    }
}

/// The analysis table of several traces, then one line per trace naming what it does not
/// log (those rows are left out, or "-" where another trace has them).
pub fn analysis(ms: &[Metrics], markdown: bool) -> String {
    let header: Vec<String> = std::iter::once("metric".to_string())
        .chain(ms.iter().map(|m| m.name.clone()))
        .collect();
    let mut rows = rows(ms);
    take_not_logged(&mut rows, ms.len());
    let notes = not_logged_lines(ms.iter().map(|m| (m.name.as_str(), m)));
    with_notes(render(&header, &rows, markdown), &notes, markdown)
}

/// Two traces side by side with the ratio B/A of every numeric row.
pub fn comparison(a: &Metrics, b: &Metrics, markdown: bool) -> String {
    let pair = [a.clone(), b.clone()];
    let mut rows = rows(&pair);
    take_not_logged(&mut rows, 2);
    for r in &mut rows {
        let ratio = match (r.cells[0].1, r.cells[1].1) {
            (Some(x), Some(y)) if x != 0.0 => format!("{:.3}", y / x),
            _ => "-".into(),
        };
        r.cells.push((ratio, None));
    }
    let header = vec![
        "metric".to_string(),
        format!("A: {}", a.name),
        format!("B: {}", b.name),
        "B/A".to_string(),
    ];
    let notes = not_logged_lines([(header[1].as_str(), a), (header[2].as_str(), b)]);
    with_notes(render(&header, &rows, markdown), &notes, markdown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_markdown_layout() {
        let rows = vec![Row {
            label: "goodput".into(),
            cells: vec![("10.00".into(), Some(10.0)), ("5.0".into(), Some(5.0))],
        }];
        let h = vec!["metric".to_string(), "a".to_string(), "bb".to_string()];
        assert_eq!(
            render(&h, &rows, false),
            "metric       a   bb\ngoodput  10.00  5.0\n"
        );
        assert_eq!(
            render(&h, &rows, true),
            "| metric  |     a |  bb |\n| ------- | ----: | --: |\n| goodput | 10.00 | 5.0 |\n"
        );
    }
}
