//! The truth file (what neqo and the applications counted) and the trimming of the qlogs.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};

use crate::run::RunResult;
use crate::Opts;

/// Milliseconds since the qlog reference time (both qlogs start at the run's base instant).
fn ms(t: Instant, base: Instant) -> f64 {
    t.saturating_duration_since(base).as_secs_f64() * 1000.0
}

fn name(p: &Path) -> Option<String> {
    p.file_name().map(|n| n.to_string_lossy().into_owned())
}

fn stats_json(s: &neqo_transport::Stats) -> Value {
    json!({
        "packets_tx": s.packets_tx,
        "packets_rx": s.packets_rx,
        "dups_rx": s.dups_rx,
        "dropped_rx": s.dropped_rx,
        "lost_packets": s.lost,
        "late_ack": s.late_ack,
        "pto_ack": s.pto_ack,
        "pto_counts": s.pto_counts.to_vec(),
        "stream_frames_tx": s.frame_tx.stream,
        "stream_frames_rx": s.frame_rx.stream,
        "congestion_events_loss": s.cc.congestion_events.loss,
        "congestion_events_ecn": s.cc.congestion_events.ecn,
        "congestion_events_spurious": s.cc.congestion_events.spurious,
        "slow_start_exit_cwnd_after_cut": s.cc.slow_start_exit_cwnd,
        "slow_start_exit_reason": s.cc.slow_start_exit_reason.map(|r| format!("{r:?}")),
        "cwnd_at_end": s.cc.cwnd,
        "rtt_ms_at_end": s.rtt.as_secs_f64() * 1000.0,
    })
}

/// Trims both qlogs, writes `<out>/<name>.truth.json` and returns its path.
pub fn write(o: &Opts, r: &RunResult) -> Result<PathBuf, String> {
    trim(&r.client_qlog)?;
    trim(&r.server_qlog)?;
    let start = r.first_payload_tx.ok_or("no data sent")?;
    let fin = r.last_read.ok_or("transfer did not finish")?;
    let secs = fin.duration_since(start).as_secs_f64();
    let (sq, rq) = if o.sender_is_client {
        (&r.client_qlog, &r.server_qlog)
    } else {
        (&r.server_qlog, &r.client_qlog)
    };
    let b = r.base;
    let first = r.first_congestion.as_ref().map(|f| {
        json!({
            "t_ms": ms(f.at, b),
            "cwnd_before_bytes": f.cwnd_before,
            "cwnd_after_bytes": f.cwnd_after,
            "lost_packets_before": f.lost_before,
            "lost_packets_after": f.lost_after,
        })
    });
    let exit = r.slow_start_exit.as_ref().map(|x| {
        json!({
            "t_ms": ms(x.at, b),
            "reason": x.reason,
            "cwnd_before_bytes": x.cwnd_before,
            "cwnd_after_bytes": x.cwnd_after,
        })
    });
    let v = json!({
        "generator": env!("CARGO_PKG_NAME"),
        "stack": "neqo 0.27.0",
        "clock": "virtual: every time is the instant neqo was given, in ms since both qlogs' reference time",
        "sender": if o.sender_is_client { "client" } else { "server" },
        "sender_qlog": name(sq),
        "receiver_qlog": name(rq),
        "cc": o.cc,
        "slow_start": o.slow_start,
        "path": {
            "rate_bps": o.rate_bps,
            "one_way_delay_ms": o.delay.as_secs_f64() * 1000.0,
            "queue_bytes": o.queue_bytes,
            "drop_every_nth_1rtt_datagram": o.drop_every,
        },
        "payload_bytes_sent": r.written,
        "payload_bytes_received": r.received,
        "first_payload_datagram_ms": ms(start, b),
        "last_byte_read_ms": ms(fin, b),
        "all_acked_ms": r.all_acked.map(|t| ms(t, b)),
        "transfer_s": secs,
        "goodput_mbps": r.received as f64 * 8.0 / secs / 1e6,
        "sender_stats": stats_json(&r.sender_stats),
        "receiver_stats": stats_json(&r.receiver_stats),
        "path_drops": {
            "nth": r.up.dropped_nth + r.down.dropped_nth,
            "queue": r.up.dropped_queue + r.down.dropped_queue,
        },
        "first_loss_ms": r.first_loss.map(|t| ms(t, b)),
        "first_congestion": first,
        "slow_start_exit": exit,
        "run_end_ms": ms(r.end, b),
    });
    let path = o.out.join(format!("{}.truth.json", o.name));
    let text = serde_json::to_string_pretty(&v).map_err(|x| x.to_string())?;
    std::fs::write(&path, text + "\n").map_err(|x| format!("{}: {x}", path.display()))?;
    Ok(path)
}

/// Trims a qlog for a small fixture: drops the events the analysis does not read and that
/// make up most of the file; every other record stays byte for byte as neqo wrote it.
fn trim(path: &Path) -> Result<(), String> {
    const DROP: &[&str] = &[
        "\"name\":\"transport:data_moved\"",
        "\"name\":\"quic:stream_data_moved\"",
        "\"name\":\"recovery:loss_timer_updated\"",
        "\"name\":\"quic:loss_timer_updated\"",
    ];
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::with_capacity(bytes.len());
    for rec in bytes.split(|&b| b == 0x1e).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(rec);
        if DROP.iter().any(|d| text.contains(d)) {
            continue;
        }
        out.push(0x1e);
        out.extend_from_slice(rec);
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}
