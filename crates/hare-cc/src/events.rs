//! What the controller decided, for tracing, observers and reports.
//!
//! These types are the contract between the kernel model ([`crate::engine`]), the quinn
//! adapter, the simulator and the report writers: keep them plain data.

use std::fmt;

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

/// `tracing` target of every event the model emits.
pub const TRACE_TARGET: &str = "hare_cc";

/// Why slow start ended.
///
/// Non-exhaustive: a later kernel era (or a new slow-start strategy) can add a reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum ExitReason {
    /// Kernel HyStart's ACK-train test fired (`HYSTART_ACK_TRAIN`).
    AckTrain,
    /// Kernel HyStart's delay-increase test fired (`HYSTART_DELAY`), or HyStart++'s RTT
    /// increase test entered Conservative Slow Start (RFC 9406 section 4.2).
    Delay,
    /// A loss (or ECN-CE) ended slow start.
    Loss,
    /// cwnd reached a preset ssthresh (the `initial_ssthresh` clamp, a route metric).
    SsthreshReached,
    /// HyStart++ finished its CSS rounds and entered congestion avoidance (RFC 9406 4.3).
    CssDone,
    /// A retransmission timeout / persistent congestion reset the window.
    Rto,
}

impl ExitReason {
    /// Stable kebab-case name used in reports and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ExitReason::AckTrain => "ack-train",
            ExitReason::Delay => "delay",
            ExitReason::Loss => "loss",
            ExitReason::SsthreshReached => "ssthresh-reached",
            ExitReason::CssDone => "css-done",
            ExitReason::Rto => "rto",
        }
    }
}

impl fmt::Display for ExitReason {
    /// The kebab-case name of [`ExitReason::as_str`] (`ack-train`, `delay`, ...).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which part of its state machine the controller is in.
///
/// Non-exhaustive: the kernel's `ca_state` has more states (`CWR`, `Loss`) than the model
/// reports today.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum Phase {
    /// cwnd below ssthresh, growing by slow start.
    SlowStart,
    /// HyStart++ Conservative Slow Start (RFC 9406 section 4.2).
    ConservativeSlowStart,
    /// Congestion avoidance (window growth function of the algorithm).
    CongestionAvoidance,
    /// In a loss-recovery episode (kernel `TCP_CA_Recovery`): no growth until it ends.
    Recovery,
}

impl Phase {
    /// Stable kebab-case name used in reports and logs (`slow-start`,
    /// `conservative-slow-start`, `congestion-avoidance`, `recovery`).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::SlowStart => "slow-start",
            Phase::ConservativeSlowStart => "conservative-slow-start",
            Phase::CongestionAvoidance => "congestion-avoidance",
            Phase::Recovery => "recovery",
        }
    }
}

