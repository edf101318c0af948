//! The metadata a received file gets once it is verified, as rsync `-a` gives it: the source's
//! permission bits (never set-user-ID, set-group-ID or sticky: only `0o777` is ever applied,
//! whatever a sender asks) and its modification time (access time is left alone, as rsync
//! does without `--atimes`). `--no-perms` applies the receiver's umask to the source's bits
//! (rsync without `-p`), so the result is never wider than the source either way; a sender
//! that sends no mode gets what a new file gets here (`0o666` less the umask).

use std::fs::File;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::protocol::FileEntry;

/// What to apply to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meta {
    /// Permission bits, already masked.
    mode: u32,
    /// Modification time, if the sender kept it.
    mtime: Option<SystemTime>,
}

impl Meta {
    /// The metadata `entry` asks for, as this receiver applies it.
    pub(crate) fn of(entry: &FileEntry) -> Self {
        let mode = match (entry.mode, entry.apply_umask) {
            (Some(m), false) => m & 0o777,
            (Some(m), true) => m & 0o777 & !umask(),
            (None, _) => 0o666 & !umask(),
        };
        let mtime = entry.mtime_ns.map(|ns| {
            let d = Duration::from_nanos(ns.unsigned_abs());
            if ns >= 0 {
                UNIX_EPOCH + d
            } else {
                UNIX_EPOCH - d
            }
        });
        Self { mode, mtime }
    }
}

/// Give the open file its mode and time (through the descriptor: `fchmod`, `futimens`).
pub(crate) fn apply(file: &File, meta: &Meta) -> io::Result<()> {
    file.set_permissions(std::fs::Permissions::from_mode(meta.mode))?;
    if let Some(t) = meta.mtime {
        file.set_times(std::fs::FileTimes::new().set_modified(t))?;
    }
    Ok(())
}

/// This process's umask, from `/proc/self/status` (Linux 4.7+; reading it with `umask(2)`
/// would change it for a moment under other threads), else the common `0o022`.
fn umask() -> u32 {
    static MASK: OnceLock<u32> = OnceLock::new();
    *MASK.get_or_init(|| {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Umask:"))
                    .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            })
            .unwrap_or(0o022)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_bits_never_pass_and_no_perms_only_narrows() {
        let mut e = FileEntry::new("f", 0);
        e.mode = Some(0o6755);
        assert_eq!(Meta::of(&e).mode, 0o755);
        e.apply_umask = true;
        assert_eq!(Meta::of(&e).mode, 0o755 & !umask());
        e.mode = Some(0o600);
        assert_eq!(Meta::of(&e).mode, 0o600);
        e.mtime_ns = Some(1_500_000_000_123_456_789);
        assert_eq!(
            Meta::of(&e).mtime,
            Some(UNIX_EPOCH + Duration::new(1_500_000_000, 123_456_789))
        );
    }
}
