//! The `struct tcp_sock` fields congestion control touches, and the generic helpers of
//! `tcp_cong.c` / `tcp.h` / `tcp_output.c` that act on them, per era.
//!
//! Units are the kernel's: windows in segments, `snd_cwnd_cnt` the fractional AI counter,
//! `srtt_us` in microseconds << 3. Sequence numbers are QUIC packet numbers: `snd_nxt` is the
//! next packet number to send, `snd_una` is "largest acknowledged + 1" (so the kernel's
//! `after(ack, end_seq)` keeps its meaning: a packet sent after `end_seq` was taken has been
//! acknowledged).

use crate::profile::{CwndLimitedRule, SsCompare};

/// `TCP_INFINITE_SSTHRESH`.
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// `icsk_ca_state` values the model uses (Disorder and CWR are folded into Open and Recovery:
/// quinn reports neither reordering nor a separate ECN state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaState {
    /// `TCP_CA_Open`.
    Open,
    /// `TCP_CA_Recovery` (also used for ECN-CE, the kernel's `TCP_CA_CWR`).
    Recovery,
    /// `TCP_CA_Loss` (transient: the model returns to Open right after the RTO reset).
    Loss,
}

/// The congestion-control view of `struct tcp_sock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSock {
    /// `snd_cwnd` (segments).
    pub snd_cwnd: u32,
    /// `snd_cwnd_cnt`: the linear-increase counter.
    pub snd_cwnd_cnt: u32,
    /// `snd_ssthresh` (segments; `TCP_INFINITE_SSTHRESH` = unset).
    pub snd_ssthresh: u32,
    /// `snd_cwnd_clamp`.
    pub snd_cwnd_clamp: u32,
    /// `prior_cwnd` (cwnd before the last reduction; modern undo).
    pub prior_cwnd: u32,
    /// `prior_ssthresh` (`tcp_current_ssthresh()` before the last reduction).
    pub prior_ssthresh: u32,
    /// `snd_nxt`: next packet number to be sent.
    pub snd_nxt: u64,
    /// `snd_una`: largest acknowledged packet number + 1.
    pub snd_una: u64,
    /// `packets_out` (packets in flight).
    pub packets_out: u32,
    /// `max_packets_out` of the current window (3.16+).
    pub max_packets_out: u32,
    /// `max_packets_seq` / `cwnd_usage_seq`: `snd_nxt` when `max_packets_out` was taken.
    pub cwnd_usage_seq: u64,
    /// `is_cwnd_limited` of the current window (3.16+).
    pub is_cwnd_limited: bool,
    /// `icsk_ca_state`.
    pub ca_state: CaState,
    /// `srtt_us` (us << 3), 0 before the first sample.
    pub srtt_us: u32,
    /// `mss_cache` (bytes).
    pub mss: u32,
    /// `lsndtime`: jiffies of the last data sent.
    pub lsndtime: u32,
    /// `sk_pacing_rate` estimate (bytes per second), 0 before the first RTT sample.
    pub pacing_rate: u64,
    /// Mask of the `snd_cwnd_cnt` field's width: `0xffff` while it was a `u16` (to 2.6.23),
    /// `u32::MAX` from f78a1b38928 (2.6.24).
    pub cwnd_cnt_mask: u32,
}

impl TcpSock {
    /// A fresh socket with `cwnd` segments, infinite ssthresh and the given clamp, with a
    /// 32-bit `snd_cwnd_cnt` (see [`TcpSock::with_cwnd_cnt_bits`]).
    pub fn new(cwnd: u32, clamp: u32, mss: u32) -> Self {
        TcpSock {
            snd_cwnd: cwnd.min(clamp),
            snd_cwnd_cnt: 0,
            snd_ssthresh: TCP_INFINITE_SSTHRESH,
            snd_cwnd_clamp: clamp,
            prior_cwnd: 0,
            prior_ssthresh: 0,
            snd_nxt: 0,
            snd_una: 0,
            packets_out: 0,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            is_cwnd_limited: false,
            ca_state: CaState::Open,
            srtt_us: 0,
            mss,
            lsndtime: 0,
            pacing_rate: 0,
            cwnd_cnt_mask: u32::MAX,
        }
    }

