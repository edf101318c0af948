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

/// One report line: an interval of the whole job and, for a bulk job of several streams, the
/// same interval's bytes by stream (stream number order), which add up to its bytes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Line {
    /// The whole job's interval (`[SUM]` when there are several streams).
    pub interval: Interval,
    /// Bytes by stream; empty when the job is not counted by stream.
    pub streams: Vec<u64>,
}

impl Line {}

/// What each stream moved since `last`, with `last` brought to `now` (a count that went
/// backwards counts nothing).
fn deltas(last: &mut Vec<u64>, now: &[u64]) -> Vec<u64> {
    if last.len() < now.len() {
        last.resize(now.len(), 0);
    }
    now.iter()
        .zip(last.iter_mut())
        .map(|(&n, l)| {
            let d = n.saturating_sub(*l);
            *l += d;
            d
        })
        .collect()
}

/// The receiver's intervals: bytes that arrived between two ticks of its own clock.
#[derive(Debug, Clone)]
pub struct ArrivalIntervals {
    t0: Instant,
    index: u64,
    last_s: f64,
    last_bytes: u64,
    last_streams: Vec<u64>,
}

/// One closed receiver interval, with its number (1, 2, ...).
#[derive(Debug, Clone, PartialEq)]
pub struct Numbered {
    /// 1 for the first interval.
    pub index: u64,
    /// The interval.
    pub interval: Interval,
    /// Its bytes by stream (bulk jobs; they add up to the interval's bytes).
    pub streams: Vec<u64>,
}

impl Numbered {
    /// The control message that tells the sender about this interval.
    pub fn message(&self) -> ToSender {
        ToSender::Interval {
            index: self.index,
            start_s: self.interval.start_s,
            end_s: self.interval.end_s,
            bytes: self.interval.bytes,
            streams: self.streams.clone(),
        }
    }

    /// The report line of this interval.
    pub fn line(&self) -> Line {
        Line {
            interval: self.interval.clone(),
            streams: self.streams.clone(),
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
            last_streams: Vec::new(),
        }
    }

    /// Close the interval that ends now; `bytes` is the cumulative payload received and
    /// `streams` the same by stream (empty when not counted by stream). When streams are
    /// given, the interval's bytes are the sum of theirs, so the two never disagree.
    pub fn close(&mut self, bytes: u64, streams: &[u64], srtt_ms: Option<f64>) -> Numbered {
        self.close_at(self.t0.elapsed().as_secs_f64(), bytes, streams, srtt_ms)
    }

    fn close_at(
        &mut self,
        now_s: f64,
        bytes: u64,
        streams: &[u64],
        srtt_ms: Option<f64>,
    ) -> Numbered {
        self.index += 1;
        let by_stream = deltas(&mut self.last_streams, streams);
        let moved = if streams.is_empty() {
            bytes.saturating_sub(self.last_bytes)
        } else {
            by_stream.iter().sum()
        };
        let interval = Interval {
            start_s: self.last_s,
            end_s: now_s.max(self.last_s),
            bytes: moved,
            srtt_ms,
            ..Interval::default()
        };
        self.last_s = interval.end_s;
        self.last_bytes += moved;
        Numbered {
            index: self.index,
            interval,
            streams: by_stream,
        }
    }

    #[cfg(test)]
    /// Bytes counted into closed intervals so far.
    pub fn counted(&self) -> u64 {
        self.last_bytes
    }

    /// The last, partial interval at the job's end (`total` is the final count, `streams`
    /// the same by stream); `None` when no bytes are left.
    pub fn finish(&mut self, end_s: f64, total: u64, streams: &[u64]) -> Option<Line> {
        if total <= self.last_bytes {
            // Nothing arrived after the last tick: no line (nuttcp prints none either).
            return None;
        }
        Some(self.close_at(end_s, total, streams, None).line())
    }
}

