//! The adapter's clock: quinn's `Instant`s as nanoseconds since the controller was built,
//! with the send times remembered so that an acknowledged packet's RTT needs no `Instant`
//! arithmetic.
//!
//! `Instant - Instant` costs about a hundred instructions (normalising two timespecs), and
//! every ACK frame needs three: `now` since the origin, and `now - sent` for its newest and
//! oldest packet. Comparing two `Instant`s is cheap. So the time of every distinct send
//! `now` is converted once, in `on_sent`, and queued with its nanoseconds; an acknowledged
//! packet's send time is looked up in that queue by equality (packets are acknowledged
//! mostly in the order they were sent, so the entry is at or near the front), and its RTT is
//! the difference of two exact nanosecond counts, which is exactly `now - sent`. A send time
//! not in the queue (acknowledged out of order, or sent while the queue was full) takes the
//! `Instant` subtraction as before: the values never differ, only the cost.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Send times remembered at most (24 bytes each): enough for the distinct send instants of
/// a few thousand paced bursts in flight; beyond it, lookups fall back to subtraction.
const MAX_SENDS: usize = 4096;

/// `Instant`s as microseconds / nanoseconds since the controller's origin.
#[derive(Debug, Clone)]
pub(crate) struct TimeBase {
    origin: Instant,
    /// The last `now` converted: quinn passes the same `now` to every callback of one ACK
    /// frame or transmit burst.
    last_now: Instant,
    /// `last_now - origin` in ns, `None` when `last_now` is before the origin or past u64.
    last_now_ns: Option<u64>,
    /// Microseconds since the origin of `last_now`, never decreasing (the model's time only
    /// moves forward even if quinn's clock stutters).
    last_now_us: u64,
    /// Distinct send instants (in `on_sent` order) with their nanoseconds since the origin.
    sends: VecDeque<(Instant, u64)>,
}

impl TimeBase {
    /// A clock whose time 0 is `origin`.
    pub(crate) fn new(origin: Instant) -> Self {
        TimeBase {
            origin,
            last_now: origin,
            last_now_ns: Some(0),
            last_now_us: 0,
            sends: VecDeque::new(),
        }
    }

    /// The origin.
    pub(crate) fn origin(&self) -> Instant {
        self.origin
    }

    /// Microseconds since the origin of the last `now` seen.
    pub(crate) fn last_us(&self) -> u64 {
        self.last_now_us
    }

    /// Microseconds since the origin at `now` (0 before it), never less than the last value
    /// returned; `now` becomes the last time seen.
    #[inline]
    pub(crate) fn now_us(&mut self, now: Instant) -> u64 {
        if now != self.last_now {
            self.convert(now);
        }
        self.last_now_us
    }

    fn convert(&mut self, now: Instant) {
        let since = now.checked_duration_since(self.origin);
        // In u64 (no u128 arithmetic) while it fits, 584 years.
        let ns = since.and_then(|d| {
            d.as_secs()
                .checked_mul(1_000_000_000)?
                .checked_add(u64::from(d.subsec_nanos()))
        });
        let us = match (ns, since) {
            (Some(ns), _) => ns / 1000,
            (None, Some(d)) => u64::try_from(d.as_micros()).unwrap_or(u64::MAX),
            (None, None) => 0,
        };
        self.last_now = now;
        self.last_now_ns = ns;
        self.last_now_us = us.max(self.last_now_us);
    }

    /// Packets are sent at `now` (after [`TimeBase::now_us`] for it): remember its
    /// nanoseconds for the ACK of these packets.
    #[inline]
    pub(crate) fn record_send(&mut self, now: Instant) {
        let Some(ns) = self.last_now_ns.filter(|_| now == self.last_now) else {
            return;
        };
        let new = self.sends.back().is_none_or(|&(at, _)| at != now);
        if new && self.sends.len() < MAX_SENDS {
            self.sends.push_back((now, ns));
        }
    }

    /// The nanoseconds since the origin recorded for a send at `sent`, if it was recorded.
    /// Send times before `sent` are forgotten: the caller looks up the oldest packet of an
    /// ACK frame first, then its newest, and a packet sent earlier that is still unacknowledged
    /// is lost or comes only out of order (then the caller subtracts).
    #[inline]
    pub(crate) fn sent_ns(&mut self, sent: Instant) -> Option<u64> {
        while let Some(&(at, ns)) = self.sends.front() {
            if at == sent {
                return Some(ns);
            }
            if at > sent {
                break;
            }
            self.sends.pop_front();
        }
        None
    }

    /// `now - sent` in microseconds (0 if `sent` is later), `now` being the last time
    /// converted and `sent_ns` what [`TimeBase::sent_ns`] found for `sent`.
    #[inline]
    pub(crate) fn rtt_us(&self, now: Instant, sent: Instant, sent_ns: Option<u64>) -> u64 {
        if let (Some(now_ns), Some(sent_ns)) = (self.last_now_ns, sent_ns) {
            if now == self.last_now {
                return now_ns.saturating_sub(sent_ns) / 1000;
            }
        }
        let d: Duration = now.saturating_duration_since(sent);
        u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtt_from_recorded_sends_equals_instant_subtraction() {
        let origin = Instant::now();
        let mut t = TimeBase::new(origin);
        // Odd nanosecond offsets: the difference of rounded microseconds would differ.
        let sends: Vec<Instant> = (0..5)
            .map(|i| origin + Duration::from_nanos(1_000_999 * i + 777))
            .collect();
        for &s in &sends {
            t.now_us(s);
            t.record_send(s);
            t.record_send(s);
        }
        assert_eq!(t.sends.len(), 5);
        let now = origin + Duration::from_nanos(9_876_543);
        t.now_us(now);
        for &s in &sends[1..] {
            let ns = t.sent_ns(s);
            assert!(ns.is_some());
            let exact = u64::try_from(now.duration_since(s).as_micros()).unwrap_or(0);
            assert_eq!(t.rtt_us(now, s, ns), exact);
        }
        // The first send was passed over: found by subtraction, same value.
        let ns = t.sent_ns(sends[0]);
        assert!(ns.is_none());
        let exact = u64::try_from(now.duration_since(sends[0]).as_micros()).unwrap_or(0);
        assert_eq!(t.rtt_us(now, sends[0], ns), exact);
    }

    #[test]
    fn times_before_the_origin_read_zero_and_never_go_back() {
        let origin = Instant::now() + Duration::from_secs(1);
        let mut t = TimeBase::new(origin);
        assert_eq!(t.now_us(origin + Duration::from_micros(5)), 5);
        assert_eq!(t.now_us(origin), 5);
        let early = origin - Duration::from_millis(1);
        assert_eq!(t.now_us(early), 5);
        t.record_send(early);
        assert!(t.sends.is_empty());
        let now = origin + Duration::from_millis(2);
        t.now_us(now);
        let ns = t.sent_ns(early);
        assert_eq!(t.rtt_us(now, early, ns), 3000);
    }
}
