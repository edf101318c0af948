//! CUBIC (`net/ipv4/tcp_cubic.c`), every era, as its own `tcp_congestion_ops`: the growth
//! function (`bictcp_update()`, below), `bictcp_recalc_ssthresh()`, `bictcp_acked()`
//! (the `delayed_ack` EWMA, then the delay sample and HyStart of [`slow_start`]),
//! `bictcp_cong_avoid()`, `bictcp_state()` / `bictcp_reset()`, the idle-restart
//! `cwnd_event` and the undo rule of the era. `epoch_start` is a field of [`Cubic`];
//! `delay_min` and HyStart's fields of the kernel's `struct bictcp` are in its
//! [`SlowStart`] (the slow-start family, [`crate::slow_start`]).

use crate::clock::{after32, KernelClock};
use crate::cuberoot::{cube_root_newton, cube_root_table};
use crate::ops::{AckSample, CaEvent, CongAvoidArgs, CongestionOps, OpsCtx};
use crate::profile::{
    AiStep, Algorithm, ClockKind, CubeRootKind, CubicPreLossCap, CubicTime, DelayedAck,
    MinCntClamp, PreLossKey, Profile, SlowStartKind, UndoRule,
};
use crate::slow_start::delay::delay_min_jiffies;
use crate::slow_start::{self, SlowStart};
use crate::tcp_cong;
use crate::tcp_sock::{CaState, TcpSock};

/// One connection's `struct bictcp` (CUBIC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cubic {
    pub(crate) cnt: u32,
    pub(crate) last_max_cwnd: u32,
    pub(crate) loss_cwnd: u32,
    pub(crate) last_cwnd: u32,
    pub(crate) last_time: u32,
    pub(crate) bic_origin_point: u32,
    pub(crate) bic_k: u32,
    pub(crate) epoch_start: u32,
    pub(crate) ack_cnt: u32,
    pub(crate) tcp_cwnd: u32,
    pub(crate) delayed_ack: u32,
    pub(crate) ss: SlowStart,
    pub(crate) beta_scale: u32,
    pub(crate) cube_rtt_scale: u32,
    pub(crate) cube_factor: u64,
    pub(crate) guards: u32,
}

crate::accessors!(Cubic {
    /// `cnt`: ACKs (old eras) or packets (modern) per +1 cwnd.
    cnt = cnt: u32, set_cnt;
    /// `last_max_cwnd` (W_max).
    last_max_cwnd = last_max_cwnd: u32, set_last_max_cwnd;
    /// `loss_cwnd`: cwnd at the last loss.
    loss_cwnd = loss_cwnd: u32, set_loss_cwnd;
    /// `last_cwnd`: cwnd when `cnt` was last computed.
    last_cwnd = last_cwnd: u32, set_last_cwnd;
    /// `last_time`: jiffies when `cnt` was last computed.
    last_time = last_time: u32, set_last_time;
    /// `bic_origin_point`.
    bic_origin_point = bic_origin_point: u32, set_bic_origin_point;
    /// `bic_K` in 1/1024 s.
    bic_k = bic_k: u32, set_bic_k;
    /// `epoch_start`: jiffies at the start of the current growth epoch; 0 = none (the
    /// kernel's convention, ambiguous when the jiffies counter itself reads 0).
    epoch_start = epoch_start: u32, set_epoch_start;
    /// `ack_cnt`: ACKs (or packets) in this epoch, for the Reno estimate.
    ack_cnt = ack_cnt: u32, set_ack_cnt;
    /// `tcp_cwnd`: the Reno-equivalent window.
    tcp_cwnd = tcp_cwnd: u32, set_tcp_cwnd;
    /// `delayed_ack`: packets per ACK << 4 (EWMA), initially 2 << 4.
    delayed_ack = delayed_ack: u32, set_delayed_ack;
    /// `delay_min` and the slow-start exits (HyStart's fields of `struct bictcp`).
    slow_start = ss: SlowStart;
    /// `beta_scale` computed at "module init" (construction).
    beta_scale = beta_scale: u32;
    /// `cube_rtt_scale`.
    cube_rtt_scale = cube_rtt_scale: u32;
    /// `cube_factor`.
    cube_factor = cube_factor: u64;
    /// Times a kernel overflow / divide-by-zero / endless loop was replaced by a defined path.
    guards = guards: u32;
});

