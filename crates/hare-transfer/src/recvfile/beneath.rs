//! Every path operation of a receiver beneath its directory, never through a symbolic link.
//!
//! A job name (`a/b/f`, checked by [`crate::names::check_name`]) is resolved to the directory
//! that holds its last component with `openat2(2)` and `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`
//! (Linux 5.6): the kernel itself refuses a symbolic link or a `..` at any step of the walk.
//! Where `openat2` is missing (`ENOSYS` before 5.6, or `EPERM` from a seccomp filter) the same
//! walk is done one component at a time with `openat(O_DIRECTORY | O_NOFOLLOW)`, which fails
//! on a symbolic link (`ELOOP`) or anything but a directory (`ENOTDIR`) at each step. After a
//! refusal the component walk is also what names the component that was refused.
//!
//! Everything that touches the last component then goes through the directory's descriptor
//! (`fstatat(AT_SYMLINK_NOFOLLOW)`, `openat(O_NOFOLLOW)`, `renameat2`, `unlinkat`,
//! `symlinkat`, `mkdirat`, `utimensat(AT_SYMLINK_NOFOLLOW)`), so no step of planning, resuming,
//! writing, publishing, or making links and directories can be steered outside the receive
//! directory by a link, whoever made it and whenever.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::names;

/// The receive directory, opened once; every path a job names is resolved beneath it.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    path: PathBuf,
}

/// Why a name's directory could not be reached.
#[derive(Debug)]
pub(crate) enum Walk {
    /// A component does not exist (and was not to be created).
    Missing,
    /// This prefix of the name is a symbolic link.
    Link(String),
    /// This prefix of the name exists and is not a directory.
    NotDir(String),
    /// The name is not one a receiver accepts.
    Name(String),
    /// Any other error of the file system.
    Io(io::Error),
}

impl Walk {
    /// True when a directory on the way does not exist (nothing there to refuse).
    pub(crate) fn is_missing(&self) -> bool {
        matches!(self, Self::Missing)
    }

    /// The reason, for the sender.
    pub(crate) fn reason(&self) -> String {
        match self {
            Self::Missing => "a directory on its way does not exist".into(),
            Self::Link(p) => format!("{p} is a symbolic link; not followed"),
            Self::NotDir(p) => format!("{p} exists and is not a directory"),
            Self::Name(r) => r.clone(),
            Self::Io(e) => super::os_reason(e),
        }
    }
}

/// A directory reached beneath the [`Root`] without passing a link, with the last component
/// of the name that led to it.
#[derive(Debug)]
pub(crate) struct Parent {
    fd: OwnedFd,
    /// The name's last component (a file, link or directory in this directory).
    pub(crate) leaf: String,
}

/// What `fstatat` says of one entry (never following a link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) mode: u32,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    pub(crate) ctime: (i64, i64),
    /// Modification time, nanoseconds since the epoch.
    pub(crate) mtime_ns: i64,
    pub(crate) nlink: u64,
}

impl Entry {
    pub(crate) fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }

    pub(crate) fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }

    /// The identity and state a rename relies on: the same inode, unchanged since.
    pub(crate) fn stamp(&self) -> (u64, u64, u64, (i64, i64)) {
        (self.dev, self.ino, self.size, self.ctime)
    }
}

