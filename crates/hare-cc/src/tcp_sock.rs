//! The `struct tcp_sock` fields congestion control touches, and the socket bookkeeping of
//! `tcp_input.c` / `tcp_output.c` around them (RTT estimator, pacing rate,
//! `tcp_cwnd_validate`). The shared congestion-control steps are [`crate::tcp_cong`]'s.
//!
//! Units are the kernel's: windows in segments, `snd_cwnd_cnt` the fractional AI counter,
//! `srtt_us` in microseconds << 3. Sequence numbers are QUIC packet numbers: `snd_nxt` is the
//! next packet number to send, `snd_una` is "largest acknowledged + 1" (so the kernel's
//! `after(ack, end_seq)` keeps its meaning: a packet sent after `end_seq` was taken has been
//! acknowledged).

use crate::profile::{CwndLimitedRule, SsCompare};

/// `TCP_INFINITE_SSTHRESH`.
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// `icsk_ca_state` values the model uses (CWR is folded into Recovery: quinn reports no
/// separate ECN state; Disorder is entered only as 2.6.x enters it after an episode, since
/// quinn reports no reordering).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaState {
    /// `TCP_CA_Open`.
    Open,
    /// `TCP_CA_Disorder`, 2.6.x only: for one flight after a Recovery or Loss episode ends
    /// without an undo, `tcp_try_to_open()` holds it (its `undo_marker` is still set) until
    /// something above `high_seq` is acknowledged; every ACK then moderates cwnd.
    Disorder,
    /// `TCP_CA_Recovery` (also used for ECN-CE, the kernel's `TCP_CA_CWR`).
    Recovery,
    /// `TCP_CA_Loss`: after an RTO reset, until the episode's `high_seq` is acknowledged.
    Loss,
}

/// The congestion-control view of `struct tcp_sock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSock {
    pub(crate) snd_cwnd: u32,
    pub(crate) snd_cwnd_cnt: u32,
    pub(crate) snd_ssthresh: u32,
    pub(crate) snd_cwnd_clamp: u32,
    pub(crate) prior_cwnd: u32,
    pub(crate) prior_ssthresh: u32,
    pub(crate) snd_nxt: u64,
    pub(crate) snd_una: u64,
    pub(crate) packets_out: u32,
    pub(crate) max_packets_out: u32,
    pub(crate) cwnd_usage_seq: u64,
    pub(crate) is_cwnd_limited: bool,
    pub(crate) ca_state: CaState,
    pub(crate) high_seq: u64,
    pub(crate) undo_marker: bool,
    pub(crate) srtt_us: u32,
    pub(crate) mss: u32,
    pub(crate) lsndtime: u32,
    pub(crate) pacing: PacingInputs,
    pub(crate) cwnd_cnt_mask: u32,
}

crate::accessors!(TcpSock {
    /// `snd_cwnd` (segments).
    snd_cwnd = snd_cwnd: u32;
    /// `snd_cwnd_cnt`: the linear-increase counter.
    snd_cwnd_cnt = snd_cwnd_cnt: u32;
    /// `snd_ssthresh` (segments; `TCP_INFINITE_SSTHRESH` = unset).
    snd_ssthresh = snd_ssthresh: u32;
    /// `snd_cwnd_clamp`.
    snd_cwnd_clamp = snd_cwnd_clamp: u32;
    /// `prior_cwnd` (cwnd before the last reduction; modern undo).
    prior_cwnd = prior_cwnd: u32;
    /// `prior_ssthresh` (`tcp_current_ssthresh()` before the last reduction).
    prior_ssthresh = prior_ssthresh: u32;
    /// `snd_nxt`: next packet number to be sent.
    snd_nxt = snd_nxt: u64;
    /// `snd_una`: largest acknowledged packet number + 1.
    snd_una = snd_una: u64;
    /// `packets_out` (packets in flight).
    packets_out = packets_out: u32;
    /// `max_packets_out` of the current window (3.16+).
    max_packets_out = max_packets_out: u32;
    /// `max_packets_seq` / `cwnd_usage_seq`: `snd_nxt` when `max_packets_out` was taken.
    cwnd_usage_seq = cwnd_usage_seq: u64;
    /// `is_cwnd_limited` of the current window (3.16+).
    is_cwnd_limited = is_cwnd_limited: bool;
    /// `icsk_ca_state`.
    ca_state = ca_state: CaState;
    /// `high_seq` of a Disorder hold: `snd_nxt` when it began (the model's Recovery and Loss
    /// episodes end when the adapter says their `high_seq` was acknowledged).
    high_seq = high_seq: u64;
    /// `undo_marker != 0`: the last Recovery or Loss entry could still be undone (set on
    /// entering them, cleared by `tcp_enter_cwr()` and when a Disorder hold ends).
    undo_marker = undo_marker: bool;
    /// `srtt_us` (us << 3), 0 before the first sample.
    srtt_us = srtt_us: u32;
    /// `mss_cache` (bytes).
    mss = mss: u32;
    /// `lsndtime`: jiffies of the last data sent.
    lsndtime = lsndtime: u32;
});

