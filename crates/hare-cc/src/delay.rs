//! The state kernel HyStart shares with CUBIC's growth function: `delay_min` and
//! `epoch_start`.
//!
//! In `tcp_cubic.c` both live in `struct bictcp`: the growth function starts epochs (and uses
//! `t + delay_min` for its target) while the delay samples that feed `delay_min` (and HyStart)
//! are discarded for 1 s after an epoch start. hare keeps them in one [`DelayState`] owned by
//! the engine and lent to the growth algorithm and to HyStart, so HyStart can be combined with
//! BIC or Reno too (whose own `epoch_start`, if any, is this one).

use crate::clock::{jiffies_to_usecs, usecs_to_jiffies, KernelClock, USEC_PER_SEC};
use crate::profile::{ClockKind, DelayBlackout, RttSample};

/// `delay_min` and `epoch_start`, in the units of the era.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DelayState {
    /// Minimum delay: jiffies << 3, ms << 3 or us (see [`ClockKind`]); 0 = no sample yet.
    pub delay_min: u32,
    /// Jiffies at the start of the current growth epoch; 0 = none (the kernel's convention,
    /// ambiguous when the jiffies counter itself reads 0).
    pub epoch_start: u32,
}

/// How delay samples are taken and expressed in one era.
#[derive(Debug, Clone, Copy)]
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

impl DelayState {
    /// `bictcp_reset()`'s part: both zero.
    pub fn reset(&mut self) {
        *self = DelayState::default();
    }

    /// True while samples are discarded "right after fast recovery" (1 s after the epoch
    /// start, in jiffies).
    pub fn in_blackout(&self, rules: &DelayRules, clock: &KernelClock, now_j: u32) -> bool {
        let recent = (now_j.wrapping_sub(self.epoch_start) as i32) < clock.hz() as i32;
        match rules.blackout {
            DelayBlackout::Always => recent,
            DelayBlackout::EpochStarted => self.epoch_start != 0 && recent,
        }
    }

    /// One RTT sample (`now - sent` of the newest acknowledged packet) as the era's delay value,
    /// `None` when the era would not produce a sample (`rtt_us < 0`). Does not apply the
    /// blackout.
    pub fn delay_of(
        rules: &DelayRules,
        clock: &KernelClock,
        now_us: u64,
        rtt_us: u64,
    ) -> Option<u32> {
        // The kernel passes rtt_us as an s32: larger values are negative, i.e. no sample.
        if rtt_us > i32::MAX as u64 {
            return None;
        }
        let hz = clock.hz();
        let seq_rtt = || {
            // jiffies(now) - jiffies(sent): the tick difference, as `now - scb->when`.
            let sent = now_us.saturating_sub(rtt_us);
            clock.jiffies(now_us).wrapping_sub(clock.jiffies(sent)) as i32
        };
        let rtt_us: u64 = match rules.rtt_sample {
            RttSample::Tsecr => {
                // 2.6.20 - 2.6.22 `measure_delay()`: `if (!(saw_tstamp && rcv_tsecr)) return`:
                // an echoed timestamp (the jiffies the packet was sent at) of 0 reads as "no
                // timestamp", so a packet sent when the u32 jiffies counter read 0 gives no
                // sample.
                let sent_j = clock.jiffies(now_us.saturating_sub(rtt_us));
                if sent_j == 0 {
                    return None;
                }
                jiffies_to_usecs(hz, clock.jiffies(now_us).wrapping_sub(sent_j))
            }
            RttSample::JiffiesPositive => {
                let j = seq_rtt();
                if j <= 0 {
                    return None;
                }
                jiffies_to_usecs(hz, j as u32)
            }
            RttSample::JiffiesOrStamp => {
                if rules.hystart && hz < 1000 {
                    rtt_us
                } else {
                    let j = seq_rtt();
                    if j < 0 {
                        return None;
                    }
                    jiffies_to_usecs(hz, j as u32)
                }
            }
            RttSample::Us => rtt_us,
        };
        let delay = match rules.clock {
            ClockKind::Jiffies => usecs_to_jiffies(hz, rtt_us.min(u64::from(u32::MAX)) as u32) << 3,
            ClockKind::Ms => ((rtt_us << 3) / 1000) as u32,
            ClockKind::Us => rtt_us as u32,
        };
        Some(delay.max(1))
    }

    /// `if (delay_min == 0 || delay_min > delay) delay_min = delay`.
    pub fn update_min(&mut self, delay: u32) {
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
    }

    /// `delay_min` as jiffies for CUBIC's `t + delay_min`: `delay_min >> 3` (jiffies era),
    /// `msecs_to_jiffies(delay_min >> 3)` (ms era) or `usecs_to_jiffies(delay_min)` (us era).
    pub fn delay_min_jiffies(&self, clock_kind: ClockKind, clock: &KernelClock) -> u32 {
        match clock_kind {
            ClockKind::Jiffies => self.delay_min >> 3,
            ClockKind::Ms => clock.msecs_to_jiffies(self.delay_min >> 3),
            ClockKind::Us => clock.usecs_to_jiffies(self.delay_min),
        }
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
