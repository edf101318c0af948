//! Receive-window autotuning: a QUIC connection window that sizes itself the way Linux sizes a
//! TCP receive buffer.
//!
//! Linux (`tcp_rcv_space_adjust()` in `net/ipv4/tcp_input.c`, as of 6.1) looks once per receiver RTT at the bytes copied to the application during the last RTT and
//! raises the window to about twice that (`rcvwin = 2 * copied + 16 * advmss`: "to cope with
//! packet losses, we need a 2x factor"), never lowers it, and stops at `tcp_rmem[2]`.
//! [`RcvAutotune`] does the same for a QUIC connection's receive window
//! (`quinn::Connection::set_receive_window`), with the cap a memory bound of the
//! application's choosing. Two deliberate differences, both to keep the window near what
//! the path needs rather than what its queue holds:
//!
//! - the bytes of one round are scaled to the *minimum* RTT seen: a standing queue makes the
//!   smoothed RTT and so the bytes per round grow, which in the kernel lets the window follow
//!   the queue (up to 4x the path's BDP behind a one-BDP queue); here it stays near twice the
//!   bytes the path delivers in one unqueued round trip;
//! - the kernel's extra slow-start term (`grow`, which adds up to 4x more while the rate
//!   doubles) is left out: a window that is twice the last round's bytes already doubles as
//!   fast as slow start does, since a window-limited sender delivers one window per round.

use std::time::Duration;

/// First connection window of an autotuned receiver, bytes: 128 KiB, Linux's `tcp_rmem[1]`
/// default since 4.20 ("tcp: up initial rmem to 128KB and SYN rwin to around 64KB"); about ten 9000-byte or eighty 1500-byte packets, so no initial congestion window
/// is held back by it.
pub const INITIAL_WINDOW: u64 = 128 << 10;

/// Default cap of an autotuned window, bytes: 128 MiB, enough for 10 Gbit/s at 100 ms and
/// small enough for a small machine (what a sender keeps unacknowledged and a receiver holds
/// out of order after a loss is bounded by it).
pub const DEFAULT_MAX_WINDOW: u64 = 128 << 20;

/// Segments of cushion added to twice the bytes of a round: the kernel's `16 * advmss` ("some
/// cushion because of small variations").
pub const CUSHION_SEGMENTS: u64 = 16;

/// The state of one autotuned receive window.
///
/// Feed it with [`RcvAutotune::on_progress`] whenever the receiver's byte count may have
/// moved (every read, or on a timer); it answers with the new window when the window should
/// grow. The window never shrinks and never exceeds the cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RcvAutotune {
    window: u64,
    cap: u64,
    cushion: u64,
    /// Start of the current measurement: (time, byte count); the kernel's `rcvq_space.time`
    /// and `rcvq_space.seq`.
    since: Option<(Duration, u64)>,
    /// Smallest RTT seen (zero: none yet).
    min_rtt: Duration,
}

impl RcvAutotune {
    /// A window of `initial` bytes (at most `cap`) that may grow to `cap`; `mss` is the
    /// datagram payload size the cushion is counted in.
    pub fn new(initial: u64, cap: u64, mss: u64) -> Self {
        Self {
            window: initial.min(cap),
            cap,
            cushion: CUSHION_SEGMENTS.saturating_mul(mss),
            since: None,
            min_rtt: Duration::ZERO,
        }
    }

    /// The window now, bytes.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// The cap, bytes.
    pub fn cap(&self) -> u64 {
        self.cap
    }

