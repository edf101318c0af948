//! A temporary file that belongs to one job and one file, and is moved only by its handle.
//!
//! Each job writes to a name of its own, `.NAME.<id>.hare-part`, created with `O_EXCL` (two
//! jobs can never share a temporary file, and nothing planted under that name is reused) and
//! `O_NOFOLLOW`. Before the file is renamed anywhere, the path is checked to still name the
//! very inode this job holds open (device and inode of `lstat(path)` against `fstat(fd)`), so a
//! rename never moves bytes this job did not write. Publishing without `--force` uses
//! `renameat2(RENAME_NOREPLACE)` (Linux 3.15), or `link(2)` + `unlink(2)` where the file system
//! lacks it: either fails atomically when the final name exists.
//!
//! A partial file kept for `--resume` waits under `.NAME.hare-part`; a job that resumes it
//! first takes it over by renaming it to its own name (one job wins; the others see none).

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::names;

/// Attempts at finding an unused random name before giving up.
const NAME_TRIES: usize = 8;

/// A job's own temporary file. Dropped unsettled, it keeps its first [`PartFile::set_keep`]
/// bytes for `--resume` (moving them to the resume name), or removes itself when that is 0.
#[derive(Debug)]
pub(crate) struct PartFile {
    file: File,
    path: PathBuf,
    resume: PathBuf,
    identity: (u64, u64),
    keep: u64,
    settled: bool,
}

