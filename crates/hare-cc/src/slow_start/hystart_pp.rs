//! HyStart++ (RFC 9406) in kernel units: delay-increase detection per round (section 4.2),
//! Conservative Slow Start (growth divided by `CSS_GROWTH_DIVISOR`, per-ACK growth capped at
//! `L` segments, L = infinity when paced and `hspp_l_unpaced` otherwise), the return to slow
//! start when the RTT falls below `cssBaselineMinRtt`, and congestion avoidance after
//! `CSS_ROUNDS` rounds with `ssthresh = cwnd`.
//!
//! Rounds are tracked like kernel HyStart's: `windowEnd = snd_nxt` at the round start, the
//! round ends when `snd_una` (largest acknowledged + 1) passes it. "One ACK" is one ACK frame
//! with its RTT sample. As RFC 9406 section 4.3 recommends, hare uses HyStart++ for the
//! initial slow start only; after an RTO CUBIC's `set_state(TCP_CA_Loss)` falls back to standard slow start.

use crate::profile::Profile;

/// "infinity" for the RTT variables.
pub const RTT_INFINITY: u64 = u64::MAX;

/// A state change of HyStart++ on one ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PpTransition {
    /// Nothing changed.
    None,
    /// The RTT rose by the threshold: Conservative Slow Start entered.
    EnterCss,
    /// The RTT fell below the CSS baseline: back to slow start.
    AbortCss,
    /// `CSS_ROUNDS` rounds of CSS completed: congestion avoidance (`ssthresh = cwnd`).
    CssDone,
}

/// HyStart++ state of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HyStartPp {
    pub(crate) window_end: u64,
    pub(crate) last_round_min_rtt: u64,
    pub(crate) current_round_min_rtt: u64,
    pub(crate) rtt_sample_count: u32,
    pub(crate) css_baseline_min_rtt: u64,
    pub(crate) in_css: bool,
    pub(crate) css_rounds: u32,
    pub(crate) css_credit: u32,
}

crate::accessors!(HyStartPp {
    /// `windowEnd`: `snd_nxt` at the start of the current round.
    window_end = window_end: u64;
    /// `lastRoundMinRTT` (us).
    last_round_min_rtt = last_round_min_rtt: u64;
    /// `currentRoundMinRTT` (us).
    current_round_min_rtt = current_round_min_rtt: u64;
    /// `rttSampleCount`.
    rtt_sample_count = rtt_sample_count: u32;
    /// `cssBaselineMinRtt` (us).
    css_baseline_min_rtt = css_baseline_min_rtt: u64;
    /// In Conservative Slow Start.
    in_css = in_css: bool;
    /// Rounds of CSS so far (the partial round of entry counts as one).
    css_rounds = css_rounds: u32;
    /// Fractional CSS growth carried between ACKs (segments x divisor).
    css_credit = css_credit: u32;
});

impl HyStartPp {
    /// Fresh state; the first round ends once a packet sent after `snd_nxt` is acknowledged.
    pub fn new(snd_nxt: u64) -> Self {
        HyStartPp {
            window_end: snd_nxt,
            last_round_min_rtt: RTT_INFINITY,
            current_round_min_rtt: RTT_INFINITY,
            rtt_sample_count: 0,
            css_baseline_min_rtt: RTT_INFINITY,
            in_css: false,
            css_rounds: 0,
            css_credit: 0,
        }
    }

    /// `RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT / MIN_RTT_DIVISOR, MAX_RTT_THRESH))`.
    pub fn rtt_thresh(p: &Profile, last_round_min_rtt: u64) -> u64 {
        let div = u64::from(p.hspp_min_rtt_divisor.max(1));
        (last_round_min_rtt / div)
            .min(u64::from(p.hspp_max_rtt_thresh_us))
            .max(u64::from(p.hspp_min_rtt_thresh_us))
    }

    /// One ACK in slow start or CSS: round bookkeeping, the RTT sample, and the transitions.
    pub(crate) fn on_ack(
        &mut self,
        p: &Profile,
        snd_una: u64,
        snd_nxt: u64,
        rtt_us: Option<u64>,
    ) -> PpTransition {
        let mut transition = PpTransition::None;
        if snd_una > self.window_end {
            // A new round.
            if self.in_css {
                if self.css_rounds >= p.hspp_css_rounds {
                    self.in_css = false;
                    return PpTransition::CssDone;
                }
                self.css_rounds += 1;
            }
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = RTT_INFINITY;
            self.rtt_sample_count = 0;
            self.window_end = snd_nxt;
        }
        if let Some(rtt) = rtt_us {
            self.current_round_min_rtt = self.current_round_min_rtt.min(rtt);
            self.rtt_sample_count = self.rtt_sample_count.saturating_add(1);
        }
        if self.rtt_sample_count < p.hspp_n_rtt_sample || self.current_round_min_rtt == RTT_INFINITY
        {
            return transition;
        }
        if !self.in_css {
            if self.last_round_min_rtt != RTT_INFINITY {
                let thresh = Self::rtt_thresh(p, self.last_round_min_rtt);
                if self.current_round_min_rtt >= self.last_round_min_rtt.saturating_add(thresh) {
                    self.css_baseline_min_rtt = self.current_round_min_rtt;
                    self.in_css = true;
                    self.css_rounds = 1;
                    self.css_credit = 0;
                    transition = PpTransition::EnterCss;
                }
            }
        } else if self.current_round_min_rtt < self.css_baseline_min_rtt {
            // The exit was spurious: resume slow start.
            self.css_baseline_min_rtt = RTT_INFINITY;
            self.in_css = false;
            transition = PpTransition::AbortCss;
        }
        transition
    }

    /// Segments to add for `acked` packets: `min(N, L)` in slow start, that divided by
    /// `CSS_GROWTH_DIVISOR` in CSS (remainder carried).
    pub(crate) fn increase(&mut self, p: &Profile, acked: u32, paced: bool) -> u32 {
        let n = if paced {
            acked
        } else {
            acked.min(p.hspp_l_unpaced)
        };
        if !self.in_css {
            return n;
        }
        let div = p.hspp_css_growth_divisor.max(1);
        self.css_credit = self.css_credit.saturating_add(n);
        let inc = self.css_credit / div;
        self.css_credit %= div;
        inc
    }
}
