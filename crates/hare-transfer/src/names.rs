//! Names of files in a job: what a receiver accepts and how it maps them under its directory.
//!
//! A name is a relative path with `/` separators. The receiver rejects, before touching the
//! file system: an empty name, a leading `/` (absolute), any empty, `.` or `..` component, a
//! backslash or NUL or other control character (names that mean something else elsewhere),
//! components longer than [`MAX_COMPONENT`] bytes (the temporary name must still fit in
//! `NAME_MAX` = 255), names longer than [`MAX_NAME`] bytes, and any component in the receiver's
//! own namespace (ending in [`PART_SUFFIX`]: the receiver's temporary and partial files are
//! named so, and a job must never be able to name another job's file). Every directory on the
//! way must be a real directory, never a symbolic link (`recvfile::beneath`), so that no name
//! can escape the receiving directory.

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

/// The file a job writes `leaf` (a name's last component) to, in the same directory:
/// `.LEAF.<owner>.hare-part`, `owner` the 16 hex digits of the sender it belongs to
/// (`recvfile::Owner`). It is the job's temporary file while the job runs and the partial
/// kept for that sender's `--resume` after it; no job can name it ([`check_name`] refuses the
/// suffix), and two (leaf, owner) pairs never share it, since the owner is always the last 16
/// hex digits before the suffix.
pub fn part_name(leaf: &str, owner: u64) -> String {
    format!(".{leaf}.{owner:016x}{PART_SUFFIX}")
}

/// A temporary name for a symbolic link being made as `leaf`: `.LEAF.<16 hex>.link.hare-part`
/// (never a [`part_name`], whose last piece before the suffix is 16 hex digits).
pub fn link_temp_name(leaf: &str, random: u64) -> String {
    format!(".{leaf}.{random:016x}.link{PART_SUFFIX}")
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
    fn part_names_are_hidden_siblings_in_the_receivers_namespace() {
        assert_eq!(
            part_name("f.bin", 0xab),
            ".f.bin.00000000000000ab.hare-part"
        );
        assert_eq!(link_temp_name("l", 1), ".l.0000000000000001.link.hare-part");
        // A job can name neither, nor any directory in that namespace.
        for bad in [
            ".f.bin.00000000000000ab.hare-part",
            "d/.f.bin.00000000000000ab.hare-part",
            "x.hare-part/y",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} must be rejected");
        }
        assert!(check_name("f.hare-part.txt").is_ok());
        // The name of one sender's file, extended by another sender's tag, is never the
        // first sender's part name: the owner is the last piece.
        let honest = part_name("big.bin", 0x1111);
        let alias = part_name(&format!("big.bin.{:016x}", 0x1111), 0x2222);
        assert_ne!(honest, alias);
        // The longest component plus the decoration still fits NAME_MAX.
        let long = "x".repeat(MAX_COMPONENT);
        assert!(part_name(&long, u64::MAX).len() <= 255);
        assert!(link_temp_name(&long, u64::MAX).len() <= 255);
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
}
