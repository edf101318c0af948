//! What a congestion controller decided, as the report records it.
//!
//! These are the report's own copies of the decisions a hare-cc controller publishes: the
//! schema must not change when the controller crate does, and reading a report must not pull
//! in the QUIC stack. Writers (the simulator, the transfer tools) convert from the
//! controller's types on their side; the JSON is the stable part of the contract (kebab-case
//! names, the event tagged by `"event"`).

use serde::{Deserialize, Serialize};

/// Why slow start ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
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
    /// Stable kebab-case name, the same text the JSON holds.
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

impl std::fmt::Display for ExitReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which part of its state machine the controller was in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
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

/// One decision of a controller, in kernel units (segments, microseconds since the
/// controller was built).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
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
