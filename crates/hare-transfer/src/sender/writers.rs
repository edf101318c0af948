//! The data writers: bulk streams and file streams, with the shared `-R` pacer.

use std::io::{Read, Seek, SeekFrom};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use indicatif::ProgressBar;
use tokio::sync::{mpsc, oneshot};

use super::bar::FileBar;
use super::grow;
use super::opener::Opener;
use super::ranges::Striper;
use super::retry::{ask, confirmed, gave_up, is_change, Retry};
use super::stripes::Stripes;
use super::FileReport;
use crate::channels::CHUNK;
use crate::error::Result;
use crate::protocol::{close, DataHeader, DataKind, FilePlan, ToReceiver};
use crate::sendfiles::{open_source, prefix_hash, Source};

/// How long a failed stream write waits for the receiver's verdict on that file.
const VERDICT_GRACE: Duration = Duration::from_secs(2);

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
#[derive(Clone)]
pub(super) struct BulkPlan {
    /// Stream number.
    pub(super) index: u32,
    /// Bytes of the stream in all (`-n`), if bounded by size.
    pub(super) quota: Option<u64>,
    /// When the time is up (`-T`), if bounded by time.
    pub(super) deadline: Option<Instant>,
    /// Payload handed to the transport so far, over all streams.
    pub(super) written: Arc<AtomicU64>,
    /// Where this attempt starts in the stream (0, or where the receiver said a stream lost
    /// with its connection continues).
    pub(super) offset: u64,
    /// 0, or the receiver's count of the stream's losses.
    pub(super) attempt: u16,
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
            offset: plan.offset,
            session: [0; 12],
            attempt: plan.attempt,
        })
        .await?;
    let far = Instant::now() + Duration::from_secs(u64::from(u32::MAX));
    let until = tokio::time::Instant::from_std(plan.deadline.unwrap_or(far));
    let mut sent = plan.offset;
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
            Some(q) => q.saturating_sub(sent).min(CHUNK as u64) as usize,
            None => CHUNK,
        };
        if n == 0 {
            break;
        }
        // `written` counts what the transport took, also of a write the deadline cuts short,
        // so that at the end written - received is exactly what was discarded.
        tokio::select! {
            r = out.write_counted(pattern.slice(..n), Some(&plan.written)) => r?,
            _ = tokio::time::sleep_until(until) => {
                time_up = true;
                break;
            }
        }
        sent += n as u64;
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

/// What identifies one version of a file: size, modification and change times (ns) and
/// inode. A writer changes mtime/ctime; a replacement (rename over it) changes the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Snapshot {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    dev: u64,
    ino: u64,
}

impl Snapshot {
    fn of(m: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Self {
            size: m.len(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
            dev: m.dev(),
            ino: m.ino(),
        }
    }

    /// What differs from `earlier`, for the message naming the file.
    fn change_from(&self, earlier: &Snapshot) -> Option<&'static str> {
        if (self.dev, self.ino) != (earlier.dev, earlier.ino) {
            Some("it was removed or replaced")
        } else if self.size != earlier.size {
            Some("its size changed")
        } else if self.mtime_ns != earlier.mtime_ns || self.ctime_ns != earlier.ctime_ns {
            Some("it was modified")
        } else {
            None
        }
    }
}

/// The reason given for a file that changed while it was read.
fn changed(what: &str) -> String {
    format!("changed while being sent ({what}); not delivered, send it again")
}

/// The file as it is now, through the open handle and through its path (a rename over the
/// path leaves the handle on the old inode).
fn current(file: &std::fs::File, path: &std::path::Path) -> Result<Snapshot, String> {
    let by_fd = file
        .metadata()
        .map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
    let snap = Snapshot::of(&by_fd);
    match std::fs::metadata(path) {
        Ok(m) if Snapshot::of(&m) == snap => Ok(snap),
        Ok(m) => Ok(Snapshot::of(&m)),
        Err(_) => Ok(Snapshot { ino: 0, ..snap }),
    }
}

