//! Each cause said once: a connection's task logs how its job ended unless the job's own
//! report already printed it.

use std::net::SocketAddr;

use crate::error::{Result, TransferError};

use super::logs;

tokio::task_local! {
    /// Set when the connection's job printed how it ended as a text line of its own report
    /// ([`said_in_report`]): its end is then not logged again (each cause is said once).
    static SAID: std::cell::Cell<bool>;
}

/// Run one connection's task where its job can say it reported its end.
pub(super) fn said_scope<F: std::future::Future>(
    f: F,
) -> impl std::future::Future<Output = F::Output> {
    SAID.scope(std::cell::Cell::new(false), f)
}

/// The job's report printed its abort as text (no effect outside [`said_scope`]: a
/// one-shot job's end is said by hare-recv's own final line).
pub(super) fn said_in_report() {
    let _ = SAID.try_with(|s| s.set(true));
}

/// One line for a connection that ended badly (refusals, busy ones too, were logged when
/// sent), unless its job's report already said it.
pub(super) fn log_end(peer: SocketAddr, r: &Result<()>) {
    if SAID.try_with(std::cell::Cell::get).unwrap_or(false) {
        return;
    }
    let (kind, what) = match r {
        Ok(()) | Err(TransferError::Refused(_) | TransferError::Busy(_)) => return,
        Err(TransferError::Timeout(_)) => ("timeout", "dropped"),
        Err(TransferError::Protocol(_)) => ("protocol", "dropped"),
        Err(TransferError::FilesFailed { .. }) => ("files", "job ended"),
        Err(TransferError::Connection(_) | TransferError::Broken { .. }) => {
            ("connection", "connection ended")
        }
        Err(_) => ("error", "job aborted"),
    };
    if let Err(e) = r {
        let text = logs::line(peer, what, &e.to_string());
        logs::limited(kind, &text, |l| tracing::warn!("{l}"));
    }
}
