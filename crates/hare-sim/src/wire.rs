//! One direction of the simulated path: a hare-link [`Link`] plus the datagrams it has
//! accepted and not yet delivered.

use std::collections::VecDeque;

use bytes::BytesMut;
use hare_link::{Link, Verdict};

/// Datagrams in flight on one link, in arrival order.
///
/// Without reordering jitter a link delivers in offer order, so arrivals are appended and
/// popped from the front in O(1); with reordering jitter a late-offered datagram can arrive
/// earlier and is inserted at its place (ties keep offer order). The simulator's event
/// "heap" for packets is thus just the front of two deques.
pub(crate) struct Wire {
    link: Link,
    in_flight: VecDeque<(u64, BytesMut)>,
    ip_overhead: u32,
    /// Datagrams offered to the link.
    pub offered: u64,
}

impl Wire {
    /// A wire over `link`, adding `ip_overhead` bytes to each datagram's length.
    pub fn new(link: Link, ip_overhead: u32) -> Self {
        Wire {
            link,
            in_flight: VecDeque::new(),
            ip_overhead,
            offered: 0,
        }
    }

    /// Offers one UDP datagram at `now`; a dropped one is handed back.
    pub fn send(&mut self, now: u64, datagram: BytesMut) -> Option<BytesMut> {
        self.offered += 1;
        let ip_len = u32::try_from(datagram.len())
            .unwrap_or(u32::MAX)
            .saturating_add(self.ip_overhead);
        match self.link.offer(now, ip_len) {
            Verdict::Delivered { at } => {
                match self.in_flight.back() {
                    Some(&(last, _)) if last > at => {
                        let pos = self.in_flight.partition_point(|&(t, _)| t <= at);
                        self.in_flight.insert(pos, (at, datagram));
                    }
                    _ => self.in_flight.push_back((at, datagram)),
                }
                None
            }
            Verdict::Dropped(_) => Some(datagram),
        }
    }

    /// Arrival time of the next datagram.
    pub fn next_at(&self) -> Option<u64> {
        self.in_flight.front().map(|&(at, _)| at)
    }

    /// The next datagram if it has arrived by `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<BytesMut> {
        match self.in_flight.front() {
            Some(&(at, _)) if at <= now => self.in_flight.pop_front().map(|(_, d)| d),
            _ => None,
        }
    }

    /// Bytes queued at the bottleneck at `now`.
    pub fn queue_bytes(&mut self, now: u64) -> u64 {
        self.link.queue_bytes(now)
    }

    /// The link.
    pub fn link(&self) -> &Link {
        &self.link
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hare_link::units::{parse_duration, parse_rate};
    use hare_link::{JitterConfig, JitterDistribution, LinkConfig};

    #[test]
    fn delivers_in_order_after_serialisation_and_delay() {
        let cfg = LinkConfig::new(
            parse_rate("10g").expect("rate"),
            parse_duration("40ms").expect("delay"),
        );
        let mut w = Wire::new(Link::new(&cfg).expect("link"), 28);
        // 8972 + 28 = 9000 IP bytes: 7200 ns each at 10 Gbit/s.
        assert!(w.send(0, BytesMut::zeroed(8972)).is_none());
        assert!(w.send(0, BytesMut::zeroed(8972)).is_none());
        assert_eq!(w.offered, 2);
        assert_eq!(w.next_at(), Some(40_007_200));
        assert!(w.pop_due(40_007_199).is_none());
        assert_eq!(w.pop_due(40_007_200).map(|d| d.len()), Some(8972));
        assert_eq!(w.next_at(), Some(40_014_400));
        assert_eq!(w.queue_bytes(7_200), 9000);
    }

    #[test]
    fn reordering_jitter_keeps_arrival_order() {
        let mut cfg = LinkConfig::new(
            parse_rate("1g").expect("rate"),
            parse_duration("1ms").expect("delay"),
        );
        cfg.jitter = Some(JitterConfig {
            distribution: JitterDistribution::Uniform,
            amount: parse_duration("5ms").expect("jitter"),
            reorder: true,
        });
        cfg.seed = 9;
        let mut w = Wire::new(Link::new(&cfg).expect("link"), 28);
        for i in 0..200u64 {
            let _ = w.send(i * 1000, BytesMut::zeroed(1200));
        }
        let mut last = 0;
        let mut n = 0;
        while let Some(at) = w.next_at() {
            assert!(at >= last, "arrivals must come out in time order");
            last = at;
            assert!(w.pop_due(at).is_some());
            n += 1;
        }
        assert_eq!(n, 200);
    }
}
