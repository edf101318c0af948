//! Setters and getters of the hook-by-hook API for tools that replay a captured kernel flow
//! (`hare-kernel-check`): the socket fields CUBIC's HyStart and the cwnd-limited test read
//! (`snd_una`, `snd_nxt`, `is_cwnd_limited`, `max_packets_out`, `sk_pacing_rate`), the clock,
//! and CUBIC's `struct bictcp` in the kernel's own field names, so that a caller needs no
//! model type's layout.

use crate::clock::KernelClock;
use crate::engine::{CcModule, KernelCc};
use crate::start_error::StartError;
use crate::tcp_sock::PacingInputs;

/// CUBIC's `struct bictcp` as 5.x / 6.x `tcp_cubic.c` has it (HyStart's fields included),
/// with HyStart's `end_seq` in the model's sequence space and times in the profile's clocks
/// (`last_time`, `epoch_start` in jiffies; `round_start`, `last_ack` on the HyStart clock;
/// `delay_min`, `curr_rtt` in its unit, `u32::MAX` = no `curr_rtt` yet).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BictcpState {
    /// `cnt`.
    pub cnt: u32,
    /// `last_max_cwnd`.
    pub last_max_cwnd: u32,
    /// `last_cwnd`.
    pub last_cwnd: u32,
    /// `last_time`.
    pub last_time: u32,
    /// `bic_origin_point`.
    pub bic_origin_point: u32,
    /// `bic_K`.
    pub bic_k: u32,
    /// `delay_min`.
    pub delay_min: u32,
    /// `epoch_start`.
    pub epoch_start: u32,
    /// `ack_cnt`.
    pub ack_cnt: u32,
    /// `tcp_cwnd`.
    pub tcp_cwnd: u32,
    /// `sample_cnt`.
    pub sample_cnt: u32,
    /// `found`.
    pub found: u32,
    /// `round_start`.
    pub round_start: u32,
    /// `end_seq`.
    pub end_seq: u64,
    /// `last_ack`.
    pub last_ack: u32,
    /// `curr_rtt`.
    pub curr_rtt: u32,
}

impl KernelCc {
    /// CUBIC's `struct bictcp` now; `None` for BIC and Reno.
    pub fn bictcp_state(&self) -> Option<BictcpState> {
        let CcModule::Cubic(c) = &self.module else {
            return None;
        };
        let h = &c.ss.hystart;
        Some(BictcpState {
            cnt: c.cnt,
            last_max_cwnd: c.last_max_cwnd,
            last_cwnd: c.last_cwnd,
            last_time: c.last_time,
            bic_origin_point: c.bic_origin_point,
            bic_k: c.bic_k,
            delay_min: c.ss.delay_min,
            epoch_start: c.epoch_start,
            ack_cnt: c.ack_cnt,
            tcp_cwnd: c.tcp_cwnd,
            sample_cnt: h.sample_cnt,
            found: h.found,
            round_start: h.round_start,
            end_seq: h.end_seq,
            last_ack: h.last_ack,
            curr_rtt: h.curr_rtt,
        })
    }

    /// Set CUBIC's `struct bictcp` (the other module fields, such as the constants computed
    /// at module init and `loss_cwnd`, keep their values).
    pub fn set_bictcp_state(&mut self, s: &BictcpState) -> Result<(), StartError> {
        let CcModule::Cubic(c) = &mut self.module else {
            return Err(StartError::AlgorithmMismatch { expected: "cubic" });
        };
        (c.cnt, c.last_max_cwnd, c.last_cwnd, c.last_time) =
            (s.cnt, s.last_max_cwnd, s.last_cwnd, s.last_time);
        (c.bic_origin_point, c.bic_k, c.epoch_start) = (s.bic_origin_point, s.bic_k, s.epoch_start);
        (c.ack_cnt, c.tcp_cwnd, c.ss.delay_min) = (s.ack_cnt, s.tcp_cwnd, s.delay_min);
        let h = &mut c.ss.hystart;
        (h.sample_cnt, h.found, h.round_start) = (s.sample_cnt, s.found, s.round_start);
        (h.end_seq, h.last_ack, h.curr_rtt) = (s.end_seq, s.last_ack, s.curr_rtt);
        Ok(())
    }

