//! One direction of the simulated path: a hare-link [`Link`] at the sending end, and the
//! datagrams it has accepted and not yet delivered at the receiving end.

use std::collections::VecDeque;

use std::sync::{Arc, Mutex, PoisonError};

use bytes::BytesMut;
use hare_link::{Link, LinkStats, Verdict};

/// Datagrams in flight towards one endpoint, in arrival order.
///
/// Without reordering jitter a link delivers in offer order, so arrivals are appended and
/// popped from the front in O(1); with reordering jitter a late-offered datagram can arrive
/// earlier and is inserted at its place (ties keep offer order). The simulator's event
/// "heap" for packets is thus just the front of two deques.
///
/// The result is the order of (arrival time, offer) whenever datagrams are inserted, as
/// long as each is inserted before anything at or after its arrival time is popped: so a
/// [`Wire`] can hold what its sender offered and hand it to the receiver's `Arrivals` later
/// (at the end of a window of the two-thread engine) with the same outcome.
#[derive(Default)]
pub(crate) struct Arrivals {
    queue: VecDeque<(u64, BytesMut)>,
}

impl Arrivals {
    /// Inserts a datagram arriving `at`, after every datagram arriving at or before then.
    pub fn insert(&mut self, at: u64, datagram: BytesMut) {
        match self.queue.back() {
            Some(&(last, _)) if last > at => {
                let pos = self.queue.partition_point(|&(t, _)| t <= at);
                self.queue.insert(pos, (at, datagram));
            }
            _ => self.queue.push_back((at, datagram)),
        }
    }

    /// Moves every datagram of `from` here (in its order).
    pub fn take_all(&mut self, from: &mut Arrivals) {
        while let Some((at, d)) = from.queue.pop_front() {
            self.insert(at, d);
        }
    }

    /// Arrival time of the next datagram.
    pub fn next_at(&self) -> Option<u64> {
        self.queue.front().map(|&(at, _)| at)
    }

    /// The next datagram if it has arrived by `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<BytesMut> {
        match self.queue.front() {
            Some(&(at, _)) if at <= now => self.queue.pop_front().map(|(_, d)| d),
            _ => None,
        }
    }
}

/// A bottleneck several flows offer to: one [`Link`] (one queue, one serialiser) behind a
/// lock, so each flow's [`Wire`] can own a handle. The multi-flow engine drives all flows on
/// one thread in time order, so the lock is never contended.
pub(crate) type SharedLink = Arc<Mutex<Link>>;

/// The link a [`Wire`] offers to: its own, or one shared with other flows.
// A run holds two of these and never moves them per packet: a one-flow run keeps its link
// inline rather than behind a box on every offer.
#[allow(clippy::large_enum_variant)]
enum LinkSlot {
    Own(Link),
    Shared(SharedLink),
}

impl LinkSlot {
    /// Runs `f` on the link.
    fn with<T>(&mut self, f: impl FnOnce(&mut Link) -> T) -> T {
        match self {
            LinkSlot::Own(l) => f(l),
            LinkSlot::Shared(l) => f(&mut l.lock().unwrap_or_else(PoisonError::into_inner)),
        }
    }
}

/// The sending end of one direction: a hare-link [`Link`] and the datagrams it accepted that
/// the receiving end has not taken yet ([`Arrivals::take_all`]).
pub(crate) struct Wire {
    link: LinkSlot,
    /// Extra one-way delay after the link (a flow's own access delay on a shared path).
    extra_delay_ns: u64,
    /// Accepted datagrams not yet handed to the receiver's [`Arrivals`].
    pub sent: Arrivals,
    ip_overhead: u32,
    /// Datagrams offered to the link.
    pub offered: u64,
    /// The sender's interface, when it has a rate (see [`crate::SimConfig::sender_line_rate`]).
    nic: Option<Nic>,
}

/// A sender interface that serialises datagrams at `rate_bps` before the bottleneck.
#[derive(Debug, Clone, Copy)]
struct Nic {
    rate_bps: u64,
    /// When the interface has sent everything it was given (ns).
    free_at: u64,
}

impl Nic {
    /// The time `ip_len` bytes handed over at `now` have left the interface.
    fn depart(&mut self, now: u64, ip_len: u32) -> u64 {
        let bits = u128::from(ip_len) * 8 * 1_000_000_000;
        let ns = bits.div_ceil(u128::from(self.rate_bps.max(1)));
        let start = self.free_at.max(now);
        self.free_at = start.saturating_add(u64::try_from(ns).unwrap_or(u64::MAX));
        self.free_at
    }
}

impl Wire {
    /// A wire over `link`, adding `ip_overhead` bytes to each datagram's length.
    pub fn new(link: Link, ip_overhead: u32) -> Self {
        Wire {
            link: LinkSlot::Own(link),
            extra_delay_ns: 0,
            sent: Arrivals::default(),
            ip_overhead,
            offered: 0,
            nic: None,
        }
    }