    /// The same socket with a `snd_cwnd_cnt` of `bits` bits (16 up to 2.6.23, else 32).
    pub fn with_cwnd_cnt_bits(mut self, bits: u32) -> Self {
        self.cwnd_cnt_mask = if bits == 16 { 0xffff } else { u32::MAX };
        self
    }

    /// The slow-start test of the era: `cwnd <= ssthresh` (to 4.2) or `cwnd < ssthresh`.
    pub fn in_slow_start(&self, cmp: SsCompare) -> bool {
        match cmp {
            SsCompare::Le => self.snd_cwnd <= self.snd_ssthresh,
            SsCompare::Lt => self.snd_cwnd < self.snd_ssthresh,
        }
    }

    /// `tcp_current_ssthresh()`: in Recovery/CWR the ssthresh, else
    /// `max(ssthresh, 3/4 cwnd)`.
    pub fn current_ssthresh(&self) -> u32 {
        if self.ca_state == CaState::Recovery {
            self.snd_ssthresh
        } else {
            self.snd_ssthresh
                .max((self.snd_cwnd >> 1) + (self.snd_cwnd >> 2))
        }
    }

    /// 2.6.20 `tcp_slow_start()` with ABC off: +1 per ACK, up to the clamp.
    pub fn slow_start_per_ack(&mut self) {
        if self.snd_cwnd < self.snd_cwnd_clamp {
            self.snd_cwnd += 1;
        }
    }

    /// 2.6.22 - 3.12 `tcp_slow_start()` (886236c1247a): credit `cwnd` (or `max_ssthresh / 2`
    /// above `max_ssthresh`, RFC 3742) to `snd_cwnd_cnt`, then +1 per `cwnd` of credit.
    /// `times` repeats the per-ACK step (1 in the kernel; hare's limited slow start on
    /// packet-counting eras passes the packets ACKed).
    pub fn slow_start_per_ack_cnt(&mut self, max_ssthresh: u32, times: u32) -> u32 {
        let mut guards = 0;
        for _ in 0..times.min(MAX_SS_STEPS) {
            let cnt = if max_ssthresh > 0 && self.snd_cwnd > max_ssthresh {
                max_ssthresh >> 1
            } else {
                self.snd_cwnd
            };
            // `tp->snd_cwnd_cnt += cnt`: a u16 to 2.6.23 keeps only the low 16 bits, so from
            // cwnd 32,768 the credit wraps (f78a1b38928 made it 32-bit in 2.6.24).
            self.snd_cwnd_cnt = self.snd_cwnd_cnt.wrapping_add(cnt) & self.cwnd_cnt_mask;
            guards += self.drain_credit();
        }
        guards
    }

    /// `while (snd_cwnd_cnt >= snd_cwnd) { snd_cwnd_cnt -= snd_cwnd; cwnd++ (to the clamp) }`.
    /// Returns 1 when the loop had to be cut short (a guard; see [`MAX_CREDIT_STEPS`]).
    fn drain_credit(&mut self) -> u32 {
        for _ in 0..MAX_CREDIT_STEPS {
            if self.snd_cwnd == 0 || self.snd_cwnd_cnt < self.snd_cwnd {
                return 0;
            }
            self.snd_cwnd_cnt -= self.snd_cwnd;
            if self.snd_cwnd < self.snd_cwnd_clamp {
                self.snd_cwnd += 1;
            }
        }
        // Only reachable with a credit of more than ~2^20 windows; settle it at the current
        // window (the kernel would loop on).
        if self.snd_cwnd > 0 {
            self.snd_cwnd_cnt %= self.snd_cwnd;
        }
        1
    }

