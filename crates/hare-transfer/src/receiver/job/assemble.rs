//! A file that arrives as ranges ([`DataKind::Range`](crate::protocol::DataKind::Range)), on
//! streams of one or more connections of its job: one sink for all of them, written at the
//! offsets the data arrives at (the sink hashes in file order, reading back what came early),
//! judged once every byte is in and the sender's digest came. A range stream that breaks
//! (its connection died) is no failure: the sender sends the range again on another one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::channels::DataIn;
use crate::protocol::{DataHeader, FailCode, Striping};
use crate::recvfile::{Failure, FileSink, Planned, Target, Verified};

use super::super::streams::judge;
use super::super::COALESCE;
use super::{DigestWait, Finished};

/// A piece of one range stream, or its end.
enum Piece {
    /// Bytes at an offset, from the job's connection of this number.
    Data(u64, Bytes, u16),
    End,
}

/// The job's payload count and its counts by connection.
pub(super) type Counts = (Arc<AtomicU64>, Vec<Arc<AtomicU64>>);

/// The running assembly of one file: where its further range streams go.
pub(super) struct Ranges {
    /// Unbounded, but a file takes at most `cap` streams.
    tx: mpsc::UnboundedSender<(DataHeader, DataIn)>,
    streams: u64,
    cap: u64,
}

impl Ranges {
    /// Another range stream of the file; `Err` when the sender opens more than the file can
    /// need (each range twice, and some).
    pub(super) fn add(&mut self, h: DataHeader, input: DataIn) -> Result<(), String> {
        self.streams += 1;
        if self.streams > self.cap {
            return Err(format!(
                "more range streams for file {} than it needs",
                h.index
            ));
        }
        // The assembly ends only once the file is judged, when this is removed: a closed
        // channel is a stream after the verdict, nothing to read.
        let _ = self.tx.send((h, input));
        Ok(())
    }
}

/// The most range streams the last `remaining` bytes of a file of `size` bytes may take in
/// ranges cut as `striping` says: each range twice (sent again after a lost connection), and
/// 16 more.
pub(super) fn stream_cap(striping: &Striping, size: u64, remaining: u64) -> u64 {
    striping
        .ranges_in(size, remaining)
        .saturating_mul(2)
        .saturating_add(16)
}

/// Start the assembly of a file with its first range stream; its verdict goes to `fin`.
pub(super) fn start(
    (target, planned): (Target, Planned),
    first: (DataHeader, DataIn),
    digest: DigestWait,
    (fin, counts): (mpsc::Sender<Finished>, Counts),
    cap: u64,
) -> Ranges {
    let (tx, rx) = mpsc::unbounded_channel();
    let index = first.0.index;
    tokio::spawn(async move {
        let r = assemble(target, planned, first, rx, digest, counts).await;
        let _ = fin.send(Finished::File(index, r)).await;
    });
    Ranges {
        tx,
        streams: 1,
        cap,
    }
}

async fn assemble(
    target: Target,
    planned: Planned,
    first: (DataHeader, DataIn),
    mut more: mpsc::UnboundedReceiver<(DataHeader, DataIn)>,
    mut digest: DigestWait,
    (bytes, by_conn): Counts,
) -> Result<Verified, Failure> {
    let name = planned.entry.name.clone();
    let mut sink =
        FileSink::open(&target, planned, first.0.range_start()).map_err(Failure::from)?;
    let (piece_tx, mut pieces) = mpsc::channel::<Piece>(16);
    tokio::spawn(read_range(first, piece_tx.clone()));
    let (mut readers, mut more_open) = (1usize, true);
    let (mut said, mut word_may_come) = (None, true);
    while !sink.complete() {
        if readers == 0 && !more_open {
            sink.keep_partial();
            return Err(Failure::new(
                FailCode::Other,
                format!("{name}: data ended early; partial data kept for --resume"),
            ));
        }
        tokio::select! {
            p = pieces.recv() => match p {
                Some(Piece::Data(at, b, conn)) => {
                    if let Err(e) = sink.write(at, &b) {
                        sink.discard();
                        return Err(Failure::from(e));
                    }
                    let n = b.len() as u64;
                    bytes.fetch_add(n, Ordering::Relaxed);
                    if let Some(c) = by_conn.get(usize::from(conn)) {
                        c.fetch_add(n, Ordering::Relaxed);
                    }
                }
                Some(Piece::End) | None => readers = readers.saturating_sub(1),
            },
            m = more.recv(), if more_open => match m {
                Some(s) => {
                    readers += 1;
                    tokio::spawn(read_range(s, piece_tx.clone()));
                }
                None => more_open = false,
            },
            d = &mut digest, if said.is_none() && word_may_come => match d {
                Ok(Err(reason)) => {
                    sink.discard();
                    return Err(super::super::streams::abandoned(&name, &reason));
                }
                Ok(word) => said = Some(word),
                // The job ended: no word will come; what arrived is kept for --resume.
                Err(_) => word_may_come = false,
            },
        }
    }
    judge(sink, &name, said, digest).await
}

/// Read one range stream, gathering contiguous chunks into writes of up to [`COALESCE`]
/// bytes; a stream that breaks just ends (its range comes again).
async fn read_range((h, mut input): (DataHeader, DataIn), tx: mpsc::Sender<Piece>) {
    let conn = input.connection();
    let mut pend: Vec<u8> = Vec::new();
    let mut pend_at = 0u64;
    while let Ok(Some((off, b))) = input.next().await {
        let Some(at) = h.offset.checked_add(off) else {
            break;
        };
        let joins = pend_at + pend.len() as u64 == at && pend.len() + b.len() <= COALESCE;
        if !pend.is_empty() && !joins {
            let full = Bytes::from(std::mem::take(&mut pend));
            if tx.send(Piece::Data(pend_at, full, conn)).await.is_err() {
                return;
            }
        }
        if pend.is_empty() {
            pend_at = at;
        }
        pend.extend_from_slice(&b);
    }
    if !pend.is_empty() {
        let _ = tx.send(Piece::Data(pend_at, Bytes::from(pend), conn)).await;
    }
    let _ = tx.send(Piece::End).await;
}
