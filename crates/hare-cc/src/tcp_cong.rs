//! The shared steps of `net/ipv4/tcp_cong.c` (and the `tcp.h` test that gates them), once per
//! era, as the algorithm modules call them: `tcp_slow_start` in its three forms,
//! `tcp_cong_avoid_ai` in its two, `tcp_is_cwnd_limited`, and Reno's own hooks
//! (`tcp_reno_cong_avoid`, `tcp_reno_ssthresh`, `tcp_reno_undo_cwnd`). See
//! `docs/KERNEL-NOTES.md`, "Slow start" and "Additive increase".

use crate::profile::{AiStep, CwndLimitedRule, Profile, SlowStartKind, SsIncrement, UndoRule};
use crate::tcp_sock::TcpSock;

/// Bound on the per-ACK repetitions of the RFC 3742 step in packet-counting eras.
const MAX_SS_STEPS: u32 = 1 << 16;

/// Bound on the credit-draining loop of the 2.6.22 `tcp_slow_start()`: only a credit of more
/// than ~2^20 windows reaches it (the kernel would loop on).
pub const MAX_CREDIT_STEPS: u32 = 1 << 20;

/// 2.6.20 `tcp_slow_start()` with ABC off: +1 per ACK, up to the clamp.
pub fn slow_start_per_ack(tp: &mut TcpSock) {
    if tp.snd_cwnd < tp.snd_cwnd_clamp {
        tp.snd_cwnd += 1;
    }
}

/// 2.6.22 - 3.12 `tcp_slow_start()` (886236c1247a): credit `cwnd` (or `max_ssthresh / 2`
/// above `max_ssthresh`, RFC 3742) to `snd_cwnd_cnt`, then +1 per `cwnd` of credit.
/// `times` repeats the per-ACK step (1 in the kernel; hare's named limited slow start on
/// packet-counting eras passes the packets ACKed). Returns the guards taken.
pub fn slow_start_credit(tp: &mut TcpSock, max_ssthresh: u32, times: u32) -> u32 {
    let mut guards = 0;
    for _ in 0..times.min(MAX_SS_STEPS) {
        let cnt = if max_ssthresh > 0 && tp.snd_cwnd > max_ssthresh {
            max_ssthresh >> 1
        } else {
            tp.snd_cwnd
        };
        // `tp->snd_cwnd_cnt += cnt`: a u16 to 2.6.23 keeps only the low 16 bits, so from
        // cwnd 32,768 the credit wraps (f78a1b38928 made it 32-bit in 2.6.24).
        tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(cnt) & tp.cwnd_cnt_mask;
        guards += drain_credit(tp);
    }
    guards
}

/// `while (snd_cwnd_cnt >= snd_cwnd) { snd_cwnd_cnt -= snd_cwnd; cwnd++ (to the clamp) }`.
/// Returns 1 when the loop had to be cut short (see [`MAX_CREDIT_STEPS`]).
fn drain_credit(tp: &mut TcpSock) -> u32 {
    for _ in 0..MAX_CREDIT_STEPS {
        if tp.snd_cwnd == 0 || tp.snd_cwnd_cnt < tp.snd_cwnd {
            return 0;
        }
        tp.snd_cwnd_cnt -= tp.snd_cwnd;
        if tp.snd_cwnd < tp.snd_cwnd_clamp {
            tp.snd_cwnd += 1;
        }
    }
    // Settle the credit at the current window.
    if tp.snd_cwnd > 0 {
        tp.snd_cwnd_cnt %= tp.snd_cwnd;
    }
    1
}

/// 4.x+ `tcp_slow_start(tp, acked)`: `cwnd = min(cwnd + acked, ssthresh)`, returning the
/// ACKed packets left over for congestion avoidance.
///
/// u32 arithmetic as the kernel's (`net/ipv4/tcp_cong.c`, 4.4 and 6.x alike): the sum wraps
/// at 2^32, and so does the leftover `acked -= cwnd - snd_cwnd`. Only a window within
/// `acked` of 2^32 (a `snd_cwnd_clamp` and ssthresh beyond 2^31) gets there.
pub fn slow_start_acked(tp: &mut TcpSock, acked: u32) -> u32 {
    let cwnd = tp.snd_cwnd.wrapping_add(acked).min(tp.snd_ssthresh);
    let left = acked.wrapping_sub(cwnd.wrapping_sub(tp.snd_cwnd));
    tp.snd_cwnd = cwnd.min(tp.snd_cwnd_clamp);
    left
}

