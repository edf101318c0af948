//! quinn's `Instant`s as the kernel model's microseconds, without std's `Instant`
//! subtraction on every ACK frame where it can be avoided.
//!
//! # Why
//! Every ACK frame needs its `now` and its RTT samples (`now - sent` of its newest and oldest
//! packet) in microseconds. std's `Instant` subtraction is an out-of-line call chain that
//! passes its operands and its result through memory; at two or three per frame it was the
//! largest single cost of the adapter (measured with `benches/ack_frame.rs`; the figures are
//! in the crate README, "Tests, fuzzing, benchmark").
//!
//! # How
//! `Instant` offers no accessor for its value, but it implements `Hash`, and on Linux its hash
//! feeds the hasher the clock reading itself: whole seconds (`write_i64`) then nanoseconds
//! (`write_u32`, below 10^9), the fields of its `timespec` (`docs/PLATFORM.md`). [`Stamps`]
//! reads an `Instant` through a hasher that records those two writes (a `u64` of seconds is
//! taken too) and turns them into nanoseconds. Nothing relies on that layout unchecked, so a
//! platform or a std whose `Instant` hashes otherwise only takes the slower path:
//! - at construction the reading is compared with std's own arithmetic on probes around the
//!   origin (sub-second and whole-second steps, a day); if any differs, or the hash writes
//!   anything else, every conversion uses std's subtraction;
//! - each reading is checked again (exactly those two writes, nanoseconds below 10^9, no
//!   overflow), and falls back to std's subtraction if not.
//!
//! The results are those of std's arithmetic: a difference of two exact nanosecond readings,
//! cut to whole microseconds (`Duration::as_micros` of the difference), saturating at 0.

use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

/// A hasher that records an `Instant`'s two hash writes: seconds, then nanoseconds.
#[derive(Default)]
struct Reading {
    /// Writes seen so far (a third, or any other kind, makes the reading invalid).
    writes: u8,
    secs: i64,
    nanos: u32,
    invalid: bool,
}

impl Reading {
    fn seconds(&mut self, secs: Option<i64>) {
        if let (0, Some(secs)) = (self.writes, secs) {
            self.secs = secs;
        } else {
            self.invalid = true;
        }
        self.writes = self.writes.saturating_add(1);
    }

    /// The reading in nanoseconds, if it is one.
    fn nanoseconds(&self) -> Option<i64> {
        if self.invalid || self.writes != 2 || self.nanos >= 1_000_000_000 {
            return None;
        }
        self.secs
            .checked_mul(1_000_000_000)?
            .checked_add(i64::from(self.nanos))
    }
}

impl Hasher for Reading {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, _bytes: &[u8]) {
        // Any write other than the two below: not a clock reading this module knows.
        self.invalid = true;
    }
    fn write_i64(&mut self, secs: i64) {
        self.seconds(Some(secs));
    }
    fn write_u64(&mut self, secs: u64) {
        self.seconds(i64::try_from(secs).ok());
    }
    fn write_u32(&mut self, nanos: u32) {
        if self.writes == 1 {
            self.nanos = nanos;
        } else {
            self.invalid = true;
        }
        self.writes = self.writes.saturating_add(1);
    }
}

/// `at` in nanoseconds of its clock, read through its `Hash` (see the module docs).
#[inline]
fn read_ns(at: &Instant) -> Option<i64> {
    let mut r = Reading::default();
    at.hash(&mut r);
    r.nanoseconds()
}

/// Steps from the origin on which the reading is compared with std's arithmetic.
const PROBES: [Duration; 6] = [
    Duration::from_nanos(1),
    Duration::from_nanos(999_999_999),
    Duration::from_secs(1),
    Duration::new(1, 500_000_007),
    Duration::new(3, 999_999_999),
    Duration::new(86_400, 123_456_789),
];

/// The controller's clock: `Instant`s as microseconds since its origin.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamps {
    origin: Instant,
    /// The origin's reading, when readings agree with std's arithmetic.
    origin_ns: Option<i64>,
    /// The last `now` converted, and its reading (when readings are used): quinn passes the
    /// same `now` to every callback of an ACK frame and the transmit it releases.
    now: Instant,
    now_read: Option<i64>,
    /// Microseconds since the origin of the latest `now`: never goes back (the kernel's
    /// clock does not), even if quinn's `now` stutters.
    last_now_us: u64,
}

