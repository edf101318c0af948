//! The slow-start family, beside the algorithm modules that use it: the standard slow start
//! of the era and RFC 3742 limited slow start (both `tcp_slow_start()` of
//! [`crate::tcp_cong`]), the `initial_ssthresh` module parameter ([`initial_ssthresh`]),
//! kernel HyStart of every era ([`hystart`], first in 2.6.29 by ae27e98a5152, with the delay
//! samples it reads, [`delay`]) and HyStart++ ([`hystart_pp`], RFC 9406, named and
//! non-kernel).
//!
//! [`SlowStart`] holds the part of CUBIC's `struct bictcp` that belongs to them (`delay_min`,
//! HyStart's round) and the strategy in force. [`crate::cubic::Cubic`] always has one. BIC
//! and Reno have one only when a spec names `slow_start=hystart` or `hystart++` for them
//! ([`SlowStart::named_for`]), a combination no kernel had: they then run this same code
//! (with their own `epoch_start`, or none for Reno, for the blackout); otherwise they call
//! `tcp_slow_start()` directly.

pub mod delay;
pub mod hystart;
pub mod hystart_pp;

use crate::clock::KernelClock;
use crate::events::{ExitReason, TRACE_TARGET};
use crate::ops::{CssChange, OpsCtx, SsExit};
use crate::profile::{Algorithm, ClockKind, Profile, RoundReset, RttSample, SlowStartKind};
use crate::tcp_cong;
use crate::tcp_sock::TcpSock;
use delay::{delay_at, in_blackout, DelayRules};
use hystart::{HyStart, HyStartInput};
use hystart_pp::{HyStartPp, PpTransition};

/// `delay_min`, HyStart's round state and HyStart++'s, and the strategy in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlowStart {
    pub(crate) kind: SlowStartKind,
    pub(crate) rules: DelayRules,
    pub(crate) delay_min: u32,
    pub(crate) hystart: HyStart,
    pub(crate) hspp: HyStartPp,
}

crate::accessors!(SlowStart {
    /// The slow-start strategy in force (HyStart++ becomes `standard` after an RTO).
    kind = kind: SlowStartKind;
    /// `delay_min`: jiffies << 3, ms << 3 or us (see [`ClockKind`]); 0 = no sample yet.
    delay_min = delay_min: u32, set_delay_min;
    /// Kernel HyStart's fields of `struct bictcp`.
    hystart = hystart: HyStart;
    /// HyStart++'s state (named, non-kernel).
    hystart_pp = hspp: HyStartPp;
});

/// The HyStart clock of the era (jiffies, ms or us) at `now_us`.
pub fn hystart_clock(p: &Profile, clock: &KernelClock, now_us: u64) -> u32 {
    match p.clock {
        ClockKind::Jiffies => clock.jiffies(now_us),
        ClockKind::Ms => clock.ms_clock(now_us),
        ClockKind::Us => clock.us_clock(now_us),
    }
}

/// `bictcp_init()` of `tcp_cubic.c` and `tcp_bic.c`: the `initial_ssthresh` module parameter
/// sets `snd_ssthresh` when not 0, unless `hystart_on`: CUBIC honours it only while its
/// HyStart is off (ae27e98a5152). Reno (no `init` hook) never reads it.
pub(crate) fn initial_ssthresh(ctx: &mut OpsCtx<'_>, hystart_on: bool) {
    let p = ctx.profile;
    if p.initial_ssthresh != 0 && !hystart_on {
        ctx.tp.snd_ssthresh = p.initial_ssthresh;
    }
}

impl SlowStart {
    /// CUBIC's slow-start code for BIC or Reno when the profile names a strategy only CUBIC
    /// has (`slow_start=hystart` or `hystart++`); `None` for the kernel's own slow start.
    pub fn named_for(p: &Profile, algorithm: Algorithm) -> Option<SlowStart> {
        let kind = p.slow_start_for(algorithm);
        matches!(kind, SlowStartKind::HyStart | SlowStartKind::HyStartPp)
            .then(|| SlowStart::new(p, kind, &KernelClock::new(p.hz, p.uptime_ms)))
    }

    /// The state `bictcp_init()` leaves: no delay yet, a HyStart round started at time 0
    /// (`bictcp_hystart_reset()`).
    pub fn new(p: &Profile, kind: SlowStartKind, clock: &KernelClock) -> Self {
        let mut hystart = HyStart::default();
        hystart.reset_round(hystart_clock(p, clock, 0), 0);
        SlowStart {
            kind,
            rules: DelayRules {
                clock: p.clock,
                rtt_sample: p.rtt_sample,
                blackout: p.delay_blackout,
                hystart: kind == SlowStartKind::HyStart,
            },
            delay_min: 0,
            hystart,
            hspp: HyStartPp::new(0),
        }
    }

