//! The per-era ACK driver: the part of `tcp_input.c` that decides when the congestion-control
//! hooks run. One [`AckEvent`] is one ACK (in QUIC one ACK frame); [`KernelCc::on_ack`] runs
//! `tcp_clean_rtx_queue`'s RTT estimator and `pkts_acked`, then, in the era's order
//! (`Profile::ack_order`), the growth step gated by `tcp_may_raise_cwnd` /
//! `tcp_in_cwnd_reduction` and `tcp_fastretrans_alert`'s state exit and loss reaction. The CA
//! states are Open, Disorder (2.6.x's hold for one flight after an episode), Recovery (also
//! standing for CWR: quinn has no separate ECN state) and
//! Loss, held until the episode's `high_seq` is acknowledged. See `docs/KERNEL-NOTES.md`,
//! "One ACK".

use crate::engine::KernelCc;
use crate::engine::{AckEvent, AckRest, LossSignal};
use crate::events::{CcEvent, ExitReason, TRACE_TARGET};
use crate::hooks::StartState;
use crate::ops::{AckSample, CaEvent, CongAvoidArgs, CongestionOps, HookOut};
use crate::profile::AckOrder;
use crate::start_error::StartError;
use crate::tcp_cong;
use crate::tcp_sock::{CaState, PacingInputs, TCP_INFINITE_SSTHRESH};

impl KernelCc {
    /// One ACK in the order of the era's `tcp_ack()`: the RTT estimator and `pkts_acked`
    /// (in `tcp_clean_rtx_queue`, every era), then either `cong_avoid` before the loss
    /// reaction and the state exit (`ack_order = avoid-first`, 2.6.x - 3.x, gated by
    /// `tcp_may_raise_cwnd`) or the loss reaction and state exit first and growth after unless
    /// in Recovery/CWR (`alert-first`, 4.x+).
    #[inline]
    pub fn on_ack(&mut self, ack: &AckEvent) {
        self.t_us = ack.now_us;
        self.before_growth.close();
        let now_j = self.jiffies_at(ack.now_us);
        if let Some(largest) = ack.largest_acked {
            let una = largest.saturating_add(1);
            if una > self.tp.snd_una {
                self.tp.snd_una = una;
            }
            if una > self.tp.snd_nxt {
                self.tp.snd_nxt = una;
            }
        }
        self.tp.packets_out = ack.packets_in_flight;
        if ack.packets == 0 && ack.acked_pkts == 0 {
            // No FLAG_DATA_ACKED: neither pkts_acked nor cong_avoid run.
            if ack.ends_episode {
                self.end_episode(ack.now_us);
            }
            if let Some(loss) = ack.loss {
                self.loss_reaction(ack.now_us, loss);
            }
            return;
        }
        // Data was acknowledged: `icsk_retransmits = 0` (2.6.x on FLAG_DATA_ACKED, 4.x+ when
        // snd_una advances), so a later timeout in Loss takes a new ssthresh.
        self.rto_unanswered = false;
        // tcp_ack_update_rtt() runs in tcp_clean_rtx_queue() before pkts_acked, on the
        // oldest acked packet's RTT (seq_rtt_us); pkts_acked gets the newest's (ca_rtt_us).
        if let Some(rtt) = ack.seq_rtt_us.or(ack.rtt_us) {
            self.tp.rtt_estimator(rtt);
        }

        self.hook_pkts_acked_at(ack, now_j);

        let rest = AckRest::of(ack, now_j);
        self.save_before_growth(&rest);
        self.ack_after_pkts_acked(&rest);
    }

    /// The last ACK also revealed `loss` (quinn reports losses and ECN-CE after the frame's
    /// acks): the model goes back to the state before that ACK's growth step and runs the
    /// rest of the ACK again with the loss, in the era's order, as if the loss had come with
    /// it (whatever the era: the steps before the growth step do not read the loss). Without a
    /// pending ACK (a loss found by a timer) it is the plain loss reaction.
    pub fn amend_last_ack(&mut self, now_us: u64, loss: LossSignal) {
        let Some((b, whole)) = self.before_growth.take() else {
            self.loss_reaction(now_us, loss);
            return;
        };
        if b.ack.loss.is_some() {
            self.loss_reaction(now_us, loss);
            return;
        }
        #[cfg(debug_assertions)]
        let mut reference = self.rewound_whole(&b);
        self.rewind_growth(&b, whole);
        let ack = AckRest {
            loss: Some(loss),
            ..b.ack
        };
        self.ack_after_pkts_acked(&ack);
        #[cfg(debug_assertions)]
        {
            reference.ack_after_pkts_acked(&ack);
            self.assert_same_ack(&reference);
        }
    }