impl Stamps {
    /// A clock whose time 0 is `origin`.
    pub(crate) fn new(origin: Instant) -> Self {
        let origin_ns = readings_agree(origin).then(|| read_ns(&origin)).flatten();
        Stamps {
            origin,
            origin_ns,
            now: origin,
            now_read: origin_ns,
            last_now_us: 0,
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
        self.now_read = self.read(&now);
        let since_origin = match (self.now_read, self.origin_ns) {
            (Some(now_ns), Some(origin_ns)) => non_negative(now_ns.saturating_sub(origin_ns)),
            _ => nanos(now.saturating_duration_since(self.origin)),
        };
        self.last_now_us = (since_origin / 1000).max(self.last_now_us);
        self.last_now_us
    }

    /// The RTT in whole microseconds of a packet sent at `sent` and acknowledged at the last
    /// `now` given to [`Stamps::now_us`] (0 if it was sent later). `sent` may precede the
    /// origin: quinn hands a path's new controller the acknowledgements of packets sent on
    /// the path before it.
    #[inline]
    pub(crate) fn rtt_us(&self, sent: Instant) -> u64 {
        if let (Some(now_ns), Some(sent_ns)) = (self.now_read, self.read(&sent)) {
            return non_negative(now_ns.saturating_sub(sent_ns)) / 1000;
        }
        nanos(self.now.saturating_duration_since(sent)) / 1000
    }

    /// `at`'s reading, if readings agreed with std's arithmetic at construction.
    #[inline]
    fn read(&self, at: &Instant) -> Option<i64> {
        self.origin_ns.and_then(|_| read_ns(at))
    }
}

/// `d` as a count of nanoseconds, 0 when negative.
fn non_negative(d: i64) -> u64 {
    u64::try_from(d).unwrap_or(0)
}

/// Whether reading `Instant`s near `origin` gives std's differences.
fn readings_agree(origin: Instant) -> bool {
    let Some(origin_ns) = read_ns(&origin) else {
        return false;
    };
    PROBES.iter().all(|&step| {
        let Some(later) = origin.checked_add(step) else {
            // Too close to the clock's end to probe: do not rely on readings.
            return false;
        };
        let read = read_ns(&later).and_then(|ns| ns.checked_sub(origin_ns));
        read.and_then(|d| u64::try_from(d).ok()) == Some(nanos(later - origin))
    })
}

/// `d` in whole nanoseconds, `u64::MAX` beyond it (584 years).
fn nanos(d: Duration) -> u64 {
    d.as_secs()
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(u64::from(d.subsec_nanos())))
        .unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(d: Duration) -> u64 {
        u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
    }

    #[test]
    fn this_platform_reads_instants_through_their_hash() {
        // Not a requirement of the adapter (it falls back to std's subtraction), but the
        // platforms hare is built and benchmarked on must take the fast path.
        assert!(Stamps::new(Instant::now()).origin_ns.is_some());
    }

    #[test]
    fn an_rtt_is_now_minus_sent_in_whole_microseconds() {
        let t0 = Instant::now();
        for mut s in [Stamps::new(t0), fallback(t0)] {
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
                for sent in sends {
                    let expected = micros(now.saturating_sub(sent));
                    assert_eq!(s.rtt_us(t0 + sent), expected, "{now:?} - {sent:?}");
                }
            }
        }
    }

    #[test]
    fn now_never_goes_back_but_rtts_use_the_real_now() {
        let t0 = Instant::now();
        for mut s in [Stamps::new(t0), fallback(t0)] {
            assert_eq!(s.now_us(t0 + Duration::from_millis(5)), 5_000);
            assert_eq!(s.now_us(t0 + Duration::from_millis(4)), 5_000);
            assert_eq!(s.last_now_us(), 5_000);
            assert_eq!(s.rtt_us(t0 + Duration::from_millis(1)), 3_000);
            assert_eq!(s.rtt_us(t0 + Duration::from_millis(6)), 0);
            assert_eq!(s.origin(), t0);
        }
    }

    #[test]
    fn a_now_before_the_origin_is_time_zero_and_rtts_may_start_before_it() {
        let t1 = Instant::now() + Duration::from_secs(10);
        for mut s in [Stamps::new(t1), fallback(t1)] {
            assert_eq!(s.now_us(t1 - Duration::from_secs(1)), 0);
            assert_eq!(s.now_us(t1 + Duration::from_micros(1500)), 1_500);
            // A packet of the path sent before this controller was built.
            assert_eq!(s.rtt_us(t1 - Duration::from_secs(1)), 1_001_500);
            assert_eq!(s.rtt_us(t1 - Duration::from_nanos(1)), 1_500);
        }
    }

    #[test]
    fn a_reading_of_other_writes_is_no_reading() {
        let mut r = Reading::default();
        r.write_i64(5);
        r.write_u32(7);
        assert_eq!(r.nanoseconds(), Some(5_000_000_007));
        r.write_u32(7);
        assert_eq!(r.nanoseconds(), None);
        let mut r = Reading::default();
        r.write_u64(1);
        r.write_u32(1_000_000_000);
        assert_eq!(r.nanoseconds(), None);
        let mut r = Reading::default();
        r.write_u8(1);
        assert_eq!(r.nanoseconds(), None);
        let mut r = Reading::default();
        r.write_u64(u64::MAX);
        r.write_u32(0);
        assert_eq!(r.nanoseconds(), None, "beyond i64 nanoseconds");
    }

    #[test]
    fn nanos_saturates() {
        assert_eq!(nanos(Duration::new(1, 7)), 1_000_000_007);
        assert_eq!(nanos(Duration::MAX), u64::MAX);
    }

    /// A clock that uses std's subtraction for everything.
    fn fallback(origin: Instant) -> Stamps {
        Stamps {
            origin_ns: None,
            now_read: None,
            ..Stamps::new(origin)
        }
    }
}