    /// Kernel HyStart's fields to change in place (`found`, `round_start`, `end_seq`,
    /// `last_ack`, `curr_rtt`, `sample_cnt`: [`HyStart`]'s setters).
    pub fn hystart_mut(&mut self) -> &mut HyStart {
        &mut self.hystart
    }

    /// In HyStart++'s Conservative Slow Start.
    pub fn in_css(&self) -> bool {
        self.kind == SlowStartKind::HyStartPp && self.hspp.in_css
    }

    /// The delay part of `pkts_acked` (`bictcp_acked()`), after the module's `delayed_ack`:
    /// HyStart++'s per-ACK bookkeeping in slow start, then (2.6.29+) the delay sample.
    #[inline]
    pub(crate) fn sample_acked(
        &mut self,
        ctx: &mut OpsCtx<'_>,
        epoch_start: u32,
        rtt_us: Option<u64>,
    ) {
        if self.kind == SlowStartKind::HyStartPp && ctx.tp.in_slow_start(ctx.profile.ss_compare) {
            self.hystart_pp_ack(&mut ctx.reborrow(), rtt_us);
        }
        // 2.6.20 - 2.6.22 measure the delay in cong_avoid (timestamps) instead.
        if ctx.profile.rtt_sample == RttSample::Tsecr {
            return;
        }
        if let Some(rtt) = rtt_us {
            self.delay_sample(ctx, epoch_start, rtt);
        }
    }

    /// 2.6.20 - 2.6.22 `measure_delay()`, called first in `bictcp_cong_avoid()` (before the
    /// cwnd-limited test) with the echoed timestamp's RTT.
    #[inline]
    pub(crate) fn measure_delay(
        &mut self,
        ctx: &mut OpsCtx<'_>,
        epoch_start: u32,
        rtt_us: Option<u64>,
    ) {
        if ctx.profile.rtt_sample != RttSample::Tsecr {
            return;
        }
        if let Some(rtt) = rtt_us {
            self.delay_sample(ctx, epoch_start, rtt);
        }
    }

    /// Blackout, `delay_min`, then HyStart.
    #[inline(always)]
    fn delay_sample(&mut self, ctx: &mut OpsCtx<'_>, epoch_start: u32, rtt_us: u64) {
        let Some(delay) = delay_at(&self.rules, ctx.clock, ctx.now_us, ctx.now_j, rtt_us) else {
            return;
        };
        // Discard delay samples right after fast recovery.
        if in_blackout(epoch_start, &self.rules, ctx.clock, ctx.now_j) {
            return;
        }
        // first time call or link delay decreases
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        // `if (!ca->found && tcp_in_slow_start(tp) && hystart) hystart_update(sk, delay)`
        // (the 2.6.29 - 5.15 low-window gate is in hystart_update() below, as hare puts
        // every era's round and window gates there).
        if self.kind == SlowStartKind::HyStart
            && self.hystart.found == 0
            && ctx.tp.in_slow_start(ctx.profile.ss_compare)
        {
            self.hystart_update(&mut ctx.reborrow(), delay);
        }
    }

    /// `hystart_update()` in slow start before an exit was found, with the low-window gate
    /// and round resets of the era.
    #[inline(never)]
    fn hystart_update(&mut self, ctx: &mut OpsCtx<'_>, delay: u32) {
        let p = ctx.profile;
        let cwnd = ctx.tp.snd_cwnd;
        let low = p.hystart_low_window;
        let now = hystart_clock(p, ctx.clock, ctx.now_us);
        match p.hystart_round_reset {
            // 2.6.29 - 5.15: `if (hystart && tcp_in_slow_start && tp->snd_cwnd >=
            // hystart_low_window) hystart_update()`, rounds reset in cong_avoid.
            RoundReset::CongAvoid => {
                if cwnd < low {
                    return;
                }
            }
            RoundReset::UpdateAfterLowWindow => {
                if cwnd < low {
                    return;
                }
                if self.hystart.round_over(ctx.tp.snd_una) {
                    self.new_round(ctx.tp, ctx.now_us, now);
                }
            }
            // 4e1fddc98d25 (5.16): the round reset moved into hystart_update(), ahead of the
            // low-window test.
            RoundReset::UpdateBeforeLowWindow => {
                if self.hystart.round_over(ctx.tp.snd_una) {
                    self.new_round(ctx.tp, ctx.now_us, now);
                }
                if cwnd < low {
                    return;
                }
            }
        }
        let inp = HyStartInput {
            profile: p,
            now,
            delay_min: self.delay_min,
            ack_delay_us: hystart_ack_delay_us(
                p.gso_max_size,
                ctx.tp.sk_pacing_rate(p.max_pacing_rate),
            ),
            paced: ctx.paced,
            hz: ctx.clock.hz(),
        };
        if let Some(reason) = self.hystart.detect(&inp, delay) {
            ctx.tp.snd_ssthresh = cwnd;
            ctx.out.exit = Some(SsExit {
                t_us: ctx.now_us,
                cwnd,
                reason,
            });
        }
    }

