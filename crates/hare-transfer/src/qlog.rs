//! `--qlog DIR`: one qlog per connection on each side (quinn's qlog feature, JSON-SEQ, qlog
//! 0.3), and hare-cc's decisions in a sidecar JSON-lines file next to it that names the qlog.
//!
//! Files: `DIR/{role}-{unix-ms}-{n}.sqlog` and `DIR/{role}-{unix-ms}-{n}.cc.jsonl`, where the
//! sidecar's lines are `{"qlog": "<qlog file name>", "t_s": ..., "event": {...}}` with `t_s`
//! in seconds since the connection's controller was built (the qlog's own time base is the
//! connection start, within a millisecond of it).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use hare_report::CcEvent;
use quinn::{QlogConfig, QlogStream};

use crate::error::{Result, TransferError};

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A connection's qlog and its sidecar.
pub struct ConnectionQlog {
    /// The qlog file.
    pub qlog_path: PathBuf,
    /// The stream to hand to `TransportConfig::qlog_stream`.
    pub stream: Option<QlogStream>,
    sidecar: BufWriter<File>,
    qlog_name: String,
}

impl std::fmt::Debug for ConnectionQlog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionQlog")
            .field("qlog_path", &self.qlog_path)
            .finish()
    }
}

impl ConnectionQlog {
    /// Create the files for one connection of `role` (`sender` / `receiver`).
    pub fn create(dir: &Path, role: &str, title: String) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|e| TransferError::io(format!("creating {}", dir.display()), e))?;
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let base = format!("{role}-{ms}-{}-{n}", std::process::id());
        let qlog_path = dir.join(format!("{base}.sqlog"));
        let side_path = dir.join(format!("{base}.cc.jsonl"));
        let file = File::create(&qlog_path)
            .map_err(|e| TransferError::io(format!("creating {}", qlog_path.display()), e))?;
        let sidecar = BufWriter::new(
            File::create(&side_path)
                .map_err(|e| TransferError::io(format!("creating {}", side_path.display()), e))?,
        );
        let mut cfg = QlogConfig::default();
        cfg.writer(Box::new(BufWriter::with_capacity(1 << 20, file)))
            .title(Some(title))
            .description(Some(format!("hare {} {role}", env!("CARGO_PKG_VERSION"))));
        Ok(Self {
            qlog_name: format!("{base}.sqlog"),
            qlog_path,
            stream: cfg.into_stream(),
            sidecar,
        })
    }

    /// Append controller events (hare-cc's, or already the report's records) to the sidecar.
    pub fn cc_events<E: SidecarEvent>(&mut self, events: &[E]) {
        for e in events.iter().filter_map(SidecarEvent::record) {
            let line = serde_json::json!({
                "qlog": self.qlog_name,
                "t_s": e.t_us() as f64 / 1e6,
                "event": e,
            });
            let _ = serde_json::to_writer(&mut self.sidecar, &line);
            let _ = self.sidecar.write_all(b"\n");
        }
        let _ = self.sidecar.flush();
    }
}

/// A controller decision the sidecar can record: the sidecar holds the report's own
/// [`CcEvent`] records (the same JSON the reports hold), whichever form the caller has.
pub trait SidecarEvent {
    /// The report record of this decision.
    fn record(&self) -> Option<CcEvent>;
}

impl SidecarEvent for CcEvent {
    fn record(&self) -> Option<CcEvent> {
        Some(self.clone())
    }
}

impl SidecarEvent for hare_cc::CcEvent {
    fn record(&self) -> Option<CcEvent> {
        hare_cc_records::cc_event_record(self.clone())
    }
}