/// One receiver interval held until the sender's matching tick.
#[derive(Debug, Clone)]
struct Held {
    start_s: f64,
    end_s: f64,
    bytes: u64,
    streams: Vec<u64>,
}

/// The sender's lines of a QUIC job: the receiver's interval `k` with the sender's own
/// congestion sample of its tick `k`, printed once both are in, in order.
#[derive(Debug, Default)]
pub struct Pairing {
    samples: VecDeque<(u64, Sample)>,
    remote: BTreeMap<u64, Held>,
    next: u64,
    printed_bytes: u64,
    printed_streams: Vec<u64>,
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
    pub fn sample(&mut self, index: u64, sample: Sample) -> Vec<Line> {
        self.samples.push_back((index, sample));
        self.drain()
    }

    /// The receiver's interval `index` (its bytes, and the same by stream when counted so);
    /// returns the lines now complete. Repeated or implausibly far-ahead intervals are
    /// ignored.
    pub fn remote(&mut self, index: u64, r: Remote) -> Vec<Line> {
        if index >= self.next && self.remote.len() < MAX_HELD {
            self.remote.entry(index).or_insert(Held {
                start_s: r.start_s,
                end_s: r.end_s,
                bytes: r.bytes,
                streams: r.streams,
            });
        }
        self.drain()
    }

    fn drain(&mut self) -> Vec<Line> {
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
            let start = r.start_s.max(self.last_end_s);
            out.push(self.line(&sample, start, r.end_s, r.bytes, &r.streams));
            self.next += 1;
        }
        out
    }

    /// A line of `bytes` (the sum of `streams` when they are given).
    fn line(
        &mut self,
        sample: &Sample,
        start_s: f64,
        end_s: f64,
        bytes: u64,
        streams: &[u64],
    ) -> Line {
        let bytes = if streams.is_empty() {
            bytes
        } else {
            streams.iter().sum()
        };
        self.printed_bytes += bytes;
        if self.printed_streams.len() < streams.len() {
            self.printed_streams.resize(streams.len(), 0);
        }
        for (p, s) in self.printed_streams.iter_mut().zip(streams) {
            *p += s;
        }
        self.last_end_s = end_s.max(start_s);
        Line {
            interval: sample.interval(start_s, self.last_end_s, bytes),
            streams: streams.to_vec(),
        }
    }

    /// Bytes printed so far.
    pub fn printed(&self) -> u64 {
        self.printed_bytes
    }

    /// What is left of the receiver's final counts: of `total`, and of `streams` (its count
    /// by stream, empty when not counted so), after what was printed.
    fn left(&self, total: u64, streams: &[u64]) -> (u64, Vec<u64>) {
        let by_stream: Vec<u64> = streams
            .iter()
            .enumerate()
            .map(|(i, s)| s.saturating_sub(self.printed_streams.get(i).copied().unwrap_or(0)))
            .collect();
        (total.saturating_sub(self.printed_bytes), by_stream)
    }

    /// The remaining lines at the end: receiver intervals that came before the sender's
    /// matching tick are printed with `last` (the final sample, into which the counts of
    /// every unmatched sample fold), then one line with what is left of the receiver's final
    /// counts up to its end of the job. Afterwards the lines add up to the totals exactly.
    pub fn finish(&mut self, mut last: Sample, end: Remote) -> Vec<Line> {
        for (_, s) in self.samples.drain(..) {
            fold(&mut last, &s);
        }
        let mut out = Vec::new();
        let remote = std::mem::take(&mut self.remote);
        for (_, r) in remote {
            let (room, room_streams) = self.left(end.bytes, &end.streams);
            let bytes = r.bytes.min(room);
            let streams: Vec<u64> = if end.streams.is_empty() {
                r.streams.clone()
            } else {
                r.streams
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (*s).min(room_streams.get(i).copied().unwrap_or(0)))
                    .collect()
            };
            let mut s = last.clone();
            if out.is_empty() {
                // Counts go with the first of these lines only, so that they add up.
                last.lost = 0;
                last.sent = 0;
                last.flow_limited = false;
                last.cwnd_limited = last.cwnd_limited.map(|_| false);
            } else {
                s.lost = 0;
                s.sent = 0;
                s.flow_limited = false;
                s.cwnd_limited = s.cwnd_limited.map(|_| false);
            }
            let start = r.start_s.max(self.last_end_s);
            out.push(self.line(&s, start, r.end_s, bytes, &streams));
        }
        let (rest, rest_streams) = self.left(end.bytes, &end.streams);
        if rest > 0 || last.lost > 0 {
            let start = self.last_end_s;
            let end_s = end.end_s.max(start);
            out.push(self.line(&last, start, end_s, rest, &rest_streams));
        }
        out
    }
}

