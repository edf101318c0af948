//! CUBIC's delay measurement: the sample `bictcp_acked()` (2.6.29+) or `measure_delay()`
//! (2.6.20 - 2.6.22) takes from one ACK, the 1 s blackout after an epoch start, and the
//! units of `delay_min` per era (jiffies << 3, ms << 3, us).
//!
//! `delay_min` lives in CUBIC's `struct bictcp` ([`crate::slow_start::SlowStart`]); the
//! blackout reads the module's `epoch_start`.

use crate::clock::{jiffies_to_usecs, usecs_to_jiffies, KernelClock, USEC_PER_SEC};
use crate::profile::{ClockKind, DelayBlackout, RttSample};

/// How delay samples are taken and expressed in one era.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelayRules {
    /// Clock / unit of `delay_min`.
    pub clock: ClockKind,
    /// Source and quantisation of the samples.
    pub rtt_sample: RttSample,
    /// The 1 s blackout rule.
    pub blackout: DelayBlackout,
    /// HyStart is on (2.6.39's `TCP_CONG_RTT_STAMP` at HZ < 1000).
    pub hystart: bool,
}

/// True while samples are discarded "right after fast recovery": less than 1 s (HZ jiffies)
/// after `epoch_start`.
#[inline]
pub fn in_blackout(epoch_start: u32, rules: &DelayRules, clock: &KernelClock, now_j: u32) -> bool {
    let recent = (now_j.wrapping_sub(epoch_start) as i32) < clock.hz() as i32;
    match rules.blackout {
        DelayBlackout::Always => recent,
        DelayBlackout::EpochStarted => epoch_start != 0 && recent,
    }
}

/// One RTT sample (`now - sent` of the newest acknowledged packet) as the era's delay value,
/// `None` when the era would not produce a sample. Does not apply the blackout.
#[cfg_attr(not(test), allow(dead_code))]
#[inline(always)]
pub fn delay_of(rules: &DelayRules, clock: &KernelClock, now_us: u64, rtt_us: u64) -> Option<u32> {
    delay_at(rules, clock, now_us, clock.jiffies(now_us), rtt_us)
}

/// [`delay_of`] with the jiffies at `now_us` already known (`now_j`, the ACK's).
#[inline(always)]
pub(crate) fn delay_at(
    rules: &DelayRules,
    clock: &KernelClock,
    now_us: u64,
    now_j: u32,
    rtt_us: u64,
) -> Option<u32> {
    if rules.rtt_sample == RttSample::Tsecr && rules.clock == ClockKind::Jiffies {
        return tsecr_sample(clock, now_us, now_j, rtt_us);
    }
    // From 2.6.29 the kernel passes rtt_us as an s32: larger values are negative, i.e. no
    // sample.
    if rtt_us > i32::MAX as u64 {
        return None;
    }
    let rtt_us = match rules.rtt_sample {
        RttSample::Us => rtt_us,
        _ => match tick_sample(rules, clock, now_us, now_j, rtt_us)? {
            TickSample::Us(us) => us,
            TickSample::Ticks(ticks) => {
                let us = jiffies_to_usecs(clock.hz(), ticks);
                if rules.clock == ClockKind::Jiffies && us <= u64::from(u32::MAX) {
                    // A whole number of ticks in the jiffies eras' own unit (`delay =
                    // (tcp_time_stamp - rcv_tsecr) << 3` and the like): the conversion below
                    // gives it back unchanged, `usecs_to_jiffies(ticks * 10^6 / HZ)`.
                    return Some((ticks << 3).max(1));
                }
                us
            }
        },
    };
    let delay = match rules.clock {
        ClockKind::Us => rtt_us as u32,
        ClockKind::Ms => ((rtt_us << 3) / 1000) as u32,
        ClockKind::Jiffies => {
            usecs_to_jiffies(clock.hz(), rtt_us.min(u64::from(u32::MAX)) as u32) << 3
        }
    };
    Some(delay.max(1))
}

