//! Errors of the readers and the analysis.

use std::path::PathBuf;
use thiserror::Error;

/// Why a file could not be analysed.
#[derive(Debug, Error)]
pub enum AnalyzeError {
    /// The file could not be opened or read.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// The file is neither a hare report nor a qlog.
    #[error(
        "{path}: not a qlog or hare report: expected a qlog JSON-SEQ file (first record with \
         `qlog_version` / `qlog_format`), a qlog JSON file (an object with `qlog_version` and \
         a `traces` array) or hare report JSON lines (first record of type `header`); {found}"
    )]
    UnknownFormat {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        found: String,
    },
    /// A record in the middle of the file is malformed.
    #[error("{path}: record {record}: {message}")]
    BadRecord {
        /// The file.
        path: PathBuf,
        /// 1-based record number.
        record: u64,
        /// What was wrong.
        message: String,
    },
    /// A hare report that hare-report could not read.
    #[error(transparent)]
    Report(#[from] hare_report::jsonl::ReadError),
    /// The file holds no trace with events.
    #[error("{path}: {message}")]
    Empty {
        /// The file.
        path: PathBuf,
        /// Explanation.
        message: String,
    },
}

/// Result with [`AnalyzeError`].
pub type Result<T> = std::result::Result<T, AnalyzeError>;

/// A plot that could not be drawn or written (hare-plot's error).
pub use hare_plot::PlotError;
