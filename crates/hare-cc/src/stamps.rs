//! quinn's `Instant`s as the kernel model's microseconds: a nanosecond clock owned by the
//! controller, set at the adapter boundary with std's documented `Instant` arithmetic only.
//!
//! # How
//! Every ACK frame needs its `now` and its RTT samples (`now - sent` of its newest and oldest
//! packet). The clock keeps the origin `Instant` (the `now` the controller was built at) and
//! turns an `Instant` into nanoseconds since it with [`Instant::checked_duration_since`]
//! (std: `Some(self - earlier)`, `None` when `earlier` is later; the result is a
//! [`Duration`], whose nanoseconds are exact). std's subtraction is an out-of-line call, so
//! each conversion is done once and remembered with its `Instant` (`Instant: Eq` and `Ord`
//! are the only other operations used):
//! - one conversion per distinct `now`: quinn passes the same `now` to every callback of an
//!   ACK frame and to the transmit it releases, which then costs one comparison;
//! - one conversion per distinct send time an RTT sample reads: the last one is remembered,
//!   so a frame whose oldest packet shares the previous frame's newest packet's transmit (the
//!   usual case when transmits and frames are not aligned) converts only its newest.
//!
//! An RTT is the difference of two such offsets, cut to whole microseconds. A send time
//! before the origin (quinn hands a path's new controller the acknowledgements of packets
//! sent on the path before it) or a `now` before it has no offset: that sample is std's
//! [`Instant::saturating_duration_since`] of the two `Instant`s directly.

use std::time::{Duration, Instant};

/// The controller's clock: `Instant`s as nanoseconds and microseconds since its origin.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamps {
    origin: Instant,
    /// The last `now` converted: RTTs are measured at it.
    now: Instant,
    /// `now`'s nanoseconds since the origin (`None` when it precedes the origin).
    now_ns: Option<u64>,
    /// Microseconds since the origin of the latest `now`: never goes back (the kernel's
    /// clock does not), even if quinn's `now` stutters.
    last_now_us: u64,
    /// The last send time an RTT sample converted, and its nanoseconds since the origin
    /// (`None` when it precedes the origin).
    sent: Instant,
    sent_ns: Option<u64>,
}

impl Stamps {
    /// A clock whose time 0 is `origin`.
    pub(crate) fn new(origin: Instant) -> Self {
        Stamps {
            origin,
            now: origin,
            now_ns: Some(0),
            last_now_us: 0,
            sent: origin,
            sent_ns: Some(0),
        }
    }

    /// The origin.
    pub(crate) fn origin(&self) -> Instant {
        self.origin
    }

    /// Microseconds since the origin of the latest `now` seen.
    pub(crate) fn last_now_us(&self) -> u64 {
        self.last_now_us
    }

    /// `now` in microseconds since the origin, at least the last value returned; `now`
    /// becomes the time RTTs are measured at ([`Stamps::rtt_us`]).
    #[inline]
    pub(crate) fn now_us(&mut self, now: Instant) -> u64 {
        if now == self.now {
            return self.last_now_us;
        }
        self.now = now;
        self.now_ns = self.offset_ns(now);
        self.last_now_us = (self.now_ns.unwrap_or(0) / 1000).max(self.last_now_us);
        self.last_now_us
    }

    /// The RTT in whole microseconds of a packet sent at `sent` and acknowledged at the last
    /// `now` given to [`Stamps::now_us`] (0 if it was sent later). `sent` may precede the
    /// origin.
    #[inline]
    pub(crate) fn rtt_us(&mut self, sent: Instant) -> u64 {
        if sent != self.sent {
            self.sent = sent;
            self.sent_ns = self.offset_ns(sent);
        }
        match (self.now_ns, self.sent_ns) {
            (Some(now_ns), Some(sent_ns)) => now_ns.saturating_sub(sent_ns) / 1000,
            _ => nanos(self.now.saturating_duration_since(sent)) / 1000,
        }
    }

    /// `at`'s nanoseconds since the origin, `None` if it precedes the origin.
    #[inline]
    fn offset_ns(&self, at: Instant) -> Option<u64> {
        at.checked_duration_since(self.origin).map(nanos)
    }
}