/// The words of [`Cubic`] that the growth step of one ACK (`bictcp_update()`, and the
/// 2.6.20 - 2.6.22 delay sample of `cong_avoid`) can write: saved whole before it and put
/// back whole when a loss quinn reports after the ACK frame rewinds that step (`driver.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CubicGrowth {
    cnt: u32,
    last_cwnd: u32,
    last_time: u32,
    bic_origin_point: u32,
    bic_k: u32,
    epoch_start: u32,
    ack_cnt: u32,
    tcp_cwnd: u32,
    guards: u32,
    delay_min: u32,
}

/// The words of [`Cubic`] that a growth step stopping at `bictcp_update()`'s first gate can
/// write (see [`Cubic::counters`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CubicCounters {
    ack_cnt: u32,
    delay_min: u32,
}

impl Cubic {
    /// What the growth step can write (see [`CubicGrowth`]).
    #[inline(always)]
    pub(crate) fn growth(&self) -> CubicGrowth {
        CubicGrowth {
            cnt: self.cnt,
            last_cwnd: self.last_cwnd,
            last_time: self.last_time,
            bic_origin_point: self.bic_origin_point,
            bic_k: self.bic_k,
            epoch_start: self.epoch_start,
            ack_cnt: self.ack_cnt,
            tcp_cwnd: self.tcp_cwnd,
            guards: self.guards,
            delay_min: self.ss.delay_min,
        }
    }

    /// The words of [`Cubic`] that the growth step writes on an ACK on which
    /// `bictcp_update()` stops at its first gate ([`Cubic::cnt_is_fresh`]) out of slow
    /// start: `ack_cnt` and (2.6.20 - 2.6.22, whose delay sample is taken in `cong_avoid`)
    /// `delay_min`. The save before such an ACK's growth step holds only these.
    #[inline(always)]
    pub(crate) fn counters(&self) -> CubicCounters {
        CubicCounters {
            ack_cnt: self.ack_cnt,
            delay_min: self.ss.delay_min,
        }
    }

    /// Put back a [`Cubic::counters`].
    pub(crate) fn set_counters(&mut self, c: CubicCounters) {
        (self.ack_cnt, self.ss.delay_min) = (c.ack_cnt, c.delay_min);
    }

    /// Put back a [`Cubic::growth`], every field by name.
    pub(crate) fn set_growth(&mut self, g: CubicGrowth) {
        let CubicGrowth {
            cnt,
            last_cwnd,
            last_time,
            bic_origin_point,
            bic_k,
            epoch_start,
            ack_cnt,
            tcp_cwnd,
            guards,
            delay_min,
        } = g;
        (self.cnt, self.last_cwnd, self.last_time) = (cnt, last_cwnd, last_time);
        (self.bic_origin_point, self.bic_k) = (bic_origin_point, bic_k);
        (self.epoch_start, self.ack_cnt, self.tcp_cwnd) = (epoch_start, ack_cnt, tcp_cwnd);
        (self.guards, self.ss.delay_min) = (guards, delay_min);
    }

    /// `bictcp_init()`'s state for a profile (constants computed as at module init), with the
    /// profile's slow-start strategy for CUBIC.
    pub fn new(p: &Profile) -> Self {
        let clock = KernelClock::new(p.hz, p.uptime_ms);
        Cubic {
            cnt: 0,
            last_max_cwnd: 0,
            loss_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            bic_origin_point: 0,
            bic_k: 0,
            epoch_start: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            delayed_ack: 2 << ACK_RATIO_SHIFT,
            ss: SlowStart::new(p, p.slow_start_for(Algorithm::Cubic), &clock),
            beta_scale: beta_scale(p.beta),
            cube_rtt_scale: cube_rtt_scale(p.bic_scale),
            cube_factor: cube_factor(p.bic_scale),
            guards: 0,
        }
    }