    /// A wire offering to a link shared with other flows, each datagram arriving
    /// `extra_delay_ns` after the link delivered it.
    pub fn shared(link: SharedLink, ip_overhead: u32, extra_delay_ns: u64) -> Self {
        Wire {
            link: LinkSlot::Shared(link),
            extra_delay_ns,
            sent: Arrivals::default(),
            ip_overhead,
            offered: 0,
            nic: None,
        }
    }

    /// The same wire behind a sender interface of `rate_bps` (bit/s of IP bytes).
    pub fn with_line_rate(mut self, rate_bps: u64) -> Self {
        self.nic = Some(Nic {
            rate_bps,
            free_at: 0,
        });
        self
    }

    /// Offers one UDP datagram at `now`; a dropped one is handed back.
    pub fn send(&mut self, now: u64, datagram: BytesMut) -> Option<BytesMut> {
        self.offered += 1;
        let ip_len = u32::try_from(datagram.len())
            .unwrap_or(u32::MAX)
            .saturating_add(self.ip_overhead);
        // Behind a sender interface the datagram reaches the bottleneck once serialised.
        let at_link = match self.nic.as_mut() {
            Some(nic) => nic.depart(now, ip_len),
            None => now,
        };
        match self.link.with(|l| l.offer(at_link, ip_len)) {
            Verdict::Delivered { at } => {
                self.sent
                    .insert(at.saturating_add(self.extra_delay_ns), datagram);
                None
            }
            Verdict::Dropped(_) => Some(datagram),
        }
    }

    /// Bytes queued at the bottleneck at `now`.
    pub fn queue_bytes(&mut self, now: u64) -> u64 {
        self.link.with(|l| l.queue_bytes(now))
    }

    /// The link's counters (of all its flows when shared).
    pub fn stats(&mut self) -> LinkStats {
        self.link.with(|l| *l.stats())
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
        let mut a = Arrivals::default();
        a.take_all(&mut w.sent);
        assert_eq!(a.next_at(), Some(40_007_200));
        assert!(a.pop_due(40_007_199).is_none());
        assert_eq!(a.pop_due(40_007_200).map(|d| d.len()), Some(8972));
        assert_eq!(a.next_at(), Some(40_014_400));
        assert_eq!(w.queue_bytes(7_200), 9000);
    }

    #[test]
    fn a_sender_interface_spaces_a_burst_before_the_bottleneck() {
        // A 5 Gbit/s bottleneck behind a 10 Gbit/s interface: three 9000-byte datagrams
        // handed over at once reach the link 7,200 ns apart, so the queue grows by one
        // packet per two sent (without the interface all three queue at once).
        let cfg = LinkConfig::new(
            parse_rate("5g").expect("rate"),
            parse_duration("1ms").expect("delay"),
        );
        let mut w = Wire::new(Link::new(&cfg).expect("link"), 28).with_line_rate(10_000_000_000);
        for _ in 0..3 {
            assert!(w.send(0, BytesMut::zeroed(8972)).is_none());
        }
        let mut a = Arrivals::default();
        a.take_all(&mut w.sent);
        // Leaves the interface at 7,200 ns, is serialised at 5 Gbit/s (14,400 ns), then 1 ms.
        assert_eq!(a.next_at(), Some(7_200 + 14_400 + 1_000_000));
        assert!(a.pop_due(1_021_600).is_some());
        assert_eq!(a.next_at(), Some(7_200 + 2 * 14_400 + 1_000_000));
        // At 21,600 ns the third datagram (at the link from 21,600) waits behind the second.
        assert_eq!(w.queue_bytes(21_600), 2 * 9000);
        let mut bare = Wire::new(Link::new(&cfg).expect("link"), 28);
        for _ in 0..3 {
            assert!(bare.send(0, BytesMut::zeroed(8972)).is_none());
        }
        assert_eq!(bare.queue_bytes(0), 3 * 9000);
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
        // Handed over in batches (as the two-thread engine does) or one by one: the same order.
        let mut batched = Arrivals::default();
        let mut direct = Arrivals::default();
        let mut sent = Vec::new();
        for i in 0..200u64 {
            let mut d = BytesMut::zeroed(1200);
            d[0] = i as u8;
            let _ = w.send(i * 1000, d.clone());
            if i % 17 == 0 {
                batched.take_all(&mut w.sent);
            }
            sent.push(d);
        }
        batched.take_all(&mut w.sent);
        let mut w2 = Wire::new(Link::new(&cfg).expect("link"), 28);
        for (i, d) in sent.into_iter().enumerate() {
            let _ = w2.send(i as u64 * 1000, d);
            direct.take_all(&mut w2.sent);
        }
        let mut last = 0;
        let mut n = 0;
        while let Some(at) = batched.next_at() {
            assert!(at >= last, "arrivals must come out in time order");
            last = at;
            assert_eq!(direct.next_at(), Some(at));
            let a = batched.pop_due(at).map(|d| d[0]);
            assert!(a.is_some());
            assert_eq!(a, direct.pop_due(at).map(|d| d[0]));
            n += 1;
        }
        assert_eq!(n, 200);
    }
}
