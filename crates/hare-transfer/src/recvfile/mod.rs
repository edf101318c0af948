//! The receiving side of one file: planned before the job is accepted, written at the offsets
//! the data arrives at (unordered) into a temporary file that belongs to this job alone
//! (module `part`), hashed with BLAKE3 in file order, verified, and moved to its final name only
//! once the digest matches.
//!
//! Why unordered: quinn's ordered reassembly keeps at most 1024 gaps per stream and kills the
//! connection past that; writing each chunk at its offset never buffers. Hashing stays in file
//! order: a chunk at the hashed frontier is hashed from memory, and when the frontier reaches
//! data that arrived early (module `early`, bounded), that data is read back from the file.

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::error::{Result, TransferError};
use crate::protocol::{FailCode, FileEntry, FilePlan, SkipRule};

mod batch;
mod beneath;
mod claims;
mod early;
mod kept;
mod links;
mod meta;
mod owner;
mod part;
mod skip;

pub(crate) use batch::syncfs;
pub use batch::{Batch, Published};

pub use beneath::Root;
pub use claims::{FinalNames, NameClaim};
use early::EarlyRanges;
pub use early::ReorderBudget;
pub use links::make_link;
pub use owner::Owner;
use part::{ClosedPart, PartError, PartFile};
pub use skip::link_skip;

/// Read-back granularity when the hashed frontier catches up with early data.
const READ_BACK: usize = 1 << 20;

/// Blocks of zeros this large, at this alignment, are left as holes (the common file system
/// block size).
const SPARSE_BLOCK: u64 = 4096;

/// Bounds on the data of one file that arrived ahead of its in-order frontier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EarlyLimits {
    /// Separate ranges (gaps) held at once.
    pub ranges: usize,
    /// Bytes ahead of the frontier.
    pub bytes: u64,
}

impl EarlyLimits {
    /// Bounds for a receiver whose stream receive window is `window` bytes: 65,536 ranges
    /// (a loss of every other 1200-byte packet over 64 MiB in flight) and 4 windows of bytes
    /// (at least 64 MiB): a sender's data can run at most about one window past a gap.
    pub fn for_window(window: u64) -> Self {
        Self {
            ranges: 1 << 16,
            bytes: window.saturating_mul(4).max(64 << 20),
        }
    }
}

/// Where and for whom a job's files are written: the receive directory, the sender they
/// belong to, and the bounds on data that arrives out of order (per file, and shared by every
/// job of the receiver).
#[derive(Debug, Clone)]
pub struct Target {
    /// The receive directory.
    pub root: Arc<Root>,
    /// The sender the job's part files belong to.
    pub owner: Owner,
    /// Per-file bounds on out-of-order data.
    pub limits: EarlyLimits,
    /// The receiver-wide bounds on out-of-order data.
    pub budget: Arc<ReorderBudget>,
    /// How a job sent over several connections cuts its ranges: a resumed file keeps, and
    /// is offered, the pieces it holds beyond its prefix (module `kept`).
    pub striping: Option<crate::protocol::Striping>,
}

/// What a job does with a file that exists under its final name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Refuse the job (older senders without `--force`).
    Refuse,
    /// Replace it (`--force`).
    Replace,
    /// Skip it when the rule says the receiver has it, else replace it.
    Skip(SkipRule),
}

impl Existing {
    /// The rule of a job: its `skip`, else `force`, else refusal.
    pub fn of_job(skip: Option<SkipRule>, force: bool) -> Self {
        match (skip, force) {
            (Some(r), _) => Self::Skip(r),
            (None, true) => Self::Replace,
            (None, false) => Self::Refuse,
        }
    }
}

/// What planning decided for one file.
#[derive(Debug)]
pub enum Decision {
    /// Receive it (boxed: a plan holds a hash state of 2 KiB).
    Send(Box<Planned>),
    /// The receiver has it already: why (for the sender's report).
    Skip(String),
}