    /// `delay_min` in the era's unit (0 = no sample yet).
    pub fn delay_min(&self) -> u32 {
        self.ss.delay_min
    }

    /// Set `delay_min` (the era's unit: jiffies << 3, ms << 3 or us).
    pub fn set_delay_min(&mut self, delay_min: u32) {
        self.ss.delay_min = delay_min;
    }

    /// The slow-start state to change in place (HyStart's round: [`SlowStart::hystart_mut`]).
    pub fn slow_start_mut(&mut self) -> &mut SlowStart {
        &mut self.ss
    }

    /// `bictcp_reset()` on entering `TCP_CA_Loss`: the growth state, `epoch_start`,
    /// `delay_min` and HyStart's `found` (the caller's `SlowStart::on_loss_state`).
    /// `loss_cwnd` is part of the reset up to 2.6.39; from 3.x (when undo started to use it)
    /// it is cleared only at init.
    pub(crate) fn reset_on_loss(&mut self, p: &Profile) {
        let loss_cwnd = self.loss_cwnd;
        let guards = self.guards;
        let ss = self.ss;
        *self = Cubic::new(p);
        self.guards = guards;
        self.ss = ss;
        if p.undo == UndoRule::LossCwnd {
            self.loss_cwnd = loss_cwnd;
        }
    }

    /// `bictcp_acked()`'s EWMA: `delayed_ack += cnt - delayed_ack / 16` (state Open only,
    /// checked by the caller), in the width of the era.
    pub(crate) fn ack_ratio_sample(&mut self, cnt: u32, kind: DelayedAck) {
        match kind {
            DelayedAck::Off => {}
            DelayedAck::U32 => {
                // 2.6.20: `cnt -= delayed_ack >> 4; delayed_ack += cnt` in u32.
                self.delayed_ack = self
                    .delayed_ack
                    .wrapping_add(cnt.wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT));
            }
            DelayedAck::U16 => {
                // 2.6.29: the same on a u16 field, which wraps (and may hit 0).
                let next = self
                    .delayed_ack
                    .wrapping_add(cnt.wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT));
                self.delayed_ack = next & 0xffff;
            }
            DelayedAck::Capped => {
                let ratio = self
                    .delayed_ack
                    .wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT)
                    .wrapping_add(cnt);
                self.delayed_ack = ratio.min(ACK_RATIO_LIMIT);
            }
        }
    }

    /// `bictcp_recalc_ssthresh()`: end the epoch, set W_max (fast convergence), remember
    /// `loss_cwnd`, return `max(cwnd * beta / 1024, 2)`.
    pub(crate) fn recalc_ssthresh(&mut self, cwnd: u32, p: &Profile) -> u32 {
        self.epoch_start = 0; // end of epoch
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && p.fast_convergence {
            cwnd.wrapping_mul(BICTCP_BETA_SCALE + p.beta) / (2 * BICTCP_BETA_SCALE)
        } else {
            cwnd
        };
        self.loss_cwnd = cwnd;
        (cwnd.wrapping_mul(p.beta) / BICTCP_BETA_SCALE).max(2)
    }

    /// `undo_cwnd` of the era (never called under quinn 0.11, which has no spurious-loss undo).
    pub fn undo_cwnd(&self, cwnd: u32, prior_cwnd: u32, rule: UndoRule) -> u32 {
        match rule {
            UndoRule::LastMax => cwnd.max(self.last_max_cwnd),
            UndoRule::LossCwnd => cwnd.max(self.loss_cwnd),
            UndoRule::PriorCwnd => cwnd.max(prior_cwnd),
        }
    }
}

impl CongestionOps for Cubic {
    fn init(&mut self, ctx: &mut OpsCtx<'_>) {
        slow_start::initial_ssthresh(ctx, self.ss.kind == SlowStartKind::HyStart);
    }

