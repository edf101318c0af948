//! Interval accounting that is true by construction.
//!
//! Each side counts what it actually moved in each of its own intervals:
//!
//! - the receiver counts the payload bytes that arrived (in any order: QUIC data is read
//!   unordered, so a byte counts when its packet is processed, not when a gap before it is
//!   filled) between two of its own ticks ([`ArrivalIntervals`]), prints that line and sends it
//!   to the sender as [`crate::protocol::ToSender::Interval`];
//! - the QUIC sender prints the receiver's interval `k` beside its own congestion sample taken
//!   at its tick `k` ([`Pairing`]): the bytes are keyed by the interval they arrived in, never
//!   by when the message carrying them reached the sender;
//! - the kernel-TCP sender counts what the receiver acknowledged (cumulatively or by SACK) in
//!   its own interval, from `TCP_INFO` (see `sender/probe.rs`).
//!
//! So no interval can hold more than the path carried in it (the receiver's ticks may be late
//! under load, but then the interval is longer by as much), and the intervals of either side
//! add up exactly to the receiver's total.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use hare_report::Interval;

use crate::protocol::ToSender;
use crate::sampler::Sample;

/// Most receiver intervals held while the sender's matching tick has not come (about an
/// hour of 1-s intervals; more is a misbehaving peer and is dropped).
const MAX_HELD: usize = 4096;

/// The report interval of a job: the sender's (`-i`, as nuttcp's server reports on its
/// client's interval) when it asked for one in 0.1 ..= 3600 s, else the receiver's own.
pub fn job_interval(asked_s: Option<f64>, own: Duration) -> Duration {
    match asked_s {
        Some(s) if (0.1..=3600.0).contains(&s) => Duration::from_secs_f64(s),
        _ => own,
    }
}

/// Lets the data that reached the socket before a tick be counted in that interval: on the
/// current-thread runtime, each yield lets the I/O driver and the tasks it wakes run once
/// (endpoint, connection, stream readers), so that packets queued in the socket while the
/// tick was due are read before the count is taken.
pub async fn settle() {
    for _ in 0..4 {
        tokio::task::yield_now().await;
    }
}

/// The receiver's intervals: bytes that arrived between two ticks of its own clock.
#[derive(Debug, Clone)]
pub struct ArrivalIntervals {
    t0: Instant,
    index: u64,
    last_s: f64,
    last_bytes: u64,
}

/// One closed receiver interval, with its number (1, 2, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct Numbered {
    /// 1 for the first interval.
    pub index: u64,
    /// The interval.
    pub interval: Interval,
}

impl Numbered {
    /// The control message that tells the sender about this interval.
    pub fn message(&self) -> ToSender {
        ToSender::Interval {
            index: self.index,
            start_s: self.interval.start_s,
            end_s: self.interval.end_s,
            bytes: self.interval.bytes,
        }
    }
}

impl ArrivalIntervals {
    /// Intervals counted from `t0` (the receiver's welcome).
    pub fn new(t0: Instant) -> Self {
        Self {
            t0,
            index: 0,
            last_s: 0.0,
            last_bytes: 0,
        }
    }

    /// Close the interval that ends now; `bytes` is the cumulative payload received.
    pub fn close(&mut self, bytes: u64, srtt_ms: Option<f64>) -> Numbered {
        self.close_at(self.t0.elapsed().as_secs_f64(), bytes, srtt_ms)
    }

    fn close_at(&mut self, now_s: f64, bytes: u64, srtt_ms: Option<f64>) -> Numbered {
        self.index += 1;
        let bytes = bytes.max(self.last_bytes);
        let interval = Interval {
            start_s: self.last_s,
            end_s: now_s.max(self.last_s),
            bytes: bytes - self.last_bytes,
            srtt_ms,
            ..Interval::default()
        };
        self.last_s = interval.end_s;
        self.last_bytes = bytes;
        Numbered {
            index: self.index,
            interval,
        }
    }