/// 2.6.20 - 2.6.22 `measure_delay()`: `delay = (tcp_time_stamp - rcv_tsecr) << 3` in u32
/// (bits shifted out are lost), 1 for 0. The echoed timestamp is the jiffies the packet was
/// sent at; there is no signed `rtt_us` in these eras, so any RTT gives a sample. An echoed
/// timestamp of 0 reads as "no timestamp" (`!(saw_tstamp && rcv_tsecr)`), so a packet sent
/// when the u32 jiffies counter read 0 gives none.
fn tsecr_sample(clock: &KernelClock, now_us: u64, now_j: u32, rtt_us: u64) -> Option<u32> {
    let sent_j = clock.jiffies(now_us.saturating_sub(rtt_us));
    if sent_j == 0 {
        return None;
    }
    Some((now_j.wrapping_sub(sent_j) << 3).max(1))
}

/// What a tick era measures: a number of ticks, or (2.6.39 with HyStart at HZ < 1000) the
/// microsecond stamp difference.
enum TickSample {
    Ticks(u32),
    Us(u64),
}

/// The RTT sample of the eras that measure it in jiffies (to 2.6.39 at HZ 1000 or without
/// HyStart), `None` where they take no sample.
#[inline(never)]
fn tick_sample(
    rules: &DelayRules,
    clock: &KernelClock,
    now_us: u64,
    now_j: u32,
    rtt_us: u64,
) -> Option<TickSample> {
    let hz = clock.hz();
    let seq_rtt = || {
        // jiffies(now) - jiffies(sent): the tick difference, as `now - scb->when`.
        let sent = now_us.saturating_sub(rtt_us);
        now_j.wrapping_sub(clock.jiffies(sent)) as i32
    };
    match rules.rtt_sample {
        RttSample::Tsecr => {
            // 2.6.20 - 2.6.22 `measure_delay()`: `if (!(saw_tstamp && rcv_tsecr)) return`: an
            // echoed timestamp (the jiffies the packet was sent at) of 0 reads as "no
            // timestamp", so a packet sent when the u32 jiffies counter read 0 gives no sample.
            let sent_j = clock.jiffies(now_us.saturating_sub(rtt_us));
            if sent_j == 0 {
                return None;
            }
            Some(TickSample::Ticks(now_j.wrapping_sub(sent_j)))
        }
        RttSample::JiffiesPositive => {
            let j = seq_rtt();
            if j <= 0 {
                return None;
            }
            Some(TickSample::Ticks(j as u32))
        }
        RttSample::JiffiesOrStamp => {
            if rules.hystart && hz < 1000 {
                Some(TickSample::Us(rtt_us))
            } else {
                let j = seq_rtt();
                if j < 0 {
                    return None;
                }
                Some(TickSample::Ticks(j as u32))
            }
        }
        RttSample::Us => Some(TickSample::Us(rtt_us)),
    }
}

/// `delay_min` as jiffies for CUBIC's `t + delay_min`: `delay_min >> 3` (jiffies era),
/// `msecs_to_jiffies(delay_min >> 3)` (ms era) or `usecs_to_jiffies(delay_min)` (us era).
pub fn delay_min_jiffies(delay_min: u32, clock_kind: ClockKind, clock: &KernelClock) -> u32 {
    match clock_kind {
        ClockKind::Jiffies => delay_min >> 3,
        ClockKind::Ms => clock.msecs_to_jiffies(delay_min >> 3),
        ClockKind::Us => clock.usecs_to_jiffies(delay_min),
    }
}

/// A delay value of the era in microseconds (for snapshots and logs).
pub fn delay_to_us(delay: u32, clock_kind: ClockKind, hz: u32) -> u64 {
    match clock_kind {
        ClockKind::Jiffies => u64::from(delay) * USEC_PER_SEC / (8 * u64::from(hz.max(1))),
        ClockKind::Ms => u64::from(delay) * 125,
        ClockKind::Us => u64::from(delay),
    }
}