    fn ssthresh(&mut self, ctx: &mut OpsCtx<'_>) -> u32 {
        self.ss.on_reduction();
        self.recalc_ssthresh(ctx.tp.snd_cwnd, ctx.profile)
    }

    #[inline(always)]
    fn cong_avoid(&mut self, ctx: &mut OpsCtx<'_>, args: &CongAvoidArgs) {
        // 2.6.20 - 2.6.22: `if (data_acked) measure_delay(sk)` first, before the cwnd-limited
        // test.
        if args.data_acked {
            self.ss.measure_delay(ctx, self.epoch_start, args.rtt_us);
        }
        if !tcp_cong::is_cwnd_limited(ctx.tp, ctx.profile, args.in_flight) {
            return;
        }
        let mut acked = args.acked;
        if ctx.tp.in_slow_start(ctx.profile.ss_compare) {
            // 4.x+: `acked = tcp_slow_start(tp, acked); if (!acked) return;`; the older
            // forms use the whole ACK.
            acked = self.ss.slow_start(&mut ctx.reborrow(), acked);
            if acked == 0 {
                return;
            }
        }
        let p = ctx.profile;
        let per_ack = p.ai_step == AiStep::PerAck;
        let u = CubicUpdate {
            profile: p,
            cwnd: ctx.tp.snd_cwnd,
            acked: if per_ack { 1 } else { acked },
            now_jiffies: ctx.now_j,
            clock: ctx.clock,
            clock_kind: p.clock,
        };
        self.update(&u);
        tcp_cong::cong_avoid_ai(ctx.tp, p, self.cnt, acked);
    }

    fn set_state(&mut self, ctx: &mut OpsCtx<'_>, new_state: CaState) {
        // bictcp_state(): `if (new_state == TCP_CA_Loss) { bictcp_reset(ca);
        // bictcp_hystart_reset(sk); }`.
        if new_state == CaState::Loss {
            self.reset_on_loss(ctx.profile);
            self.ss.on_loss_state(ctx);
        }
    }

    fn cwnd_event(&mut self, ctx: &mut OpsCtx<'_>, event: CaEvent) {
        let CaEvent::TxStart { idle_jiffies } = event;
        if !ctx.profile.idle_restart {
            return;
        }
        // "tcp_cubic: better follow cubic curve after idle period" (30927520dbae, 2015): shift
        // epoch_start by the idle time to stay on the curve.
        if self.epoch_start != 0 && idle_jiffies > 0 {
            self.epoch_start = self.epoch_start.wrapping_add(idle_jiffies as u32);
            if after32(self.epoch_start, ctx.now_j) {
                self.epoch_start = ctx.now_j;
            }
        }
    }

    #[inline]
    fn pkts_acked(&mut self, ctx: &mut OpsCtx<'_>, sample: &AckSample) {
        let p = ctx.profile;
        if ctx.tp.ca_state == CaState::Open && p.delayed_ack != DelayedAck::Off {
            self.ack_ratio_sample(sample.pkts, p.delayed_ack);
        }
        self.ss.sample_acked(ctx, self.epoch_start, sample.rtt_us);
    }

    fn undo_cwnd(&self, tp: &TcpSock, profile: &Profile) -> u32 {
        Cubic::undo_cwnd(self, tp.snd_cwnd, tp.prior_cwnd, profile.undo)
    }
}

// --- The growth function: bictcp_update() with its cube root, time width, min_cnt clamp,
// pre-loss cap and TCP-friendly region, and the constants module init computes (see
// `docs/KERNEL-NOTES.md`, "CUBIC"). u32 where the kernel uses u32 (wrapping, never
// panicking), u64 where it uses u64; where the kernel would divide by zero or loop forever
// (2.6.20's cube root, a wrapped u16 `delayed_ack`), a defined path counted in `guards`. ---