/// Resume only from a prefix whose digest matches ours: the hash state and the offset to
/// start at. Hashing a long prefix is slow: it runs off the runtime thread.
async fn resume_point(
    src: &Source,
    plan: Option<FilePlan>,
) -> Result<(blake3::Hasher, u64), String> {
    let offer = plan.filter(|p| p.have > 0 && p.have <= src.entry.size);
    let Some(p) = offer else {
        return Ok((blake3::Hasher::new(), 0));
    };
    let (path, have) = (src.path.clone(), p.have);
    let hashed = tokio::task::spawn_blocking(move || prefix_hash(&path, have))
        .await
        .map_err(|e| format!("hashing the prefix failed: {e}"))??;
    match hashed {
        (h, n)
            if n == p.have && p.have_blake3.as_deref() == Some(h.finalize().to_hex().as_str()) =>
        {
            Ok((h, p.have))
        }
        _ => Ok((blake3::Hasher::new(), 0)),
    }
}

/// Open the file at `offset` and take the snapshot the whole send is checked against. A file
/// that no longer has the size it was announced with has changed since it was listed.
fn open_at(src: &Source, offset: u64) -> Result<(std::fs::File, Snapshot), String> {
    let mut file = open_source(&src.path)?;
    let snap = current(&file, &src.path)?;
    if snap.size != src.entry.size {
        return Err(format!(
            "changed since it was listed ({} bytes announced, {} now); not delivered, send it again",
            src.entry.size, snap.size
        ));
    }
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| format!("cannot seek {}: {e}", src.path.display()))?;
    Ok((file, snap))
}

/// Where a file's bytes go: one data channel, or ranges over the job's connections.
enum FileOut {
    One(crate::channels::DataOut),
    Striped(Box<Striper>),
}

impl FileOut {
    async fn write(&mut self, b: Bytes) -> Result<()> {
        match self {
            FileOut::One(o) => o.write(b).await,
            FileOut::Striped(s) => s.write(b).await,
        }
    }

    /// Everything went out: end the channel, or wait until every range was acknowledged.
    async fn finish(&mut self) -> Result<()> {
        match self {
            FileOut::One(o) => o.finish(),
            FileOut::Striped(s) => s.finish().await,
        }
    }

    fn reset(&mut self, code: u32) {
        match self {
            FileOut::One(o) => o.reset(code),
            FileOut::Striped(s) => s.reset(),
        }
    }
}

/// Open the way file `header.index` travels from `header.offset`: over several connections,
/// ranges (one for a file of at most a chunk), so that what a lost connection carried goes
/// again on another, and an empty file's one stream on the connection given the fewest
/// bytes; over one, a stream of `opener`.
async fn open_out(
    io: &FileIo,
    header: DataHeader,
    (file, size): (&std::fs::File, u64),
    have: Vec<crate::protocol::HaveRange>,
) -> Result<FileOut> {
    let Some(stripes) = &io.stripes else {
        return Ok(FileOut::One(io.opener.open(header).await?));
    };
    let left = size - header.offset;
    if left > 0 {
        let file = file
            .try_clone()
            .map_err(|e| crate::error::TransferError::Config(format!("cannot reopen: {e}")))?;
        let at = (header.index, header.offset, header.attempt);
        return Ok(FileOut::Striped(Box::new(Striper::new(
            stripes.clone(),
            (file, size),
            at,
            have,
        ))));
    }
    let opener = Opener::Quic(stripes.least_given(left).await?);
    Ok(FileOut::One(opener.open(header).await?))
}

/// How streaming a file's bytes ended.
enum Streamed {
    /// Every byte went out unchanged; the digest of what was read, and the file's size when
    /// the read ended if it grew meanwhile (an append: the listed prefix read again matched).
    Sent(String, Option<u64>),
    /// The file changed or could not be read: the stream was reset; the reason.
    Abandoned(String),
    /// The stream failed (the receiver stopped it); the transport's error.
    Broken(String),
}

