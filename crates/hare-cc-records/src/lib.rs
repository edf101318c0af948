//! hare-cc decisions converted into hare-report's own record types, written once for the
//! writers of reports (the simulator and the transfer tools).
//!
//! The glue lives in its own crate so that neither side depends on the other: hare-report
//! owns its schema and never pulls in the controller (or quinn), and hare-cc, a library for
//! other projects, knows nothing of hare's report files.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use hare_report::{CcEvent, ExitReason, Phase};

/// The report's record of a hare-cc decision (same fields, the report's own types); `None`
/// for a decision kind this report schema has no record for (hare-cc's event types are
/// `non_exhaustive`: a newer hare-cc may report more than the schema holds).
pub fn cc_event_record(ev: hare_cc::CcEvent) -> Option<CcEvent> {
    use hare_cc::CcEvent as Cc;
    Some(match ev {
        Cc::SlowStartExit {
            t_us,
            cwnd,
            ssthresh,
            reason,
        } => CcEvent::SlowStartExit {
            t_us,
            cwnd,
            ssthresh,
            reason: exit_reason_record(reason)?,
        },
        Cc::CssEntered { t_us, cwnd } => CcEvent::CssEntered { t_us, cwnd },
        Cc::CssAborted { t_us, cwnd } => CcEvent::CssAborted { t_us, cwnd },
        Cc::WindowReduced {
            t_us,
            from_cwnd,
            to_cwnd,
            ssthresh,
            ecn,
        } => CcEvent::WindowReduced {
            t_us,
            from_cwnd,
            to_cwnd,
            ssthresh,
            ecn,
        },
        Cc::RecoveryEnded { t_us, cwnd } => CcEvent::RecoveryEnded { t_us, cwnd },
        Cc::RtoReset {
            t_us,
            from_cwnd,
            ssthresh,
        } => CcEvent::RtoReset {
            t_us,
            from_cwnd,
            ssthresh,
        },
        _ => return None,
    })
}

/// The report's record of a hare-cc slow-start exit reason (`None`: unknown to the schema).
pub fn exit_reason_record(r: hare_cc::ExitReason) -> Option<ExitReason> {
    use hare_cc::ExitReason as Cc;
    Some(match r {
        Cc::AckTrain => ExitReason::AckTrain,
        Cc::Delay => ExitReason::Delay,
        Cc::Loss => ExitReason::Loss,
        Cc::SsthreshReached => ExitReason::SsthreshReached,
        Cc::CssDone => ExitReason::CssDone,
        Cc::Rto => ExitReason::Rto,
        _ => return None,
    })
}

/// The report's record of a hare-cc phase (`None`: unknown to the schema).
pub fn phase_record(p: hare_cc::Phase) -> Option<Phase> {
    use hare_cc::Phase as Cc;
    Some(match p {
        Cc::SlowStart => Phase::SlowStart,
        Cc::ConservativeSlowStart => Phase::ConservativeSlowStart,
        Cc::CongestionAvoidance => Phase::CongestionAvoidance,
        Cc::Recovery => Phase::Recovery,
        _ => return None,
    })
}
