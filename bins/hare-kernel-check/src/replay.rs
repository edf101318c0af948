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
use hare_cc::engine::KernelCc;
use hare_cc::{Algorithm, Profile};

use crate::kstate::{self, Unwrap};
use crate::probe::{Probe, Trace};
use crate::step::Step;
use crate::tally::Outcome;

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
