//! What tools that read iperf3's `-J` expect beyond hare-report's own document: the
//! connection (`start.connected`), when (`start.timestamp`), what was asked
//! (`start.test_start`), per-stream totals (`end.streams`) and CPU split into user and system
//! time (`end.cpu_utilization_percent`). Field names and units are iperf3's (its
//! `iperf_api.c`): seconds, bytes, bits per second, RTT in microseconds.

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use hare_report::{Role, Run};
use serde_json::{json, Value};

/// The facts of a run only the side that ran it knows.
#[derive(Debug, Clone, Default)]
pub struct IperfContext {
    /// This end's socket address.
    pub local: Option<SocketAddr>,
    /// The peer's.
    pub remote: Option<SocketAddr>,
    /// `-P`.
    pub num_streams: u16,
    /// `-T`, seconds (iperf3's `duration`; 0 for a sized run).
    pub duration_s: Option<f64>,
    /// `-n`, bytes (iperf3's `bytes`; 0 for a timed run).
    pub bytes: Option<u64>,
    /// Size of one write (iperf3's `blksize`).
    pub blksize: u64,
    /// CPU of this process in user mode, percent of one core.
    pub cpu_user_pct: Option<f64>,
    /// CPU of this process in the kernel, percent of one core.
    pub cpu_system_pct: Option<f64>,
}

impl IperfContext {
    /// What was asked (iperf3's `test_start`) of a job with `streams` data streams: `-T` as
    /// `duration` and `-n` as `bytes` for bulk jobs, the files' total for file jobs. Both
    /// sides build it from the same job, so their documents agree.
    pub fn of_job(job: &crate::protocol::Job, streams: u16) -> Self {
        let (duration_s, bytes) = match job {
            crate::protocol::Job::Bulk { bytes, seconds, .. } => (*seconds, *bytes),
            crate::protocol::Job::Files { files, .. } => {
                (None, Some(files.iter().map(|f| f.size).sum()))
            }
        };
        Self {
            num_streams: streams,
            duration_s,
            bytes,
            blksize: crate::channels::CHUNK as u64,
            ..Self::default()
        }
    }
}

/// The receiver's context of a job: what the sender's hello asked (`-P` of a bulk job, one
/// stream per file job otherwise counted as 1), between `local` (when known) and the peer.
pub fn receiver_context(
    job: &crate::protocol::Job,
    local: Option<SocketAddr>,
    remote: SocketAddr,
) -> IperfContext {
    let streams = match job {
        crate::protocol::Job::Bulk { streams, .. } => *streams,
        crate::protocol::Job::Files { .. } => 1,
    };
    IperfContext {
        local,
        remote: Some(remote),
        ..IperfContext::of_job(job, streams)
    }
}

/// `start.connected`: one entry per stream, as iperf3 lists each of its `-P` sockets.
/// iperf3's `socket` is a file descriptor; here it is the stream number (1, 2, ...), the
/// same number as in `intervals[].streams[].socket` and `end.streams[]`. QUIC streams share
/// the connection's addresses.
fn connected(local: SocketAddr, remote: SocketAddr, streams: u16) -> Value {
    (1..=streams.max(1))
        .map(|socket| {
            json!({
                "socket": socket,
                "local_host": local.ip().to_string(),
                "local_port": local.port(),
                "remote_host": remote.ip().to_string(),
                "remote_port": remote.port(),
            })
        })
        .collect()
}

