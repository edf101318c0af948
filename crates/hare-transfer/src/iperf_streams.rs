//! iperf3's per-stream entries of a job of several bulk streams (`-P N`): in each interval
//! `intervals[].streams` holds one entry per stream beside `intervals[].sum`, and
//! `end.streams` one `sender`/`receiver` pair per stream beside `end.sum_sent` and
//! `end.sum_received`. The streams' bytes add up to the sums exactly: both come from the same
//! counts (the receiver's by stream, or kernel TCP's acknowledged bytes by connection).

use hare_report::{Role, Run};
use serde_json::{json, Value};

/// The per-stream counts of a run, kept beside its records.
#[derive(Debug, Clone, Default)]
pub struct PerStream {
    /// For each of the run's intervals, its bytes by stream (empty when not counted so).
    pub intervals: Vec<Vec<u64>>,
    /// The job's final bytes by stream (empty when not counted so).
    pub totals: Vec<u64>,
}

/// One stream's entry: iperf3's `socket` is a stream number here (1, 2, ...).
fn entry(index: usize, start: f64, end: f64, bytes: u64, sender: bool) -> Value {
    let seconds = end - start;
    json!({
        "socket": index + 1,
        "start": start,
        "end": end,
        "seconds": seconds,
        "bytes": bytes,
        "bits_per_second": hare_report::mbps(bytes, seconds) * 1e6,
        "omitted": false,
        "sender": sender,
    })
}

/// Replace the single-stream entries of `doc` (from `to_iperf_json`) by one per stream.
pub fn extend(doc: &mut Value, run: &Run, per: &PerStream) {
    let sender = run.header.role == Role::Sender;
    if let Some(ivs) = doc["intervals"].as_array_mut() {
        for ((v, iv), streams) in ivs.iter_mut().zip(&run.intervals).zip(&per.intervals) {
            // One stream: the whole job's entry (with its congestion fields) is that stream's,
            // numbered 1 as in `end.streams` and `start.connected`.
            if streams.len() < 2 {
                if let Some(only) = v["streams"].get_mut(0).filter(|e| e.is_object()) {
                    only["socket"] = json!(1);
                }
                continue;
            }
            let entries: Vec<Value> = streams
                .iter()
                .enumerate()
                .map(|(i, b)| entry(i, iv.start_s, iv.end_s, *b, sender))
                .collect();
            v["streams"] = Value::Array(entries);
        }
    }
    let Some(s) = &run.summary else {
        return;
    };
    if per.totals.len() < 2 {
        return;
    }
    let entries: Vec<Value> = per
        .totals
        .iter()
        .enumerate()
        .map(|(i, b)| {
            json!({
                // Both entries carry this host's role, as iperf3's do.
                "sender": entry(i, 0.0, s.seconds, *b, sender),
                "receiver": entry(i, 0.0, s.seconds, *b, sender),
            })
        })
        .collect();
    doc["end"]["streams"] = Value::Array(entries);
}