    /// Bytes counted into closed intervals so far.
    pub fn counted(&self) -> u64 {
        self.last_bytes
    }

    /// The last, partial interval at the job's end (`total` is the final count); `None` when
    /// no time and no bytes are left.
    pub fn finish(&mut self, end_s: f64, total: u64) -> Option<Interval> {
        if total <= self.last_bytes {
            // Nothing arrived after the last tick: no line (nuttcp prints none either).
            return None;
        }
        Some(self.close_at(end_s, total, None).interval)
    }
}

/// The sender's lines of a QUIC job: the receiver's interval `k` with the sender's own
/// congestion sample of its tick `k`, printed once both are in, in order.
#[derive(Debug, Default)]
pub struct Pairing {
    samples: VecDeque<(u64, Sample)>,
    remote: BTreeMap<u64, Interval>,
    next: u64,
    printed_bytes: u64,
    last_end_s: f64,
}

impl Pairing {
    /// An empty pairing; the first interval is number 1.
    pub fn new() -> Self {
        Self {
            next: 1,
            ..Self::default()
        }
    }

    /// The sender's sample of its tick `index`; returns the lines now complete.
    pub fn sample(&mut self, index: u64, sample: Sample) -> Vec<Interval> {
        self.samples.push_back((index, sample));
        self.drain()
    }

    /// The receiver's interval `index`; returns the lines now complete. Repeated or
    /// implausibly far-ahead intervals are ignored.
    pub fn remote(&mut self, index: u64, start_s: f64, end_s: f64, bytes: u64) -> Vec<Interval> {
        if index >= self.next && self.remote.len() < MAX_HELD {
            self.remote.entry(index).or_insert(Interval {
                start_s,
                end_s,
                bytes,
                ..Interval::default()
            });
        }
        self.drain()
    }

    fn drain(&mut self) -> Vec<Interval> {
        let mut out = Vec::new();
        // Both sides number their ticks 1, 2, ... without gaps (tokio's `Delay` behaviour
        // postpones a late tick, it never skips one).
        while self.samples.front().is_some_and(|(i, _)| *i == self.next) {
            let Some(r) = self.remote.remove(&self.next) else {
                break;
            };
            let Some((_, sample)) = self.samples.pop_front() else {
                break;
            };
            out.push(self.line(&sample, r.start_s.max(self.last_end_s), r.end_s, r.bytes));
            self.next += 1;
        }
        out
    }

    fn line(&mut self, sample: &Sample, start_s: f64, end_s: f64, bytes: u64) -> Interval {
        self.printed_bytes += bytes;
        self.last_end_s = end_s.max(start_s);
        sample.interval(start_s, self.last_end_s, bytes)
    }

    /// Bytes printed so far.
    pub fn printed(&self) -> u64 {
        self.printed_bytes
    }

    /// The remaining lines at the end: receiver intervals that came before the sender's
    /// matching tick are printed with `last` (the final sample, into which the counts of
    /// every unmatched sample fold), then one line with what is left of `total` up to `end_s`
    /// (the receiver's end of the job). Afterwards the lines add up to `total` exactly.
    pub fn finish(&mut self, mut last: Sample, total: u64, end_s: f64) -> Vec<Interval> {
        for (_, s) in self.samples.drain(..) {
            fold(&mut last, &s);
        }
        let mut out = Vec::new();
        let remote = std::mem::take(&mut self.remote);
        for (_, r) in remote {
            let bytes = r.bytes.min(total.saturating_sub(self.printed_bytes));
            let mut s = last.clone();
            if out.is_empty() {
                // Counts go with the first of these lines only, so that they add up.
                last.lost = 0;
                last.sent = 0;
                last.flow_limited = false;
            } else {
                s.lost = 0;
                s.sent = 0;
                s.flow_limited = false;
            }
            out.push(self.line(&s, r.start_s.max(self.last_end_s), r.end_s, bytes));
        }
        let rest = total.saturating_sub(self.printed_bytes);
        if rest > 0 || last.lost > 0 {
            let start = self.last_end_s;
            out.push(self.line(&last, start, end_s.max(start), rest));
        }
        out
    }
}