    /// The part of `tcp_ack()` after `tcp_clean_rtx_queue`, in the era's order.
    #[inline(always)]
    fn ack_after_pkts_acked(&mut self, ack: &AckRest) {
        let loss = ack.loss;
        match self.profile.ack_order {
            AckOrder::AvoidFirst => {
                // 2.6.x tcp_may_raise_cwnd(): `(!(flag & FLAG_ECE) || cwnd < ssthresh) &&
                // state not Recovery/CWR`, tested before tcp_fastretrans_alert: the ACK that
                // ends Recovery does not grow, the loss-revealing ACK does.
                let ece = loss == Some(LossSignal::Ecn);
                if self.tp.ca_state != CaState::Recovery
                    && (!ece || self.tp.snd_cwnd < self.tp.snd_ssthresh)
                {
                    self.hook_cong_avoid_at(ack);
                }
                if loss.is_some() {
                    // Growth came first: if it took cwnd past ssthresh, that ended slow
                    // start, not the loss reaction below.
                    self.check_ssthresh_reached();
                }
                // tcp_ack_is_dubious(): only such an ACK reaches tcp_fastretrans_alert().
                // A copy for that call (not inlined, and rare): the caller's `ack` keeps no
                // address, so its fields stay in registers (as `OpsCtx::reborrow`).
                if ack.ends_episode || loss.is_some() || self.tp.ca_state != CaState::Open {
                    self.fastretrans_alert_2_6(&{ *ack });
                }
            }
            AckOrder::AlertFirst => {
                // tcp_fastretrans_alert() first; then tcp_cong_control() grows unless
                // tcp_in_cwnd_reduction() (Recovery / CWR). CA_Loss grows (slow start).
                if ack.ends_episode {
                    self.end_episode(ack.now_us);
                }
                if let Some(loss) = loss {
                    self.loss_reaction(ack.now_us, loss);
                }
                if self.tp.ca_state != CaState::Recovery {
                    self.hook_cong_avoid_at(ack);
                }
            }
        }
        self.tp
            .update_pacing_rate(self.profile.pacing_ss_ratio, self.profile.pacing_ca_ratio);
        self.check_ssthresh_reached();
    }

    /// 2.6.x `tcp_fastretrans_alert()` (2.6.20 and 2.6.39 `net/ipv4/tcp_input.c`) after the
    /// growth step, for an ACK that is dubious (`tcp_ack_is_dubious()`: outside Open, ending
    /// an episode or revealing a loss; the caller lets no other ACK reach it, on which this
    /// would do nothing). Step E, the state exit once `high_seq` is acknowledged: Recovery
    /// and Loss when the adapter says so (their `tcp_try_undo_recovery()` cannot undo under
    /// quinn, so `undo_marker` stays set); Disorder when something above its own `high_seq`
    /// is, with `undo_marker = 0`. Step F: in Loss, `tcp_moderate_cwnd()` (cwnd = min(cwnd,
    /// in_flight + tcp_max_burst())); in Recovery, nothing; a loss from Open or Disorder
    /// enters Recovery (or CWR); otherwise `tcp_try_to_open()`: Disorder while `undo_marker`
    /// is set, else Open (`high_seq = snd_nxt` when the state changes), then
    /// `tcp_moderate_cwnd()`. Not inlined: it runs on a few ACKs per loss episode.
    #[inline(never)]
    fn fastretrans_alert_2_6(&mut self, ack: &AckRest) {
        let loss = ack.loss;
        let before = self.tp.ca_state;
        if ack.ends_episode {
            self.end_episode(ack.now_us);
        }
        if self.tp.ca_state == CaState::Disorder && self.tp.snd_una > self.tp.high_seq {
            self.tp.undo_marker = false;
            self.tp.ca_state = CaState::Open;
        }
        let moderate = match (self.tp.ca_state, loss) {
            (CaState::Loss, _) => true,
            (CaState::Recovery, _) => false,
            (_, Some(loss)) => {
                self.loss_reaction(ack.now_us, loss);
                false
            }
            (_, None) if before != CaState::Open || ack.ends_episode => {
                let state = if self.tp.undo_marker {
                    CaState::Disorder
                } else {
                    CaState::Open
                };
                if self.tp.ca_state != state {
                    self.tp.ca_state = state;
                    self.tp.high_seq = self.tp.snd_nxt;
                }
                true
            }
            (_, None) => false,
        };
        if moderate {
            let cap = ack
                .packets_in_flight
                .saturating_add(tcp_cong::tcp_max_burst(&self.profile));
            self.tp.snd_cwnd = self.tp.snd_cwnd.min(cap).max(1);
        }
    }