/// Ticks of the era's HyStart clock per delay value: the `<< 3` of the jiffies and ms eras.
pub fn delay_ticks(delay: u32, clock_kind: ClockKind) -> u32 {
    match clock_kind {
        ClockKind::Jiffies | ClockKind::Ms => delay >> 3,
        ClockKind::Us => delay,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The jiffies eras' sample taken the long way: ticks to microseconds and back.
    fn through_microseconds(hz: u32, ticks: u32) -> u32 {
        let us = jiffies_to_usecs(hz, ticks);
        (usecs_to_jiffies(hz, us.min(u64::from(u32::MAX)) as u32) << 3).max(1)
    }

    #[test]
    fn the_timestamp_eras_take_any_rtt_as_ticks_shifted_in_u32() {
        // 2.6.20 / 2.6.22 measure_delay() has no signed rtt_us: an RTT of 2^31 us (or more)
        // is a sample, `(now - tsecr) << 3` with the bits above 32 lost.
        let clock = KernelClock::new(250, 0);
        let rules = DelayRules {
            clock: ClockKind::Jiffies,
            rtt_sample: RttSample::Tsecr,
            blackout: DelayBlackout::Always,
            hystart: false,
        };
        let now_us = 40_000_000_000_u64;
        let now_j = clock.jiffies(now_us);
        for rtt_us in [1u64 << 31, (1 << 31) + 4_000, 3_000_000_000] {
            let ticks = now_j.wrapping_sub(clock.jiffies(now_us - rtt_us));
            let got = delay_at(&rules, &clock, now_us, now_j, rtt_us);
            assert_eq!(got, Some(ticks << 3), "rtt {rtt_us} us");
        }
        // 2^29 ticks: `<< 3` leaves 0, which the kernel makes 1.
        let rtt_us = (1u64 << 29) * 4_000;
        let now_us = rtt_us + 8_000;
        let now_j = clock.jiffies(now_us);
        assert_eq!(now_j.wrapping_sub(clock.jiffies(8_000)), 1 << 29);
        assert_eq!(delay_at(&rules, &clock, now_us, now_j, rtt_us), Some(1));
        // The s32 eras (2.6.29+) take none.
        let rules = DelayRules {
            rtt_sample: RttSample::JiffiesPositive,
            ..rules
        };
        assert_eq!(delay_at(&rules, &clock, now_us, now_j, 1 << 31), None);
    }

    #[test]
    fn a_tick_sample_is_the_microsecond_round_trip() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for hz in [100, 250, 1000] {
            let clock = KernelClock::new(hz, 0);
            let rules = DelayRules {
                clock: ClockKind::Jiffies,
                rtt_sample: RttSample::JiffiesPositive,
                blackout: DelayBlackout::Always,
                hystart: false,
            };
            let per = USEC_PER_SEC / u64::from(hz);
            // Edges: one tick, the largest tick count whose microseconds fit in a u32, the
            // next, the s32 limit on the microseconds; then random RTTs.
            let fit = (u64::from(u32::MAX) / per) as u32;
            let mut ticks: Vec<u32> = vec![1, 2, fit - 1, fit, fit + 1];
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ticks.push((x % (i32::MAX as u64 / per + 2)) as u32);
            }
            let now_j = clock.jiffies(10_000_000_000);
            for t in ticks.into_iter().filter(|&t| t > 0) {
                // An RTT of exactly `t` ticks, measured on tick boundaries.
                let rtt_us = u64::from(t) * per;
                let got = delay_at(&rules, &clock, 10_000_000_000, now_j, rtt_us);
                let expected = (rtt_us <= i32::MAX as u64).then(|| through_microseconds(hz, t));
                assert_eq!(got, expected, "hz {hz}, {t} ticks");
            }
        }
    }
}