/// The sender's interval lines: the receiver's counts (QUIC) or what the peer acknowledged
/// in the sender's own intervals (kernel TCP, [`Sample::delivered`]).
#[derive(Debug)]
pub enum SenderLines {
    /// Receiver interval `k` beside the sender's sample `k`.
    Remote(Pairing),
    /// Acknowledged payload between two of the sender's ticks.
    Local {
        /// End of the previous line, sender seconds.
        last_s: f64,
        /// Acknowledged payload at the previous line.
        last_bytes: u64,
    },
}

impl SenderLines {
    /// Lines from the receiver's counts.
    pub fn remote() -> Self {
        Self::Remote(Pairing::new())
    }

    /// Lines from the sender's acknowledged counts.
    pub fn local() -> Self {
        Self::Local {
            last_s: 0.0,
            last_bytes: 0,
        }
    }

    /// The sender's tick `index` at `now_s` (sender seconds) with its sample.
    pub fn tick(&mut self, index: u64, now_s: f64, sample: Sample) -> Vec<Interval> {
        match self {
            Self::Remote(p) => p.sample(index, sample),
            Self::Local { last_s, last_bytes } => {
                let acked = sample.delivered.unwrap_or(0).max(*last_bytes);
                let iv = sample.interval(*last_s, now_s.max(*last_s), acked - *last_bytes);
                (*last_s, *last_bytes) = (iv.end_s, acked);
                vec![iv]
            }
        }
    }

    /// A receiver interval (ignored when the sender counts for itself).
    pub fn received(&mut self, index: u64, start_s: f64, end_s: f64, bytes: u64) -> Vec<Interval> {
        match self {
            Self::Remote(p) => p.remote(index, start_s, end_s, bytes),
            Self::Local { .. } => Vec::new(),
        }
    }

    /// Bytes printed so far.
    pub fn printed(&self) -> u64 {
        match self {
            Self::Remote(p) => p.printed(),
            Self::Local { last_bytes, .. } => *last_bytes,
        }
    }

    /// The last lines: they bring the sum to `total` (the receiver's count). `remote_end_s`
    /// is the receiver's end of the job (its clock), `local_end_s` the sender's.
    pub fn finish(
        &mut self,
        last: Sample,
        total: u64,
        remote_end_s: Option<f64>,
        local_end_s: f64,
    ) -> Vec<Interval> {
        match self {
            Self::Remote(p) => p.finish(last, total, remote_end_s.unwrap_or(local_end_s)),
            Self::Local { last_s, last_bytes } => {
                let rest = total.saturating_sub(*last_bytes);
                if rest == 0 && last.lost == 0 {
                    return Vec::new();
                }
                let iv = last.interval(*last_s, local_end_s.max(*last_s), rest);
                (*last_s, *last_bytes) = (iv.end_s, *last_bytes + rest);
                vec![iv]
            }
        }
    }
}

