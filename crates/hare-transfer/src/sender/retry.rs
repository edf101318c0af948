//! Sending a changed file again (`--retries N`): when the before/after check finds that a file
//! changed while it was read, the attempt is given up and, up to N times, the file is sent
//! again from its start under the same job. The receiver discards what it had of the attempt
//! and says so (`file-restart`) before the new data channel is opened, so the two attempts
//! never mix. rsync has the nearest thing: a file whose checksum does not match after the
//! transfer is sent once more ("redo"); scp has nothing.

use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::control::Ctl;
use super::restarts::Restarts;
use crate::protocol::ToReceiver;
use crate::sendfiles::Source;

/// Default `--retries`: a file that changes while it is read is sent at most this many more
/// times.
pub const DEFAULT_RETRIES: u32 = 3;

/// How long the receiver has to confirm that it discarded an attempt.
const RESTART_TIMEOUT: Duration = Duration::from_secs(10);

/// What a file task needs to send its file again.
#[derive(Clone)]
pub(super) struct Retry {
    /// Times a changed file is sent again (0: it fails at once, as with a receiver that does
    /// not take retries).
    pub(super) max: u32,
    /// Where the receiver's confirmations arrive.
    pub(super) restarts: Restarts,
    /// Where the run's log hears, when it happens, that a file is sent again (the run loop
    /// prints it as an event line, which the progress bar does not overwrite).
    pub(super) notes: Option<mpsc::Sender<Ctl>>,
}

impl Retry {
    /// Say, when it happens, that `name` changed (`reason`) and goes again as `attempt`.
    pub(super) async fn said(&self, name: &str, reason: &str, attempt: u32) {
        if let Some(n) = &self.notes {
            let line = retry_line(name, reason, attempt, self.max + 1);
            let _ = n.send(Ctl::Note(line)).await;
        }
    }
}

impl Retry {
    /// Say `line` as an event line, when it happens.
    pub(super) async fn note(&self, line: String) {
        if let Some(n) = &self.notes {
            let _ = n.send(Ctl::Note(line)).await;
        }
    }

    /// Say where a file resumes (`--resume`): from byte `offset` of `size` when the
    /// receiver's kept prefix matched this file, or that it goes whole when a prefix of
    /// `offered` bytes did not.
    pub(super) async fn said_resume(
        &self,
        name: &str,
        (offered, offset, size): (u64, u64, u64),
        held: u64,
    ) {
        let line = match (offered, offset) {
            (0, _) if held == 0 => return,
            (o, 0) if o > 0 => format!(
                "{name}: the receiver's partial ({offered} bytes) differs from this file; \
                 sending it from byte 0"
            ),
            _ => format!(
                "{name}: resuming at byte {offset} of {size} ({} kept by the receiver, {} to send{})",
                crate::space::binary_size(offset),
                crate::space::binary_size(size - offset),
                match held {
                    0 => String::new(),
                    h => format!(
                        ", less the {} in ranges it holds beyond, where they match",
                        crate::space::binary_size(h)
                    ),
                }
            ),
        };
        if let Some(n) = &self.notes {
            let _ = n.send(Ctl::Note(line)).await;
        }
    }
}

/// True for the reasons that mean the file changed (rather than could not be read): only
/// those are worth another attempt.
pub(super) fn is_change(reason: &str) -> bool {
    reason.starts_with("changed ")
}

/// The reason a file failed for good after `attempts` attempts.
pub(super) fn gave_up(reason: &str, attempts: u32) -> String {
    const TAIL: &str = "; not delivered";
    match reason.split_once(TAIL) {
        _ if attempts <= 1 => reason.to_owned(),
        Some((head, rest)) => format!("{head}{TAIL} after {attempts} attempts (--retries){rest}"),
        None => format!("{reason} (not delivered after {attempts} attempts, --retries)"),
    }
}

