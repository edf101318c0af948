//! The compact form of the [`crate::nuttcp`] lines, for a terminal narrower than the full
//! lines (100 columns): the figures a nuttcp user reads first (MB, seconds, Mbps, lost
//! packets, cwnd and the binding limit) in columns named once by a heading, every line
//! within 60 columns. Smoothed RTT, the verbose columns and
//! decimals beyond the second go.
//!
//! Every line starts with a five-column slot (`[SUM]`, `[  1]` or blank), so that the
//! columns of stream, sum and single-stream lines line up under the heading.

use crate::{Interval, Summary, MIB};

/// The slot before the figures: `prefix` (`[SUM]`, `[  1]`) or five spaces.
fn slot(prefix: Option<&str>) -> String {
    format!("{:<5}", prefix.unwrap_or_default())
}

/// MB, seconds and Mbps in three columns (24 characters).
fn rate_columns(bytes: u64, seconds: f64) -> String {
    format!(
        "{:9.2}{:6.2}{:9.2}",
        bytes as f64 / MIB,
        seconds,
        crate::mbps(bytes, seconds)
    )
}

/// The heading over the sender's compact interval lines.
pub fn sender_heading() -> String {
    format!(
        "{:5}{:>9}{:>6}{:>9}{:>6}{:>7}",
        "", "MB", "s", "Mbps", "lost", "cwnd"
    )
}

/// The heading over the receiver's compact interval lines.
pub fn receiver_heading() -> String {
    format!(
        "{:5}{:>9}{:>6}{:>9}{:>11}",
        "", "MB", "s", "Mbps", "srtt ms"
    )
}

/// A stream's share (`[  1]`) or any rate alone, in the heading's first three columns.
pub fn rate_line(prefix: Option<&str>, bytes: u64, seconds: f64) -> String {
    format!("{}{}", slot(prefix), rate_columns(bytes, seconds))
}

/// The sender's compact interval line: rate columns, lost packets, cwnd in packets and the
/// binding limit (`[cwnd]`, `[window]`).
pub fn sender_line(prefix: Option<&str>, iv: &Interval) -> String {
    let mut s = rate_line(prefix, iv.bytes, iv.seconds());
    s.push_str(&format!("{:6}", iv.lost_packets));
    match iv.cwnd_segments {
        Some(seg) => s.push_str(&format!("{seg:7}")),
        None => s.push_str(&format!("{:7}", "-")),
    }
    s.push_str(&crate::nuttcp::limit_flag(iv).replacen("  ", " ", 1));
    s
}

/// The receiver's compact interval line: rate columns and its smoothed RTT estimate.
pub fn receiver_line(prefix: Option<&str>, iv: &Interval) -> String {
    let mut s = rate_line(prefix, iv.bytes, iv.seconds());
    if let Some(r) = iv.srtt_ms {
        s.push_str(&format!("{r:11.3}"));
    }
    s
}

/// The compact summary: rate columns, then each figure named on the line (it may be printed
/// without a heading above it): lost packets, `%TX`, `%RX`, `INVALID`.
pub fn summary_line(prefix: Option<&str>, sum: &Summary) -> String {
    let mut s = rate_line(prefix, sum.bytes, sum.seconds);
    s.push_str(&format!(" {} lost", sum.lost_packets));
    let moved = sum.bytes > 0;
    if let Some(tx) = sum.cpu_sender_pct.filter(|_| moved) {
        s.push_str(&format!(" {tx:.0}%TX"));
    }
    if let Some(rx) = sum.cpu_receiver_pct.filter(|_| moved) {
        s.push_str(&format!(" {rx:.0}%RX"));
    }
    if !sum.valid {
        s.push_str(" INVALID");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy_interval() -> Interval {
        Interval {
            start_s: 0.0,
            end_s: 1.0,
            // 10 Gbit/s for a second, a loss burst and a large window: the widest figures a
            // 10 GigE run prints.
            bytes: 1_192_092_896,
            lost_packets: 12_345,
            cwnd_segments: Some(123_456),
            srtt_ms: Some(180.25),
            flow_control_limited: true,
            ..Interval::default()
        }
    }

    #[test]
    fn compact_lines_sit_under_their_heading_within_60_columns() {
        let iv = busy_interval();
        let heading = sender_heading();
        let line = sender_line(Some("[SUM]"), &iv);
        assert_eq!(heading, "            MB     s     Mbps  lost   cwnd");
        assert_eq!(line, "[SUM]  1136.87  1.00  9536.74 12345 123456 [window]");
        assert!(line.len() <= 60, "{}", line.len());
        // Each heading word ends where its column does.
        for word in ["MB", "Mbps", "lost", "cwnd"] {
            let end = heading.find(word).expect("word") + word.len();
            assert!(line.as_bytes()[end - 1].is_ascii_digit(), "{word}");
        }
        assert_eq!(
            rate_line(Some("[  1]"), 1 << 20, 1.0),
            "[  1]     1.00  1.00     8.39"
        );
        let recv = receiver_line(None, &iv);
        assert_eq!(
            receiver_heading(),
            "            MB     s     Mbps    srtt ms"
        );
        assert_eq!(recv, "       1136.87  1.00  9536.74    180.250");
    }

    #[test]
    fn the_compact_summary_names_its_figures_and_fits_60_columns() {
        let sum = Summary {
            bytes: 11_920_928_960,
            seconds: 10.0,
            lost_packets: 1_234,
            cpu_sender_pct: Some(100.0),
            cpu_receiver_pct: Some(87.4),
            srtt_ms: Some(80.8),
            valid: false,
            ..Summary::default()
        };
        let line = summary_line(Some("[SUM]"), &sum);
        assert_eq!(
            line,
            "[SUM] 11368.68 10.00  9536.74 1234 lost 100%TX 87%RX INVALID"
        );
        assert_eq!(line.len(), 60);
    }
}