/// Adds the per-interval counts of `from` into `to` (its state is `to`'s, the later one).
pub fn fold(to: &mut Sample, from: &Sample) {
    to.lost += from.lost;
    to.sent += from.sent;
    to.flow_limited |= from.flow_limited;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(lost: u64) -> Sample {
        Sample {
            lost,
            sent: 10,
            cwnd_segments: 7,
            ..Sample::default()
        }
    }

    #[test]
    fn tcp_lines_count_what_was_acknowledged_in_each_interval() {
        let mut l = SenderLines::local();
        let at = |d: u64| Sample {
            delivered: Some(d),
            ..Sample::default()
        };
        assert_eq!(l.tick(1, 1.0, at(1000))[0].bytes, 1000);
        // SACK state can shrink the estimate a little (a reneging receiver): never negative.
        assert_eq!(l.tick(2, 2.0, at(900))[0].bytes, 0);
        assert_eq!(l.tick(3, 3.0, at(2500))[0].bytes, 1500);
        assert!(l.received(1, 0.0, 1.0, 7).is_empty());
        let end = l.finish(at(2500), 2600, Some(9.0), 3.2);
        assert_eq!(
            (end[0].start_s, end[0].end_s, end[0].bytes),
            (3.0, 3.2, 100)
        );
        assert_eq!(l.printed(), 2600);
    }

    #[test]
    fn receiver_intervals_count_each_byte_once() {
        let mut a = ArrivalIntervals::new(Instant::now());
        let one = a.close_at(1.0, 1000, Some(80.0));
        assert_eq!(one.index, 1);
        assert_eq!((one.interval.start_s, one.interval.end_s), (0.0, 1.0));
        assert_eq!(one.interval.bytes, 1000);
        let two = a.close_at(2.1, 1500, None);
        assert_eq!((two.index, two.interval.bytes), (2, 500));
        assert_eq!(two.interval.start_s, 1.0);
        let last = a.finish(2.5, 1600).expect("partial interval");
        assert_eq!((last.start_s, last.end_s, last.bytes), (2.1, 2.5, 100));
        assert_eq!(a.finish(2.7, 1600), None);
        assert_eq!(a.counted(), 1600);
    }

    #[test]
    fn lines_are_keyed_by_interval_not_by_arrival_order() {
        let mut p = Pairing::new();
        // The receiver's interval 1 comes before the sender's tick 1: held.
        assert!(p.remote(1, 0.0, 1.0, 100).is_empty());
        // Interval 2 also early, out of the blue.
        assert!(p.remote(2, 1.0, 2.0, 200).is_empty());
        let got = p.sample(1, sample(3));
        assert_eq!(got.len(), 1);
        assert_eq!((got[0].bytes, got[0].lost_packets), (100, 3));
        let got = p.sample(2, sample(0));
        assert_eq!(
            (got[0].start_s, got[0].end_s, got[0].bytes),
            (1.0, 2.0, 200)
        );
        // Tick 3 before the receiver's interval 3.
        assert!(p.sample(3, sample(1)).is_empty());
        let got = p.remote(3, 2.0, 3.0, 300);
        assert_eq!((got[0].bytes, got[0].lost_packets), (300, 1));
        // A repeated interval is ignored.
        assert!(p.remote(3, 2.0, 3.0, 300).is_empty());
        assert_eq!(p.printed(), 600);
    }

    #[test]
    fn the_end_folds_what_is_left_and_adds_up_to_the_total() {
        let mut p = Pairing::new();
        p.remote(1, 0.0, 1.0, 100);
        p.sample(1, sample(0));
        // Sender ticks 2 and 3 without receiver intervals (the job ended), and one receiver
        // interval 2 that arrives too late for a tick.
        p.sample(2, sample(2));
        p.sample(3, sample(5));
        let last = p.finish(sample(1), 1000, 2.4);
        assert_eq!(last.len(), 1);
        assert_eq!((last[0].start_s, last[0].end_s), (1.0, 2.4));
        assert_eq!(last[0].bytes, 900);
        assert_eq!(last[0].lost_packets, 8);
        assert_eq!(last[0].sent_packets, Some(30));

        let mut p = Pairing::new();
        p.remote(1, 0.0, 1.0, 100);
        p.remote(2, 1.0, 2.0, 200);
        let out = p.finish(sample(4), 350, 2.2);
        let bytes: Vec<u64> = out.iter().map(|i| i.bytes).collect();
        assert_eq!(bytes, vec![100, 200, 50]);
        let lost: u64 = out.iter().map(|i| i.lost_packets).sum();
        assert_eq!(lost, 4);
    }
}
