//! Ranges of a file written ahead of its hashed frontier, as a map of disjoint intervals.
//!
//! Each insertion looks up its predecessor once and then visits only the ranges it merges
//! with, each of which it removes: O(log n) per write, amortised, however the data is
//! reordered (loss and reordering on long paths produce many small gaps; a hostile sender can
//! produce a gap per byte). The number of ranges and the bytes they cover are bounded so that
//! an abuser is answered with an error, not with memory or CPU.

use std::collections::BTreeMap;

/// Why early data was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EarlyError {
    /// Too many separate ranges ahead of the in-order frontier.
    #[error("more than {0} separate out-of-order ranges")]
    TooManyRanges(usize),
    /// Too many bytes ahead of the in-order frontier.
    #[error("more than {0} bytes out of order")]
    TooManyBytes(u64),
}

/// Disjoint, non-touching ranges `start -> end` beyond the frontier.
#[derive(Debug)]
pub(crate) struct EarlyRanges {
    map: BTreeMap<u64, u64>,
    bytes: u64,
    max_ranges: usize,
    max_bytes: u64,
    /// Map operations done so far (lookups, removals, insertions): the cost, counted.
    work: u64,
}

impl EarlyRanges {
    /// Empty, with these bounds.
    pub(crate) fn new(max_ranges: usize, max_bytes: u64) -> Self {
        Self {
            map: BTreeMap::new(),
            bytes: 0,
            max_ranges,
            max_bytes,
            work: 0,
        }
    }

    /// Record `[start, end)` (non-empty), merging with every range it overlaps or touches.
    pub(crate) fn insert(&mut self, mut start: u64, mut end: u64) -> Result<(), EarlyError> {
        self.work += 1;
        if let Some((&s, &e)) = self.map.range(..=start).next_back() {
            if e >= start {
                self.remove(s, e);
                start = s;
                end = end.max(e);
            }
        }
        loop {
            self.work += 1;
            let Some((&s, &e)) = self.map.range(start..=end).next() else {
                break;
            };
            self.remove(s, e);
            end = end.max(e);
        }
        self.work += 1;
        self.map.insert(start, end);
        self.bytes += end - start;
        if self.map.len() > self.max_ranges {
            return Err(EarlyError::TooManyRanges(self.max_ranges));
        }
        if self.bytes > self.max_bytes {
            return Err(EarlyError::TooManyBytes(self.max_bytes));
        }
        Ok(())
    }

    fn remove(&mut self, s: u64, e: u64) {
        self.work += 1;
        self.map.remove(&s);
        self.bytes -= e - s;
    }

    /// Take out the first range if it starts at or before `frontier`.
    pub(crate) fn pop_reached(&mut self, frontier: u64) -> Option<(u64, u64)> {
        self.work += 1;
        let (&s, &e) = self.map.iter().next()?;
        if s > frontier {
            return None;
        }
        self.remove(s, e);
        Some((s, e))
    }

    /// Map operations done so far.
    pub(crate) fn work(&self) -> u64 {
        self.work
    }

    /// Number of ranges held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_overlapping_and_touching_ranges() {
        let mut r = EarlyRanges::new(100, 1000);
        r.insert(10, 20).expect("ok");
        r.insert(30, 40).expect("ok");
        r.insert(50, 60).expect("ok");
        r.insert(20, 30).expect("touching both neighbours");
        assert_eq!(r.len(), 2);
        r.insert(15, 55).expect("spanning");
        assert_eq!(r.len(), 1);
        assert_eq!(r.bytes, 50);
        assert_eq!(r.pop_reached(9), None);
        assert_eq!(r.pop_reached(10), Some((10, 60)));
        assert_eq!(r.len(), 0);
        assert_eq!(r.bytes, 0);
    }

    #[test]
    fn one_byte_gaps_cost_a_constant_number_of_map_operations_each() {
        // 1-byte ranges with 1-byte gaps, then the gaps filled back to front: the old
        // scan-from-the-start merge visited every range on every write (n^2 / 2 visits).
        let n = 50_000u64;
        let mut r = EarlyRanges::new(usize::MAX, u64::MAX);
        for i in 0..n {
            r.insert(2 * i + 1, 2 * i + 2).expect("ok");
        }
        assert_eq!(r.len(), n as usize);
        for i in (1..n).rev() {
            r.insert(2 * i, 2 * i + 1).expect("ok");
        }
        assert_eq!(r.len(), 1);
        // Exactly: each insert does 1 predecessor lookup + (merges + 1) range lookups + 1
        // insertion, plus one removal per merge.
        assert!(
            r.work() <= 8 * 2 * n,
            "work {} for {} inserts",
            r.work(),
            2 * n
        );
    }

    #[test]
    fn bounds_answer_an_abuser_with_an_error() {
        let mut r = EarlyRanges::new(3, 1 << 20);
        for i in 0..3 {
            r.insert(10 * i + 1, 10 * i + 2).expect("within");
        }
        assert_eq!(r.insert(100, 101), Err(EarlyError::TooManyRanges(3)));
        let mut r = EarlyRanges::new(100, 10);
        r.insert(1, 11).expect("10 bytes");
        assert_eq!(r.insert(20, 21), Err(EarlyError::TooManyBytes(10)));
    }
}
