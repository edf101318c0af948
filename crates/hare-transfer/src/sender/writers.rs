//! The data writers: bulk streams and file streams, with the shared `-R` pacer.

use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use indicatif::ProgressBar;
use tokio::sync::{mpsc, oneshot};

use super::opener::Opener;
use super::FileReport;
use crate::error::Result;
use crate::protocol::{close, DataHeader, DataKind, FilePlan, ToReceiver};
use crate::sendfiles::{prefix_hash, Source};

/// How long a failed stream write waits for the receiver's verdict on that file.
const VERDICT_GRACE: Duration = Duration::from_secs(2);

/// Size of one write.
pub(super) const CHUNK: usize = 256 << 10;

/// Application-level rate limit (`-R`) shared by every stream of the job: each write adds to
/// one byte count and waits until the total is due at the rate, so the streams together keep
/// to it however many are running.
pub(super) struct Pacer {
    pub(super) bits_per_s: f64,
    pub(super) start: Instant,
    pub(super) sent: std::sync::atomic::AtomicU64,
}

impl Pacer {
    pub(super) async fn account(&self, n: usize) {
        let total = self.sent.fetch_add(n as u64, Ordering::Relaxed) + n as u64;
        let due = Duration::from_secs_f64(total as f64 * 8.0 / self.bits_per_s);
        let elapsed = self.start.elapsed();
        if due > elapsed {
            tokio::time::sleep(due - elapsed).await;
        }
    }
}

/// What one bulk stream writes, and where it stops.
pub(super) struct BulkPlan {
    /// Stream number.
    pub(super) index: u32,
    /// Bytes to send (`-n`), if bounded by size.
    pub(super) quota: Option<u64>,
    /// When the time is up (`-T`), if bounded by time.
    pub(super) deadline: Option<Instant>,
    /// Payload handed to the transport so far, over all streams.
    pub(super) written: Arc<AtomicU64>,
}

