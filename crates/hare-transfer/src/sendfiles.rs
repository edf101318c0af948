//! The sending side of file jobs: which files the command line names, under which names.
//!
//! `hare-send a.bin dir/ HOST` sends `a.bin` as `a.bin` and every regular file under `dir` as
//! `dir/...` (like `scp -r`). Symbolic links and special files are skipped with a warning
//! rather than followed; empty directories are not recreated.

use std::path::{Path, PathBuf};

use crate::error::{Result, TransferError};
use crate::names;
use crate::protocol::{FileEntry, MAX_FILES};

/// A local file and the name it travels under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Local path.
    pub path: PathBuf,
    /// Name in the job.
    pub entry: FileEntry,
}

/// Collect the files named by `paths`; also returns warnings about skipped entries.
pub fn gather(paths: &[PathBuf]) -> Result<(Vec<Source>, Vec<String>)> {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for p in paths {
        let meta = std::fs::symlink_metadata(p)
            .map_err(|e| TransferError::io(format!("reading {}", p.display()), e))?;
        let base = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| TransferError::Usage(format!("{}: has no file name", p.display())))?;
        if meta.is_file() {
            push(&mut out, p.clone(), base, meta.len())?;
        } else if meta.is_dir() {
            walk(p, &base, 0, &mut out, &mut warnings)?;
        } else {
            warnings.push(format!(
                "skipping {}: not a regular file or directory",
                p.display()
            ));
        }
    }
    let mut names: Vec<&str> = out.iter().map(|s| s.entry.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(TransferError::Usage(format!(
            "two files would be sent as `{}`",
            w[0]
        )));
    }
    Ok((out, warnings))
}

fn push(out: &mut Vec<Source>, path: PathBuf, name: String, size: u64) -> Result<()> {
    names::check_name(&name).map_err(|r| {
        TransferError::Usage(format!("{}: cannot send as `{name}`: {r}", path.display()))
    })?;
    if out.len() >= MAX_FILES {
        return Err(TransferError::Usage(format!(
            "more than {MAX_FILES} files in one job"
        )));
    }
    out.push(Source {
        path,
        entry: FileEntry { name, size },
    });
    Ok(())
}

fn walk(
    dir: &Path,
    name: &str,
    depth: usize,
    out: &mut Vec<Source>,
    warnings: &mut Vec<String>,
) -> Result<()> {
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
    for e in entries {
        let path = e.path();
        let child = format!("{name}/{}", e.file_name().to_string_lossy());
        let ft = e
            .file_type()
            .map_err(|err| TransferError::io(format!("reading {}", path.display()), err))?;
        if ft.is_file() {
            let len = e
                .metadata()
                .map_err(|err| TransferError::io(format!("reading {}", path.display()), err))?
                .len();
            push(out, path, child, len)?;
        } else if ft.is_dir() {
            walk(&path, &child, depth + 1, out, warnings)?;
        } else {
            warnings.push(format!(
                "skipping {}: symbolic link or special file",
                path.display()
            ));
        }
    }
    Ok(())
}

/// BLAKE3 of the first `len` bytes of `path` (to check a receiver's resume offer), and the
/// hash state to continue from.
pub fn prefix_hash(path: &Path, len: u64) -> Result<(blake3::Hasher, u64)> {
    use std::io::Read;
    let f = std::fs::File::open(path)
        .map_err(|e| TransferError::io(format!("opening {}", path.display()), e))?;
    let mut h = blake3::Hasher::new();
    let n = std::io::copy(&mut f.take(len), &mut h)
        .map_err(|e| TransferError::io(format!("reading {}", path.display()), e))?;
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
        let (src, warn) = gather(&[root.clone(), single]).expect("gather");
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
    fn duplicate_names_are_refused() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(d.path().join("x")).expect("mkdir");
        std::fs::write(d.path().join("f"), b"1").expect("w");
        std::fs::write(d.path().join("x/f"), b"2").expect("w");
        assert!(gather(&[d.path().join("f"), d.path().join("x/f")]).is_err());
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
}
