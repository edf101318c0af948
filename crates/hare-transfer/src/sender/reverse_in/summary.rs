//! The reverse run's summary: this side's counts joined to the sending side's own figures,
//! and the header of its report.

use super::Ended;
use super::*;

/// This side's counts joined to the sender's own figures, with the notes that explain them.
pub(super) fn summary_of(
    log: &mut RunLog,
    end: &Ended,
    total: u64,
    end_s: f64,
    cpu_pct: Option<f64>,
    controller: &str,
    seconds: Option<f64>,
) -> Summary {
    let note = |log: &mut RunLog, message: String| {
        log.event(Event {
            t_s: end_s,
            kind: EventKind::Note { message },
        })
    };
    let remote = end
        .report
        .as_ref()
        .map(|(s, _)| s.clone())
        .unwrap_or_default();
    match &remote.slow_start_exit {
        Some(x) => note(
            log,
            format!(
                "the receiver's {controller}: slow start ended at {:.3} s: {}, cwnd {} seg",
                x.t_s, x.reason, x.cwnd_segments
            ),
        ),
        None if end.report.is_some() => note(
            log,
            format!("the receiver's {controller}: no slow-start exit reported"),
        ),
        None => {}
    }
    if let (Some((_, written)), Some(s)) = (&end.report, seconds) {
        let discarded = written.saturating_sub(total);
        if discarded > 0 {
            note(
                log,
                format!(
                    "time is up at {s} s: {discarded} bytes ({:.4} MB) the receiver wrote but did not deliver were discarded",
                    discarded as f64 / hare_report::MIB
                ),
            );
        }
    }
    if let Some(e) = &end.failure {
        log.event(Event {
            t_s: end_s,
            kind: EventKind::Error {
                message: e.to_string(),
            },
        });
    }
    Summary {
        bytes: total,
        seconds: end_s,
        sent_packets: remote.sent_packets,
        lost_packets: remote.lost_packets,
        srtt_ms: remote.srtt_ms,
        min_rtt_ms: remote.min_rtt_ms,
        cpu_sender_pct: remote.cpu_sender_pct,
        cpu_receiver_pct: cpu_pct,
        slow_start_exit: remote.slow_start_exit,
        max_cwnd_segments: remote.max_cwnd_segments,
        valid: end.report.is_none() || remote.valid,
        invalid_reasons: remote.invalid_reasons,
        completed: end.failure.is_none() && end.report.as_ref().is_some_and(|(s, _)| s.completed),
    }
}

pub(super) fn header(t: &Take<'_>, controller: &str, profile: Option<String>) -> RunHeader {
    RunHeader {
        schema: hare_report::SCHEMA.into(),
        tool: match t.conn() {
            Some(_) => Tool::HareSend,
            None => Tool::KernelTcp,
        },
        tool_version: env!("CARGO_PKG_VERSION").into(),
        role: Role::Receiver,
        transport: match t.conn() {
            Some(_) => Transport::Quic,
            None => Transport::Tcp,
        },
        run_id: format!(
            "{}-{}",
            t.addr,
            humantime::format_rfc3339_millis(std::time::SystemTime::now())
        ),
        scenario: None,
        controller: controller.to_owned(),
        profile,
        mtu: match t.conn() {
            Some(c) => t
                .opts
                .link
                .mtu
                .map(u32::from)
                .unwrap_or_else(|| u32::from(c.stats().path.current_mtu)),
            None => 0,
        },
        windows: Windows {
            stream_receive: Some(t.window),
            receive: Some(t.granted),
            send: None,
        },
        path: None,
        seed: None,
        started_at: Some(
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        ),
        interval_s: t.opts.interval.as_secs_f64(),
    }
}
