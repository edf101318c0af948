//! The bottleneck's transmitter clock, kept as an exact rational number of nanoseconds.
//!
//! A packet of `len` bytes takes `len * 8 * 10^9 / rate` ns, which is rarely an integer
//! (1480 bytes at 8.5 Gbit/s is 1392.94... ns). Rounding each packet would bias the rate by up
//! to half a nanosecond per packet (0.04% at that size, worse for small packets); instead the
//! time the transmitter becomes free is kept as `whole + frac / rate` ns with `frac < rate`, so
//! the clock is exact forever and only the reported departure is rounded (up: a packet has
//! left once its last bit has).

use crate::Nanos;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// Exact "free at" time of a transmitter serialising at a fixed rate.
#[derive(Debug, Clone)]
pub(crate) struct Serializer {
    rate_bps: u128,
    /// Whole nanoseconds of the time the transmitter is free.
    whole: Nanos,
    /// Fraction of a nanosecond, in units of `1 / rate_bps` ns; always `< rate_bps`.
    frac: u128,
}

impl Serializer {
    /// A transmitter at `rate_bps` (> 0, checked by config validation), free since time 0.
    pub(crate) fn new(rate_bps: u64) -> Self {
        Serializer {
            rate_bps: u128::from(rate_bps.max(1)),
            whole: 0,
            frac: 0,
        }
    }

    /// When the transmitter is free, rounded up to whole nanoseconds.
    pub(crate) fn free_at_ceil(&self) -> Nanos {
        self.whole.saturating_add(u64::from(self.frac != 0))
    }

    /// The exact end of transmission of a packet of `len` bytes offered at `now`, as
    /// `(whole, frac)`; does not commit it. Starts at `max(now, free at)`.
    pub(crate) fn peek_end(&self, now: Nanos, len: u32) -> (Nanos, u128) {
        // The transmitter is free at whole + frac/rate < whole + 1, so it is idle at `now`
        // exactly when now > whole; then the packet starts at `now`, else when it is free.
        let (start_whole, start_frac) = if now > self.whole {
            (now, 0)
        } else {
            (self.whole, self.frac)
        };
        let total = start_frac + u128::from(len) * 8 * NANOS_PER_SEC;
        let add = total / self.rate_bps;
        let frac = total % self.rate_bps;
        // Only a 4 GiB packet at a few bit/s exceeds u64 ns; saturate rather than wrap.
        let add = u64::try_from(add).unwrap_or(u64::MAX);
        (start_whole.saturating_add(add), frac)
    }

    /// Commits a transmission end computed by [`peek_end`](Self::peek_end).
    pub(crate) fn commit(&mut self, end: (Nanos, u128)) {
        self.whole = end.0;
        self.frac = end.1;
    }

    /// Rounds an exact end time up to whole nanoseconds.
    pub(crate) fn ceil(end: (Nanos, u128)) -> Nanos {
        end.0.saturating_add(u64::from(end.1 != 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractional_times_accumulate_exactly() {
        // 1480 bytes at 8.5 Gbit/s = 11840 / 8.5 ns = 1392 + 16/17 ns.
        let mut s = Serializer::new(8_500_000_000);
        for _ in 0..17 {
            let end = s.peek_end(0, 1480);
            s.commit(end);
        }
        // 17 packets take exactly 17 * 11840 / 8.5 = 23680 ns, no drift.
        assert_eq!((s.whole, s.frac), (23_680, 0));
        assert_eq!(s.free_at_ceil(), 23_680);
    }

    #[test]
    fn idle_transmitter_restarts_at_now() {
        let mut s = Serializer::new(1_000_000_000);
        let end = s.peek_end(0, 1);
        s.commit(end);
        assert_eq!(Serializer::ceil(end), 8);
        let end = s.peek_end(100, 1500);
        assert_eq!(end, (100 + 12_000, 0));
    }
}