/// A file accepted into a job, before its data channel arrives.
#[derive(Debug)]
pub struct Planned {
    /// The manifest entry.
    pub entry: FileEntry,
    /// Bytes of a partial file kept for resume, and the hash state over them.
    have: u64,
    prefix: Option<blake3::Hasher>,
    /// The kept partial this job took over (resume).
    part: Option<PartFile>,
    /// Pieces of it beyond `have` kept for a job of ranges, with their digests.
    kept: Vec<(u64, u64, String)>,
    force: bool,
    _claim: NameClaim,
}

impl Planned {
    /// What to tell the sender.
    pub fn plan(&self, index: u32) -> FilePlan {
        FilePlan {
            index,
            have: self.have,
            have_blake3: self
                .prefix
                .as_ref()
                .filter(|_| self.have > 0)
                .map(|h| h.finalize().to_hex().to_string()),
            skip: None,
            have_ranges: self
                .kept
                .iter()
                .map(|(s, e, h)| crate::protocol::HaveRange {
                    offset: *s,
                    len: e - s,
                    blake3: h.clone(),
                })
                .collect(),
        }
    }

    /// Bytes still to receive if the sender accepts the resume offer.
    pub fn remaining(&self) -> u64 {
        self.entry.size - self.have
    }
}

/// Check one manifest entry against the receive directory and prepare it, claiming its final
/// name in `names`, or decide that the receiver has it already (`existing`). Every directory
/// on its way must be a real one (a link is refused, whether or not anything exists behind
/// it); with `resume`, only the part file of this job's own sender is looked at. `Err` holds
/// the reason to refuse.
pub fn plan_file(
    target: &Target,
    entry: &FileEntry,
    resume: bool,
    existing: Existing,
    names: &FinalNames,
) -> Result<Decision, String> {
    let parent = match target.root.parent(&entry.name) {
        Ok(p) => Some(p),
        Err(beneath::Walk::Missing) => None,
        Err(w) => return Err(w.reason()),
    };
    if let Some(p) = &parent {
        match p.stat(&p.leaf) {
            Ok(Some(m)) if m.is_dir() => return Err("exists as a directory".into()),
            Ok(Some(m)) => match existing {
                Existing::Refuse => {
                    return Err("exists (the sender may overwrite it with --force)".into())
                }
                Existing::Replace => {}
                Existing::Skip(rule) => {
                    if let Some(why) = skip::reason(rule, entry, &m, p)? {
                        return Ok(Decision::Skip(why));
                    }
                }
            },
            Ok(None) => {}
            Err(e) => return Err(format!("cannot check: {}", os_reason(&e))),
        }
    }
    let claim = names
        .claim(&target.root.path().join(&entry.name))
        .ok_or_else(name_in_use)?;
    let (mut have, mut prefix, mut part, mut kept) = (0, None, None, Vec::new());
    if resume && parent.is_some() {
        let found = PartFile::resume(&target.root, &entry.name, target.owner)
            .map_err(|e| format!("cannot take over the partial file: {}", e.reason()))?;
        if let Some(mut found) = found {
            let len = found.prefix.min(entry.size);
            let mut h = blake3::Hasher::new();
            let n = std::io::copy(&mut found.part.file().take(len), &mut h)
                .map_err(|e| format!("cannot read the partial file: {}", os_reason(&e)))?;
            have = n;
            prefix = Some(h);
            found.part.set_keep(n);
            kept = kept_pieces(target, &found, (n, entry.size))?;
            found
                .part
                .set_ranges(kept.iter().map(|k| (k.0, k.1)).collect());
            part = Some(found.part);
        }
    }
    Ok(Decision::Send(Box::new(Planned {
        entry: entry.clone(),
        have,
        prefix,
        part,
        kept,
        force: existing != Existing::Refuse,
        _claim: claim,
    })))
}

