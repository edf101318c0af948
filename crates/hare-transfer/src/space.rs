//! Free space of the file system that receives files.

use std::path::Path;

use crate::error::{Result, TransferError};

/// Bytes available to an unprivileged writer on the file system holding `dir`
/// (`f_bavail x f_frsize` of statvfs(3)).
pub fn available_bytes(dir: &Path) -> Result<u64> {
    let st = nix::sys::statvfs::statvfs(dir).map_err(|e| {
        TransferError::io(
            format!("checking free space of {}", dir.display()),
            std::io::Error::from(e),
        )
    })?;
    #[allow(clippy::unnecessary_cast)] // the field types differ between libcs
    Ok((st.blocks_available() as u64).saturating_mul(st.fragment_size() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmp_has_some_space() {
        let d = tempfile::tempdir().expect("tempdir");
        assert!(available_bytes(d.path()).expect("statvfs") > 0);
        assert!(available_bytes(&d.path().join("missing")).is_err());
    }
}
