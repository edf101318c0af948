//! The data channels of one job: bulk streams are counted, file streams are written to their
//! sink and judged.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use crate::channels::DataIn;
use crate::error::{Result, TransferError};
use crate::protocol::DataHeader;
use crate::recvfile::{EarlyLimits, FileSink, Planned};

use super::{COALESCE, DIGEST_TIMEOUT};

pub(super) async fn bulk_stream(
    mut input: DataIn,
    bytes: Arc<AtomicU64>,
    limit: Option<u64>,
    time_up: Option<Instant>,
) -> Result<()> {
    loop {
        let b = match input.next().await {
            Ok(Some((_, b))) => b,
            Ok(None) => break,
            // A timed job's streams end with a reset once the sender's time is up (it
            // discards what it still had queued): after `time_up` (the announced duration on
            // this side's clock, which starts half an RTT before the sender's) that is a
            // normal end.
            Err(_) if time_up.is_some_and(|t| Instant::now() >= t) => break,
            Err(e) => return Err(e),
        };
        let total = bytes.fetch_add(b.len() as u64, Ordering::Relaxed) + b.len() as u64;
        if limit.is_some_and(|l| total > l) {
            return Err(TransferError::Protocol(
                "more bulk data than announced".into(),
            ));
        }
    }
    Ok(())
}

pub(super) async fn file_stream(
    dir: &std::path::Path,
    planned: Planned,
    h: DataHeader,
    mut input: DataIn,
    digest: oneshot::Receiver<Result<String, String>>,
    bytes: Arc<AtomicU64>,
    limits: EarlyLimits,
) -> Result<(), String> {
    let name = planned.entry.name.clone();
    let mut sink = FileSink::open(dir, planned, h.offset, limits).map_err(|e| e.to_string())?;
    // QUIC hands out about one packet per chunk: gather contiguous chunks so that the file
    // sees few large writes instead of one small write per packet.
    let mut pend: Vec<u8> = Vec::with_capacity(COALESCE);
    let mut pend_at = 0u64;
    loop {
        let next = input.next().await;
        let flush = match &next {
            Ok(Some((off, b))) => {
                !pend.is_empty()
                    && (h.offset.checked_add(*off) != Some(pend_at + pend.len() as u64)
                        || pend.len() + b.len() > COALESCE)
            }
            _ => !pend.is_empty(),
        };
        if flush {
            if let Err(e) = sink.write(pend_at, &pend) {
                sink.discard();
                return Err(e.to_string());
            }
            pend.clear();
        }
        match next {
            Ok(Some((off, b))) => {
                let at = h
                    .offset
                    .checked_add(off)
                    .ok_or_else(|| format!("{name}: offset overflow"))?;
                if pend.is_empty() {
                    pend_at = at;
                }
                pend.extend_from_slice(&b);
                bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
            }
            Ok(None) => break,
            Err(e) => {
                sink.keep_partial();
                return Err(format!("{name}: {e}; partial data kept for --resume"));
            }
        }
    }
    if !sink.complete() {
        sink.keep_partial();
        return Err(format!(
            "{name}: data ended early; partial data kept for --resume"
        ));
    }
    match tokio::time::timeout(DIGEST_TIMEOUT, digest).await {
        Ok(Ok(Ok(hex))) => sink.finish(&hex).map_err(|e| e.to_string()),
        Ok(Ok(Err(reason))) => {
            sink.discard();
            Err(format!("{name}: {reason}"))
        }
        _ => {
            sink.keep_partial();
            Err(format!(
                "{name}: no digest from the sender; partial data kept for --resume"
            ))
        }
    }
}
