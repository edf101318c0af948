//! hare's `.cc.jsonl` sidecar next to a `.sqlog` (written by hare-transfer's `--qlog`):
//! one line per hare-cc decision, `{"qlog": NAME, "t_s": ..., "event": CcEvent}`, with `t_s`
//! on the controller's clock (built at the connection start, the qlog's time base, within a
//! millisecond). Its `slow-start-exit` gives the exit's reason, which the qlog cannot.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use hare_report::CcEvent;
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
/// A sidecar never fails the analysis of its qlog: an empty one adds nothing, and lines it
/// cannot read (a cut last line, an event of a newer hare) are counted in `trace.skipped`.
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
    let mut unread = 0u64;
    let mut first_unread = None;
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
                unread += 1;
                first_unread.get_or_insert((i + 1, e.to_string()));
                continue;
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
    if let Some((line, e)) = first_unread {
        trace.skipped.push(Skipped {
            count: unread,
            reason: format!(
                "{}: line(s) not understood, first at line {line}: {e}",
                path.display()
            ),
        });
    }
    Ok(())
}
