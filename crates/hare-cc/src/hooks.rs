//! Driving the kernel model hook by hook, from a chosen state: the documented entry points for
//! outside programs (differential tests against the kernel sources, research tools) that need
//! no private field.
//!
//! Build a model with [`KernelCc::new`], place it in a state with [`KernelCc::start_from`]
//! (cwnd, ssthresh, `snd_cwnd_cnt`, CA state, the algorithm's `struct bictcp`, the shared
//! `delay_min` / `epoch_start`, HyStart's round state; the clock is the profile's `hz` and
//! `uptime_ms`, read back with [`KernelCc::clock`]), then call the `tcp_congestion_ops` hooks
//! of the algorithm and era one at a time: [`KernelCc::hook_pkts_acked`],
//! [`KernelCc::hook_cong_avoid`], [`KernelCc::hook_ssthresh`], [`KernelCc::hook_set_state`],
//! [`KernelCc::undo_cwnd`]. Whole ACKs in the era's order are [`KernelCc::on_ack`].
//!
//! ```
//! use hare_cc::engine::{AckEvent, KernelCc};
//! use hare_cc::hooks::StartState;
//! use hare_cc::{Algorithm, Profile};
//!
//! let profile = Profile::named("linux-6").expect("built in");
//! let mut cc = KernelCc::new(Algorithm::Reno, &profile, true, 1448);
//! cc.start_from(&StartState { cwnd: 100, ssthresh: Some(50), ..StartState::default() })?;
//! // tcp_reno_cong_avoid(): congestion avoidance, tcp_cong_avoid_ai(tp, 100, 100).
//! cc.hook_cong_avoid(&AckEvent { now_us: 1000, acked_pkts: 100, ..AckEvent::default() });
//! assert_eq!(cc.cwnd(), 101);
//! assert_eq!(cc.hook_ssthresh(), 50); // tcp_reno_ssthresh(): max(cwnd >> 1, 2)
//! # Ok::<(), hare_cc::hooks::StartError>(())
//! ```

use thiserror::Error;

use crate::delay::DelayState;
use crate::engine::{AckEvent, Growth, KernelCc};
use crate::hystart::HyStart;
use crate::tcp_sock::{CaState, TCP_INFINITE_SSTHRESH};

/// A state to start the model from. Fields left `None` keep what `init` gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartState {
    /// `snd_cwnd` (segments, at least 1).
    pub cwnd: u32,
    /// `snd_ssthresh` (`None`: `TCP_INFINITE_SSTHRESH`).
    pub ssthresh: Option<u32>,
    /// `snd_cwnd_cnt` (kept to the era's width).
    pub snd_cwnd_cnt: u32,
    /// `icsk_ca_state`.
    pub ca_state: CaState,
    /// The sender is cwnd-limited (`tp->is_cwnd_limited` with `max_packets_out = cwnd`);
    /// the old in-flight rules take `prior_in_flight` from each ACK instead.
    pub cwnd_limited: bool,
    /// The algorithm's state (`struct bictcp` of CUBIC or BIC); must match the algorithm.
    pub growth: Option<Growth>,
    /// `delay_min` and `epoch_start` (the latter in jiffies of [`KernelCc::clock`]).
    pub delay: Option<DelayState>,
    /// HyStart's round state (CUBIC).
    pub hystart: Option<HyStart>,
}

impl Default for StartState {
    /// cwnd 10, infinite ssthresh, Open, cwnd-limited, the algorithm's init state.
    fn default() -> Self {
        StartState {
            cwnd: 10,
            ssthresh: None,
            snd_cwnd_cnt: 0,
            ca_state: CaState::Open,
            cwnd_limited: true,
            growth: None,
            delay: None,
            hystart: None,
        }
    }
}

/// A [`StartState`] the model cannot take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum StartError {
    /// The algorithm state is of another algorithm.
    #[error("the start state's algorithm state is not {expected}'s")]
    AlgorithmMismatch {
        /// The model's algorithm.
        expected: &'static str,
    },
    /// cwnd 0 (the kernel never has it).
    #[error("cwnd must be at least 1 segment")]
    ZeroCwnd,
}

impl KernelCc {
    /// Put the model in `s` (see [`StartState`]); the event log and any pending ACK are
    /// cleared.
    pub fn start_from(&mut self, s: &StartState) -> Result<(), StartError> {
        if s.cwnd == 0 {
            return Err(StartError::ZeroCwnd);
        }
        if let Some(g) = &s.growth {
            let same = matches!(
                (g, &self.growth),
                (Growth::Cubic(_), Growth::Cubic(_))
                    | (Growth::Bic(_), Growth::Bic(_))
                    | (Growth::Reno(_), Growth::Reno(_))
            );
            if !same {
                return Err(StartError::AlgorithmMismatch {
                    expected: self.algorithm.as_str(),
                });
            }
            self.growth = *g;
        }
        self.before_growth = None;
        let tp = &mut self.tp;
        tp.snd_cwnd = s.cwnd.min(tp.snd_cwnd_clamp);
        tp.snd_ssthresh = s.ssthresh.unwrap_or(TCP_INFINITE_SSTHRESH);
        tp.snd_cwnd_cnt = s.snd_cwnd_cnt & tp.cwnd_cnt_mask;
        tp.ca_state = s.ca_state;
        tp.is_cwnd_limited = s.cwnd_limited;
        tp.max_packets_out = if s.cwnd_limited { tp.snd_cwnd } else { 0 };
        if let Some(d) = s.delay {
            self.delay = d;
        }
        if let Some(h) = s.hystart {
            self.hystart = h;
        }
        let _ = self.drain_events().count();
        Ok(())
    }

    /// `pkts_acked` alone (the `delayed_ack` EWMA in Open, the delay sample into
    /// `delay_min`, HyStart), with `ack.acked_pkts` packets (at least 1) and `ack.rtt_us`.
    pub fn hook_pkts_acked(&mut self, ack: &AckEvent) {
        self.t_us = ack.now_us;
        self.before_growth = None;
        let now_j = self.clock.jiffies(ack.now_us);
        self.pkts_acked(ack, now_j);
    }

    /// `cong_avoid` alone: the era's cwnd-limited test (old rules: `prior_in_flight` =
    /// `ack.packets_in_flight + ack.acked_pkts`), slow start, the growth function and the AI
    /// step, with `ack.acked_pkts` as `acked`. 2.6.20 - 2.6.22 take their timestamp delay
    /// sample here from `ack.rtt_us`.
    pub fn hook_cong_avoid(&mut self, ack: &AckEvent) {
        self.t_us = ack.now_us;
        self.before_growth = None;
        let now_j = self.clock.jiffies(ack.now_us);
        let prior_in_flight = ack.packets_in_flight.saturating_add(ack.acked_pkts);
        self.cong_avoid(ack, now_j, prior_in_flight);
    }

    /// The algorithm's `ssthresh` op (it also ends the epoch and records `last_max_cwnd` /
    /// `loss_cwnd`, as the kernel's does); cwnd and `snd_ssthresh` are not changed.
    pub fn hook_ssthresh(&mut self) -> u32 {
        self.before_growth = None;
        self.alg_ssthresh()
    }

    /// `tcp_set_ca_state()`: the new state, and for `Loss` the algorithm's `set_state`
    /// (`bictcp_reset`, HyStart reset) without the rest of `tcp_enter_loss`.
    pub fn hook_set_state(&mut self, now_us: u64, state: CaState) {
        self.before_growth = None;
        self.t_us = now_us;
        self.tp.ca_state = state;
        if state == CaState::Loss {
            self.reset_algorithm_on_loss(now_us);
        }
    }
}