/// The pieces of a found partial a job of ranges need not receive again: cut as the sender
/// cuts its ranges, wholly inside the recorded ranges, each with its digest (read from the partial).
fn kept_pieces(
    target: &Target,
    found: &part::Found,
    (have, size): (u64, u64),
) -> Result<Vec<(u64, u64, String)>, String> {
    let Some(striping) = target.striping else {
        return Ok(Vec::new());
    };
    let len = found.ranges.last().map_or(0, |r| r.1);
    let mut out = Vec::new();
    for (s, e) in kept::pieces(&found.ranges, (have, size, len), &striping) {
        let d = kept::digest(found.part.file(), (s, e))
            .map_err(|e| format!("cannot read the partial file: {}", os_reason(&e)))?;
        out.push((s, e, d));
    }
    Ok(out)
}

/// Why a name another job holds is refused, and when it is free at the latest if that job's
/// sender is gone (killed, cut off): a QUIC connection ends when nothing was heard for its
/// idle timeout, a kernel TCP job when no data came for the stall timeout.
fn name_in_use() -> String {
    format!(
        "being received from another sender right now; if that sender is gone, its job ends \
         within {} s of its last packet ({} s without data over kernel TCP) and the name is \
         free again; try again later",
        crate::quic_config::IDLE_TIMEOUT.as_secs(),
        crate::protocol::STALL_TIMEOUT.as_secs()
    )
}

/// A file error from an I/O error, for `name`.
fn self_err(name: &str, what: &str, e: &std::io::Error) -> TransferError {
    TransferError::File {
        name: name.to_owned(),
        reason: format!("{what}: {}", os_reason(e)),
        code: FailCode::of_io(e),
    }
}

/// An I/O error as a sender may read it: the system's message, no receiver paths.
pub(crate) fn os_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// A file being received.
#[derive(Debug)]
pub struct FileSink {
    name: String,
    size: u64,
    force: bool,
    part: PartFile,
    hasher: blake3::Hasher,
    /// Bytes `[0, hashed)` are written and hashed.
    hashed: u64,
    early: EarlyRanges,
    /// Payload bytes received through this sink (not counting a resumed prefix).
    received: u64,
    /// The temporary file's length as this sink made it.
    len: u64,
    /// Mode and time to give the file once verified.
    meta: meta::Meta,
    /// Sent as ranges (several connections): its early ranges are kept with a partial.
    striped: bool,
    _claim: NameClaim,
}

impl FileSink {
    /// Open this job's own part file for data starting at `offset` (0, or the resume point
    /// the sender accepted).
    pub fn open(target: &Target, planned: Planned, offset: u64) -> Result<Self> {
        let name = planned.entry.name.clone();
        let ferr = |reason: String, code| TransferError::File {
            name: name.clone(),
            reason,
            code,
        };
        let (hasher, start) = match planned.prefix {
            Some(h) if offset == planned.have && offset > 0 => (h, offset),
            _ if offset == 0 => (blake3::Hasher::new(), 0),
            _ => {
                return Err(ferr(
                    format!(
                        "data starts at offset {offset}, but only 0 or {} were offered",
                        planned.have
                    ),
                    FailCode::Other,
                ))
            }
        };
        let part_err = |what: &str, e: PartError| {
            let code = match &e {
                PartError::Walk(beneath::Walk::Link(_) | beneath::Walk::NotDir(_)) => {
                    FailCode::NameRefused
                }
                other => other.io().map_or(FailCode::Other, FailCode::of_io),
            };
            ferr(format!("{what}{}", e.reason()), code)
        };
        // Pieces beyond the prefix stay only with the resume they were offered for.
        let kept: Vec<(u64, u64)> = match offset == planned.have {
            true => planned.kept.iter().map(|k| (k.0, k.1)).collect(),
            false => Vec::new(),
        };
        let mut part = match planned.part {
            Some(p) => {
                // A taken-over partial: only its verified prefix (and kept pieces) stay.
                let end = kept.last().map_or(start, |k| k.1.max(start));
                p.file().set_len(end).map_err(|e| {
                    ferr(
                        format!("cannot truncate: {}", os_reason(&e)),
                        FailCode::of_io(&e),
                    )
                })?;
                p
            }
            None => PartFile::create(&target.root, &name, target.owner).map_err(|e| match e {
                PartError::Walk(_) => part_err("", e),
                e => part_err("cannot create a temporary file: ", e),
            })?,
        };
        part.set_keep(start);
        let mut sink = Self {
            name,
            size: planned.entry.size,
            force: planned.force,
            part,
            hasher,
            hashed: start,
            early: EarlyRanges::with_budget(target.limits, target.budget.clone()),
            received: 0,
            len: start,
            meta: meta::Meta::of(&planned.entry),
            striped: target.striping.is_some(),
            _claim: planned._claim,
        };
        sink.take_kept(&kept)?;
        Ok(sink)
    }