/// The socket fields that the rest of an ACK after `pkts_acked` (the growth step, the state
/// exit of `tcp_fastretrans_alert()`, `tcp_update_pacing_rate()`) can write when the ACK
/// reveals no loss: saved before it so that a loss quinn reports after the frame can rewind
/// it (`driver.rs`). Only these, not the whole socket: the whole copy's wide loads overlapped
/// fields this ACK and the last send had just written, which a store cannot forward to.
///
/// Not the pacing inputs: that rest ends in `tcp_update_pacing_rate()`, which rewrites them
/// whole, and nothing in it reads them before (HyStart's ACK-train cushion reads the rate in
/// `pkts_acked`, before the save, and in 2.6.20 - 2.6.22's `measure_delay()` only on an ACK
/// that reveals no loss, which an amended ACK never is). The window counters (`snd_cwnd`,
/// `snd_cwnd_cnt`) are saved on every ACK; the other fields only when the ACK can reach the
/// code that writes them ([`TcpSock::save_growth`]). Debug builds also keep the whole socket
/// and check every rewind and every amended ACK against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SockGrowth {
    snd_cwnd: u32,
    snd_cwnd_cnt: u32,
    snd_ssthresh: u32,
    ca_state: CaState,
    undo_marker: bool,
    high_seq: u64,
}

impl TcpSock {
    /// Save into `g` what the rest of an ACK can write (see [`SockGrowth`]): the window
    /// counters, and with `whole` also ssthresh and the CA state's fields. Without `whole`
    /// the caller has made sure the ACK cannot write those: in `TCP_CA_Open`, out of slow
    /// start, ending no episode, the growth step writes only the counters and the state
    /// exit has nothing to do.
    #[inline(always)]
    pub(crate) fn save_growth(&self, g: &mut SockGrowth, whole: bool) {
        (g.snd_cwnd, g.snd_cwnd_cnt) = (self.snd_cwnd, self.snd_cwnd_cnt);
        if whole {
            g.snd_ssthresh = self.snd_ssthresh;
            (g.ca_state, g.undo_marker, g.high_seq) =
                (self.ca_state, self.undo_marker, self.high_seq);
        }
    }

    /// Put back what [`TcpSock::save_growth`] saved with the same `whole`.
    pub(crate) fn restore_growth(&mut self, g: &SockGrowth, whole: bool) {
        (self.snd_cwnd, self.snd_cwnd_cnt) = (g.snd_cwnd, g.snd_cwnd_cnt);
        if whole {
            self.snd_ssthresh = g.snd_ssthresh;
            (self.ca_state, self.undo_marker, self.high_seq) =
                (g.ca_state, g.undo_marker, g.high_seq);
        }
    }

    /// An empty [`SockGrowth`] (the fields of this socket: any values serve).
    pub(crate) fn empty_growth(&self) -> SockGrowth {
        let mut g = SockGrowth {
            snd_cwnd: 0,
            snd_cwnd_cnt: 0,
            snd_ssthresh: 0,
            ca_state: CaState::Open,
            undo_marker: false,
            high_seq: 0,
        };
        self.save_growth(&mut g, true);
        g
    }

