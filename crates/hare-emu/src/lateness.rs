//! Per-packet lateness of the emulator: how long after its due time each packet actually
//! left. Kept in a fixed histogram (no allocation per packet, bounded memory whatever the run
//! length): 1 us bins up to 10 ms, 100 us bins up to 1 s, one overflow bin; the maximum is
//! kept exactly.

use serde::{Deserialize, Serialize};

const FINE_NS: u64 = 1_000;
const FINE_BINS: usize = 10_000; // 0 .. 10 ms
const COARSE_NS: u64 = 100_000;
const COARSE_BINS: usize = 9_900; // 10 ms .. 1 s
const FINE_END: u64 = FINE_NS * FINE_BINS as u64;
const COARSE_END: u64 = FINE_END + COARSE_NS * COARSE_BINS as u64;

/// A histogram of lateness values in nanoseconds.
#[derive(Debug, Clone)]
pub struct LatenessHistogram {
    bins: Vec<u64>,
    count: u64,
    sum: u128,
    max: u64,
}

impl Default for LatenessHistogram {
    fn default() -> Self {
        LatenessHistogram {
            bins: vec![0; FINE_BINS + COARSE_BINS + 1],
            count: 0,
            sum: 0,
            max: 0,
        }
    }
}

/// Summary of a lateness histogram (nanoseconds). Quantiles are the upper edge of their bin:
/// never below the true value, at most 1 us above it under 10 ms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatenessSummary {
    /// Packets measured.
    pub count: u64,
    /// Median lateness, ns.
    pub p50_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// Largest lateness, ns (exact).
    pub max_ns: u64,
    /// Mean lateness, ns.
    pub mean_ns: u64,
}

impl LatenessHistogram {
    fn bin_of(ns: u64) -> usize {
        if ns < FINE_END {
            (ns / FINE_NS) as usize
        } else if ns < COARSE_END {
            FINE_BINS + ((ns - FINE_END) / COARSE_NS) as usize
        } else {
            FINE_BINS + COARSE_BINS
        }
    }

    fn upper_edge(bin: usize) -> u64 {
        if bin < FINE_BINS {
            (bin as u64 + 1) * FINE_NS
        } else if bin < FINE_BINS + COARSE_BINS {
            FINE_END + ((bin - FINE_BINS) as u64 + 1) * COARSE_NS
        } else {
            u64::MAX
        }
    }

    /// Records one packet's lateness.
    pub fn record(&mut self, ns: u64) {
        self.bins[Self::bin_of(ns)] += 1;
        self.count += 1;
        self.sum += u128::from(ns);
        self.max = self.max.max(ns);
    }

    /// Adds another histogram's samples.
    pub fn merge(&mut self, other: &LatenessHistogram) {
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest bin edge with at least `q` of the samples at or below it (capped at the
    /// exact maximum); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        // Rank of the sample wanted, 1-based: ceil(q * count), at least 1.
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (bin, &n) in self.bins.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Self::upper_edge(bin).min(self.max);
            }
        }
        self.max
    }

    /// p50, p99, p99.9, max and mean.
    pub fn summary(&self) -> LatenessSummary {
        LatenessSummary {
            count: self.count,
            p50_ns: self.quantile(0.5),
            p99_ns: self.quantile(0.99),
            p999_ns: self.quantile(0.999),
            max_ns: self.max,
            mean_ns: if self.count == 0 {
                0
            } else {
                (self.sum / u128::from(self.count)) as u64
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_bin_upper_edges() {
        let mut h = LatenessHistogram::default();
        // 1..=100 us: p50 is the 50th sample (50 us, in bin [50, 51) us -> edge 51 us).
        for us in 1..=100u64 {
            h.record(us * 1_000);
        }
        let s = h.summary();
        assert_eq!(s.count, 100);
        assert_eq!(s.p50_ns, 51_000);
        assert_eq!(s.p99_ns, 100_000); // the 99th sample is 99 us -> edge 100 us
        assert_eq!(s.max_ns, 100_000);
        assert_eq!(s.mean_ns, 50_500);
    }

    #[test]
    fn coarse_and_overflow_bins() {
        let mut h = LatenessHistogram::default();
        h.record(15_050_000); // 15.05 ms -> coarse bin [15.0, 15.1) ms
        assert_eq!(h.quantile(0.5), 15_050_000); // capped at the exact max
        h.record(3_000_000_000); // 3 s: overflow bin
        assert_eq!(h.quantile(0.5), 15_100_000);
        assert_eq!(h.quantile(1.0), 3_000_000_000);
        let mut g = LatenessHistogram::default();
        g.merge(&h);
        assert_eq!(g.summary(), h.summary());
    }

    #[test]
    fn empty_is_zero() {
        assert_eq!(
            LatenessHistogram::default().summary(),
            LatenessSummary::default()
        );
    }
}