    /// 4.x+ `tcp_slow_start(tp, acked)`: `cwnd = min(cwnd + acked, ssthresh)`, returning the
    /// ACKed packets left over for congestion avoidance.
    pub fn slow_start_acked(&mut self, acked: u32) -> u32 {
        let cwnd = self.snd_cwnd.saturating_add(acked).min(self.snd_ssthresh);
        let used = cwnd.saturating_sub(self.snd_cwnd);
        let left = acked - used.min(acked);
        self.snd_cwnd = cwnd.min(self.snd_cwnd_clamp);
        left
    }

    /// Pre-2015 additive increase (`tcp_cong_avoid_ai(tp, w)` of 2.6.30, inline before):
    /// one call per ACK, +1 after `w + 1` calls.
    pub fn cong_avoid_ai_per_ack(&mut self, w: u32) {
        if self.snd_cwnd_cnt >= w {
            if self.snd_cwnd < self.snd_cwnd_clamp {
                self.snd_cwnd += 1;
            }
            self.snd_cwnd_cnt = 0;
        } else {
            // `tp->snd_cwnd_cnt++` on the field's width: a u16 (to 2.6.23) wraps to 0 when
            // `w` exceeds 65,535 (CUBIC's `cnt = 100 * cwnd` from cwnd 656).
            self.snd_cwnd_cnt = self.snd_cwnd_cnt.wrapping_add(1) & self.cwnd_cnt_mask;
        }
    }

    /// 2015+ `tcp_cong_avoid_ai(tp, w, acked)`: +1 per `w` packets ACKed.
    pub fn cong_avoid_ai_acked(&mut self, w: u32, acked: u32) {
        // w >= 1 always here (cnt is floored at 1 or 2, Reno passes cwnd >= 1); guard anyway.
        let w = w.max(1);
        // If credits accumulated at a higher w, apply them gently now.
        if self.snd_cwnd_cnt >= w {
            self.snd_cwnd_cnt = 0;
            self.snd_cwnd = self.snd_cwnd.saturating_add(1);
        }
        self.snd_cwnd_cnt = self.snd_cwnd_cnt.saturating_add(acked);
        if self.snd_cwnd_cnt >= w {
            let delta = self.snd_cwnd_cnt / w;
            self.snd_cwnd_cnt -= delta * w;
            self.snd_cwnd = self.snd_cwnd.saturating_add(delta);
        }
        self.snd_cwnd = self.snd_cwnd.min(self.snd_cwnd_clamp);
    }

    /// The cwnd-limited test that gates `cong_avoid`, per era. `in_flight` is the
    /// `prior_in_flight` of `tcp_ack()` (packets in flight before this ACK) for the old rules.
    pub fn is_cwnd_limited(&self, rule: CwndLimitedRule, ctx: &CwndLimitedCtx) -> bool {
        let cwnd = self.snd_cwnd;
        match rule {
            CwndLimitedRule::InFlightV1 => {
                if ctx.in_flight >= cwnd {
                    return true;
                }
                if !ctx.gso {
                    return false;
                }
                let left = cwnd - ctx.in_flight;
                if ctx.tso_win_divisor != 0 {
                    left.wrapping_mul(ctx.tso_win_divisor) < cwnd
                } else {
                    left <= ctx.reordering
                }
            }
            CwndLimitedRule::InFlight => {
                if ctx.in_flight >= cwnd {
                    return true;
                }
                let left = cwnd - ctx.in_flight;
                if ctx.gso
                    && left.wrapping_mul(ctx.tso_win_divisor) < cwnd
                    && left.wrapping_mul(self.mss) < ctx.gso_max_size
                {
                    return true;
                }
                left <= ctx.reordering
            }
            CwndLimitedRule::MaxPacketsOut | CwndLimitedRule::CwndUsage => {
                // If in slow start, ensure cwnd grows to twice what was ACKed.
                if self.in_slow_start(ctx.ss_compare) {
                    return cwnd < self.max_packets_out.wrapping_mul(2);
                }
                self.is_cwnd_limited
            }
        }
    }

