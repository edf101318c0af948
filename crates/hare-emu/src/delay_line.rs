//! The packets an emulated direction holds between their arrival and their due time.
//!
//! hare-link decides *when* a packet leaves (`Verdict::Delivered { at }`); this holds the bytes
//! until then. Due times are non-decreasing unless the link's jitter reorders, so the common
//! case is a push at the back; a reordering link inserts in place (stable for equal times).
//! Buffers are recycled, so the steady state allocates nothing. The bytes held are capped:
//! a packet that would exceed the cap is refused and counted as a *ring overflow*, a drop
//! the path model did not ask for (the run is then invalid).

use std::collections::VecDeque;

/// A packet waiting for its due time.
#[derive(Debug)]
pub struct Pending {
    /// When it must leave, link time in ns.
    pub due: u64,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// Packets in flight in one direction, ordered by due time.
#[derive(Debug)]
pub struct DelayLine {
    queue: VecDeque<Pending>,
    pool: Vec<Vec<u8>>,
    held_bytes: usize,
    cap_bytes: usize,
    overflows: u64,
    peak_bytes: usize,
}

/// Buffers kept for reuse at most (bounds the pool's memory after a burst).
const POOL_MAX: usize = 65_536;

impl DelayLine {
    /// An empty line that holds at most `cap_bytes` of packet data.
    pub fn new(cap_bytes: usize) -> Self {
        DelayLine {
            queue: VecDeque::new(),
            pool: Vec::new(),
            held_bytes: 0,
            cap_bytes,
            overflows: 0,
            peak_bytes: 0,
        }
    }

    /// Holds a copy of `data` until `due`. Returns false (and counts an overflow) when the
    /// cap would be exceeded.
    pub fn push(&mut self, due: u64, data: &[u8]) -> bool {
        if self.held_bytes + data.len() > self.cap_bytes {
            self.overflows += 1;
            return false;
        }
        let mut buf = self.pool.pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(data);
        self.held_bytes += data.len();
        self.peak_bytes = self.peak_bytes.max(self.held_bytes);
        let p = Pending { due, data: buf };
        match self.queue.back() {
            Some(last) if last.due > due => {
                let at = self.queue.partition_point(|q| q.due <= due);
                self.queue.insert(at, p);
            }
            _ => self.queue.push_back(p),
        }
        true
    }

    /// Due time of the first packet, if any.
    pub fn next_due(&self) -> Option<u64> {
        self.queue.front().map(|p| p.due)
    }

    /// Takes the first packet if it is due at `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<Pending> {
        if self.queue.front()?.due > now {
            return None;
        }
        let p = self.queue.pop_front()?;
        self.held_bytes -= p.data.len();
        Some(p)
    }

    /// Gives a packet's buffer back for reuse.
    pub fn recycle(&mut self, data: Vec<u8>) {
        if self.pool.len() < POOL_MAX {
            self.pool.push(data);
        }
    }

    /// Packets held.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Packets refused because the cap was reached.
    pub fn overflows(&self) -> u64 {
        self.overflows
    }

    /// Most bytes held at once.
    pub fn peak_bytes(&self) -> usize {
        self.peak_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_in_due_order_and_only_when_due() {
        let mut d = DelayLine::new(1000);
        assert!(d.push(10, b"a"));
        assert!(d.push(30, b"c"));
        assert!(d.push(20, b"b")); // reordered by jitter: goes in the middle
        assert!(d.push(20, b"b2")); // equal due times keep arrival order
        assert_eq!(d.next_due(), Some(10));
        assert!(d.pop_due(9).is_none());
        let order: Vec<Vec<u8>> = std::iter::from_fn(|| d.pop_due(25).map(|p| p.data)).collect();
        assert_eq!(order, vec![b"a".to_vec(), b"b".to_vec(), b"b2".to_vec()]);
        assert_eq!(d.len(), 1);
        assert_eq!(d.pop_due(30).map(|p| p.data), Some(b"c".to_vec()));
        assert!(d.is_empty());
    }

    #[test]
    fn cap_counts_overflows() {
        let mut d = DelayLine::new(10);
        assert!(d.push(0, &[0; 6]));
        assert!(!d.push(0, &[0; 5]));
        assert!(d.push(0, &[0; 4]));
        assert_eq!(d.overflows(), 1);
        assert_eq!(d.peak_bytes(), 10);
        let p = d.pop_due(0).map(|p| p.data).unwrap_or_default();
        d.recycle(p);
        assert!(d.push(1, &[1; 6]));
    }
}
