//! The sending side of file jobs: which files the command line names, under which names.
//!
//! `hare-send a.bin dir/ HOST` sends `a.bin` as `a.bin` and every regular file under `dir` as
//! `dir/...` (like `scp -r`), with its permission bits and modification time ([`Keep`]).
//! Symbolic links are sent as links with `--links` (rsync `-l`: the target text as it is,
//! never followed) and otherwise skipped with a warning, as special files are; empty
//! directories are created on the receiver; files whose names cannot be represented on a
//! receiver are left out and reported ([`gather`]).

use std::path::{Path, PathBuf};

use crate::error::{Result, TransferError};
use crate::names;
use crate::protocol::{FileEntry, LinkEntry, MAX_FILES};

/// A local file and the name it travels under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    /// Local path.
    pub path: PathBuf,
    /// Name in the job.
    pub entry: FileEntry,
}

/// Which metadata travels with each file (rsync `-a` keeps both; `--no-perms`, `--no-times`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep {
    /// Permission bits kept exactly (else the receiver's umask narrows them).
    pub perms: bool,
    /// Modification time kept.
    pub times: bool,
    /// What becomes of symbolic links.
    pub links: Links,
}

impl Default for Keep {
    fn default() -> Self {
        Self {
            perms: true,
            times: true,
            links: Links::Skip,
        }
    }
}

/// What a file job does with symbolic links (rsync's `-l` and `--safe-links`; scp follows
/// them, which hare never does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Links {
    /// Skipped with a warning naming each (the default, as without rsync `-l`).
    #[default]
    Skip,
    /// Sent as links, the target text unchanged (`--links`, rsync `-l`).
    Keep,
    /// Sent as links, except those whose target is absolute or climbs out of the transfer
    /// with `..`, which are skipped with a warning (`--links --safe-links`).
    Safe,
}

/// The manifest entry of a file with metadata `m`, as `keep` says.
fn entry(name: String, m: &std::fs::Metadata, keep: Keep) -> FileEntry {
    use std::os::unix::fs::MetadataExt;
    let mut e = FileEntry::new(name, m.len());
    e.mode = Some(m.mode() & 0o777);
    e.apply_umask = !keep.perms;
    if keep.times {
        e.mtime_ns = Some(
            m.mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.mtime_nsec()),
        );
    }
    e
}

/// What the command line names, ready for a job.
#[derive(Debug, Default)]
pub(crate) struct Gathered {
    /// The files to send.
    pub sources: Vec<Source>,
    /// Entries skipped (symbolic links, special files), for the user.
    pub warnings: Vec<String>,
    /// Files that cannot travel under their name: (name as shown, reason).
    pub refused: Refused,
    /// Directories with nothing in them, by job name (created on the receiver, as rsync does).
    pub empty_dirs: Vec<String>,
    /// Symbolic links to send as links (`--links`).
    pub links: Vec<LinkEntry>,
}

/// Files that cannot be sent under their name, each with the reason: `(name, reason)`.
pub type Refused = Vec<(String, String)>;

/// Collect the files named by `paths`; also returns warnings about skipped entries and the
/// files whose names cannot be represented on a receiver (non-UTF-8, a backslash or control
/// character, a component over [`names::MAX_COMPONENT`] bytes...): those are left out of the
/// job, which goes on without them, and reported as failed.
/// Also returns the directories that hold nothing, by job name.
pub(crate) fn gather(paths: &[PathBuf], keep: Keep) -> Result<Gathered> {
    let mut g = Gathered::default();
    for p in paths {
        let meta = std::fs::symlink_metadata(p)
            .map_err(|e| TransferError::io(format!("reading {}", p.display()), e))?;
        let raw = p
            .file_name()
            .ok_or_else(|| TransferError::Usage(format!("{}: has no file name", p.display())))?;
        let Some(base) = utf8_name(&mut g, raw, None) else {
            continue;
        };
        if meta.is_file() {
            push(&mut g, p.clone(), entry(base, &meta, keep))?;
        } else if meta.is_symlink() && keep.links != Links::Skip {
            push_link(&mut g, p, base, &meta, keep)?;
        } else if meta.is_dir() {
            walk(p, &base, (0, keep), &mut g)?;
        } else {
            g.warnings.push(format!(
                "skipping {}: not a regular file or directory",
                p.display()
            ));
        }
    }
    let mut names: Vec<&str> = g.sources.iter().map(|s| s.entry.name.as_str()).collect();
    names.extend(g.links.iter().map(|l| l.name.as_str()));
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(TransferError::Usage(format!(
            "two files would be sent as `{}`",
            w[0]
        )));
    }
    Ok(g)
}

