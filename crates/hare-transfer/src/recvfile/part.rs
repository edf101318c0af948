//! The file a job writes one of its files to: `.NAME.<owner>.hare-part` beside the final name
//! ([`names::part_name`]), the job's temporary file while the job runs and the partial kept
//! for the same sender's `--resume` after it.
//!
//! Why this stores only what the digest covers ("verified" means the bytes on disk):
//! - No other job can reach the file. No name a client can send resolves to it (the suffix is
//!   refused), and the owner tag makes every (name, sender) pair a file of its own. Within
//!   this receiver the job also holds the final name's claim (`claims`), so no second job of
//!   the same name and sender runs at once; across receiver processes sharing a directory,
//!   the job holds an exclusive `flock(2)` on the open file, which every job takes before it
//!   writes or reads a part file and which the kernel releases when a process dies (so the
//!   partial of a receiver killed with -9 is free to be resumed).
//! - Every operation on it goes through its directory's descriptor, reached beneath the
//!   receive directory without passing a link (`beneath`), and never follows a link itself.
//! - A verified file waits for its durability batch with its descriptor closed. When it is
//!   closed, its device, inode, size and change time are recorded; the rename that publishes
//!   it happens only if the part name still shows exactly that (any write, truncation,
//!   `chmod` or rename by anyone changes the change time), else the file is not stored and
//!   the sender is told.
//!
//! The verified in-order prefix is recorded in the file's extended attribute
//! `user.hare.prefix` (decimal bytes) as the job advances (every [`RECORD_STEP`]) and when it
//! stops, so a partial left by a receiver that died is resumed from a prefix known to be
//! written. File systems without user extended attributes keep the file cut to its prefix
//! when a job stops cleanly; after a crash there, the length is offered, and the sender's
//! comparison of digests decides (a mismatch sends the file from its start).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use super::beneath::{fstat, Parent, Root, Walk};
use super::owner::Owner;
use crate::names;

/// The extended attribute that holds the verified in-order prefix.
const PREFIX_ATTR: &std::ffi::CStr = c"user.hare.prefix";
/// Record the prefix again once it has advanced this far since the last record.
pub(crate) const RECORD_STEP: u64 = 8 << 20;
/// Attempts at opening a part file that keeps being replaced underneath.
const OPEN_TRIES: usize = 4;

/// Why a part file could not be had.
#[derive(Debug)]
pub(crate) enum PartError {
    /// Its directory could not be reached (a link, not a directory, missing).
    Walk(Walk),
    /// Another receiver process holds it: a job of the same name and sender runs there.
    Busy,
    /// The file system said no.
    Io(io::Error),
}

impl PartError {
    /// The reason, for the sender.
    pub(crate) fn reason(&self) -> String {
        match self {
            Self::Walk(w) => w.reason(),
            Self::Busy => "being received from this sender right now (by another job of this \
                           receiver's directory); try again later"
                .into(),
            Self::Io(e) => super::os_reason(e),
        }
    }