/// Read the file from `pos` to its end, hashing and sending what was read, and check after
/// every chunk and at the end that the file is still the one snapshotted: the digest the
/// receiver verifies is bound to exactly these bytes, and a file that changed meanwhile is
/// never announced as done.
async fn stream_file(
    file: &mut std::fs::File,
    src: &Source,
    snap: Snapshot,
    (mut hasher, mut pos): (blake3::Hasher, u64),
    out: &mut FileOut,
    pacer: Option<&Pacer>,
    bar: Option<&ProgressBar>,
) -> Streamed {
    let size = src.entry.size;
    // Set once the file is seen longer than listed (its only change): what it was then.
    let mut grew: Option<u64> = None;
    loop {
        if grew.is_some() && pos == size {
            break;
        }
        let want = ((size - pos).min(CHUNK as u64) as usize).max(1);
        let mut buf = vec![0u8; want];
        let n = match file.read(&mut buf) {
            Ok(n) => n,
            Err(e) => return Streamed::Abandoned(format!("read error: {e}")),
        };
        let now = match current(file, &src.path) {
            Ok(s) => s,
            Err(e) => return Streamed::Abandoned(e),
        };
        let same_inode = (now.dev, now.ino) == (snap.dev, snap.ino);
        if grow::only_grew(same_inode, size, now.size) {
            grew = Some(now.size);
        } else if pos + n as u64 > size {
            return Streamed::Abandoned(changed("it grew"));
        } else if let Some(what) = now.change_from(&snap) {
            return Streamed::Abandoned(changed(what));
        }
        let n = n.min((size - pos) as usize);
        if n == 0 {
            break;
        }
        buf.truncate(n);
        hasher.update(&buf);
        if let Err(e) = out.write(Bytes::from(buf)).await {
            return Streamed::Broken(e.to_string());
        }
        pos += n as u64;
        if let Some(b) = bar {
            b.inc(n as u64);
        }
        if let Some(p) = pacer {
            p.account(n).await;
        }
    }
    if pos != size {
        return Streamed::Abandoned(changed(&format!("it shrank to {pos} of {size} bytes")));
    }
    let digest = hasher.finalize().to_hex().to_string();
    if grew.is_some() {
        // Appended to, or rewritten and longer? Only a prefix read again as it was sent says.
        match grow::prefix_unchanged(file, size, &digest) {
            Ok(true) => {}
            Ok(false) => return Streamed::Abandoned(changed("it was rewritten as it grew")),
            Err(e) => return Streamed::Abandoned(e),
        }
    }
    Streamed::Sent(digest, grew)
}

/// The receiver hears that file `index` will not come, with the reason; `unsent` when no
/// data channel was opened for it (it fails there at once instead of waiting for one).
async fn tell_abandoned(ctl: &mpsc::Sender<ToReceiver>, index: u32, reason: &str, unsent: bool) {
    let m = ToReceiver::FileAbandoned {
        index,
        reason: reason.to_owned(),
        unsent,
    };
    let _ = ctl.send(m).await;
}

/// Send one file (see [`send_file`]), then settle it on the overall bar: a file that failed
/// counts as settled there too, and takes what it will not send off the bar's total, so
/// that the bar and its ETA count only what is still to come and the bar ends complete.
#[allow(clippy::too_many_arguments)]
pub(super) async fn file_task(
    (opener, stripes): (Opener, Option<Arc<Stripes>>),
    index: u32,
    src: Source,
    plan: Option<FilePlan>,
    ctl: mpsc::Sender<ToReceiver>,
    result: oneshot::Receiver<(bool, Option<String>)>,
    pacer: Option<Arc<Pacer>>,
    bar: Option<FileBar>,
    permit: tokio::sync::OwnedSemaphorePermit,
    retry: Retry,
) -> FileReport {
    let io = FileIo {
        opener,
        stripes,
        index,
        ctl,
        pacer,
        bar: bar.as_ref().map(|b| b.bytes().clone()),
    };
    let report = send_file(io, src, plan, result, permit, retry).await;
    if let Some(b) = &bar {
        b.settle(report.ok);
    }
    report
}

/// What a file task sends through: its data channels, its index on the control channel,
/// the `-R` pacer and its hidden progress bar (bytes sent, every attempt included).
struct FileIo {
    opener: Opener,
    /// The job's connections, when it has several.
    stripes: Option<Arc<Stripes>>,
    index: u32,
    ctl: mpsc::Sender<ToReceiver>,
    pacer: Option<Arc<Pacer>>,
    bar: Option<ProgressBar>,
}

impl FileIo {
    /// The file is sent again from its start with `size` bytes: the bytes already sent of it
    /// stay on the bar, and the new attempt's are added to its total.
    fn again(&self, size: u64) {
        if let Some(b) = &self.bar {
            b.set_length(b.position() + size);
        }
    }
}