    /// [`KernelCc::hook_pkts_acked`] inside an ACK, at its jiffies: `ca_ops->pkts_acked()`
    /// with the ACK's packet count: the kernel's count is packets
    /// (`tcp_skb_pcount` >= 1 each), so an ACK of less than a segment of bytes counts one.
    #[inline(always)]
    fn hook_pkts_acked_at(&mut self, ack: &AckEvent, now_j: u32) {
        let sample = AckSample {
            pkts: ack.acked_pkts.max(1),
            rtt_us: ack.rtt_us,
        };
        let mut out = HookOut::default();
        let (module, mut ctx) = self.hook_parts(ack.now_us, now_j, &mut out);
        module.pkts_acked(&mut ctx, &sample);
        self.hook_done(&out);
    }

    /// [`KernelCc::hook_cong_avoid`] inside an ACK, at its jiffies: `ca_ops->cong_avoid()`
    /// (`tcp_cong_avoid()`), with `prior_in_flight` for the era's cwnd-limited test.
    #[inline(always)]
    fn hook_cong_avoid_at(&mut self, ack: &AckRest) {
        let args = CongAvoidArgs {
            in_flight: ack.prior_in_flight,
            acked: ack.acked_pkts,
            rtt_us: ack.echo_rtt_us,
            // Taken before the ACK's state change (2.6.x runs cong_avoid first).
            data_acked: self.tp.ca_state == CaState::Open && ack.loss.is_none(),
        };
        let mut out = HookOut::default();
        let (module, mut ctx) = self.hook_parts(ack.now_us, ack.now_j, &mut out);
        module.cong_avoid(&mut ctx, &args);
        self.hook_done(&out);
    }

    // Cold (as `end_episode`): a few ACKs per loss episode take it, so that the ACKs without
    // one run straight through `ack_after_pkts_acked` (the compiler lays out the likely path
    // as the fall-through; taken jumps cost the common frame measurably, docs/CC-BENCHMARK.md).
    #[cold]
    fn loss_reaction(&mut self, now_us: u64, loss: LossSignal) {
        match loss {
            LossSignal::Loss => self.on_congestion(now_us, false),
            LossSignal::Ecn => self.on_congestion(now_us, true),
            LossSignal::Rto => self.on_rto(now_us),
        }
    }

    /// `tcp_fastretrans_alert`'s state exit when `high_seq` is acknowledged: Recovery (and the
    /// folded CWR) and Loss return to Open. The window stays (quinn has no PRR: cwnd is
    /// already ssthresh after a Recovery; after a Loss it is what slow start made it).
    #[cold]
    fn end_episode(&mut self, now_us: u64) {
        // Open and Disorder have no episode to end (Disorder ends on its own high_seq).
        if matches!(self.tp.ca_state, CaState::Open | CaState::Disorder) {
            return;
        }
        self.tp.ca_state = CaState::Open;
        tracing::trace!(
            target: TRACE_TARGET,
            t_us = now_us,
            cwnd = self.tp.snd_cwnd,
            "recovery ended"
        );
        self.events.push(CcEvent::RecoveryEnded {
            t_us: now_us,
            cwnd: self.tp.snd_cwnd,
        });
    }