/// The component `raw` under `parent` as UTF-8, or `None` after recording the refusal (a
/// receiver could only store a replacement character, which is not the file's name).
fn utf8_name(g: &mut Gathered, raw: &std::ffi::OsStr, parent: Option<&str>) -> Option<String> {
    match (raw.to_str(), parent) {
        (Some(n), None) => Some(n.to_owned()),
        (Some(n), Some(p)) => Some(format!("{p}/{n}")),
        (None, _) => {
            let shown = raw.to_string_lossy();
            let name = parent.map_or(shown.to_string(), |p| format!("{p}/{shown}"));
            g.refused
                .push((name, "name is not valid UTF-8; not sent".into()));
            None
        }
    }
}

fn push(g: &mut Gathered, path: PathBuf, entry: FileEntry) -> Result<()> {
    if let Err(r) = names::check_name(&entry.name) {
        g.refused
            .push((entry.name, format!("name cannot be sent: {r}")));
        return Ok(());
    }
    too_many(g)?;
    g.sources.push(Source { path, entry });
    Ok(())
}

fn too_many(g: &Gathered) -> Result<()> {
    if g.sources.len() + g.links.len() >= MAX_FILES {
        return Err(TransferError::Usage(format!(
            "more than {MAX_FILES} files in one job"
        )));
    }
    Ok(())
}

/// A symbolic link at `path`, sent as `name`: its target text as it is (not UTF-8: refused
/// like such a name); with [`Links::Safe`], a target that is absolute or climbs out of the
/// transfer is skipped with a warning instead.
fn push_link(
    g: &mut Gathered,
    path: &Path,
    name: String,
    m: &std::fs::Metadata,
    keep: Keep,
) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    if let Err(r) = names::check_name(&name) {
        g.refused.push((name, format!("name cannot be sent: {r}")));
        return Ok(());
    }
    let target = std::fs::read_link(path)
        .map_err(|e| TransferError::io(format!("reading the link {}", path.display()), e))?;
    let Some(target) = target.to_str().map(str::to_owned) else {
        g.refused
            .push((name, "link target is not valid UTF-8; not sent".into()));
        return Ok(());
    };
    if keep.links == Links::Safe && names::unsafe_link(&name, &target) {
        g.warnings.push(format!(
            "skipping {}: unsafe link to {target} (--safe-links)",
            path.display()
        ));
        return Ok(());
    }
    too_many(g)?;
    let mtime_ns = keep.times.then(|| {
        m.mtime()
            .saturating_mul(1_000_000_000)
            .saturating_add(m.mtime_nsec())
    });
    g.links.push(LinkEntry {
        name,
        target,
        mtime_ns,
    });
    Ok(())
}

