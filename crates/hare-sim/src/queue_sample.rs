//! The shared bottleneck's queue sampled on a fixed grid of virtual time, for plots of a run
//! of several flows ([`crate::simulate_flows_sampled`]).

use hare_link::Link;
use serde::{Deserialize, Serialize};

/// The bottleneck's queue at one instant of the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueSample {
    /// Virtual nanoseconds since the run's start.
    pub at_ns: u64,
    /// Bytes queued (not yet fully serialised, the packet on the wire included).
    pub bytes: u64,
    /// Packets queued.
    pub packets: u64,
}

/// Samples a link at `0, every, 2 * every, ...`, each grid instant read before the events
/// due at it are handled (the queue as the instant begins).
#[derive(Debug, Clone)]
pub(crate) struct QueueSampler {
    every_ns: u64,
    next_ns: u64,
    samples: Vec<QueueSample>,
}

impl QueueSampler {
    /// A sampler every `every_ns` (at least 1 ns).
    pub(crate) fn new(every_ns: u64) -> Self {
        QueueSampler {
            every_ns: every_ns.max(1),
            next_ns: 0,
            samples: Vec::new(),
        }
    }

    /// Reads `link` at every grid instant up to and including `t_ns` not read yet. The
    /// caller calls it before handling the events due at `t_ns`, in time order, so no offer
    /// lies between a grid instant and the last event before it: the link's lazily drained
    /// queue at that instant is exact.
    pub(crate) fn until(&mut self, link: &mut Link, t_ns: u64) {
        while self.next_ns <= t_ns {
            let at = self.next_ns;
            self.samples.push(QueueSample {
                at_ns: at,
                bytes: link.queue_bytes(at),
                packets: link.queue_packets(at),
            });
            let Some(next) = at.checked_add(self.every_ns) else {
                self.next_ns = u64::MAX;
                return;
            };
            self.next_ns = next;
        }
    }

    /// The samples taken.
    pub(crate) fn finish(self) -> Vec<QueueSample> {
        self.samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hare_link::{BitRate, LinkConfig, TimeSpan};

    /// 8 Mbit/s serialises a 1000-byte packet in exactly 1 ms: three offered at 0 leave the
    /// queue at 3000, 2000, 1000 bytes at 0, 1, 2 ms (each departs at the end of its
    /// millisecond) and empty from 3 ms.
    #[test]
    fn samples_the_queue_at_each_grid_instant() {
        let mut link = Link::new(&LinkConfig::new(BitRate(8_000_000), TimeSpan(0))).expect("link");
        let mut s = QueueSampler::new(1_000_000);
        for _ in 0..3 {
            link.offer(0, 1000);
        }
        s.until(&mut link, 2_500_000);
        s.until(&mut link, 2_600_000);
        s.until(&mut link, 4_000_000);
        let got: Vec<(u64, u64, u64)> = s
            .finish()
            .iter()
            .map(|q| (q.at_ns, q.bytes, q.packets))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 3000, 3),
                (1_000_000, 2000, 2),
                (2_000_000, 1000, 1),
                (3_000_000, 0, 0),
                (4_000_000, 0, 0),
            ]
        );
    }
}