/// `d` in whole nanoseconds, `u64::MAX` beyond it (584 years).
#[inline]
fn nanos(d: Duration) -> u64 {
    d.as_secs()
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(u64::from(d.subsec_nanos())))
        .unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// std's own whole microseconds of `d`.
    fn micros(d: Duration) -> u64 {
        u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
    }

    #[test]
    fn an_rtt_is_now_minus_sent_in_whole_microseconds() {
        let t0 = Instant::now();
        let mut s = Stamps::new(t0);
        let sends = [
            Duration::ZERO,
            Duration::from_nanos(999),
            Duration::from_nanos(1_000),
            Duration::from_nanos(80_000_999),
            Duration::new(3, 5),
        ];
        let nows = [
            Duration::from_nanos(1_998),
            Duration::from_nanos(80_001_000),
            Duration::new(3, 80_000_004),
            Duration::new(7_200, 1),
        ];
        for now in nows {
            assert_eq!(s.now_us(t0 + now), micros(now));
            // Each send time twice in a row: the second reads the remembered conversion.
            for sent in sends.iter().flat_map(|&d| [d, d]) {
                let expected = micros((t0 + now).saturating_duration_since(t0 + sent));
                assert_eq!(expected, micros(now.saturating_sub(sent)));
                assert_eq!(s.rtt_us(t0 + sent), expected, "{now:?} - {sent:?}");
            }
        }
    }

    #[test]
    fn rtts_agree_with_std_subtraction_on_a_stream_of_times() {
        // Send and acknowledgement times a few hundred nanoseconds apart, across second
        // boundaries: every sample is std's `now - sent` cut to whole microseconds.
        let t0 = Instant::now();
        let mut s = Stamps::new(t0);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut sent = Duration::ZERO;
        let mut now = Duration::from_millis(80);
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            sent += Duration::from_nanos(x % 120_000);
            now = now.max(sent) + Duration::from_nanos((x >> 20) % 3_000);
            s.now_us(t0 + now);
            let expected = micros((t0 + now).saturating_duration_since(t0 + sent));
            assert_eq!(s.rtt_us(t0 + sent), expected, "{now:?} - {sent:?}");
        }
    }

    #[test]
    fn now_never_goes_back_but_rtts_use_the_real_now() {
        let t0 = Instant::now();
        let mut s = Stamps::new(t0);
        assert_eq!(s.now_us(t0 + Duration::from_millis(5)), 5_000);
        assert_eq!(s.now_us(t0 + Duration::from_millis(4)), 5_000);
        assert_eq!(s.last_now_us(), 5_000);
        assert_eq!(s.rtt_us(t0 + Duration::from_millis(1)), 3_000);
        assert_eq!(s.rtt_us(t0 + Duration::from_millis(6)), 0);
        assert_eq!(s.origin(), t0);
    }

    #[test]
    fn a_now_before_the_origin_is_time_zero_and_rtts_may_start_before_it() {
        let t1 = Instant::now() + Duration::from_secs(10);
        let mut s = Stamps::new(t1);
        assert_eq!(s.now_us(t1 - Duration::from_secs(1)), 0);
        // RTTs at a `now` before the origin: std's subtraction of the two.
        assert_eq!(s.rtt_us(t1 - Duration::from_secs(2)), 1_000_000);
        assert_eq!(s.rtt_us(t1), 0);
        assert_eq!(s.now_us(t1 + Duration::from_micros(1500)), 1_500);
        // A packet of the path sent before this controller was built.
        assert_eq!(s.rtt_us(t1 - Duration::from_secs(1)), 1_001_500);
        assert_eq!(s.rtt_us(t1 - Duration::from_nanos(1)), 1_500);
        assert_eq!(s.rtt_us(t1 + Duration::from_nanos(1)), 1_499);
    }

    #[test]
    fn nanos_saturates() {
        assert_eq!(nanos(Duration::new(1, 7)), 1_000_000_007);
        assert_eq!(nanos(Duration::MAX), u64::MAX);
    }
}
