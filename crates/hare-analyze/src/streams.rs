//! Payload accounting from logged STREAM frames: unique bytes per stream (a retransmission
//! re-covers a range already counted and adds nothing), and, on a sender, the stream bytes
//! of each 1-RTT packet until an ACK frame acknowledges it, so delivered payload is counted
//! when it is acknowledged and only once.

use std::collections::{BTreeMap, HashMap};

/// Disjoint half-open ranges `[start, end)`.
#[derive(Debug, Default, Clone)]
pub(crate) struct RangeSet {
    /// start -> end, non-overlapping, non-adjacent.
    ranges: BTreeMap<u64, u64>,
}

impl RangeSet {
    /// Adds `[start, end)`; returns how many of its bytes were not in the set yet.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if end <= start {
            return 0;
        }
        let (mut lo, mut hi) = (start, end);
        let mut covered = 0u64;
        // The range starting at or before `start` may overlap or touch.
        if let Some((&s, &e)) = self.ranges.range(..=start).next_back() {
            if e >= start {
                covered += e.min(end).saturating_sub(start);
                lo = s;
                hi = hi.max(e);
                self.ranges.remove(&s);
            }
        }
        // Ranges starting inside `[start, end]` are merged.
        let inside: Vec<(u64, u64)> = self
            .ranges
            .range(start..=end)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in inside {
            covered += e.min(end).saturating_sub(s.max(start));
            hi = hi.max(e);
            self.ranges.remove(&s);
        }
        self.ranges.insert(lo, hi);
        (end - start).saturating_sub(covered)
    }
}

/// Unique bytes over all streams.
#[derive(Debug, Default)]
pub(crate) struct StreamBytes {
    per_stream: HashMap<u64, RangeSet>,
    /// Every STREAM frame byte seen, retransmissions included.
    pub total: u64,
    /// Bytes counted once.
    pub unique: u64,
}

impl StreamBytes {
    /// Adds a frame; returns its new bytes.
    pub fn add(&mut self, stream: u64, offset: u64, len: u64) -> u64 {
        self.total += len;
        let new = self
            .per_stream
            .entry(stream)
            .or_default()
            .insert(offset, offset.saturating_add(len));
        self.unique += new;
        new
    }
}

/// Packets kept waiting for their ACK beyond this many are forgotten, oldest first (a
/// trace whose ACKs are not logged must not grow memory with its length).
const MAX_UNACKED: usize = 1 << 20;

/// A sender's 1-RTT packets with STREAM frames, waiting for their acknowledgement.
#[derive(Debug, Default)]
pub(crate) struct Unacked {
    packets: BTreeMap<u64, Vec<(u64, u64, u64)>>,
    acked: StreamBytes,
}

impl Unacked {
    /// Remembers the STREAM frames of packet `pn`.
    pub fn sent(&mut self, pn: u64, frames: Vec<(u64, u64, u64)>) {
        if frames.is_empty() {
            return;
        }
        self.packets.insert(pn, frames);
        while self.packets.len() > MAX_UNACKED {
            self.packets.pop_first();
        }
    }

    /// A packet declared lost: its data, if delivered, is delivered by a retransmission.
    pub fn lost(&mut self, pn: u64) {
        self.packets.remove(&pn);
    }

    /// Packets `first..=last` acknowledged; returns the payload bytes newly delivered.
    pub fn acked(&mut self, first: u64, last: u64) -> u64 {
        let pns: Vec<u64> = self.packets.range(first..=last).map(|(&p, _)| p).collect();
        let mut new = 0;
        for pn in pns {
            if let Some(frames) = self.packets.remove(&pn) {
                for (s, o, l) in frames {
                    new += self.acked.add(s, o, l);
                }
            }
        }
        new
    }

    /// Unique payload bytes acknowledged so far.
    pub fn acked_unique(&self) -> u64 {
        self.acked.unique
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_set_counts_new_bytes_once() {
        let mut r = RangeSet::default();
        assert_eq!(r.insert(0, 100), 100);
        assert_eq!(r.insert(50, 150), 50);
        assert_eq!(r.insert(300, 400), 100);
        assert_eq!(r.insert(0, 400), 150);
        assert_eq!(r.insert(10, 20), 0);
        assert_eq!(r.ranges.len(), 1);
        assert_eq!(r.insert(400, 400), 0);
    }

    #[test]
    fn retransmission_acked_after_loss_counts_once() {
        let mut u = Unacked::default();
        u.sent(1, vec![(0, 0, 1000)]);
        u.sent(2, vec![(0, 1000, 1000)]);
        u.lost(1);
        u.sent(3, vec![(0, 0, 1000)]);
        assert_eq!(u.acked(2, 3), 2000);
        // A spurious retransmission acknowledged again adds nothing.
        u.sent(4, vec![(0, 0, 1000)]);
        assert_eq!(u.acked(4, 4), 0);
        assert_eq!(u.acked_unique(), 2000);
    }
}
