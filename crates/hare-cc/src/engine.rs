//! The kernel model: `struct tcp_sock` fields that congestion control touches, driven the way
//! `tcp_ack()` drives `tcp_congestion_ops` in the named kernel version.
//!
//! Units: cwnd/ssthresh in segments, time in microseconds since the controller was built
//! (`now_us`), sequence numbers are QUIC packet numbers (the analogue of `snd_nxt` /
//! `snd_una`; the model's `snd_una` is "largest acknowledged + 1").
//!
//! One [`KernelCc::on_ack`] is one ACK as the kernel sees it (in QUIC: one ACK frame); the
//! era's order inside it (RTT estimator and `pkts_acked`, then growth and loss reaction in
//! the order of that kernel's `tcp_ack()`, the CA states) is the driver's (`driver.rs`).
//! The algorithm's own hooks (`ssthresh`, the growth step of `cong_avoid`, `set_state`,
//! `pkts_acked`'s `delayed_ack`, `undo_cwnd`) are the module's [`CongestionOps`]
//! ([`Growth`]: `cubic`, `bic`, `reno`); the shared steps (`tcp_slow_start`,
//! `tcp_cong_avoid_ai`, the cwnd-limited test) are [`TcpSock`]'s. Slow start and its exits
//! (kernel HyStart of the era with its `delay_min` / `epoch_start` in [`DelayState`], and
//! the named non-kernel strategies HyStart++ and RFC 3742 outside its era) are run here.
//! HyStart runs for CUBIC only unless a spec names it (`Profile::slow_start_for`).

//! Deviations from TCP, by necessity of QUIC/quinn (documented in `PROFILES.md`): no undo
//! (quinn 0.11 has no spurious-loss callback; [`KernelCc::undo_cwnd`] still computes the era's
//! value), no PRR/rate halving (cwnd = ssthresh at once), ECN-CE handled as a loss (the
//! kernel's CWR state is folded into Recovery), no SACK/reordering states, no RFC 2861
//! idle/app-limited decay.

use crate::bic::Bic;
use crate::clock::{after32, KernelClock};
use crate::cubic::Cubic;
use crate::delay::{delay_to_us, DelayRules, DelayState};
use crate::driver::BeforeGrowth;
pub use crate::driver::{AckEvent, LossSignal};
use crate::events::{CcEvent, ExitReason, Phase, Snapshot};
use crate::hystart::{HyStart, HyStartInput};
use crate::hystart_pp::{HyStartPp, PpTransition};
use crate::ops::{CongestionOps, OpsCtx};
use crate::profile::{Algorithm, Profile, RoundReset, RttSample, SlowStartKind, SsIncrement};
use crate::reno::Reno;
use crate::tcp_sock::{CaState, CwndLimitedCtx, TcpSock, TCP_INFINITE_SSTHRESH};

/// `tracing` target of every event the model emits.
pub const TRACE_TARGET: &str = "hare_cc";

/// The window-growth algorithm and its private state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Growth {
    /// `tcp_cubic.c`.
    Cubic(Cubic),
    /// `tcp_bic.c`.
    Bic(Bic),
    /// `tcp_cong.c` Reno (stateless).
    Reno(Reno),
}

impl Growth {
    /// The module's `tcp_congestion_ops`.
    pub fn ops_mut(&mut self) -> &mut dyn CongestionOps {
        match self {
            Growth::Cubic(c) => c,
            Growth::Bic(b) => b,
            Growth::Reno(r) => r,
        }
    }

    /// The module's `tcp_congestion_ops` (read-only hooks).
    pub fn ops(&self) -> &dyn CongestionOps {
        match self {
            Growth::Cubic(c) => c,
            Growth::Bic(b) => b,
            Growth::Reno(r) => r,
        }
    }
}