    /// The pieces a resumed file of ranges holds already, as data that came early: hashed
    /// from the disk when the frontier reaches them, like any other.
    fn take_kept(&mut self, kept: &[(u64, u64)]) -> Result<()> {
        for &(s, e) in kept {
            self.early
                .insert(s, e)
                .map_err(|e| self.err(format!("cannot keep what it holds: {e}")))?;
            self.len = self.len.max(e);
        }
        self.catch_up()?;
        self.part.set_keep(self.hashed);
        self.remember_ranges();
        Ok(())
    }

    /// A file of ranges keeps the whole ranges beyond its frontier with its partial.
    fn remember_ranges(&mut self) {
        if self.striped {
            self.part.set_ranges(self.early.list(kept::MAX_KEPT));
        }
    }

    fn err(&self, reason: String) -> TransferError {
        self.err_code(FailCode::Other, reason)
    }

    fn err_code(&self, code: FailCode, reason: String) -> TransferError {
        TransferError::File {
            name: self.name.clone(),
            reason,
            code,
        }
    }

    fn io_err(&self, what: &str, e: &std::io::Error) -> TransferError {
        self_err(&self.name, what, e)
    }

    #[cfg(test)]
    /// Payload bytes received through this sink.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// True when every byte is written and hashed.
    pub fn complete(&self) -> bool {
        self.hashed == self.size
    }

    #[cfg(test)]
    /// Map operations spent on out-of-order bookkeeping so far (a cost that tests can count).
    pub fn reorder_work(&self) -> u64 {
        self.early.work()
    }

