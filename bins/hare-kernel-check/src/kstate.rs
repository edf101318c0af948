//! The kernel's state in one record, as the model takes it: CA state names, the sequence
//! unwrapped to 64 bits, CUBIC's `struct bictcp`, and putting the model in that state.

use anyhow::{Context, Result};
use hare_cc::engine::KernelCc;
use hare_cc::hooks::{BictcpState, CaState, StartState, TCP_INFINITE_SSTHRESH};

use crate::probe::Probe;

/// `icsk_ca_state` values (`enum tcp_ca_state`).
pub const CA_OPEN: u8 = 0;
/// `TCP_CA_Disorder`.
pub const CA_DISORDER: u8 = 1;
/// `TCP_CA_CWR`.
pub const CA_CWR: u8 = 2;
/// `TCP_CA_Recovery`.
pub const CA_RECOVERY: u8 = 3;
/// `TCP_CA_Loss`.
pub const CA_LOSS: u8 = 4;

/// The kernel's name of a CA state.
pub fn state_name(s: u8) -> &'static str {
    match s {
        CA_OPEN => "Open",
        CA_DISORDER => "Disorder",
        CA_CWR => "CWR",
        CA_RECOVERY => "Recovery",
        CA_LOSS => "Loss",
        _ => "unknown",
    }
}

/// In a cwnd reduction (`tcp_in_cwnd_reduction()`): CWR or Recovery, where PRR sets cwnd.
pub fn in_reduction(s: u8) -> bool {
    s == CA_CWR || s == CA_RECOVERY
}

/// The model's CA state for the kernel's (hare folds CWR into Recovery).
fn model_state(s: u8) -> CaState {
    match s {
        CA_DISORDER => CaState::Disorder,
        CA_CWR | CA_RECOVERY => CaState::Recovery,
        CA_LOSS => CaState::Loss,
        _ => CaState::Open,
    }
}

/// The kernel's 32-bit sequence numbers on a 64-bit line (each taken as the nearest to the
/// last one), so that the model's `after()` tests need no wrap; the low 32 bits are kept.
#[derive(Debug, Clone, Copy)]
pub struct Unwrap {
    last: u64,
}

impl Unwrap {
    /// A line through `seq` (placed at 2^32 + seq).
    pub fn new(seq: u32) -> Self {
        Unwrap {
            last: (1u64 << 32) + u64::from(seq),
        }
    }

    /// `seq` on the line, nearest to the last one placed.
    pub fn place(&mut self, seq: u32) -> u64 {
        let delta = seq.wrapping_sub(self.last as u32) as i32;
        self.last = self.last.wrapping_add_signed(i64::from(delta));
        self.last
    }

    /// `seq` on the line without moving the reference.
    pub fn at(&self, seq: u32) -> u64 {
        let delta = seq.wrapping_sub(self.last as u32) as i32;
        self.last.wrapping_add_signed(i64::from(delta))
    }
}

/// CUBIC's state in a record, `end_seq` on the line of `seq`.
pub fn bictcp_of(p: &Probe, seq: &Unwrap) -> BictcpState {
    BictcpState {
        cnt: p.cnt,
        last_max_cwnd: p.last_max_cwnd,
        last_cwnd: p.last_cwnd,
        last_time: p.last_time,
        bic_origin_point: p.bic_origin_point,
        bic_k: p.bic_k,
        delay_min: p.delay_min,
        epoch_start: p.epoch_start,
        ack_cnt: p.ack_cnt,
        tcp_cwnd: p.tcp_cwnd,
        sample_cnt: u32::from(p.sample_cnt),
        found: u32::from(p.found),
        round_start: p.round_start,
        end_seq: seq.at(p.end_seq),
        last_ack: p.last_ack,
        curr_rtt: p.curr_rtt,
    }
}

/// `snd_ssthresh` as the model's start state takes it.
fn ssthresh_of(p: &Probe) -> Option<u32> {
    (p.snd_ssthresh < TCP_INFINITE_SSTHRESH).then_some(p.snd_ssthresh)
}

/// Put the model in the record's state: socket, CUBIC's `struct bictcp`, the cwnd-limited
/// flags and the pacing rate.
pub fn sync(cc: &mut KernelCc, p: &Probe, seq: &Unwrap) -> Result<()> {
    cc.start_from(&StartState {
        cwnd: p.snd_cwnd.max(1),
        ssthresh: ssthresh_of(p),
        snd_cwnd_cnt: p.snd_cwnd_cnt,
        ca_state: model_state(p.ca_state),
        cwnd_limited: p.is_cwnd_limited != 0,
        srtt_us: Some(p.srtt_us),
        // The module stays; the sequence and pacing rate are set below, per record.
        ..StartState::default()
    })
    .context("the model refused the kernel's state")?;
    cc.set_bictcp_state(&bictcp_of(p, seq))
        .context("the model is not CUBIC")?;
    cc.set_cwnd_limited(p.is_cwnd_limited != 0, p.max_packets_out);
    cc.set_pacing_rate(p.pacing_rate);
    Ok(())
}

/// Set only cwnd, ssthresh, `snd_cwnd_cnt` and the CA state, keeping the model's
/// `struct bictcp` (hare's own reaction to a loss: cwnd = ssthresh at once).
pub fn set_window(cc: &mut KernelCc, cwnd: u32, ssthresh: u32, state: u8) -> Result<()> {
    // start_from keeps the module when given none; the cwnd-limited flags and the pacing
    // rate are set again from the next record before the next ACK.
    cc.start_from(&StartState {
        cwnd: cwnd.max(1),
        ssthresh: (ssthresh < TCP_INFINITE_SSTHRESH).then_some(ssthresh),
        snd_cwnd_cnt: 0,
        ca_state: model_state(state),
        ..StartState::default()
    })
    .context("the model refused a window")?;
    Ok(())
}
