//! Metric definitions, in one place, applied by the same rules to the thread's nuttcp rows
//! and to hare's interval records.
//!
//! - **Time to 90%**: the end time of the first interval whose rate reaches 90% of the path's
//!   capacity. The capacity is, for the thread's rows, the thread's observed plateau on that
//!   path ([`crate::thread_data::ThreadData::capacity_mbps`]); for hare, the simulated link's
//!   payload rate ([`payload_capacity_mbps`]). `None` when no interval reaches it.
//! - **Losses in the first 10 s**: lost packets (QUIC) or retransmissions (TCP) summed over
//!   the intervals that end by 10 s.
//! - **Average Mbit/s**: all payload bytes over the run's duration, as nuttcp's closing line
//!   (the thread's own summary figure; hare's summary record).
//! - **Plateau**: the median of the last three intervals.

use hare_report::Interval;

/// The fraction of capacity that counts as "full rate".
pub const FULL_RATE_FRACTION: f64 = 0.9;

/// Bytes of QUIC overhead per packet counted against the payload: short header (1 byte of
/// flags, an 8-byte connection id as quinn uses by default, up to 4 bytes of packet number),
/// the 16-byte AEAD tag and a STREAM frame header (type, 1-byte stream id, 8-byte offset,
/// 2-byte length) — RFC 9000 sections 17.3.1 and 19.8, RFC 9001 section 5.3.
pub const QUIC_OVERHEAD_BYTES: u64 = 1 + 8 + 4 + 16 + 1 + 1 + 8 + 2;

/// One interval in the common form the metrics use.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// Start, seconds since the run started.
    pub start_s: f64,
    /// End, seconds since the run started.
    pub end_s: f64,
    /// Rate over the interval in Mbit/s (10^6 bit/s).
    pub mbps: f64,
    /// Lost / retransmitted packets in the interval, `None` when not reported.
    pub lost: Option<u64>,
}

impl From<&Interval> for Row {
    fn from(iv: &Interval) -> Self {
        Row {
            start_s: iv.start_s,
            end_s: iv.end_s,
            mbps: iv.mbps(),
            lost: Some(iv.lost_packets),
        }
    }
}

/// hare's intervals as metric rows.
pub fn rows_of(intervals: &[Interval]) -> Vec<Row> {
    intervals.iter().map(Row::from).collect()
}

/// End time of the first row whose rate is at least `fraction * capacity_mbps`.
pub fn time_to_fraction(rows: &[Row], capacity_mbps: f64, fraction: f64) -> Option<f64> {
    if capacity_mbps <= 0.0 {
        return None;
    }
    let target = capacity_mbps * fraction;
    rows.iter().find(|r| r.mbps >= target).map(|r| r.end_s)
}

/// [`time_to_fraction`] at [`FULL_RATE_FRACTION`].
pub fn time_to_90pct(rows: &[Row], capacity_mbps: f64) -> Option<f64> {
    time_to_fraction(rows, capacity_mbps, FULL_RATE_FRACTION)
}

/// The rows that end by `horizon_s`, with 10 ms of slack for nuttcp's 1.01 s rows.
pub fn rows_within(rows: &[Row], horizon_s: f64) -> Vec<Row> {
    rows.iter()
        .filter(|r| r.end_s <= horizon_s + 0.011)
        .copied()
        .collect()
}

/// Sum of losses over the rows that end by `horizon_s` ([`rows_within`]). `None` if one of
/// those rows has no loss count, or there are no such rows.
pub fn losses_within(rows: &[Row], horizon_s: f64) -> Option<u64> {
    let inside = rows_within(rows, horizon_s);
    if inside.is_empty() {
        return None;
    }
    inside.iter().map(|r| r.lost).sum()
}

/// Time-weighted average rate of the rows (equals bytes over time for interval records).
pub fn average_mbps(rows: &[Row]) -> f64 {
    let secs: f64 = rows.iter().map(|r| r.end_s - r.start_s).sum();
    if secs <= 0.0 {
        return 0.0;
    }
    rows.iter()
        .map(|r| r.mbps * (r.end_s - r.start_s))
        .sum::<f64>()
        / secs
}

/// Median of the last three rows' rates (fewer when the run is shorter); 0 for none.
pub fn plateau_mbps(rows: &[Row]) -> f64 {
    let tail = &rows[rows.len().saturating_sub(3)..];
    let mut v: Vec<f64> = tail.iter().map(|r| r.mbps).collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Application payload rate in Mbit/s of a bottleneck of `rate_bps` (counting IP bytes) when
/// every packet carries a `udp_payload`-byte QUIC datagram plus `ip_udp_header` bytes of IP
/// and UDP header: `rate * (udp_payload - QUIC overhead) / (udp_payload + ip_udp_header)`.
pub fn payload_capacity_mbps(rate_bps: u64, udp_payload: u64, ip_udp_header: u64) -> f64 {
    let wire = (udp_payload + ip_udp_header) as f64;
    let data = udp_payload.saturating_sub(QUIC_OVERHEAD_BYTES) as f64;
    rate_bps as f64 / 1e6 * data / wire
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(rates: &[f64], lost: &[Option<u64>]) -> Vec<Row> {
        rates
            .iter()
            .zip(lost)
            .enumerate()
            .map(|(i, (&mbps, &lost))| Row {
                start_s: i as f64,
                end_s: i as f64 + 1.0,
                mbps,
                lost,
            })
            .collect()
    }

    #[test]
    fn time_to_90_is_the_end_of_the_first_interval_at_90_percent() {
        let r = rows(&[100.0, 500.0, 899.0, 900.0, 1000.0], &[Some(0); 5]);
        assert_eq!(time_to_90pct(&r, 1000.0), Some(4.0));
        assert_eq!(time_to_90pct(&r, 1200.0), None);
        assert_eq!(time_to_90pct(&r, 0.0), None);
        assert_eq!(time_to_fraction(&r, 1000.0, 0.5), Some(2.0));
    }

    #[test]
    fn losses_in_first_ten_seconds() {
        let mut lost = vec![Some(0); 12];
        lost[1] = Some(414);
        lost[7] = Some(21);
        lost[10] = Some(5); // ends at 11 s: outside
        let r = rows(&[1.0; 12], &lost);
        assert_eq!(losses_within(&r, 10.0), Some(435));
        let mut unknown = lost.clone();
        unknown[3] = None;
        assert_eq!(losses_within(&rows(&[1.0; 12], &unknown), 10.0), None);
        assert_eq!(losses_within(&[], 10.0), None);
    }

    #[test]
    fn averages_and_plateau() {
        let r = rows(&[100.0, 200.0, 600.0], &[None; 3]);
        assert_eq!(average_mbps(&r), 300.0);
        assert_eq!(plateau_mbps(&r), 200.0);
        assert_eq!(plateau_mbps(&r[..2]), 150.0);
        assert_eq!(plateau_mbps(&[]), 0.0);
        let uneven = vec![
            Row {
                start_s: 0.0,
                end_s: 1.0,
                mbps: 100.0,
                lost: None,
            },
            Row {
                start_s: 1.0,
                end_s: 4.0,
                mbps: 500.0,
                lost: None,
            },
        ];
        assert_eq!(average_mbps(&uneven), 400.0);
    }

    #[test]
    fn payload_capacity() {
        // 8952-byte UDP payload + 48 bytes IPv6/UDP = 9000-byte packets; 41 bytes of QUIC.
        assert_eq!(QUIC_OVERHEAD_BYTES, 41);
        let c = payload_capacity_mbps(9_000_000_000, 8952, 48);
        assert!((c - 8911.0).abs() < 1e-9, "{c}");
    }
}