fn cstr(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::other("NUL in a name"))
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Root {
    /// Open the receive directory (the owner's choice: it may itself be reached through a
    /// link; nothing beneath it is).
    pub fn open(path: &Path) -> io::Result<Self> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::other("NUL in the receive directory's path"))?;
        // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
        let fd = check(unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` was just returned by open(2) and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The directory's path (for messages and the free-space check).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory itself, for `syncfs(2)` and `fstatvfs(2)`.
    pub(crate) fn dir_file(&self) -> io::Result<File> {
        Ok(File::from(self.fd.try_clone()?))
    }

    /// The directory holding `name`'s last component, every directory on the way an existing
    /// real directory.
    pub(crate) fn parent(&self, name: &str) -> Result<Parent, Walk> {
        self.reach(name, false)
    }

    /// As [`Root::parent`], creating missing directories on the way (never through a link).
    pub(crate) fn parent_create(&self, name: &str) -> Result<Parent, Walk> {
        self.reach(name, true)
    }

    /// Create the directory `name` and its parents; one that exists is fine.
    pub(crate) fn make_dir(&self, name: &str) -> Result<(), Walk> {
        let parent = self.parent_create(name)?;
        parent.open_dir(&parent.leaf, true, name).map(drop)
    }

    fn reach(&self, name: &str, create: bool) -> Result<Parent, Walk> {
        let parts = names::check_name(name).map_err(Walk::Name)?;
        let (leaf, dirs) = parts.split_last().ok_or(Walk::Missing)?;
        let leaf = (*leaf).to_owned();
        if dirs.is_empty() {
            let fd = self.fd.try_clone().map_err(Walk::Io)?;
            return Ok(Parent { fd, leaf });
        }
        match openat2_beneath(&self.fd, &dirs.join("/")) {
            Ok(fd) => return Ok(Parent { fd, leaf }),
            // Missing syscall or filtered: the component walk is just as strict.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {}
            // Refused or missing: the walk names what was refused, or creates what is missing.
            Err(_) => {}
        }
        let mut dir = Parent {
            fd: self.fd.try_clone().map_err(Walk::Io)?,
            leaf: String::new(),
        };
        for (i, c) in dirs.iter().enumerate() {
            let shown = dirs[..=i].join("/");
            dir.fd = dir.open_dir(c, create, &shown)?;
        }
        dir.leaf = leaf;
        Ok(dir)
    }
}

/// `openat2(dirfd, path, O_DIRECTORY, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`.
fn openat2_beneath(dir: &OwnedFd, path: &str) -> io::Result<OwnedFd> {
    let c = cstr(path)?;
    // SAFETY: open_how is plain integers; all-zero is its documented "no options" value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `c` is a valid NUL-terminated string and `how` a valid open_how whose size is
    // passed, both alive for the duration of the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    let fd = check(r as libc::c_int)?;
    // SAFETY: the kernel returned a new descriptor that nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Parent {
    /// Open the directory `c` in this one (creating it when asked), refusing a link or a
    /// non-directory; `shown` names it in a refusal.
    fn open_dir(&self, c: &str, create: bool, shown: &str) -> Result<OwnedFd, Walk> {
        let cc = cstr(c).map_err(Walk::Io)?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        for _ in 0..2 {
            // SAFETY: `cc` is a valid NUL-terminated string for the duration of the call.
            let r = unsafe { libc::openat(self.fd.as_raw_fd(), cc.as_ptr(), flags) };
            if r >= 0 {
                // SAFETY: a new descriptor that nobody else owns.
                return Ok(unsafe { OwnedFd::from_raw_fd(r) });
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::ELOOP) => return Err(Walk::Link(shown.to_owned())),
                Some(libc::ENOTDIR) => {
                    // O_NOFOLLOW with O_DIRECTORY may say ENOTDIR for a link: tell them apart.
                    return Err(match self.stat(c) {
                        Ok(Some(m)) if m.mode & libc::S_IFMT == libc::S_IFLNK => {
                            Walk::Link(shown.to_owned())
                        }
                        _ => Walk::NotDir(shown.to_owned()),
                    });
                }
                Some(libc::ENOENT) if create => {
                    // SAFETY: as above; the mode is filtered by the umask.
                    let m = unsafe { libc::mkdirat(self.fd.as_raw_fd(), cc.as_ptr(), 0o777) };
                    if m < 0 {
                        let e = io::Error::last_os_error();
                        // Made by someone else meanwhile: open it (and check it) again.
                        if e.raw_os_error() != Some(libc::EEXIST) {
                            return Err(Walk::Io(e));
                        }
                    }
                }
                Some(libc::ENOENT) => return Err(Walk::Missing),
                _ => return Err(Walk::Io(e)),
            }
        }
        Err(Walk::Io(io::Error::other(
            "a directory kept changing while it was made",
        )))
    }

    /// `fstatat(AT_SYMLINK_NOFOLLOW)` of `name` in this directory; `None` when absent.
    pub(crate) fn stat(&self, name: &str) -> io::Result<Option<Entry>> {
        let c = cstr(name)?;
        // SAFETY: an all-zero `stat` is a valid value to be overwritten.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `c` and `st` are valid for the duration of the call.
        let r = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOENT) => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(entry_of(&st)))
    }

    /// `openat(name, flags | O_NOFOLLOW | O_CLOEXEC, mode)` in this directory.
    pub(crate) fn open(&self, name: &str, flags: libc::c_int, mode: u32) -> io::Result<File> {
        let c = cstr(name)?;
        let flags = flags | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
        let r = check(unsafe {
            libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags, mode as libc::c_uint)
        })?;
        // SAFETY: a new descriptor that nobody else owns.
        Ok(File::from(unsafe { OwnedFd::from_raw_fd(r) }))
    }

    /// Rename `from` to `to`, both in this directory; without `replace` an existing `to` is
    /// never replaced (`AlreadyExists`).
    pub(crate) fn rename(&self, from: &str, to: &str, replace: bool) -> io::Result<()> {
        let (f, t) = (cstr(from)?, cstr(to)?);
        let fd = self.fd.as_raw_fd();
        let flags = if replace { 0 } else { libc::RENAME_NOREPLACE };
        // SAFETY: both names are valid NUL-terminated strings for the duration of the call.
        let r =
            unsafe { libc::syscall(libc::SYS_renameat2, fd, f.as_ptr(), fd, t.as_ptr(), flags) };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            // No renameat2 (before 3.15) or not in this file system: link(2) is just as
            // exclusive for the no-replace case, and rename(2) is the replacing one.
            Some(libc::ENOSYS | libc::EINVAL) if !replace => {
                // SAFETY: as above.
                check(unsafe { libc::linkat(fd, f.as_ptr(), fd, t.as_ptr(), 0) })?;
                self.unlink(from)
            }
            Some(libc::ENOSYS | libc::EINVAL) => {
                // SAFETY: as above.
                check(unsafe { libc::renameat(fd, f.as_ptr(), fd, t.as_ptr()) }).map(drop)
            }
            _ => Err(e),
        }
    }

    /// Remove the entry `name` (not a directory) of this directory.
    pub(crate) fn unlink(&self, name: &str) -> io::Result<()> {
        let c = cstr(name)?;
        // SAFETY: `c` is valid for the duration of the call.
        check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
    }

    /// A new symbolic link `name` -> `target` in this directory.
    pub(crate) fn symlink(&self, target: &str, name: &str) -> io::Result<()> {
        let (t, n) = (cstr(target)?, cstr(name)?);
        // SAFETY: both strings are valid for the duration of the call.
        check(unsafe { libc::symlinkat(t.as_ptr(), self.fd.as_raw_fd(), n.as_ptr()) }).map(drop)
    }

    /// The target text of the symbolic link `name` (`readlinkat(2)`); `Ok(None)` when `name`
    /// is not a symbolic link or is missing.
    pub(crate) fn link_target(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let c = cstr(name)?;
        let mut buf = vec![0u8; libc::PATH_MAX as usize + 1];
        // SAFETY: `c` and `buf` are valid for the duration of the call; the length passed is
        // the buffer's.
        let n = unsafe {
            libc::readlinkat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EINVAL | libc::ENOENT) => Ok(None),
                _ => Err(e),
            };
        }
        buf.truncate(n as usize);
        Ok(Some(buf))
    }

    /// Set the modification time of the link `name` itself (`utimensat` with
    /// `AT_SYMLINK_NOFOLLOW`, Linux 2.6.22); its access time is left alone.
    pub(crate) fn set_link_mtime(&self, name: &str, ns: i64) -> io::Result<()> {
        let c = cstr(name)?;
        let times = [
            libc::timespec {
                tv_sec: 0,
                tv_nsec: libc::UTIME_OMIT,
            },
            libc::timespec {
                tv_sec: ns.div_euclid(1_000_000_000),
                tv_nsec: ns.rem_euclid(1_000_000_000),
            },
        ];
        // SAFETY: `c` and `times` are valid for the duration of the call.
        check(unsafe {
            libc::utimensat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                times.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        })
        .map(drop)
    }
}

/// What `fstat` says of an open file, in the same form as [`Parent::stat`].
pub(crate) fn fstat(f: &File) -> io::Result<Entry> {
    // SAFETY: an all-zero `stat` is a valid value to be overwritten.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open and `st` valid for the duration of the call.
    check(unsafe { libc::fstat(f.as_raw_fd(), &mut st) })?;
    Ok(entry_of(&st))
}

fn entry_of(st: &libc::stat) -> Entry {
    Entry {
        mode: st.st_mode,
        dev: st.st_dev,
        ino: st.st_ino,
        size: st.st_size as u64,
        ctime: (st.st_ctime, st.st_ctime_nsec),
        mtime_ns: st
            .st_mtime
            .saturating_mul(1_000_000_000)
            .saturating_add(st.st_mtime_nsec),
        nlink: st.st_nlink,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, Root) {
        let d = tempfile::tempdir().expect("tempdir");
        let r = Root::open(d.path()).expect("root");
        (d, r)
    }

    #[test]
    fn a_link_anywhere_on_the_way_is_refused_and_names_itself() {
        let (d, r) = root();
        let outside = tempfile::tempdir().expect("outside");
        std::fs::write(outside.path().join("passwd"), b"x").expect("w");
        std::fs::create_dir(d.path().join("a")).expect("mkdir");
        std::os::unix::fs::symlink(outside.path(), d.path().join("a/lnk")).expect("ln");
        // An existing and a missing file behind the link get the same answer: no oracle.
        for name in ["a/lnk/passwd", "a/lnk/no-such-file", "a/lnk/deeper/x"] {
            let e = r.parent(name).expect_err("through a link");
            assert_eq!(
                e.reason(),
                "a/lnk is a symbolic link; not followed",
                "{name}"
            );
            let e = r.parent_create(name).expect_err("through a link");
            assert_eq!(
                e.reason(),
                "a/lnk is a symbolic link; not followed",
                "{name}"
            );
        }
        assert!(!outside.path().join("deeper").exists());
    }

    #[test]
    fn missing_directories_are_missing_or_made() {
        let (d, r) = root();
        assert!(matches!(r.parent("x/y/f"), Err(Walk::Missing)));
        let p = r.parent_create("x/y/f").expect("made");
        assert_eq!(p.leaf, "f");
        assert!(d.path().join("x/y").is_dir());
        std::fs::write(d.path().join("file"), b"x").expect("w");
        let e = r.parent_create("file/f").expect_err("not a dir");
        assert_eq!(e.reason(), "file exists and is not a directory");
        r.make_dir("e/f").expect("dirs");
        r.make_dir("e/f").expect("again");
        assert!(d.path().join("e/f").is_dir());
    }

    #[test]
    fn the_component_walk_alone_refuses_links_too() {
        // The fallback where openat2 is missing, exercised directly.
        let (d, r) = root();
        let outside = tempfile::tempdir().expect("outside");
        std::os::unix::fs::symlink(outside.path(), d.path().join("l")).expect("ln");
        let top = Parent {
            fd: r.fd.try_clone().expect("dup"),
            leaf: String::new(),
        };
        assert!(matches!(top.open_dir("l", true, "l"), Err(Walk::Link(_))));
        assert!(top.open_dir("new", true, "new").is_ok());
        assert!(d.path().join("new").is_dir());
    }

    #[test]
    fn entries_are_read_and_moved_without_following() {
        let (d, r) = root();
        let outside = tempfile::NamedTempFile::new().expect("tmp");
        std::os::unix::fs::symlink(outside.path(), d.path().join("l")).expect("ln");
        let p = r.parent("l").expect("top");
        let m = p.stat("l").expect("stat").expect("there");
        assert_eq!(m.mode & libc::S_IFMT, libc::S_IFLNK);
        assert!(p.open("l", libc::O_RDONLY, 0).is_err(), "O_NOFOLLOW");
        p.symlink("t", "m").expect("symlink");
        assert!(p.rename("m", "l", false).is_err(), "no replace");
        p.rename("m", "l", true).expect("replace");
        assert_eq!(
            std::fs::read_link(d.path().join("l")).expect("rl").to_str(),
            Some("t")
        );
        assert!(outside.path().exists(), "the link's target is untouched");
    }
}