    /// `tcp_cwnd_validate()` bookkeeping after a send: `now_limited` is
    /// `packets_in_flight >= cwnd` after the send.
    pub fn cwnd_validate(&mut self, rule: CwndLimitedRule, now_limited: bool) {
        let window_done = self.snd_una >= self.cwnd_usage_seq;
        let update = match rule {
            CwndLimitedRule::InFlightV1 | CwndLimitedRule::InFlight => false,
            CwndLimitedRule::MaxPacketsOut => {
                window_done || self.packets_out > self.max_packets_out
            }
            CwndLimitedRule::CwndUsage => {
                window_done
                    || now_limited
                    || (!self.is_cwnd_limited && self.packets_out > self.max_packets_out)
            }
        };
        if update {
            self.max_packets_out = self.packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
            self.is_cwnd_limited = now_limited;
        }
    }

    /// `tcp_rtt_estimator()`'s smoothed RTT (`srtt = 7/8 srtt + 1/8 m`, in us << 3).
    pub fn rtt_estimator(&mut self, rtt_us: u64) {
        let m = rtt_us.min(u64::from(u32::MAX >> 4)) as i64;
        let srtt = i64::from(self.srtt_us);
        let next = if srtt != 0 {
            srtt + (m - (srtt >> 3))
        } else {
            m << 3
        };
        self.srtt_us = next.clamp(1, i64::from(u32::MAX)) as u32;
    }

    /// `tcp_update_pacing_rate()`: `mss * max(cwnd, packets_out) / srtt` times 200% in slow
    /// start (`cwnd < ssthresh / 2`) or 120% otherwise, in bytes per second.
    pub fn update_pacing_rate(&mut self, ss_ratio: u32, ca_ratio: u32) {
        // rate = mss * (USEC_PER_SEC / 100) << 3 * ratio% * max(cwnd, packets_out) / srtt_us
        const SCALE: u64 = (1_000_000 / 100) << 3;
        let ratio = if self.snd_cwnd < self.snd_ssthresh / 2 {
            ss_ratio
        } else {
            ca_ratio
        };
        let segs = self.snd_cwnd.max(self.packets_out);
        let srtt = u64::from(self.srtt_us.max(1));
        // u64 on the per-ACK path; u128 only for products beyond 2^64 (huge windows).
        let fast = u64::from(self.mss)
            .checked_mul(SCALE)
            .and_then(|r| r.checked_mul(u64::from(ratio)))
            .and_then(|r| r.checked_mul(u64::from(segs)));
        self.pacing_rate = match fast {
            Some(r) => r / srtt,
            None => {
                let r =
                    u128::from(self.mss) * u128::from(SCALE) * u128::from(ratio) * u128::from(segs)
                        / u128::from(srtt);
                r.min(u128::from(u64::MAX)) as u64
            }
        };
    }
}

/// Bound on the per-ACK repetitions of the RFC 3742 step in packet-counting eras.
const MAX_SS_STEPS: u32 = 1 << 16;

/// Bound on the credit-draining loop of `tcp_slow_start()` (see `drain_credit`).
pub const MAX_CREDIT_STEPS: u32 = 1 << 20;

/// Inputs of [`TcpSock::is_cwnd_limited`] that are not socket fields.
#[derive(Debug, Clone, Copy)]
pub struct CwndLimitedCtx {
    /// `prior_in_flight` of this ACK.
    pub in_flight: u32,
    /// `sk_can_gso()`.
    pub gso: bool,
    /// `sysctl_tcp_tso_win_divisor`.
    pub tso_win_divisor: u32,
    /// `tcp_max_burst()` = `tp->reordering`.
    pub reordering: u32,
    /// `sk_gso_max_size`.
    pub gso_max_size: u32,
    /// The era's slow-start test.
    pub ss_compare: SsCompare,
}
