//! After one ACK: the model against the kernel, field by field, the slow-start exits, and
//! the model put back in the kernel's state where they differ.

use anyhow::{Context, Result};
use hare_cc::engine::KernelCc;
use hare_cc::hooks::BictcpState;

use crate::kstate::{self, in_reduction, Unwrap, CA_LOSS};
use crate::probe::Probe;
use crate::step::{Step, INFINITE};
use crate::tally::{Divergence, Exit, Outcome, KEEP_DIVERGENCES};

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
    /// The cwnd of a slow-start exit: after the ACK, or before it for a loss reaction (whose
    /// cwnd after is PRR's or the RTO's).
    fn exit_cwnd(&self, after: u32) -> u32 {
        if in_reduction(self.after.ca_state) || self.after.ca_state == CA_LOSS {
            self.before.snd_cwnd
        } else {
            after
        }
    }

    pub(crate) fn note_exit(&self, cc: &KernelCc, model_ssthresh_before: u32, out: &mut Outcome) {
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

    /// Compare the model with the kernel after the ACK, count, and put the model back in the
    /// kernel's state where they differ (cwnd under PRR is hare's own: kept).
    pub(crate) fn compare(
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