    /// A congestion event outside a recovery episode (the adapter filters repeats):
    /// ssthresh = the algorithm's `ssthresh()`, cwnd = ssthresh (quinn has no PRR),
    /// state Recovery. `ecn` is true for ECN-CE. Ignored in Recovery and in Loss (the kernel
    /// enters Recovery only from Open/Disorder; CWR only below CWR).
    pub fn on_congestion(&mut self, now_us: u64, ecn: bool) {
        // A hook outside the last ACK: that ACK is complete.
        self.before_growth.close();
        self.t_us = now_us;
        if !matches!(self.tp.ca_state, CaState::Open | CaState::Disorder) {
            return;
        }
        let from = self.tp.snd_cwnd;
        let in_ss = self.in_slow_start();
        // tcp_enter_recovery() saves tcp_current_ssthresh() for an undo; tcp_enter_cwr()
        // clears it (`tp->prior_ssthresh = 0`, 2.6.20 and 6.x alike): an ECN reduction is
        // never undone to an earlier ssthresh.
        self.tp.prior_ssthresh = if ecn { 0 } else { self.tp.current_ssthresh() };
        self.tp.prior_cwnd = from;
        let ssthresh = self.hook_ssthresh();
        self.tp.snd_ssthresh = ssthresh;
        self.tp.snd_cwnd = ssthresh.min(self.tp.snd_cwnd_clamp);
        self.tp.snd_cwnd_cnt = 0;
        self.tp.ca_state = CaState::Recovery;
        // tcp_enter_recovery() sets undo_marker; tcp_enter_cwr() clears it.
        self.tp.undo_marker = !ecn;
        if in_ss && !self.ss_exited {
            self.record_exit(now_us, from, ssthresh, ExitReason::Loss);
        }
        self.reductions = self.reductions.saturating_add(1);
        tracing::trace!(
            target: TRACE_TARGET,
            t_us = now_us,
            from_cwnd = from,
            to_cwnd = self.tp.snd_cwnd,
            ssthresh,
            ecn,
            "window reduced"
        );
        self.events.push(CcEvent::WindowReduced {
            t_us: now_us,
            from_cwnd: from,
            to_cwnd: self.tp.snd_cwnd,
            ssthresh,
            ecn,
        });
    }

    /// The episode ended outside an ACK the model saw (as if `high_seq` were acknowledged):
    /// Recovery and Loss return to Open.
    pub fn on_recovery_end(&mut self, now_us: u64) {
        // A hook outside the last ACK: that ACK is complete.
        self.before_growth.close();
        self.t_us = now_us;
        self.end_episode(now_us);
    }

    /// Persistent congestion: the kernel's RTO path of the era, `tcp_enter_loss()`:
    /// `ssthresh()` (unless the window was already reduced in this episode), cwnd 1,
    /// `TCP_CA_Loss` with the algorithm's state reset. The model stays in Loss until the
    /// episode's `high_seq` is acknowledged ([`AckEvent::ends_episode`]), slow-starting
    /// meanwhile; in Loss neither CUBIC (to 2.6.39) nor BIC update `delayed_ack`.
    pub fn on_rto(&mut self, now_us: u64) {
        // A hook outside the last ACK: that ACK is complete.
        self.before_growth.close();
        self.t_us = now_us;
        let from = self.tp.snd_cwnd;
        let in_ss = self.in_slow_start();
        // tcp_enter_loss(): a new ssthresh from Open/Disorder, or in Loss once data was
        // acknowledged since the last timeout (`state == TCP_CA_Loss && !icsk_retransmits`);
        // not for a timeout repeated without an ACK, nor in Recovery (whose window was
        // already reduced; the episode's end returns the model to Open first).
        let reduce = match self.tp.ca_state {
            CaState::Open | CaState::Disorder => true,
            CaState::Loss => !self.rto_unanswered,
            CaState::Recovery => false,
        };
        if reduce {
            self.tp.prior_ssthresh = self.tp.current_ssthresh();
            self.tp.prior_cwnd = from;
            self.tp.snd_ssthresh = self.hook_ssthresh();
        }
        let ssthresh = self.tp.snd_ssthresh;
        if in_ss && !self.ss_exited {
            self.record_exit(now_us, from, ssthresh, ExitReason::Rto);
        }
        // Loss window: 1 segment (modern: packets_in_flight + 1 after marking all lost).
        self.tp.snd_cwnd = 1;
        self.tp.snd_cwnd_cnt = 0;
        // tcp_set_ca_state(TCP_CA_Loss): bictcp_reset() and bictcp_hystart_reset().
        self.tp.ca_state = CaState::Loss;
        // tcp_enter_loss() of a plain RTO: `tp->undo_marker = tp->snd_una`.
        self.tp.undo_marker = true;
        self.hook_set_state(now_us, CaState::Loss);
        self.ss_exited = false;
        self.rto_resets = self.rto_resets.saturating_add(1);
        // tcp_retransmit_timer(): `icsk->icsk_retransmits++` after tcp_enter_loss().
        self.rto_unanswered = true;
        tracing::trace!(
            target: TRACE_TARGET,
            t_us = now_us,
            from_cwnd = from,
            ssthresh,
            "rto reset"
        );
        self.events.push(CcEvent::RtoReset {
            t_us: now_us,
            from_cwnd: from,
            ssthresh,
        });
    }
}