/// The kernel model of one connection's congestion control.
#[derive(Debug, Clone)]
pub struct KernelCc {
    pub(crate) algorithm: Algorithm,
    pub(crate) profile: Profile,
    pub(crate) paced: bool,
    pub(crate) clock: KernelClock,
    pub(crate) rules: DelayRules,
    pub(crate) tp: TcpSock,
    pub(crate) delay: DelayState,
    pub(crate) growth: Growth,
    pub(crate) hystart: HyStart,
    pub(crate) hspp: HyStartPp,
    /// The slow-start strategy in force (HyStart++ falls back to standard after an RTO).
    pub(crate) slow_start: SlowStartKind,
    pub(crate) events: Vec<CcEvent>,
    pub(crate) t_us: u64,
    /// Slow start has ended since the last (re)start; the next exit is not reported again.
    pub(crate) ss_exited: bool,
    pub(crate) exit_reason: Option<ExitReason>,
    pub(crate) exit_cwnd: Option<u32>,
    pub(crate) exit_t_us: Option<u64>,
    pub(crate) reductions: u32,
    pub(crate) rto_resets: u32,
    pub(crate) guards: u32,
    /// The last ACK's state before its growth step (see [`KernelCc::amend_last_ack`]).
    pub(crate) before_growth: Option<BeforeGrowth>,
}

impl KernelCc {
    /// Build the model as `tcp_init_congestion_control()` would for this algorithm and profile
    /// (initial cwnd from the profile, ssthresh infinite or the `initial_ssthresh` clamp).
    /// `paced` says whether the sender paces (quinn always does): kernel HyStart 5.6+ uses it.
    pub fn new(algorithm: Algorithm, profile: &Profile, paced: bool, mss: u32) -> Self {
        let p = profile.clone();
        let mss = mss.max(1);
        let clock = KernelClock::new(p.hz, p.uptime_ms);
        let iw = if p.initial_cwnd == 0 {
            rfc3390_initial_cwnd(mss)
        } else {
            p.initial_cwnd
        };
        let mut tp = TcpSock::new(iw, p.cwnd_clamp, mss).with_cwnd_cnt_bits(p.cwnd_cnt_bits);
        let now_j = clock.jiffies(0);
        tp.lsndtime = now_j;

        // Route metric, then the module's init (`bictcp_init`): CUBIC honours
        // `initial_ssthresh` only while HyStart is off (ae27e98a5152); BIC always. It is a
        // parameter of tcp_cubic / tcp_bic only: Reno (tcp_cong.c) has no init hook and never
        // sees it, so `reno@linux-2.6.20` starts with an infinite ssthresh like the kernel's
        // Reno did in the 2007 thread. `route_ssthresh` is the per-path clamp for any algorithm.
        if p.route_ssthresh != 0 {
            tp.snd_ssthresh = p.route_ssthresh;
        }
        // HyStart is tcp_cubic.c's: BIC and Reno run it only when the spec names it.
        let slow_start = p.slow_start_for(algorithm);
        let hystart_on = slow_start == SlowStartKind::HyStart;
        let module_param = match algorithm {
            Algorithm::Cubic => !hystart_on,
            Algorithm::Bic => true,
            Algorithm::Reno => false,
        };
        if p.initial_ssthresh != 0 && module_param {
            tp.snd_ssthresh = p.initial_ssthresh;
        }
        let growth = match algorithm {
            Algorithm::Cubic => Growth::Cubic(Cubic::new(&p)),
            Algorithm::Bic => Growth::Bic(Bic::default()),
            Algorithm::Reno => Growth::Reno(Reno),
        };
        let rules = DelayRules {
            clock: p.clock,
            rtt_sample: p.rtt_sample,
            blackout: p.delay_blackout,
            hystart: hystart_on,
        };
        let mut cc = KernelCc {
            algorithm,
            paced: p.paced.resolve(paced),
            slow_start,
            clock,
            rules,
            tp,
            delay: DelayState::default(),
            growth,
            hystart: HyStart::default(),
            hspp: HyStartPp::new(0),
            events: Vec::with_capacity(8),
            t_us: 0,
            ss_exited: false,
            exit_reason: None,
            exit_cwnd: None,
            exit_t_us: None,
            reductions: 0,
            rto_resets: 0,
            guards: 0,
            before_growth: None,
            profile: p,
        };
        // bictcp_init: `if (hystart) bictcp_hystart_reset(sk)`.
        let now = cc.hystart_clock(0);
        cc.hystart.reset_round(now, 0);
        cc
    }