/// Add the iperf3 fields to `doc` (from `hare_report::iperf::to_iperf_json(run)`).
pub fn extend(doc: &mut Value, run: &Run, cx: &IperfContext, started: SystemTime) {
    let sender = run.header.role == Role::Sender;
    let start = &mut doc["start"];
    if let (Some(l), Some(r)) = (cx.local, cx.remote) {
        start["connected"] = connected(l, r, cx.num_streams);
    }
    let secs = started
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // iperf3 spells it `timesecs` (`cJSON_AddNumberToObject(..., "timesecs", ...)`).
    start["timestamp"] = json!({ "time": http_date(secs), "timesecs": secs });
    // The peer as iperf3 names it: the client's `connecting_to`, the server's
    // `accepted_connection`.
    if let Some(r) = cx.remote {
        let peer = if sender {
            "connecting_to"
        } else {
            "accepted_connection"
        };
        start[peer] = json!({ "host": r.ip().to_string(), "port": r.port() });
    }
    let test = &mut start["test_start"];
    test["num_streams"] = json!(cx.num_streams);
    test["blksize"] = json!(cx.blksize);
    test["omit"] = json!(0);
    test["duration"] = json!(cx.duration_s.unwrap_or(0.0));
    test["bytes"] = json!(cx.bytes.unwrap_or(0));
    test["blocks"] = json!(0);
    test["reverse"] = json!(0);
    test["tos"] = json!(0);
    let Some(s) = &run.summary else {
        return;
    };
    let side = || {
        json!({
            "socket": 1,
            "start": 0.0,
            "end": s.seconds,
            "seconds": s.seconds,
            "bytes": s.bytes,
            "bits_per_second": s.mbps() * 1e6,
            "retransmits": s.lost_packets,
            "max_snd_cwnd": s.max_cwnd_segments.map(|c| u64::from(c) * u64::from(run.header.mtu.max(1))),
            "mean_rtt": s.srtt_ms.map(|ms| (ms * 1000.0).round() as u64),
            "min_rtt": s.min_rtt_ms.map(|ms| (ms * 1000.0).round() as u64),
            // iperf3 sets every `sender` flag to whether this host's streams send
            // (`stream_must_be_sender`), in `sum_received` and the receiver entries too.
            "sender": sender,
        })
    };
    let end = &mut doc["end"];
    end["streams"] = json!([{ "sender": side(), "receiver": side() }]);
    end["sum_sent"]["sender"] = json!(sender);
    end["sum_received"]["sender"] = json!(sender);
    let (host, remote) = if sender {
        (s.cpu_sender_pct, s.cpu_receiver_pct)
    } else {
        (s.cpu_receiver_pct, s.cpu_sender_pct)
    };
    end["cpu_utilization_percent"] = json!({
        "host_total": host,
        "host_user": cx.cpu_user_pct,
        "host_system": cx.cpu_system_pct,
        "remote_total": remote,
        // The protocol's `done` carries the peer's total only.
        "remote_user": Value::Null,
        "remote_system": Value::Null,
    });
}

/// Mark `doc` (finished by [`extend`] and [`crate::iperf_streams::extend`]) as a reverse-mode
/// run, as iperf3 `-R` writes it: `start.test_start.reverse` is 1, and every `sender` flag
/// (intervals, `end.streams`, `end.sum_sent`, `end.sum_received`) says whether this host's
/// streams sent (iperf3's `stream_must_be_sender`), so it is false on the host that asked
/// for reverse mode and true on the one that sent. `sum_sent` holds the remote sender's
/// figures and `sum_received` this host's: both come from one summary whose sending-side
/// fields the sender reported back.
pub fn mark_reverse(doc: &mut Value, local_sends: bool) {
    doc["start"]["test_start"]["reverse"] = json!(1);
    let flag = json!(local_sends);
    let set = |v: &mut Value| {
        if v.is_object() {
            v["sender"] = flag.clone();
        }
    };
    if let Some(ivs) = doc["intervals"].as_array_mut() {
        for iv in ivs {
            set(&mut iv["sum"]);
            if let Some(ss) = iv["streams"].as_array_mut() {
                for s in ss {
                    set(s);
                }
            }
        }
    }
    let end = &mut doc["end"];
    if let Some(ss) = end["streams"].as_array_mut() {
        for s in ss {
            set(&mut s["sender"]);
            set(&mut s["receiver"]);
        }
    }
    set(&mut end["sum_sent"]);
    set(&mut end["sum_received"]);
}

/// `Tue, 01 Dec 2026 13:44:02 GMT`, as iperf3's `start.timestamp.time`.
fn http_date(unix: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix / 86_400;
    let rem = unix % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's days_from_civil, inverted).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_iperf3s() {
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        // 2024-02-29 12:34:56 UTC, a leap day.
        assert_eq!(http_date(1_709_210_096), "Thu, 29 Feb 2024 12:34:56 GMT");
        assert_eq!(http_date(1_796_132_642), "Tue, 01 Dec 2026 13:44:02 GMT");
    }
}
