//! The receiving side of one file: planned before the job is accepted, written at the offsets
//! the data arrives at (unordered), hashed with BLAKE3 in file order, verified, and renamed to
//! its final name only once the digest matches.
//!
//! Why unordered: quinn's ordered reassembly keeps at most 1024 gaps per stream and kills the
//! connection past that (PLATFORM-FACTS); writing each chunk at its offset never buffers.
//! Hashing stays in file order: a chunk at the hashed frontier is hashed from memory, and when
//! the frontier reaches data that arrived early, that data is read back from the file.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Result, TransferError};
use crate::names;
use crate::protocol::{FileEntry, FilePlan};

/// Read-back granularity when the hashed frontier catches up with early data.
const READ_BACK: usize = 1 << 20;

/// A file accepted into a job, before its data channel arrives.
#[derive(Debug)]
pub struct Planned {
    /// The manifest entry.
    pub entry: FileEntry,
    /// Where it ends up.
    pub final_path: PathBuf,
    /// Where it is written until verified.
    pub part_path: PathBuf,
    /// Bytes of a partial file kept for resume, and the hash state over them.
    have: u64,
    prefix: Option<blake3::Hasher>,
    force: bool,
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
        }
    }

    /// Bytes still to receive if the sender accepts the resume offer.
    pub fn remaining(&self) -> u64 {
        self.entry.size - self.have
    }
}