impl fmt::Display for Phase {
    /// The kebab-case name of [`Phase::as_str`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One decision of the controller, in kernel units (segments, microseconds since the
/// controller was built; see [`crate::ControllerView::origin`] for that instant).
///
/// Non-exhaustive: new kinds of decision (an undo, a CWR episode) can be added. The variants'
/// fields are plain data and can be matched with `..`.
///
/// `Display` prints one line for people:
///
/// ```
/// use hare_cc::{CcEvent, ExitReason};
///
/// let exit = CcEvent::SlowStartExit {
///     t_us: 1_250_000,
///     cwnd: 120,
///     ssthresh: 120,
///     reason: ExitReason::AckTrain,
/// };
/// assert_eq!(exit.to_string(), "1.250000 s: slow start exit (ack-train), cwnd 120 ssthresh 120");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "event", rename_all = "kebab-case"))]
#[non_exhaustive]
pub enum CcEvent {
    /// Slow start ended (ssthresh was set or reached).
    SlowStartExit {
        /// Microseconds since the controller was built.
        t_us: u64,
        /// cwnd in segments when slow start ended.
        cwnd: u32,
        /// ssthresh in segments after the decision.
        ssthresh: u32,
        /// Why.
        reason: ExitReason,
    },
    /// HyStart++ entered Conservative Slow Start.
    CssEntered {
        /// Microseconds since the controller was built.
        t_us: u64,
        /// cwnd in segments.
        cwnd: u32,
    },
    /// HyStart++ left CSS back to slow start because the RTT fell (RFC 9406 4.2).
    CssAborted {
        /// Microseconds since the controller was built.
        t_us: u64,
        /// cwnd in segments.
        cwnd: u32,
    },
    /// A congestion event (loss or ECN-CE) started a recovery episode and reduced the window.
    WindowReduced {
        /// Microseconds since the controller was built.
        t_us: u64,
        /// cwnd in segments before the reduction.
        from_cwnd: u32,
        /// cwnd in segments after it.
        to_cwnd: u32,
        /// The new ssthresh in segments.
        ssthresh: u32,
        /// True for ECN-CE, false for loss.
        ecn: bool,
    },
    /// The recovery episode ended (first ACK of a packet sent after it began).
    RecoveryEnded {
        /// Microseconds since the controller was built.
        t_us: u64,
        /// cwnd in segments.
        cwnd: u32,
    },
    /// Persistent congestion handled as the kernel's RTO / `CA_Loss`: minimum window and an
    /// algorithm (and HyStart) state reset.
    RtoReset {
        /// Microseconds since the controller was built.
        t_us: u64,
        /// cwnd in segments before the reset.
        from_cwnd: u32,
        /// The new ssthresh in segments.
        ssthresh: u32,
    },
}

impl CcEvent {
    /// Microseconds since the controller was built.
    pub fn t_us(&self) -> u64 {
        match self {
            CcEvent::SlowStartExit { t_us, .. }
            | CcEvent::CssEntered { t_us, .. }
            | CcEvent::CssAborted { t_us, .. }
            | CcEvent::WindowReduced { t_us, .. }
            | CcEvent::RecoveryEnded { t_us, .. }
            | CcEvent::RtoReset { t_us, .. } => *t_us,
        }
    }
}

impl fmt::Display for CcEvent {
    /// `SECONDS s: WHAT, FIGURES`, windows in segments.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t_us = self.t_us();
        write!(f, "{}.{:06} s: ", t_us / 1_000_000, t_us % 1_000_000)?;
        match self {
            CcEvent::SlowStartExit {
                cwnd,
                ssthresh,
                reason,
                ..
            } => write!(
                f,
                "slow start exit ({reason}), cwnd {cwnd} ssthresh {ssthresh}"
            ),
            CcEvent::CssEntered { cwnd, .. } => {
                write!(f, "conservative slow start entered, cwnd {cwnd}")
            }
            CcEvent::CssAborted { cwnd, .. } => {
                write!(f, "conservative slow start aborted, cwnd {cwnd}")
            }
            CcEvent::WindowReduced {
                from_cwnd,
                to_cwnd,
                ssthresh,
                ecn,
                ..
            } => {
                let cause = if *ecn { "ecn-ce" } else { "loss" };
                write!(
                    f,
                    "window reduced ({cause}), cwnd {from_cwnd} -> {to_cwnd} ssthresh {ssthresh}"
                )
            }
            CcEvent::RecoveryEnded { cwnd, .. } => write!(f, "recovery ended, cwnd {cwnd}"),
            CcEvent::RtoReset {
                from_cwnd,
                ssthresh,
                ..
            } => write!(
                f,
                "rto reset (persistent congestion), cwnd {from_cwnd} -> minimum ssthresh {ssthresh}"
            ),
        }
    }
}

