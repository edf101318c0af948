//! hare-cc decisions converted into the report's own record types, for the writers of
//! reports (the simulator and the transfer tools).
//!
//! Only with the `hare-cc` feature: readers of reports (the analysis tools) need neither the
//! controller crate nor this conversion, and the schema stays the report's own.

use crate::{CcEvent, ExitReason, Phase};

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