    /// Packets were sent; `snd_nxt` is the next packet number to be sent after them
    /// (last sent + 1), `packets_out` the packets in flight after sending.
    pub fn on_sent(&mut self, now_us: u64, snd_nxt: u64, packets_out: u32) {
        // A hook outside the last ACK: that ACK is complete.
        self.before_growth = None;
        self.t_us = now_us;
        let now_j = self.clock.jiffies(now_us);
        // tcp_event_data_sent(): CA_EVENT_TX_START when nothing was in flight.
        if self.tp.packets_out == 0 && self.profile.idle_restart {
            if let Growth::Cubic(_) = self.growth {
                // "tcp_cubic: better follow cubic curve after idle period" (2015): shift
                // epoch_start by the idle time to stay on the curve.
                let delta = now_j.wrapping_sub(self.tp.lsndtime) as i32;
                if self.delay.epoch_start != 0 && delta > 0 {
                    self.delay.epoch_start = self.delay.epoch_start.wrapping_add(delta as u32);
                    if after32(self.delay.epoch_start, now_j) {
                        self.delay.epoch_start = now_j;
                    }
                }
            }
        }
        self.tp.lsndtime = now_j;
        if snd_nxt > self.tp.snd_nxt {
            self.tp.snd_nxt = snd_nxt;
        }
        self.tp.packets_out = packets_out;
        let limited = packets_out >= self.tp.snd_cwnd;
        self.tp.cwnd_validate(self.profile.cwnd_limited, limited);
    }

    /// The algorithm's `set_state(TCP_CA_Loss)`: `bictcp_reset()` (CUBIC, BIC) and, in
    /// CUBIC, `bictcp_hystart_reset()`.
    pub(crate) fn reset_algorithm_on_loss(&mut self, now_us: u64) {
        self.growth
            .ops_mut()
            .set_state(&self.profile, CaState::Loss);
        self.delay.reset();
        self.hystart.found = 0;
        let now = self.hystart_clock(now_us);
        self.hystart.reset_round(now, self.tp.snd_nxt);
    }

    /// The segment size changed (MTU discovery): rescale as the kernel does.
    ///
    /// A larger segment is `tcp_mtup_probe_success()`: `cwnd = cwnd * old / new` (at least 1,
    /// computed in 64 bits), `snd_cwnd_cnt = 0`, and from 9c6d5e5537e (2.6.37) `snd_ssthresh =
    /// tcp_current_ssthresh()` (before it the value went to `rcv_ssthresh`). A smaller one is
    /// `tcp_sync_mss()` after a black-hole/ICMP event: cwnd stays in segments.
    pub fn on_mss_change(&mut self, now_us: u64, new_mss: u32) {
        // A hook outside the last ACK: that ACK is complete.
        self.before_growth = None;
        self.t_us = now_us;
        if new_mss == 0 || new_mss == self.tp.mss {
            return;
        }
        if new_mss > self.tp.mss {
            self.tp.prior_ssthresh = self.tp.current_ssthresh();
            let scaled = u64::from(self.tp.snd_cwnd) * u64::from(self.tp.mss) / u64::from(new_mss);
            self.tp.snd_cwnd = (scaled.min(u64::from(u32::MAX)) as u32).max(1);
            self.tp.snd_cwnd_cnt = 0;
            if self.profile.mtu_probe_ssthresh {
                self.tp.snd_ssthresh = self.tp.current_ssthresh();
            }
        }
        self.tp.mss = new_mss;
    }

    /// `snd_cwnd` in segments.
    pub fn cwnd(&self) -> u32 {
        self.tp.snd_cwnd
    }

    /// `snd_ssthresh` in segments, `None` while infinite.
    pub fn ssthresh(&self) -> Option<u32> {
        (self.tp.snd_ssthresh < TCP_INFINITE_SSTHRESH).then_some(self.tp.snd_ssthresh)
    }

    /// Current segment size in bytes.
    pub fn mss(&self) -> u32 {
        self.tp.mss
    }

