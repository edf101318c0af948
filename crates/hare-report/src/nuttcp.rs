//! nuttcp-style text lines, the lingua franca of the netdev threads.
//!
//! nuttcp 5.x/6.x prints `%10.4f MB / %6.2f sec = %9.4f Mbps` per interval, then
//! `%d retrans` with `-i`; hare appends its own columns after those so that a line still
//! reads like the thread's.

use crate::{Interval, Summary, MIB};

/// The nuttcp part of an interval line: `  867.3289 MB /   1.00 sec = 7275.9510 Mbps`.
pub fn rate_part(bytes: u64, seconds: f64) -> String {
    format!(
        "{:10.4} MB / {:6.2} sec = {:9.4} Mbps",
        bytes as f64 / MIB,
        seconds,
        crate::mbps(bytes, seconds)
    )
}

/// The limit that held the sender back in the interval, as a flag at the end of its line:
/// `[window]` when the peer's flow-control window did (raise `-w`), else `[cwnd]` when the
/// congestion window did; nothing when neither was reached (the application, `-R`, or the
/// path's pacing). An interval that saw both says `[window]`, the one a user can change.
pub fn limit_flag(iv: &Interval) -> &'static str {
    if iv.flow_control_limited {
        "  [window]"
    } else if iv.cwnd_limited == Some(true) {
        "  [cwnd]"
    } else {
        ""
    }
}

/// A sender interval line that fits 100 columns even with a `[SUM]` prefix: the nuttcp
/// part, lost packets, cwnd in packets, smoothed RTT and the binding limit,
/// `  867.3281 MB /   1.00 sec = 7275.6756 Mbps    0 lost  cwnd   4864  srtt   1.204 ms  [cwnd]`.
/// [`interval_line_verbose`] adds cwnd in bytes, ssthresh and the minimum RTT (`-v`).
pub fn interval_line(iv: &Interval) -> String {
    let mut s = rate_part(iv.bytes, iv.seconds());
    s.push_str(&format!(" {:4} lost", iv.lost_packets));
    if let Some(seg) = iv.cwnd_segments {
        s.push_str(&format!("  cwnd {seg:>6}"));
    }
    if let Some(r) = iv.srtt_ms {
        s.push_str(&format!("  srtt {r:7.3} ms"));
    }
    s.push_str(limit_flag(iv));
    s
}

/// A full sender interval line (`-v`): the nuttcp part, lost packets, cwnd (bytes and
/// segments), ssthresh and RTTs, the columns that are known, and the binding limit.
pub fn interval_line_verbose(iv: &Interval) -> String {
    let mut s = rate_part(iv.bytes, iv.seconds());
    s.push_str(&format!(" {:5} lost", iv.lost_packets));
    if let (Some(b), Some(seg)) = (iv.cwnd_bytes, iv.cwnd_segments) {
        s.push_str(&format!("  cwnd {:>11} B {:>7} seg", b, seg));
    }
    match iv.ssthresh_segments {
        Some(t) => s.push_str(&format!("  ssthresh {:>7}", t)),
        None if iv.cwnd_bytes.is_some() => s.push_str("  ssthresh     inf"),
        None => {}
    }
    if let Some(r) = iv.srtt_ms {
        s.push_str(&format!("  srtt {:8.3} ms", r));
    }
    if let Some(r) = iv.min_rtt_ms {
        s.push_str(&format!("  min {:8.3} ms", r));
    }
    s.push_str(limit_flag(iv));
    s
}

/// The summary line: nuttcp part, %CPU of each side when known, lost packets, RTT.
///
/// A job that moved no bytes (`-n 0`) shows no CPU figures: over its few milliseconds the
/// process's start-up work reads as a busy core (`99 %TX 97 %RX`), which says nothing about
/// the cost of a transfer.
pub fn summary_line(sum: &Summary) -> String {
    let mut s = rate_part(sum.bytes, sum.seconds);
    let moved = sum.bytes > 0;
    if let Some(tx) = sum.cpu_sender_pct.filter(|_| moved) {
        s.push_str(&format!(" {:3.0} %TX", tx));
    }
    if let Some(rx) = sum.cpu_receiver_pct.filter(|_| moved) {
        s.push_str(&format!(" {:3.0} %RX", rx));
    }
    s.push_str(&format!(" {} lost", sum.lost_packets));
    if let Some(r) = sum.srtt_ms {
        s.push_str(&format!(" {:.2} msRTT", r));
    }
    if !sum.valid {
        s.push_str(" INVALID");
    }
    s
}