/// `tcp_slow_start()` of the profile's era for one ACK of `acked` packets; `limited` is RFC
/// 3742 (`tcp_max_ssthresh`, `slow_start=limited`). Returns the packets left for congestion
/// avoidance in the same call (4.x+; 0 when used up) and the guards taken.
pub fn slow_start(tp: &mut TcpSock, p: &Profile, limited: bool, acked: u32) -> (u32, u32) {
    let lss = match p.ss_increment {
        // 2.6.22 - 3.12 read `sysctl_tcp_max_ssthresh` inside every tcp_slow_start() call,
        // whichever module makes it (CUBIC's with HyStart on too): the key needs no
        // `slow_start=limited` there.
        SsIncrement::PerAckCnt => p.max_ssthresh,
        // 2.6.20 had no such sysctl, 3.13 removed it: hare's named strategy only.
        SsIncrement::PerAck | SsIncrement::Acked if limited => p.max_ssthresh,
        SsIncrement::PerAck | SsIncrement::Acked => 0,
    };
    match p.ss_increment {
        SsIncrement::PerAck if lss == 0 => {
            slow_start_per_ack(tp);
            (0, 0)
        }
        SsIncrement::PerAck | SsIncrement::PerAckCnt => (0, slow_start_credit(tp, lss, 1)),
        SsIncrement::Acked => {
            if lss > 0 && tp.snd_cwnd > lss {
                // hare extension (named, non-kernel): RFC 3742 on a packet-counting stack
                // (the kernel retired tcp_max_ssthresh in 3.13): the 2.6.22 step once per
                // ACKed packet.
                return (0, slow_start_credit(tp, lss, acked));
            }
            (slow_start_acked(tp, acked), 0)
        }
    }
}

/// Pre-2015 additive increase (`tcp_cong_avoid_ai(tp, w)` of 2.6.30, inline before): one call
/// per ACK, +1 after `w + 1` calls.
#[inline]
pub fn cong_avoid_ai_per_ack(tp: &mut TcpSock, w: u32) {
    if tp.snd_cwnd_cnt >= w {
        if tp.snd_cwnd < tp.snd_cwnd_clamp {
            tp.snd_cwnd += 1;
        }
        tp.snd_cwnd_cnt = 0;
    } else {
        // `tp->snd_cwnd_cnt++` on the field's width: a u16 (to 2.6.23) wraps to 0 when `w`
        // exceeds 65,535 (CUBIC's `cnt = 100 * cwnd` from cwnd 656).
        tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(1) & tp.cwnd_cnt_mask;
    }
}

/// 2015+ `tcp_cong_avoid_ai(tp, w, acked)` (e73ebb0881ea): +1 per `w` packets ACKed.
///
/// u32 arithmetic as the kernel's: `snd_cwnd + 1`, `snd_cwnd + delta` and `snd_cwnd_cnt +
/// acked` wrap at 2^32 before the clamp is applied (only a clamp near 2^32 lets a window get
/// there). `w` 0, a kernel division by zero, is taken as 1 (never reached: CUBIC and BIC
/// floor `cnt` at 1, Reno passes cwnd >= 1).
#[inline(always)]
pub fn cong_avoid_ai_acked(tp: &mut TcpSock, w: u32, acked: u32) {
    let w = w.max(1);
    // If credits accumulated at a higher w, apply them gently now.
    if tp.snd_cwnd_cnt >= w {
        tp.snd_cwnd_cnt = 0;
        tp.snd_cwnd = tp.snd_cwnd.wrapping_add(1);
    }
    tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(acked);
    if tp.snd_cwnd_cnt >= w {
        let delta = tp.snd_cwnd_cnt / w;
        tp.snd_cwnd_cnt -= delta * w;
        tp.snd_cwnd = tp.snd_cwnd.wrapping_add(delta);
    }
    tp.snd_cwnd = tp.snd_cwnd.min(tp.snd_cwnd_clamp);
}

/// `tcp_cong_avoid_ai()` of the era: per ACK before 2015, per packet after.
#[inline(always)]
pub fn cong_avoid_ai(tp: &mut TcpSock, p: &Profile, w: u32, acked: u32) {
    match p.ai_step {
        AiStep::PerAck => cong_avoid_ai_per_ack(tp, w),
        AiStep::Acked => cong_avoid_ai_acked(tp, w, acked),
    }
}

/// `tcp_max_burst()` of the era: the constant 3 to 2.6.25, `tp->reordering` from
/// dd9e0dda66b ("Increase the max_burst threshold from 3 to tp->reordering", 2.6.26, the
/// release whose `tcp_is_cwnd_limited()` is [`CwndLimitedRule::InFlight`]), so the profile's
/// `reordering` counts from the eras after [`CwndLimitedRule::InFlightV1`].
#[inline]
pub fn tcp_max_burst(p: &Profile) -> u32 {
    match p.cwnd_limited {
        CwndLimitedRule::InFlightV1 => 3,
        _ => p.reordering,
    }
}

