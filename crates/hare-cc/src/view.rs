//! Reading the kernel model: the window, the module's state, the phase, snapshots for
//! observers, and the events decided since the last read.

use crate::clock::KernelClock;
use crate::cubic::delay::delay_to_us;
use crate::cubic::hystart::HyStart;
use crate::cubic::hystart_pp::HyStartPp;
use crate::cubic::{hystart_ack_delay_us, CubicSlowStart};
use crate::engine::{CcModule, KernelCc};
use crate::events::{CcEvent, Phase, Snapshot};
use crate::ops::CongestionOps;
use crate::profile::{Algorithm, Profile, SlowStartKind, UndoRule};
use crate::tcp_sock::{CaState, TcpSock, TCP_INFINITE_SSTHRESH};

impl KernelCc {
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
        let (last_max, k, origin, cnt) = self.module.growth_view(self.tp.snd_cwnd);
        let ssthresh = self.ssthresh();
        let profile = match p.non_kernel(self.algorithm) {
            Some(what) => format!("{} (non-kernel: {what})", p.name),
            None => p.name.clone(),
        };
        let ss = self.module.slow_start_state();
        let hystart = ss.map(|s| s.hystart);
        let epoch_start = self.module.epoch_start();
        let delay_min = ss.map_or(0, |s| s.delay_min);
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
            epoch_start: (epoch_start != 0).then_some(epoch_start),
            cnt,
            delay_min_us: (delay_min != 0).then(|| delay_to_us(delay_min, p.clock, hz)),
            hystart_end_seq: hystart.map_or(0, |h| h.end_seq),
            hystart_sample_cnt: hystart.map_or(0, |h| h.sample_cnt),
            hystart_curr_rtt_us: hystart
                .filter(|h| h.curr_rtt != u32::MAX)
                .map(|h| delay_to_us(h.curr_rtt, p.clock, hz)),
            exit_reason: self.exit_reason,
            exit_cwnd: self.exit_cwnd,
            exit_t_us: self.exit_t_us,
            reductions: self.reductions,
            rto_resets: self.rto_resets,
        }
    }

    /// True when decisions are recorded (some may be held back until the ACK completes).
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Take the decisions made since the last call, except those of the last ACK's growth
    /// step while [`KernelCc::amend_last_ack`] may still replace them (until
    /// [`KernelCc::close_ack`]).
    pub fn drain_events(&mut self) -> std::vec::Drain<'_, CcEvent> {
        let end = match self.before_growth.events_mut() {
            Some(events) => std::mem::take(events),
            None => self.events.len(),
        };
        self.events.drain(..end)
    }

    /// The last ACK is complete (nothing more of its frame can follow): its decisions are
    /// final and [`KernelCc::amend_last_ack`] no longer rewinds it. Returns whether events
    /// are waiting.
    pub fn close_ack(&mut self) -> bool {
        self.before_growth.close();
        !self.events.is_empty()
    }

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

    /// The algorithm module and its state (`struct bictcp` of CUBIC or BIC).
    pub fn module(&self) -> &CcModule {
        &self.module
    }

    /// CUBIC's delay and slow-start state (BIC / Reno: only under a named HyStart or
    /// HyStart++).
    pub fn slow_start_state(&self) -> Option<&CubicSlowStart> {
        self.module.slow_start_state()
    }

    /// `delay_min` in the era's unit (0 = none; always 0 for BIC and Reno, which have none).
    pub fn delay_min(&self) -> u32 {
        self.module.slow_start_state().map_or(0, |s| s.delay_min)
    }

    /// The module's `epoch_start` in jiffies (0 = none; always 0 for Reno).
    pub fn epoch_start(&self) -> u32 {
        self.module.epoch_start()
    }

    /// Kernel HyStart's state (CUBIC's; BIC / Reno only when named).
    pub fn hystart(&self) -> Option<&HyStart> {
        self.module.slow_start_state().map(|s| &s.hystart)
    }

    /// HyStart++'s state (when the module has CUBIC's slow-start code).
    pub fn hystart_pp(&self) -> Option<&HyStartPp> {
        self.module.slow_start_state().map(|s| &s.hspp)
    }

    /// The slow-start strategy in force (HyStart++ becomes `standard` after an RTO).
    pub fn slow_start_kind(&self) -> SlowStartKind {
        match self.module.slow_start_state() {
            Some(s) => s.kind,
            None if self.profile.slow_start == SlowStartKind::Limited => SlowStartKind::Limited,
            None => SlowStartKind::Standard,
        }
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
            if self.module.slow_start_state().is_some_and(|s| s.in_css()) {
                Phase::ConservativeSlowStart
            } else {
                Phase::SlowStart
            }
        } else {
            Phase::CongestionAvoidance
        }
    }

    /// `sk_pacing_rate` in bytes per second (`tcp_update_pacing_rate()`, capped by the
    /// profile's `max_pacing_rate`), 0 before the first RTT sample and in the eras before
    /// 3.12, which had no pacing rate.
    pub fn pacing_rate(&self) -> u64 {
        self.tp.sk_pacing_rate(self.profile.max_pacing_rate)
    }

    /// `hystart_ack_delay()` (5.6+): `min(1 ms, gso_max_size * 4 s / pacing_rate)` in us, 0
    /// without a pacing rate.
    pub fn hystart_ack_delay_us(&self) -> u32 {
        hystart_ack_delay_us(self.profile.gso_max_size, self.pacing_rate())
    }

    /// How many times a kernel overflow, divide-by-zero or endless loop (2.6.20's 32-bit cube
    /// root, a wrapped u16 `delayed_ack`, ...) was replaced by a defined path.
    pub fn overflow_guards(&self) -> u32 {
        self.guards.saturating_add(self.module.own_guards())
    }

    /// The window an undo of the era would restore (quinn 0.11 never undoes; exposed so the
    /// era-specific arithmetic stays tested): cwnd itself when nothing can be undone (no
    /// `undo_marker`: no reduction yet, or an ECN one, which `tcp_enter_cwr()` makes final).
    /// The kernel's undo (`tcp_undo_cwr()` in 2.6.x, `tcp_undo_cwnd_reduction()` later) asks
    /// the module's `undo_cwnd` only when the reduction saved `prior_ssthresh`; without it,
    /// 2.6.20 - 4.4 take `max(cwnd, ssthresh)` and the kernels of the `prior-cwnd` undo rule
    /// (5.0 and 6.x read here) leave cwnd as it is.
    pub fn undo_cwnd(&self) -> u32 {
        if !self.tp.undo_marker {
            return self.tp.snd_cwnd;
        }
        if self.tp.prior_ssthresh != 0 {
            return self.module.undo_cwnd(&self.tp, &self.profile);
        }
        match self.profile.undo {
            UndoRule::PriorCwnd => self.tp.snd_cwnd,
            UndoRule::LastMax | UndoRule::LossCwnd => self.tp.snd_cwnd.max(self.tp.snd_ssthresh),
        }
    }
}