fn walk(dir: &Path, name: &str, (depth, keep): (usize, Keep), g: &mut Gathered) -> Result<()> {
    if depth >= names::MAX_DEPTH {
        return Err(TransferError::Usage(format!(
            "{}: nested too deep",
            dir.display()
        )));
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| TransferError::io(format!("listing {}", dir.display()), e))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| TransferError::io(format!("listing {}", dir.display()), e))?;
    entries.sort_by_key(|e| e.file_name());
    if entries.is_empty() && names::check_name(name).is_ok() {
        g.empty_dirs.push(name.to_owned());
    }
    for e in entries {
        let path = e.path();
        let Some(child) = utf8_name(g, &e.file_name(), Some(name)) else {
            continue;
        };
        let ft = e
            .file_type()
            .map_err(|err| TransferError::io(format!("reading {}", path.display()), err))?;
        if ft.is_file() {
            let m = e
                .metadata()
                .map_err(|err| TransferError::io(format!("reading {}", path.display()), err))?;
            push(g, path, entry(child, &m, keep))?;
        } else if ft.is_dir() {
            walk(&path, &child, (depth + 1, keep), g)?;
        } else if ft.is_symlink() && keep.links != Links::Skip {
            let m = std::fs::symlink_metadata(&path)
                .map_err(|err| TransferError::io(format!("reading {}", path.display()), err))?;
            push_link(g, &path, child, &m, keep)?;
        } else if ft.is_symlink() {
            g.warnings.push(format!(
                "skipping {}: symbolic link (send it as a link with --links)",
                path.display()
            ));
        } else {
            g.warnings
                .push(format!("skipping {}: special file", path.display()));
        }
    }
    Ok(())
}

/// Open a source file for reading, as it is when its turn comes: with `O_NONBLOCK`, so that
/// a FIFO put in its place since it was listed cannot hold the open until some writer comes
/// (for a regular file the flag changes nothing), and refused when it is no longer a regular
/// file (a FIFO, a device, a directory). The error is the file's reason, with its path.
pub(crate) fn open_source(path: &Path) -> std::result::Result<std::fs::File, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(format!(
            "cannot send {}: it is no longer a regular file",
            path.display()
        ));
    }
    Ok(file)
}