/// Check one manifest entry against `dir` and prepare it. `Err` holds the reason to refuse.
pub fn plan_file(
    dir: &Path,
    entry: &FileEntry,
    resume: bool,
    force: bool,
) -> Result<Planned, String> {
    let final_path = names::final_path(dir, &entry.name)?;
    let part_path = names::part_path(&final_path);
    match std::fs::symlink_metadata(&final_path) {
        Ok(m) if m.is_dir() => return Err("exists as a directory".into()),
        Ok(_) if !force => return Err("exists (the sender may overwrite it with --force)".into()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot check: {e}")),
    }
    let mut have = 0;
    let mut prefix = None;
    if resume {
        if let Ok(m) = std::fs::symlink_metadata(&part_path) {
            if m.is_file() && m.len() > 0 {
                let len = m.len().min(entry.size);
                let mut h = blake3::Hasher::new();
                let f = File::open(&part_path)
                    .map_err(|e| format!("cannot read the partial file: {e}"))?;
                let n = std::io::copy(&mut f.take(len), &mut h)
                    .map_err(|e| format!("cannot read the partial file: {e}"))?;
                have = n;
                prefix = Some(h);
            }
        }
    }
    Ok(Planned {
        entry: entry.clone(),
        final_path,
        part_path,
        have,
        prefix,
        force,
    })
}

/// A file being received.
#[derive(Debug)]
pub struct FileSink {
    name: String,
    size: u64,
    final_path: PathBuf,
    part_path: PathBuf,
    force: bool,
    file: File,
    hasher: blake3::Hasher,
    /// Bytes `[0, hashed)` are written and hashed.
    hashed: u64,
    /// Written ranges beyond the frontier: start -> end (disjoint, not touching).
    early: BTreeMap<u64, u64>,
    /// Payload bytes received through this sink (not counting a resumed prefix).
    received: u64,
}

impl FileSink {
    /// Open the partial file for data starting at `offset` (0, or the resume point the sender
    /// accepted).
    pub fn open(dir: &Path, planned: Planned, offset: u64) -> Result<Self> {
        let name = planned.entry.name.clone();
        let ferr = |reason: String| TransferError::File {
            name: name.clone(),
            reason,
        };
        let (hasher, start) = match planned.prefix {
            Some(h) if offset == planned.have && offset > 0 => (h, offset),
            _ if offset == 0 => (blake3::Hasher::new(), 0),
            _ => {
                return Err(ferr(format!(
                    "data starts at offset {offset}, but only 0 or {} were offered",
                    planned.have
                )))
            }
        };
        names::safe_create_parents(dir, &name)?;
        // O_NOFOLLOW: a symbolic link planted under the temporary name is refused, not
        // followed out of the directory.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o644)
            .open(&planned.part_path)
            .map_err(|e| ferr(format!("cannot open {}: {e}", planned.part_path.display())))?;
        file.set_len(start).map_err(|e| {
            ferr(format!(
                "cannot truncate {}: {e}",
                planned.part_path.display()
            ))
        })?;
        Ok(Self {
            name,
            size: planned.entry.size,
            final_path: planned.final_path,
            part_path: planned.part_path,
            force: planned.force,
            file,
            hasher,
            hashed: start,
            early: BTreeMap::new(),
            received: 0,
        })
    }

    /// The file's name in the job.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Payload bytes received through this sink.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// True when every byte is written and hashed.
    pub fn complete(&self) -> bool {
        self.hashed == self.size
    }

    /// Write `data` at file offset `offset`.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|e| *e <= self.size)
            .ok_or_else(|| TransferError::File {
                name: self.name.clone(),
                reason: format!(
                    "data beyond the announced size of {} bytes (offset {offset} + {})",
                    self.size,
                    data.len()
                ),
            })?;
        if data.is_empty() {
            return Ok(());
        }
        self.file
            .write_all_at(data, offset)
            .map_err(|e| TransferError::io(format!("writing {}", self.part_path.display()), e))?;
        self.received += data.len() as u64;
        if offset <= self.hashed {
            if end > self.hashed {
                let skip = (self.hashed - offset) as usize;
                self.hasher.update(&data[skip..]);
                self.hashed = end;
            }
            self.catch_up()
        } else {
            self.add_early(offset, end);
            Ok(())
        }
    }

    fn add_early(&mut self, mut start: u64, mut end: u64) {
        // Merge with every range that overlaps or touches [start, end).
        let touching: Vec<(u64, u64)> = self
            .early
            .range(..=end)
            .filter(|(_, e)| **e >= start)
            .map(|(s, e)| (*s, *e))
            .collect();
        for (s, e) in touching {
            self.early.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        self.early.insert(start, end);
    }

    /// Hash early data the frontier has reached, reading it back from the file.
    fn catch_up(&mut self) -> Result<()> {
        while let Some((&s, &e)) = self.early.iter().next() {
            if s > self.hashed {
                break;
            }
            self.early.remove(&s);
            let mut pos = self.hashed;
            let mut buf = vec![0u8; READ_BACK.min((e.saturating_sub(pos)) as usize)];
            while pos < e {
                let n = ((e - pos) as usize).min(buf.len());
                self.file.read_exact_at(&mut buf[..n], pos).map_err(|err| {
                    TransferError::io(format!("reading back {}", self.part_path.display()), err)
                })?;
                self.hasher.update(&buf[..n]);
                pos += n as u64;
            }
            self.hashed = self.hashed.max(e);
        }
        Ok(())
    }

    /// Verify against the sender's digest and rename to the final name.
    pub fn finish(self, expected_hex: &str) -> Result<()> {
        let ferr = |reason: String| TransferError::File {
            name: self.name.clone(),
            reason,
        };
        if !self.complete() {
            let reason = format!(
                "incomplete: {} of {} bytes in order",
                self.hashed, self.size
            );
            self.keep_partial();
            return Err(ferr(reason));
        }
        let got = self.hasher.finalize().to_hex().to_string();
        if !got.eq_ignore_ascii_case(expected_hex) {
            let _ = std::fs::remove_file(&self.part_path);
            return Err(ferr(format!(
                "BLAKE3 mismatch: sender {expected_hex}, received {got}; partial file removed"
            )));
        }
        self.file
            .sync_all()
            .map_err(|e| TransferError::io(format!("syncing {}", self.part_path.display()), e))?;
        if !self.force && std::fs::symlink_metadata(&self.final_path).is_ok() {
            let _ = std::fs::remove_file(&self.part_path);
            return Err(ferr(
                "appeared under the final name during the transfer; not overwritten".into(),
            ));
        }
        std::fs::rename(&self.part_path, &self.final_path).map_err(|e| {
            TransferError::io(
                format!(
                    "renaming {} to {}",
                    self.part_path.display(),
                    self.final_path.display()
                ),
                e,
            )
        })
    }

    /// The transfer stopped: keep the partial file, cut to the bytes known good in order (so a
    /// later `--resume` can continue from there).
    pub fn keep_partial(&self) {
        let _ = self.file.set_len(self.hashed);
    }

    /// The transfer failed for good: remove the partial file.
    pub fn discard(self) {
        let _ = std::fs::remove_file(&self.part_path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, size: u64) -> FileEntry {
        FileEntry {
            name: name.into(),
            size,
        }
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn unordered_writes_hash_in_order_and_rename() {
        let d = tempfile::tempdir().expect("tempdir");
        let bytes = data(3 * READ_BACK + 123);
        let e = entry("sub/f.bin", bytes.len() as u64);
        let p = plan_file(d.path(), &e, false, false).expect("plan");
        let mut s = FileSink::open(d.path(), p, 0).expect("open");
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
        assert!(!d.path().join("sub/.f.bin.hare-part").exists());
    }

    #[test]
    fn wrong_digest_leaves_no_final_file() {
        let d = tempfile::tempdir().expect("tempdir");
        let e = entry("f", 10);
        let p = plan_file(d.path(), &e, false, false).expect("plan");
        let mut s = FileSink::open(d.path(), p, 0).expect("open");
        s.write(0, &[1; 10]).expect("write");
        let bad = blake3::hash(&[2; 10]).to_hex().to_string();
        assert!(s.finish(&bad).is_err());
        assert!(!d.path().join("f").exists());
        assert!(!d.path().join(".f.hare-part").exists());
    }

    #[test]
    fn data_beyond_size_is_refused() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = plan_file(d.path(), &entry("f", 4), false, false).expect("plan");
        let mut s = FileSink::open(d.path(), p, 0).expect("open");
        assert!(s.write(2, &[0; 3]).is_err());
        assert!(s.write(u64::MAX, &[0; 3]).is_err());
    }

    #[test]
    fn existing_file_needs_force() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(d.path().join("f"), b"old").expect("write");
        assert!(plan_file(d.path(), &entry("f", 3), false, false).is_err());
        assert!(plan_file(d.path(), &entry("f", 3), false, true).is_ok());
        assert!(plan_file(d.path(), &entry("../f", 3), false, true).is_err());
    }

    #[test]
    fn resume_continues_after_the_kept_prefix() {
        let d = tempfile::tempdir().expect("tempdir");
        let bytes = data(10_000);
        let e = entry("f", bytes.len() as u64);
        let p = plan_file(d.path(), &e, false, false).expect("plan");
        let mut s = FileSink::open(d.path(), p, 0).expect("open");
        s.write(0, &bytes[..4000]).expect("write");
        s.write(6000, &bytes[6000..7000]).expect("early chunk");
        s.keep_partial(); // interrupted: cut to the in-order 4000 bytes
        drop(s);
        let p = plan_file(d.path(), &e, true, false).expect("plan resume");
        let plan = p.plan(0);
        assert_eq!(plan.have, 4000);
        assert_eq!(
            plan.have_blake3,
            Some(blake3::hash(&bytes[..4000]).to_hex().to_string())
        );
        assert_eq!(p.remaining(), 6000);
        let mut s = FileSink::open(d.path(), p, 4000).expect("open at 4000");
        s.write(4000, &bytes[4000..]).expect("rest");
        assert_eq!(s.received(), 6000);
        s.finish(blake3::hash(&bytes).to_hex().as_str())
            .expect("verified");
        assert_eq!(std::fs::read(d.path().join("f")).expect("read"), bytes);
    }

    #[test]
    fn planted_symlink_part_file_is_not_followed() {
        let d = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::NamedTempFile::new().expect("tmp");
        std::os::unix::fs::symlink(outside.path(), d.path().join(".f.hare-part")).expect("ln");
        let p = plan_file(d.path(), &entry("f", 3), false, false).expect("plan");
        assert!(FileSink::open(d.path(), p, 0).is_err());
    }
}