    /// State for observers.
    pub fn snapshot(&self) -> Snapshot {
        let p = &self.profile;
        let hz = self.clock.hz();
        let (last_max, k, origin, cnt) = match &self.growth {
            Growth::Cubic(c) => (c.last_max_cwnd, c.bic_k, c.bic_origin_point, c.cnt),
            Growth::Bic(b) => (b.last_max_cwnd, 0, 0, b.cnt),
            Growth::Reno(_) => (0, 0, 0, self.tp.snd_cwnd),
        };
        let ssthresh = self.ssthresh();
        let profile = match p.non_kernel(self.algorithm) {
            Some(what) => format!("{} (non-kernel: {what})", p.name),
            None => p.name.clone(),
        };
        Snapshot {
            algorithm: self.algorithm.to_string(),
            profile,
            phase: Some(self.phase()),
            t_us: self.t_us,
            mss: self.tp.mss,
            cwnd: self.tp.snd_cwnd,
            cwnd_bytes: u64::from(self.tp.snd_cwnd) * u64::from(self.tp.mss),
            ssthresh,
            ssthresh_bytes: ssthresh.map(|s| u64::from(s) * u64::from(self.tp.mss)),
            last_max_cwnd: last_max,
            cubic_k: k,
            origin_point: origin,
            epoch_start: (self.delay.epoch_start != 0).then_some(self.delay.epoch_start),
            cnt,
            delay_min_us: (self.delay.delay_min != 0)
                .then(|| delay_to_us(self.delay.delay_min, p.clock, hz)),
            hystart_end_seq: self.hystart.end_seq,
            hystart_sample_cnt: self.hystart.sample_cnt,
            hystart_curr_rtt_us: (self.hystart.curr_rtt != u32::MAX)
                .then(|| delay_to_us(self.hystart.curr_rtt, p.clock, hz)),
            exit_reason: self.exit_reason,
            exit_cwnd: self.exit_cwnd,
            exit_t_us: self.exit_t_us,
            reductions: self.reductions,
            rto_resets: self.rto_resets,
        }
    }

    /// Take the decisions made since the last call, except those of the last ACK's growth
    /// step while [`KernelCc::amend_last_ack`] may still replace them (until
    /// [`KernelCc::close_ack`]).
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, CcEvent> {
        let end = match &mut self.before_growth {
            Some(b) => std::mem::take(&mut b.events),
            None => self.events.len(),
        };
        self.events.drain(..end)
    }

    /// The last ACK is complete (nothing more of its frame can follow): its decisions are
    /// final and [`KernelCc::amend_last_ack`] no longer rewinds it. Returns whether events
    /// are waiting.
    pub fn close_ack(&mut self) -> bool {
        self.before_growth = None;
        !self.events.is_empty()
    }

    // ---- additional read-only accessors ----

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The profile in force.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Whether the model treats the sender as paced (after resolving `paced=auto`).
    pub fn paced(&self) -> bool {
        self.paced
    }

    /// The `tcp_sock` view.
    pub fn tcp_sock(&self) -> &TcpSock {
        &self.tp
    }

    /// The growth algorithm's state.
    pub fn growth(&self) -> &Growth {
        &self.growth
    }

    /// The shared `delay_min` / `epoch_start`.
    pub fn delay_state(&self) -> &DelayState {
        &self.delay
    }

    /// Kernel HyStart's state.
    pub fn hystart(&self) -> &HyStart {
        &self.hystart
    }

    /// HyStart++'s state.
    pub fn hystart_pp(&self) -> &HyStartPp {
        &self.hspp
    }

    /// The slow-start strategy in force (HyStart++ becomes `standard` after an RTO).
    pub fn slow_start_kind(&self) -> SlowStartKind {
        self.slow_start
    }

    /// The clocks of this connection.
    pub fn clock(&self) -> &KernelClock {
        &self.clock
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        if self.tp.ca_state == CaState::Recovery {
            Phase::Recovery
        } else if self.in_slow_start() {
            if self.slow_start == SlowStartKind::HyStartPp && self.hspp.in_css {
                Phase::ConservativeSlowStart
            } else {
                Phase::SlowStart
            }
        } else {
            Phase::CongestionAvoidance
        }
    }