    /// `bictcp_hystart_reset()` at a round boundary.
    fn new_round(&mut self, tp: &TcpSock, now_us: u64, now: u32) {
        self.hystart.reset_round(now, tp.snd_nxt);
        tracing::debug!(
            target: TRACE_TARGET,
            t_us = now_us,
            cwnd = tp.snd_cwnd,
            end_seq = tp.snd_nxt,
            delay_min = self.delay_min,
            "hystart round"
        );
    }

    /// HyStart++ bookkeeping of one ACK in slow start / CSS.
    fn hystart_pp_ack(&mut self, ctx: &mut OpsCtx<'_>, rtt_us: Option<u64>) {
        let tp = &mut *ctx.tp;
        let t = self
            .hspp
            .on_ack(ctx.profile, tp.snd_una, tp.snd_nxt, rtt_us);
        let cwnd = tp.snd_cwnd;
        let t_us = ctx.now_us;
        match t {
            PpTransition::None => {}
            PpTransition::EnterCss => {
                tracing::info!(target: TRACE_TARGET, t_us, cwnd, "css entered");
                ctx.out.css = Some(CssChange {
                    entered: true,
                    t_us,
                    cwnd,
                });
            }
            PpTransition::AbortCss => {
                tracing::info!(target: TRACE_TARGET, t_us, cwnd, "css aborted");
                ctx.out.css = Some(CssChange {
                    entered: false,
                    t_us,
                    cwnd,
                });
            }
            PpTransition::CssDone => {
                tp.snd_ssthresh = cwnd;
                ctx.out.exit = Some(SsExit {
                    t_us,
                    cwnd,
                    reason: ExitReason::CssDone,
                });
            }
        }
    }

    /// The slow-start step of `cong_avoid` for `acked` packets: the 2.6.29 round reset, then
    /// HyStart++'s increase or the era's `tcp_slow_start()`. Returns the packets left for
    /// congestion avoidance in the same call (0 when the ACK is used up).
    pub(crate) fn slow_start(&mut self, ctx: &mut OpsCtx<'_>, acked: u32) -> u32 {
        let p = ctx.profile;
        if self.kind == SlowStartKind::HyStart
            && p.hystart_round_reset == RoundReset::CongAvoid
            && self.hystart.round_over(ctx.tp.snd_una)
        {
            // 2.6.29 - 5.15 bictcp_cong_avoid(): `if (hystart && after(ack, ca->end_seq))
            // bictcp_hystart_reset(sk)`.
            let now = hystart_clock(p, ctx.clock, ctx.now_us);
            self.new_round(ctx.tp, ctx.now_us, now);
        }
        if self.kind == SlowStartKind::HyStartPp {
            let inc = self.hspp.increase(p, acked, ctx.paced);
            let tp = &mut *ctx.tp;
            tp.snd_cwnd = tp.snd_cwnd.saturating_add(inc).min(tp.snd_cwnd_clamp);
            return 0;
        }
        let limited = self.kind == SlowStartKind::Limited;
        let (left, guards) = tcp_cong::slow_start(ctx.tp, p, limited, acked);
        ctx.out.guards = ctx.out.guards.saturating_add(guards);
        left
    }

    /// The `set_state(TCP_CA_Loss)` part: `bictcp_reset()` clears `delay_min` and `found`,
    /// `bictcp_hystart_reset()` starts a round; HyStart++ is for the initial slow start only
    /// (RFC 9406 section 4.3) and gives way to standard slow start.
    pub(crate) fn on_loss_state(&mut self, ctx: &OpsCtx<'_>) {
        self.delay_min = 0;
        self.hystart.found = 0;
        let now = hystart_clock(ctx.profile, ctx.clock, ctx.now_us);
        self.hystart.reset_round(now, ctx.tp.snd_nxt);
        if self.kind == SlowStartKind::HyStartPp {
            self.kind = SlowStartKind::Standard;
            self.hspp.in_css = false;
        }
    }

    /// A window reduction ends HyStart++'s Conservative Slow Start.
    pub(crate) fn on_reduction(&mut self) {
        self.hspp.in_css = false;
    }
}

/// `hystart_ack_delay()` (42f3a8aaae66): `min(1000 us, gso_max_size * 4 * 10^6 / rate)`, 0
/// without a pacing rate.
pub fn hystart_ack_delay_us(gso_max_size: u32, pacing_rate: u64) -> u32 {
    if pacing_rate == 0 {
        return 0;
    }
    let cushion = u64::from(gso_max_size) * 4 * 1_000_000 / pacing_rate;
    cushion.min(1000) as u32
}