/// A point-in-time view of the controller's state, cheap to copy, in kernel units.
///
/// Non-exhaustive: fields are added as the model exposes more state; read the fields, build
/// one with `Snapshot::default()` if needed.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[non_exhaustive]
pub struct Snapshot {
    /// Algorithm name (`cubic`, `bic`, `reno`).
    pub algorithm: String,
    /// Profile name (`linux-6`, `linux-2.6.20`, ...).
    pub profile: String,
    /// Current phase; `None` only before the first event.
    pub phase: Option<Phase>,
    /// Microseconds since the controller was built, at the last update.
    pub t_us: u64,
    /// Segment size in bytes used for the conversions below.
    pub mss: u32,
    /// `snd_cwnd` in segments.
    pub cwnd: u32,
    /// `snd_cwnd` in bytes (`cwnd * mss`; the adapter's sub-segment ACK remainder is not
    /// included).
    pub cwnd_bytes: u64,
    /// `snd_ssthresh` in segments; `None` while it is the kernel's "infinite" value.
    pub ssthresh: Option<u32>,
    /// ssthresh in bytes, `None` while infinite.
    pub ssthresh_bytes: Option<u64>,
    /// `last_max_cwnd` (CUBIC/BIC) in segments.
    pub last_max_cwnd: u32,
    /// CUBIC `bic_K` in 1/1024 s units (0 outside CUBIC).
    pub cubic_k: u32,
    /// CUBIC/BIC `bic_origin_point` in segments (0 outside CUBIC).
    pub origin_point: u32,
    /// Epoch start in the profile's clock units, `None` when no epoch is running.
    pub epoch_start: Option<u32>,
    /// Current `cnt` (ACKs or packets per +1 cwnd).
    pub cnt: u32,
    /// Minimum delay seen, in microseconds (converted from the era's unit), `None` before
    /// the first sample.
    pub delay_min_us: Option<u64>,
    /// HyStart: packet number that ends the current round (`end_seq`).
    pub hystart_end_seq: u64,
    /// HyStart: samples taken in this round.
    pub hystart_sample_cnt: u32,
    /// HyStart: the round's minimum RTT in microseconds, `None` before a sample.
    pub hystart_curr_rtt_us: Option<u64>,
    /// Why slow start ended the last time it did, if it has.
    pub exit_reason: Option<ExitReason>,
    /// cwnd in segments when slow start last ended.
    pub exit_cwnd: Option<u32>,
    /// Microseconds since build when slow start last ended.
    pub exit_t_us: Option<u64>,
    /// Number of window reductions (recovery episodes) so far.
    pub reductions: u32,
    /// Number of RTO resets so far.
    pub rto_resets: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_display_one_line_each() {
        let lines: Vec<String> = [
            CcEvent::CssEntered { t_us: 5, cwnd: 40 },
            CcEvent::CssAborted {
                t_us: 1_000_000,
                cwnd: 41,
            },
            CcEvent::WindowReduced {
                t_us: 2_500_000,
                from_cwnd: 100,
                to_cwnd: 70,
                ssthresh: 70,
                ecn: true,
            },
            CcEvent::RecoveryEnded {
                t_us: 2_600_000,
                cwnd: 70,
            },
            CcEvent::RtoReset {
                t_us: 3_000_001,
                from_cwnd: 70,
                ssthresh: 49,
            },
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(
            lines,
            [
                "0.000005 s: conservative slow start entered, cwnd 40",
                "1.000000 s: conservative slow start aborted, cwnd 41",
                "2.500000 s: window reduced (ecn-ce), cwnd 100 -> 70 ssthresh 70",
                "2.600000 s: recovery ended, cwnd 70",
                "3.000001 s: rto reset (persistent congestion), cwnd 70 -> minimum ssthresh 49",
            ]
        );
    }

    #[test]
    fn phases_and_reasons_display_their_names() {
        assert_eq!(Phase::SlowStart.to_string(), "slow-start");
        assert_eq!(
            Phase::ConservativeSlowStart.to_string(),
            "conservative-slow-start"
        );
        assert_eq!(
            Phase::CongestionAvoidance.to_string(),
            "congestion-avoidance"
        );
        assert_eq!(Phase::Recovery.to_string(), "recovery");
        assert_eq!(ExitReason::SsthreshReached.to_string(), "ssthresh-reached");
    }
}