/// `BICTCP_BETA_SCALE`.
pub const BICTCP_BETA_SCALE: u32 = 1024;
/// `BICTCP_HZ`: CUBIC time is in 1/1024 s.
pub const BICTCP_HZ: u32 = 10;
/// `ACK_RATIO_SHIFT`.
pub const ACK_RATIO_SHIFT: u32 = 4;
/// `ACK_RATIO_LIMIT` (b9f47a3aaea): 32 packets per ACK, << 4.
pub const ACK_RATIO_LIMIT: u32 = 32 << ACK_RATIO_SHIFT;

/// `beta_scale = 8 * (1024 + beta) / 3 / (1024 - beta)` with integer division at each step
/// (module init). 15 for beta 717, 23 for 819.
pub fn beta_scale(beta: u32) -> u32 {
    let den = BICTCP_BETA_SCALE.saturating_sub(beta).max(1);
    8 * (BICTCP_BETA_SCALE + beta) / 3 / den
}

/// `cube_rtt_scale = bic_scale * 10` (410): 1024 * C / RTT with C = 0.4 at a 100 ms RTT.
pub fn cube_rtt_scale(bic_scale: u32) -> u32 {
    bic_scale.wrapping_mul(10)
}

/// `cube_factor = 2^40 / (bic_scale * 10)` (2,681,735,677 for 41).
pub fn cube_factor(bic_scale: u32) -> u64 {
    (1u64 << (10 + 3 * BICTCP_HZ)) / u64::from(cube_rtt_scale(bic_scale).max(1))
}

/// `delta = (cube_rtt_scale * offs^3) >> 40` (u64, wrapping like the kernel's), truncated to
/// the u32 the kernel stores it in: segments away from the origin after `offs` 1/1024 s.
pub fn cubic_delta(cube_rtt_scale: u32, offs: u64) -> u32 {
    (u64::from(cube_rtt_scale)
        .wrapping_mul(offs)
        .wrapping_mul(offs)
        .wrapping_mul(offs)
        >> (10 + 3 * BICTCP_HZ)) as u32
}

/// Inputs of one [`Cubic::update`] call.
#[derive(Debug, Clone, Copy)]
pub struct CubicUpdate<'a> {
    /// The profile (module parameters and era switches).
    pub profile: &'a Profile,
    /// `tp->snd_cwnd`.
    pub cwnd: u32,
    /// ACKs (1, old eras) or packets (modern) acknowledged.
    pub acked: u32,
    /// `tcp_jiffies32` now.
    pub now_jiffies: u32,
    /// The clocks (for HZ and conversions).
    pub clock: &'a KernelClock,
    /// Unit of `delay_min`.
    pub clock_kind: ClockKind,
}

impl Cubic {
    /// K for `last_max - cwnd` with the era's cube root: `cubic_root(cube_factor * diff)`.
    pub(crate) fn compute_k(&mut self, diff: u32, kind: CubeRootKind) -> u32 {
        let a = self.cube_factor.wrapping_mul(u64::from(diff));
        match kind {
            CubeRootKind::Newton => {
                let r = cube_root_newton(a);
                if r.overflowed {
                    self.guards = self.guards.saturating_add(1);
                }
                r.value
            }
            CubeRootKind::Table => cube_root_table(a),
        }
    }

    /// `bictcp_update()` alone, for this crate's exact-value unit tests (the model calls it
    /// from `cong_avoid`).
    #[cfg(test)]
    pub(crate) fn bictcp_update(&mut self, u: &CubicUpdate<'_>) {
        self.update(u);
    }

    /// `bictcp_update(ca, cwnd, acked)` of the era (`acked` = 1 per ACK in the old eras).
    /// Inlined up to its first gate, which returns on most ACKs; the rest is
    /// [`Cubic::update_cnt`].
    #[inline(always)]
    pub(crate) fn update(&mut self, u: &CubicUpdate<'_>) {
        self.ack_cnt = self.ack_cnt.wrapping_add(u.acked);

        if self.cnt_is_fresh(u.cwnd, u.now_jiffies, u.clock.hz()) {
            return;
        }
        // A copy for the call (as `OpsCtx::reborrow`): the caller's `u` keeps no address.
        let u = *u;
        self.update_cnt(&u);
    }