/// Sends, segment-size changes and the loss reset outside an ACK.
impl KernelCc {
    /// Packets were sent; `snd_nxt` is the next packet number to be sent after them
    /// (last sent + 1), `packets_out` the packets in flight after sending.
    #[inline]
    pub fn on_sent(&mut self, now_us: u64, snd_nxt: u64, packets_out: u32) {
        // A hook outside the last ACK: that ACK is complete.
        self.before_growth.close();
        self.t_us = now_us;
        let now_j = self.jiffies_at(now_us);
        // tcp_event_data_sent(): CA_EVENT_TX_START when nothing was in flight.
        if self.tp.packets_out == 0 {
            self.tx_start(now_us, now_j);
        }
        self.tp.lsndtime = now_j;
        if snd_nxt > self.tp.snd_nxt {
            self.tp.snd_nxt = snd_nxt;
        }
        self.tp.packets_out = packets_out;
        let limited = packets_out >= self.tp.snd_cwnd;
        self.tp.cwnd_validate(self.profile.cwnd_limited, limited);
    }

    /// `CA_EVENT_TX_START` at `now_j` (cold: out of the way of the sends that find packets in
    /// flight, nearly all of them).
    #[cold]
    fn tx_start(&mut self, now_us: u64, now_j: u32) {
        let idle_jiffies = now_j.wrapping_sub(self.tp.lsndtime) as i32;
        self.run_hook_at(now_us, now_j, |m, ctx| {
            m.cwnd_event(ctx, CaEvent::TxStart { idle_jiffies })
        });
    }

    /// The segment size changed (MTU discovery): rescale as the kernel does.
    ///
    /// A larger segment is `tcp_mtup_probe_success()`: `cwnd = cwnd * old / new` (at least 1,
    /// computed in 64 bits), `snd_cwnd_cnt = 0`, and from 9c6d5e5537e (2.6.37) `snd_ssthresh =
    /// tcp_current_ssthresh()` (before it the value went to `rcv_ssthresh`). A smaller one is
    /// `tcp_sync_mss()` after a black-hole/ICMP event: cwnd stays in segments.
    pub fn on_mss_change(&mut self, now_us: u64, new_mss: u32) {
        // A hook outside the last ACK: that ACK is complete.
        self.before_growth.close();
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
}

/// The hook-by-hook entry points ([`crate::hooks`]).
impl KernelCc {
    /// Put the model in `s` (see [`StartState`]); the event log and any pending ACK are
    /// cleared.
    pub fn start_from(&mut self, s: &StartState) -> Result<(), StartError> {
        if s.cwnd == 0 {
            return Err(StartError::ZeroCwnd);
        }
        let snd_una = s.snd_una.unwrap_or(self.tp.snd_una);
        let snd_nxt = s.snd_nxt.unwrap_or(self.tp.snd_nxt.max(snd_una));
        if snd_una > snd_nxt {
            return Err(StartError::UnaAfterNxt { snd_una, snd_nxt });
        }
        if let Some(m) = &s.module {
            if !m.same_algorithm(&self.module) {
                return Err(StartError::AlgorithmMismatch {
                    expected: self.algorithm.as_str(),
                });
            }
            self.module = *m;
        }
        self.before_growth.close();
        let tp = &mut self.tp;
        if let Some(clamp) = s.cwnd_clamp {
            tp.snd_cwnd_clamp = clamp.max(1);
        }
        if let Some(una) = s.snd_una {
            tp.snd_una = una;
            tp.snd_nxt = tp.snd_nxt.max(una);
        }
        if let Some(nxt) = s.snd_nxt {
            tp.snd_nxt = nxt;
        }
        tp.snd_cwnd = s.cwnd.min(tp.snd_cwnd_clamp);
        tp.snd_ssthresh = s.ssthresh.unwrap_or(TCP_INFINITE_SSTHRESH);
        tp.snd_cwnd_cnt = s.snd_cwnd_cnt & tp.cwnd_cnt_mask;
        tp.ca_state = s.ca_state;
        // An episode or a Disorder hold started here: undo still possible, a hold lasting
        // until something sent from now on is acknowledged.
        tp.undo_marker = s.ca_state != CaState::Open;
        tp.high_seq = tp.snd_nxt;
        tp.is_cwnd_limited = s.cwnd_limited;
        tp.max_packets_out = if s.cwnd_limited { tp.snd_cwnd } else { 0 };
        if let Some(srtt) = s.srtt_us {
            tp.srtt_us = srtt;
            tp.update_pacing_rate(self.profile.pacing_ss_ratio, self.profile.pacing_ca_ratio);
        }
        if let Some(rate) = s.pacing_rate {
            tp.pacing = PacingInputs::given(rate);
        }
        let _ = self.drain_events().count();
        Ok(())
    }

