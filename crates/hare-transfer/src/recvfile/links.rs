//! Symbolic links of a file job (`--links`), made when the job is accepted, after its empty
//! directories and before any file data arrives.
//!
//! The receiver never follows a link: each is created with `symlinkat(2)` under a temporary name
//! of its own (`.NAME.<16 hex digits>.link.hare-part`) in a directory reached without
//! passing through any symbolic link (`beneath`), given its modification
//! time with `utimensat(AT_SYMLINK_NOFOLLOW)`, and moved to its name with
//! `renameat2(RENAME_NOREPLACE)` (with `--force`, `rename(2)`, which never replaces a
//! directory). A later file of the job whose name passes through the link fails: the parent
//! walk refuses a symbolic link component. The target text is stored as it came, as rsync
//! `-l` does; nothing here reads through it.

use std::io;

use super::beneath::{Parent, Root};
use super::os_reason;
use crate::names;
use crate::protocol::LinkEntry;

/// Attempts at finding an unused temporary name.
const NAME_TRIES: usize = 8;

/// Make the link `link` beneath `root`; `Err` is the reason, for the sender. With
/// `safe = Some(tree)`, a link whose target is absolute or climbs out of the job's tree is
/// refused ([`names::unsafe_link`]); `tree` is where that tree starts beneath `root` (the job's
/// destination, "" for `root` itself), so a link may not climb out of its destination into
/// the rest of `--dir`.
pub fn make_link(
    root: &Root,
    link: &LinkEntry,
    force: bool,
    safe: Option<&str>,
) -> Result<(), String> {
    names::check_name(&link.name)?;
    if link.target.is_empty() || link.target.contains('\0') {
        return Err("empty link target or NUL in it".into());
    }
    let in_tree = |tree: &str| match tree {
        "" => Some(link.name.as_str()),
        t => link.name.strip_prefix(t)?.strip_prefix('/'),
    };
    let judged = safe.map(|t| in_tree(t).is_none_or(|n| names::unsafe_link(n, &link.target)));
    if judged == Some(true) {
        return Err(format!(
            "unsafe link to {}, skipped (this receiver takes only links that stay in the tree: --safe-links)",
            link.target
        ));
    }
    let parent = root.parent_create(&link.name).map_err(|w| w.reason())?;
    let leaf = parent.leaf.clone();
    match parent.stat(&leaf) {
        Ok(Some(m)) if m.is_dir() => return Err("exists as a directory".into()),
        Ok(Some(_)) if !force => {
            return Err("exists (the sender may overwrite it with --force)".into())
        }
        Ok(_) => {}
        Err(e) => return Err(format!("cannot check: {}", os_reason(&e))),
    }
    let tmp = create_temporary(&parent, &link.target)
        .map_err(|e| format!("cannot create the link: {}", os_reason(&e)))?;
    if let Some(ns) = link.mtime_ns {
        // A time that cannot be set is not worth failing the link for (rsync only warns).
        if let Err(e) = parent.set_link_mtime(&tmp, ns) {
            tracing::debug!("{}: cannot set the link's time: {e}", link.name);
        }
    }
    parent.rename(&tmp, &leaf, force).map_err(|e| {
        let _ = parent.unlink(&tmp);
        match e.kind() {
            io::ErrorKind::AlreadyExists => {
                "appeared under its name meanwhile; not overwritten (the sender may overwrite \
                 it with --force)"
                    .to_owned()
            }
            _ => format!("cannot store the link: {}", os_reason(&e)),
        }
    })
}

/// A new symbolic link to `target` under a fresh temporary name beside the link's name.
fn create_temporary(parent: &Parent, target: &str) -> io::Result<String> {
    let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
    for _ in 0..NAME_TRIES {
        let tmp = names::link_temp_name(&parent.leaf, rand::random());
        match parent.symlink(target, &tmp) {
            Ok(()) => return Ok(tmp),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn root(d: &std::path::Path) -> Root {
        Root::open(d).expect("root")
    }

    fn link(name: &str, target: &str) -> LinkEntry {
        LinkEntry {
            name: name.into(),
            target: target.into(),
            mtime_ns: Some(1_500_000_000_123_456_789),
        }
    }

    #[test]
    fn links_are_made_as_links_with_their_time_and_never_replace() {
        let d = tempfile::tempdir().expect("tempdir");
        make_link(&root(d.path()), &link("a/up", "../f"), false, Some("")).expect("made");
        let p = d.path().join("a/up");
        assert_eq!(std::fs::read_link(&p).expect("link").to_str(), Some("../f"));
        let m = std::fs::symlink_metadata(&p).expect("lstat");
        assert_eq!((m.mtime(), m.mtime_nsec()), (1_500_000_000, 123_456_789));
        let again = make_link(&root(d.path()), &link("a/up", "x"), false, None);
        assert!(again.is_err_and(|r| r.contains("exists")));
        make_link(&root(d.path()), &link("a/up", "x"), true, None).expect("forced");
        assert_eq!(std::fs::read_link(&p).expect("link").to_str(), Some("x"));
        std::fs::create_dir(d.path().join("dir")).expect("mkdir");
        let over_dir = make_link(&root(d.path()), &link("dir", "x"), true, None);
        let unsafe_one = make_link(&root(d.path()), &link("b", "/etc/passwd"), false, Some(""));
        assert!(unsafe_one.is_err_and(|r| r.starts_with("unsafe link to /etc/passwd, skipped")));
        assert!(std::fs::symlink_metadata(d.path().join("b")).is_err());
        assert!(over_dir.is_err_and(|r| r.contains("directory")));
        // Under a destination, the tree starts there: climbing out of it into the rest of
        // the receive directory is unsafe, staying inside is not.
        let safe = |name: &str, target: &str| {
            make_link(&root(d.path()), &link(name, target), false, Some("dest"))
        };
        assert!(safe("dest/t/out", "../../x").is_err_and(|r| r.starts_with("unsafe link")));
        assert!(safe("dest/t/in", "../x").is_ok());
        // Nothing temporary is left.
        assert_eq!(
            std::fs::read_dir(d.path().join("a")).expect("ls").count(),
            1
        );
    }

    #[test]
    fn a_link_is_never_made_through_a_link() {
        let d = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink(outside.path(), d.path().join("d")).expect("ln");
        let r = make_link(&root(d.path()), &link("d/x", "y"), false, None);
        assert!(r.is_err_and(|r| r.contains("symbolic link")));
        assert_eq!(std::fs::read_dir(outside.path()).expect("ls").count(), 0);
    }
}