    /// `bictcp_update()`'s first gate: `cnt` is recomputed at most every HZ/32 jiffies while
    /// cwnd is unchanged. The save before an ACK's growth step asks it too, with the same
    /// cwnd and jiffies, to know whether the step can go past it.
    #[inline(always)]
    pub(crate) fn cnt_is_fresh(&self, cwnd: u32, now_jiffies: u32, hz: u32) -> bool {
        self.last_cwnd == cwnd
            && (now_jiffies.wrapping_sub(self.last_time) as i32) <= (hz / 32) as i32
    }

    /// `bictcp_update()` past its first gate: the cube, the TCP-friendly region, the
    /// delayed-ACK scaling and the `cnt` floor.
    #[inline(never)]
    fn update_cnt(&mut self, u: &CubicUpdate<'_>) {
        let p = u.profile;
        let cwnd = u.cwnd;
        let now = u.now_jiffies;

        // d6b1a8a92a14: the CUBIC function updates cnt at most once per jiffy.
        let skip_recompute = p.jiffy_skip && self.epoch_start != 0 && now == self.last_time;
        if !skip_recompute {
            self.recompute_cnt(u);
        }

        if p.tcp_friendliness {
            self.reno_friendliness(cwnd);
        }

        match p.delayed_ack {
            DelayedAck::Off => {}
            _ => {
                match (self.cnt << ACK_RATIO_SHIFT).checked_div(self.delayed_ack) {
                    Some(cnt) => self.cnt = cnt,
                    // A wrapped u16 ratio: the kernel divides by zero here.
                    None => self.guards = self.guards.saturating_add(1),
                }
            }
        }
        // `if (cnt == 0) cnt = 1` (old) / `cnt = max(cnt, 2U)` (2015+).
        self.cnt = self.cnt.max(p.cnt_floor);
    }

    /// The part of `bictcp_update()` between the gates and the Reno-friendliness step.
    /// `t` of `bictcp_update()`: 1/1024 s since the epoch start plus the minimum delay, in
    /// the era's integer widths (`hz` is a constant for the usual HZ, see `with_hz`).
    #[inline(always)]
    fn epoch_time(&self, p: &Profile, now: u32, dmin_j: u32, hz: u32) -> u64 {
        match p.cubic_t {
            // 4.1+: t is a u64, `((s32)(tcp_jiffies32 - epoch_start) + delay) << 10`, then
            // divided by HZ (the 2015 stretch-ACK series).
            CubicTime::S64 => {
                let elapsed = now.wrapping_sub(self.epoch_start) as i32 as i64 as u64;
                (elapsed.wrapping_add(u64::from(dmin_j)) << BICTCP_HZ) / u64::from(hz)
            }
            // 2.6.39 - 3.x: `msecs_to_jiffies()` returns `unsigned long`, so the u32 jiffies
            // and epoch are widened and the sum, shift and division are 64-bit on a 64-bit
            // machine; the result is stored in the u32 `t`. A jiffies wrap between the epoch
            // start and now makes the difference wrap near 2^64, not 2^32.
            CubicTime::Ulong => {
                let sum = u64::from(now)
                    .wrapping_add(u64::from(dmin_j))
                    .wrapping_sub(u64::from(self.epoch_start));
                u64::from(((sum << BICTCP_HZ) / u64::from(hz)) as u32)
            }
            // To 2.6.38: all u32 (`delay_min >> 3` is a u32).
            CubicTime::U32 => {
                let sum = now.wrapping_add(dmin_j).wrapping_sub(self.epoch_start);
                u64::from((sum << BICTCP_HZ) / hz)
            }
        }
    }

