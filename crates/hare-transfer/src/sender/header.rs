//! The report's header and first lines: what was run, to whom, with which settings.

use std::net::SocketAddr;

use hare_report::{Event, EventKind, Role, RunHeader, Tool, Transport, Windows};

use crate::protocol::Job;
use crate::quic_config::Link;
use crate::report::RunLog;

use super::plan::describe;
use super::SendOptions;

/// What the connection settled on, for the header.
pub(super) struct Negotiated<'a> {
    /// The receiver's address.
    pub(super) addr: SocketAddr,
    /// The controller as reported (`cubic@linux-6`, `kernel:cubic`).
    pub(super) controller: &'a str,
    /// Its kernel profile, if any.
    pub(super) profile: Option<String>,
    /// The connection window the receiver granted.
    pub(super) granted: u64,
    /// The QUIC path MTU at the start (0 over TCP).
    pub(super) mtu: u32,
}

/// The hare-report header of this run.
pub(super) fn run_header(opts: &SendOptions, link: &Link, n: &Negotiated<'_>) -> RunHeader {
    let tcp = opts.tcp.is_some();
    RunHeader {
        schema: hare_report::SCHEMA.into(),
        tool: if tcp { Tool::KernelTcp } else { Tool::HareSend },
        tool_version: env!("CARGO_PKG_VERSION").into(),
        role: Role::Sender,
        transport: if tcp { Transport::Tcp } else { Transport::Quic },
        run_id: format!(
            "{}-{}",
            n.addr,
            humantime::format_rfc3339_millis(std::time::SystemTime::now())
        ),
        scenario: None,
        controller: n.controller.to_owned(),
        profile: n.profile.clone(),
        mtu: if tcp {
            0
        } else {
            link.mtu.map(u32::from).unwrap_or(n.mtu)
        },
        windows: match &opts.tcp {
            None => Windows {
                stream_receive: Some(link.window),
                receive: Some(n.granted),
                send: Some(link.connection_window()),
            },
            Some(t) => Windows {
                stream_receive: t.buffer.map(|b| b as u64),
                receive: None,
                send: t.buffer.map(|b| b as u64),
            },
        },
        path: None,
        seed: None,
        started_at: Some(
            humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        ),
        interval_s: opts.interval.as_secs_f64(),
    }
}

/// The first text lines (and, over TCP, the note on the kernel controller and pacing).
pub(super) fn announce(
    log: &mut RunLog,
    opts: &SendOptions,
    link: &Link,
    job: &Job,
    n: &Negotiated<'_>,
    kernel_cc: Option<&str>,
) {
    let transport = match &opts.tcp {
        None => format!(
            ", window {}, mtu {}",
            match link.auto {
                true => format!("auto (up to {})", crate::space::binary_size(link.window)),
                false => format!(
                    "{} x {}",
                    crate::space::binary_size(link.window),
                    link.streams
                ),
            },
            link.mtu
                .map(|m| m.to_string())
                .unwrap_or_else(|| "auto".into())
        ),
        Some(t) => {
            let paced = t.pacing_rate.is_some() || kernel_cc == Some("bbr");
            format!(", kernel TCP ({})", if paced { "paced" } else { "unpaced" })
        }
    };
    // Two lines, so that a long address or controller spec still fits 100 columns; the
    // units once, as nuttcp's (MB = 2^20 bytes) and iperf3's (Mbps = 10^6 bit/s) readers
    // each assume their own.
    log.note(&format!("hare-send -> {}: {}", n.addr, describe(job)));
    log.note(&format!("  controller {}{transport}", n.controller));
    log.printer().parts(&crate::report::SENDER_UNITS);
    if let Some(t) = &opts.tcp {
        let paced = t.pacing_rate.is_some() || kernel_cc == Some("bbr");
        log.event(Event {
            t_s: 0.0,
            kind: EventKind::Note {
                message: format!(
                    "kernel TCP {} set before connect(), {}",
                    kernel_cc.unwrap_or_default(),
                    if paced {
                        "paced"
                    } else {
                        "unpaced (no fq, no SO_MAX_PACING_RATE)"
                    }
                ),
            },
        });
    }
}