    /// Write `data` at file offset `offset`.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|e| *e <= self.size)
            .ok_or_else(|| {
                self.err(format!(
                    "data beyond the announced size of {} bytes (offset {offset} + {})",
                    self.size,
                    data.len()
                ))
            })?;
        if data.is_empty() || end <= self.hashed {
            return Ok(());
        }
        // Bytes below the frontier are hashed already: never written again, so that what is
        // on disk stays what was hashed (a range sent twice, or a sender that lies).
        let (offset, data) = match self.hashed.checked_sub(offset) {
            Some(skip) => (self.hashed, &data[skip as usize..]),
            None => (offset, data),
        };
        self.write_sparse(offset, data)
            .map_err(|e| self.io_err("write failed", &e))?;
        self.received += data.len() as u64;
        if offset == self.hashed {
            self.hasher.update(data);
            self.hashed = end;
            self.catch_up()?;
            self.part.set_keep(self.hashed);
            self.remember_ranges();
            Ok(())
        } else {
            self.early
                .insert(offset, end)
                .map_err(|e| self.err(format!("sender misbehaves: {e}")))?;
            self.remember_ranges();
            Ok(())
        }
    }

    /// Write `data` at `offset`, leaving every all-zero block aligned on [`SPARSE_BLOCK`] as a
    /// hole (as `cp --sparse=auto` and `rsync -S` do): a sparse source arrives sparse, and
    /// reading a hole gives the same zeros. A hole at the end still gets the length.
    fn write_sparse(&mut self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        let end = offset + data.len() as u64;
        let mut at = offset;
        let mut run: Option<u64> = None; // start of the pending run of data blocks
        while at < end {
            let block_end = ((at / SPARSE_BLOCK + 1) * SPARSE_BLOCK).min(end);
            let block = &data[(at - offset) as usize..(block_end - offset) as usize];
            let zero = block_end - at == SPARSE_BLOCK && block.iter().all(|&b| b == 0);
            match (zero, run) {
                (true, Some(r)) => {
                    self.write_run(offset, data, r, at)?;
                    run = None;
                }
                (false, None) => run = Some(at),
                _ => {}
            }
            at = block_end;
        }
        if let Some(r) = run {
            self.write_run(offset, data, r, end)?;
        }
        if end > self.len {
            self.part.file().set_len(end)?;
            self.len = end;
        }
        Ok(())
    }

    fn set_final_len(&mut self) -> std::io::Result<()> {
        if self.len != self.size {
            self.part.file().set_len(self.size)?;
            self.len = self.size;
        }
        Ok(())
    }

    /// Write the part `[from, to)` of `data` (which starts at file offset `offset`).
    fn write_run(&mut self, offset: u64, data: &[u8], from: u64, to: u64) -> std::io::Result<()> {
        let slice = &data[(from - offset) as usize..(to - offset) as usize];
        self.part.file().write_all_at(slice, from)?;
        self.len = self.len.max(to);
        Ok(())
    }

    /// Hash early data the frontier has reached, reading it back from the file.
    fn catch_up(&mut self) -> Result<()> {
        while let Some((_, e)) = self.early.pop_reached(self.hashed) {
            let mut pos = self.hashed;
            let mut buf = vec![0u8; READ_BACK.min((e.saturating_sub(pos)) as usize)];
            while pos < e {
                let n = ((e - pos) as usize).min(buf.len());
                self.part
                    .file()
                    .read_exact_at(&mut buf[..n], pos)
                    .map_err(|err| self.io_err("read-back failed", &err))?;
                self.hasher.update(&buf[..n]);
                pos += n as u64;
            }
            self.hashed = self.hashed.max(e);
        }
        Ok(())
    }

    #[cfg(test)]
    /// Verify against the sender's digest, sync it and move this job's file to the final
    /// name (one file on its own; a job publishes through a [`Batch`] instead).
    pub fn finish(self, expected_hex: &str) -> Result<()> {
        if let Err(e) = self.part.file().sync_all() {
            return Err(self.io_err("cannot sync", &e));
        }
        self.verify(expected_hex)?.publish()
    }

    /// Check the data against the sender's digest and give the file its metadata, still
    /// under its temporary name: what is left is to make it durable and publish it.
    pub fn verify(mut self, expected_hex: &str) -> Result<Verified> {
        if !self.complete() {
            let reason = format!(
                "incomplete: {} of {} bytes in order; partial data kept for --resume",
                self.hashed, self.size
            );
            return Err(self.err(reason));
        }
        let got = self.hasher.finalize().to_hex().to_string();
        if !got.eq_ignore_ascii_case(expected_hex) {
            let e = self.err_code(
                FailCode::DigestMismatch,
                format!(
                    "BLAKE3 mismatch: sender {expected_hex}, received {got}; partial file removed"
                ),
            );
            self.part.discard();
            return Err(e);
        }
        // The length is the sink's to keep (a trailing hole extends it); a mismatch here is
        // a bug, not a sender's doing, but never publish a file of the wrong size.
        if let Err(e) = self.set_final_len() {
            let e = self.io_err("cannot set its length", &e);
            self.part.discard();
            return Err(e);
        }
        if let Err(e) = meta::apply(self.part.file(), &self.meta) {
            let e = self.io_err("cannot set its metadata", &e);
            self.part.discard();
            return Err(e);
        }
        // What is on disk must be what was hashed: the length this sink made.
        match self.part.file().metadata().map(|m| m.len()) {
            Ok(n) if n == self.size => {}
            Ok(n) => {
                let e = self.err(format!(
                    "its temporary file holds {n} bytes, not the {} verified; not stored",
                    self.size
                ));
                self.part.discard();
                return Err(e);
            }
            Err(e) => {
                let e = self.io_err("cannot check its temporary file", &e);
                self.part.discard();
                return Err(e);
            }
        }
        let part = match self.part.close() {
            Ok(p) => p,
            Err(e) => return Err(self_err(&self.name, "cannot close its temporary file", &e)),
        };
        Ok(Verified {
            name: self.name,
            force: self.force,
            part,
            _claim: self._claim,
        })
    }

    /// The transfer stopped: keep the partial file, cut to the bytes known good in order (so a
    /// later `--resume` can continue from there).
    pub fn keep_partial(self) {
        drop(self);
    }

    /// The transfer failed for good: remove the partial file.
    pub fn discard(self) {
        self.part.discard();
    }
}

