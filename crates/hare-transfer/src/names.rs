//! Names of files in a job: what a receiver accepts and how it maps them under its directory.
//!
//! A name is a relative path with `/` separators. The receiver rejects, before touching the
//! file system: an empty name, a leading `/` (absolute), any empty, `.` or `..` component, a
//! backslash or NUL or other control character (names that mean something else elsewhere),
//! components longer than [`MAX_COMPONENT`] bytes (the temporary name must still fit in
//! `NAME_MAX` = 255), names longer than [`MAX_NAME`] bytes, and any component in the receiver's
//! own namespace (ending in [`PART_SUFFIX`]: the receiver's temporary files are named so, and a
//! job must never be able to name another job's temporary file). When the file is created,
//! every existing directory on the way must be a real directory, not a symbolic link
//! ([`safe_create_parents`]), so that no name can escape the receiving directory.

use std::path::{Path, PathBuf};

use crate::error::{Result, TransferError};

/// Longest path component accepted, in bytes (255 minus the temporary name's decoration).
pub const MAX_COMPONENT: usize = 200;
/// Longest name accepted, in bytes.
pub const MAX_NAME: usize = 4096;
/// Deepest directory nesting accepted.
pub const MAX_DEPTH: usize = 64;
/// Suffix of the receiver's temporary files; no component of a job name may end with it.
pub const PART_SUFFIX: &str = ".hare-part";

/// Check a job name; on success return its components.
pub fn check_name(name: &str) -> Result<Vec<&str>, String> {
    if name.is_empty() {
        return Err("empty name".into());
    }
    if name.len() > MAX_NAME {
        return Err(format!("name longer than {MAX_NAME} bytes"));
    }
    if name.starts_with('/') {
        return Err("absolute path".into());
    }
    if let Some(c) = name.chars().find(|c| c.is_control() || *c == '\\') {
        return Err(format!("forbidden character {c:?}"));
    }
    let parts: Vec<&str> = name.split('/').collect();
    if parts.len() > MAX_DEPTH {
        return Err(format!("more than {MAX_DEPTH} components"));
    }
    for p in &parts {
        match *p {
            "" => return Err("empty path component".into()),
            "." | ".." => return Err(format!("`{p}` component")),
            p if p.len() > MAX_COMPONENT => {
                return Err(format!("component longer than {MAX_COMPONENT} bytes"))
            }
            p if p.ends_with(PART_SUFFIX) => {
                return Err(format!(
                    "names ending in `{PART_SUFFIX}` are the receiver's temporary files"
                ))
            }
            _ => {}
        }
    }
    Ok(parts)
}

/// The final path of a checked name under `dir`.
pub fn final_path(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let parts = check_name(name)?;
    let mut p = dir.to_path_buf();
    for c in parts {
        p.push(c);
    }
    Ok(p)
}

/// Where a partial file waits for `--resume`: `.NAME.hare-part` beside the final name. Only the
/// receiver moves files in and out of it (no job can name it, see [`check_name`]).
pub fn resume_path(final_path: &Path) -> PathBuf {
    decorated(final_path, "")
}

/// The temporary path one job writes a file to before it is verified:
/// `.NAME.<id>.hare-part` beside the final name (same directory, so that the final rename is
/// atomic), `id` unique to the job and file.
pub fn job_part_path(final_path: &Path, id: u64) -> PathBuf {
    decorated(final_path, &format!(".{id:016x}"))
}

fn decorated(final_path: &Path, middle: &str) -> PathBuf {
    let name = final_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    final_path.with_file_name(format!(".{name}{middle}{PART_SUFFIX}"))
}

/// True when a link named `name` (a job name) with this `target` would point outside the
/// job's tree: an absolute target, or one whose `..` climb above the tree's top from the
/// link's directory (rsync's `unsafe_symlink()` test for `--safe-links`).
pub fn unsafe_link(name: &str, target: &str) -> bool {
    if target.starts_with('/') || target.is_empty() {
        return true;
    }
    // The link's directory, counted in components below the top of the tree.
    let mut depth = name.split('/').count() as i64 - 1;
    for c in target.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => depth += 1,
        }
    }
    false
}

