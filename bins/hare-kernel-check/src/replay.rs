//! Replaying a recorded flow through hare-cc's kernel model of `linux-6`, ACK by ACK.
//!
//! Record k holds the socket before segment k was processed and record k+1 after it, so each
//! consecutive pair is one ACK. Before each ACK the model gets what the kernel's socket held
//! (sequence numbers, the cwnd-limited flags, the pacing rate) and a clock aligned to the
//! kernel's at that ACK; then the hooks run in the order of 6.x `tcp_ack()`: `pkts_acked`
//! (with `tp->rack.rtt_us` when RACK took a sample), the state change of
//! `tcp_fastretrans_alert()` (a new ssthresh on entering Recovery or CWR, or on an RTO's
//! Loss), then `cong_avoid` with the packets delivered unless in a cwnd reduction. After the
//! ACK the model's state is compared with the kernel's; where they differ the model is put
//! back in the kernel's state, so each ACK is judged from the same start.

use anyhow::{Context, Result};
use hare_cc::engine::{AckEvent, KernelCc};
use hare_cc::hooks::{BictcpState, CaState, KernelClock};
use hare_cc::{Algorithm, Profile};

use crate::kstate::{self, in_reduction, state_name, Unwrap, CA_LOSS, CA_OPEN};
use crate::probe::{Probe, Trace};
use crate::tally::{Divergence, EpisodeEnd, Exit, LossReaction, Outcome, KEEP_DIVERGENCES};

/// `TCP_INFINITE_SSTHRESH`.
const INFINITE: u32 = hare_cc::hooks::TCP_INFINITE_SSTHRESH;

/// The records of the flow's sender socket: the socket with the most records (a watched port
/// may also carry a control connection).
pub fn flow_records(trace: &Trace) -> Vec<Probe> {
    let mut counts = std::collections::BTreeMap::new();
    for p in &trace.probes {
        *counts.entry(p.sk).or_insert(0usize) += 1;
    }
    let Some((&sk, _)) = counts
        .iter()
        .max_by_key(|(sk, n)| (**n, std::cmp::Reverse(**sk)))
    else {
        return Vec::new();
    };
    trace
        .probes
        .iter()
        .filter(|p| p.sk == sk)
        .copied()
        .collect()
}

/// The `linux-6` profile at the trace's HZ and the socket's GSO size, and whether the socket
/// paces (`sk_pacing_status`).
fn model_for(trace: &Trace, first: &Probe) -> Result<KernelCc> {
    let mut profile = Profile::named("linux-6").context("profile linux-6")?;
    profile
        .set("hz", &trace.info.hz.to_string())
        .with_context(|| format!("hz {} from the trace", trace.info.hz))?;
    if first.gso_max_size > 0 {
        profile
            .set("gso_max_size", &first.gso_max_size.to_string())
            .context("gso_max_size from the trace")?;
    }
    let paced = first.pacing_status != 0;
    Ok(KernelCc::new(
        Algorithm::Cubic,
        &profile,
        paced,
        first.mss_cache.max(1),
    ))
}

/// Replay the trace's flow and count what agreed.
pub fn replay(trace: &Trace) -> Result<Outcome> {
    let records = flow_records(trace);
    let mut out = Outcome {
        records: records.len(),
        ..Outcome::default()
    };
    let Some(first) = records.first() else {
        return Ok(out);
    };
    let mut cc = model_for(trace, first)?;
    let mut seq = Unwrap::new(first.snd_una);
    kstate::sync(&mut cc, first, &seq)?;
    for (k, pair) in records.windows(2).enumerate() {
        let (before, after) = (&pair[0], &pair[1]);
        if unchanged(before, after) {
            out.unchanged += 1;
            continue;
        }
        out.acks += 1;
        seq.place(after.snd_una);
        let step = Step {
            k,
            before,
            after,
            hz: trace.info.hz,
        };
        step.run(&mut cc, &seq, &mut out)?;
    }
    Ok(out)
}

/// Nothing the replay reads changed between two records.
fn unchanged(a: &Probe, b: &Probe) -> bool {
    a.delivered == b.delivered
        && a.snd_una == b.snd_una
        && a.snd_cwnd == b.snd_cwnd
        && a.snd_ssthresh == b.snd_ssthresh
        && a.snd_cwnd_cnt == b.snd_cwnd_cnt
        && a.ca_state == b.ca_state
        && a.rack_mstamp == b.rack_mstamp
        && kstate::bictcp_of(a, &Unwrap::new(0)) == kstate::bictcp_of(b, &Unwrap::new(0))
}

