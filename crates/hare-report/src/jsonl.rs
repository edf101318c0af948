//! JSON-lines reading and writing of [`Record`]s.

use crate::{Record, Run};
use std::io::{BufRead, Write};
use thiserror::Error;

/// A report file that cannot be read.
#[derive(Debug, Error)]
pub enum ReadError {
    /// An I/O error while reading.
    #[error("{source_name}: read failed: {error}")]
    Io {
        /// The file or stream name given to the reader.
        source_name: String,
        /// The error.
        error: std::io::Error,
    },
    /// A line that is not a hare report record (and not a truncated last line).
    #[error("{source_name}:{line}: not a hare report record: {error}")]
    BadRecord {
        /// The file or stream name.
        source_name: String,
        /// 1-based line number.
        line: usize,
        /// The JSON error.
        error: serde_json::Error,
    },
    /// The first record is not a header.
    #[error(
        "{source_name}: expected a hare report (first record of type `header`), found {found}"
    )]
    NoHeader {
        /// The file or stream name.
        source_name: String,
        /// What was found instead.
        found: String,
    },
}

/// Write one record as a JSON line.
pub fn write_record<W: Write>(mut w: W, record: &Record) -> std::io::Result<()> {
    serde_json::to_writer(&mut w, record)?;
    w.write_all(b"\n")
}

/// Write a whole run as JSON lines.
pub fn write_run<W: Write>(mut w: W, run: &Run) -> std::io::Result<()> {
    for r in run.records() {
        write_record(&mut w, &r)?;
    }
    w.flush()
}

/// What [`read_run`] read, with what it had to skip.
#[derive(Debug, Clone)]
pub struct ReadOutcome {
    /// The run.
    pub run: Run,
    /// Records skipped because the last line was cut short (0 or 1).
    pub truncated_records: usize,
}

/// Read a run from JSON lines. A last line that does not parse is taken as truncated (a run
/// still being written, or cut by a crash) and counted, not fatal; any other bad line is an
/// error naming `source_name` and the line.
pub fn read_run<R: BufRead>(reader: R, source_name: &str) -> Result<ReadOutcome, ReadError> {
    let mut lines: Vec<(usize, String)> = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|error| ReadError::Io {
            source_name: source_name.to_string(),
            error,
        })?;
        if !line.trim().is_empty() {
            lines.push((i + 1, line));
        }
    }
    let mut header = None;
    let mut run_intervals = Vec::new();
    let mut events = Vec::new();
    let mut summary = None;
    let mut truncated = 0;
    let n = lines.len();
    for (idx, (lineno, line)) in lines.into_iter().enumerate() {
        let rec: Record = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(error) => {
                if idx + 1 == n && (error.is_eof() || error.is_syntax()) && header.is_some() {
                    truncated += 1;
                    continue;
                }
                return Err(ReadError::BadRecord {
                    source_name: source_name.to_string(),
                    line: lineno,
                    error,
                });
            }
        };
        match rec {
            Record::Header(h) if header.is_none() => header = Some(h),
            other if header.is_none() => {
                return Err(ReadError::NoHeader {
                    source_name: source_name.to_string(),
                    found: record_type(&other).to_string(),
                })
            }
            Record::Header(_) => {
                return Err(ReadError::NoHeader {
                    source_name: source_name.to_string(),
                    found: format!("a second header at line {lineno}"),
                })
            }
            Record::Interval(i) => run_intervals.push(i),
            Record::Event(e) => events.push(e),
            Record::Summary(s) => summary = Some(s),
        }
    }
    let header = header.ok_or_else(|| ReadError::NoHeader {
        source_name: source_name.to_string(),
        found: "an empty file".to_string(),
    })?;
    Ok(ReadOutcome {
        run: Run {
            header,
            intervals: run_intervals,
            events,
            summary,
        },
        truncated_records: truncated,
    })
}

fn record_type(r: &Record) -> &'static str {
    match r {
        Record::Header(_) => "header",
        Record::Interval(_) => "interval",
        Record::Event(_) => "event",
        Record::Summary(_) => "summary",
    }
}
