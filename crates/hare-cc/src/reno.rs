//! Reno (`tcp_reno_cong_avoid`, `tcp_reno_ssthresh`, `tcp_reno_undo_cwnd` in
//! `net/ipv4/tcp_cong.c`): slow start of the era, then `tcp_cong_avoid_ai(tp, snd_cwnd)`
//! (+1 per window of ACKs, or of packets from 2015); ssthresh is half the window.

use crate::profile::UndoRule;

/// `tcp_reno_ssthresh()`: `max(cwnd >> 1, 2)`.
pub fn reno_ssthresh(cwnd: u32) -> u32 {
    (cwnd >> 1).max(2)
}

/// The window after an undo: `tcp_reno_undo_cwnd()` (`max(cwnd, prior_cwnd)`, 4.13+), or,
/// before Reno had an `undo_cwnd` op, `tcp_undo_cwnd_reduction()`'s
/// `max(cwnd, ssthresh << 1)`.
pub fn reno_undo_cwnd(cwnd: u32, ssthresh: u32, prior_cwnd: u32, rule: UndoRule) -> u32 {
    match rule {
        UndoRule::PriorCwnd => cwnd.max(prior_cwnd),
        UndoRule::LastMax | UndoRule::LossCwnd => cwnd.max(ssthresh << 1),
    }
}