/// One ACK: the records around it.
struct Step<'a> {
    k: usize,
    before: &'a Probe,
    after: &'a Probe,
    hz: u32,
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

    fn label(&self) -> &'static str {
        let (from, to) = (self.before.ca_state, self.after.ca_state);
        state_name(if to != CA_OPEN { to } else { from })
    }

    fn run(&self, cc: &mut KernelCc, seq: &Unwrap, out: &mut Outcome) -> Result<()> {
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

    /// The cwnd of a slow-start exit: after the ACK, or before it for a loss reaction (whose
    /// cwnd after is PRR's or the RTO's).
    fn exit_cwnd(&self, after: u32) -> u32 {
        if in_reduction(self.after.ca_state) || self.after.ca_state == CA_LOSS {
            self.before.snd_cwnd
        } else {
            after
        }
    }

    fn note_exit(&self, cc: &KernelCc, model_ssthresh_before: u32, out: &mut Outcome) {
        let (b, a) = (self.before, self.after);
        let reason = |found: u32| match found {
            0 => "loss",
            f if f & 1 != 0 => "ack-train",
            _ => "delay",
        };
        if out.exit_kernel.is_none() && b.snd_ssthresh >= INFINITE && a.snd_ssthresh < INFINITE {
            out.exit_kernel = Some(Exit {
                ack: self.k,
                cwnd: self.exit_cwnd(a.snd_cwnd),
                ssthresh: a.snd_ssthresh,
                reason: if a.ca_state == CA_LOSS {
                    "rto"
                } else {
                    reason(u32::from(a.found))
                },
            });
        }
        let model_ssthresh = cc.ssthresh().unwrap_or(INFINITE);
        if out.exit_hare.is_none() && model_ssthresh_before >= INFINITE && model_ssthresh < INFINITE
        {
            let found = cc.bictcp_state().map_or(0, |s| s.found);
            out.exit_hare = Some(Exit {
                ack: self.k,
                cwnd: self.exit_cwnd(cc.cwnd()),
                ssthresh: model_ssthresh,
                reason: if a.ca_state == CA_LOSS {
                    "rto"
                } else {
                    reason(found)
                },
            });
        }
    }
}

/// The fields compared after an ACK, kernel then hare.
fn fields(a: &Probe, m: &BictcpState, seq: &Unwrap) -> [(&'static str, u64, u64); 16] {
    let k = kstate::bictcp_of(a, seq);
    [
        ("cnt", k.cnt.into(), m.cnt.into()),
        (
            "last_max_cwnd",
            k.last_max_cwnd.into(),
            m.last_max_cwnd.into(),
        ),
        ("last_cwnd", k.last_cwnd.into(), m.last_cwnd.into()),
        ("last_time", k.last_time.into(), m.last_time.into()),
        (
            "bic_origin_point",
            k.bic_origin_point.into(),
            m.bic_origin_point.into(),
        ),
        ("bic_K", k.bic_k.into(), m.bic_k.into()),
        ("delay_min", k.delay_min.into(), m.delay_min.into()),
        ("epoch_start", k.epoch_start.into(), m.epoch_start.into()),
        ("ack_cnt", k.ack_cnt.into(), m.ack_cnt.into()),
        ("tcp_cwnd", k.tcp_cwnd.into(), m.tcp_cwnd.into()),
        ("sample_cnt", k.sample_cnt.into(), m.sample_cnt.into()),
        ("found", k.found.into(), m.found.into()),
        ("round_start", k.round_start.into(), m.round_start.into()),
        ("end_seq", k.end_seq & 0xffff_ffff, m.end_seq & 0xffff_ffff),
        ("last_ack", k.last_ack.into(), m.last_ack.into()),
        ("curr_rtt", k.curr_rtt.into(), m.curr_rtt.into()),
    ]
}

impl Step<'_> {
    /// Compare the model with the kernel after the ACK, count, and put the model back in the
    /// kernel's state where they differ (cwnd under PRR is hare's own: kept).
    fn compare(
        &self,
        cc: &mut KernelCc,
        seq: &Unwrap,
        model_ssthresh_before: u32,
        rto: bool,
        out: &mut Outcome,
    ) -> Result<()> {
        let (b, a) = (self.before, self.after);
        let mut diffs = Vec::new();
        let label = self.label();
        let prr = in_reduction(a.ca_state);
        let model_ssthresh = cc.ssthresh().unwrap_or(INFINITE);
        if prr {
            out.prr_acks += 1;
        } else if !rto {
            let same = cc.cwnd() == a.snd_cwnd;
            if label == "Open" {
                out.cwnd_open.add(same);
            } else {
                out.cwnd_other.entry(label).or_default().add(same);
            }
            if !same {
                diffs.push(format!("cwnd kernel={} hare={}", a.snd_cwnd, cc.cwnd()));
            }
            let cnt_same = cc.snd_cwnd_cnt() == a.snd_cwnd_cnt;
            out.fields.entry("snd_cwnd_cnt").or_default().add(cnt_same);
            if !cnt_same {
                diffs.push(format!(
                    "snd_cwnd_cnt kernel={} hare={}",
                    a.snd_cwnd_cnt,
                    cc.snd_cwnd_cnt()
                ));
            }
        }
        let decided = a.snd_ssthresh != b.snd_ssthresh || model_ssthresh != model_ssthresh_before;
        let ss_same = model_ssthresh == a.snd_ssthresh;
        if decided {
            out.ssthresh_decisions.add(ss_same);
        }
        out.fields.entry("ssthresh").or_default().add(ss_same);
        if !ss_same {
            diffs.push(format!(
                "ssthresh kernel={} hare={}",
                a.snd_ssthresh, model_ssthresh
            ));
        }
        let model = cc.bictcp_state().context("the model is not CUBIC")?;
        for (name, kernel, hare) in fields(a, &model, seq) {
            out.fields.entry(name).or_default().add(kernel == hare);
            if kernel != hare {
                diffs.push(format!("{name} kernel={kernel} hare={hare}"));
            }
        }
        if diffs.is_empty() && !rto {
            return Ok(());
        }
        if !diffs.is_empty() && out.divergences.len() < KEEP_DIVERGENCES {
            out.divergences.push(Divergence {
                ack: self.k,
                state: label,
                fields: diffs,
            });
        }
        let hare_cwnd = cc.cwnd();
        kstate::sync(cc, a, seq)?;
        if prr {
            kstate::set_window(cc, hare_cwnd, a.snd_ssthresh, a.ca_state)?;
        }
        Ok(())
    }
}
