//! One ACK of a replay: the records around it, the clocks of the ACK, and the hooks in the
//! order of 6.x `tcp_ack()` (see [`crate::replay`]).

use anyhow::Result;
use hare_cc::engine::{AckEvent, KernelCc};
use hare_cc::hooks::{CaState, KernelClock};

use crate::kstate::{self, in_reduction, state_name, Unwrap, CA_LOSS, CA_OPEN};
use crate::probe::Probe;
use crate::tally::{EpisodeEnd, LossReaction, Outcome};

/// `TCP_INFINITE_SSTHRESH`.
pub(crate) const INFINITE: u32 = hare_cc::hooks::TCP_INFINITE_SSTHRESH;

/// One ACK: the records around it.
pub(crate) struct Step<'a> {
    pub(crate) k: usize,
    pub(crate) before: &'a Probe,
    pub(crate) after: &'a Probe,
    pub(crate) hz: u32,
}

impl Step<'_> {
    /// The ACK's `tcp_jiffies32`: the probe reads jiffies before the ACK's hooks do, and a
    /// tick can fall between, so CUBIC's own `last_time` (or a new `epoch_start`) is taken
    /// when the ACK wrote it.
    fn jiffies(&self) -> u32 {
        let (b, a) = (self.before, self.after);
        let wrote = a.last_time != 0 && (a.last_time != b.last_time || a.last_cwnd != b.last_cwnd);
        if wrote && a.ca_state != CA_LOSS {
            a.last_time
        } else if b.epoch_start == 0 && a.epoch_start != 0 {
            a.epoch_start
        } else {
            b.jiffies as u32
        }
    }

    /// The ACK's `tcp_mstamp` (us): the probe's clock, or HyStart's `last_ack` /
    /// `round_start` when the ACK wrote them (their exact value).
    fn now_us(&self) -> u64 {
        let (b, a) = (self.before, self.after);
        let probe_us = b.ktime_ns / 1000;
        let exact = if a.ca_state == CA_LOSS && b.ca_state != CA_LOSS {
            None
        } else if a.last_ack != b.last_ack {
            Some(a.last_ack)
        } else if a.round_start != b.round_start {
            Some(a.round_start)
        } else {
            None
        };
        match exact {
            Some(x) => {
                probe_us.wrapping_add_signed(i64::from(x.wrapping_sub(probe_us as u32) as i32))
            }
            None => probe_us,
        }
    }

    /// The ACK gave `pkts_acked` an RTT sample (`tp->rack.rtt_us` after it): RACK advanced
    /// (a new `rack.mstamp` or `rack.rtt_us`: packets sent in one burst share their send
    /// time), or data was delivered in Open, where nothing retransmitted is outstanding.
    fn rtt_sample(&self, acked: u32) -> bool {
        let (b, a) = (self.before, self.after);
        a.rack_mstamp != b.rack_mstamp
            || a.rack_rtt_us != b.rack_rtt_us
            || (acked > 0 && b.ca_state == CA_OPEN && a.ca_state == CA_OPEN)
    }

    pub(crate) fn label(&self) -> &'static str {
        let (from, to) = (self.before.ca_state, self.after.ca_state);
        state_name(if to != CA_OPEN { to } else { from })
    }

    pub(crate) fn run(&self, cc: &mut KernelCc, seq: &Unwrap, out: &mut Outcome) -> Result<()> {
        let (b, a) = (self.before, self.after);
        let now_us = self.now_us();
        cc.set_clock(KernelClock::aligned(self.hz, now_us, self.jiffies()));
        cc.set_sequence(seq.at(a.snd_una), seq.at(b.snd_nxt));
        cc.set_cwnd_limited(b.is_cwnd_limited != 0, b.max_packets_out);
        cc.set_pacing_rate(b.pacing_rate);
        let model_ssthresh_before = cc.ssthresh().unwrap_or(INFINITE);
        let acked = a.delivered.wrapping_sub(b.delivered);
        let ack = AckEvent {
            now_us,
            acked_pkts: acked,
            packets: acked,
            rtt_us: self.rtt_sample(acked).then_some(u64::from(a.rack_rtt_us)),
            ..AckEvent::default()
        };
        let rto = a.ca_state == CA_LOSS && b.ca_state != CA_LOSS;
        if rto {
            self.enter_loss(cc, out)?;
        }
        if ack.rtt_us.is_some() {
            cc.hook_pkts_acked(&AckEvent {
                acked_pkts: acked.max(1),
                ..ack
            });
        }
        let entered =
            !in_reduction(b.ca_state) && b.ca_state != CA_LOSS && in_reduction(a.ca_state);
        if entered {
            self.enter_reduction(cc, out)?;
        }
        let left = (in_reduction(b.ca_state) || b.ca_state == CA_LOSS)
            && !in_reduction(a.ca_state)
            && a.ca_state != CA_LOSS;
        if left && in_reduction(b.ca_state) && a.snd_ssthresh != b.snd_ssthresh {
            // An undo (tcp_try_undo_recovery() and kin): hare under quinn never undoes, so
            // the episode end says so and the model takes the kernel's state.
            out.episode_ends.push(EpisodeEnd {
                ack: self.k,
                from: state_name(b.ca_state),
                kernel: a.snd_cwnd,
                hare: cc.cwnd(),
                undo: true,
            });
            return kstate::sync(cc, a, seq);
        }
        if left {
            kstate::set_window(cc, cc.cwnd(), cc.ssthresh().unwrap_or(INFINITE), a.ca_state)?;
        }
        if !in_reduction(a.ca_state) && a.snd_una != b.snd_una {
            cc.hook_cong_avoid(&ack);
        }
        self.note_exit(cc, model_ssthresh_before, out);
        if left && in_reduction(b.ca_state) {
            out.episode_ends.push(EpisodeEnd {
                ack: self.k,
                from: state_name(b.ca_state),
                kernel: a.snd_cwnd,
                hare: cc.cwnd(),
                undo: false,
            });
        }
        self.compare(cc, seq, model_ssthresh_before, rto, out)
    }

    /// An RTO fired before this ACK (`tcp_enter_loss()` from the timer): a new ssthresh from
    /// Open/Disorder (or once the episode's `high_seq` was acknowledged), CUBIC's reset
    /// (`bictcp_state(TCP_CA_Loss)`), cwnd from the kernel (`packets_in_flight + 1`, then this
    /// ACK's slow start; not compared).
    fn enter_loss(&self, cc: &mut KernelCc, out: &mut Outcome) -> Result<()> {
        let b = self.before;
        // `!after(tp->high_seq, tp->snd_una)`.
        let una_past_high = b.high_seq.wrapping_sub(b.snd_una) as i32 <= 0;
        let reduce = b.ca_state <= kstate::CA_DISORDER || una_past_high;
        let ssthresh = if reduce {
            let s = cc.hook_ssthresh();
            out.loss_reactions.push(LossReaction {
                ack: self.k,
                into: "Loss",
                cwnd: b.snd_cwnd,
                kernel: self.after.snd_ssthresh,
                hare: s,
            });
            s
        } else {
            cc.ssthresh().unwrap_or(INFINITE)
        };
        kstate::set_window(cc, cc.cwnd(), ssthresh, CA_LOSS)?;
        cc.hook_set_state(self.now_us(), CaState::Loss);
        Ok(())
    }

    /// `tcp_enter_recovery()` / `tcp_enter_cwr()` from Open or Disorder:
    /// `tcp_init_cwnd_reduction()` asks the module's ssthresh; hare then sets cwnd = ssthresh.
    fn enter_reduction(&self, cc: &mut KernelCc, out: &mut Outcome) -> Result<()> {
        let s = cc.hook_ssthresh();
        out.loss_reactions.push(LossReaction {
            ack: self.k,
            into: state_name(self.after.ca_state),
            cwnd: self.before.snd_cwnd,
            kernel: self.after.snd_ssthresh,
            hare: s,
        });
        kstate::set_window(cc, s, s, self.after.ca_state)
    }
}