    /// Set `snd_una` and `snd_nxt` (HyStart's rounds compare them with `end_seq`; the
    /// cwnd-usage window with `snd_una`), in any monotonic sequence space wide enough not to
    /// wrap (a replay of TCP unwraps the kernel's 32-bit byte sequence).
    pub fn set_sequence(&mut self, snd_una: u64, snd_nxt: u64) {
        self.tp.snd_una = snd_una;
        self.tp.snd_nxt = snd_nxt;
    }

    /// Set `tp->is_cwnd_limited` and `tp->max_packets_out`, what the 3.16+ cwnd-limited test
    /// (`tcp_is_cwnd_limited()`) reads; the kernel sets them when it sends
    /// (`tcp_cwnd_validate()`).
    pub fn set_cwnd_limited(&mut self, is_cwnd_limited: bool, max_packets_out: u32) {
        self.tp.is_cwnd_limited = is_cwnd_limited;
        self.tp.max_packets_out = max_packets_out;
    }

    /// Set `sk_pacing_rate` (bytes per second), which 5.6+ HyStart's ACK-train cushion reads
    /// (`hystart_ack_delay()`), as it is until the next `tcp_update_pacing_rate()` of
    /// [`KernelCc::on_ack`].
    pub fn set_pacing_rate(&mut self, bytes_per_sec: u64) {
        self.tp.pacing = PacingInputs::given(bytes_per_sec);
    }

    /// Put the model on `clock` from now on (see [`KernelClock::aligned`]).
    pub fn set_clock(&mut self, clock: KernelClock) {
        self.replace_clock(clock);
    }

    /// `snd_cwnd_cnt`.
    pub fn snd_cwnd_cnt(&self) -> u32 {
        self.tp.snd_cwnd_cnt
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::{Algorithm, Profile};

    fn cubic() -> KernelCc {
        let p = Profile::named("linux-6").expect("built in");
        KernelCc::new(Algorithm::Cubic, &p, false, 1448)
    }

    #[test]
    fn an_aligned_clock_reads_the_kernels_jiffies_and_microseconds() {
        let c = KernelClock::aligned(250, 1_234_567, 4_000_000_000);
        assert_eq!(c.jiffies(1_234_567), 4_000_000_000);
        // 308.6 ticks at 1,234,567 us: the next tick comes at 1,236,000 us.
        assert_eq!(c.jiffies(1_235_999), 4_000_000_000);
        assert_eq!(c.jiffies(1_236_000), 4_000_000_001);
        assert_eq!(c.us_clock(1_234_567), 1_234_567);
    }

    #[test]
    fn the_pacing_rate_set_is_the_rate_read() {
        let mut cc = cubic();
        cc.set_pacing_rate(12_345_678);
        assert_eq!(cc.pacing_rate(), 12_345_678);
        cc.set_pacing_rate(10_000_000_000);
        assert_eq!(cc.pacing_rate(), 10_000_000_000);
    }

    #[test]
    fn bictcp_state_reads_back_as_set() {
        let mut cc = cubic();
        let s = BictcpState {
            cnt: 3,
            last_max_cwnd: 700,
            last_cwnd: 600,
            last_time: 77,
            bic_origin_point: 700,
            bic_k: 1500,
            delay_min: 60_000,
            epoch_start: 70,
            ack_cnt: 5,
            tcp_cwnd: 590,
            sample_cnt: 8,
            found: 1,
            round_start: 123,
            end_seq: 1 << 33,
            last_ack: 456,
            curr_rtt: 61_000,
        };
        cc.set_bictcp_state(&s).expect("cubic");
        assert_eq!(cc.bictcp_state(), Some(s));
        let p = Profile::named("linux-6").expect("built in");
        let mut reno = KernelCc::new(Algorithm::Reno, &p, false, 1448);
        assert!(reno.set_bictcp_state(&s).is_err());
        assert_eq!(reno.bictcp_state(), None);
    }
}