/// `tcp_is_cwnd_limited()` of the era. `in_flight` is `tcp_ack()`'s `prior_in_flight`
/// (packets in flight before this ACK), read by the rules before 3.16.
#[inline]
pub fn is_cwnd_limited(tp: &TcpSock, p: &Profile, in_flight: u32) -> bool {
    let cwnd = tp.snd_cwnd;
    match p.cwnd_limited {
        CwndLimitedRule::InFlightV1 => {
            if in_flight >= cwnd {
                return true;
            }
            if !p.gso {
                return false;
            }
            let left = cwnd - in_flight;
            if p.tso_win_divisor != 0 {
                left.wrapping_mul(p.tso_win_divisor) < cwnd
            } else {
                left <= tcp_max_burst(p)
            }
        }
        CwndLimitedRule::InFlight => {
            if in_flight >= cwnd {
                return true;
            }
            let left = cwnd - in_flight;
            if p.gso
                && left.wrapping_mul(p.tso_win_divisor) < cwnd
                && left.wrapping_mul(tp.mss) < p.gso_max_size
            {
                return true;
            }
            left <= tcp_max_burst(p)
        }
        CwndLimitedRule::MaxPacketsOut => {
            // 3.16 - 5.18: if in slow start, ensure cwnd grows to twice what was ACKed;
            // otherwise the window's flag.
            if tp.in_slow_start(p.ss_compare) {
                return cwnd < tp.max_packets_out.wrapping_mul(2);
            }
            tp.is_cwnd_limited
        }
        CwndLimitedRule::CwndUsage => {
            // f4ce91ce12a7 ("tcp: fix tcp_cwnd_validate() to not forget is_cwnd_limited",
            // 5.19): a cwnd-limited window counts first, so that slow start keeps growing
            // past twice `max_packets_out` while the window was limited; then the slow-start
            // rule; otherwise not limited.
            if tp.is_cwnd_limited {
                return true;
            }
            tp.in_slow_start(p.ss_compare) && cwnd < tp.max_packets_out.wrapping_mul(2)
        }
    }
}

/// `tcp_reno_cong_avoid()`: the cwnd-limited test, slow start of the era (its leftover goes on
/// from 4.x), then `tcp_cong_avoid_ai(tp, snd_cwnd[, acked])`. Returns the guards taken.
pub fn reno_cong_avoid(tp: &mut TcpSock, p: &Profile, in_flight: u32, acked: u32) -> u32 {
    if !is_cwnd_limited(tp, p, in_flight) {
        return 0;
    }
    let mut acked = acked;
    if tp.in_slow_start(p.ss_compare) {
        let (left, guards) = slow_start(tp, p, p.slow_start == SlowStartKind::Limited, acked);
        if left == 0 {
            return guards;
        }
        acked = left;
    }
    let w = tp.snd_cwnd;
    cong_avoid_ai(tp, p, w, acked);
    0
}

/// `tcp_reno_ssthresh()`: `max(cwnd >> 1, 2)`.
pub fn reno_ssthresh(cwnd: u32) -> u32 {
    (cwnd >> 1).max(2)
}

/// The window after an undo: `tcp_reno_undo_cwnd()` (`max(cwnd, prior_cwnd)`, 4.13+), or,
/// before Reno had an `undo_cwnd` op, `tcp_undo_cwnd_reduction()`'s `max(cwnd, ssthresh << 1)`.
pub fn reno_undo_cwnd(cwnd: u32, ssthresh: u32, prior_cwnd: u32, rule: UndoRule) -> u32 {
    match rule {
        UndoRule::PriorCwnd => cwnd.max(prior_cwnd),
        UndoRule::LastMax | UndoRule::LossCwnd => cwnd.max(ssthresh << 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(cwnd: u32, ssthresh: u32, cnt: u32) -> TcpSock {
        let mut tp = TcpSock::new(cwnd, u32::MAX, 1448);
        tp.snd_ssthresh = ssthresh;
        tp.snd_cwnd_cnt = cnt;
        tp
    }

    #[test]
    fn slow_start_wraps_at_2_32_as_the_kernels_u32() {
        // min(snd_cwnd + acked, ssthresh) with the sum wrapped: 2^32 - 2 + 5 = 3; the
        // leftover 5 - (3 - (2^32 - 2)) wraps back to 0.
        let mut tp = sock(u32::MAX - 1, u32::MAX, 0);
        assert_eq!(slow_start_acked(&mut tp, 5), 0);
        assert_eq!(tp.snd_cwnd, 3);
        // Below the wrap: the ordinary step, leftover past ssthresh.
        let mut tp = sock(100, 104, 0);
        assert_eq!(slow_start_acked(&mut tp, 10), 6);
        assert_eq!(tp.snd_cwnd, 104);
    }

    #[test]
    fn additive_increase_wraps_at_2_32_as_the_kernels_u32() {
        // Credits from a higher w: snd_cwnd + 1 wraps to 0, then 3 packets at w 2: +1.
        let mut tp = sock(u32::MAX, u32::MAX, 5);
        cong_avoid_ai_acked(&mut tp, 2, 3);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (1, 1));
        // snd_cwnd_cnt + acked wraps: (2^32 - 2) + 3 = 1, below w: no step (saturating
        // would have reached w and stepped).
        let mut tp = sock(1000, 10, u32::MAX - 1);
        cong_avoid_ai_acked(&mut tp, u32::MAX, 3);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (1000, 1));
    }
}
