//! iperf3-shaped JSON (`start` / `intervals` / `end`) so that scripts written for
//! `iperf3 --json` can read hare's runs; hare's own fields sit under `hare` keys and the
//! events under a top-level `events` array.

use crate::Run;
use serde_json::{json, Value};

/// Render a run as an iperf3-shaped JSON value.
pub fn to_iperf_json(run: &Run) -> Value {
    let h = &run.header;
    let intervals: Vec<Value> = run
        .intervals
        .iter()
        .map(|iv| {
            let sum = json!({
                "start": iv.start_s,
                "end": iv.end_s,
                "seconds": iv.seconds(),
                "bytes": iv.bytes,
                "bits_per_second": iv.mbps() * 1e6,
                "retransmits": iv.lost_packets,
                "snd_cwnd": iv.cwnd_bytes,
                "rtt": iv.srtt_ms.map(|ms| (ms * 1000.0).round() as u64),
                "omitted": false,
                "sender": h.role == crate::Role::Sender,
            });
            json!({ "streams": [sum.clone()], "sum": sum, "hare": iv })
        })
        .collect();
    let end = match &run.summary {
        Some(s) => {
            let side = json!({
                "start": 0.0,
                "end": s.seconds,
                "seconds": s.seconds,
                "bytes": s.bytes,
                "bits_per_second": s.mbps() * 1e6,
                "retransmits": s.lost_packets,
            });
            json!({
                "sum_sent": side,
                "sum_received": side,
                "cpu_utilization_percent": {
                    "host_total": s.cpu_sender_pct,
                    "remote_total": s.cpu_receiver_pct,
                },
                "hare": s,
            })
        }
        None => json!({}),
    };
    json!({
        "start": {
            "version": format!("hare {}", h.tool_version),
            "test_start": { "protocol": match h.transport { crate::Transport::Quic => "QUIC", crate::Transport::Tcp => "TCP" } },
            "congestion_used": h.controller,
            "hare": h,
        },
        "intervals": intervals,
        "end": end,
        "events": run.events,
    })
}
