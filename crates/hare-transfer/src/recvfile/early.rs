//! Ranges of a file written ahead of its hashed frontier, as a map of disjoint intervals.
//!
//! Each insertion looks up its predecessor once and then visits only the ranges it merges
//! with, each of which it removes: O(log n) per write, amortised, however the data is
//! reordered (loss and reordering on long paths produce many small gaps; a hostile sender can
//! produce a gap per byte). The number of ranges and the bytes they cover are bounded so that
//! an abuser is answered with an error, not with memory or CPU.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Why early data was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EarlyError {
    /// Too many separate ranges ahead of the in-order frontier.
    #[error("more than {0} separate out-of-order ranges")]
    TooManyRanges(usize),
    /// Too many bytes ahead of the in-order frontier.
    #[error("more than {0} bytes out of order")]
    TooManyBytes(u64),
    /// The receiver's jobs together hold too many ranges.
    #[error(
        "this receiver holds at most {0} out-of-order ranges over all its jobs (--reorder-ranges)"
    )]
    ReceiverRanges(u64),
    /// The receiver's jobs together hold too many bytes out of order.
    #[error(
        "this receiver holds at most {0} bytes out of order over all its jobs (--reorder-bytes)"
    )]
    ReceiverBytes(u64),
}

/// The out-of-order data that all the jobs of one receiver hold at once, bounded as a whole:
/// each file's own bound ([`super::EarlyLimits`]) times 128 files a job times 16 jobs would
/// otherwise allow several GB of range maps. Counted, so tests assert it by counting.
#[derive(Debug)]
pub struct ReorderBudget {
    ranges: AtomicU64,
    bytes: AtomicU64,
    max_ranges: u64,
    max_bytes: u64,
}

impl ReorderBudget {
    /// Ranges held at once by default: about 33 MB of range maps.
    pub const DEFAULT_RANGES: u64 = 1 << 20;
    /// Bytes ahead of their files' frontiers at once by default (on disk, read back once).
    pub const DEFAULT_BYTES: u64 = 2 << 30;

    /// A budget of `max_ranges` ranges and `max_bytes` bytes.
    pub fn new(max_ranges: u64, max_bytes: u64) -> Self {
        Self {
            ranges: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            max_ranges,
            max_bytes,
        }
    }

    #[cfg(test)]
    /// Ranges held now, over all files.
    pub fn ranges(&self) -> u64 {
        self.ranges.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    /// Bytes held out of order now, over all files.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Move one file's share from `old` to `new` (ranges, bytes); `Err` when the new total
    /// is over a bound (the share is taken anyway: the file fails and gives it back).
    fn update(&self, old: (u64, u64), new: (u64, u64)) -> Result<(), EarlyError> {
        let r = shift(&self.ranges, old.0, new.0);
        let b = shift(&self.bytes, old.1, new.1);
        if new.0 > old.0 && r > self.max_ranges {
            return Err(EarlyError::ReceiverRanges(self.max_ranges));
        }
        if new.1 > old.1 && b > self.max_bytes {
            return Err(EarlyError::ReceiverBytes(self.max_bytes));
        }
        Ok(())
    }
}

impl Default for ReorderBudget {
    fn default() -> Self {
        Self::new(Self::DEFAULT_RANGES, Self::DEFAULT_BYTES)
    }
}

/// Change `a` by `new - old`; the total after.
fn shift(a: &AtomicU64, old: u64, new: u64) -> u64 {
    if new >= old {
        a.fetch_add(new - old, Ordering::Relaxed) + (new - old)
    } else {
        a.fetch_sub(old - new, Ordering::Relaxed) - (old - new)
    }
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
    /// The receiver's budget, and this file's share of it as last reported.
    budget: Option<Arc<ReorderBudget>>,
    share: (u64, u64),
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
            budget: None,
            share: (0, 0),
        }
    }

    /// Empty, with one file's bounds and a share of the receiver's `budget`.
    pub(crate) fn with_budget(limits: super::EarlyLimits, budget: Arc<ReorderBudget>) -> Self {
        let mut r = Self::new(limits.ranges, limits.bytes);
        r.budget = Some(budget);
        r
    }

    /// Report this file's holdings to the receiver's budget.
    fn settle_share(&mut self) -> Result<(), EarlyError> {
        let Some(b) = &self.budget else {
            return Ok(());
        };
        let now = (self.map.len() as u64, self.bytes);
        let r = b.update(self.share, now);
        self.share = now;
        r
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
        self.settle_share()
    }

    fn remove(&mut self, s: u64, e: u64) {
        self.work += 1;
        self.map.remove(&s);
        self.bytes -= e - s;
    }

    /// The first `max` ranges, in order.
    pub(crate) fn list(&self, max: usize) -> Vec<(u64, u64)> {
        self.map.iter().take(max).map(|(&s, &e)| (s, e)).collect()
    }

    /// Take out the first range if it starts at or before `frontier`.
    pub(crate) fn pop_reached(&mut self, frontier: u64) -> Option<(u64, u64)> {
        self.work += 1;
        let (&s, &e) = self.map.iter().next()?;
        if s > frontier {
            return None;
        }
        self.remove(s, e);
        // Giving back never fails.
        let _ = self.settle_share();
        Some((s, e))
    }

    #[cfg(test)]
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

impl Drop for EarlyRanges {
    fn drop(&mut self) {
        if let Some(b) = &self.budget {
            let _ = b.update(self.share, (0, 0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_share_the_receivers_budget_and_give_it_back() {
        let budget = Arc::new(ReorderBudget::new(5, 1 << 20));
        let limits = crate::recvfile::EarlyLimits {
            ranges: 4,
            bytes: 1 << 20,
        };
        let mut a = EarlyRanges::with_budget(limits, budget.clone());
        let mut b = EarlyRanges::with_budget(limits, budget.clone());
        for i in 0..3 {
            a.insert(10 * i + 1, 10 * i + 2).expect("a within");
        }
        b.insert(1, 2).expect("b within");
        b.insert(11, 12)
            .expect("b: the fifth range of the receiver");
        assert_eq!((budget.ranges(), budget.bytes()), (5, 5));
        // The sixth range is over the receiver's bound though within b's own.
        assert_eq!(b.insert(21, 22), Err(EarlyError::ReceiverRanges(5)));
        drop(b);
        assert_eq!((budget.ranges(), budget.bytes()), (3, 3));
        // Reaching the frontier gives ranges back.
        assert_eq!(a.pop_reached(1), Some((1, 2)));
        assert_eq!((budget.ranges(), budget.bytes()), (2, 2));
        let mut c = EarlyRanges::with_budget(limits, budget.clone());
        c.insert(100, 103).expect("c within");
        assert_eq!((budget.ranges(), budget.bytes()), (3, 5));
        drop((a, c));
        assert_eq!((budget.ranges(), budget.bytes()), (0, 0));
        let bytes = Arc::new(ReorderBudget::new(100, 10));
        let mut d = EarlyRanges::with_budget(limits, bytes.clone());
        d.insert(1, 9).expect("8 bytes");
        assert_eq!(d.insert(20, 23), Err(EarlyError::ReceiverBytes(10)));
    }

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