/// Create the directories of `name` under `dir`, refusing to pass through a symbolic link or
/// a non-directory. `dir` itself must exist.
pub fn safe_create_parents(dir: &Path, name: &str) -> Result<()> {
    let parts = check_name(name).map_err(|reason| TransferError::File {
        name: name.to_owned(),
        reason,
        code: crate::protocol::FailCode::NameRefused,
    })?;
    let mut p = dir.to_path_buf();
    for (i, c) in parts[..parts.len().saturating_sub(1)].iter().enumerate() {
        p.push(c);
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_dir() => {}
            Ok(m) if m.file_type().is_symlink() => {
                return Err(TransferError::File {
                    name: name.to_owned(),
                    reason: format!("{} is a symbolic link; not followed", parts[..=i].join("/")),
                    code: crate::protocol::FailCode::NameRefused,
                })
            }
            Ok(_) => {
                return Err(TransferError::File {
                    name: name.to_owned(),
                    reason: format!("{} exists and is not a directory", p.display()),
                    code: crate::protocol::FailCode::NameRefused,
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&p)
                    .map_err(|e| TransferError::io(format!("creating {}", p.display()), e))?;
            }
            Err(e) => return Err(TransferError::io(format!("checking {}", p.display()), e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_relative_names() {
        assert_eq!(check_name("a.bin"), Ok(vec!["a.bin"]));
        assert_eq!(check_name("dir/sub/f"), Ok(vec!["dir", "sub", "f"]));
        assert_eq!(check_name("..hidden"), Ok(vec!["..hidden"]));
    }

    #[test]
    fn rejects_escapes_and_oddities() {
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a/./b",
            "a//b",
            "a/",
            "..",
            ".",
            "a\\..\\b",
            "a\0b",
            "new\nline",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} must be rejected");
        }
        assert!(check_name(&"x".repeat(MAX_COMPONENT + 1)).is_err());
        assert!(check_name(&vec!["d"; MAX_DEPTH + 1].join("/")).is_err());
    }

    #[test]
    fn part_paths_are_hidden_siblings_in_the_receivers_namespace() {
        assert_eq!(
            resume_path(Path::new("/r/d/f.bin")),
            PathBuf::from("/r/d/.f.bin.hare-part")
        );
        assert_eq!(
            job_part_path(Path::new("/r/d/f.bin"), 0xab),
            PathBuf::from("/r/d/.f.bin.00000000000000ab.hare-part")
        );
        // A job can name neither, nor any directory in that namespace.
        for bad in [
            ".f.bin.hare-part",
            "d/.f.bin.00000000000000ab.hare-part",
            "x.hare-part/y",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} must be rejected");
        }
        assert!(check_name("f.hare-part.txt").is_ok());
        // The longest component plus the decoration still fits NAME_MAX.
        let long = "x".repeat(MAX_COMPONENT);
        let p = job_part_path(Path::new(&long), u64::MAX);
        assert!(p.as_os_str().len() <= 255);
    }

    #[test]
    fn unsafe_links_are_absolute_or_climb_out() {
        assert!(unsafe_link("l", "/etc/passwd"));
        assert!(unsafe_link("l", "../x"));
        assert!(unsafe_link("a/l", "../../x"));
        assert!(unsafe_link("a/l", "b/../../../x"));
        assert!(!unsafe_link("a/l", "../x"));
        assert!(!unsafe_link("a/l", "./b/../c"));
        assert!(!unsafe_link("l", "x/y"));
    }

    #[test]
    fn parents_never_follow_symlinks() {
        let root = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).expect("symlink");
        assert!(safe_create_parents(root.path(), "link/f").is_err());
        safe_create_parents(root.path(), "a/b/c").expect("plain dirs");
        assert!(root.path().join("a/b").is_dir());
        std::fs::write(root.path().join("file"), b"x").expect("write");
        assert!(safe_create_parents(root.path(), "file/x").is_err());
    }
}