/// A receiver interval or the receiver's final counts, as its messages carry them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Remote {
    /// Start, receiver seconds (unused for the final counts).
    pub start_s: f64,
    /// End, receiver seconds.
    pub end_s: f64,
    /// Payload bytes.
    pub bytes: u64,
    /// The same by stream (stream number order); empty when not counted so.
    pub streams: Vec<u64>,
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
        /// The same by data connection, in stream number order.
        last_streams: Vec<u64>,
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
            last_streams: Vec::new(),
        }
    }

    /// The sender's tick `index` at `now_s` (sender seconds) with its sample.
    pub fn tick(&mut self, index: u64, now_s: f64, sample: Sample) -> Vec<Line> {
        match self {
            Self::Remote(p) => p.sample(index, sample),
            Self::Local {
                last_s,
                last_bytes,
                last_streams,
            } => {
                let streams = deltas(last_streams, &sample.delivered_streams);
                let moved = if streams.is_empty() {
                    sample.delivered.unwrap_or(0).saturating_sub(*last_bytes)
                } else {
                    streams.iter().sum()
                };
                let iv = sample.interval(*last_s, now_s.max(*last_s), moved);
                (*last_s, *last_bytes) = (iv.end_s, *last_bytes + moved);
                vec![Line {
                    interval: iv,
                    streams,
                }]
            }
        }
    }

    /// A receiver interval (ignored when the sender counts for itself).
    pub fn received(&mut self, index: u64, r: Remote) -> Vec<Line> {
        match self {
            Self::Remote(p) => p.remote(index, r),
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

    /// The last lines: they bring the sums to the receiver's final counts (`end`, its end
    /// of the job on its clock when it sent them), `local_end_s` is the sender's end.
    pub fn finish(&mut self, last: Sample, end: Option<Remote>, local_end_s: f64) -> Vec<Line> {
        let end = end.unwrap_or_else(|| Remote {
            end_s: local_end_s,
            bytes: self.printed(),
            ..Remote::default()
        });
        match self {
            Self::Remote(p) => p.finish(last, end),
            Self::Local {
                last_s,
                last_bytes,
                last_streams,
            } => {
                let rest = end.bytes.saturating_sub(*last_bytes);
                if rest == 0 && last.lost == 0 {
                    return Vec::new();
                }
                // Connections that were never sampled start from zero.
                let streams = if last_streams.len() <= end.streams.len() {
                    deltas(last_streams, &end.streams)
                } else {
                    Vec::new()
                };
                let iv = last.interval(*last_s, local_end_s.max(*last_s), rest);
                (*last_s, *last_bytes) = (iv.end_s, *last_bytes + rest);
                vec![Line {
                    interval: iv,
                    streams,
                }]
            }
        }
    }
}

/// Adds the per-interval counts of `from` into `to` (its state is `to`'s, the later one).
pub fn fold(to: &mut Sample, from: &Sample) {
    to.lost += from.lost;
    to.sent += from.sent;
    to.flow_limited |= from.flow_limited;
    if let Some(c) = from.cwnd_limited {
        to.cwnd_limited = Some(to.cwnd_limited.unwrap_or(false) | c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start_s: f64, end_s: f64, bytes: u64) -> Remote {
        Remote {
            start_s,
            end_s,
            bytes,
            streams: Vec::new(),
        }
    }

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
        assert_eq!(l.tick(1, 1.0, at(1000))[0].interval.bytes, 1000);
        // SACK state can shrink the estimate a little (a reneging receiver): never negative.
        assert_eq!(l.tick(2, 2.0, at(900))[0].interval.bytes, 0);
        assert_eq!(l.tick(3, 3.0, at(2500))[0].interval.bytes, 1500);
        assert!(l.received(1, r(0.0, 1.0, 7)).is_empty());
        let end = l.finish(at(2500), Some(r(0.0, 9.0, 2600)), 3.2);
        assert_eq!(
            (
                end[0].interval.start_s,
                end[0].interval.end_s,
                end[0].interval.bytes
            ),
            (3.0, 3.2, 100)
        );
        assert_eq!(l.printed(), 2600);
    }

    #[test]
    fn receiver_intervals_count_each_byte_once() {
        let mut a = ArrivalIntervals::new(Instant::now());
        let one = a.close_at(1.0, 1000, &[], Some(80.0));
        assert_eq!(one.index, 1);
        assert_eq!((one.interval.start_s, one.interval.end_s), (0.0, 1.0));
        assert_eq!(one.interval.bytes, 1000);
        let two = a.close_at(2.1, 1500, &[], None);
        assert_eq!((two.index, two.interval.bytes), (2, 500));
        assert_eq!(two.interval.start_s, 1.0);
        let last = a.finish(2.5, 1600, &[]).expect("partial interval").interval;
        assert_eq!((last.start_s, last.end_s, last.bytes), (2.1, 2.5, 100));
        assert_eq!(a.finish(2.7, 1600, &[]), None);
        assert_eq!(a.counted(), 1600);
    }

    #[test]
    fn lines_are_keyed_by_interval_not_by_arrival_order() {
        let mut p = Pairing::new();
        // The receiver's interval 1 comes before the sender's tick 1: held.
        assert!(p.remote(1, r(0.0, 1.0, 100)).is_empty());
        // Interval 2 also early, out of the blue.
        assert!(p.remote(2, r(1.0, 2.0, 200)).is_empty());
        let got = p.sample(1, sample(3));
        assert_eq!(got.len(), 1);
        assert_eq!(
            (got[0].interval.bytes, got[0].interval.lost_packets),
            (100, 3)
        );
        let got = p.sample(2, sample(0));
        assert_eq!(
            (
                got[0].interval.start_s,
                got[0].interval.end_s,
                got[0].interval.bytes
            ),
            (1.0, 2.0, 200)
        );
        // Tick 3 before the receiver's interval 3.
        assert!(p.sample(3, sample(1)).is_empty());
        let got = p.remote(3, r(2.0, 3.0, 300));
        assert_eq!(
            (got[0].interval.bytes, got[0].interval.lost_packets),
            (300, 1)
        );
        // A repeated interval is ignored.
        assert!(p.remote(3, r(2.0, 3.0, 300)).is_empty());
        assert_eq!(p.printed(), 600);
    }

    #[test]
    fn the_end_folds_what_is_left_and_adds_up_to_the_total() {
        let mut p = Pairing::new();
        p.remote(1, r(0.0, 1.0, 100));
        p.sample(1, sample(0));
        // Sender ticks 2 and 3 without receiver intervals (the job ended), and one receiver
        // interval 2 that arrives too late for a tick.
        p.sample(2, sample(2));
        p.sample(3, sample(5));
        let last = p.finish(sample(1), r(0.0, 2.4, 1000));
        assert_eq!(last.len(), 1);
        assert_eq!(
            (last[0].interval.start_s, last[0].interval.end_s),
            (1.0, 2.4)
        );
        assert_eq!(last[0].interval.bytes, 900);
        assert_eq!(last[0].interval.lost_packets, 8);
        assert_eq!(last[0].interval.sent_packets, Some(30));

        let mut p = Pairing::new();
        p.remote(1, r(0.0, 1.0, 100));
        p.remote(2, r(1.0, 2.0, 200));
        let out = p.finish(sample(4), r(0.0, 2.2, 350));
        let bytes: Vec<u64> = out.iter().map(|i| i.interval.bytes).collect();
        assert_eq!(bytes, vec![100, 200, 50]);
        let lost: u64 = out.iter().map(|i| i.interval.lost_packets).sum();
        assert_eq!(lost, 4);
    }

    #[test]
    fn receiver_streams_add_up_to_each_interval() {
        let mut a = ArrivalIntervals::new(Instant::now());
        // The job's own count is ignored when streams are given: they are the truth.
        let one = a.close_at(1.0, 999, &[300, 500], None);
        assert_eq!(
            (one.interval.bytes, one.streams.clone()),
            (800, vec![300, 500])
        );
        assert_eq!(
            one.message(),
            ToSender::Interval {
                index: 1,
                start_s: 0.0,
                end_s: 1.0,
                bytes: 800,
                streams: vec![300, 500],
            }
        );
        let two = a.close_at(2.0, 0, &[1000, 600], None);
        assert_eq!((two.interval.bytes, two.streams), (800, vec![700, 100]));
        let end = a.finish(2.5, 1700, &[1000, 700]).expect("last line");
        assert_eq!((end.interval.bytes, end.streams), (100, vec![0, 100]));
        assert_eq!(a.counted(), 1700);
    }

    #[test]
    fn sender_stream_lines_end_on_the_receivers_stream_totals() {
        let mut p = Pairing::new();
        let by = |s: f64, e: f64, streams: Vec<u64>| Remote {
            start_s: s,
            end_s: e,
            bytes: streams.iter().sum(),
            streams,
        };
        assert!(p.remote(1, by(0.0, 1.0, vec![10, 20])).is_empty());
        let got = p.sample(1, sample(0));
        assert_eq!(
            (got[0].interval.bytes, got[0].streams.clone()),
            (30, vec![10, 20])
        );
        // Interval 2 comes without a tick, then the end: it is clipped to what is left.
        p.remote(2, by(1.0, 2.0, vec![15, 25]));
        let out = p.finish(sample(0), by(0.0, 2.5, vec![40, 40]));
        let streams: Vec<Vec<u64>> = out.iter().map(|l| l.streams.clone()).collect();
        assert_eq!(streams, vec![vec![15, 20], vec![15, 0]]);
        let bytes: Vec<u64> = out.iter().map(|l| l.interval.bytes).collect();
        assert_eq!(bytes, vec![35, 15]);
        assert_eq!(p.printed(), 80);
    }

    #[test]
    fn tcp_stream_lines_are_acknowledged_bytes_by_connection() {
        let mut l = SenderLines::local();
        let at = |streams: Vec<u64>| Sample {
            delivered: Some(streams.iter().sum()),
            delivered_streams: streams,
            ..Sample::default()
        };
        let one = l.tick(1, 1.0, at(vec![100, 50]));
        assert_eq!(
            (one[0].interval.bytes, one[0].streams.clone()),
            (150, vec![100, 50])
        );
        let two = l.tick(2, 2.0, at(vec![90, 80]));
        assert_eq!(
            (two[0].interval.bytes, two[0].streams.clone()),
            (30, vec![0, 30])
        );
        let end = Remote {
            end_s: 2.4,
            bytes: 300,
            streams: vec![150, 150],
            ..Remote::default()
        };
        let last = l.finish(at(vec![100, 80]), Some(end), 2.2);
        assert_eq!(
            (last[0].interval.bytes, last[0].streams.clone()),
            (120, vec![50, 70])
        );
        assert_eq!(l.printed(), 300);
    }
}
