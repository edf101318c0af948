//! Whether a receiver already has a file of a job (the job's [`SkipRule`], rsync's quick check
//! and its options): decided before the job is accepted, from the existing file's size and
//! time, or its BLAKE3 digest with `--checksum`.

use std::io::Read;

use super::beneath::{Entry, Parent, Root};
use super::os_reason;
use crate::protocol::{FileEntry, LinkEntry, SkipRule};

/// Why `existing` (what `fstatat` says of the final name in `parent`) need not be sent again
/// under `rule`; `None`: send it (it then replaces the existing file).
pub(super) fn reason(
    rule: SkipRule,
    sent: &FileEntry,
    existing: &Entry,
    parent: &Parent,
) -> Result<Option<String>, String> {
    if rule == SkipRule::IgnoreExisting {
        return Ok(Some("exists on the receiver (--ignore-existing)".into()));
    }
    if !existing.is_file() {
        // A link or a special file under the name: never the same as the file sent.
        return Ok(None);
    }
    let same_time = sent.mtime_ns == Some(existing.mtime_ns);
    match rule {
        SkipRule::Update if sent.mtime_ns.is_some_and(|t| existing.mtime_ns > t) => {
            Ok(Some("newer on the receiver (--update)".into()))
        }
        SkipRule::Quick | SkipRule::Update => {
            Ok((existing.size == sent.size && same_time).then(|| "up to date".into()))
        }
        SkipRule::Checksum => {
            let Some(want) = sent.blake3.as_deref() else {
                return Ok(None);
            };
            if existing.size != sent.size {
                return Ok(None);
            }
            let got = digest(parent)?;
            Ok(got
                .eq_ignore_ascii_case(want)
                .then(|| "up to date (same BLAKE3)".into()))
        }
        SkipRule::IgnoreExisting => Ok(None),
    }
}

/// Why the link `link` need not be made again under `rule`, if it need not: with
/// `--ignore-existing` anything under its name; otherwise a symbolic link there with the same
/// target text (rsync counts it up to date and leaves it alone).
pub fn link_skip(rule: SkipRule, root: &Root, link: &LinkEntry) -> Option<String> {
    let parent = root.parent(&link.name).ok()?;
    if rule == SkipRule::IgnoreExisting {
        return matches!(parent.stat(&parent.leaf), Ok(Some(_)))
            .then(|| "exists on the receiver (--ignore-existing)".into());
    }
    matches!(parent.link_target(&parent.leaf), Ok(Some(t)) if t == link.target.as_bytes())
        .then(|| "up to date".into())
}

/// BLAKE3 of the file `parent.leaf`, opened without following a link.
fn digest(parent: &Parent) -> Result<String, String> {
    let f = parent
        .open(&parent.leaf, libc::O_RDONLY | libc::O_NONBLOCK, 0)
        .map_err(|e| format!("cannot read it to compare: {}", os_reason(&e)))?;
    let mut h = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut r = &f;
    loop {
        let n = r
            .read(&mut buf)
            .map_err(|e| format!("cannot read it to compare: {}", os_reason(&e)))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().to_hex().to_string())
}
