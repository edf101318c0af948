//! Where the ranges of a file sent over several connections end. Ranges end at multiples of
//! the chunk, so that a rerun cuts the same ranges the receiver kept; in the file's last
//! stretch they end at multiples of a piece, a thirty-second of a chunk.
//!
//! Why the last stretch: a connection takes a range once it holds no more than its
//! congestion window and one range unacknowledged, so when the file's last range is handed
//! out every connection still holds up to a range it has not sent, which it sends at its own
//! share of the path while the others have finished. With whole chunks (4 MiB) the path ran
//! at 65-80% for the last 0.5 s of a 500 MB file (four connections through the emulator at
//! 100 Mbit/s x 80 ms); the slowest of four connections there sends a piece of 128 KiB in
//! about 60 ms. The stretch (two chunks per connection, what they may hold before it) is cut
//! at absolute offsets, so a rerun with the same `-C` and `--chunk` cuts it the same way.

use super::{Striping, MIN_CHUNK};

/// A chunk is cut into this many pieces in a file's last stretch.
const PIECES_PER_CHUNK: u64 = 32;

impl Striping {
    fn unit(&self) -> u64 {
        self.chunk.max(1)
    }

    /// The length of a piece: a thirty-second of a chunk, but no less than the smallest chunk
    /// (and no more than a chunk).
    fn piece(&self) -> u64 {
        (self.unit() / PIECES_PER_CHUNK)
            .max(MIN_CHUNK)
            .min(self.unit())
    }

    /// Where the last stretch of a file of `size` bytes starts: a chunk multiple about two
    /// chunks per connection before its end (`size` for a file of at most a chunk, which is
    /// one range, and without `tail_pieces`).
    pub(crate) fn tail_start(&self, size: u64) -> u64 {
        let chunk = self.unit();
        if size <= chunk || !self.tail_pieces {
            return size;
        }
        let stretch = chunk
            .saturating_mul(2)
            .saturating_mul(u64::from(self.connections.max(1)));
        size.saturating_sub(stretch) / chunk * chunk
    }

    /// The end (exclusive) of the range that starts at `at` in a file listed with `size`
    /// bytes (a range past `size`, of a file that grew, is cut as the last stretch is).
    pub(crate) fn range_end(&self, at: u64, size: u64) -> u64 {
        let tail = self.tail_start(size);
        if at < tail {
            let chunk = self.unit();
            return (at / chunk + 1).saturating_mul(chunk);
        }
        let piece = self.piece();
        tail.saturating_add(((at - tail) / piece + 1).saturating_mul(piece))
    }

    /// The most ranges the last `remaining` bytes of a file of `size` bytes are cut into.
    pub(crate) fn ranges_in(&self, size: u64, remaining: u64) -> u64 {
        let start = size.saturating_sub(remaining);
        let tail = self.tail_start(size).max(start);
        let whole = (tail - start).div_ceil(self.unit());
        let pieces = (size - tail).div_ceil(self.piece());
        // One more where the first range starts mid-chunk.
        whole + pieces + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn four() -> Striping {
        Striping {
            connections: 4,
            chunk: 4 * MIB,
            moves_bulk: false,
            tail_pieces: true,
        }
    }

    #[test]
    fn ranges_are_chunks_until_the_last_two_chunks_per_connection() {
        let s = four();
        let size = 100 * MIB + 5;
        // 32 MiB before the end, down to a chunk multiple: 68 MiB.
        assert_eq!(s.tail_start(size), 68 * MIB);
        assert_eq!(s.range_end(0, size), 4 * MIB);
        assert_eq!(s.range_end(66 * MIB, size), 68 * MIB);
        assert_eq!(s.range_end(68 * MIB, size), 68 * MIB + 128 * 1024);
        assert_eq!(s.range_end(100 * MIB, size), 100 * MIB + 128 * 1024);
        // 17 chunks and 257 pieces (the last holds 5 bytes), plus one.
        assert_eq!(s.ranges_in(size, size), 17 + 257 + 1);
    }

    #[test]
    fn a_small_file_is_one_range_and_a_short_one_all_pieces() {
        let s = four();
        assert_eq!(s.tail_start(4 * MIB), 4 * MIB);
        assert_eq!(s.range_end(0, 4 * MIB), 4 * MIB);
        assert_eq!(s.tail_start(10 * MIB), 0);
        assert_eq!(s.range_end(0, 10 * MIB), 128 * 1024);
        assert_eq!(s.ranges_in(10 * MIB, 10 * MIB), 81);
    }

    #[test]
    fn without_tail_pieces_every_range_is_a_chunk() {
        let s = Striping {
            tail_pieces: false,
            ..four()
        };
        let size = 100 * MIB + 5;
        assert_eq!(s.tail_start(size), size);
        assert_eq!(s.range_end(96 * MIB, size), 100 * MIB);
        assert_eq!(s.ranges_in(size, size), 26 + 1);
    }

    #[test]
    fn a_piece_is_never_below_the_smallest_chunk() {
        let s = Striping {
            connections: 2,
            chunk: MIN_CHUNK,
            moves_bulk: false,
            tail_pieces: true,
        };
        assert_eq!(s.tail_start(10 * MIN_CHUNK), 6 * MIN_CHUNK);
        assert_eq!(s.range_end(6 * MIN_CHUNK, 10 * MIN_CHUNK), 7 * MIN_CHUNK);
    }
}