/// Why a file failed on the receiver: the text for the sender and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The kind, carried in the verdict.
    pub code: FailCode,
    /// The reason, for the sender's user.
    pub text: String,
}

impl Failure {
    /// A failure of kind `code`.
    pub fn new(code: FailCode, text: impl Into<String>) -> Self {
        Self {
            code,
            text: text.into(),
        }
    }
}

impl From<TransferError> for Failure {
    fn from(e: TransferError) -> Self {
        let code = match &e {
            TransferError::File { code, .. } => *code,
            TransferError::Io { cause, .. } => FailCode::of_io(cause),
            _ => FailCode::Other,
        };
        Self::new(code, e.to_string())
    }
}

/// A file whose data matched the sender's digest, waiting under its temporary name to be
/// made durable and published. Dropped, it keeps its data for `--resume`.
#[derive(Debug)]
pub struct Verified {
    name: String,
    force: bool,
    part: ClosedPart,
    _claim: NameClaim,
}

impl Verified {
    /// The file's name in the job.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Move it to its final name. Durability is the caller's: [`Batch`] syncs the file system
    /// before (the data) and after (the names).
    pub fn publish(self) -> Result<()> {
        let name = self.name.clone();
        let ferr = |reason: String, code| TransferError::File { name, reason, code };
        match self.part.publish(self.force) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(ferr(
                "appeared under the final name during the transfer; not overwritten \
                 (the sender may overwrite it with --force)"
                    .into(),
                FailCode::Exists,
            )),
            Err(e) => Err(ferr(
                format!("cannot store the file: {}", os_reason(&e)),
                FailCode::of_io(&e),
            )),
        }
    }

    /// Remove the temporary file.
    pub fn discard(mut self) {
        self.part.discard();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: EarlyLimits = EarlyLimits {
        ranges: 1 << 16,
        bytes: 1 << 30,
    };

    /// The test sender's owner.
    pub(crate) const OWNER: Owner = Owner::for_tests(0x5e);

    /// A target for files under `dir`, with the default bounds.
    pub(crate) fn target(dir: &std::path::Path) -> Target {
        target_with(dir, LIMITS)
    }

    fn target_with(dir: &std::path::Path, limits: EarlyLimits) -> Target {
        Target {
            root: Arc::new(Root::open(dir).expect("root")),
            owner: OWNER,
            limits,
            budget: Arc::new(ReorderBudget::default()),
            striping: None,
        }
    }

    fn plan_file(
        t: &Target,
        e: &FileEntry,
        resume: bool,
        existing: Existing,
        names: &FinalNames,
    ) -> Result<Planned, String> {
        match super::plan_file(t, e, resume, existing, names)? {
            Decision::Send(p) => Ok(*p),
            Decision::Skip(why) => Err(why),
        }
    }

    /// A plan for `e` under `dir`, from 0, refusing an existing file.
    fn fresh_plan(dir: &std::path::Path, e: &FileEntry) -> Planned {
        plan_file(
            &target(dir),
            e,
            false,
            Existing::Refuse,
            &FinalNames::default(),
        )
        .expect("plan")
    }

    fn part_of(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
        dir.join(crate::names::part_name(name, OWNER.tag()))
    }

    fn entry(name: &str, size: u64) -> FileEntry {
        FileEntry::new(name, size)
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn bytes_below_the_frontier_are_never_written_again() {
        let d = tempfile::tempdir().expect("tempdir");
        let bytes = data(10_000);
        let e = entry("f.bin", bytes.len() as u64);
        let p = fresh_plan(d.path(), &e);
        let mut s = FileSink::open(&target(d.path()), p, 0).expect("open");
        s.write(0, &bytes[..6000]).expect("write");
        // The same range again with other bytes (a range sent twice, or a lie), reaching
        // past the frontier: only its new part is taken.
        let mut other = bytes[4000..8000].to_vec();
        other[..2000].fill(0xEE);
        s.write(4000, &other).expect("overlap");
        s.write(8000, &bytes[8000..]).expect("rest");
        let digest = blake3::hash(&bytes).to_hex().to_string();
        s.finish(&digest).expect("verified");
        assert_eq!(std::fs::read(d.path().join("f.bin")).expect("read"), bytes);
    }

    #[test]
    fn unordered_writes_hash_in_order_and_rename() {
        let d = tempfile::tempdir().expect("tempdir");
        let bytes = data(3 * READ_BACK + 123);
        let e = entry("sub/f.bin", bytes.len() as u64);
        let p = fresh_plan(d.path(), &e);
        let mut s = FileSink::open(&target(d.path()), p, 0).expect("open");
        // Chunks out of order, with an overlap.
        let cuts = [0, 1000, 5000, READ_BACK + 7, 2 * READ_BACK, bytes.len()];
        let order = [3, 1, 4, 0, 2];
        for &i in &order {
            let (a, b) = (cuts[i], cuts[i + 1]);
            s.write(a as u64, &bytes[a..b]).expect("write");
        }
        s.write(900, &bytes[900..1100]).expect("overlap");
        assert!(s.complete());
        let digest = blake3::hash(&bytes).to_hex().to_string();
        s.finish(&digest).expect("verified");
        assert_eq!(
            std::fs::read(d.path().join("sub/f.bin")).expect("read"),
            bytes
        );
        assert_eq!(
            std::fs::read_dir(d.path().join("sub"))
                .expect("dir")
                .count(),
            1
        );
    }

    #[test]
    fn wrong_digest_leaves_no_final_file() {
        let d = tempfile::tempdir().expect("tempdir");
        let e = entry("f", 10);
        let p = fresh_plan(d.path(), &e);
        let mut s = FileSink::open(&target(d.path()), p, 0).expect("open");
        s.write(0, &[1; 10]).expect("write");
        let bad = blake3::hash(&[2; 10]).to_hex().to_string();
        assert!(s.finish(&bad).is_err());
        assert!(!d.path().join("f").exists());
        assert!(!part_of(d.path(), "f").exists());
    }

    #[test]
    fn data_beyond_size_is_refused() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = plan_file(
            &target(d.path()),
            &entry("f", 4),
            false,
            Existing::Refuse,
            &FinalNames::default(),
        )
        .expect("plan");
        let mut s = FileSink::open(&target(d.path()), p, 0).expect("open");
        assert!(s.write(2, &[0; 3]).is_err());
        assert!(s.write(u64::MAX, &[0; 3]).is_err());
    }

    #[test]
    fn existing_file_needs_force() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(d.path().join("f"), b"old").expect("write");
        let (t, names) = (target(d.path()), FinalNames::default());
        let plan = |name, existing| plan_file(&t, &entry(name, 3), false, existing, &names);
        assert!(plan("f", Existing::Refuse).is_err());
        assert!(plan("f", Existing::Replace).is_ok());
        assert!(plan("../f", Existing::Replace).is_err());
    }

    #[test]
    fn resume_continues_after_the_kept_prefix() {
        let d = tempfile::tempdir().expect("tempdir");
        let bytes = data(10_000);
        let e = entry("f", bytes.len() as u64);
        let p = fresh_plan(d.path(), &e);
        let mut s = FileSink::open(&target(d.path()), p, 0).expect("open");
        s.write(0, &bytes[..4000]).expect("write");
        s.write(6000, &bytes[6000..7000]).expect("early chunk");
        s.keep_partial(); // interrupted: cut to the in-order 4000 bytes
        let p = plan_file(
            &target(d.path()),
            &e,
            true,
            Existing::Refuse,
            &FinalNames::default(),
        )
        .expect("plan resume");
        let plan = p.plan(0);
        assert_eq!(plan.have, 4000);
        assert_eq!(
            plan.have_blake3,
            Some(blake3::hash(&bytes[..4000]).to_hex().to_string())
        );
        assert_eq!(p.remaining(), 6000);
        let mut s = FileSink::open(&target(d.path()), p, 4000).expect("open at 4000");
        s.write(4000, &bytes[4000..]).expect("rest");
        assert_eq!(s.received(), 6000);
        s.finish(blake3::hash(&bytes).to_hex().as_str())
            .expect("verified");
        assert_eq!(std::fs::read(d.path().join("f")).expect("read"), bytes);
    }

    #[test]
    fn a_claimed_name_is_refused_to_a_second_job() {
        let d = tempfile::tempdir().expect("tempdir");
        let (t, names) = (target(d.path()), FinalNames::default());
        let plan = || plan_file(&t, &entry("f", 3), false, Existing::Replace, &names);
        let a = plan().expect("a");
        assert!(plan().is_err_and(|r| r.contains("another sender")));
        drop(a);
        assert!(plan().is_ok());
    }

    #[test]
    fn gapped_one_byte_writes_cost_a_bounded_number_of_map_operations() {
        let d = tempfile::tempdir().expect("tempdir");
        let n = 20_000u64;
        let bytes = data(2 * n as usize);
        let e = entry("g", 2 * n);
        let p = fresh_plan(d.path(), &e);
        let mut s = FileSink::open(&target(d.path()), p, 0).expect("open");
        for i in 0..n {
            let at = (2 * i + 1) as usize;
            s.write(at as u64, &bytes[at..at + 1]).expect("odd byte");
        }
        for i in (0..n).rev() {
            let at = (2 * i) as usize;
            s.write(at as u64, &bytes[at..at + 1]).expect("even byte");
        }
        assert!(s.complete());
        assert!(s.reorder_work() <= 8 * 2 * n, "work {}", s.reorder_work());
        s.finish(blake3::hash(&bytes).to_hex().as_str())
            .expect("verified");
    }

    #[test]
    fn too_many_gaps_fail_the_file() {
        let d = tempfile::tempdir().expect("tempdir");
        let e = entry("g", 1000);
        let p = fresh_plan(d.path(), &e);
        let limits = EarlyLimits {
            ranges: 10,
            bytes: 1 << 20,
        };
        let mut s = FileSink::open(&target_with(d.path(), limits), p, 0).expect("open");
        for i in 0..10 {
            s.write(2 * i + 1, &[0]).expect("within the bound");
        }
        let e = s.write(100, &[0]).expect_err("beyond the bound");
        assert!(e.to_string().contains("out-of-order ranges"), "{e}");
    }

    #[test]
    fn planted_symlink_resume_file_is_not_followed() {
        let d = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::NamedTempFile::new().expect("tmp");
        std::fs::write(outside.path(), b"outside").expect("w");
        std::os::unix::fs::symlink(outside.path(), part_of(d.path(), "f")).expect("ln");
        let names = FinalNames::default();
        let p = plan_file(
            &target(d.path()),
            &entry("f", 3),
            true,
            Existing::Refuse,
            &names,
        )
        .expect("plan");
        assert_eq!(p.plan(0).have, 0, "a symlink is not a partial file");
        let mut s = FileSink::open(&target(d.path()), p, 0).expect("open");
        s.write(0, b"abc").expect("write");
        s.finish(blake3::hash(b"abc").to_hex().as_str())
            .expect("verified");
        assert_eq!(std::fs::read(outside.path()).expect("r"), b"outside");
        assert_eq!(std::fs::read(d.path().join("f")).expect("r"), b"abc");
    }
}