    /// `sk_pacing_rate` estimate in bytes per second (`tcp_update_pacing_rate()`), 0 before the
    /// first RTT sample.
    pub fn pacing_rate(&self) -> u64 {
        self.tp.pacing_rate
    }

    /// `hystart_ack_delay()` (5.6+): `min(1 ms, gso_max_size * 4 s / pacing_rate)` in us, 0
    /// without a pacing rate.
    pub fn hystart_ack_delay_us(&self) -> u32 {
        hystart_ack_delay_us(self.profile.gso_max_size, self.tp.pacing_rate)
    }

    /// How many times a kernel overflow, divide-by-zero or endless loop (2.6.20's 32-bit cube
    /// root, a wrapped u16 `delayed_ack`, ...) was replaced by a defined path.
    pub fn overflow_guards(&self) -> u32 {
        let own = match &self.growth {
            Growth::Cubic(c) => c.guards,
            _ => 0,
        };
        self.guards.saturating_add(own)
    }

    /// The window the era's `undo_cwnd` would restore (quinn 0.11 never undoes; exposed so the
    /// era-specific arithmetic stays tested).
    pub fn undo_cwnd(&self) -> u32 {
        self.growth.ops().undo_cwnd(&self.tp, &self.profile)
    }

    // ---- the tcp_ack() steps ----

    pub(crate) fn in_slow_start(&self) -> bool {
        self.tp.in_slow_start(self.profile.ss_compare)
    }

    /// The HyStart clock (jiffies, ms or us) at `now_us`.
    fn hystart_clock(&self, now_us: u64) -> u32 {
        match self.profile.clock {
            crate::profile::ClockKind::Jiffies => self.clock.jiffies(now_us),
            crate::profile::ClockKind::Ms => self.clock.ms_clock(now_us),
            crate::profile::ClockKind::Us => self.clock.us_clock(now_us),
        }
    }

    /// `ca_ops->pkts_acked()`.
    pub(crate) fn pkts_acked(&mut self, ack: &AckEvent, now_j: u32) {
        // The kernel's count is packets (tcp_skb_pcount >= 1 each): an ACK of less than a
        // segment of bytes still counts one.
        let cnt = ack.acked_pkts.max(1);
        self.growth
            .ops_mut()
            .pkts_acked(&self.profile, self.tp.ca_state, cnt);

        if self.slow_start == SlowStartKind::HyStartPp && self.in_slow_start() {
            self.hystart_pp_ack(ack);
        }

        // 2.6.20 - 2.6.22 measure the delay in cong_avoid (timestamps) instead.
        if self.profile.rtt_sample == RttSample::Tsecr {
            return;
        }
        if let Some(rtt) = ack.rtt_us {
            self.delay_sample(ack.now_us, rtt, now_j);
        }
    }

    /// The delay part of `bictcp_acked()` / `measure_delay()`: blackout, `delay_min`, HyStart.
    fn delay_sample(&mut self, now_us: u64, rtt_us: u64, now_j: u32) {
        let Some(delay) = DelayState::delay_of(&self.rules, &self.clock, now_us, rtt_us) else {
            return;
        };
        // Discard delay samples right after fast recovery.
        if self.delay.in_blackout(&self.rules, &self.clock, now_j) {
            return;
        }
        self.delay.update_min(delay);
        if self.slow_start == SlowStartKind::HyStart {
            self.hystart_sample(now_us, delay);
        }
    }