    /// A fresh socket with `cwnd` segments, infinite ssthresh and the given clamp, with a
    /// 32-bit `snd_cwnd_cnt` (see [`TcpSock::with_cwnd_cnt_bits`]).
    pub(crate) fn new(cwnd: u32, clamp: u32, mss: u32) -> Self {
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
            high_seq: 0,
            undo_marker: false,
            srtt_us: 0,
            mss,
            lsndtime: 0,
            pacing: PacingInputs::default(),
            cwnd_cnt_mask: u32::MAX,
        }
    }

    /// The same socket with a `snd_cwnd_cnt` of `bits` bits (16 up to 2.6.23, else 32).
    pub(crate) fn with_cwnd_cnt_bits(mut self, bits: u32) -> Self {
        self.cwnd_cnt_mask = if bits == 16 { 0xffff } else { u32::MAX };
        self
    }

    /// The slow-start test of the era: `cwnd <= ssthresh` (to 4.2) or `cwnd < ssthresh`.
    #[inline]
    pub fn in_slow_start(&self, cmp: SsCompare) -> bool {
        // `cwnd <= ssthresh` is `cwnd < ssthresh + 1`, in u64 so that no ssthresh overflows:
        // one comparison for both eras, no branch on the era on every ACK.
        let le = u64::from(cmp == SsCompare::Le);
        u64::from(self.snd_cwnd) < u64::from(self.snd_ssthresh) + le
    }

    /// `tcp_current_ssthresh()`: in Recovery/CWR the ssthresh, else
    /// `max(ssthresh, 3/4 cwnd)`.
    #[inline]
    pub fn current_ssthresh(&self) -> u32 {
        if self.ca_state == CaState::Recovery {
            self.snd_ssthresh
        } else {
            self.snd_ssthresh
                .max((self.snd_cwnd >> 1) + (self.snd_cwnd >> 2))
        }
    }

    /// `tcp_cwnd_validate()` bookkeeping after a send: `now_limited` is
    /// `packets_in_flight >= cwnd` after the send.
    #[inline]
    pub(crate) fn cwnd_validate(&mut self, rule: CwndLimitedRule, now_limited: bool) {
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
    #[inline]
    pub(crate) fn rtt_estimator(&mut self, rtt_us: u64) {
        let m = rtt_us.min(u64::from(u32::MAX >> 4)) as i64;
        let srtt = i64::from(self.srtt_us);
        let next = if srtt != 0 {
            srtt + (m - (srtt >> 3))
        } else {
            m << 3
        };
        self.srtt_us = next.clamp(1, i64::from(u32::MAX)) as u32;
    }

    /// `tcp_update_pacing_rate()` (run at the end of every ACK): records its inputs; the
    /// rate is [`TcpSock::pacing_rate`].
    #[inline]
    pub(crate) fn update_pacing_rate(&mut self, ss_ratio: u32, ca_ratio: u32) {
        let ratio = if self.snd_cwnd < self.snd_ssthresh / 2 {
            ss_ratio
        } else {
            ca_ratio
        };
        self.pacing = PacingInputs {
            mss: self.mss,
            segs: self.snd_cwnd.max(self.packets_out),
            srtt_us: self.srtt_us,
            ratio,
            given: 0,
        };
    }

    /// The rate the last `tcp_update_pacing_rate()` computed, in bytes per second: `mss *
    /// max(cwnd, packets_out) / srtt` times 200% in slow start (`cwnd < ssthresh / 2`) or
    /// 120% otherwise; 0 before the first ACK. `sk_pacing_rate` is this capped by
    /// `sk_max_pacing_rate` ([`TcpSock::sk_pacing_rate`]).
    pub fn pacing_rate(&self) -> u64 {
        self.pacing.rate()
    }

    /// `sk_pacing_rate`: `min(rate, sk_max_pacing_rate)`, as `tcp_update_pacing_rate()`
    /// stores it, with the profile's `max_pacing_rate` as `sk_max_pacing_rate`.
    #[inline]
    pub fn sk_pacing_rate(&self, max_pacing_rate: u64) -> u64 {
        self.pacing.rate().min(max_pacing_rate)
    }
}

/// The inputs of one `tcp_update_pacing_rate()` call (see [`TcpSock::pacing_rate`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PacingInputs {
    /// `mss_cache` at the time.
    pub(crate) mss: u32,
    /// `max(snd_cwnd, packets_out)`.
    pub(crate) segs: u32,
    /// `srtt_us` (us << 3); 0 means no update yet.
    pub(crate) srtt_us: u32,
    /// The ratio in percent (`pacing_ss_ratio` or `pacing_ca_ratio`).
    pub(crate) ratio: u32,
    /// A rate given as it is (bytes per second, [`PacingInputs::given`]), read while no
    /// `tcp_update_pacing_rate()` has run since (`srtt_us` and `segs` 0).
    pub(crate) given: u64,
}

impl PacingInputs {
    /// A captured `sk_pacing_rate` of `rate` bytes per second, until the next update.
    pub(crate) fn given(rate: u64) -> Self {
        PacingInputs {
            given: rate,
            ..PacingInputs::default()
        }
    }

    /// `rate = mss * (USEC_PER_SEC / 100) << 3 * ratio * segs / srtt_us`, 0 before any update.
    fn rate(&self) -> u64 {
        const SCALE: u64 = (1_000_000 / 100) << 3;
        if self.srtt_us == 0 && self.segs == 0 {
            return self.given;
        }
        let srtt = u64::from(self.srtt_us.max(1));
        // u64 when it fits; u128 only for products beyond 2^64 (huge windows).
        let fast = u64::from(self.mss)
            .checked_mul(SCALE)
            .and_then(|r| r.checked_mul(u64::from(self.ratio)))
            .and_then(|r| r.checked_mul(u64::from(self.segs)));
        match fast {
            Some(r) => r / srtt,
            None => {
                let r = u128::from(self.mss)
                    * u128::from(SCALE)
                    * u128::from(self.ratio)
                    * u128::from(self.segs)
                    / u128::from(srtt);
                r.min(u128::from(u64::MAX)) as u64
            }
        }
    }
}
