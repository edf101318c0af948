//! `[[flows]]`: competing flows on one path, validated and expanded (`count`) into
//! [`ResolvedFlow`]s.

use super::{invalid, ScenarioError, ScenarioFile};
use hare_cc::CcSpec;
use hare_link::{PathConfig, TimeSpan};

/// Most flows one scenario may hold (after `count`).
pub const MAX_FLOWS: usize = 64;

/// What drives a flow.
#[derive(Debug, Clone, PartialEq)]
pub enum FlowController {
    /// A hare-cc controller or quinn built-in: a hare (QUIC) flow.
    Hare(Box<CcSpec>),
    /// `tcp:ALG`: a kernel TCP flow with the kernel's congestion control `ALG` (emulator
    /// only).
    KernelTcp(String),
}

/// How much a flow sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowWorkload {
    /// Exactly this many bytes.
    Bytes(u64),
    /// For this long from its start (until the run's end when the file gave neither).
    Duration(TimeSpan),
}

/// One flow of a scenario, `count` expanded.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedFlow {
    /// Position among all flows, from 0 (names the flow: `f<index>`; derives its seed).
    pub index: u32,
    /// The controller as written.
    pub controller_text: String,
    /// The controller, parsed.
    pub controller: FlowController,
    /// When it starts, from the run's start.
    pub start: TimeSpan,
    /// Its base RTT.
    pub rtt: TimeSpan,
    /// Its RTT beyond the path's: one-way delay after the shared bottleneck.
    pub extra_delay: TimeSpan,
    /// What it sends.
    pub workload: FlowWorkload,
}

impl ResolvedFlow {
    /// The flow's tag in text output: `f0`, `f1`, ...
    pub fn tag(&self) -> String {
        format!("f{}", self.index)
    }
}

/// Parses `tcp:ALG` (a kernel algorithm name) or a hare-cc spec.
fn parse_controller(text: &str) -> Result<FlowController, String> {
    if let Some(alg) = text.strip_prefix("tcp:") {
        let ok = !alg.is_empty()
            && alg.len() < 16
            && alg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        return if ok {
            Ok(FlowController::KernelTcp(alg.to_string()))
        } else {
            Err("`tcp:` and a kernel congestion-control name, e.g. \"tcp:cubic\"".into())
        };
    }
    text.parse::<CcSpec>()
        .map(|spec| FlowController::Hare(Box::new(spec)))
        .map_err(|e| e.to_string())
}

/// The flows of `file` on `path`, expanded; empty when the file has none. Checks that a
/// flows scenario names no `controllers` and no `[replay]`, that `[workload]` is a
/// duration (the run's length), and each flow's values.
pub(super) fn resolve(
    file: &ScenarioFile,
    path: &PathConfig,
    src: &str,
) -> Result<Vec<ResolvedFlow>, ScenarioError> {
    if file.flows.is_empty() {
        return Ok(Vec::new());
    }
    if !file.controllers.is_empty() {
        return Err(invalid(
            src,
            "controllers",
            format!("{:?}", file.controllers),
            "no `controllers` beside `[[flows]]` (each flow names its own)",
        ));
    }
    if file.replay.is_some() {
        return Err(invalid(
            src,
            "replay",
            "a table",
            "no `[replay]` with `[[flows]]`",
        ));
    }
    let Some(run) = file.workload.duration else {
        return Err(invalid(
            src,
            "workload.bytes",
            "a byte count",
            "`workload.duration` with `[[flows]]`: the run's length",
        ));
    };
    let mut out = Vec::new();
    for (i, spec) in file.flows.iter().enumerate() {
        let field = |name: &str| format!("flows[{i}].{name}");
        let controller = parse_controller(&spec.controller).map_err(|e| {
            invalid(
                src,
                field("controller"),
                format!("{:?}", spec.controller),
                e,
            )
        })?;
        let start = spec.start.unwrap_or(TimeSpan(0));
        if start.0 >= run.0 {
            return Err(invalid(
                src,
                field("start"),
                format!("\"{start}\""),
                format!("a start before the run's end ({run})"),
            ));
        }
        let rtt = spec.rtt.unwrap_or(path.rtt());
        if rtt.0 < path.rtt().0 {
            return Err(invalid(
                src,
                field("rtt"),
                format!("\"{rtt}\""),
                format!("at least the path's RTT ({})", path.rtt()),
            ));
        }
        let workload = match (spec.bytes, spec.duration) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    src,
                    field("bytes"),
                    "both bytes and duration",
                    "at most one of `bytes` or `duration`",
                ))
            }
            (Some(b), None) if b.0 > 0 => FlowWorkload::Bytes(b.0),
            (None, Some(d)) if d.0 > 0 => FlowWorkload::Duration(d),
            (None, None) => FlowWorkload::Duration(TimeSpan(run.0 - start.0)),
            _ => return Err(invalid(src, field("bytes"), 0, "more than 0")),
        };
        let count = spec.count.unwrap_or(1);
        if count == 0 || out.len() + count as usize > MAX_FLOWS {
            return Err(invalid(
                src,
                field("count"),
                count,
                format!("1 or more, at most {MAX_FLOWS} flows in all"),
            ));
        }
        for _ in 0..count {
            out.push(ResolvedFlow {
                index: out.len() as u32,
                controller_text: spec.controller.clone(),
                controller: controller.clone(),
                start,
                rtt,
                extra_delay: TimeSpan(rtt.0 - path.rtt().0),
                workload,
            });
        }
    }
    Ok(out)
}
