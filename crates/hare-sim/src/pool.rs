//! Recycled datagram buffers for the data direction.
//!
//! At 10 Gbit/s with 9000-byte frames the simulator moves about 140,000 datagrams per
//! simulated second, and each lives for a round trip (up to 200 MB in flight and queued).
//! Allocating and freeing a 9 KB buffer per datagram costs glibc a free-list walk over cold
//! memory each time (about 7% of the run in a profile). Instead, the receiving
//! application hands the stream chunks it read back here: a chunk is a slice of the datagram
//! buffer it arrived in, and once it is the last reference the whole buffer is reclaimed
//! (`Bytes::try_into_mut` + `BytesMut::try_reclaim`, no copy, no allocation) and reused for
//! the next datagram. Buffers still shared (a chunk quinn keeps, a retransmitted range) are
//! simply dropped and freed as usual.
//!
//! Full transmit batches (quinn's `poll_transmit` filled every GSO segment) skip even the one
//! copy into such a buffer: the whole transmit buffer is split into its datagrams in place
//! (`BytesMut::from(Vec)` and `split_to`, no copy), and when the receiver has read the last
//! chunk of the batch the whole buffer comes back here as a `Vec` for the next transmit
//! (`Vec::from(BytesMut)` of a unique, cleared buffer is the original allocation). Partial
//! batches are still copied per datagram: handing over a 10-segment buffer for one or two
//! datagrams would keep five to ten times their size alive for a round trip.

use bytes::{Bytes, BytesMut};

/// A `Vec` as a `BytesMut` without copying (`Bytes::from(Vec)` keeps the allocation, and a
/// fresh `Bytes` is its only reference, so `try_into_mut` hands it over whole).
pub(crate) fn vec_into_bytes_mut(v: Vec<u8>) -> BytesMut {
    match Bytes::from(v).try_into_mut() {
        Ok(b) => b,
        // Unreachable: nothing else refers to a Bytes made a moment ago. Copy to be safe.
        Err(b) => BytesMut::from(&b[..]),
    }
}

/// A free list of buffers of one capacity.
pub(crate) struct DatagramPool {
    free: Vec<BytesMut>,
    capacity: usize,
    /// Most buffers kept; beyond this returned buffers are freed.
    limit: usize,
    /// Buffers handed out that came from the free list (for tests and tuning).
    pub reused: u64,
    /// Free transmit-batch buffers.
    batches: Vec<Vec<u8>>,
    /// Capacity of a batch buffer (0: batches are not pooled).
    batch_capacity: usize,
    /// Batch buffers handed out that came from the free list.
    pub batches_reused: u64,
}

impl DatagramPool {
    /// A pool of buffers of `capacity` bytes keeping at most `limit` spare ones.
    #[cfg(test)]
    pub fn new(capacity: usize, limit: usize) -> Self {
        Self::with_batches(capacity, limit, 0)
    }

    /// A pool that also keeps transmit-batch buffers of `batch_capacity` bytes (at most
    /// `limit` of each kind).
    pub fn with_batches(capacity: usize, limit: usize, batch_capacity: usize) -> Self {
        DatagramPool {
            free: Vec::new(),
            capacity,
            limit,
            reused: 0,
            batches: Vec::new(),
            batch_capacity,
            batches_reused: 0,
        }
    }

    /// An empty transmit buffer of the batch capacity.
    pub fn take_batch(&mut self) -> Vec<u8> {
        match self.batches.pop() {
            Some(v) => {
                self.batches_reused += 1;
                v
            }
            None => Vec::with_capacity(self.batch_capacity),
        }
    }

    /// A buffer holding a copy of `data`.
    pub fn copy_of(&mut self, data: &[u8]) -> BytesMut {
        if data.len() > self.capacity {
            return BytesMut::from(data);
        }
        let mut b = match self.free.pop() {
            Some(b) => {
                self.reused += 1;
                b
            }
            None => BytesMut::with_capacity(self.capacity),
        };
        b.extend_from_slice(data);
        b
    }

    /// Takes back a buffer the simulator still owns (a datagram the link dropped).
    pub fn recycle(&mut self, mut b: BytesMut) {
        b.clear();
        if self.free.len() < self.limit && b.try_reclaim(self.capacity) {
            self.free.push(b);
        }
    }