    // Out of line: runs once per cwnd change (or HZ/32), not on every ACK.
    #[inline(never)]
    fn recompute_cnt(&mut self, u: &CubicUpdate<'_>) {
        let p = u.profile;
        let cwnd = u.cwnd;
        let now = u.now_jiffies;
        self.last_cwnd = cwnd;
        self.last_time = now;

        if self.epoch_start == 0 {
            self.epoch_start = now; // record the beginning of an epoch
            self.ack_cnt = u.acked; // start counting
            self.tcp_cwnd = cwnd; // sync with cubic
            if self.last_max_cwnd <= cwnd {
                self.bic_k = 0;
                self.bic_origin_point = cwnd;
            } else {
                self.bic_k = self.compute_k(self.last_max_cwnd - cwnd, p.cube_root);
                self.bic_origin_point = self.last_max_cwnd;
            }
        }

        // t in 1/1024 s since the epoch start, plus the minimum delay.
        let dmin_j = delay_min_jiffies(self.ss.delay_min, u.clock_kind, u.clock);
        let t = crate::clock::with_hz(u.clock.hz(), |hz| self.epoch_time(p, now, dmin_j, hz));
        let k = u64::from(self.bic_k);
        let offs = k.abs_diff(t);

        let delta = cubic_delta(self.cube_rtt_scale, offs);
        let target = if t < k {
            self.bic_origin_point.wrapping_sub(delta)
        } else {
            self.bic_origin_point.wrapping_add(delta)
        };

        self.cnt = if target > cwnd {
            cwnd / (target - cwnd)
        } else {
            cwnd.wrapping_mul(100) // very small increment
        };

        // v2.0 / v2.1: at most max_increment packets per 100 ms of RTT.
        if p.min_cnt != MinCntClamp::Off && self.ss.delay_min > 0 {
            let den = 10u32
                .wrapping_mul(p.max_increment)
                .wrapping_mul(self.ss.delay_min);
            match cwnd
                .wrapping_mul(u.clock.hz())
                .wrapping_mul(8)
                .checked_div(den)
            {
                None => self.guards = self.guards.saturating_add(1),
                Some(min_cnt) => {
                    let applies = match p.min_cnt {
                        MinCntClamp::Always => true,
                        MinCntClamp::AfterK => t >= k,
                        MinCntClamp::Off => false,
                    };
                    if self.cnt < min_cnt && applies {
                        self.cnt = min_cnt;
                    }
                }
            }
        }

        let no_loss_yet = match p.pre_loss_key {
            PreLossKey::LossCwnd => self.loss_cwnd == 0,
            PreLossKey::LastMax => self.last_max_cwnd == 0,
        };
        match p.cubic_pre_loss_cap {
            CubicPreLossCap::Off => {}
            // v2.0/v2.1 "slow start and low utilization": could be aggressive in slow start.
            CubicPreLossCap::Set50 => {
                if no_loss_yet {
                    self.cnt = 50;
                }
            }
            // b5ccd0733748: increase cwnd 5% per RTT while the bandwidth is unknown.
            CubicPreLossCap::Max20 => {
                if no_loss_yet && self.cnt > 20 {
                    self.cnt = 20;
                }
            }
        }
    }

    /// TCP-friendly region: `tcp_cwnd` gains 1 per `(cwnd * beta_scale) >> 3` ACKs (packets);
    /// when ahead of cwnd, `cnt` may not exceed `cwnd / (tcp_cwnd - cwnd)`.
    fn reno_friendliness(&mut self, cwnd: u32) {
        let mut delta = cwnd.wrapping_mul(self.beta_scale) >> 3;
        if delta == 0 {
            // The kernel's `while (ack_cnt > delta)` would never end (5.x+ clamps beta_scale).
            self.guards = self.guards.saturating_add(1);
            delta = 1;
        }
        if self.ack_cnt > delta {
            // The kernel's loop `while (ack_cnt > delta) { ack_cnt -= delta; tcp_cwnd++; }`
            // in closed form.
            let n = (self.ack_cnt - 1) / delta;
            self.ack_cnt -= n * delta;
            self.tcp_cwnd = self.tcp_cwnd.wrapping_add(n);
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            if self.cnt > max_cnt {
                self.cnt = max_cnt;
            }
        }
    }
}