/// Why a file's data channel broke: the receiver stops a stream when it gives the file up
/// (its disk is full, the data broke a limit), and its verdict, on the way, says why; else
/// the transport's error `e`.
async fn why_broken(e: String, result: &mut oneshot::Receiver<(bool, Option<String>)>) -> String {
    match tokio::time::timeout(VERDICT_GRACE, result).await {
        Ok(Ok((false, Some(r)))) => r,
        _ => e,
    }
}

/// Why a file the receiver judged before it was all sent failed: its reason; a success
/// then is a receiver that broke the protocol (nothing can be verified before its digest).
fn early_verdict((ok, reason): (bool, Option<String>)) -> String {
    match (ok, reason) {
        (false, Some(r)) => r,
        (false, None) => "failed on the receiver".into(),
        (true, _) => "the receiver reported the file verified before it was all sent".into(),
    }
}

/// `reason` without the file's own name: the report line already starts with it, and a
/// receiver's reason may carry it again (`disk full on the receiver: file mid.bin: write
/// failed: ...` becomes `disk full on the receiver: write failed: ...`).
fn without_name(reason: &str, name: &str) -> String {
    let named = format!("file {name}: ");
    match reason.find(&named) {
        Some(at) => format!("{}{}", &reason[..at], &reason[at + named.len()..]),
        None => reason.to_owned(),
    }
}