    /// Takes over the spare buffers of `other` (the receiver's, which recycles what its
    /// application read, handed to the sender's at the end of a window of the two-thread
    /// engine), up to this pool's limit; the rest is freed.
    pub fn absorb(&mut self, other: &mut DatagramPool) {
        let room = self.limit.saturating_sub(self.free.len());
        self.free.extend(other.free.drain(..).take(room));
        let room = self.limit.saturating_sub(self.batches.len());
        self.batches.extend(other.batches.drain(..).take(room));
    }

    /// Takes back the buffer behind a chunk the receiving application has read, if the chunk
    /// is its last reference.
    pub fn recycle_chunk(&mut self, chunk: Bytes) {
        let Ok(mut b) = chunk.try_into_mut() else {
            return;
        };
        b.clear();
        // A batch buffer reclaims its whole capacity; a datagram buffer cannot.
        if self.batch_capacity > self.capacity && b.try_reclaim(self.batch_capacity) {
            if self.batches.len() < self.limit {
                let v = Vec::from(b);
                debug_assert!(v.is_empty() && v.capacity() >= self.batch_capacity);
                self.batches.push(v);
            }
            return;
        }
        if self.free.len() < self.limit {
            self.recycle(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_chunk_returns_its_whole_buffer() {
        let mut pool = DatagramPool::new(9000, 4);
        let mut d = pool.copy_of(&[7u8; 8952]);
        // What quinn does to a datagram: split off the header, freeze the payload, slice it.
        let header = d.split_to(30);
        let payload = d.freeze();
        let chunk = payload.slice(10..100);
        drop(header);
        drop(payload);
        pool.recycle_chunk(chunk);
        let again = pool.copy_of(&[1, 2, 3]);
        assert_eq!(pool.reused, 1);
        assert_eq!(&again[..], &[1, 2, 3]);
        assert!(again.capacity() >= 9000);
    }

    #[test]
    fn a_shared_buffer_is_not_taken() {
        let mut pool = DatagramPool::new(1500, 4);
        let d = pool.copy_of(&[1u8; 1000]).freeze();
        let other = d.slice(0..10);
        pool.recycle_chunk(d.slice(10..20));
        drop(d);
        let _ = pool.copy_of(&[0u8; 10]);
        assert_eq!(pool.reused, 0, "`other` still refers to the buffer");
        drop(other);
    }

    #[test]
    fn a_batch_comes_back_whole_when_its_last_chunk_is_read() {
        let mut pool = DatagramPool::with_batches(1000, 4, 10_000);
        let mut v = pool.take_batch();
        assert!(v.capacity() >= 10_000);
        v.extend_from_slice(&[5u8; 3000]);
        let ptr = v.as_ptr();
        let mut all = vec_into_bytes_mut(v);
        let datagrams: Vec<BytesMut> = (0..3).map(|_| all.split_to(1000)).collect();
        drop(all);
        let mut chunks = Vec::new();
        for mut d in datagrams {
            let _header = d.split_to(20);
            chunks.push(d.freeze().slice(10..900));
        }
        let last = chunks.pop();
        for c in chunks {
            pool.recycle_chunk(c);
        }
        assert_eq!(pool.batches.len(), 0, "still shared by the last chunk");
        if let Some(c) = last {
            pool.recycle_chunk(c);
        }
        assert_eq!(pool.batches.len(), 1);
        let again = pool.take_batch();
        assert_eq!(pool.batches_reused, 1);
        assert_eq!(again.as_ptr(), ptr, "the same allocation, no copy");
        assert!(again.is_empty() && again.capacity() >= 10_000);
        assert_eq!(pool.free.len(), 0, "not mistaken for a datagram buffer");
    }

    #[test]
    fn absorbing_moves_spare_buffers_up_to_the_limit() {
        let mut sender = DatagramPool::with_batches(100, 3, 1000);
        let mut receiver = DatagramPool::with_batches(100, 8, 1000);
        for _ in 0..5 {
            receiver.recycle(BytesMut::with_capacity(100));
        }
        receiver.recycle_chunk(vec_into_bytes_mut(Vec::with_capacity(1000)).freeze());
        sender.absorb(&mut receiver);
        assert_eq!((sender.free.len(), sender.batches.len()), (3, 1));
        assert_eq!((receiver.free.len(), receiver.batches.len()), (0, 0));
    }

    #[test]
    fn the_free_list_is_bounded() {
        let mut pool = DatagramPool::new(100, 2);
        for _ in 0..5 {
            let b = BytesMut::with_capacity(100);
            pool.recycle(b);
        }
        assert_eq!(pool.free.len(), 2);
        // Larger than the pool's buffers: a plain copy.
        assert_eq!(pool.copy_of(&[0u8; 200]).len(), 200);
    }
}