/// The line a retry prints: the file, what changed and the attempt it starts.
fn retry_line(name: &str, reason: &str, attempt: u32, attempts: u32) -> String {
    let why = reason
        .split_once("; not delivered")
        .map_or(reason, |(w, _)| w);
    format!("{name}: {why}; sending it again (attempt {attempt} of {attempts})")
}

/// Ask the receiver to take `src` again from its start, with its size and metadata as they
/// are now (updated in `src`), as attempt number `attempt` (the attempts made so far, counted
/// from 0 in the data channel's header): the confirmation to wait for with [`confirmed`].
pub(super) async fn ask(
    ctl: &mpsc::Sender<ToReceiver>,
    restarts: &Restarts,
    (index, attempt): (u32, u32),
    src: &mut Source,
    reason: String,
) -> Result<oneshot::Receiver<()>, String> {
    use std::os::unix::fs::MetadataExt;
    let m =
        std::fs::metadata(&src.path).map_err(|e| format!("{reason}; cannot send it again: {e}"))?;
    src.entry.size = m.len();
    if src.entry.mode.is_some() {
        src.entry.mode = Some(m.mode() & 0o777);
    }
    if src.entry.mtime_ns.is_some() {
        src.entry.mtime_ns = Some(
            m.mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.mtime_nsec()),
        );
    }
    let confirmation = restarts.expect(index);
    let retry = ToReceiver::FileRetry {
        index,
        reason,
        size: src.entry.size,
        mode: src.entry.mode,
        mtime_ns: src.entry.mtime_ns,
        attempt: u16::try_from(attempt).ok(),
    };
    if ctl.send(retry).await.is_err() {
        return Err("the control channel closed".into());
    }
    Ok(confirmation)
}

/// Wait for the receiver's `file-restart` (bounded in time), or for its verdict on the file
/// if it refuses to take it again (a new size over its limits): then its reason.
pub(super) async fn confirmed(
    asked: Result<oneshot::Receiver<()>, String>,
    verdict: &mut oneshot::Receiver<(bool, Option<String>)>,
) -> Result<(), String> {
    let restart = tokio::time::timeout(RESTART_TIMEOUT, asked?);
    let judged = async {
        match verdict.await {
            Ok((_, Some(reason))) => reason,
            Ok((_, None)) => "the receiver judged the file instead of taking it again".into(),
            // No verdict will come: only the restart (or its deadline) decides.
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        r = restart => match r {
            Ok(Ok(())) => Ok(()),
            _ => Err(format!(
                "the receiver did not take the file again within {} s",
                RESTART_TIMEOUT.as_secs()
            )),
        },
        reason = judged => Err(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_are_retried_and_the_final_reason_counts_attempts() {
        assert!(is_change(
            "changed while being sent (it grew); not delivered"
        ));
        assert!(is_change(
            "changed since it was listed (3 bytes announced, 4 now)"
        ));
        assert!(!is_change("read error: Input/output error"));
        assert_eq!(gave_up("x", 1), "x");
        assert_eq!(
            gave_up("x", 4),
            "x (not delivered after 4 attempts, --retries)"
        );
        assert_eq!(
            gave_up("changed (it grew); not delivered, send it again", 2),
            "changed (it grew); not delivered after 2 attempts (--retries), send it again"
        );
    }

    #[test]
    fn a_retry_names_the_file_what_changed_and_the_attempt() {
        assert_eq!(
            retry_line(
                "live.log",
                "changed while being sent (it was modified); not delivered, send it again",
                2,
                4
            ),
            "live.log: changed while being sent (it was modified); sending it again (attempt 2 of 4)"
        );
    }

    #[test]
    fn a_restart_reaches_only_the_file_waiting_for_it() {
        let r = Restarts::default();
        assert!(!r.fire(3));
        let mut rx = r.expect(3);
        assert!(!r.fire(4));
        assert!(r.fire(3));
        assert!(rx.try_recv().is_ok());
    }
}