    /// `hystart_update()` with the gates and round resets of the era.
    fn hystart_sample(&mut self, now_us: u64, delay: u32) {
        if self.hystart.found != 0 || !self.in_slow_start() {
            return;
        }
        let cwnd = self.tp.snd_cwnd;
        let low = self.profile.hystart_low_window;
        let now = self.hystart_clock(now_us);
        match self.profile.hystart_round_reset {
            RoundReset::CongAvoid => {
                if cwnd < low {
                    return;
                }
            }
            RoundReset::UpdateAfterLowWindow => {
                if cwnd < low {
                    return;
                }
                if self.hystart.round_over(self.tp.snd_una) {
                    self.new_hystart_round(now_us, now);
                }
            }
            RoundReset::UpdateBeforeLowWindow => {
                if self.hystart.round_over(self.tp.snd_una) {
                    self.new_hystart_round(now_us, now);
                }
                if cwnd < low {
                    return;
                }
            }
        }
        let inp = HyStartInput {
            profile: &self.profile,
            now,
            delay_min: self.delay.delay_min,
            ack_delay_us: hystart_ack_delay_us(self.profile.gso_max_size, self.tp.pacing_rate),
            paced: self.paced,
            hz: self.clock.hz(),
        };
        if let Some(reason) = self.hystart.detect(&inp, delay) {
            self.tp.snd_ssthresh = cwnd;
            if !self.ss_exited {
                self.record_exit(now_us, cwnd, cwnd, reason);
            }
        }
    }

    fn new_hystart_round(&mut self, now_us: u64, now: u32) {
        self.hystart.reset_round(now, self.tp.snd_nxt);
        tracing::debug!(
            target: TRACE_TARGET,
            t_us = now_us,
            cwnd = self.tp.snd_cwnd,
            end_seq = self.tp.snd_nxt,
            delay_min = self.delay.delay_min,
            "hystart round"
        );
    }

    /// HyStart++ bookkeeping of one ACK in slow start / CSS.
    fn hystart_pp_ack(&mut self, ack: &AckEvent) {
        let t = self
            .hspp
            .on_ack(&self.profile, self.tp.snd_una, self.tp.snd_nxt, ack.rtt_us);
        let cwnd = self.tp.snd_cwnd;
        match t {
            PpTransition::None => {}
            PpTransition::EnterCss => {
                tracing::trace!(target: TRACE_TARGET, t_us = ack.now_us, cwnd, "css entered");
                self.events.push(CcEvent::CssEntered {
                    t_us: ack.now_us,
                    cwnd,
                });
            }
            PpTransition::AbortCss => {
                tracing::trace!(target: TRACE_TARGET, t_us = ack.now_us, cwnd, "css aborted");
                self.events.push(CcEvent::CssAborted {
                    t_us: ack.now_us,
                    cwnd,
                });
            }
            PpTransition::CssDone => {
                self.tp.snd_ssthresh = cwnd;
                if !self.ss_exited {
                    self.record_exit(ack.now_us, cwnd, cwnd, ExitReason::CssDone);
                }
            }
        }
    }

    /// `ca_ops->cong_avoid()` of the algorithm and era.
    pub(crate) fn cong_avoid(&mut self, ack: &AckEvent, now_j: u32, prior_in_flight: u32) {
        if self.profile.rtt_sample == RttSample::Tsecr {
            // 2.6.20 measure_delay(): before the cwnd-limited test.
            if let Some(rtt) = ack.rtt_us {
                self.delay_sample(ack.now_us, rtt, now_j);
            }
        }
        let p = &self.profile;
        let ctx = CwndLimitedCtx {
            in_flight: prior_in_flight,
            gso: p.gso,
            tso_win_divisor: p.tso_win_divisor,
            reordering: p.reordering,
            gso_max_size: p.gso_max_size,
            ss_compare: p.ss_compare,
        };
        if !self.tp.is_cwnd_limited(p.cwnd_limited, &ctx) {
            return;
        }

        let mut acked = ack.acked_pkts;
        if self.in_slow_start() {
            if self.slow_start == SlowStartKind::HyStart
                && self.profile.hystart_round_reset == RoundReset::CongAvoid
                && self.hystart.round_over(self.tp.snd_una)
            {
                let now = self.hystart_clock(ack.now_us);
                self.new_hystart_round(ack.now_us, now);
            }
            match self.slow_start_step(acked) {
                Some(left) => acked = left,
                None => return,
            }
        }
        self.congestion_avoidance(acked, now_j);
    }

