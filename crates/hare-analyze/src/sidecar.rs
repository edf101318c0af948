//! hare's `.cc.jsonl` sidecar next to a `.sqlog` (written by hare-transfer's `--qlog`):
//! one line per hare-cc decision, `{"qlog": NAME, "t_s": ..., "event": CcEvent}`, with `t_s`
//! on the controller's clock (built at the connection start, the qlog's time base, within a
//! millisecond). Its `slow-start-exit` gives the exit's reason, which the qlog cannot.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use hare_cc::CcEvent;
use serde::Deserialize;

use crate::error::{AnalyzeError, Result};
use crate::trace::{Exit, ExitSource, Skipped, Trace};

#[derive(Deserialize)]
struct Line {
    t_s: f64,
    event: CcEvent,
}

/// The sidecar path of a qlog: `X.sqlog` -> `X.cc.jsonl`.
pub fn sidecar_path(qlog: &Path) -> PathBuf {
    qlog.with_extension("cc.jsonl")
}

/// If the sidecar exists, take the slow-start exit from its first `slow-start-exit` line.
/// A cut last line is counted in `trace.skipped`.
pub fn apply(qlog: &Path, trace: &mut Trace) -> Result<()> {
    let path = sidecar_path(qlog);
    let Ok(file) = File::open(&path) else {
        return Ok(());
    };
    let lines: Vec<String> = BufReader::new(file)
        .lines()
        .collect::<std::result::Result<_, _>>()
        .map_err(|error| AnalyzeError::Io {
            path: path.clone(),
            error,
        })?;
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let line: Line = match serde_json::from_str(l) {
            Ok(v) => v,
            Err(e) if Some(i) == last => {
                trace.skipped.push(Skipped {
                    count: 1,
                    reason: format!("{}: last line cut short: {e}", path.display()),
                });
                break;
            }
            Err(e) => {
                return Err(AnalyzeError::BadRecord {
                    path,
                    record: i as u64 + 1,
                    message: e.to_string(),
                })
            }
        };
        if let CcEvent::SlowStartExit { cwnd, reason, .. } = line.event {
            let mss = trace.mss.unwrap_or(0);
            trace.exit = Some(Exit {
                t_s: line.t_s - trace.origin_s,
                cwnd_bytes: u64::from(cwnd) * mss,
                cwnd_segments: Some(cwnd),
                reason: Some(reason),
                source: ExitSource::ControllerEvent,
            });
            break;
        }
    }
    Ok(())
}