    /// The I/O error behind it, for the failure code.
    pub(crate) fn io(&self) -> Option<&io::Error> {
        match self {
            Self::Io(e) | Self::Walk(Walk::Io(e)) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for PartError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// A job's part file, open and locked. Dropped unsettled, it keeps its first
/// [`PartFile::set_keep`] bytes for `--resume`, or removes itself when that is 0.
#[derive(Debug)]
pub(crate) struct PartFile {
    file: File,
    root: Arc<Root>,
    /// The job name, walked again to reach the directory for later steps.
    name: String,
    /// The part file's name in that directory.
    part: String,
    identity: (u64, u64),
    keep: u64,
    /// Whole ranges beyond `keep` kept with it (a job over several connections).
    ranges: Vec<(u64, u64)>,
    /// Bytes of `ranges` when they were last recorded.
    ranges_recorded: u64,
    /// The prefix last recorded in the attribute (`None`: the file system has none).
    recorded: Option<u64>,
    settled: bool,
}

/// What was found under a part name for `--resume`.
#[derive(Debug)]
pub(crate) struct Found {
    /// The file, open and locked for this job.
    pub(crate) part: PartFile,
    /// Bytes of it known to be written in order.
    pub(crate) prefix: u64,
    /// Ranges beyond the prefix recorded as written (module `kept`), within the file.
    pub(crate) ranges: Vec<(u64, u64)>,
}

impl PartFile {
    /// The kept partial of `name` for `owner`, taken for this job's `--resume`; `Ok(None)`
    /// when there is none (nor any directory on its way).
    pub(crate) fn resume(
        root: &Arc<Root>,
        name: &str,
        owner: Owner,
    ) -> Result<Option<Found>, PartError> {
        let parent = match root.parent(name) {
            Ok(p) => p,
            Err(Walk::Missing) => return Ok(None),
            Err(w) => return Err(PartError::Walk(w)),
        };
        let part = names::part_name(&parent.leaf, owner.tag());
        if parent.stat(&part)?.is_none() {
            return Ok(None);
        }
        let Some(p) = Self::take(root, name, &parent, part, false)? else {
            return Ok(None);
        };
        let len = fstat(&p.file)?.size;
        let prefix = read_prefix(&p.file).map_or(len, |r| r.min(len));
        let ranges = super::kept::read(&p.file)
            .into_iter()
            .filter_map(|(s, e)| {
                let (s, e) = (s.max(prefix), e.min(len));
                (s < e).then_some((s, e))
            })
            .collect();
        Ok(Some(Found {
            part: p,
            prefix,
            ranges,
        }))
    }

    /// The part file of `name` for `owner`, emptied, for a transfer from offset 0 (its
    /// directories are made on the way).
    pub(crate) fn create(root: &Arc<Root>, name: &str, owner: Owner) -> Result<Self, PartError> {
        let parent = root.parent_create(name).map_err(PartError::Walk)?;
        let part = names::part_name(&parent.leaf, owner.tag());
        Self::take(root, name, &parent, part, true)?
            .ok_or_else(|| PartError::Io(io::Error::other("the part file vanished while opened")))
    }

    /// Open (or with `create`, make) `part` in `parent`, lock it and check that the name
    /// still shows the locked inode; `create` also empties it.
    fn take(
        root: &Arc<Root>,
        name: &str,
        parent: &Parent,
        part: String,
        create: bool,
    ) -> Result<Option<Self>, PartError> {
        let flags = libc::O_RDWR | libc::O_NONBLOCK | if create { libc::O_CREAT } else { 0 };
        for _ in 0..OPEN_TRIES {
            let file = match parent.open(&part, flags, 0o600) {
                Ok(f) => f,
                Err(e) if !create && e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
                // Something else under the name (a link, a directory: not the receiver's
                // doing). A link or a file is removed, never followed or reused.
                Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                    parent.unlink(&part)?;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let m = fstat(&file)?;
            if !m.is_file() || m.nlink != 1 {
                // A hard link's other name could be outside the directory: never written.
                drop(file);
                parent.unlink(&part)?;
                if create {
                    continue;
                }
                return Ok(None);
            }
            if !lock(&file)? {
                return Err(PartError::Busy);
            }
            // Locked: but the name may have been replaced between open and lock.
            if parent.stat(&part)?.map(|e| (e.dev, e.ino)) != Some((m.dev, m.ino)) {
                continue;
            }
            let mut p = Self {
                file,
                root: root.clone(),
                name: name.to_owned(),
                part,
                identity: (m.dev, m.ino),
                keep: 0,
                ranges: Vec::new(),
                ranges_recorded: 0,
                recorded: Some(0),
                settled: false,
            };
            if create {
                p.file.set_len(0)?;
                p.record(0);
                super::kept::record(&p.file, &[]);
            }
            return Ok(Some(p));
        }
        Err(PartError::Io(io::Error::other(
            "the part file kept being replaced while it was opened",
        )))
    }

    /// The open file.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Bytes `[0, bytes)` are written and verified in order: kept for `--resume` if this
    /// file is dropped unsettled, and recorded every [`RECORD_STEP`] for a receiver that dies.
    pub(crate) fn set_keep(&mut self, bytes: u64) {
        self.keep = bytes;
        if let Some(r) = self.recorded {
            if bytes < r || bytes - r >= RECORD_STEP {
                self.record(bytes);
            }
        }
    }

    /// Whole ranges beyond the prefix to keep with it (a job over several connections),
    /// recorded again once they grew by [`RECORD_STEP`], for a receiver that dies.
    pub(crate) fn set_ranges(&mut self, ranges: Vec<(u64, u64)>) {
        let bytes: u64 = ranges.iter().map(|(s, e)| e - s).sum();
        self.ranges = ranges;
        if self.recorded.is_some() && bytes.abs_diff(self.ranges_recorded) >= RECORD_STEP {
            super::kept::record(&self.file, &self.ranges);
            self.ranges_recorded = bytes;
        }
    }

    /// Write the prefix attribute (a file system without user attributes stops the records).
    fn record(&mut self, bytes: u64) {
        let v = bytes.to_string();
        // SAFETY: the descriptor is open; name and value are valid for the call's duration.
        let r = unsafe {
            libc::fsetxattr(
                self.file.as_raw_fd(),
                PREFIX_ATTR.as_ptr(),
                v.as_ptr().cast(),
                v.len(),
                0,
            )
        };
        self.recorded = (r == 0).then_some(bytes);
    }

    /// The directory holding the part file, reached again beneath the root.
    fn parent(&self) -> io::Result<Parent> {
        self.root
            .parent(&self.name)
            .map_err(|w| io::Error::other(w.reason()))
    }

    /// True when the part name still names the inode this job holds open.
    fn still_ours(&self) -> bool {
        self.parent()
            .and_then(|p| p.stat(&self.part))
            .is_ok_and(|e| e.is_some_and(|e| (e.dev, e.ino) == self.identity))
    }

    /// Close the descriptor of a verified, complete file, recording its state: a verified
    /// file waiting for its batch holds no descriptor, and is published only if nothing
    /// changed it meanwhile.
    pub(crate) fn close(mut self) -> io::Result<ClosedPart> {
        let len = fstat(&self.file)?.size;
        self.record(len);
        super::kept::record(&self.file, &[]);
        let stamp = fstat(&self.file)?.stamp();
        self.settled = true;
        Ok(ClosedPart {
            root: self.root.clone(),
            name: std::mem::take(&mut self.name),
            part: std::mem::take(&mut self.part),
            stamp,
            settled: false,
        })
    }

    /// Remove the part file.
    pub(crate) fn discard(mut self) {
        self.keep = 0;
        self.ranges.clear();
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if self.settled || !self.still_ours() {
            return;
        }
        let end = self
            .ranges
            .last()
            .map_or(self.keep, |&(_, e)| e.max(self.keep));
        if end > 0 && self.file.set_len(end).is_ok() {
            // It stays where it is, as the partial for this sender's --resume.
            self.record(self.keep);
            super::kept::record(&self.file, &self.ranges);
            return;
        }
        if let Ok(p) = self.parent() {
            let _ = p.unlink(&self.part);
        }
    }
}

/// Try an exclusive, non-blocking `flock(2)`: `false` when another open file holds it.
fn lock(f: &File) -> io::Result<bool> {
    // SAFETY: the descriptor is open for the duration of the call.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EWOULDBLOCK) => Ok(false),
        _ => Err(e),
    }
}

/// The recorded prefix, if the file has one.
fn read_prefix(f: &File) -> Option<u64> {
    let mut buf = [0u8; 24];
    // SAFETY: the descriptor is open and `buf` valid and writable for its length.
    let n = unsafe {
        libc::fgetxattr(
            f.as_raw_fd(),
            PREFIX_ATTR.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let n = usize::try_from(n).ok()?;
    std::str::from_utf8(buf.get(..n)?).ok()?.parse().ok()
}

/// A complete, verified part file whose descriptor is closed. Dropped unsettled, it stays
/// whole for `--resume`.
#[derive(Debug)]
pub(crate) struct ClosedPart {
    root: Arc<Root>,
    name: String,
    part: String,
    /// Device, inode, size and change time when it was closed.
    stamp: (u64, u64, u64, (i64, i64)),
    settled: bool,
}

impl ClosedPart {
    /// The directory, and whether the part name still shows the file as it was closed.
    fn unchanged(&self) -> io::Result<(Parent, bool)> {
        let p = self
            .root
            .parent(&self.name)
            .map_err(|w| io::Error::other(w.reason()))?;
        let same = p.stat(&self.part)?.is_some_and(|e| e.stamp() == self.stamp);
        Ok((p, same))
    }

    /// Move this file (only if it is still exactly as verified) to its final name; the
    /// caller made it durable first. Without `replace`, an existing final name is never
    /// overwritten (`Err` of kind `AlreadyExists`). On error the part file is removed.
    pub(crate) fn publish(mut self, replace: bool) -> io::Result<()> {
        let (parent, same) = self.unchanged()?;
        if !same {
            self.settled = true;
            return Err(io::Error::other(
                "its temporary file was changed or replaced after it was verified; not stored",
            ));
        }
        if let Err(e) = parent.rename(&self.part, &parent.leaf, replace) {
            self.discard();
            return Err(e);
        }
        self.settled = true;
        Ok(())
    }

    /// Remove the part file (only the one this job closed).
    pub(crate) fn discard(&mut self) {
        if !self.settled {
            if let Ok((p, true)) = self.unchanged() {
                let _ = p.unlink(&self.part);
            }
        }
        self.settled = true;
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::path::Path;

    use super::*;

    fn root(d: &Path) -> Arc<Root> {
        Arc::new(Root::open(d).expect("root"))
    }

    const A: Owner = Owner::for_tests(0xa);

    #[test]
    fn one_part_file_per_name_and_sender_locked_by_its_job() {
        let d = tempfile::tempdir().expect("tempdir");
        let r = root(d.path());
        let a = PartFile::create(&r, "f", A).expect("a");
        assert!(matches!(PartFile::create(&r, "f", A), Err(PartError::Busy)));
        let b = PartFile::create(&r, "f", Owner::for_tests(0xb)).expect("another sender's");
        (&a.file).write_all(b"aaaa").expect("write");
        (&b.file).write_all(b"bb").expect("write");
        a.close()
            .expect("close")
            .publish(false)
            .expect("first publishes");
        let e = b
            .close()
            .expect("close")
            .publish(false)
            .expect_err("second may not replace");
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(d.path().join("f")).expect("read"), b"aaaa");
        // Nothing left behind: the loser removed its own file.
        assert_eq!(std::fs::read_dir(d.path()).expect("dir").count(), 1);
    }

    #[test]
    fn a_changed_or_swapped_file_is_never_published() {
        let d = tempfile::tempdir().expect("tempdir");
        let r = root(d.path());
        let a = PartFile::create(&r, "f", A).expect("a");
        (&a.file).write_all(b"good").expect("write");
        let part = d.path().join(names::part_name("f", A.tag()));
        let closed = a.close().expect("close");
        // Someone writes into it after it was verified and closed.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&part)
            .and_then(|mut f| f.write_all(b"evil"))
            .expect("tamper");
        let e = closed.publish(true).expect_err("changed");
        assert!(e.to_string().contains("changed or replaced"), "{e}");
        assert!(!d.path().join("f").exists());
        // Swapped for another file under the same name.
        let a = PartFile::create(&r, "g", A).expect("a");
        let closed = a.close().expect("close");
        let part = d.path().join(names::part_name("g", A.tag()));
        std::fs::remove_file(&part).expect("rm");
        std::fs::write(&part, b"planted").expect("plant");
        assert!(closed.publish(true).is_err());
        assert!(!d.path().join("g").exists());
    }

    #[test]
    fn a_dropped_part_keeps_its_prefix_for_its_own_sender_only() {
        let d = tempfile::tempdir().expect("tempdir");
        let r = root(d.path());
        let mut a = PartFile::create(&r, "f", A).expect("a");
        (&a.file).write_all(b"0123456789").expect("write");
        a.set_keep(4);
        drop(a);
        let part = d.path().join(names::part_name("f", A.tag()));
        assert_eq!(std::fs::read(&part).expect("kept"), b"0123");
        assert!(PartFile::resume(&r, "f", Owner::for_tests(0xb))
            .expect("b")
            .is_none());
        let found = PartFile::resume(&r, "f", A).expect("claim").expect("some");
        assert_eq!(found.prefix, 4);
        assert!(matches!(PartFile::resume(&r, "f", A), Err(PartError::Busy)));
        found.part.discard();
        assert_eq!(std::fs::read_dir(d.path()).expect("dir").count(), 0);
    }

    #[test]
    fn the_recorded_prefix_survives_a_process_that_died() {
        let d = tempfile::tempdir().expect("tempdir");
        let r = root(d.path());
        let mut a = PartFile::create(&r, "f", A).expect("a");
        a.file.set_len(3 * RECORD_STEP).expect("len");
        a.set_keep(RECORD_STEP + 5);
        a.set_keep(RECORD_STEP + 9); // below the next step: not recorded again
                                     // As if the process died: the lock goes with the descriptor, nothing is cut.
        a.settled = true;
        drop(a);
        let found = PartFile::resume(&r, "f", A).expect("resume").expect("some");
        if found.part.recorded.is_some() {
            assert_eq!(found.prefix, RECORD_STEP + 5);
        } else {
            assert_eq!(
                found.prefix,
                3 * RECORD_STEP,
                "no attributes here: the length"
            );
        }
    }

    #[test]
    fn links_and_hard_links_under_the_part_name_are_removed_not_used() {
        let d = tempfile::tempdir().expect("tempdir");
        let r = root(d.path());
        let outside = tempfile::NamedTempFile::new().expect("tmp");
        std::fs::write(outside.path(), b"outside").expect("w");
        let part = d.path().join(names::part_name("f", A.tag()));
        std::os::unix::fs::symlink(outside.path(), &part).expect("ln");
        assert!(PartFile::resume(&r, "f", A).expect("resume").is_none());
        let p = PartFile::create(&r, "f", A).expect("create");
        drop(p);
        std::fs::hard_link(outside.path(), &part).expect("hard link");
        assert!(PartFile::resume(&r, "f", A).expect("resume").is_none());
        let p = PartFile::create(&r, "f", A).expect("create");
        (&p.file).write_all(b"x").expect("w");
        p.close().expect("close").publish(false).expect("publish");
        assert_eq!(std::fs::read(outside.path()).expect("r"), b"outside");
    }
}