    /// The receiver's byte count is `bytes` at `now` (any fixed origin), with `rtt` its
    /// current RTT estimate. Once at least one RTT has passed since the measurement began
    /// (the kernel's `time < rcv_rtt_est.rtt_us` check), the bytes of the measurement are
    /// scaled to one minimum RTT and the window becomes twice that plus the cushion, capped;
    /// `Some(window)` when that is larger than the window was. An RTT of zero (none
    /// measured) is no measurement.
    pub fn on_progress(&mut self, now: Duration, bytes: u64, rtt: Duration) -> Option<u64> {
        if rtt.is_zero() {
            return None;
        }
        if self.min_rtt.is_zero() || rtt < self.min_rtt {
            self.min_rtt = rtt;
        }
        let Some((t0, b0)) = self.since else {
            self.since = Some((now, bytes));
            return None;
        };
        let elapsed = now.saturating_sub(t0);
        if elapsed < rtt {
            return None;
        }
        self.since = Some((now, bytes));
        let delivered = u128::from(bytes.saturating_sub(b0));
        // Bytes per minimum RTT at the rate of this measurement; elapsed >= rtt > 0.
        let per_round = delivered * self.min_rtt.as_nanos() / elapsed.as_nanos().max(1);
        let per_round = u64::try_from(per_round).unwrap_or(u64::MAX);
        let target = per_round
            .saturating_mul(2)
            .saturating_add(self.cushion)
            .min(self.cap);
        if target > self.window {
            self.window = target;
            Some(target)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn grows_once_per_rtt_to_twice_a_round_plus_cushion() {
        let mut a = RcvAutotune::new(INITIAL_WINDOW, 1 << 30, 1000);
        assert_eq!(a.window(), 128 << 10);
        // The first call only starts the measurement.
        assert_eq!(a.on_progress(Duration::ZERO, 0, 100 * MS), None);
        // Less than one RTT later: no decision.
        assert_eq!(a.on_progress(99 * MS, 400_000, 100 * MS), None);
        // One RTT: 500,000 bytes in the round -> 2 x 500,000 + 16 x 1000.
        assert_eq!(a.on_progress(100 * MS, 500_000, 100 * MS), Some(1_016_000));
        // A round of 100,000 bytes would lower it: the window stays.
        assert_eq!(a.on_progress(200 * MS, 600_000, 100 * MS), None);
        assert_eq!(a.window(), 1_016_000);
    }

    #[test]
    fn a_queued_round_counts_at_the_minimum_rtt() {
        let mut a = RcvAutotune::new(0, 1 << 30, 0);
        assert_eq!(a.on_progress(Duration::ZERO, 0, 80 * MS), None);
        // The RTT grew to 160 ms behind a queue: 2,000,000 bytes in 160 ms is 1,000,000 per
        // 80 ms round, and the window twice that.
        assert_eq!(
            a.on_progress(160 * MS, 2_000_000, 160 * MS),
            Some(2_000_000)
        );
    }

    #[test]
    fn never_beyond_the_cap() {
        let mut a = RcvAutotune::new(1 << 20, 4 << 20, 1452);
        assert_eq!(a.on_progress(Duration::ZERO, 0, 10 * MS), None);
        assert_eq!(a.on_progress(10 * MS, 1 << 30, 10 * MS), Some(4 << 20));
        assert_eq!(a.on_progress(20 * MS, 2 << 30, 10 * MS), None);
        assert_eq!(RcvAutotune::new(8 << 20, 4 << 20, 1452).window(), 4 << 20);
        assert_eq!(a.cap(), 4 << 20);
    }

    #[test]
    fn no_rtt_is_no_measurement() {
        let mut a = RcvAutotune::new(1000, 1 << 20, 1000);
        assert_eq!(a.on_progress(Duration::ZERO, 0, Duration::ZERO), None);
        assert_eq!(a.on_progress(MS, 1 << 20, Duration::ZERO), None);
        assert_eq!(a.window(), 1000);
    }

    #[test]
    fn a_window_limited_sender_doubles_it_each_round() {
        // The sender delivers exactly one window per round: the window doubles (plus the
        // cushion), as fast as slow start grows.
        let mut a = RcvAutotune::new(INITIAL_WINDOW, 1 << 30, 0);
        let rtt = 50 * MS;
        let (mut t, mut bytes) = (Duration::ZERO, 0u64);
        assert_eq!(a.on_progress(t, bytes, rtt), None);
        for round in 1..=5u32 {
            t += rtt;
            bytes += a.window();
            assert_eq!(a.on_progress(t, bytes, rtt), Some(INITIAL_WINDOW << round));
        }
    }
}