/// BLAKE3 of the first `len` bytes of `path` (to check a receiver's resume offer), and the
/// hash state to continue from. The file is opened as [`open_source`] opens it; the error
/// is the file's reason.
pub(crate) fn prefix_hash(
    path: &Path,
    len: u64,
) -> std::result::Result<(blake3::Hasher, u64), String> {
    use std::io::Read;
    let f = open_source(path)?;
    let mut h = blake3::Hasher::new();
    let n = std::io::copy(&mut f.take(len), &mut h)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok((h, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_tree_names_are_relative_to_its_parent() {
        let d = tempfile::tempdir().expect("tempdir");
        let root = d.path().join("tree");
        std::fs::create_dir_all(root.join("b/c")).expect("mkdir");
        std::fs::write(root.join("a.txt"), b"a").expect("w");
        std::fs::write(root.join("b/c/d.bin"), b"dd").expect("w");
        std::fs::write(root.join("b/empty"), b"").expect("w");
        std::os::unix::fs::symlink("/etc/passwd", root.join("link")).expect("ln");
        let single = d.path().join("one");
        std::fs::write(&single, b"111").expect("w");
        std::fs::create_dir_all(root.join("b/void")).expect("mkdir");
        let g = gather(&[root.clone(), single], Keep::default()).expect("gather");
        let (src, warn, refused, dirs) = (g.sources, g.warnings, g.refused, g.empty_dirs);
        assert_eq!(dirs, vec!["tree/b/void".to_owned()]);
        assert!(refused.is_empty());
        let names: Vec<(&str, u64)> = src
            .iter()
            .map(|s| (s.entry.name.as_str(), s.entry.size))
            .collect();
        assert_eq!(
            names,
            vec![
                ("tree/a.txt", 1),
                ("tree/b/c/d.bin", 2),
                ("tree/b/empty", 0),
                ("one", 3)
            ]
        );
        assert_eq!(warn.len(), 1);
    }

    #[test]
    fn unrepresentable_names_are_left_out_with_a_reason() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().expect("tempdir");
        let root = d.path().join("r");
        std::fs::create_dir_all(&root).expect("mkdir");
        for n in [&b"ok"[..], b"back\\slash", b"new\nline", b"bad\xff"] {
            std::fs::write(root.join(std::ffi::OsStr::from_bytes(n)), b"x").expect("w");
        }
        std::fs::write(root.join("l".repeat(201)), b"x").expect("w");
        let g = gather(&[root], Keep::default()).expect("gather");
        let (src, refused) = (g.sources, g.refused);
        assert_eq!(src.len(), 1);
        assert_eq!(src[0].entry.name, "r/ok");
        let mut reasons: Vec<String> = refused.iter().map(|(_, r)| r.clone()).collect();
        reasons.sort();
        assert_eq!(reasons.len(), 4, "{refused:?}");
        assert!(
            reasons.iter().any(|r| r.contains("not valid UTF-8")),
            "{reasons:?}"
        );
        assert!(
            reasons.iter().any(|r| r.contains("longer than 200")),
            "{reasons:?}"
        );
        assert_eq!(
            reasons
                .iter()
                .filter(|r| r.contains("forbidden character"))
                .count(),
            2
        );
    }

    #[test]
    fn links_travel_as_links_and_safe_links_skips_the_unsafe_ones() {
        let d = tempfile::tempdir().expect("tempdir");
        let root = d.path().join("t");
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("f"), b"f").expect("w");
        std::os::unix::fs::symlink("../f", root.join("sub/up")).expect("ln");
        std::os::unix::fs::symlink("/etc/passwd", root.join("abs")).expect("ln");
        std::os::unix::fs::symlink("../../../out", root.join("sub/esc")).expect("ln");
        std::os::unix::fs::symlink("nowhere", root.join("dangling")).expect("ln");
        let keep = |links| Keep {
            links,
            ..Keep::default()
        };
        let g = gather(std::slice::from_ref(&root), keep(Links::Keep)).expect("gather");
        let links: Vec<(&str, &str)> = g
            .links
            .iter()
            .map(|l| (l.name.as_str(), l.target.as_str()))
            .collect();
        assert_eq!(
            links,
            vec![
                ("t/abs", "/etc/passwd"),
                ("t/dangling", "nowhere"),
                ("t/sub/esc", "../../../out"),
                ("t/sub/up", "../f"),
            ]
        );
        assert!(g.links.iter().all(|l| l.mtime_ns.is_some()));
        assert!(g.warnings.is_empty(), "{:?}", g.warnings);
        let g = gather(std::slice::from_ref(&root), keep(Links::Safe)).expect("gather");
        let names: Vec<&str> = g.links.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, vec!["t/dangling", "t/sub/up"]);
        assert_eq!(g.warnings.len(), 2, "{:?}", g.warnings);
        assert!(g.warnings.iter().all(|w| w.contains("unsafe link")));
        let g = gather(&[root], Keep::default()).expect("gather");
        assert!(g.links.is_empty());
        assert_eq!(g.warnings.len(), 4);
        assert!(g.warnings.iter().all(|w| w.contains("--links")));
    }

    #[test]
    fn duplicate_names_are_refused() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(d.path().join("x")).expect("mkdir");
        std::fs::write(d.path().join("f"), b"1").expect("w");
        std::fs::write(d.path().join("x/f"), b"2").expect("w");
        assert!(gather(&[d.path().join("f"), d.path().join("x/f")], Keep::default()).is_err());
    }

    #[test]
    fn prefix_hash_matches_blake3() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("f");
        std::fs::write(&p, b"hello world").expect("w");
        let (h, n) = prefix_hash(&p, 5).expect("hash");
        assert_eq!(n, 5);
        assert_eq!(h.finalize(), blake3::hash(b"hello"));
    }

    #[test]
    fn prefix_hash_of_a_fifo_fails_at_once_with_the_open_reason() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path().join("f");
        nix::unistd::mkfifo(&p, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        // Without O_NONBLOCK this open would wait for a writer forever.
        let e = prefix_hash(&p, 5).err();
        let want = format!(
            "cannot send {}: it is no longer a regular file",
            p.display()
        );
        assert_eq!(e, Some(want));
        assert_eq!(
            open_source(&d.path().join("none")).err(),
            Some(format!(
                "cannot open {}: No such file or directory (os error 2)",
                d.path().join("none").display()
            ))
        );
    }
}