    /// The slow-start increment. Returns the ACKed packets left for congestion avoidance in
    /// the same call (modern CUBIC / Reno), or `None` when the ACK is used up.
    fn slow_start_step(&mut self, acked: u32) -> Option<u32> {
        let p = &self.profile;
        if self.slow_start == SlowStartKind::HyStartPp {
            let inc = self.hspp.increase(p, acked, self.paced);
            self.tp.snd_cwnd = self
                .tp
                .snd_cwnd
                .saturating_add(inc)
                .min(self.tp.snd_cwnd_clamp);
            return None;
        }
        let lss = if self.slow_start == SlowStartKind::Limited {
            p.max_ssthresh
        } else {
            0
        };
        match p.ss_increment {
            SsIncrement::PerAck => {
                if lss > 0 {
                    let g = self.tp.slow_start_per_ack_cnt(lss, 1);
                    self.guards = self.guards.saturating_add(g);
                } else {
                    self.tp.slow_start_per_ack();
                }
                None
            }
            SsIncrement::PerAckCnt => {
                let g = self.tp.slow_start_per_ack_cnt(lss, 1);
                self.guards = self.guards.saturating_add(g);
                None
            }
            SsIncrement::Acked => {
                if lss > 0 && self.tp.snd_cwnd > lss {
                    // hare extension: RFC 3742 on a packet-counting stack (the kernel retired
                    // tcp_max_ssthresh in 3.13): the 2.6.22 step once per ACKed packet.
                    let g = self.tp.slow_start_per_ack_cnt(lss, acked);
                    self.guards = self.guards.saturating_add(g);
                    return None;
                }
                let left = self.tp.slow_start_acked(acked);
                // CUBIC and Reno pass the leftover on; tcp_bic.c only from "tcp: fix stretch
                // ACK bugs in BIC" (5.7: `acked = tcp_slow_start(tp, acked); if (!acked)
                // return;`).
                if left == 0 || (self.algorithm == Algorithm::Bic && !p.bic_stretch_ack) {
                    None
                } else {
                    Some(left)
                }
            }
        }
    }

    /// The growth function and the AI step: the module's `cong_avoid` after slow start.
    fn congestion_avoidance(&mut self, acked: u32, now_j: u32) {
        let mut ctx = OpsCtx {
            tp: &mut self.tp,
            profile: &self.profile,
            clock: &self.clock,
            delay: &mut self.delay,
        };
        let guards = self.growth.ops_mut().cong_avoid(&mut ctx, acked, now_j);
        self.guards = self.guards.saturating_add(guards);
    }

    /// `ca_ops->ssthresh()`.
    pub(crate) fn alg_ssthresh(&mut self) -> u32 {
        let mut ctx = OpsCtx {
            tp: &mut self.tp,
            profile: &self.profile,
            clock: &self.clock,
            delay: &mut self.delay,
        };
        self.growth.ops_mut().ssthresh(&mut ctx)
    }

    /// Slow start ended by reaching a preset ssthresh (or one set by HyStart / HyStart++,
    /// already reported).
    pub(crate) fn check_ssthresh_reached(&mut self) {
        if self.ss_exited || self.tp.ca_state == CaState::Recovery || self.in_slow_start() {
            return;
        }
        let cwnd = self.tp.snd_cwnd;
        let ssthresh = self.tp.snd_ssthresh;
        self.record_exit(self.t_us, cwnd, ssthresh, ExitReason::SsthreshReached);
    }

    pub(crate) fn record_exit(&mut self, t_us: u64, cwnd: u32, ssthresh: u32, reason: ExitReason) {
        self.ss_exited = true;
        self.exit_reason = Some(reason);
        self.exit_cwnd = Some(cwnd);
        self.exit_t_us = Some(t_us);
        tracing::trace!(
            target: TRACE_TARGET,
            t_us,
            cwnd,
            ssthresh,
            reason = reason.as_str(),
            "slow start exit"
        );
        self.events.push(CcEvent::SlowStartExit {
            t_us,
            cwnd,
            ssthresh,
            reason,
        });
    }
}

/// RFC 3390 initial window by segment size, as `tcp_init_cwnd()` before IW10:
/// 2 above 1460 bytes, 3 above 1095, else 4.
pub fn rfc3390_initial_cwnd(mss: u32) -> u32 {
    if mss > 1460 {
        2
    } else if mss > 1095 {
        3
    } else {
        4
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