/// Writes one bulk stream until its quota, its deadline or a stop. At the deadline the data
/// stops: a write waiting for window is abandoned, and the stream is reset (QUIC) or the
/// connection aborted (TCP) so that nothing queued is sent after the time (nuttcp's `-T` is a
/// time); a size job, or a stop before the deadline, finishes the stream normally.
pub(super) async fn bulk_writer(
    opener: Opener,
    plan: BulkPlan,
    stop: Arc<AtomicBool>,
    pacer: Option<Arc<Pacer>>,
    pattern: Bytes,
) -> Result<u64> {
    let mut out = opener
        .open(DataHeader {
            kind: DataKind::Bulk,
            index: plan.index,
            offset: 0,
            session: [0; 12],
        })
        .await?;
    let far = Instant::now() + Duration::from_secs(u64::from(u32::MAX));
    let until = tokio::time::Instant::from_std(plan.deadline.unwrap_or(far));
    let mut sent = 0u64;
    let mut time_up = false;
    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if plan.deadline.is_some_and(|d| Instant::now() >= d) {
            time_up = true;
            break;
        }
        let n = match plan.quota {
            Some(q) => (q - sent).min(CHUNK as u64) as usize,
            None => CHUNK,
        };
        if n == 0 {
            break;
        }
        tokio::select! {
            r = out.write(pattern.slice(..n)) => r?,
            _ = tokio::time::sleep_until(until) => {
                time_up = true;
                break;
            }
        }
        sent += n as u64;
        plan.written.fetch_add(n as u64, Ordering::Relaxed);
        if let Some(p) = &pacer {
            tokio::select! {
                _ = p.account(n) => {}
                _ = tokio::time::sleep_until(until) => {}
            }
        }
    }
    if time_up {
        out.discard(close::TIME_UP);
    } else {
        out.finish()?;
    }
    Ok(sent)
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn file_task(
    opener: Opener,
    index: u32,
    src: Source,
    plan: Option<FilePlan>,
    ctl: mpsc::Sender<ToReceiver>,
    mut result: oneshot::Receiver<(bool, Option<String>)>,
    pacer: Option<Arc<Pacer>>,
    bar: Option<ProgressBar>,
) -> FileReport {
    let name = src.entry.name.clone();
    let fail = |reason: String, resumed_from: u64| FileReport {
        name: name.clone(),
        ok: false,
        reason: Some(reason),
        resumed_from,
    };
    let size = src.entry.size;
    // Resume only from a prefix whose digest matches ours. Hashing a long prefix is slow:
    // it runs off the runtime thread.
    let offer = plan.filter(|p| p.have > 0 && p.have <= size);
    let prefix = match &offer {
        Some(p) => {
            let (path, have) = (src.path.clone(), p.have);
            Some(
                tokio::task::spawn_blocking(move || prefix_hash(&path, have))
                    .await
                    .unwrap_or_else(|e| {
                        Err(crate::error::TransferError::Protocol(format!(
                            "hashing the prefix failed: {e}"
                        )))
                    }),
            )
        }
        None => None,
    };
    let (mut hasher, offset) = match (offer, prefix) {
        (Some(p), Some(Ok((h, n))))
            if n == p.have && p.have_blake3.as_deref() == Some(h.finalize().to_hex().as_str()) =>
        {
            (h, p.have)
        }
        (_, Some(Err(e))) => return fail(e.to_string(), 0),
        _ => (blake3::Hasher::new(), 0),
    };
    let mut file = match std::fs::File::open(&src.path) {
        Ok(f) => f,
        Err(e) => return fail(format!("cannot open {}: {e}", src.path.display()), offset),
    };
    if let Err(e) = file.seek(SeekFrom::Start(offset)) {
        return fail(format!("cannot seek {}: {e}", src.path.display()), offset);
    }
    if let Some(b) = &bar {
        b.set_position(offset);
    }
    let mut out = match opener
        .open(DataHeader {
            kind: DataKind::File,
            index,
            offset,
            session: [0; 12],
        })
        .await
    {
        Ok(o) => o,
        Err(e) => return fail(e.to_string(), offset),
    };
    let mut pos = offset;
    let abandon = |reason: String| ToReceiver::FileAbandoned { index, reason };
    loop {
        let want = ((size - pos).min(CHUNK as u64) as usize).max(1);
        let mut buf = vec![0u8; want];
        let n = match file.read(&mut buf) {
            Ok(n) => n,
            Err(e) => {
                out.reset(close::PROTOCOL);
                let r = format!("read error: {e}");
                let _ = ctl.send(abandon(r.clone())).await;
                return fail(r, offset);
            }
        };
        if n == 0 {
            break;
        }
        if pos + n as u64 > size {
            out.reset(close::PROTOCOL);
            let r = "the file grew while being sent".to_owned();
            let _ = ctl.send(abandon(r.clone())).await;
            return fail(r, offset);
        }
        buf.truncate(n);
        hasher.update(&buf);
        if let Err(e) = out.write(Bytes::from(buf)).await {
            // The receiver stops a stream when it gives the file up (its disk is full, the
            // data broke a limit); its verdict, on the way, says why.
            let verdict = tokio::time::timeout(VERDICT_GRACE, &mut result).await;
            return match verdict {
                Ok(Ok((false, Some(r)))) => fail(r, offset),
                _ => fail(e.to_string(), offset),
            };
        }
        pos += n as u64;
        if let Some(b) = &bar {
            b.set_position(pos);
        }
        if let Some(p) = &pacer {
            p.account(n).await;
        }
    }
    if pos != size {
        out.reset(close::PROTOCOL);
        let r = format!("the file shrank while being sent ({pos} of {size} bytes)");
        let _ = ctl.send(abandon(r.clone())).await;
        return fail(r, offset);
    }
    if let Err(e) = out.finish() {
        return fail(e.to_string(), offset);
    }
    let digest = hasher.finalize().to_hex().to_string();
    if ctl
        .send(ToReceiver::FileDone {
            index,
            blake3: digest,
        })
        .await
        .is_err()
    {
        return fail("the control channel closed".into(), offset);
    }
    if let Some(b) = &bar {
        b.finish();
    }
    match result.await {
        Ok((true, _)) => FileReport {
            name: name.clone(),
            ok: true,
            reason: None,
            resumed_from: offset,
        },
        Ok((false, r)) => fail(r.unwrap_or_else(|| "failed on the receiver".into()), offset),
        Err(_) => fail("no verdict from the receiver".into(), offset),
    }
}