impl PartFile {
    /// Create a fresh, empty temporary file for `final_path` (its directory must exist).
    pub(crate) fn create(final_path: &Path) -> io::Result<Self> {
        let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
        for _ in 0..NAME_TRIES {
            let path = names::job_part_path(final_path, rand::random());
            match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                // Private while it is received: its final mode is set once it is verified.
                .mode(0o600)
                .open(&path)
            {
                Ok(file) => return Self::adopt(file, path, final_path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    /// Take over the partial file kept for `--resume` of `final_path`, if there is a regular
    /// one; `Ok(None)` when there is none (or another job took it first).
    pub(crate) fn claim_resume(final_path: &Path) -> io::Result<Option<Self>> {
        let resume = names::resume_path(final_path);
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&resume)
        {
            Ok(f) => f,
            // Absent, or a symbolic link (ELOOP): nothing to resume, and nothing is followed.
            Err(_) => return Ok(None),
        };
        if !file.metadata()?.is_file() {
            return Ok(None);
        }
        let path = names::job_part_path(final_path, rand::random());
        match rename_noreplace(&resume, &path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        }
        let part = Self::adopt(file, path, final_path)?;
        if !part.still_ours() {
            // Swapped between open and rename: not the file we hold; leave it alone.
            let mut part = part;
            part.settled = true;
            return Ok(None);
        }
        Ok(Some(part))
    }

    fn adopt(file: File, path: PathBuf, final_path: &Path) -> io::Result<Self> {
        let m = file.metadata()?;
        Ok(Self {
            file,
            path,
            resume: names::resume_path(final_path),
            identity: (m.dev(), m.ino()),
            keep: 0,
            settled: false,
        })
    }

    /// The open file.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Bytes to keep for `--resume` if this file is dropped unsettled.
    pub(crate) fn set_keep(&mut self, bytes: u64) {
        self.keep = bytes;
    }

    /// True when this job's temporary name still names the inode it holds open.
    fn still_ours(&self) -> bool {
        std::fs::symlink_metadata(&self.path)
            .map(|m| (m.dev(), m.ino()) == self.identity)
            .unwrap_or(false)
    }

    /// Close the descriptor, keeping the claim on the temporary name: a verified file
    /// waiting for its batch holds no descriptor.
    pub(crate) fn close(mut self) -> ClosedPart {
        self.settled = true;
        ClosedPart {
            path: std::mem::take(&mut self.path),
            resume: std::mem::take(&mut self.resume),
            identity: self.identity,
            settled: false,
        }
    }

    /// Remove the temporary file.
    pub(crate) fn discard(mut self) {
        self.keep = 0;
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if self.settled || !self.still_ours() {
            return;
        }
        if self.keep > 0 && self.file.set_len(self.keep).is_ok() {
            // Replaces an older kept partial: this one is the newest verified prefix.
            if std::fs::rename(&self.path, &self.resume).is_ok() {
                return;
            }
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A complete temporary file whose descriptor is closed. Dropped unsettled, it is kept whole
/// for `--resume`.
#[derive(Debug)]
pub(crate) struct ClosedPart {
    path: PathBuf,
    resume: PathBuf,
    identity: (u64, u64),
    settled: bool,
}

impl ClosedPart {
    /// True when the temporary name still names the inode this job wrote.
    fn still_ours(&self) -> bool {
        std::fs::symlink_metadata(&self.path)
            .map(|m| (m.dev(), m.ino()) == self.identity)
            .unwrap_or(false)
    }

    /// Move this file (only this one) to `final_path`; the caller made it durable first.
    /// Without `replace`, an existing final name is never overwritten (`Err` of kind
    /// `AlreadyExists`). On error the temporary file is removed.
    pub(crate) fn publish(mut self, final_path: &Path, replace: bool) -> io::Result<()> {
        if !self.still_ours() {
            self.settled = true;
            return Err(io::Error::other(
                "the temporary file was replaced during the transfer",
            ));
        }
        let moved = if replace {
            std::fs::rename(&self.path, final_path)
        } else {
            rename_noreplace(&self.path, final_path)
        };
        if let Err(e) = moved {
            self.discard();
            return Err(e);
        }
        self.settled = true;
        // A partial file an earlier, interrupted job kept for --resume is now stale.
        let _ = std::fs::remove_file(&self.resume);
        Ok(())
    }

    /// Remove the temporary file.
    pub(crate) fn discard(&mut self) {
        if !self.settled && self.still_ours() {
            let _ = std::fs::remove_file(&self.path);
        }
        self.settled = true;
    }
}

impl Drop for ClosedPart {
    fn drop(&mut self) {
        if self.settled || !self.still_ours() {
            return;
        }
        if std::fs::rename(&self.path, &self.resume).is_err() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// `rename(from, to)` that fails with `AlreadyExists` instead of replacing `to`.
pub(crate) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::other("NUL in a path"))
    };
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: both pointers are valid NUL-terminated strings for the duration of the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // No renameat2 in this kernel or file system: link(2) is just as exclusive.
        Some(libc::ENOSYS) | Some(libc::EINVAL) => {
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        _ => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn two_parts_of_one_name_are_distinct_files() {
        let d = tempfile::tempdir().expect("tempdir");
        let f = d.path().join("f");
        let a = PartFile::create(&f).expect("a");
        let b = PartFile::create(&f).expect("b");
        assert_ne!(a.path, b.path);
        assert_ne!(a.identity, b.identity);
        a.file().write_all(b"aaaa").expect("write");
        b.file().write_all(b"bb").expect("write");
        a.close().publish(&f, false).expect("first publishes");
        let e = b
            .close()
            .publish(&f, false)
            .expect_err("second may not replace");
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&f).expect("read"), b"aaaa");
        // Nothing left behind: the loser removed its own temporary file.
        assert_eq!(std::fs::read_dir(d.path()).expect("dir").count(), 1);
    }

    #[test]
    fn a_swapped_temporary_name_is_never_published() {
        let d = tempfile::tempdir().expect("tempdir");
        let f = d.path().join("f");
        let a = PartFile::create(&f).expect("a");
        std::fs::remove_file(&a.path).expect("rm");
        std::fs::write(&a.path, b"planted").expect("plant");
        assert!(a.close().publish(&f, true).is_err());
        assert!(!f.exists());
    }

    #[test]
    fn dropped_part_keeps_its_prefix_for_resume_and_is_claimed_once() {
        let d = tempfile::tempdir().expect("tempdir");
        let f = d.path().join("f");
        let mut a = PartFile::create(&f).expect("a");
        a.file().write_all(b"0123456789").expect("write");
        a.set_keep(4);
        drop(a);
        let resume = names::resume_path(&f);
        assert_eq!(std::fs::read(&resume).expect("kept"), b"0123");
        let claimed = PartFile::claim_resume(&f).expect("claim").expect("some");
        assert!(PartFile::claim_resume(&f).expect("claim").is_none());
        assert!(!resume.exists());
        claimed.discard();
        assert_eq!(std::fs::read_dir(d.path()).expect("dir").count(), 0);
    }

    #[test]
    fn a_symlink_under_the_resume_name_is_not_followed() {
        let d = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::NamedTempFile::new().expect("tmp");
        std::fs::write(outside.path(), b"outside").expect("w");
        let f = d.path().join("f");
        std::os::unix::fs::symlink(outside.path(), names::resume_path(&f)).expect("ln");
        assert!(PartFile::claim_resume(&f).expect("claim").is_none());
        let p = PartFile::create(&f).expect("create");
        p.close().publish(&f, false).expect("publish");
        assert_eq!(std::fs::read(outside.path()).expect("r"), b"outside");
    }
}
