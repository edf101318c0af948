//! The data channels of one job: bulk streams are counted, file streams are written to their
//! sink and judged.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use quinn::VarInt;
use tokio::sync::{mpsc, oneshot};

use crate::channels::{read_quic_header, DataIn};
use crate::error::{Result, TransferError};
use crate::protocol::FailCode;
use crate::protocol::{close, DataHeader};
use crate::recvfile::{Failure, FileSink, Planned, Target, Verified};

use super::{COALESCE, DIGEST_TIMEOUT, HEADER_TIMEOUT};

/// Count one bulk stream's payload into the job's count and the stream's own (`counters`).
pub(super) async fn bulk_stream(
    mut input: DataIn,
    (bytes, stream): (Arc<AtomicU64>, Arc<AtomicU64>),
    limit: Option<u64>,
    time_up: Option<Instant>,
) -> Result<BulkEnd> {
    loop {
        let b = match input.next_bulk().await {
            Ok(Some((_, b))) => b,
            Ok(None) => break,
            // A timed job's streams end with a reset once the sender's time is up (it
            // discards what it still had queued): after `time_up` (the announced duration on
            // this side's clock, which starts half an RTT before the sender's) that is a
            // normal end.
            Err(_) if time_up.is_some_and(|t| Instant::now() >= t) => break,
            Err(e) if input.connection_lost_to_path() => return Ok(BulkEnd::Lost(e)),
            Err(e) => return Err(e),
        };
        stream.fetch_add(b.len() as u64, Ordering::Relaxed);
        let total = bytes.fetch_add(b.len() as u64, Ordering::Relaxed) + b.len() as u64;
        if limit.is_some_and(|l| total > l) {
            return Err(TransferError::Protocol(
                "more bulk data than announced".into(),
            ));
        }
    }
    Ok(BulkEnd::Done)
}

/// How a bulk stream ended without failing.
pub(super) enum BulkEnd {
    /// At its end, or at the timed job's end.
    Done,
    /// Its connection was lost to the path (the error says how): the stream may continue on
    /// another connection of the job.
    Lost(TransferError),
}

/// How long a broken file stream waits for the sender's word on why (a file it abandoned
/// because it changed is discarded, not kept for `--resume`).
const ABANDON_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// A file stream ended with an error: the sender's reason if it abandoned the file (the partial
/// file is then removed), else the transport's error (the verified prefix is kept).
async fn stream_broke(
    name: &str,
    sink: FileSink,
    e: TransferError,
    digest: oneshot::Receiver<Result<String, String>>,
) -> Failure {
    match tokio::time::timeout(ABANDON_GRACE, digest).await {
        Ok(Ok(Err(reason))) => {
            sink.discard();
            abandoned(name, &reason)
        }
        _ => {
            sink.keep_partial();
            Failure::new(
                FailCode::Other,
                format!("{name}: {e}; partial data kept for --resume"),
            )
        }
    }
}

/// The sender gave the file up (it changed, or could not be read).
pub(super) fn abandoned(name: &str, reason: &str) -> Failure {
    let code = if reason.contains("changed") {
        FailCode::Changed
    } else {
        FailCode::Other
    };
    Failure::new(code, format!("{name}: {reason}"))
}

pub(super) async fn file_stream(
    target: &Target,
    planned: Planned,
    h: DataHeader,
    mut input: DataIn,
    digest: oneshot::Receiver<Result<String, String>>,
    (bytes, by_conn): (Arc<AtomicU64>, Option<Arc<AtomicU64>>),
) -> Result<Verified, Failure> {
    let name = planned.entry.name.clone();
    let expect = planned.remaining().min(COALESCE as u64) as usize;
    let mut sink = FileSink::open(target, planned, h.offset).map_err(Failure::from)?;
    // QUIC hands out about one packet per chunk: gather contiguous chunks so that the file
    // sees few large writes instead of one small write per packet.
    let mut pend: Vec<u8> = Vec::with_capacity(expect);
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
                return Err(Failure::from(e));
            }
            pend.clear();
        }
        match next {
            Ok(Some((off, b))) => {
                let at = h.offset.checked_add(off).ok_or_else(|| {
                    Failure::new(FailCode::Other, format!("{name}: offset overflow"))
                })?;
                if pend.is_empty() {
                    pend_at = at;
                }
                pend.extend_from_slice(&b);
                bytes.fetch_add(b.len() as u64, Ordering::Relaxed);
                if let Some(c) = &by_conn {
                    c.fetch_add(b.len() as u64, Ordering::Relaxed);
                }
            }
            Ok(None) => break,
            Err(e) => return Err(stream_broke(&name, sink, e, digest).await),
        }
    }
    if !sink.complete() {
        sink.keep_partial();
        return Err(Failure::new(
            FailCode::Other,
            format!("{name}: data ended early; partial data kept for --resume"),
        ));
    }
    judge(sink, &name, None, digest).await
}

/// A file whose every byte is in: verified against the sender's digest (`said`, if it came
/// already, else awaited up to [`DIGEST_TIMEOUT`]); a file the sender abandoned is discarded,
/// one whose digest never comes kept for `--resume`.
pub(super) async fn judge(
    sink: FileSink,
    name: &str,
    said: Option<Result<String, String>>,
    digest: oneshot::Receiver<Result<String, String>>,
) -> Result<Verified, Failure> {
    let word = match said {
        Some(w) => Some(w),
        None => match tokio::time::timeout(DIGEST_TIMEOUT, digest).await {
            Ok(Ok(w)) => Some(w),
            _ => None,
        },
    };
    match word {
        Some(Ok(hex)) => sink.verify(&hex).map_err(Failure::from),
        Some(Err(reason)) => {
            sink.discard();
            Err(abandoned(name, &reason))
        }
        None => {
            sink.keep_partial();
            Err(Failure::new(
                FailCode::Other,
                format!("{name}: no digest from the sender; partial data kept for --resume"),
            ))
        }
    }
}

/// Accept data streams once the job is accepted and hand them (with their header) to the job.
pub(super) async fn accept_quic_streams(
    (conn, number): (quinn::Connection, u16),
    tx: mpsc::Sender<(DataHeader, DataIn)>,
) {
    while let Ok(mut s) = conn.accept_uni().await {
        let (tx, conn) = (tx.clone(), conn.clone());
        tokio::spawn(async move {
            if let Ok(Ok(h)) = tokio::time::timeout(HEADER_TIMEOUT, read_quic_header(&mut s)).await
            {
                let _ = tx.send((h, DataIn::Quic(s, number, conn))).await;
            } else {
                let _ = s.stop(VarInt::from_u32(close::PROTOCOL));
            }
        });
    }
}