/// Send one file: resume point, open and snapshot, stream, then the digest and the
/// receiver's verdict; a file that changed meanwhile is sent again from its start, up to
/// `retry.max` times (module `retry`), and each retry is said when it happens. A file that
/// cannot be opened or read fails at once, and the receiver is told so. The `permit` (a
/// place among the `-P` files in flight) is given back once the digest is sent, so the next
/// file streams while this one is verified and made durable.
async fn send_file(
    io: FileIo,
    mut src: Source,
    plan: Option<FilePlan>,
    mut result: oneshot::Receiver<(bool, Option<String>)>,
    permit: tokio::sync::OwnedSemaphorePermit,
    retry: Retry,
) -> FileReport {
    let (index, ctl) = (io.index, &io.ctl);
    let name = src.entry.name.clone();
    let mut attempts = 1u32;
    let fail = |reason: String, resumed_from: u64, attempts: u32| FileReport {
        name: name.clone(),
        ok: false,
        reason: Some(without_name(&reason, &name)),
        resumed_from,
        retries: attempts - 1,
        skipped: None,
        grew_to: None,
    };
    let offered = plan.as_ref().map_or(0, |p| p.have);
    let have_ranges = plan
        .as_ref()
        .map(|p| p.have_ranges.clone())
        .unwrap_or_default();
    let (mut hasher, mut offset) = match resume_point(&src, plan).await {
        Ok(r) => {
            let held = match r.1 == offered {
                true => have_ranges.iter().map(|h| h.len).sum(),
                false => 0,
            };
            retry
                .said_resume(&name, (offered, r.1, src.entry.size), held)
                .await;
            r
        }
        Err(e) => {
            tell_abandoned(ctl, index, &e, true).await;
            return fail(e, 0, attempts);
        }
    };
    if let Some(b) = &io.bar {
        b.set_length(src.entry.size);
        b.set_position(offset);
    }
    let (digest, mut out, grew_to) = loop {
        let again = |r: &str, attempts: u32| is_change(r) && attempts <= retry.max;
        let (mut file, snap) = match open_at(&src, offset) {
            Ok(f) => f,
            Err(e) if again(&e, attempts) => {
                // Nothing was sent of this attempt: the receiver only takes the new size.
                retry.said(&name, &e, attempts + 1).await;
                tokio::time::sleep(grow::pause_before(attempts + 1)).await;
                let asked = ask(ctl, &retry.restarts, (index, attempts), &mut src, e).await;
                if let Err(e) = &asked {
                    tell_abandoned(ctl, index, e, true).await;
                }
                if let Err(e) = confirmed(asked, &mut result).await {
                    return fail(e, 0, attempts);
                }
                io.again(src.entry.size);
                (attempts, offset, hasher) = (attempts + 1, 0, blake3::Hasher::new());
                continue;
            }
            Err(e) => {
                // No data channel was opened: the receiver fails the file at once.
                let r = gave_up(&e, attempts);
                tell_abandoned(ctl, index, &r, true).await;
                return fail(r, offset, attempts);
            }
        };
        let header = DataHeader {
            kind: DataKind::File,
            index,
            offset,
            session: [0; 12],
            // At most MAX_RETRIES + 1 attempts (101).
            attempt: (attempts - 1) as u16,
        };
        // Pieces the receiver kept hold only for the resume they were offered with.
        let have = match (attempts, offset) {
            (1, o) if o == offered => have_ranges.clone(),
            _ => Vec::new(),
        };
        let mut out = match open_out(&io, header, (&file, src.entry.size), have).await {
            Ok(o) => o,
            Err(e) => return fail(e.to_string(), offset, attempts),
        };
        let from = (hasher, offset);
        let pacer = io.pacer.as_deref();
        let streamed = stream_file(
            &mut file,
            &src,
            snap,
            from,
            &mut out,
            pacer,
            io.bar.as_ref(),
        );
        // The receiver may judge the file while it streams: it gives a file up at once (its
        // disk is full, the data broke a limit). Over one connection its stop breaks the
        // stream, but ranges over several may still be acknowledged (quinn acknowledges
        // streams nobody reads), so only the verdict ends the sending.
        let judged = async {
            match (&mut result).await {
                Ok(v) => v,
                // No verdict will come (the job is ending): the stream decides.
                Err(_) => std::future::pending().await,
            }
        };
        let streamed = tokio::select! {
            s = streamed => s,
            v = judged => {
                out.reset(close::PROTOCOL);
                return fail(early_verdict(v), offset, attempts);
            }
        };
        match streamed {
            Streamed::Sent(d, grown) => {
                if let Some(now) = grown {
                    retry
                        .note(grow::grew_line(&name, src.entry.size, now))
                        .await;
                }
                break (d, out, grown);
            }
            Streamed::Abandoned(r) if again(&r, attempts) => {
                retry.said(&name, &r, attempts + 1).await;
                // A writer is busy with the file: give it time before reading it again.
                tokio::time::sleep(grow::pause_before(attempts + 1)).await;
                // The receiver hears of the retry before the stream's reset reaches it.
                let asked = ask(ctl, &retry.restarts, (index, attempts), &mut src, r).await;
                if let Err(e) = &asked {
                    tell_abandoned(ctl, index, e, false).await;
                }
                out.reset(close::PROTOCOL);
                if let Err(e) = confirmed(asked, &mut result).await {
                    return fail(e, 0, attempts);
                }
                io.again(src.entry.size);
                (attempts, offset, hasher) = (attempts + 1, 0, blake3::Hasher::new());
            }
            Streamed::Abandoned(r) => {
                // The receiver hears why before the stream's reset reaches it.
                let r = gave_up(&r, attempts);
                tell_abandoned(ctl, index, &r, false).await;
                out.reset(close::PROTOCOL);
                return fail(r, offset, attempts);
            }
            Streamed::Broken(e) => {
                return fail(why_broken(e, &mut result).await, offset, attempts);
            }
        }
    };
    // Over several connections the file's ranges are now all handed over; waiting for their
    // acknowledgement takes a round trip, during which the next file may stream (a bounded
    // number of files wait so, each holding its file open to send a lost range again).
    let acking = match &out {
        FileOut::Striped(_) => io.stripes.as_ref().map(|s| s.acking()),
        FileOut::One(_) => None,
    };
    let (permit, acking) = match acking {
        Some(slots) => {
            let place = slots.acquire_owned().await.ok();
            drop(permit);
            (None, place)
        }
        None => (Some(permit), None),
    };
    if let Err(e) = out.finish().await {
        // Ranges end here, acknowledged or stopped: a stop is the receiver giving up.
        return fail(
            why_broken(e.to_string(), &mut result).await,
            offset,
            attempts,
        );
    }
    let done = ToReceiver::FileDone {
        index,
        blake3: digest,
    };
    if ctl.send(done).await.is_err() {
        return fail("the control channel closed".into(), offset, attempts);
    }
    drop((permit, acking));
    if let Some(b) = &io.bar {
        b.finish();
    }
    match result.await {
        Ok((true, _)) => FileReport {
            name: name.clone(),
            ok: true,
            reason: None,
            resumed_from: offset,
            retries: attempts - 1,
            skipped: None,
            grew_to,
        },
        Ok((false, r)) => fail(
            r.unwrap_or_else(|| "failed on the receiver".into()),
            offset,
            attempts,
        ),
        Err(_) => fail("no verdict from the receiver".into(), offset, attempts),
    }
}