    /// `pkts_acked` alone (the `delayed_ack` EWMA in Open; CUBIC's delay sample into
    /// `delay_min` and HyStart), with `ack.acked_pkts` packets (at least 1) and `ack.rtt_us`.
    pub fn hook_pkts_acked(&mut self, ack: &AckEvent) {
        self.t_us = ack.now_us;
        self.before_growth.close();
        let now_j = self.clock.jiffies(ack.now_us);
        self.hook_pkts_acked_at(ack, now_j);
    }

    /// `cong_avoid` alone: the era's cwnd-limited test (old rules:
    /// [`AckEvent::prior_in_flight`]), slow start, the growth function and the AI
    /// step, with `ack.acked_pkts` as `acked`. 2.6.20 - 2.6.22 take their timestamp delay
    /// sample here, from the echoed timestamp's RTT: `ack.seq_rtt_us` (the oldest acknowledged
    /// packet's, which a delayed ACK echoes), else `ack.rtt_us`; not on a dubious ACK (the
    /// state is not Open, or `ack.loss` is set).
    pub fn hook_cong_avoid(&mut self, ack: &AckEvent) {
        self.t_us = ack.now_us;
        self.before_growth.close();
        let now_j = self.clock.jiffies(ack.now_us);
        self.hook_cong_avoid_at(&AckRest::of(ack, now_j));
    }

    /// The algorithm's `ssthresh` op (it also ends the epoch and records `last_max_cwnd` /
    /// `loss_cwnd`, as the kernel's does); cwnd and `snd_ssthresh` are not changed.
    pub fn hook_ssthresh(&mut self) -> u32 {
        self.before_growth.close();
        self.run_hook(self.t_us, |m, ctx| m.ssthresh(ctx))
    }

    /// `cwnd_event(CA_EVENT_TX_START)` alone, as `tcp_event_data_sent()` raises it when data
    /// is sent with nothing in flight, `idle_jiffies` after the last send (`tcp_jiffies32 -
    /// tp->lsndtime`). CUBIC from 30927520dbae (2015, profile key `idle_restart`) moves
    /// `epoch_start` by the idle time; the other modules ignore it. Whole sends are
    /// [`KernelCc::on_sent`].
    pub fn hook_cwnd_event_tx_start(&mut self, now_us: u64, idle_jiffies: i32) {
        self.before_growth.close();
        self.t_us = now_us;
        self.run_hook(now_us, |m, ctx| {
            m.cwnd_event(ctx, CaEvent::TxStart { idle_jiffies })
        });
    }

    /// `tcp_set_ca_state()`: the module's `set_state` (CUBIC / BIC reset on `Loss`:
    /// `bictcp_reset`, HyStart reset), then the new state, without the rest of
    /// `tcp_enter_loss`.
    pub fn hook_set_state(&mut self, now_us: u64, state: CaState) {
        self.before_growth.close();
        self.t_us = now_us;
        self.run_hook(now_us, |m, ctx| m.set_state(ctx, state));
        self.tp.ca_state = state;
    }
}
